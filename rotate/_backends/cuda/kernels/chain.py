"""The chain-ordered in-place rotation kernel (``chain``; docs/design.md "The chain").

``chain_kernel`` builds one persistent kernel per configuration: blocks take
items (tiles of a lane's chain) by ticket, stage each tile's sources and
write it realigned in registers, publishing "read done" flags that later
writers wait for. The index math it calls lives in ``rotate._schedules.chain`` and
is shared with the CPU emulator; docs/design.md gives the deadlock-freedom
argument.
"""

from __future__ import annotations

import functools
import os

from numba import cuda, int32, int64, uint32, uint64

from ...._schedules import chain as S
from ..tuning import HOPPER as _HOPPER
from .common import _copy_vectors, _write_moved, leave_launch, wait_copies_left
from .memops import (SIMULATED, address_low, atomic_add_u64, bulk_load, commit_copies, copies_waiter, load16,
                      load_acquire, load_i64, mbar_address, mbar_arrive, mbar_expect_tx, mbar_init, mbar_init_fence,
                      mbar_try_wait, named_barrier, proxy_fence_global, shared_address, store16, store_relaxed)

# Fields of an item descriptor (see ``describe``): the item, then up to
# MAX_PIECES source pieces of PIECE_FIELDS each.
F_TILE, F_ROW, F_HEAD, F_X0, F_X1, F_PIECES, F_KINDS, F_REACH = range(8)
HEADER_FIELDS = 8
# P_WXH: where the write that starts at this piece ends (-1: an earlier piece's write covers it).
P_XL, P_XH, P_SRC_AL, P_SCRATCH, P_POS, P_SLOT, P_VECS, P_WXH = range(8)
PIECE_FIELDS = 8
MAX_PIECES = 4
DESC_FIELDS = HEADER_FIELDS + MAX_PIECES * PIECE_FIELDS
ENTRY_BATCH = 16  # plan-table entries thread 0 reads at once (a power of two)
# Thread 0's (the control thread's) window on the plan table: ENTRY_BATCH entries, the batch they
# start at, whether every pre-read has finished (then no pre-read flag needs polling), the tickets.
CACHE_BATCH, CACHE_PRE_DONE, CACHE_PRE_TOTAL = ENTRY_BATCH, ENTRY_BATCH + 1, ENTRY_BATCH + 2
# The control-warp variant's counters in shared memory (``chain_kernel(control_warp=True)``).
SEQ_DECODED, SEQ_CLEARED, SEQ_WRITTEN, SEQ_END = range(4)
# The pipelined variant's item slots: -1 the end, 0 an item the data warps write.
ITEM_END, ITEM_WRITTEN_BY_WARPS = -1, 0
# A pre-read ticket's large spans in shared memory (``pre_reads``): tile, source, scratch place,
# vectors, and first vector in the ticket's run.
G_TILE, G_SRC, G_DST, G_VECS, G_START = range(5)
G_FIELDS = 5

#: The kernel factories' defaults (probes, codegen tests): the tuning policy's values, which plans pass
#: explicitly (rotate/_backends/cuda/tuning.py says why they are what they are).
TILE_BYTES = _HOPPER.tile_bytes
THREADS = _HOPPER.default_threads
BUFFERS = _HOPPER.buffers


