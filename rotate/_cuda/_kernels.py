"""CUDA kernels: the seam copy, the flag-chained short rotation, the reversal fallback.

Module-level factories build (and cache) one kernel per configuration; the
index math they call lives in ``rotate._schedule`` and is shared with the
CPU emulator. See docs/design.md for the algorithm and the deadlock-freedom
argument.
"""

from __future__ import annotations

import functools

from numba import cuda, int64, uint32, uint64

from .. import _schedule as S
from ._memops import (SIMULATED, commit_copies, copies_waiter, copy16_async, load16,
                      load16_shared, load_acquire, store16, store_relaxed)

wait_all = copies_waiter(0)

# Fields of a ticket descriptor (see ``describe``).
(F_TILE, F_A_SCRATCH, F_A_POS, F_A_VECS, F_B_SCRATCH, F_B_POS, F_B_VECS,
 F_ROW_POS, F_X0, F_XS, F_X1, F_A_LO, F_B_LO, F_HEAD, F_BASE) = range(15)
DESC_FIELDS = 15

#: Default tile and ring (the fastest measured, docs/perf-notes.md): 32 KiB
#: tiles, two buffers (one tile's copies in flight while the other is
#: written), 256 threads per block.
TILE_BYTES = 32 * 1024
THREADS = 256
BUFFERS = 2


