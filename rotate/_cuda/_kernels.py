"""CUDA kernels: the flag-chained short rotation and the reversal fallback.

Module-level factories build (and cache) one kernel per configuration; the
index math they call lives in ``rotate._schedule`` and is shared with the
CPU emulator. See docs/design.md for the algorithm and the deadlock-freedom
argument.
"""

from __future__ import annotations

import functools

from numba import cuda, int64, uint32, uint64

from .. import _schedule as S
from ._memops import SIMULATED, load16, store16

#: Default tile: 32 KiB (2,048 16-byte vectors) per block of 256 threads.
TILE_BYTES = 32 * 1024
THREADS = 256


def smem_bytes(tile_bytes: int) -> int:
    """Static shared memory of one block: the tile plus over-copy slack."""
    return (tile_bytes // 16 + 5) * 16 + 16


@functools.lru_cache(maxsize=None)
def short_kernel(tile_bytes: int = TILE_BYTES, threads: int = THREADS):
    """The persistent, flag-chained in-place rotation kernel for one tile size.

    Arguments (all rows of one launch are back to back in ``data``):
    ``data`` uint8[rows * n], ``scratch`` uint8 seam buffer (``scratch_row``
    bytes per row), ``flags`` uint32[total] (``epoch`` marks "done" this
    launch, so flags never need clearing), ``counters`` uint64[2] (ticket
    dispenser, finished blocks; left at zero for the next launch), then
    ``rows, n, k, head0, chunk_slots, per_row, total, epoch, scratch_row``.
    """
    if tile_bytes % 16 or tile_bytes < 64:
        raise ValueError(f"tile_bytes must be a multiple of 16 and >= 64, got {tile_bytes}")
    tile_vecs = tile_bytes // 16
    smem_vecs = tile_vecs + 5
    smem_words = smem_vecs * 4
    read_iters = -(-(tile_vecs + 4) // threads)
    write_iters = -(-(tile_vecs + 1) // threads)
    copy_iters = -(-tile_vecs // threads)
    T = tile_bytes

    def wait_range(flags, base, lo, hi, epoch):
        # Relaxed atomic polls: a plain load would be hoisted out of the loop
        # (gpu-notes); the fence after the loop gives acquire ordering.
        for ticket in range(lo, hi + 1):
            while cuda.atomic.add(flags, base + ticket, uint32(0)) != epoch:
                pass

    # The simulator rejects launch_bounds; it only tunes register allocation.
    jit_options = {} if SIMULATED else {"launch_bounds": threads}
    wait_range = cuda.jit(device=True)(wait_range)

    @cuda.jit(**jit_options)
    def kernel(data, scratch, flags, counters, rows, n, k, head0, chunk_slots,
               per_row, total, epoch, scratch_row):
        if SIMULATED:  # pruned at compile time; the simulator rejects alignment
            smem = cuda.shared.array(smem_words, uint32)
        else:
            smem = cuda.shared.array(smem_words, uint32, alignment=16)
        ticket_box = cuda.shared.array(1, int64)
        held = cuda.local.array((read_iters, 4), uint32)
        tid = cuda.threadIdx.x
        left = S.is_left(n, k)
        while True:
            if tid == 0:
                ticket_box[0] = int64(cuda.atomic.add(counters, 0, uint64(1)))
            cuda.syncthreads()
            t = ticket_box[0]
            cuda.syncthreads()
            if t >= total:
                break
            row = t // per_row
            local = t - row * per_row
            base = row * per_row          # first ticket of this row
            head = S.row_head(head0, row, n)
            row_pos = row * n             # the row's first byte in data
            seam_pos = row * scratch_row  # the row's seam in scratch
            origin = S.seam_origin(n, k, head)
            kind, index = S.decode_ticket(n, k, head, T, chunk_slots, local)

            if kind == 0:
                # Copy seam chunk `index` into scratch, vector for vector.
                span = S.seam_span(n, k, head)
                for m in range(copy_iters):
                    off = index * T + (tid + m * threads) * 16
                    if off < span:
                        w = load16(data, row_pos + origin + off)
                        held[m, 0] = w[0]
                        held[m, 1] = w[1]
                        held[m, 2] = w[2]
                        held[m, 3] = w[3]
                for m in range(copy_iters):
                    off = index * T + (tid + m * threads) * 16
                    if off < span:
                        store16(scratch, seam_pos + off, held[m, 0], held[m, 1], held[m, 2], held[m, 3])
            elif kind == 1:
                j = index
                x0, xs, x1 = S.tile_parts(n, k, head, T, j)
                # Region A: source [x0 + k, xs + k); region B: [xs + k - n, x1 + k - n).
                a_lo = S.align_down(head + x0 + k) - head
                a_vecs = (S.align_up(head + xs + k) - S.align_down(head + x0 + k)) // 16 if xs > x0 else 0
                b_lo = S.align_down(head + xs + k - n) - head
                b_vecs = (S.align_up(head + x1 + k - n) - S.align_down(head + xs + k - n)) // 16 if x1 > xs else 0

                if tid == 0:
                    lo, hi = S.waits_before_read(n, k, head, T, chunk_slots, j)
                    wait_range(flags, base, lo, hi, epoch)
                    cuda.threadfence()
                cuda.syncthreads()

                # Read: over-copy whole aligned vectors, all loads in flight first.
                for m in range(read_iters):
                    slot = tid + m * threads
                    if slot < a_vecs:
                        pos = a_lo + slot * 16
                        if left:
                            w = load16(data, row_pos + pos)
                        else:
                            w = load16(scratch, seam_pos + pos - origin)
                        held[m, 0] = w[0]
                        held[m, 1] = w[1]
                        held[m, 2] = w[2]
                        held[m, 3] = w[3]
                    elif slot < a_vecs + b_vecs:
                        pos = b_lo + (slot - a_vecs) * 16
                        if left:
                            w = load16(scratch, seam_pos + pos - origin)
                        else:
                            w = load16(data, row_pos + pos)
                        held[m, 0] = w[0]
                        held[m, 1] = w[1]
                        held[m, 2] = w[2]
                        held[m, 3] = w[3]
                for m in range(read_iters):
                    slot = tid + m * threads
                    if slot < a_vecs + b_vecs:
                        smem[4 * slot] = held[m, 0]
                        smem[4 * slot + 1] = held[m, 1]
                        smem[4 * slot + 2] = held[m, 2]
                        smem[4 * slot + 3] = held[m, 3]
                cuda.syncthreads()

                if tid == 0:
                    # Publish "read done" (release), then wait for the readers
                    # of the bytes this tile overwrites (acquire).
                    cuda.threadfence()
                    cuda.atomic.exch(flags, base + local, epoch)
                    t_lo, t_hi, c_lo, c_hi = S.waits_before_write(n, k, head, T, chunk_slots, j)
                    wait_range(flags, base, t_lo, t_hi, epoch)
                    wait_range(flags, base, c_lo, c_hi, epoch)
                    cuda.threadfence()
                cuda.syncthreads()

                # Write: realign in registers, store whole aligned vectors.
                d_lo = S.align_down(head + x0) - head
                d_vecs = (S.align_up(head + x1) - S.align_down(head + x0)) // 16
                for m in range(write_iters):
                    v = tid + m * threads
                    if v < d_vecs:
                        p = d_lo + v * 16
                        if p >= x0 and p + 16 <= x1 and (p + 16 <= xs or p >= xs):
                            if p < xs:
                                o = p + k - a_lo
                                slot0 = 0
                            else:
                                o = p + k - n - b_lo
                                slot0 = a_vecs
                            q = slot0 + (o >> 4)
                            r = o & 15
                            a0 = uint64(smem[4 * q])
                            a1 = uint64(smem[4 * q + 1])
                            a2 = uint64(smem[4 * q + 2])
                            a3 = uint64(smem[4 * q + 3])
                            if r == 0:
                                store16(data, row_pos + p, uint32(a0), uint32(a1), uint32(a2), uint32(a3))
                            else:
                                b0 = uint64(smem[4 * q + 4])
                                b1 = uint64(smem[4 * q + 5])
                                b2 = uint64(smem[4 * q + 6])
                                b3 = uint64(smem[4 * q + 7])
                                u0, u1, u2, u3, u4 = S.window5(r >> 2, a0, a1, a2, a3, b0, b1, b2, b3)
                                bs = r & 3
                                store16(data, row_pos + p,
                                        uint32(S.funnel(u0, u1, bs)), uint32(S.funnel(u1, u2, bs)),
                                        uint32(S.funnel(u2, u3, bs)), uint32(S.funnel(u3, u4, bs)))
                        else:
                            # Segment ends and the wrap point: byte by byte.
                            for b in range(16):
                                x = p + b
                                if x >= x0 and x < x1:
                                    if x < xs:
                                        sb = x + k - a_lo
                                    else:
                                        sb = a_vecs * 16 + x + k - n - b_lo
                                    word = smem[sb >> 2]
                                    data[row_pos + x] = (word >> ((sb & 3) * 8)) & 0xFF
            if kind != 1:
                cuda.syncthreads()
                if tid == 0:
                    cuda.threadfence()
                    cuda.atomic.exch(flags, base + local, epoch)

        if tid == 0:
            finished = cuda.atomic.add(counters, 1, uint64(1))
            if finished == cuda.gridDim.x - 1:
                # Last block out: every block has drawn its final ticket, so
                # the dispenser can be rewound for the next launch.
                counters[0] = 0
                counters[1] = 0

    return kernel


@functools.lru_cache(maxsize=None)
def reverse_kernel(word_bytes: int):
    """Reverse ``words[r*seg + lo : r*seg + hi]`` of every row, in place (grid-stride).

    One dispatcher per word width, so each has exactly one compiled overload
    and can be launched without numba's per-call typing.
    """

    @cuda.jit
    def kernel(words, rows, seg, lo, hi):
        half = (hi - lo) // 2
        total = rows * half
        start = cuda.grid(1)
        stride = cuda.gridsize(1)
        for i in range(start, total, stride):
            row = i // half
            j = i - row * half
            a = row * seg + lo + j
            b = row * seg + hi - 1 - j
            wa = words[a]
            words[a] = words[b]
            words[b] = wa

    return kernel