def buffer_vecs(tile_bytes: int) -> int:
    """16-byte vectors of one ring buffer: a tile, the over-copy of up to MAX_PIECES pieces and a
    vector a piece that puts its shared copy at its global source's phase within a 32-byte sector
    (``sector_shift``); whole 128-byte lines, so every buffer starts on one."""
    return -(-(tile_bytes // 16 + 3 * MAX_PIECES + 2) // 8) * 8


def control_threads(control_warp: bool = False, pipeline: bool = False) -> int:
    """Threads a chain kernel block has beyond its data warps: a control warp, or (pipelined) a
    producer warp and a decoder warp."""
    return 64 if pipeline else 32 if control_warp else 0


def smem_bytes(tile_bytes: int, buffers: int = BUFFERS, control_warp: bool = False) -> int:
    """Static shared memory of one block: the buffer ring plus descriptors (one more than the
    buffers: the next item is decoded ahead; twice the buffers with a control warp), item slots
    and (with a control warp, for the pipelined variant) five mbarriers a buffer."""
    slots = 2 * buffers if control_warp else buffers + 1
    barriers = 5 * (buffers + 1) * 8 if control_warp else 0
    group = (S.PRE_GROUP_MAX + 1) * G_FIELDS * 8  # a pre-read ticket's spans
    return (buffers * buffer_vecs(tile_bytes) * 16 + slots * (DESC_FIELDS + 1) * 8 + (ENTRY_BATCH + 7) * 8 + barriers
            + group)


#: DRAM and L2 move global memory in 32-byte sectors. Left rotations by c bytes with c mod 32 in
#: [16, 31] ran the pipelined chain kernel at 83-85% of memcpy, the others at 88% (1 GiB uint8):
#: their bulk copies read from halfway into a sector into a buffer that starts on one. Splitting
#: off the first vector so the rest starts on a sector changed nothing (shared side still off by
#: half); landing each copy at its global source's phase (``sector_shift``) brought those shifts
#: to 88-89% (docs/results/chain-ab-sectors-h200.jsonl, runs 1-3; both measured together).
SECTOR_BYTES = 32


@cuda.jit(device=True)
def sector_shift(src, pos, slot):
    """1 when a copy of ``src + pos`` to buffer vector ``slot`` would land at the other phase within a
    32-byte sector than its global source has, else 0: the vectors to move the slot by. Bulk copies
    whose two ends differ in that phase ran 5 points slower (buffers start on 128-byte lines)."""
    return int64(((address_low(src, pos) >> 4) ^ uint32(slot)) & 1)


@cuda.jit(device=True)
def bulk_load_sectors(smem, to, src, pos, nbytes, bars, barrier):
    """``bulk_load`` of ``src[pos:pos + nbytes]`` to shared byte ``to``, its longest part starting on a
    sector: a copy that would start halfway into one copies that half first, alone."""
    if nbytes > 16 and address_low(src, pos) & (SECTOR_BYTES - 16):
        bulk_load(smem, to, src, pos, uint32(16), bars, barrier)
        bulk_load(smem, uint32(to + 16), src, pos + 16, uint32(nbytes - 16), bars, barrier)
    else:
        bulk_load(smem, to, src, pos, nbytes, bars, barrier)


@functools.lru_cache(maxsize=None)
def chain_kernel(tile_bytes: int = TILE_BYTES, threads: int = THREADS, buffers: int = BUFFERS,
                 min_blocks: int = 0, control_warp: bool = False, direct_decode: bool = False,
                 pipeline: bool = False, one_lane: bool = False):
    """The persistent, chain-ordered in-place rotation kernel for one configuration.

    ``one_lane``: the kernel of a co-resident plan (``co_resident`` in the
    plan's params): a block walks the one lane its first ticket gives and
    leaves, never drawing a second, since its waits may point to any lane at
    an earlier step, and a block walking two lanes would hold the second's
    first steps behind the first's last (docs/design.md, "Co-resident lanes").
    The launch has exactly one block a lane, cooperatively.

    Arguments are scalars on the GPU (raw device addresses and integers, so a
    launch passes them as they are) and arrays under the simulator:
    ``data`` (the rows, back to back), ``scratch`` (pre-read spans,
    ``scratch_row`` bytes per row), ``flags`` (uint32: "read done" per
    (row, tile), then "pre-read done" per (row, tile); a flag equal to
    ``epoch`` is set, so flags never need clearing), ``counters`` (uint64:
    lane tickets, pre-read tickets, finished blocks; the last block out
    rewinds them), ``table`` (the plan table, ``rotate._schedules.chain.TILE_FIELDS``
    int64 per (head, tile): pre-read span, (lane, step) key, chain order),
    then ``rows, n, k, head0, lane_steps, lanes_row, pre_row`` (pre-read
    tickets per row), ``scratch_row, table_heads, epoch``.

    A block first takes pre-read tickets until none are left (one large
    span, or up to ``PRE_TICKET_ENTRIES`` small ones, as
    ``rotate._schedules.chain.pre_span`` names them, copied into scratch; they
    wait for nothing), then lane tickets, walking each lane's chain positions in order
    with a ring of ``buffers`` tile buffers and ``buffers + 1`` item descriptors::

        oldest item's copies landed   (cp.async.wait_group + barrier)
        thread 0: publish it "read done"
        start the copies of the item ``buffers - 1`` ahead (decoded already)
        thread 0: wait as ``classify`` says for the readers of the oldest
                  item's tile (flags of earlier lanes; its own copies in flight,
                  up to the farthest reader's: ``ring_reach``)
        write the oldest tile: realign in registers, 16-byte stores
        thread 0: next item (same lane, or a new lane ticket); decode it:
                  tile, source pieces (array or scratch)

    Decoding comes after the write so that the other warps write while
    thread 0 decodes (Nsight Compute put 25-45% of the warps' time at the
    barrier that waited for the decoding when it came first).

    Every wait is on a lexicographically smaller (lane, step) or on a
    pre-read, so it finishes with any number of resident blocks
    (docs/design.md).

    ``direct_decode``: items whose source is one array run that does not
    wrap (no piece served from scratch) get their one-piece descriptor
    without walking the source runs, and readers without a ``WAIT`` are
    cleared from their packed kinds without walking the reader runs: the
    same descriptors and waits with fewer instructions on the decoding
    thread (the tuning's ``chain_decode="direct"``, the default).

    ``pipeline`` (with ``control_warp``; Hopper PTX): two warps after the
    data warps, one thread each: a decoder that decodes items ahead, and a
    producer that copies their sources into the ring with bulk copies
    (``cp.async.bulk``, the copy engine), publishes "read done" and clears
    waits; the data warps only write, each at its own pace, with no block
    barrier: mbarriers say "decoded", "free", "loaded", "cleared" and
    "written" (``kernel_pipeline``).
    """
    if tile_bytes % 16 or tile_bytes < 64:
        raise ValueError(f"tile_bytes must be a multiple of 16 and >= 64, got {tile_bytes}")
    if buffers < 2:
        raise ValueError(f"buffers must be >= 2, got {buffers}")
    T = tile_bytes
    vecs_per_buffer = buffer_vecs(tile_bytes)
    smem_words = 4 * buffers * vecs_per_buffer  # addressed in whole vectors: every access aligned
    write_iters = -(-(tile_bytes // 16 + 1) // threads)
    wait_oldest = copies_waiter(buffers - 2)
    slots = buffers + 1  # item descriptors: the ring's items and the one decoded ahead
    cache_len = ENTRY_BATCH + 3
    if pipeline and not control_warp:
        raise ValueError("pipeline needs control_warp: the producer is the control warp's first thread")
    group_shape = (S.PRE_GROUP_MAX + 1, G_FIELDS)  # a pre-read ticket's spans (``pre_reads``)
    block = threads + control_threads(control_warp, pipeline)
    bounds = (block, min_blocks) if min_blocks else block
    ws_slots = 2 * buffers  # control-warp variant: descriptors decoded ahead of the writes
    bar_count = 3 * buffers + 2 * slots  # pipelined variant: loaded, cleared, written a buffer; decoded, free a slot
    bar_decoded = 3 * buffers
    bar_free = 3 * buffers + slots
    data_barrier = named_barrier(1, threads)
    jit_options = {} if SIMULATED else {"launch_bounds": bounds}
    if not SIMULATED and os.environ.get("ROTATE_LINEINFO") == "1":
        jit_options["lineinfo"] = True  # Nsight Compute's source view (benchmarks/probes/ncu_target.py)
    write_moved = _write_moved(threads, write_iters, spare_vector=True)  # buffer_vecs leaves spare vectors
    copy_vectors = _copy_vectors(threads)

    @cuda.jit(device=True)
    def wait_ring(reach):
        """Wait until the copies of the item ``reach`` ahead of the oldest (and all before it) have landed.

        ``buffers - 1`` items' copies are in flight behind the oldest, in
        order; the groups after the reader's may stay in flight (at most 3
        are left: deeper rings wait for more than they must, never less).
        """
        wait_copies_left(buffers - 1 - reach)

    @cuda.jit(device=True)
    def row_of(lane, lanes_row):
        return 0 if lane < lanes_row else lane // lanes_row  # one row: no 64-bit division

    @cuda.jit(device=True)
    def next_item(counters, lane, step, total_lanes, rows, n, lane_steps, lanes_row, head0):
        """Thread 0: the block's next item as ``(lane, step, valid)``."""
        if lane >= total_lanes:
            return lane, step, 0
        step += 1
        while True:
            if lane >= 0 and step < lane_steps:
                row = row_of(lane, lanes_row)
                head = S.row_head(head0, row, n)
                position = (lane - row * lanes_row) * lane_steps + step
                if position < S.tile_count(n, head, T):
                    return lane, step, 1
            if one_lane and lane >= 0:
                return total_lanes, step, 0
            lane = int64(atomic_add_u64(counters, 0, uint64(1)))
            step = int64(0)
            if lane >= total_lanes:
                return lane, step, 0

    @cuda.jit(device=True)
    def head_base(table_heads, head, m_max):
        return S.table_stride(m_max) * (head if table_heads > 1 else 0)

    @cuda.jit(device=True)
    def item_entry(cache, table, address):
        """Thread 0: the plan-table entry at ``address``, read 16 at a time into shared memory.

        A lane's items are consecutive entries: one round trip to memory per
        16 items instead of one per item on the block's critical path.
        """
        batch = address - (address & (ENTRY_BATCH - 1))
        if cache[ENTRY_BATCH] != batch:
            for i in range(ENTRY_BATCH):
                cache[i] = load_i64(table, batch + i)
            cache[ENTRY_BATCH] = batch
        return cache[address - batch]

    @cuda.jit(device=True)
    def describe(desc, d, lane, step, cache, counters, flags, table, rows, n, k, head0, lane_steps, lanes_row,
                 scratch_row, table_heads, epoch):
        """Thread 0: decode item (lane, step) into descriptor ``d`` (tile, source pieces).

        The tile and the kinds of its pieces and readers are one entry of the
        plan table (consecutive items of a lane are consecutive entries);
        pieces marked PRE come from scratch, once their pre-read is published.
        """
        row = row_of(lane, lanes_row)
        head = S.row_head(head0, row, n)
        m_max = S.max_tiles(n, T)
        base = head_base(table_heads, head, m_max)
        packed = item_entry(cache, table, base + S.TILE_FIELDS * m_max + (lane - row * lanes_row) * lane_steps + step)
        j = S.item_tile(packed)
        piece_kinds = S.item_piece_kinds(packed)
        seam_base = rows * m_max
        x0, x1 = S.tile_dest(n, head, T, j)
        desc[d, F_TILE] = j
        desc[d, F_ROW] = row
        desc[d, F_HEAD] = head
        desc[d, F_X0] = x0
        desc[d, F_X1] = x1
        desc[d, F_KINDS] = S.item_reader_kinds(packed)
        desc[d, F_REACH] = S.item_ring_reach(packed)
        # Runs of the source whose writers differ only matter for the
        # decision; consecutive array runs are copied and written as one
        # piece, so no destination vector is split between pieces (a split
        # vector is written byte by byte: partial sectors). A piece that
        # continues the previous one's source at a 16-byte boundary (a
        # seam served from scratch, whose spans mirror the array's
        # alignment) lands right after it in the buffer, so one realigned
        # write covers both.
        if direct_decode and not S.kinds_have(piece_kinds, S.PRE) and x1 + k <= n:
            # One array run (consecutive runs merge; no wrap): the loop below would build this piece.
            z_al = S.align_down(head + x0 + k) - head
            desc[d, HEADER_FIELDS + P_XL] = x0
            desc[d, HEADER_FIELDS + P_XH] = x1
            desc[d, HEADER_FIELDS + P_SRC_AL] = z_al
            desc[d, HEADER_FIELDS + P_SLOT] = 0
            desc[d, HEADER_FIELDS + P_VECS] = (S.align_up(head + x1 + k) - S.align_down(head + x0 + k)) // 16
            desc[d, HEADER_FIELDS + P_WXH] = x1
            desc[d, HEADER_FIELDS + P_SCRATCH] = 0
            desc[d, HEADER_FIELDS + P_POS] = row * n + z_al
            desc[d, F_PIECES] = 1
            return
        x = x0
        count = 0
        slot = 0
        run = 0
        z_next = int64(-1)
        z_end = int64(-1)
        writer_piece = HEADER_FIELDS
        while x < x1:
            w, z, xe = S.source_run(n, k, head, T, x, x1)
            pre = S.kind_at(piece_kinds, run) == S.PRE
            run += 1
            if not pre and z == z_next and desc[d, HEADER_FIELDS + (count - 1) * PIECE_FIELDS + P_SCRATCH] == 0:
                piece = HEADER_FIELDS + (count - 1) * PIECE_FIELDS  # extend the previous array piece
                x_lo = desc[d, piece + P_XL]
                z_lo = z - (x - x_lo)
                vecs = (S.align_up(head + z_lo + (xe - x_lo)) - S.align_down(head + z_lo)) // 16
                slot += vecs - desc[d, piece + P_VECS]
                desc[d, piece + P_XH] = xe
                desc[d, piece + P_VECS] = vecs
                desc[d, writer_piece + P_WXH] = xe
                z_next = z + (xe - x)
                z_end = z_next
                x = xe
                continue
            z_al = S.align_down(head + z) - head
            vecs = (S.align_up(head + z + (xe - x)) - S.align_down(head + z)) // 16
            piece = HEADER_FIELDS + count * PIECE_FIELDS
            desc[d, piece + P_XL] = x
            desc[d, piece + P_XH] = xe
            desc[d, piece + P_SRC_AL] = z_al
            desc[d, piece + P_SLOT] = slot
            desc[d, piece + P_VECS] = vecs
            if count > 0 and z == z_end and (head + z) % 16 == 0:
                desc[d, piece + P_WXH] = -1  # joined: the buffer continues the previous piece's vectors
                desc[d, writer_piece + P_WXH] = xe
            else:
                desc[d, piece + P_WXH] = xe
                writer_piece = piece
            z_end = z + (xe - x)
            if pre:
                entry = base + S.TILE_FIELDS * w
                if not pre_reads_done(cache, counters):
                    while load_acquire(flags, seam_base + row * m_max + w) != epoch:
                        pass
                desc[d, piece + P_SCRATCH] = 1
                desc[d, piece + P_POS] = (row * scratch_row + load_i64(table, entry + S.T_OFFSET) + z_al
                                          - load_i64(table, entry + S.T_LO))
                z_next = int64(-1)
            else:
                desc[d, piece + P_SCRATCH] = 0
                desc[d, piece + P_POS] = row * n + z_al
                z_next = z + (xe - x)
            slot += vecs
            count += 1
            x = xe
        desc[d, F_PIECES] = count

    @cuda.jit(device=True)
    def take_item(items, desc, d, lane, step, total_lanes, counters, cache, flags, table, rows, n, k, head0,
                  lane_steps, lanes_row, scratch_row, table_heads, epoch):
        """Thread 0: draw the block's next item into ring slot ``d`` (``items[d] = -1``: none left)."""
        lane, step, valid = next_item(counters, lane, step, total_lanes, rows, n, lane_steps, lanes_row, head0)
        items[d] = valid - 1
        if valid:
            describe(desc, d, lane, step, cache, counters, flags, table, rows, n, k, head0, lane_steps, lanes_row,
                     scratch_row, table_heads, epoch)
        return lane, step

    @cuda.jit(device=True)
    def start_copies(smem, buf, desc, d, data, scratch, tid):
        """Over-copy an item's source pieces, whole aligned vectors, into buffer ``buf`` (a vector index)."""
        for q in range(desc[d, F_PIECES]):
            base = HEADER_FIELDS + q * PIECE_FIELDS
            pos = desc[d, base + P_POS]
            slot = buf + desc[d, base + P_SLOT]
            vecs = desc[d, base + P_VECS]
            if desc[d, base + P_SCRATCH]:
                copy_vectors(smem, slot, scratch, pos, vecs, tid)
            else:
                copy_vectors(smem, slot, data, pos, vecs, tid)
        commit_copies()  # one group per item, empty or not, so group counts agree

    @cuda.jit(device=True)
    def write_item(smem, buf, desc, d, data, n, k, tid):
        """Store an item's tile from buffer ``buf``, a write per run of joined pieces."""
        row_pos = desc[d, F_ROW] * n
        head = desc[d, F_HEAD]
        for q in range(desc[d, F_PIECES]):
            base = HEADER_FIELDS + q * PIECE_FIELDS
            x = desc[d, base + P_XL]
            delta = k if x + k < n else k - n
            if desc[d, base + P_WXH] >= 0:
                write_moved(smem, buf + desc[d, base + P_SLOT], desc[d, base + P_SRC_AL], data, row_pos, head,
                            x, desc[d, base + P_WXH], delta, tid)

    @cuda.jit(device=True)
    def wait_readers(desc, d, cache, counters, flags, rows, n, k, epoch):
        """Thread 0: wait until every reader of the item's tile has its bytes, except readers in the ring:
        returns how many items ahead the farthest of those is (0: none)."""
        j = desc[d, F_TILE]
        row = desc[d, F_ROW]
        head = desc[d, F_HEAD]
        kinds = desc[d, F_KINDS]
        m_max = S.max_tiles(n, T)
        x1 = desc[d, F_X1]
        ring_wait = 0
        pre = 0
        z = desc[d, F_X0]
        count = 0
        if direct_decode and not S.kinds_have(kinds, S.WAIT):
            # Only WAIT needs the reader's tile: the other kinds are read off the packed entry.
            if S.kinds_have(kinds, S.RING):
                ring_wait = desc[d, F_REACH]
            pre = S.kinds_have(kinds, S.PRE)
            z = x1  # skip the walk below
        while z < x1:
            reader, ze = S.reader_run(n, k, head, T, z, x1)
            kind = S.kind_at(kinds, count)
            if kind == S.WAIT:
                while load_acquire(flags, row * m_max + reader) != epoch:
                    pass
            elif kind == S.RING:
                ring_wait = desc[d, F_REACH]
            elif kind == S.PRE:
                pre = 1
            count += 1
            z = ze
        if pre and not pre_reads_done(cache, counters):
            while load_acquire(flags, rows * m_max + row * m_max + j) != epoch:
                pass
        return ring_wait

    @cuda.jit(device=True)
    def pre_reads_done(cache, counters):
        """Thread 0 (the control thread): whether every pre-read ticket has finished.

        Counted once a ticket's spans are published (``counters[3]``); from
        then on no item polls a pre-read flag (two round trips an item where
        every tile has a seam in scratch).
        """
        if cache[CACHE_PRE_DONE] == 0:
            if S.pre_reads_finished(int64(atomic_add_u64(counters, 3, uint64(0))), cache[CACHE_PRE_TOTAL]):
                cuda.threadfence()  # acquire: the spans the count covers are visible after it
                cache[CACHE_PRE_DONE] = 1
        return cache[CACHE_PRE_DONE] != 0

    @cuda.jit(device=True)
    def copy_span(data, scratch, src, dst, first, vecs, stride):
        """Copy vectors ``first, first + stride, ...`` below ``vecs`` of a span, four loads before their stores."""
        v = first
        while v + 3 * stride < vecs:
            a = load16(data, src + 16 * v)
            b = load16(data, src + 16 * (v + stride))
            c = load16(data, src + 16 * (v + 2 * stride))
            e = load16(data, src + 16 * (v + 3 * stride))
            store16(scratch, dst + 16 * v, a[0], a[1], a[2], a[3])
            store16(scratch, dst + 16 * (v + stride), b[0], b[1], b[2], b[3])
            store16(scratch, dst + 16 * (v + 2 * stride), c[0], c[1], c[2], c[3])
            store16(scratch, dst + 16 * (v + 3 * stride), e[0], e[1], e[2], e[3])
            v += 4 * stride
        while v < vecs:
            a = load16(data, src + 16 * v)
            store16(scratch, dst + 16 * v, a[0], a[1], a[2], a[3])
            v += stride

    @cuda.jit(device=True)
    def span_of(group, spans, q, v):
        """The span of a ticket's group that holds the group's vector ``v`` (at or after span ``q``)."""
        while q + 1 < spans and v >= group[q + 1, G_START]:
            q += 1
        return q

    @cuda.jit(device=True)
    def copy_group(data, scratch, group, spans, total, first, stride):
        """Copy vectors ``first, first + stride, ...`` of a ticket's spans, taken as one run of ``total``
        vectors (``group``: each span's source, scratch place and first vector in the run), four loads
        before their stores."""
        v = first
        q = 0
        while v + 3 * stride < total:
            q0 = span_of(group, spans, q, v)
            q1 = span_of(group, spans, q0, v + stride)
            q2 = span_of(group, spans, q1, v + 2 * stride)
            q3 = span_of(group, spans, q2, v + 3 * stride)
            a = load16(data, group[q0, G_SRC] + 16 * (v - group[q0, G_START]))
            b = load16(data, group[q1, G_SRC] + 16 * (v + stride - group[q1, G_START]))
            c = load16(data, group[q2, G_SRC] + 16 * (v + 2 * stride - group[q2, G_START]))
            e = load16(data, group[q3, G_SRC] + 16 * (v + 3 * stride - group[q3, G_START]))
            store16(scratch, group[q0, G_DST] + 16 * (v - group[q0, G_START]), a[0], a[1], a[2], a[3])
            store16(scratch, group[q1, G_DST] + 16 * (v + stride - group[q1, G_START]), b[0], b[1], b[2], b[3])
            store16(scratch, group[q2, G_DST] + 16 * (v + 2 * stride - group[q2, G_START]), c[0], c[1], c[2], c[3])
            store16(scratch, group[q3, G_DST] + 16 * (v + 3 * stride - group[q3, G_START]), e[0], e[1], e[2], e[3])
            q = q3
            v += 4 * stride
        while v < total:
            q = span_of(group, spans, q, v)
            a = load16(data, group[q, G_SRC] + 16 * (v - group[q, G_START]))
            store16(scratch, group[q, G_DST] + 16 * (v - group[q, G_START]), a[0], a[1], a[2], a[3])
            v += stride

    @cuda.jit(device=True)
    def pre_reads(ctrl, data, scratch, flags, counters, table, rows, n, head0, pre_row, scratch_row, table_heads,
                  epoch, tid):
        """Phase 1, every thread of the block (a control warp too): pre-read tickets until none is left.

        A ticket is up to ``pre_group`` large spans, which the block copies
        together as one run (a barrier, a fence, then thread 0 publishes
        them), or up to ``PRE_TICKET_ENTRIES`` small spans, a thread each,
        each publishing its own after a fence
        (``rotate._schedules.chain.pre_ticket_entries``). Pre-reads wait for
        nothing, so every ticket taken finishes; a block leaves this loop
        only once all are taken.
        """
        m_max = S.max_tiles(n, T)
        seam_base = rows * m_max
        group = cuda.shared.array(group_shape, int64)
        while True:
            if tid == 0:
                ctrl[0] = int64(atomic_add_u64(counters, 1, uint64(1)))
            cuda.syncthreads()
            ticket = ctrl[0]
            cuda.syncthreads()
            if ticket >= rows * pre_row:
                break
            row, index = S.pre_ticket(ticket, pre_row)
            head = S.row_head(head0, row, n)
            base = head_base(table_heads, head, m_max)
            listed = base + S.pre_list(m_max)
            big = load_i64(table, base + S.pre_big(m_max))
            per_ticket = load_i64(table, base + S.pre_group_at(m_max))
            first, end = S.pre_ticket_entries(index, load_i64(table, listed), big, per_ticket)
            if index < S.ceil_div(big, per_ticket):
                spans = end - first
                if tid < spans:  # a thread a span reads its table entries: one round trip for all
                    w = load_i64(table, listed + 1 + first + tid)
                    entry = base + S.TILE_FIELDS * w
                    group[tid, G_TILE] = w
                    group[tid, G_SRC] = row * n + load_i64(table, entry + S.T_LO)
                    group[tid, G_DST] = row * scratch_row + load_i64(table, entry + S.T_OFFSET)
                    group[tid, G_VECS] = load_i64(table, entry + S.T_VECS)
                cuda.syncthreads()
                if tid <= spans:  # where each span starts in the run (the last: the run's length)
                    start = int64(0)
                    for q in range(tid):
                        start += group[q, G_VECS]
                    group[tid, G_START] = start
                cuda.syncthreads()
                copy_group(data, scratch, group, spans, group[spans, G_START], tid, block)
                if pipeline:
                    proxy_fence_global()  # scratch is read back by bulk copies (another proxy)
                cuda.syncthreads()
                if tid == 0:
                    cuda.threadfence()  # the block's copies are visible before the flags say so
                    for q in range(spans):
                        store_relaxed(flags, seam_base + row * m_max + group[q, G_TILE], uint32(epoch))
                    atomic_add_u64(counters, 3, uint64(1))  # a finished ticket (pre_reads_done)
            else:
                for e in range(first + tid, end, block):
                    w = load_i64(table, listed + 1 + e)
                    entry = base + S.TILE_FIELDS * w
                    copy_span(data, scratch, row * n + load_i64(table, entry + S.T_LO),
                              row * scratch_row + load_i64(table, entry + S.T_OFFSET), 0,
                              load_i64(table, entry + S.T_VECS), 1)
                    if pipeline:
                        proxy_fence_global()  # scratch is read back by bulk copies (another proxy)
                    cuda.threadfence()  # this thread's copies, then its flag
                    store_relaxed(flags, seam_base + row * m_max + w, uint32(epoch))
                cuda.syncthreads()
                if tid == 0:
                    cuda.threadfence()  # every thread's spans (ordered by the barrier) before the count
                    atomic_add_u64(counters, 3, uint64(1))

    @cuda.jit(**jit_options)
    def kernel(data, scratch, flags, counters, table, rows, n, k, head0, lane_steps, lanes_row,
               pre_row, scratch_row, table_heads, epoch):
        if SIMULATED:  # pruned at compile time; the simulator rejects alignment
            smem = cuda.shared.array(smem_words, uint32)
        else:
            smem = cuda.shared.array(smem_words, uint32, alignment=128)
        desc = cuda.shared.array((slots, DESC_FIELDS), int64)
        items = cuda.shared.array(slots, int64)
        ctrl = cuda.shared.array(2, int64)
        cache = cuda.shared.array(cache_len, int64)  # thread 0's window on the plan table
        tid = cuda.threadIdx.x
        m_max = S.max_tiles(n, T)

        pre_reads(ctrl, data, scratch, flags, counters, table, rows, n, head0, pre_row, scratch_row, table_heads,
                  epoch, tid)

        # Phase 2: lanes, item by item, through the ring.
        total_lanes = rows * lanes_row
        if tid == 0:
            cache[CACHE_BATCH] = -1
            cache[CACHE_PRE_DONE] = 0
            cache[CACHE_PRE_TOTAL] = rows * pre_row
        lane = int64(-1)
        step = int64(0)
        if tid == 0:
            for i in range(buffers):  # the ring's first buffers - 1 items and the one decoded ahead
                lane, step = take_item(items, desc, i, lane, step, total_lanes, counters, cache, flags, table,
                                       rows, n, k, head0, lane_steps, lanes_row, scratch_row, table_heads, epoch)
        cuda.syncthreads()
        for i in range(buffers - 1):
            if items[i] >= 0:
                start_copies(smem, i * vecs_per_buffer, desc, i, data, scratch, tid)
            else:
                commit_copies()
        oldest = 0  # the oldest item's descriptor (of buffers + 1) and buffer (of buffers)
        oldest_buffer = 0
        while items[oldest] >= 0:
            wait_oldest()
            cuda.syncthreads()  # the oldest item's source is in its buffer; the item ahead is decoded
            if tid == 0:
                # "Read done" needs no fence: the copies have landed, and a
                # load that has returned cannot be changed by a later store.
                store_relaxed(flags, desc[oldest, F_ROW] * m_max + desc[oldest, F_TILE], uint32(epoch))
            ahead = oldest + buffers - 1
            if ahead >= slots:
                ahead -= slots
            free = oldest_buffer - 1 if oldest_buffer > 0 else buffers - 1  # written last iteration
            if items[ahead] >= 0:  # its copies fly while the oldest waits and writes
                start_copies(smem, free * vecs_per_buffer, desc, ahead, data, scratch, tid)
            else:
                commit_copies()
            if tid == 0:
                ctrl[1] = wait_readers(desc, oldest, cache, counters, flags, rows, n, k, epoch)
            cuda.syncthreads()
            if ctrl[1]:
                wait_ring(ctrl[1])  # a reader of this tile is an item of ours still in flight
                cuda.syncthreads()
            write_item(smem, oldest_buffer * vecs_per_buffer, desc, oldest, data, n, k, tid)
            if tid == 0:
                # Decode the next item into the slot of the one written last
                # iteration, while the other warps still write this one.
                lane, step = take_item(items, desc, oldest - 1 if oldest > 0 else slots - 1, lane, step,
                                       total_lanes, counters, cache, flags, table, rows, n, k, head0, lane_steps,
                                       lanes_row, scratch_row, table_heads, epoch)
            oldest = oldest + 1 if oldest + 1 < slots else 0
            oldest_buffer = oldest_buffer + 1 if oldest_buffer + 1 < buffers else 0

        if tid == 0:
            leave_launch(counters)

    @cuda.jit(device=True)
    def control(desc, items, seq, cache, flags, counters, table, rows, n, k, head0, lane_steps, lanes_row,
                scratch_row, table_heads, epoch, pre_total):
        """The control warp (one thread): decode items ahead of the data warps, then clear their waits.

        ``seq`` counts, in order: items decoded (``SEQ_DECODED``), items
        whose readers have their bytes (``SEQ_CLEARED``), items written by
        the data warps (``SEQ_WRITTEN``, so a descriptor slot is free), and
        the index of the item that says "no more" (``SEQ_END``, -1 until
        decoded). Decoding runs up to ``slots`` items ahead of the writes;
        clearing an item waits for other lanes' flags (and pre-reads) only
        once the ``buffers - 1`` items after it are decoded, so the data
        warps can start those items' copies (their ring readers) meanwhile.
        """
        total_lanes = rows * lanes_row
        cache[CACHE_BATCH] = -1
        cache[CACHE_PRE_DONE] = 0
        cache[CACHE_PRE_TOTAL] = pre_total
        lane = int64(-1)
        step = int64(0)
        decoded = int64(0)
        cleared = int64(0)
        end = int64(-1)
        while True:
            if end < 0 and decoded - cuda.atomic.add(seq, SEQ_WRITTEN, 0) < ws_slots:
                slot = decoded % ws_slots
                lane, step = take_item(items, desc, slot, lane, step, total_lanes, counters, cache, flags, table,
                                       rows, n, k, head0, lane_steps, lanes_row, scratch_row, table_heads, epoch)
                if items[slot] < 0:
                    end = decoded
                    cuda.atomic.max(seq, SEQ_END, end)
                decoded += 1
                cuda.threadfence_block()  # the descriptor before the count that publishes it
                cuda.atomic.max(seq, SEQ_DECODED, decoded)
            elif cleared < decoded and (end >= 0 or decoded >= cleared + buffers):
                if cleared == end:
                    return
                wait_readers(desc, cleared % ws_slots, cache, counters, flags, rows, n, k, epoch)
                cleared += 1
                cuda.threadfence_block()
                cuda.atomic.max(seq, SEQ_CLEARED, cleared)

    @cuda.jit(device=True)
    def await_count(seq, index, above):
        """Data thread 0: spin until ``seq[index] > above`` (then what it publishes is visible)."""
        while cuda.atomic.add(seq, index, 0) <= above:
            pass
        cuda.threadfence_block()

    @cuda.jit(**jit_options)
    def kernel_control_warp(data, scratch, flags, counters, table, rows, n, k, head0, lane_steps, lanes_row,
                            pre_row, scratch_row, table_heads, epoch):
        """The same item loop with the decoding and the waits on other lanes in a control warp.

        Threads ``[0, threads)`` copy and write (synchronised by a named
        barrier of their own); the warp after them decodes ahead and clears
        waits (``control``), so no data warp waits for thread 0's
        bookkeeping. The order of what a block publishes and waits for is
        the chain kernel's (docs/design.md).
        """
        if SIMULATED:
            smem = cuda.shared.array(smem_words, uint32)
        else:
            smem = cuda.shared.array(smem_words, uint32, alignment=128)
        desc = cuda.shared.array((ws_slots, DESC_FIELDS), int64)
        items = cuda.shared.array(ws_slots, int64)
        ctrl = cuda.shared.array(2, int64)
        seq = cuda.shared.array(4, int64)
        cache = cuda.shared.array(cache_len, int64)
        tid = cuda.threadIdx.x
        m_max = S.max_tiles(n, T)
        if tid == 0:
            seq[SEQ_DECODED] = 0
            seq[SEQ_CLEARED] = 0
            seq[SEQ_WRITTEN] = 0
            seq[SEQ_END] = -1
        pre_reads(ctrl, data, scratch, flags, counters, table, rows, n, head0, pre_row, scratch_row, table_heads,
                  epoch, tid)  # ends with a barrier of every thread: seq is set
        if tid >= threads:
            if tid == threads:
                control(desc, items, seq, cache, flags, counters, table, rows, n, k, head0, lane_steps, lanes_row,
                        scratch_row, table_heads, epoch, rows * pre_row)
            return
        for i in range(buffers - 1):
            if tid == 0:
                end = cuda.atomic.add(seq, SEQ_END, 0)
                if end < 0 or end > i:
                    await_count(seq, SEQ_DECODED, i)
            data_barrier()
            if items[i] >= 0 and (seq[SEQ_END] < 0 or seq[SEQ_END] > i):
                start_copies(smem, i * vecs_per_buffer, desc, i, data, scratch, tid)
            else:
                commit_copies()
        oldest = int64(0)
        while True:
            # items[slot] is final for every data thread: thread 0 saw it decoded before the last barrier.
            slot = oldest % ws_slots
            if items[slot] < 0:
                break
            wait_oldest()
            data_barrier()  # the oldest item's source is in its buffer; the previous item is written
            ahead = oldest + buffers - 1
            if tid == 0:
                store_relaxed(flags, desc[slot, F_ROW] * m_max + desc[slot, F_TILE], uint32(epoch))
                cuda.atomic.max(seq, SEQ_WRITTEN, oldest)  # items before the oldest are written
                end = cuda.atomic.add(seq, SEQ_END, 0)
                if end < 0 or end > ahead:
                    await_count(seq, SEQ_DECODED, ahead)
                    end = cuda.atomic.add(seq, SEQ_END, 0)
                ctrl[0] = 1 if (end < 0 or end > ahead) else 0
                await_count(seq, SEQ_CLEARED, oldest)  # the control warp waited for this item's readers
            data_barrier()
            if ctrl[0]:
                start_copies(smem, (ahead % buffers) * vecs_per_buffer, desc, ahead % ws_slots, data, scratch, tid)
            else:
                commit_copies()
            reach = desc[slot, F_REACH]
            if reach:
                wait_ring(reach)  # a reader of this tile is an item of ours still in flight
                data_barrier()
            write_item(smem, (oldest % buffers) * vecs_per_buffer, desc, slot, data, n, k, tid)
            oldest += 1
        if tid == 0:
            leave_launch(counters)

    @cuda.jit(device=True)
    def issue_loads(smem, buf, desc, d, data, scratch, bars, bar0, loaded):
        """Producer: bulk-copy an item's source pieces (whole aligned vectors) into buffer ``buf``;
        barrier ``loaded`` completes once they have landed."""
        nbytes = int64(0)
        from_scratch = False
        for q in range(desc[d, F_PIECES]):
            nbytes += 16 * desc[d, HEADER_FIELDS + q * PIECE_FIELDS + P_VECS]
            from_scratch = from_scratch or desc[d, HEADER_FIELDS + q * PIECE_FIELDS + P_SCRATCH] != 0
        if from_scratch:
            proxy_fence_global()  # the pre-read's generic stores before this bulk read of them
        barrier = at(bar0, loaded)
        mbar_expect_tx(bars, barrier, uint32(nbytes))
        shift = int64(0)
        for q in range(desc[d, F_PIECES]):
            base = HEADER_FIELDS + q * PIECE_FIELDS
            src = scratch if desc[d, base + P_SCRATCH] else data
            pos = desc[d, base + P_POS]
            slot = desc[d, base + P_SLOT] + shift
            if desc[d, base + P_WXH] >= 0:  # a piece not joined to the one before: its own phase
                move = sector_shift(src, pos, slot)
                shift += move
                slot += move
            desc[d, base + P_SLOT] = slot  # the data warps read the slots once "loaded" completes
            bulk_load_sectors(smem, shared_address(smem, 4 * (buf + slot)), src, pos,
                              uint32(16 * desc[d, base + P_VECS]), bars, barrier)
        mbar_arrive(bars, barrier)

    @cuda.jit(device=True)
    def mbar_wait(bars, address, parity):
        while not mbar_try_wait(bars, address, uint32(parity)):
            pass

    @cuda.jit(device=True)
    def at(bar0, index):
        """The shared address of mbarrier ``index`` of the block's array at ``bar0``."""
        return uint32(bar0 + uint32(8 * index))

    @cuda.jit(device=True)
    def decode_ahead(desc, items, bars, bar0, cache, counters, flags, table, rows, n, k, head0, lane_steps, lanes_row,
                     scratch_row, table_heads, epoch, pre_total):
        """The pipelined variant's decoder (one thread of its own warp): item ``j`` into descriptor slot
        ``j % slots`` once the item that held the slot is written (``free``, which the producer
        arrives on), then "decoded"; up to the first item that says "no more"."""
        cache[CACHE_BATCH] = -1
        cache[CACHE_PRE_DONE] = 0
        cache[CACHE_PRE_TOTAL] = pre_total
        total_lanes = rows * lanes_row
        lane = int64(-1)
        step = int64(0)
        j = int64(0)
        while True:
            s = j % slots
            if j >= slots:
                mbar_wait(bars, at(bar0, bar_free + s), (j // slots - 1) & 1)  # item j - slots is written
            lane, step = take_item(items, desc, s, lane, step, total_lanes, counters, cache, flags, table, rows,
                                   n, k, head0, lane_steps, lanes_row, scratch_row, table_heads, epoch)
            mbar_arrive(bars, at(bar0, bar_decoded + s))
            if items[s] < 0:
                return
            j += 1

    @cuda.jit(device=True)
    def produce(smem, desc, items, bars, bar0, cache, data, scratch, flags, counters, rows, n, k, epoch):
        """The pipelined variant's producer (one thread): item ``c`` uses buffer ``c % buffers`` and
        descriptor slot ``c % slots``; barriers ``loaded``, ``cleared`` (its readers have their
        bytes) and ``written`` of buffer ``c % buffers`` complete phase ``c // buffers`` for it.

        Per item ``c``: clear it (its copies landed, "read done" published,
        its readers waited for as ``wait_readers`` says; a reader in the
        ring: that item's copies landed), then start the copies of item
        ``c + buffers - 1`` (decoded) into the buffer item ``c - 1`` was
        written from, once written; that write also frees item ``c - 1``'s
        descriptor slot for the decoder. The copies start first when the
        farthest ring reader of item ``c`` is that item. Every wait is on
        another block's earlier lane, a pre-read, a copy already started,
        the decoder (which waits only for writes of cleared items) or a
        data warp's write of a cleared item: none waits for itself
        (docs/design.md). Each barrier is waited on at most one phase
        behind its last completed one, so parities are never ambiguous.
        """
        end = int64(-1)  # the first item that says "no more", once the producer has seen it
        m_max = S.max_tiles(n, T)
        for i in range(buffers - 1):
            if end < 0:
                mbar_wait(bars, at(bar0, bar_decoded + i), 0)
                if items[i] >= 0:
                    issue_loads(smem, i * vecs_per_buffer, desc, i, data, scratch, bars, bar0, i)
                else:
                    end = i
                    mbar_arrive(bars, at(bar0, i))
        c = int64(0)
        while True:
            s = c % slots
            b = c % buffers
            ahead = c + buffers - 1
            issue_first = items[s] >= 0 and desc[s, F_REACH] >= buffers - 1
            for phase in range(2):
                if (phase == 0) == issue_first:
                    if end < 0:
                        ba = ahead % buffers
                        sa = ahead % slots
                        if c >= 1:
                            mbar_wait(bars, at(bar0, 2 * buffers + ba), ((c - 1) // buffers) & 1)  # item c - 1 written
                            mbar_arrive(bars, at(bar0, bar_free + (c + buffers) % slots))  # its slot: item c + buffers
                        mbar_wait(bars, at(bar0, bar_decoded + sa), (ahead // slots) & 1)
                        if items[sa] >= 0:
                            issue_loads(smem, ba * vecs_per_buffer, desc, sa, data, scratch, bars, bar0, ba)
                        else:
                            end = ahead
                            mbar_arrive(bars, at(bar0, ba))
                else:
                    mbar_wait(bars, at(bar0, b), (c // buffers) & 1)
                    if items[s] >= 0:
                        # "Read done" needs no fence: the copies have landed.
                        store_relaxed(flags, desc[s, F_ROW] * m_max + desc[s, F_TILE], uint32(epoch))
                        reach = wait_readers(desc, s, cache, counters, flags, rows, n, k, epoch)
                        for ahead_i in range(c + 1, c + reach + 1):
                            # Every item up to the farthest ring reader: bulk copies land in any
                            # order, and a tile may have more than one reader in the ring.
                            mbar_wait(bars, at(bar0, ahead_i % buffers), (ahead_i // buffers) & 1)
                    mbar_arrive(bars, at(bar0, buffers + b))
            if items[s] < 0:
                return
            c += 1

    @cuda.jit(**jit_options)
    def kernel_pipeline(data, scratch, flags, counters, table, rows, n, k, head0, lane_steps, lanes_row,
                        pre_row, scratch_row, table_heads, epoch):
        """The item loop as a producer, a decoder and consumers (``chain_kernel(pipeline=True)``).

        Threads ``[0, threads)`` write items in order, each thread waiting
        on the item's "loaded" and "cleared" barriers and arriving on its
        "written" one: no barrier of the whole block, so a warp that
        finishes its share of an item goes on to the next. The first thread
        of the next warp is the producer (``produce``: bulk copies, "read
        done", waits); the first of the last warp decodes items ahead
        (``decode_ahead``). What a block publishes and waits for, and in
        which order, is the chain kernel's.
        """
        if SIMULATED:
            smem = cuda.shared.array(smem_words, uint32)
        else:
            smem = cuda.shared.array(smem_words, uint32, alignment=128)
        desc = cuda.shared.array((slots, DESC_FIELDS), int64)
        items = cuda.shared.array(slots, int64)
        bars = cuda.shared.array(bar_count, int64)
        ctrl = cuda.shared.array(2, int64)
        producer_cache = cuda.shared.array(cache_len, int64)
        decoder_cache = cuda.shared.array(cache_len, int64)
        tid = cuda.threadIdx.x
        bar0 = mbar_address(bars, 0)
        if tid == threads:
            for i in range(buffers):
                mbar_init(bars, at(bar0, i), 1)  # loaded: the producer's arrival and the copies' bytes
                mbar_init(bars, at(bar0, buffers + i), 1)  # cleared: the producer
                mbar_init(bars, at(bar0, 2 * buffers + i), threads)  # written: every data thread
            for i in range(slots):
                mbar_init(bars, at(bar0, bar_decoded + i), 1)  # decoded: the decoder
                mbar_init(bars, at(bar0, bar_free + i), 1)  # free: the producer, once the slot's item is written
            mbar_init_fence()
        pre_reads(ctrl, data, scratch, flags, counters, table, rows, n, head0, pre_row, scratch_row, table_heads,
                  epoch, tid)  # ends with a barrier of every thread: the mbarriers are initialised
        if tid >= threads:
            if tid == threads:
                producer_cache[CACHE_PRE_DONE] = 0
                producer_cache[CACHE_PRE_TOTAL] = rows * pre_row
                produce(smem, desc, items, bars, bar0, producer_cache, data, scratch, flags, counters, rows, n, k,
                        epoch)
            elif tid == threads + 32:
                decode_ahead(desc, items, bars, bar0, decoder_cache, counters, flags, table, rows, n, k, head0,
                             lane_steps, lanes_row, scratch_row, table_heads, epoch, rows * pre_row)
                leave_launch(counters)  # the decoder draws the block's last ticket
            return
        # 32-bit loop state, stepped without divisions: a 64-bit item counter spilled to local
        # memory here held 15% of the warps' samples (ncu, 1 GiB uint8 shift 3).
        b = int32(0)
        s = int32(0)
        parity = uint32(0)
        while True:
            mbar_wait(bars, at(bar0, b), parity)
            mbar_wait(bars, at(bar0, buffers + b), parity)
            if items[s] < 0:
                return
            if items[s] == ITEM_WRITTEN_BY_WARPS:
                write_item(smem, b * vecs_per_buffer, desc, s, data, n, k, tid)
            mbar_arrive(bars, at(bar0, 2 * buffers + b))
            b = int32(b + 1)
            if b == buffers:
                b = int32(0)
                parity = uint32(parity ^ uint32(1))
            s = int32(s + 1)
            if s == slots:
                s = int32(0)

    if pipeline:
        return kernel_pipeline
    return kernel_control_warp if control_warp else kernel