def smem_bytes(tile_bytes: int, buffers: int = BUFFERS) -> int:
    """Static shared memory of one block: the buffer ring plus descriptors and tickets."""
    return buffers * (tile_bytes // 16 + 5) * 16 + buffers * (DESC_FIELDS + 1) * 8 + 8


@functools.lru_cache(maxsize=None)
def _write_moved(threads: int, write_iters: int):
    """The write path both tiled kernels share: realign in registers, store 16-byte vectors."""

    @cuda.jit(device=True)
    def write_moved(smem, slot0, src_al, data, row_pos, head, lo, hi, delta, tid):
        """Write row positions [lo, hi) with the bytes of positions p + delta.

        Those source bytes sit in ``smem`` from vector ``slot0`` on,
        over-copied from the 16-byte aligned position ``src_al``. Whole
        destination vectors take two 16-byte shared loads, a 5-word window
        chosen by a block-uniform branch and four funnel shifts; the (at most
        two) partial vectors at the ends are written byte by byte.
        """
        d_lo = S.align_down(head + lo) - head
        d_vecs = (S.align_up(head + hi) - S.align_down(head + lo)) // 16
        base = d_lo + delta - src_al
        q0 = slot0 + (base >> 4)
        r = base & 15
        for m in range(write_iters):
            v = tid + m * threads
            if v < d_vecs:
                p = d_lo + 16 * v
                if p >= lo and p + 16 <= hi:
                    w = 4 * (q0 + v)
                    lo_words = load16_shared(smem, w)
                    if r == 0:
                        store16(data, row_pos + p, lo_words[0], lo_words[1], lo_words[2], lo_words[3])
                    else:
                        hi_words = load16_shared(smem, w + 4)
                        u0, u1, u2, u3, u4 = S.window5(
                            r >> 2, uint64(lo_words[0]), uint64(lo_words[1]), uint64(lo_words[2]),
                            uint64(lo_words[3]), uint64(hi_words[0]), uint64(hi_words[1]),
                            uint64(hi_words[2]), uint64(hi_words[3]))
                        bs = r & 3
                        store16(data, row_pos + p,
                                uint32(S.funnel(u0, u1, bs)), uint32(S.funnel(u1, u2, bs)),
                                uint32(S.funnel(u2, u3, bs)), uint32(S.funnel(u3, u4, bs)))
                else:
                    for b in range(16):
                        x = p + b
                        if x >= lo and x < hi:
                            sb = 16 * slot0 + x + delta - src_al
                            word = smem[sb >> 2]
                            data[row_pos + x] = (word >> ((sb & 3) * 8)) & 0xFF

    return write_moved


@functools.lru_cache(maxsize=None)
def seam_kernel():
    """Copy every row's seam, whole aligned vectors, into scratch (before the tiles run)."""

    @cuda.jit
    def kernel(data, scratch, rows, n, k, head0, scratch_row):
        span_vecs = S.max_seam_span(n, k) // 16
        start = cuda.grid(1)
        stride = cuda.gridsize(1)
        for i in range(start, rows * span_vecs, stride):
            row = 0 if i < span_vecs else i // span_vecs
            v = i - row * span_vecs
            head = S.row_head(head0, row, n)
            if 16 * v < S.seam_span(n, k, head):
                w = load16(data, row * n + S.seam_origin(n, k, head) + 16 * v)
                store16(scratch, row * scratch_row + 16 * v, w[0], w[1], w[2], w[3])

    return kernel


@functools.lru_cache(maxsize=None)
def short_kernel(tile_bytes: int = TILE_BYTES, threads: int = THREADS, buffers: int = BUFFERS,
                 min_blocks: int = 0):
    """The persistent, flag-chained in-place rotation kernel for one configuration.

    Arguments (all rows of one launch are back to back in ``data``):
    ``data`` uint8[rows * n]; ``scratch`` uint8, the rows' seams, filled by
    ``seam_kernel`` on the same stream (``scratch_row`` bytes per row);
    ``flags`` uint32[total] (``epoch`` marks "read done" this launch, so
    flags never need clearing); ``counters`` uint64[2] (ticket dispenser,
    finished blocks; left at zero for the next launch); then
    ``rows, n, k, head0, per_row, total, epoch, scratch_row``.

    Each block keeps a ring of ``buffers`` tile buffers in shared memory;
    ``buffers - 1`` tiles' copies are in flight while one tile is written::

        oldest ticket's copies landed   (cp.async.wait_group + barrier)
        thread 0: publish it "read done"; take the ticket drawn ahead,
                  draw the next one, decode the taken one
        start the new ticket's copies into the free buffer
        thread 0: wait for the readers of the oldest tile's destination
        write the oldest tile: realign in registers, 16-byte stores

    Copies hold no registers. A block publishes a tile as soon as its data
    has landed and waits only for smaller tickets, so the kernel cannot
    deadlock with any number of resident blocks (docs/design.md).
    """
    if tile_bytes % 16 or tile_bytes < 64:
        raise ValueError(f"tile_bytes must be a multiple of 16 and >= 64, got {tile_bytes}")
    if buffers < 2:
        raise ValueError(f"buffers must be >= 2, got {buffers}")
    tile_vecs = tile_bytes // 16
    buffer_vecs = tile_vecs + 5   # buffers are addressed in 16-byte vectors, so
    smem_words = 4 * buffers * buffer_vecs  # every vector access is provably aligned
    read_iters = -(-(tile_vecs + 4) // threads)
    write_iters = -(-(tile_vecs + 1) // threads)
    T = tile_bytes
    ticket_slots = buffers
    wait_oldest = copies_waiter(buffers - 2)

    # The simulator rejects launch_bounds; it only tunes register allocation
    # (min_blocks > 0 asks ptxas to fit that many blocks per SM).
    bounds = (threads, min_blocks) if min_blocks else threads
    jit_options = {} if SIMULATED else {"launch_bounds": bounds}

    @cuda.jit(device=True)
    def describe(desc, d, t, per_row, n, k, head0, scratch_row):
        """Thread 0: decode ticket t into descriptor slot d.

        All the schedule's integer math (divisions included) happens here,
        once per ticket, instead of in every thread: the vector loops then
        only add and compare.
        """
        row = 0 if t < per_row else t // per_row  # one row: no 64-bit division
        head = S.row_head(head0, row, n)
        j = S.decode_ticket(n, k, head, T, t - row * per_row)
        desc[d, F_TILE] = j
        desc[d, F_HEAD] = head
        desc[d, F_BASE] = row * per_row
        desc[d, F_A_VECS] = 0
        desc[d, F_B_VECS] = 0
        if j >= 0:
            row_pos = row * n
            seam_pos = row * scratch_row
            origin = S.seam_origin(n, k, head)
            left = S.is_left(n, k)
            x0, xs, x1 = S.tile_parts(n, k, head, T, j)
            a_lo = S.align_down(head + x0 + k) - head
            b_lo = S.align_down(head + xs + k - n) - head
            a_vecs = (S.align_up(head + xs + k) - S.align_down(head + x0 + k)) // 16 if xs > x0 else 0
            b_vecs = (S.align_up(head + x1 + k - n) - S.align_down(head + xs + k - n)) // 16 if x1 > xs else 0
            # Part A reads the array (left schedule) or the seam in scratch (right); B the other.
            desc[d, F_A_SCRATCH] = 0 if left else 1
            desc[d, F_A_POS] = row_pos + a_lo if left else seam_pos + a_lo - origin
            desc[d, F_A_VECS] = a_vecs
            desc[d, F_B_SCRATCH] = 1 if left else 0
            desc[d, F_B_POS] = seam_pos + b_lo - origin if left else row_pos + b_lo
            desc[d, F_B_VECS] = b_vecs
            # Where to write: [x0, xs) from part A, [xs, x1) from part B.
            desc[d, F_ROW_POS] = row_pos
            desc[d, F_X0] = x0
            desc[d, F_XS] = xs
            desc[d, F_X1] = x1
            desc[d, F_A_LO] = a_lo
            desc[d, F_B_LO] = b_lo

    @cuda.jit(device=True)
    def start_copies(smem, buf, desc, d, data, scratch, tid):
        """Over-copy a tile's source, whole aligned vectors, into buffer ``buf`` (a vector index)."""
        a_vecs = desc[d, F_A_VECS]
        b_vecs = desc[d, F_B_VECS]
        a_src = scratch if desc[d, F_A_SCRATCH] else data
        b_src = scratch if desc[d, F_B_SCRATCH] else data
        a_pos = desc[d, F_A_POS]
        b_pos = desc[d, F_B_POS] - 16 * a_vecs
        for m in range(read_iters):
            slot = tid + m * threads
            if slot < a_vecs:
                copy16_async(smem, 4 * (buf + slot), a_src, a_pos + 16 * slot)
            elif slot < a_vecs + b_vecs:
                copy16_async(smem, 4 * (buf + slot), b_src, b_pos + 16 * slot)
        commit_copies()  # one group per ticket, empty or not, so group counts agree

    write_moved = _write_moved(threads, write_iters)

    @cuda.jit(device=True)
    def write_tile(smem, buf, desc, d, data, n, k, tid):
        """Store a tile from buffer ``buf``: part A reads x + k, part B x + k - n."""
        row_pos = desc[d, F_ROW_POS]
        head = desc[d, F_HEAD]
        x0 = desc[d, F_X0]
        xs = desc[d, F_XS]
        x1 = desc[d, F_X1]
        if xs > x0:
            write_moved(smem, buf, desc[d, F_A_LO], data, row_pos, head, x0, xs, k, tid)
        if x1 > xs:
            write_moved(smem, buf + desc[d, F_A_VECS], desc[d, F_B_LO], data, row_pos, head, xs, x1, k - n, tid)

    @cuda.jit(**jit_options)
    def kernel(data, scratch, flags, counters, rows, n, k, head0, per_row, total, epoch, scratch_row):
        if SIMULATED:  # pruned at compile time; the simulator rejects alignment
            smem = cuda.shared.array(smem_words, uint32)
        else:
            smem = cuda.shared.array(smem_words, uint32, alignment=16)
        desc = cuda.shared.array((buffers, DESC_FIELDS), int64)  # one per buffer
        tickets = cuda.shared.array(ticket_slots, int64)  # the ring's tickets
        tid = cuda.threadIdx.x
        # Thread 0 keeps one ticket drawn ahead in a register: the atomic's
        # round trip completes while the block works, not on its critical path.
        ahead = int64(0)
        # Fill the ring: buffers - 1 tickets' copies in flight.
        if tid == 0:
            for i in range(buffers - 1):
                t = int64(cuda.atomic.add(counters, 0, uint64(1)))
                tickets[i] = t
                if t < total:
                    describe(desc, i, t, per_row, n, k, head0, scratch_row)
            ahead = int64(cuda.atomic.add(counters, 0, uint64(1)))
        cuda.syncthreads()
        for i in range(buffers - 1):
            if tickets[i] < total:
                start_copies(smem, i * buffer_vecs, desc, i, data, scratch, tid)
            else:
                commit_copies()
        oldest = 0
        free = buffers - 1
        t = tickets[oldest]
        while t < total:
            wait_oldest()
            cuda.syncthreads()  # the oldest ticket's source is in its buffer
            if tid == 0:
                # "Read done" needs no fence: the copies have landed, and a
                # load that has returned cannot be changed by a later store.
                store_relaxed(flags, t, epoch)
                t_new = ahead
                if t_new < total:
                    ahead = int64(cuda.atomic.add(counters, 0, uint64(1)))
                tickets[free] = t_new
                if t_new < total:
                    describe(desc, free, t_new, per_row, n, k, head0, scratch_row)
            cuda.syncthreads()
            if tickets[free] < total:  # its copies fly while the oldest waits and writes
                start_copies(smem, free * buffer_vecs, desc, free, data, scratch, tid)
            else:
                commit_copies()
            j = desc[oldest, F_TILE]
            if j >= 0:
                if tid == 0:
                    lo, hi = S.waits_before_write(n, k, desc[oldest, F_HEAD], T, j)
                    base = desc[oldest, F_BASE]
                    for waited in range(lo, hi + 1):
                        while load_acquire(flags, base + waited) != epoch:
                            pass
                cuda.syncthreads()
                write_tile(smem, oldest * buffer_vecs, desc, oldest, data, n, k, tid)
            free = oldest
            oldest = oldest + 1 if oldest + 1 < buffers else 0
            t = tickets[oldest]

        if tid == 0:
            finished = cuda.atomic.add(counters, 1, uint64(1))
            if finished == cuda.gridDim.x - 1:
                # Last block out: every block has drawn its final ticket, so
                # the dispenser can be rewound for the next launch.
                counters[0] = 0
                counters[1] = 0

    return kernel


@functools.lru_cache(maxsize=None)
def swap_kernel(tile_bytes: int = TILE_BYTES, threads: int = THREADS):
    """Swap two equal, disjoint byte ranges of every row, in place, at any alignment.

    ``kernel(data, rows, row_bytes, a, b, m, head0)`` swaps positions
    ``[a, a + m)`` and ``[b, b + m)`` (``a + m <= b``) of each row of
    ``row_bytes`` bytes. Tiles cut the A range on its 16-byte grid; a block
    over-copies both source ranges into shared memory, then writes each side
    from the other as whole aligned vectors, realigned in registers (the
    short kernel's write path). Tiles touch disjoint bytes, so no flags: this
    is the pass of the block-swap (Gries-Mills) fallback for distances whose
    seam does not fit the scratch.
    """
    tile_vecs = tile_bytes // 16
    region_vecs = tile_vecs + 2
    smem_words = 4 * 2 * region_vecs
    read_iters = -(-(2 * region_vecs) // threads)
    write_iters = -(-(tile_vecs + 1) // threads)
    T = tile_bytes
    jit_options = {} if SIMULATED else {"launch_bounds": threads}

    write_moved = _write_moved(threads, write_iters)

    @cuda.jit(**jit_options)
    def kernel(data, rows, row_bytes, a, b, m, head0):
        if SIMULATED:
            smem = cuda.shared.array(smem_words, uint32)
        else:
            smem = cuda.shared.array(smem_words, uint32, alignment=16)
        tid = cuda.threadIdx.x
        tiles_per_row = (m + 15 + T - 1) // T  # an upper bound over heads
        for t in range(cuda.blockIdx.x, rows * tiles_per_row, cuda.gridDim.x):
            row = 0 if t < tiles_per_row else t // tiles_per_row
            j = t - row * tiles_per_row
            head = S.row_head(head0, row, row_bytes)
            row_pos = row * row_bytes
            x0, x1 = S.tile_dest(m, (head + a) % 16, T, j)  # on the A range's 16-byte grid
            if x0 < x1:
                a_al = S.align_down(head + a + x0) - head
                a_vecs = (S.align_up(head + a + x1) - S.align_down(head + a + x0)) // 16
                b_al = S.align_down(head + b + x0) - head
                b_vecs = (S.align_up(head + b + x1) - S.align_down(head + b + x0)) // 16
                for it in range(read_iters):
                    slot = tid + it * threads
                    if slot < a_vecs:
                        copy16_async(smem, 4 * slot, data, row_pos + a_al + 16 * slot)
                    elif slot >= region_vecs and slot - region_vecs < b_vecs:
                        copy16_async(smem, 4 * slot, data, row_pos + b_al + 16 * (slot - region_vecs))
                commit_copies()
                wait_all()
                cuda.syncthreads()
                write_moved(smem, region_vecs, b_al, data, row_pos, head, a + x0, a + x1, b - a, tid)
                write_moved(smem, 0, a_al, data, row_pos, head, b + x0, b + x1, a - b, tid)
            cuda.syncthreads()  # smem is reused by the next tile

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
