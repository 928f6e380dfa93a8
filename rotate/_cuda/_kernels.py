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
from ._memops import (SIMULATED, copy16_async, load16, load_acquire, store16,
                       store_relaxed, store_release, wait_copies)

#: Default tile: 16 KiB per buffer (two buffers) per block of 128 threads.
TILE_BYTES = 16 * 1024
THREADS = 128


def smem_bytes(tile_bytes: int) -> int:
    """Static shared memory of one block: two tile buffers with over-copy slack."""
    return 2 * (tile_bytes // 16 + 5) * 16 + 16


@functools.lru_cache(maxsize=None)
def short_kernel(tile_bytes: int = TILE_BYTES, threads: int = THREADS):
    """The persistent, flag-chained in-place rotation kernel for one tile size.

    Arguments (all rows of one launch are back to back in ``data``):
    ``data`` uint8[rows * n], ``scratch`` uint8 seam buffer (``scratch_row``
    bytes per row), ``flags`` uint32[total] (``epoch`` marks "done" this
    launch, so flags never need clearing), ``counters`` uint64[2] (ticket
    dispenser, finished blocks; left at zero for the next launch), then
    ``rows, n, k, head0, chunk_slots, per_row, total, epoch, scratch_row``.

    Each block loops, double-buffered in shared memory::

        data of ticket t has landed          (cp.async.wait_all + barrier)
        thread 0: publish t "read done"; draw a ticket ahead;
                  wait for the seam chunks t2 (drawn last round) reads
        start t2's copies into the other buffer   (they fly during ...)
        thread 0: wait for the readers of t's destination
        write t: realign in registers, 16-byte stores
        t = t2

    Asynchronous copies hold no registers, so many blocks fit per SM; the
    next tile's loads overlap this tile's stores. Every wait is on a smaller
    ticket, and a block publishes t before it waits for anything on behalf
    of t2 (docs/design.md: why this never deadlocks).
    """
    if tile_bytes % 16 or tile_bytes < 64:
        raise ValueError(f"tile_bytes must be a multiple of 16 and >= 64, got {tile_bytes}")
    tile_vecs = tile_bytes // 16
    buffer_vecs = tile_vecs + 5  # buffers are addressed in 16-byte vectors, so
    smem_words = 8 * buffer_vecs  # every vector access is provably 16-byte aligned
    read_iters = -(-(tile_vecs + 4) // threads)
    write_iters = -(-(tile_vecs + 1) // threads)
    T = tile_bytes

    # The simulator rejects launch_bounds; it only tunes register allocation.
    jit_options = {} if SIMULATED else {"launch_bounds": threads}

    @cuda.jit(device=True)
    def wait_range(flags, base, lo, hi, epoch):
        for ticket in range(lo, hi + 1):
            while load_acquire(flags, base + ticket) != epoch:
                pass

    @cuda.jit(device=True)
    def wait_before_read(flags, t, per_row, n, k, head0, chunk_slots, epoch):
        """Thread 0: the seam chunks ticket t reads must be in scratch."""
        row = t // per_row
        head = S.row_head(head0, row, n)
        kind, index = S.decode_ticket(n, k, head, T, chunk_slots, t - row * per_row)
        if kind == 1:
            lo, hi = S.waits_before_read(n, k, head, T, chunk_slots, index)
            wait_range(flags, row * per_row, lo, hi, epoch)

    @cuda.jit(device=True)
    def start_copies(smem, buf, data, scratch, t, per_row, n, k, head0, chunk_slots, scratch_row, tid):
        """Over-copy ticket t's source, whole aligned vectors, into buffer ``buf`` (a vector index)."""
        row = t // per_row
        head = S.row_head(head0, row, n)
        row_pos = row * n
        seam_pos = row * scratch_row
        origin = S.seam_origin(n, k, head)
        kind, index = S.decode_ticket(n, k, head, T, chunk_slots, t - row * per_row)
        if kind == 0:
            span = S.seam_span(n, k, head)
            for m in range(read_iters):
                slot = tid + m * threads
                off = index * T + slot * 16
                if slot < tile_vecs and off < span:
                    copy16_async(smem, 4 * (buf + slot), data, row_pos + origin + off)
        elif kind == 1:
            left = S.is_left(n, k)
            x0, xs, x1 = S.tile_parts(n, k, head, T, index)
            a_lo = S.align_down(head + x0 + k) - head
            a_vecs = (S.align_up(head + xs + k) - S.align_down(head + x0 + k)) // 16 if xs > x0 else 0
            b_lo = S.align_down(head + xs + k - n) - head
            b_vecs = (S.align_up(head + x1 + k - n) - S.align_down(head + xs + k - n)) // 16 if x1 > xs else 0
            for m in range(read_iters):
                slot = tid + m * threads
                if slot < a_vecs:
                    pos = a_lo + slot * 16
                    if left:
                        copy16_async(smem, 4 * (buf + slot), data, row_pos + pos)
                    else:
                        copy16_async(smem, 4 * (buf + slot), scratch, seam_pos + pos - origin)
                elif slot < a_vecs + b_vecs:
                    pos = b_lo + (slot - a_vecs) * 16
                    if left:
                        copy16_async(smem, 4 * (buf + slot), scratch, seam_pos + pos - origin)
                    else:
                        copy16_async(smem, 4 * (buf + slot), data, row_pos + pos)

    @cuda.jit(device=True)
    def write_tile(smem, buf, data, row_pos, n, k, head, j, tid):
        """Store tile j's destination from smem[buf:], realigned, as whole 16-byte vectors."""
        x0, xs, x1 = S.tile_parts(n, k, head, T, j)
        a_lo = S.align_down(head + x0 + k) - head
        a_vecs = (S.align_up(head + xs + k) - S.align_down(head + x0 + k)) // 16 if xs > x0 else 0
        b_lo = S.align_down(head + xs + k - n) - head
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
                    w = 4 * (buf + slot0 + (o >> 4))
                    r = o & 15
                    a0 = uint64(smem[w])
                    a1 = uint64(smem[w + 1])
                    a2 = uint64(smem[w + 2])
                    a3 = uint64(smem[w + 3])
                    if r == 0:
                        store16(data, row_pos + p, uint32(a0), uint32(a1), uint32(a2), uint32(a3))
                    else:
                        b0 = uint64(smem[w + 4])
                        b1 = uint64(smem[w + 5])
                        b2 = uint64(smem[w + 6])
                        b3 = uint64(smem[w + 7])
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
                            word = smem[4 * buf + (sb >> 2)]
                            data[row_pos + x] = (word >> ((sb & 3) * 8)) & 0xFF

    @cuda.jit(**jit_options)
    def kernel(data, scratch, flags, counters, rows, n, k, head0, chunk_slots,
               per_row, total, epoch, scratch_row):
        if SIMULATED:  # pruned at compile time; the simulator rejects alignment
            smem = cuda.shared.array(smem_words, uint32)
        else:
            smem = cuda.shared.array(smem_words, uint32, alignment=16)
        # [0]: the ticket whose copies fly next; [1]: one more, drawn ahead so
        # the dispenser's round trip never sits on the critical path.
        ticket_box = cuda.shared.array(2, int64)
        tid = cuda.threadIdx.x
        if tid == 0:
            first = int64(cuda.atomic.add(counters, 0, uint64(1)))
            if first < total:
                wait_before_read(flags, first, per_row, n, k, head0, chunk_slots, epoch)
            ticket_box[0] = first
            ticket_box[1] = int64(cuda.atomic.add(counters, 0, uint64(1)))
        cuda.syncthreads()
        t = ticket_box[0]
        buf = 0
        if t < total:
            start_copies(smem, buf, data, scratch, t, per_row, n, k, head0, chunk_slots, scratch_row, tid)
        while t < total:
            wait_copies()
            cuda.syncthreads()  # t's source is in smem[buf]; the other buffer is free
            row = t // per_row
            local = t - row * per_row
            base = row * per_row
            head = S.row_head(head0, row, n)
            kind, index = S.decode_ticket(n, k, head, T, chunk_slots, local)
            if kind == 0:
                # A seam chunk: into scratch, published (release) before this
                # block waits for anything, since later tickets read it.
                span = S.seam_span(n, k, head)
                for m in range(read_iters):
                    slot = tid + m * threads
                    off = index * T + slot * 16
                    if slot < tile_vecs and off < span:
                        w = 4 * (buf + slot)
                        store16(scratch, row * scratch_row + off, smem[w], smem[w + 1], smem[w + 2], smem[w + 3])
                cuda.syncthreads()
            if tid == 0:
                if kind == 0:
                    cuda.threadfence()
                    store_release(flags, base + local, epoch)
                else:
                    store_relaxed(flags, base + local, epoch)
                t2 = ticket_box[1]
                if t2 < total:
                    ticket_box[1] = int64(cuda.atomic.add(counters, 0, uint64(1)))
                    wait_before_read(flags, t2, per_row, n, k, head0, chunk_slots, epoch)
                ticket_box[0] = t2
            cuda.syncthreads()
            t2 = ticket_box[0]
            if t2 < total:  # the next tile's copies fly while this one waits and writes
                start_copies(smem, buffer_vecs - buf, data, scratch, t2, per_row, n, k, head0,
                             chunk_slots, scratch_row, tid)
            if kind == 1:
                if tid == 0:
                    t_lo, t_hi, c_lo, c_hi = S.waits_before_write(n, k, head, T, chunk_slots, index)
                    wait_range(flags, base, t_lo, t_hi, epoch)
                    wait_range(flags, base, c_lo, c_hi, epoch)
                cuda.syncthreads()
                write_tile(smem, buf, data, row * n, n, k, head, index, tid)
            t = t2
            buf = buffer_vecs - buf

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
