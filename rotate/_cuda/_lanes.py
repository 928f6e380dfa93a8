"""CUDA kernels for per-lane shifts (``roll_rows``) and one-pass multi-axis rolls (``fftshift``).

The panel and cycle kernels move whole lanes through shared memory: a lane
(a row of ``seg`` bytes) is staged raw into shared memory with asynchronous
16-byte copies, then written back *gathering* each destination unit from its
rotated source position in shared memory, as whole aligned 16-byte stores.
Every byte is read once and written once. Lanes too long for that take the
swap kernel (below), which stages and writes with the same helpers.

``panel_kernel`` (``roll_rows``, algorithm ``lane-panels``)
    Consecutive lanes, as many as fit a panel of ``PANEL_BYTES``, are one
    work item; lane ``i`` is rolled by ``shifts[i * shift_stride]`` (an int64
    array on the device, reduced modulo the lane length on the device, so a
    device array of shifts is never read by the host). Items are disjoint:
    no flags. Two panels are in flight per block (the next one's copies fly
    while the current one is written). Lanes of FAST_GATHER_ROW bytes and
    more are written as two runs each (``_run_writer``), shorter ones by
    ``gather_write``.

``swap_kernel`` (``roll_rows`` of lanes beyond a block's shared memory; algorithm ``lane-swaps``)
    One block rotates a whole lane (lanes grid-strided), its shift read on the
    device as above: Gries-Mills block swaps until the small side fits the
    saved-side buffer, then that side saved in shared memory and the rest
    streamed by its length through 16 KiB panels (read ahead, written
    behind). Lanes are disjoint: no block waits for another.

``cycle_kernel`` (multi-axis ``roll``, ``fftshift``; algorithm ``row-cycles``)
    A C-ordered array viewed as ``R`` rows of ``seg`` bytes: the row index
    is a mixed-radix number over the leading (rolled or not) axes, and
    numpy.roll makes destination row ``d`` equal to source row
    ``source_row(d)`` rolled by the last rolled axis's shift. The row
    permutation splits into cycles; each cycle is cut into *segments*
    (``(first row, steps, next segment)``, a table built on the host by
    :func:`segment_table`). A segment's block writes its rows in cycle order,
    each from the row it reads next, so every row is read by the block that
    writes it one step later. The one row a segment reads but does not own
    (the next segment's first row, which that segment overwrites first) is
    saved before anyone writes it: in shared memory when the cycle is one
    segment (the block saves its own first row), else by a pre-read ticket
    into global scratch.

Deadlock freedom (cycle kernel): tickets ``0 .. nseg - 1`` are pre-reads and
wait for nothing; ticket ``nseg + g`` walks segment ``g`` and waits only for
the pre-read flags of segments ``g`` and ``next(g)``, tickets smaller than
its own. A ticket is only taken by a running block, so every awaited ticket
is held by a running block that does not wait: the launch finishes with any
number of resident blocks, one included (docs/design.md).
"""

from __future__ import annotations

import functools
import os

import numpy as np
from numba import cuda, int32, int64, njit, uint8, uint16, uint32, uint64
from numba.extending import register_jitable


from .. import _schedule as S
from .._tuning.cuda import HOPPER as _HOPPER
from .._rowperm import MAX_LEAD, source_row  # noqa: F401  (re-exported: the emulator and tests use L.source_row)
from ._kernels import _write_moved, block_ticket, leave_launch, load_realigned, store_realigned, wait_copies_left
from ._memops import (SIMULATED, atomic_add_u64, commit_copies, copies_waiter, copy16_async, load16,
                      load16_shared, load_acquire, load_i64, store16, store8, store_relaxed, sync_warp)

#: The kernel factories' defaults (probes, codegen tests): the tuning policy's values, which plans pass
#: explicitly (rotate/_tuning/cuda.py says why they are what they are).
THREADS = _HOPPER.default_lane_threads
PANEL_BYTES = _HOPPER.default_panel_bytes
#: Rows (lanes) from this many bytes take the two-loads-and-funnel gather.
FAST_GATHER_ROW = 2048

wait_all = copies_waiter(0)
wait_but_one = copies_waiter(1)
wait_but_two = copies_waiter(2)


def buffer_vecs(nbytes: int) -> int:
    """16-byte vectors a staging buffer for ``nbytes`` bytes at any head offset needs."""
    return (nbytes + 15 + 15) // 16 + 1


#: The panel kernel's padding for the window writer: a vector before its buffers (a window starts up to 16
#: bytes before a buffer's staged bytes), and 32 bytes after its shift tables as a margin only (a window
#: ends within its buffer's spare vector).
PAD_BYTES = 48


def panel_smem_bytes(panel_bytes: int, panel_rows: int, buffers: int = 2, windows: bool = False) -> int:
    """Dynamic shared memory of the panel kernel: its staging buffers and their shift tables (padded for
    the window writer)."""
    return buffers * (16 * buffer_vecs(panel_bytes) + 4 * panel_rows) + (PAD_BYTES if windows else 0)


def swap_smem_bytes(panel_bytes: int, save_bytes: int) -> int:
    """Dynamic shared memory of the swap kernel: four panel buffers (two swap pairs), the saved small side
    over the last two (it is never live during a swap)."""
    panel_vecs = buffer_vecs(panel_bytes)
    return 16 * (2 * panel_vecs + max(2 * panel_vecs, buffer_vecs(save_bytes)))


def save_capacity(vecs: int) -> int:
    """The most bytes ``vecs`` staging vectors hold at any head offset (``buffer_vecs``' inverse)."""
    return 16 * vecs - 31


def cycle_smem_bytes(seg: int) -> int:
    """Dynamic shared memory of the cycle kernel: the saved first row and two staging buffers."""
    return 3 * 16 * buffer_vecs(seg)


def cycle_threads(seg: int) -> int:
    """The cycle kernel's block: about four 16-byte vectors of a row a thread, 128 to 1024 threads."""
    threads = 128
    while threads < 1024 and threads * 64 < seg:
        threads *= 2
    return threads


def log2_unit(unit: int) -> int:
    return {1: 0, 2: 1, 4: 2, 8: 3, 16: 4}[unit]


# --- index math shared by the host planner, the emulator and the kernels ---


@njit(cache=True)
def _cycles(rows, n0, n1, n2, n3, s0, s1, s2, s3):
    """Each cycle of ``source_row`` as (first row, length), and the walk order of all rows."""
    seen = np.zeros(rows, np.bool_)
    order = np.empty(rows, np.int64)
    starts = []
    lengths = []
    at = 0
    for r in range(rows):
        if seen[r]:
            continue
        length = 0
        d = r
        while not seen[d]:
            seen[d] = True
            order[at + length] = d
            length += 1
            d = source_row(d, n0, n1, n2, n3, s0, s1, s2, s3)
        starts.append(at)
        lengths.append(length)
        at += length
    return np.array(starts, np.int64), np.array(lengths, np.int64), order


def segment_table(lead: tuple, shifts: tuple, piece: int):
    """The cycle kernel's segments as an int64 table of ``(first row, steps, next)`` triples.

    ``lead`` are the leading radices (outermost first, at most MAX_LEAD),
    ``shifts`` their numpy.roll shifts in ``[0, n)``. Cycles longer than
    ``piece`` rows are cut into segments of at most ``piece`` steps; a cycle
    of one segment has ``next`` equal to itself.
    """
    dims = (1,) * (MAX_LEAD - len(lead)) + tuple(lead)
    offs = (0,) * (MAX_LEAD - len(shifts)) + tuple(shifts)
    rows = int(np.prod(dims))
    starts, lengths, order = _cycles(rows, *dims, *offs)
    return _cut(starts, lengths, order, int(piece))


@njit(cache=True)
def _cut(starts, lengths, order, piece):
    count = 0
    for length in lengths:
        count += (length + piece - 1) // piece
    table = np.empty(3 * count, np.int64)
    g = 0
    for c in range(len(starts)):
        pieces = (lengths[c] + piece - 1) // piece
        for j in range(pieces):
            first = j * piece
            table[3 * g] = order[starts[c] + first]
            table[3 * g + 1] = min(piece, lengths[c] - first)
            table[3 * g + 2] = g - j + (j + 1) % pieces
            g += 1
    return table


# --- the kernels -----------------------------------------------------------


@functools.lru_cache(maxsize=None)
def _movers(unit: int, threads: int, windows: bool = False):
    """Device functions moving units of ``unit`` bytes: staging and the gathering write.

    ``windows``: ``gather_write`` builds each whole destination vector from the source runs it covers (a
    lane's bytes up to its shift and from it, at most two lanes: one to four runs), a realigned 16-byte
    shared load and a byte mask a run, instead of a lookup a unit. It reads up to a vector before the
    staged bytes (the panel kernel pads its shared memory for it, ``PAD_BYTES``) and up to the end of the
    buffer's spare vector after them.
    """
    shift_bits = log2_unit(unit)
    units_per_vec = 16 // unit

    @cuda.jit(device=True)
    def stage(sm32, buf_vec, src, src_pos, src_head, nbytes, tid):
        """Start copying bytes ``[src_pos, src_pos + nbytes)`` of ``src`` (whole aligned vectors) to
        shared memory from vector ``buf_vec``: byte ``x`` of the range lands at ``16 * buf_vec +
        src_head + x``. One copy group per call."""
        v_lo = src_pos - src_head
        vecs = (src_head + nbytes + 15) >> 4
        for v in range(tid, vecs, threads):
            copy16_async(sm32, 4 * (buf_vec + v), src, v_lo + 16 * v)
        commit_copies()

    @cuda.jit(device=True)
    def unit_source(sm32, shifts_word, shift_row, rho, p, n_units):
        """Unit index (within its row) whose value destination unit ``p >> shift_bits`` of row ``rho`` takes."""
        if shifts_word >= 0:
            s = int64(sm32[shifts_word + rho])
        else:
            s = shift_row
        j = (p >> shift_bits) - s
        if j < 0:
            j += n_units
        return j

    @cuda.jit(device=True)
    def window_write(sm32, buf_byte, dst, pos, rho, p, seg, shift_row, shifts_word):
        """Store ``dst[pos:pos + 16]``, destination byte ``p`` of staged row ``rho`` on, run by run."""
        m0 = uint64(0)
        m1 = uint64(0)
        b = int64(0)
        while b < 16:
            s = (int64(sm32[shifts_word + rho]) if shifts_word >= 0 else shift_row) << shift_bits  # bytes
            if p >= s:  # destination bytes [s, seg) come from [0, seg - s), [0, s) from [seg - s, seg)
                src = p - s
                end = seg
            else:
                src = p - s + seg
                end = s
            length = min(16 - b, end - p)
            d = buf_byte + rho * seg + src - b  # shared byte whose window puts the run at bytes [b, b + length)
            r = d & 15
            u0, u1, u2, u3 = load_realigned(sm32, (d - r) >> 2, r)
            lo = S.byte_mask(b, b + length)
            hi = S.byte_mask(b - 8, b + length - 8)
            m0 |= ((uint64(u1) << uint64(32)) | uint64(u0)) & lo
            m1 |= ((uint64(u3) << uint64(32)) | uint64(u2)) & hi
            b += length
            p += length
            if p == seg:
                p = int64(0)
                rho += 1
        store16(dst, pos, uint32(m0 & uint64(0xFFFFFFFF)), uint32(m0 >> uint64(32)),
                uint32(m1 & uint64(0xFFFFFFFF)), uint32(m1 >> uint64(32)))

    @cuda.jit(device=True)
    def gather_write(sm8, sm16, sm32, buf_byte, dst, dst_pos, dst_head, nbytes, seg, n_units, shift_row,
                     shifts_word, tid):
        """Write bytes ``[dst_pos, dst_pos + nbytes)`` of ``dst`` (rows of ``seg`` bytes) from the
        staged rows at shared byte ``buf_byte`` (row ``rho``'s byte ``x`` there), each row rolled
        right by its shift in units (``shift_row``, or word ``shifts_word + rho`` of shared memory
        when ``shifts_word >= 0``)."""
        v_lo = dst_pos - dst_head
        vecs = (dst_head + nbytes + 15) >> 4
        for v in range(tid, vecs, threads):
            q = 16 * v - dst_head
            if q >= 0 and q + 16 <= nbytes:
                rho = int64(0) if nbytes <= seg else int64(uint32(q) // uint32(seg))  # a panel < 4 GiB
                p = q - rho * seg
                if windows:
                    window_write(sm32, buf_byte, dst, v_lo + 16 * v, rho, p, seg, shift_row, shifts_word)
                    continue
                # Rows of at least FAST_GATHER_ROW bytes: the vector lies in one row (is its source one
                # run too?). Shorter rows leave a warp's vectors in rows of different shifts, whose
                # realignment branches would diverge: those take the unit-by-unit gather.
                if seg >= FAST_GATHER_ROW and p + 16 <= seg:
                    src = p + (unit_source(sm32, shifts_word, shift_row, rho, int64(0), n_units) << shift_bits)
                    if src >= seg:
                        src -= seg
                    if src + 16 <= seg:  # yes: two aligned shared loads and four funnel shifts
                        sb = buf_byte + rho * seg + src
                        r = sb & 15
                        store_realigned(sm32, (sb - r) >> 2, r, dst, v_lo + 16 * v)
                        continue
                w0 = uint32(0)
                w1 = uint32(0)
                w2 = uint32(0)
                w3 = uint32(0)
                for k in range(units_per_vec):
                    j = unit_source(sm32, shifts_word, shift_row, rho, p, n_units)
                    sb = buf_byte + rho * seg + (j << shift_bits)
                    if unit == 1:
                        value = uint32(sm8[sb]) << uint32(8 * (k & 3))
                        word = k >> 2
                    elif unit == 2:
                        value = uint32(sm16[sb >> 1]) << uint32(16 * (k & 1))
                        word = k >> 1
                    else:
                        value = uint32(0)
                        word = -1
                    if unit <= 2:
                        if word == 0:
                            w0 |= value
                        elif word == 1:
                            w1 |= value
                        elif word == 2:
                            w2 |= value
                        else:
                            w3 |= value
                    elif unit == 4:
                        if k == 0:
                            w0 = sm32[sb >> 2]
                        elif k == 1:
                            w1 = sm32[sb >> 2]
                        elif k == 2:
                            w2 = sm32[sb >> 2]
                        else:
                            w3 = sm32[sb >> 2]
                    elif unit == 8:
                        if k == 0:
                            w0 = sm32[sb >> 2]
                            w1 = sm32[(sb >> 2) + 1]
                        else:
                            w2 = sm32[sb >> 2]
                            w3 = sm32[(sb >> 2) + 1]
                    else:
                        words = load16_shared(sm32, sb >> 2)
                        w0 = words[0]
                        w1 = words[1]
                        w2 = words[2]
                        w3 = words[3]
                    p += unit
                    if p == seg:
                        p = 0
                        rho += 1
                store16(dst, v_lo + 16 * v, w0, w1, w2, w3)
            else:  # a vector the range only partly covers: its bytes one by one
                for b in range(16):
                    x = q + b
                    if x >= 0 and x < nbytes:
                        rho = int64(0) if nbytes <= seg else int64(uint32(x) // uint32(seg))
                        p = x - rho * seg
                        j = unit_source(sm32, shifts_word, shift_row, rho, p, n_units)
                        sb = buf_byte + rho * seg + (j << shift_bits) + (p & (unit - 1))
                        store8(dst, v_lo + 16 * v + b, uint32(sm8[sb]))

    return stage, gather_write


@functools.lru_cache(maxsize=None)
def _run_writer(unit: int, threads: int, row_threads: int):
    """The panel kernel's write for lanes of FAST_GATHER_ROW bytes and more: each lane as its two runs.

    Lane ``rho`` rolled right by ``s`` bytes is two moves of contiguous bytes
    with one source offset each (``[s, seg)`` from ``[0, seg - s)``, ``[0,
    s)`` from ``[seg - s, seg)``), which the chain kernel's write path
    (``_kernels._write_moved``) does with the realignment loop chosen once a
    run: a few instructions a vector instead of the per-vector source lookup
    of ``gather_write``. The block's threads split into groups of
    ``row_threads``, a lane a group at a time.
    """
    write_moved = _write_moved(row_threads, 0)
    shift_bits = log2_unit(unit)
    groups = threads // row_threads

    @cuda.jit(device=True)
    def write_runs(sm32, buf_vec, data, lo, head, count, seg, shift_word, tid):
        """Write lanes ``[0, count)`` of the panel at ``data[lo:]`` (``head`` bytes past a 16-byte boundary),
        staged from shared byte ``16 * buf_vec + head`` on, lane ``rho`` rolled right by word
        ``shift_word + rho`` of shared memory (in units)."""
        lane = tid % row_threads
        rho = int64(tid // row_threads)
        while rho < count:
            s = int64(sm32[shift_word + rho]) << shift_bits
            first = rho * seg
            write_moved(sm32, buf_vec, -head, data, lo, head, first + s, first + seg, -s, lane)
            if s > 0:
                write_moved(sm32, buf_vec, -head, data, lo, head, first, first + s, seg - s, lane)
            rho += groups

    return write_runs


@functools.lru_cache(maxsize=None)
def panel_kernel(unit: int, threads: int = THREADS, row_threads: int = 0, windows: bool = False):
    """``kernel(data, shifts, rows, seg, n, m, shift_stride, panel_rows, head0, buf_vecs, buffers)``.

    Rolls each of ``rows`` lanes of ``seg`` bytes (``n`` items of ``m`` units
    of ``unit`` bytes) right by ``shifts[lane * shift_stride] mod n`` items;
    ``panel_rows`` lanes per item, ``buf_vecs`` vectors per staging buffer,
    ``buffers`` (2: the next panel's copies fly while one is written; 1: a
    lane too long for two). ``row_threads``: 0 writes with ``gather_write``
    (each destination unit looks up its source: short lanes), else lanes are
    written as runs by groups of that many threads (``_run_writer``).
    ``windows`` (with ``row_threads`` 0): ``gather_write`` builds whole vectors run by run (``_movers``),
    the buffers a vector past the start of shared memory. Launch with ``panel_smem_bytes`` of dynamic
    shared memory.
    """
    stage, gather_write = _movers(unit, threads, windows)
    lead = 1 if windows else 0  # vectors before the first buffer
    write_runs = _run_writer(unit, threads, row_threads or threads)
    jit_options = {} if SIMULATED else {"launch_bounds": threads}

    @cuda.jit(device=True)
    def load_shifts(sm32, word0, shifts, row0, count, n, m, shift_stride, tid):
        for r in range(tid, count, threads):
            s = load_i64(shifts, (row0 + r) * shift_stride) % n  # Python's modulo: in [0, n)
            sm32[word0 + r] = uint32(s * m)

    @cuda.jit(**jit_options)
    def kernel(data, shifts, rows, seg, n, m, shift_stride, panel_rows, head0, buf_vecs, buffers):
        sm8 = cuda.shared.array(0, uint8)
        sm16 = cuda.shared.array(0, uint16)
        sm32 = cuda.shared.array(0, uint32)
        tid = cuda.threadIdx.x
        panels = (rows + panel_rows - 1) // panel_rows
        n_units = n * m
        shift_words = 4 * (lead + buffers * buf_vecs)  # the shift tables follow the buffers
        panel = int64(cuda.blockIdx.x)
        if panel < panels:
            row0 = panel * panel_rows
            count = min(panel_rows, rows - row0)
            load_shifts(sm32, shift_words, shifts, row0, count, n, m, shift_stride, tid)
            stage(sm32, lead, data, row0 * seg, (head0 + row0 * seg) & 15, count * seg, tid)
        buf = 0
        while panel < panels:
            following = panel + cuda.gridDim.x
            other = 1 - buf if buffers == 2 else buf
            if buffers == 2:
                if following < panels:  # its copies fly while this panel is written
                    row1 = following * panel_rows
                    count1 = min(panel_rows, rows - row1)
                    load_shifts(sm32, shift_words + other * panel_rows, shifts, row1, count1, n, m, shift_stride,
                                tid)
                    stage(sm32, lead + other * buf_vecs, data, row1 * seg, (head0 + row1 * seg) & 15, count1 * seg, tid)
                else:
                    commit_copies()
                wait_but_one()
            else:  # one buffer (a lane too long for two): the next panel is staged after this one is written
                wait_all()
            cuda.syncthreads()
            row0 = panel * panel_rows
            count = min(panel_rows, rows - row0)
            lo = row0 * seg
            head = (head0 + lo) & 15
            if row_threads:
                write_runs(sm32, lead + buf * buf_vecs, data, lo, head, count, seg, shift_words + buf * panel_rows, tid)
            else:
                gather_write(sm8, sm16, sm32, 16 * (lead + buf * buf_vecs) + head, data, lo, head, count * seg, seg,
                             n_units, int64(0), int64(shift_words + buf * panel_rows), tid)
            cuda.syncthreads()  # the buffer is staged again
            if buffers == 1 and following < panels:
                row1 = following * panel_rows
                count1 = min(panel_rows, rows - row1)
                load_shifts(sm32, shift_words, shifts, row1, count1, n, m, shift_stride, tid)
                stage(sm32, lead, data, row1 * seg, (head0 + row1 * seg) & 15, count1 * seg, tid)
            panel = following
            buf = other

    return kernel


#: The ``warps`` variant's factory defaults (the tuning policy's: a block of eight warps, two slots a warp),
#: and the most slots a warp may have.
WARP_THREADS = _HOPPER.warp_threads
WARP_SLOTS = _HOPPER.default_warp_slots
MAX_WARP_SLOTS = 8
#: Shifts a warp of the ``warps`` variant reads at once (one a thread) and keeps in shared memory.
WARP_SHIFTS = 32


def warp_slot_vecs(seg: int) -> int:
    """16-byte vectors of one slot of the ``warps`` variant: the lane at any head offset, its first 16
    bytes again after it (the seam's source runs on across the lane's end), and the vector the
    realigning loops read past a run."""
    return buffer_vecs(seg + 16) + 1


def warp_smem_bytes(seg: int, threads: int = WARP_THREADS, slots: int = WARP_SLOTS, group: int = 32) -> int:
    """Dynamic shared memory of the ``warps`` variant: every lane group's slots, then every group's shift
    table (``group`` threads a lane)."""
    groups = threads // group
    return groups * (16 * slots * warp_slot_vecs(seg) + 4 * WARP_SHIFTS)


#: Threads that stage and write one lane in the ``warps`` variant: a whole warp, or a warp split into
#: groups that each take a lane (two lanes a warp at 16, four at 8, eight at 4), for short lanes, whose
#: per-lane work (barriers, seam, the two runs' setup) a 32-thread lane spends on a few vectors a thread.
WARP_GROUPS = (32, 16, 8, 4)


@functools.lru_cache(maxsize=None)
def warp_lane_kernel(threads: int = WARP_THREADS, slots: int = WARP_SLOTS, min_blocks: int = 0, group: int = 32):
    """``kernel(data, shifts, rows, seg, n, item, shift_stride, head0, slot_vecs)``: the ``warps`` variant
    of ``lane-panels``.

    Rolls each of ``rows`` lanes of ``seg`` bytes (``n`` items of ``item``
    bytes) right by ``shifts[lane * shift_stride] mod n`` items, as the panel
    kernel does, but every group of ``group`` threads (a warp, or a part of
    one: ``WARP_GROUPS``) works alone: it takes lanes ``g, g +
    groups_in_grid, ...``, stages each into one of its own ``slots`` slots
    (``slots - 1`` lanes read ahead of the one it writes) and writes it as
    two runs with the run writer's realigning loops. No block barrier: a
    group never waits for a group of another warp, so a block's warps never
    idle through a round that has fewer lanes than warps (the panel kernel's
    24 lanes of 4 KiB for 16 groups), and no lane waits for a whole panel to
    land. The groups of one warp share its barriers (``bar.warp.sync``), so
    they run the same number of rounds, a group with one lane fewer idling
    through the last.

    The seam: a lane rolled right by ``s`` bytes splits at ``s``, which is
    seldom on the 16-byte grid, so the panel kernel writes the destination
    vector holding it byte by byte from one thread (up to 30 dependent
    shared loads and byte stores a lane while the warp's other threads wait).
    Here the lane's first 16 bytes are copied again after its end in the
    slot, so the first run extends to the next vector boundary past ``s``
    with its source running on across the lane's end: both runs then start
    and end on the grid, and only a lane that is itself off the grid has
    partial vectors (its own ends).

    Lanes are disjoint: no flags, no waits on other blocks.
    """
    if group not in WARP_GROUPS or threads % 32:
        raise ValueError(f"warp_lane_kernel: group must be one of {WARP_GROUPS} and threads a multiple of 32, "
                         f"got group={group!r}, threads={threads!r}")
    stage, _ = _movers(1, group)
    write_moved = _write_moved(group, 0)
    groups = threads // group
    per_warp = 32 // group
    whole = group == 32
    wait_ring = copies_waiter(slots - 1)
    if SIMULATED:
        jit_options = {}
    else:
        jit_options = {"launch_bounds": (threads, min_blocks) if min_blocks else threads}

    @cuda.jit(**jit_options)
    def kernel(data, shifts, rows, seg, n, item, shift_stride, head0, slot_vecs):
        sm8 = cuda.shared.array(0, uint8)
        sm32 = cuda.shared.array(0, uint32)
        tid = cuda.threadIdx.x
        gid = int64(tid // group)
        g_tid = tid % group
        slot0 = gid * slots * slot_vecs
        table = 4 * groups * slots * slot_vecs + WARP_SHIFTS * gid  # this group's shift words
        stride = int64(cuda.gridDim.x) * groups
        first = int64(cuda.blockIdx.x) * groups + gid
        lead = first - gid % per_warp  # the warp's first group: it has the most lanes of the warp's groups
        if lead >= rows:
            return  # the whole warp: no barrier is left waiting for it
        warp_rounds = (rows - lead + stride - 1) // stride  # the same for the warp's 32 threads
        # ``whole`` (a lane a warp) is fixed at compile time: its branches fold to the one-group code.
        if whole:
            rounds = warp_rounds
        else:
            rounds = (rows - first + stride - 1) // stride if first < rows else int64(0)
        for ahead in range(slots - 1):  # the first lanes' copies fly before any is written
            if ahead < rounds:
                lane = first + ahead * stride
                stage(sm32, slot0 + ahead * slot_vecs, data, lane * seg, (head0 + lane * seg) & 15, seg, g_tid)
            else:
                commit_copies()
        r = int64(0)
        while r < warp_rounds:
            if r % WARP_SHIFTS == 0:  # the group's next 32 lanes' shifts, reduced once
                for j in range(g_tid, WARP_SHIFTS, group):
                    later = r + j
                    if later < rounds:
                        sm32[table + j] = uint32((load_i64(shifts, (first + later * stride) * shift_stride) % n)
                                                 * item)
            following = r + slots - 1
            if following < rounds:  # into the slot the last round wrote (the barrier below freed it)
                lane = first + following * stride
                stage(sm32, slot0 + (following % slots) * slot_vecs, data, lane * seg,
                      (head0 + lane * seg) & 15, seg, g_tid)
            else:
                commit_copies()
            wait_ring()
            sync_warp()  # every thread's copies of lane r have landed, and the shift table is written
            lane = first + r * stride
            lo = lane * seg
            head = (head0 + lo) & 15
            slot = slot0 + (r % slots) * slot_vecs
            active = whole or r < rounds
            if active:  # the lane's first bytes again after its end: the seam's source runs on
                if whole:
                    if g_tid < 16:
                        sm8[16 * slot + head + seg + g_tid] = sm8[16 * slot + head + g_tid]
                else:
                    for j in range(g_tid, 16, group):
                        sm8[16 * slot + head + seg + j] = sm8[16 * slot + head + j]
            sync_warp()
            if active:
                s = int64(sm32[table + r % WARP_SHIFTS])
                cut = S.align_up(head + s) - head if s > 0 else int64(0)
                if cut > seg:
                    cut = seg
                if cut > 0:  # [0, cut) from [seg - s, seg - s + cut): past the lane's end, its first bytes again
                    write_moved(sm32, slot, -head, data, lo, head, int64(0), cut, seg - s, g_tid)
                if cut < seg:
                    write_moved(sm32, slot, -head, data, lo, head, cut, seg, -s, g_tid)
            sync_warp()  # the slot is staged again next round
            r += 1

    return kernel


@functools.lru_cache(maxsize=None)
def _swap_lane(threads: int, panel_bytes: int):
    """``swap_lane(sm32, data, row_pos, head, seg, k, save_bytes, tid)``: one lane of ``seg`` bytes rotated
    left by ``k`` bytes by ``lane-swaps``' steps (``swap_kernel``; ``lane-walks`` takes it for the lanes it
    does not walk). Ends with a barrier: the saved side's buffer is the next lane's."""
    if panel_bytes % 16 or panel_bytes < 32:
        raise ValueError(f"panel_bytes must be a multiple of 16 and >= 32, got {panel_bytes}")
    stage, _ = _movers(1, threads)  # staging is byte-exact: no unit
    write_moved = _write_moved(threads, -(-(panel_bytes // 16 + 1) // threads))
    panel_vecs = buffer_vecs(panel_bytes)
    saved_vec = 2 * panel_vecs  # the saved side overlaps the swaps' B buffers: never live at once

    @cuda.jit(device=True)
    def stage_at(sm32, buf_vec, data, row_pos, head, pos, nbytes, tid):
        """Stage lane bytes ``[pos, pos + nbytes)`` (one copy group); returns where ``buf_vec`` starts in the
        lane, as ``write_moved`` takes it."""
        offset = (head + pos) & 15
        stage(sm32, buf_vec, data, row_pos + pos, offset, nbytes, tid)
        return pos - offset

    @cuda.jit(device=True)
    def swap(sm32, data, row_pos, head, a, b, m, tid):
        """Swap lane bytes ``[a, a + m)`` and ``[b, b + m)`` (disjoint), panels cut on A's grid."""
        grid_head = (head + a) & 15
        count = S.tile_count(m, grid_head, panel_bytes)
        x0, x1 = S.tile_dest(m, grid_head, panel_bytes, 0)
        stage_at(sm32, 0, data, row_pos, head, a + x0, x1 - x0, tid)
        stage_at(sm32, 2 * panel_vecs, data, row_pos, head, b + x0, x1 - x0, tid)
        buf = 0
        for j in range(count):
            if j + 1 < count:  # the next pair's copies fly while this pair is written
                y0, y1 = S.tile_dest(m, grid_head, panel_bytes, j + 1)
                stage_at(sm32, (1 - buf) * panel_vecs, data, row_pos, head, a + y0, y1 - y0, tid)
                stage_at(sm32, (3 - buf) * panel_vecs, data, row_pos, head, b + y0, y1 - y0, tid)
                wait_but_two()
            else:
                wait_all()
            cuda.syncthreads()
            x0, x1 = S.tile_dest(m, grid_head, panel_bytes, j)
            a_al = a + x0 - ((head + a + x0) & 15)
            b_al = b + x0 - ((head + b + x0) & 15)
            write_moved(sm32, (2 + buf) * panel_vecs, b_al, data, row_pos, head, a + x0, a + x1, b - a, tid)
            write_moved(sm32, buf * panel_vecs, a_al, data, row_pos, head, b + x0, b + x1, a - b, tid)
            cuda.syncthreads()  # the buffers are staged again
            buf = 1 - buf

    @cuda.jit(device=True)
    def move(sm32, data, row_pos, head, src, dst, length, tid):
        """Move lane bytes ``[src, src + length)`` to ``[dst, dst + length)`` (they may overlap).

        Panels are walked away from the side the bytes move towards, so the
        panel staged ahead (the next source) never overlaps the panel being
        written, and every byte is staged before a later panel overwrites it.
        Copy groups the caller started earlier (the saved side) are older, so
        they have landed before the first write.
        """
        grid_head = (head + dst) & 15
        count = S.tile_count(length, grid_head, panel_bytes)
        down = dst < src
        x0, x1 = S.tile_dest(length, grid_head, panel_bytes, 0 if down else count - 1)
        stage_at(sm32, 0, data, row_pos, head, src + x0, x1 - x0, tid)
        buf = 0
        for i in range(count):
            if i + 1 < count:
                y0, y1 = S.tile_dest(length, grid_head, panel_bytes, i + 1 if down else count - 2 - i)
                stage_at(sm32, (1 - buf) * panel_vecs, data, row_pos, head, src + y0, y1 - y0, tid)
                wait_but_one()
            else:
                wait_all()
            cuda.syncthreads()
            x0, x1 = S.tile_dest(length, grid_head, panel_bytes, i if down else count - 1 - i)
            src_al = src + x0 - ((head + src + x0) & 15)
            write_moved(sm32, buf * panel_vecs, src_al, data, row_pos, head, dst + x0, dst + x1, src - dst, tid)
            cuda.syncthreads()
            buf = 1 - buf

    @cuda.jit(device=True)
    def put_saved(sm32, data, row_pos, head, saved_al, save, count, put, tid):
        """Write the saved bytes (lane bytes ``[save, save + count)`` staged from ``saved_al``) to ``put``."""
        grid_head = (head + put) & 15
        for j in range(S.tile_count(count, grid_head, panel_bytes)):
            x0, x1 = S.tile_dest(count, grid_head, panel_bytes, j)
            write_moved(sm32, saved_vec, saved_al, data, row_pos, head, put + x0, put + x1, save - put, tid)

    @cuda.jit(device=True)
    def swap_lane(sm32, data, row_pos, head, seg, k, save_bytes, tid):
        lo = int64(0)
        length = seg
        while k != 0 and min(k, length - k) > save_bytes:
            a, b, m, lo, length, k = S.swap_step(lo, length, k)
            swap(sm32, data, row_pos, head, a, b, m, tid)
        if k != 0:
            save, count, src, dst, moved, put = S.saved_rotation(lo, length, k)
            saved_al = stage_at(sm32, saved_vec, data, row_pos, head, save, count, tid)
            move(sm32, data, row_pos, head, src, dst, moved, tid)
            put_saved(sm32, data, row_pos, head, saved_al, save, count, put, tid)
            cuda.syncthreads()  # the saved side's buffer is the next lane's swap buffer

    return swap_lane


@functools.lru_cache(maxsize=None)
def swap_kernel(threads: int = THREADS, panel_bytes: int = PANEL_BYTES):
    """``kernel(data, shifts, rows, seg, n, item, shift_stride, head0, save_bytes)``.

    ``roll_rows`` of lanes too long for a block's shared memory
    (``lane-swaps``): rolls each of ``rows`` lanes of ``seg`` bytes (``n``
    items of ``item`` bytes) right by ``shifts[lane * shift_stride] mod n``
    items, a whole lane per block, lanes grid-strided over the blocks (no
    ticket: no scratch, and many lanes average out their unequal costs).
    Per lane, as "rotate left by ``k`` bytes":

    * while the small side ``min(k, seg' - k)`` exceeds ``save_bytes``, a
      Gries-Mills block swap (``rotate._schedule.swap_step``): both regions
      staged panel by panel (the next pair's copies fly while a pair is
      written), each written from the other;
    * then the small side is staged into shared memory, the rest moved by
      its length through two panel buffers, walked away from the side it
      moves towards (no byte is written before it is staged), and the saved
      bytes written back (``rotate._schedule.saved_rotation``).

    No block ever waits for another (``co_resident`` is False). Panels are
    ``panel_bytes`` (a multiple of 16), cut on the destination's 16-byte
    grid; writes are whole aligned 16-byte stores realigned in registers
    (``_kernels._write_moved``), bytes at the ends one by one. Launch with
    ``swap_smem_bytes(panel_bytes, save_bytes)`` of dynamic shared memory.
    """
    if panel_bytes % 16 or panel_bytes < 32:
        raise ValueError(f"panel_bytes must be a multiple of 16 and >= 32, got {panel_bytes}")
    swap_lane = _swap_lane(threads, panel_bytes)
    jit_options = {} if SIMULATED else {"launch_bounds": threads}

    @cuda.jit(**jit_options)
    def kernel(data, shifts, rows, seg, n, item, shift_stride, head0, save_bytes):
        sm32 = cuda.shared.array(0, uint32)
        tid = cuda.threadIdx.x
        for lane in range(int64(cuda.blockIdx.x), rows, int64(cuda.gridDim.x)):
            s = load_i64(shifts, lane * shift_stride) % n  # Python's modulo: in [0, n)
            if s == 0:
                continue
            row_pos = lane * seg
            head = (head0 + row_pos) & 15
            swap_lane(sm32, data, row_pos, head, seg, (n - s) * item, save_bytes, tid)  # right by s: left n - s

    return kernel


#: ``lane-walks``: the most pieces an item's source has (runs of one writer tile; the wrap adds one).
WALK_PIECES = 4
#: Descriptor fields: the item's piece count and ring reach, then per piece destination ``[xl, xh)``,
#: the source's aligned lane position, buffer slot, vectors, scratch or lane, and the position the copy
#: starts at (lane bytes from the array's start, or scratch bytes).
W_PIECES, W_REACH = 0, 1
W_HEADER = 2
W_XL, W_XH, W_SRC_AL, W_SLOT, W_VECS, W_SCRATCH, W_POS = range(7)
W_PIECE = 7
W_FIELDS = W_HEADER + WALK_PIECES * W_PIECE
#: The walk kernel's factory defaults: the tuning policy's tiles (``WALK_TILE_BYTES`` down to half of it),
#: tiles a lane may have and buffers; and its wide tiles (rotate/_tuning/cuda.py, docs/tuning.md "lane-walks").
WALK_TILE_BYTES = _HOPPER.default_walk_tile_bytes
WALK_MAX_TILES = _HOPPER.default_walk_max_tiles
WALK_WIDE_TILE_BYTES = _HOPPER.walk_wide_tile_bytes
WALK_WIDE_MAX_TILES = _HOPPER.walk_wide_max_tiles
WALK_BUFFERS = _HOPPER.default_walk_buffers


def walk_buffer_vecs(tile_bytes: int) -> int:
    """Vectors a walk buffer holds: a tile plus two over-copied vectors a piece, and a spare."""
    return tile_bytes // 16 + 2 * WALK_PIECES + 1


def walk_smem_bytes(tile_bytes: int = WALK_TILE_BYTES, buffers: int = WALK_BUFFERS,
                    max_tiles: int = WALK_MAX_TILES, panel_bytes: int = PANEL_BYTES, save_bytes: int = None,
                    threads: int = THREADS) -> int:
    """Dynamic shared memory of ``walk_kernel``: its buffers and five tables of ``max_tiles`` words
    (positions, tiles, first writers, span starts, scratch offsets) and the threads' picks, or the swap fallback's panels and saved side, whichever
    is more (they are never live at once)."""
    walk = 16 * buffers * walk_buffer_vecs(tile_bytes) + 20 * max_tiles + 8 + 16 * threads
    save = walk_save_bytes(panel_bytes) if save_bytes is None else save_bytes
    return max(walk, swap_smem_bytes(panel_bytes, save))


def walk_save_bytes(panel_bytes: int = PANEL_BYTES) -> int:
    """The saved side of ``walk_kernel``'s swap fallback: what two panel buffers hold (the walk takes
    lanes whose small side is larger, so this only sets which lanes skip the walk)."""
    return save_capacity(2 * buffer_vecs(panel_bytes))


@functools.lru_cache(maxsize=None)
def walk_kernel(threads: int = THREADS, buffers: int = WALK_BUFFERS, tile_bytes: int = WALK_TILE_BYTES,
                max_tiles: int = WALK_MAX_TILES, panel_bytes: int = PANEL_BYTES, min_blocks: int = 1):
    """``kernel(data, shifts, scratch, counters, rows, seg, n, item, shift_stride, head0, share, pool,
    save_bytes)``.

    ``roll_rows`` of lanes beyond a block's shared memory in one pass
    (``lane-walks``, docs/design.md "Lane walks"): a block owns a lane at a
    time (lanes by ticket, ``counters[0]``) and

    1. picks a tile size (``tile_bytes`` down to half) and chain step: each
       thread estimates its share of the candidates
       (``_schedule.walk_estimate``), the block takes the cheapest;
    2. lays out the walk in shared memory, the block's threads a share of
       the tiles each: every tile's chain position and every position's
       tile, first writer and ring reach (``walk_reach``), every tile's
       pre-read span (``walk_span``: bytes whose reader comes more than
       ``buffers - 1`` items after their writer) and its offset in the
       block's ``share`` bytes of ``scratch`` (block ``b``'s at
       ``b * share``), or, for spans over the share, in the ``pool`` bytes
       after the blocks' shares (``counters[1]``: the pool's bytes asked for so far);
    3. copies the spans to scratch, then walks the tiles in chain order
       through ``buffers`` tile buffers: the copies of item ``i + buffers - 1``
       start before item ``i`` writes; item ``i`` waits for its own copies
       and for those of its farthest look-ahead reader, then writes its tile
       realigned in registers (``_write_moved``). The first warp decodes
       the items ahead from the tables, with no division.

    A lane with no candidate, or whose spans fit neither its share nor what
    is left of the pool, runs ``lane-swaps``' steps instead (``_swap_lane``;
    its saved side ``save_bytes``). No block waits for another. The last
    block out rewinds the counters (``leave_launch``).
    """
    from ._kernels import _copy_vectors

    swap_lane = _swap_lane(threads, panel_bytes)
    copy_vectors = _copy_vectors(threads)
    # With two warps or more, the first warp leaves the writes to the others: its first threads decode
    # the items ahead while they write (a decode is serial, dependent shared-memory work).
    control = 32 if threads >= 64 else 0
    writers = threads - control
    write_moved = _write_moved(writers, -(-(tile_bytes // 16 + 1) // writers))
    reach = buffers - 1
    buf_vecs = walk_buffer_vecs(tile_bytes)
    # Words of the dynamic shared memory after the buffers: five tables of max_tiles words.
    t_rank = 4 * buffers * buf_vecs       # tile -> chain position
    t_tile = t_rank + max_tiles           # position -> tile
    t_first = t_tile + max_tiles          # position -> first writer tile * 4 + ring reach
    t_lo = t_first + max_tiles            # tile -> pre-read span start (lane position)
    t_off = t_lo + max_tiles              # tile -> span size, then its scratch offset
    pick0 = (t_off + max_tiles + 1) // 2  # int64 words: each thread's pick, then the scan's partial sums
    # Thread t < decoders decodes item i + buffers + t at every decoders-th item i (in parallel: one
    # decode is serial, dependent shared-memory work), so descriptors cover the items written, in flight
    # and decoded ahead.
    decoders = 8 if control else 1
    slots = buffers + decoders
    shuffles = threads % 32 == 0 and not SIMULATED  # reductions by warp shuffles (the simulator has none)
    group = min(32, threads)  # threads copying one span (a warp)
    if buffers < 2 or buffers > 4:
        raise ValueError(f"walk_kernel takes 2 to 4 buffers, got {buffers}")
    if threads % group:
        raise ValueError(f"walk_kernel needs whole warps (or fewer threads), got {threads}")
    jit_options = {} if SIMULATED else {"launch_bounds": (threads, min_blocks) if min_blocks > 1 else threads}
    if not SIMULATED and os.environ.get("ROTATE_LINEINFO") == "1":
        jit_options["lineinfo"] = True  # Nsight Compute's source view (benchmarks/probes/ncu_target.py)

    @cuda.jit(device=True)
    def choose(pick, scores, n, k, head, tile_lo, tile_hi, share, tid):
        """The block's cheapest candidate index (-1: none), as ``_schedule.walk_choose`` finds it: every
        tile size's ``walk_residue_score`` once into ``scores`` (shared memory), a thread a pick (its
        chunk's size from the scores, then ``walk_size_cost``), then the least (cost, index)."""
        best = int64(-1)
        best_index = int64(-1)
        sizes = S.walk_sizes(tile_lo, tile_hi)
        for size in range(int64(tid), sizes, threads):
            scores[size] = S.walk_residue_score(n, k, head, tile_hi - 16 * size)
        cuda.syncthreads()
        width = S.walk_chunk(sizes)
        for candidate in range(int64(tid), S.walk_picks(tile_lo, tile_hi), threads):
            first = (candidate // S.WALK_CHAINS) * width
            size = int64(-1)
            least = int64(-1)
            for at in range(first, min(sizes, first + width)):  # walk_chunk_size's rule: first least wins
                score = scores[at]
                if least < 0 or score < least:
                    least = score
                    size = at
            cost, index = S.walk_size_cost(n, k, head, tile_hi, size, candidate % S.WALK_CHAINS, reach, share)
            if index >= 0 and (best_index < 0 or cost < best or (cost == best and index < best_index)):
                best = cost
                best_index = index
        if shuffles:  # the warp's least first, then thread 0 over the warps'
            for delta in (16, 8, 4, 2, 1):
                cost = cuda.shfl_down_sync(0xFFFFFFFF, best, delta)
                index = cuda.shfl_down_sync(0xFFFFFFFF, best_index, delta)
                if index >= 0 and (best_index < 0 or cost < best or (cost == best and index < best_index)):
                    best = cost
                    best_index = index
            if tid % 32 == 0:
                pick[tid // 32] = best
                pick[threads + tid // 32] = best_index
            count = threads // 32
        else:
            pick[tid] = best
            pick[threads + tid] = best_index
            count = threads
        cuda.syncthreads()
        if tid == 0:
            for t in range(1, count):
                cost = pick[t]
                index = pick[threads + t]
                if index >= 0 and (best_index < 0 or cost < best or (cost == best and index < best_index)):
                    best = cost
                    best_index = index
            pick[0] = best_index
        cuda.syncthreads()
        chosen = pick[0]
        cuda.syncthreads()  # pick is reused
        return chosen

    @cuda.jit(device=True)
    def layout(smi, pick, n, k, head, tile, m, p, g, length, inv, tid):
        """The walk's tables; returns the span bytes in all (each tile's size turned into its offset)."""
        for position in range(int64(tid), m, threads):
            j = S.tile_at(m, p, g, length, position)
            smi[t_rank + j] = int32(position)
            smi[t_tile + position] = int32(j)
        cuda.syncthreads()  # every position is known: reaches read them
        for position in range(int64(tid), m, threads):
            j = int64(smi[t_tile + position])
            x0, x1 = S.tile_dest(n, head, tile, j)
            z = x0 + k
            if z >= n:
                z -= n
            first = S.tile_of(head, tile, z)
            smi[t_first + position] = int32(4 * first + S.walk_reach(n, k, head, tile, smi, t_rank, position, j,
                                                                      reach))
        per = (m + threads - 1) // threads
        lo_w = tid * per
        hi_w = min(m, lo_w + per)
        subtotal = int64(0)
        for w in range(lo_w, hi_w):
            lo, hi = S.walk_span(n, k, head, tile, m, g, length, inv, reach, w)
            size = hi - lo if lo < hi else int64(0)
            smi[t_lo + w] = int32(lo)
            smi[t_off + w] = int32(size)
            subtotal += size
        if shuffles:  # an inclusive scan in each warp, thread 0 over the warps' sums
            lane_id = tid % 32
            inclusive = subtotal
            for delta in (1, 2, 4, 8, 16):
                below = cuda.shfl_up_sync(0xFFFFFFFF, inclusive, delta)
                if lane_id >= delta:
                    inclusive += below
            if lane_id == 31:
                pick[tid // 32] = inclusive
            cuda.syncthreads()
            if tid == 0:
                running = int64(0)
                for t in range(threads // 32):
                    part = pick[t]
                    pick[t] = running
                    running += part
                pick[threads] = running
            cuda.syncthreads()
            offset = pick[tid // 32] + inclusive - subtotal
        else:
            pick[tid] = subtotal
            cuda.syncthreads()
            if tid == 0:
                running = int64(0)
                for t in range(threads):
                    part = pick[t]
                    pick[t] = running
                    running += part
                pick[threads] = running
            cuda.syncthreads()
            offset = pick[tid]
        for w in range(lo_w, hi_w):
            size = smi[t_off + w]
            smi[t_off + w] = int32(offset)
            offset += size
        total = pick[threads]
        cuda.syncthreads()
        return total

    @cuda.jit(device=True)
    def decode(desc, d, smi, position, n, k, head, tile, row_pos, share_pos):
        """Thread 0: item ``position``'s tile and pieces (runs of one writer; consecutive lane runs joined)
        into descriptor slot ``d``, from the tables (``_schedule.source_run``'s runs, walked writer by
        writer instead of divided out)."""
        j = int64(smi[t_tile + position])
        packed = int64(smi[t_first + position])
        writer = packed >> 2
        desc[d, W_REACH] = packed & 3
        x0, x1 = S.tile_dest(n, head, tile, j)
        z = x0 + k
        if z >= n:
            z -= n
        x = x0
        count = 0
        slot = int64(0)
        z_next = int64(-1)
        while x < x1:
            wx0, wx1 = S.tile_dest(n, head, tile, writer)
            end = x + (wx1 - z)
            if end > x1:
                end = x1
            late = int64(smi[t_rank + writer]) + reach < position
            if not late and z == z_next:
                piece = W_HEADER + (count - 1) * W_PIECE  # the lane run goes on: one piece, one write
                x_lo = desc[d, piece + W_XL]
                vecs = run_vecs(head, z - (x - x_lo), end - x_lo)
                slot += vecs - desc[d, piece + W_VECS]
                desc[d, piece + W_XH] = end
                desc[d, piece + W_VECS] = vecs
            else:
                piece = W_HEADER + count * W_PIECE
                z_al = S.align_down(head + z) - head
                vecs = run_vecs(head, z, end - x)
                desc[d, piece + W_XL] = x
                desc[d, piece + W_XH] = end
                desc[d, piece + W_SRC_AL] = z_al
                desc[d, piece + W_SLOT] = slot
                desc[d, piece + W_VECS] = vecs
                if late:
                    desc[d, piece + W_SCRATCH] = 1
                    desc[d, piece + W_POS] = (share_pos + int64(smi[t_off + writer]) + z_al
                                              - int64(smi[t_lo + writer]))
                else:
                    desc[d, piece + W_SCRATCH] = 0
                    desc[d, piece + W_POS] = row_pos + z_al
                slot += vecs
                count += 1
            z_next = -1 if late else z + (end - x)
            z += end - x
            if z == wx1:  # the next run reads the next writer tile (the last tile ends the lane: wrap)
                writer += 1
                if z == n:
                    z = 0
                    writer = 0
            x = end
        desc[d, W_PIECES] = count

    @cuda.jit(device=True)
    def start_copies(sm32, buf, desc, d, data, scratch, tid):
        for q in range(desc[d, W_PIECES]):
            piece = W_HEADER + q * W_PIECE
            if desc[d, piece + W_SCRATCH]:
                copy_vectors(sm32, buf + desc[d, piece + W_SLOT], scratch, desc[d, piece + W_POS],
                             desc[d, piece + W_VECS], tid)
            else:
                copy_vectors(sm32, buf + desc[d, piece + W_SLOT], data, desc[d, piece + W_POS],
                             desc[d, piece + W_VECS], tid)

    @cuda.jit(device=True)
    def write_item(sm32, buf, desc, d, data, row_pos, head, n, k, tid):
        for q in range(desc[d, W_PIECES]):
            piece = W_HEADER + q * W_PIECE
            x = desc[d, piece + W_XL]
            delta = k if x + k < n else k - n
            write_moved(sm32, buf + desc[d, piece + W_SLOT], desc[d, piece + W_SRC_AL], data, row_pos, head, x,
                        desc[d, piece + W_XH], delta, tid)

    @cuda.jit(device=True)
    def span_tile(smi, m, w, v):
        """The tile whose span holds scratch vector ``v``, from tile ``w`` on (offsets ascend)."""
        while w + 1 < m and int64(smi[t_off + w + 1]) <= 16 * v:
            w += 1
        return w

    @cuda.jit(device=True)
    def span_source(smi, row_pos, w, v):
        """Where scratch vector ``v`` of tile ``w``'s span lies in ``data``."""
        return row_pos + int64(smi[t_lo + w]) + 16 * v - int64(smi[t_off + w])

    @cuda.jit(device=True)
    def pre_read_spans(sm32, data, scratch, smi, row_pos, lane_scratch, m, total, tid):
        """Copy every tile's span to its scratch offset. The spans back to back are one run of vectors,
        staged through the tile buffers (free before the walk) a ring's worth at a time: thread ``t``
        starts the asynchronous copies of vectors ``t, t + threads, ...`` of the round, finding each
        one's tile by walking the offsets forward, then stores what landed (coalesced). A round keeps
        the whole ring in flight: a lane's only reads then, so latency, not bandwidth, sets this phase."""
        vecs = total >> 4
        ring = buffers * buf_vecs
        w = int64(0)
        base = int64(0)
        while base < vecs:
            count = min(ring, vecs - base)
            for v in range(base + tid, base + count, threads):
                w = span_tile(smi, m, w, v)
                copy16_async(sm32, 4 * (v - base), data, span_source(smi, row_pos, w, v))
            commit_copies()
            wait_copies_left(0)
            cuda.syncthreads()
            for v in range(base + tid, base + count, threads):
                a0, a1, a2, a3 = load16_shared(sm32, 4 * (v - base))
                store16(scratch, lane_scratch + 16 * v, a0, a1, a2, a3)
            cuda.syncthreads()  # the ring is staged again
            base += count

    @cuda.jit(**jit_options)
    def kernel(data, shifts, scratch, counters, rows, seg, n, item, shift_stride, head0, share, pool, save_bytes):
        sm32 = cuda.shared.array(0, uint32)
        smi = cuda.shared.array(0, int32)
        picks = cuda.shared.array(0, int64)
        pick = picks[pick0:pick0 + 2 * threads]
        desc = cuda.shared.array((slots, W_FIELDS), int64)
        ctrl = cuda.shared.array(2, int64)
        tid = cuda.threadIdx.x
        share_pos = int64(cuda.blockIdx.x) * share
        pool0 = int64(cuda.gridDim.x) * share  # the pool follows the blocks' shares
        tile_lo, tile_hi = S.walk_tile_range(seg, tile_bytes, max_tiles)
        while True:
            # Lanes by ticket, not grid-strided: a block held up by a costly lane takes fewer.
            lane = block_ticket(ctrl, counters, 0, tid)
            if lane >= rows:
                break
            s = load_i64(shifts, lane * shift_stride) % n  # Python's modulo: in [0, n)
            if s == 0:
                continue
            row_pos = lane * seg
            head = (head0 + row_pos) & 15
            k = (n - s) * item  # right by s items: left by n - s
            walk = tile_lo <= tile_hi
            index = int64(-1)
            if walk:
                # The scores sit in the tile buffers: free until the pre-reads.
                index = choose(pick, picks, seg, k, head, tile_lo, tile_hi, share, tid)
                walk = index >= 0
            tile = int64(0)
            m = int64(0)
            total = int64(0)
            lane_scratch = share_pos
            if walk:
                tile, chain = S.walk_candidate(seg, k, head, tile_hi, index)
                m = S.tile_count(seg, head, tile)
                p = S.chain_step(m, chain)
                g, length, inv = S.chain_shape(m, p)
                total = layout(smi, pick, seg, k, head, tile, m, p, g, length, inv, tid)
                if total > share:
                    # Over the block's share: the pre-reads go to the launch's pool if it still has
                    # room. Bytes are taken once, in ticket order; a lane they do not fit keeps its add
                    # (handing bytes back after another lane added past them would hand them out twice).
                    if tid == 0:
                        used = int64(atomic_add_u64(counters, 1, uint64(total)))
                        ctrl[1] = pool0 + used if used + total <= pool else int64(-1)
                    cuda.syncthreads()  # ctrl[1] is written again only after the next lane's ticket
                    lane_scratch = ctrl[1]
                    walk = lane_scratch >= 0
            if not walk:
                swap_lane(sm32, data, row_pos, head, seg, k, save_bytes, tid)
                cuda.syncthreads()
                continue
            pre_read_spans(sm32, data, scratch, smi, row_pos, lane_scratch, m, total, tid)
            if tid < decoders:
                for position in range(int64(tid), min(buffers, m), decoders):
                    decode(desc, position % slots, smi, position, seg, k, head, tile, row_pos, lane_scratch)
            cuda.syncthreads()  # the spans are in scratch before any copy reads them; the first items decoded
            for position in range(min(reach, m)):
                start_copies(sm32, (position % buffers) * buf_vecs, desc, position % slots, data, scratch, tid)
                commit_copies()
            for position in range(m):
                ahead = position + reach
                if ahead < m:
                    start_copies(sm32, (ahead % buffers) * buf_vecs, desc, ahead % slots, data, scratch, tid)
                commit_copies()  # one group an item, empty or not: the counts below hold
                d = position % slots
                wait_copies_left(reach - desc[d, W_REACH])
                cuda.syncthreads()
                if tid >= control:
                    write_item(sm32, (position % buffers) * buf_vecs, desc, d, data, row_pos, head, seg, k,
                               tid - control)
                following = position + buffers + tid
                if tid < decoders and position % decoders == 0 and following < m:
                    # Its slot held item following - slots <= position - 1: written already.
                    decode(desc, following % slots, smi, following, seg, k, head, tile, row_pos, lane_scratch)
                cuda.syncthreads()  # this buffer is staged again, the decoded items are read
        if tid == 0:
            leave_launch(counters)

    return kernel


@functools.lru_cache(maxsize=None)
def cycle_kernel(unit: int, threads: int = THREADS, runs: bool = False):
    """``kernel(data, scratch, flags, counters, table, nseg, seg, n_units, shift_units, head0,
    slot_bytes, buf_vecs, n0, n1, n2, n3, s0, s1, s2, s3, epoch)``.

    Walks the segments of ``table`` (see the module docstring); row ``d`` is
    written with row ``source_row(d)`` rolled right by ``shift_units``
    units. ``scratch`` holds one ``slot_bytes`` slot per segment (pre-reads
    of cut cycles), ``flags`` one "pre-read done" flag per segment (set to
    ``epoch``), ``counters[0]`` the tickets and ``counters[2]`` the finished
    blocks (the last block out rewinds both). ``runs``: rows are written as
    their two runs through the chain kernel's realigning loops (as
    ``lane-panels``' run writer), else with ``gather_write``. Launch with
    ``cycle_smem_bytes(seg)`` of dynamic shared memory.
    """
    stage, gather_write = _movers(unit, threads)
    write_moved = _write_moved(threads, 0)
    shift_bits = log2_unit(unit)
    jit_options = {} if SIMULATED else {"launch_bounds": threads}

    @cuda.jit(device=True)
    def wait_flag(flags, index, epoch, tid):
        if tid == 0:
            while load_acquire(flags, index) != epoch:
                pass
        cuda.syncthreads()

    @cuda.jit(device=True)
    def stage_source(sm32, buf, data, scratch, flags, src, last, whole, following, seg, head0, slot_bytes, epoch,
                     tid):
        """Stage the source row of a step (one copy group): ``src`` from the array, or for a
        segment's last step the next segment's first row (nothing, when it is in ``saved``; from
        scratch once its pre-read is published)."""
        head = (head0 + src * seg) & 15
        if not last:
            stage(sm32, buf, data, src * seg, head, seg, tid)
        elif whole:
            commit_copies()
        else:
            wait_flag(flags, following, epoch, tid)
            stage(sm32, buf, scratch, following * slot_bytes + head, head, seg, tid)

    @cuda.jit(**jit_options)
    def kernel(data, scratch, flags, counters, table, nseg, seg, n_units, shift_units, head0, slot_bytes,
               buf_vecs, n0, n1, n2, n3, s0, s1, s2, s3, epoch):
        sm8 = cuda.shared.array(0, uint8)
        sm16 = cuda.shared.array(0, uint16)
        sm32 = cuda.shared.array(0, uint32)
        ctrl = cuda.shared.array(1, int64)
        tid = cuda.threadIdx.x
        shift = int64(shift_units) << shift_bits  # the in-row shift in bytes (the run writer's)
        saved = 0  # buffer 0: a one-segment cycle's first row; buffers 1, 2: rows being moved
        current = buf_vecs
        upcoming = 2 * buf_vecs
        while True:
            ticket = block_ticket(ctrl, counters, 0, tid)
            if ticket >= 2 * nseg:
                break
            if ticket < nseg:
                # A cut cycle's segment: its first row goes to scratch before anyone writes it.
                if load_i64(table, 3 * ticket + 2) != ticket:
                    first = load_i64(table, 3 * ticket)
                    head = (head0 + first * seg) & 15
                    v_lo = first * seg - head
                    for v in range(tid, (head + seg + 15) >> 4, threads):
                        words = load16(data, v_lo + 16 * v)
                        store16(scratch, ticket * slot_bytes + 16 * v, words[0], words[1], words[2], words[3])
                    cuda.syncthreads()
                    if tid == 0:
                        cuda.threadfence()  # the copies are visible before the flag says so
                        store_relaxed(flags, ticket, uint32(epoch))
                continue
            g = ticket - nseg
            d = load_i64(table, 3 * g)
            steps = load_i64(table, 3 * g + 1)
            following = load_i64(table, 3 * g + 2)
            whole = following == g
            if whole:  # save the first row in shared memory; its copies fly with the next rows'
                stage(sm32, saved, data, d * seg, (head0 + d * seg) & 15, seg, tid)
            else:
                wait_flag(flags, g, epoch, tid)  # the first row is in scratch: it may be overwritten
            # Two moving buffers: step i+1's source row is staged while step i's row is written
            # (it is neither step i's row nor step i's source, so nothing orders them).
            src = source_row(d, n0, n1, n2, n3, s0, s1, s2, s3)
            stage_source(sm32, current, data, scratch, flags, src, steps == 1, whole, following, seg, head0,
                         slot_bytes, epoch, tid)
            for step in range(steps):
                after = source_row(src, n0, n1, n2, n3, s0, s1, s2, s3)
                if step + 1 < steps:
                    stage_source(sm32, upcoming, data, scratch, flags, after, step + 2 == steps, whole,
                                 following, seg, head0, slot_bytes, epoch, tid)
                else:
                    commit_copies()  # an empty group keeps the count: this step's group is the older one
                wait_but_one()
                cuda.syncthreads()
                dst = d * seg
                src_head = (head0 + src * seg) & 15
                from_buffer = saved if whole and step == steps - 1 else current
                dst_head = (head0 + dst) & 15
                if runs:  # the row as its two runs, each through one realigning loop
                    write_moved(sm32, from_buffer, -src_head, data, dst, dst_head, shift, seg, -shift, tid)
                    if shift > 0:
                        write_moved(sm32, from_buffer, -src_head, data, dst, dst_head, 0, shift, seg - shift, tid)
                else:
                    gather_write(sm8, sm16, sm32, 16 * from_buffer + src_head, data, dst, dst_head, seg, seg,
                                 n_units, shift_units, int64(-1), tid)
                cuda.syncthreads()  # the buffer is staged again two steps on
                d = src
                src = after
                current, upcoming = upcoming, current

        if tid == 0:
            leave_launch(counters)

    return kernel


# --- row-cycles for long rows: the moving rows streamed in chunks ------------
#
# ``cycle_kernel`` holds three whole rows a block (the saved first row and two
# staging buffers), so it stops at rows of about 75 KiB. Only the saved first
# row must be held whole (until the segment's last step): the row a step
# moves can be streamed. ``cycle_stream_kernel`` cuts each destination row
# into *chunks* aligned to 16 bytes in memory and runs the (step, chunk)
# units of a segment through a ring of ``ring`` chunk buffers: unit ``u``'s
# source bytes are staged (one copy group) ``ring - 1`` units ahead, and
# ``cp.async.wait_group(ring - 1)`` before writing unit ``u`` covers unit
# ``u``'s group *and every older one*. A destination chunk ``[lo, hi)`` of a
# row rolled right by ``shift`` bytes takes source bytes ``lo - shift``
# onwards (mod the row): at most two runs, staged side by side.


@register_jitable
def chunk_span(k, chunk, seg, head):
    """Row bytes ``[lo, hi)`` of destination chunk ``k``: chunks are ``chunk`` bytes aligned to 16 in memory
    (row byte ``x`` sits at phase ``(head + x) & 15``), clipped to the row; empty (``lo >= hi``) past its end."""
    lo = k * chunk - head
    hi = lo + chunk
    if lo < 0:
        lo = 0
    if hi > seg:
        hi = seg
    return lo, hi


@register_jitable
def source_run(lo, hi, shift, seg):
    """``(a, len_a)``: destination bytes ``[lo, hi)`` of a row rolled right by ``shift`` bytes (``0 <= shift <
    seg``) take source bytes ``[a, a + len_a)``, then ``[0, hi - lo - len_a)`` (the wrap)."""
    a = lo - shift
    if a < 0:
        a += seg
    len_a = hi - lo
    if len_a > seg - a:
        len_a = seg - a
    return a, len_a


@register_jitable
def run_vecs(head, a, n):
    """16-byte vectors that hold bytes ``[a, a + n)`` of a row starting at phase ``head`` (0 for no bytes)."""
    if n <= 0:
        return 0
    return (((head + a) & 15) + n + 15) >> 4


def chunk_vecs(chunk: int) -> int:
    """Vectors one ring buffer needs: two runs at any phases (at most ``(chunk + 60) / 16``), plus the one a
    realigning load may read past the last."""
    return (chunk + 60) // 16 + 1


def chunks_per_row(seg: int, chunk: int) -> int:
    """Chunks a row is cut into at any head (the last may be empty)."""
    return (seg + 15 + chunk - 1) // chunk


def cycle_stream_smem_bytes(seg: int, chunk: int, ring: int, first_rows_in_smem: bool = True) -> int:
    """Dynamic shared memory of ``cycle_stream_kernel``: the saved first row (unless first rows go to global
    scratch) and ``ring`` chunk buffers."""
    return 16 * ((buffer_vecs(seg) if first_rows_in_smem else 0) + ring * chunk_vecs(chunk))


def cycle_stream_threads(chunk: int) -> int:
    """The streaming kernel's block: about four vectors of a chunk a thread, 128 to 1024 threads."""
    return max(128, min(1024, chunk // 64))


@functools.lru_cache(maxsize=None)
def cycle_stream_kernel(threads: int = THREADS, ring: int = 3):
    """``kernel(data, scratch, flags, counters, table, nseg, seg, shift, head0, slot_bytes, saved_vecs, chunk,
    ring_vecs, chunks, n0, n1, n2, n3, s0, s1, s2, s3, epoch)``.

    The ``row-cycles`` protocol of :func:`cycle_kernel` (same tickets, table,
    flags and scratch slots) for rows too long for three row buffers: a
    step's row moves in ``chunks`` units of ``chunk`` bytes through ``ring``
    buffers of ``ring_vecs`` vectors; ``shift`` is the row's roll in bytes,
    so the kernel is the same for every item size. ``saved_vecs > 0``: a
    one-segment cycle keeps its first row in shared memory (the first
    ``saved_vecs`` vectors); ``0``: every segment's first row is pre-read
    into scratch (rows longer than a block's shared memory). Launch with
    ``cycle_stream_smem_bytes`` of dynamic shared memory.

    Safety (docs/design.md): unit ``(j, k)`` reads row ``sigma^(j+1)``,
    which only units ``(j + 1, *)`` of this block overwrite; each write
    waits for every group up to its own, so every earlier unit's reads
    (and the saved row's group, the oldest) have landed before it.
    """
    jit_options = {} if SIMULATED else {"launch_bounds": threads}
    wait_ring = copies_waiter(ring - 1)

    @cuda.jit(device=True)
    def wait_flag(flags, index, epoch, tid):
        if tid == 0:
            while load_acquire(flags, index) != epoch:
                pass
        cuda.syncthreads()

    @cuda.jit(device=True)
    def stage_run(sm32, buf_vec, src, row_pos, head, a, n, tid):
        """Start copying bytes ``[a, a + n)`` of a row whose byte 0 is at ``src`` position ``row_pos``
        (phase ``head``) to shared memory from vector ``buf_vec``: byte ``a + x`` lands at
        ``16 * buf_vec + ((head + a) & 15) + x``. No commit."""
        vecs = run_vecs(head, a, n)
        v_lo = row_pos + a - ((head + a) & 15)
        for v in range(tid, vecs, threads):
            copy16_async(sm32, 4 * (buf_vec + v), src, v_lo + 16 * v)

    @cuda.jit(device=True)
    def stage_unit(sm32, buf_vec, data, scratch, flags, row, src, last, whole, following, k, seg, shift, head0,
                   chunk, slot_bytes, epoch, tid):
        """Stage the source bytes of chunk ``k`` of ``row`` (row ``src`` rolled): one copy group. The
        segment's last step reads the next segment's first row from scratch once its pre-read is
        published, or nothing when it is the saved row (a whole cycle)."""
        lo, hi = chunk_span(k, chunk, seg, (head0 + row * seg) & 15)
        if lo < hi and not (last and whole):
            a, len_a = source_run(lo, hi, shift, seg)
            head = (head0 + src * seg) & 15
            if last:
                if k == 0:  # the first chunk of the last step; the later ones follow this block's wait
                    wait_flag(flags, following, epoch, tid)
                base = following * slot_bytes + head
                stage_run(sm32, buf_vec, scratch, base, head, a, len_a, tid)
                stage_run(sm32, buf_vec + run_vecs(head, a, len_a), scratch, base, head, 0, hi - lo - len_a, tid)
            else:
                stage_run(sm32, buf_vec, data, src * seg, head, a, len_a, tid)
                stage_run(sm32, buf_vec + run_vecs(head, a, len_a), data, src * seg, head, 0, hi - lo - len_a,
                          tid)
        commit_copies()

    @cuda.jit(device=True)
    def write_chunk(sm8, sm32, a_byte, len_a, b_byte, dst, dst_pos, nbytes, dst_head, tid):
        """Write bytes ``[dst_pos, dst_pos + nbytes)`` of ``dst`` (the first at phase ``dst_head``): byte
        ``x`` takes shared byte ``a_byte + x`` below ``len_a``, else ``b_byte + x - len_a``. Vectors
        inside one run: two aligned shared loads and funnel shifts; the vector that straddles the
        wrap is assembled byte by byte; partial vectors (a row's ends) are stored byte by byte."""
        v_lo = dst_pos - dst_head
        vecs = (dst_head + nbytes + 15) >> 4
        for v in range(tid, vecs, threads):
            q = 16 * v - dst_head
            if q >= 0 and q + 16 <= nbytes:
                if q + 16 <= len_a or q >= len_a:
                    sb = a_byte + q if q < len_a else b_byte + (q - len_a)
                    r = sb & 15
                    store_realigned(sm32, (sb - r) >> 2, r, dst, v_lo + 16 * v)
                    continue
                w0 = uint32(0)
                w1 = uint32(0)
                w2 = uint32(0)
                w3 = uint32(0)
                for b in range(16):
                    x = q + b
                    sb = a_byte + x if x < len_a else b_byte + (x - len_a)
                    value = uint32(sm8[sb]) << uint32(8 * (b & 3))
                    word = b >> 2
                    if word == 0:
                        w0 |= value
                    elif word == 1:
                        w1 |= value
                    elif word == 2:
                        w2 |= value
                    else:
                        w3 |= value
                store16(dst, v_lo + 16 * v, w0, w1, w2, w3)
            else:
                for b in range(16):
                    x = q + b
                    if x >= 0 and x < nbytes:
                        sb = a_byte + x if x < len_a else b_byte + (x - len_a)
                        store8(dst, v_lo + 16 * v + b, uint32(sm8[sb]))

    @cuda.jit(**jit_options)
    def kernel(data, scratch, flags, counters, table, nseg, seg, shift, head0, slot_bytes, saved_vecs, chunk,
               ring_vecs, chunks, n0, n1, n2, n3, s0, s1, s2, s3, epoch):
        sm8 = cuda.shared.array(0, uint8)
        sm32 = cuda.shared.array(0, uint32)
        ctrl = cuda.shared.array(1, int64)
        tid = cuda.threadIdx.x
        while True:
            ticket = block_ticket(ctrl, counters, 0, tid)
            if ticket >= 2 * nseg:
                break
            if ticket < nseg:
                # A first row that is not kept in shared memory goes to scratch before anyone writes it.
                if load_i64(table, 3 * ticket + 2) != ticket or saved_vecs == 0:
                    first = load_i64(table, 3 * ticket)
                    head = (head0 + first * seg) & 15
                    v_lo = first * seg - head
                    for v in range(tid, (head + seg + 15) >> 4, threads):
                        words = load16(data, v_lo + 16 * v)
                        store16(scratch, ticket * slot_bytes + 16 * v, words[0], words[1], words[2], words[3])
                    cuda.syncthreads()
                    if tid == 0:
                        cuda.threadfence()  # the copies are visible before the flag says so
                        store_relaxed(flags, ticket, uint32(epoch))
                continue
            g = ticket - nseg
            d = load_i64(table, 3 * g)
            steps = load_i64(table, 3 * g + 1)
            following = load_i64(table, 3 * g + 2)
            whole = following == g and saved_vecs > 0
            if whole:  # the saved first row: the oldest copy group, so every wait below covers it
                stage_run(sm32, 0, data, d * seg, (head0 + d * seg) & 15, 0, seg, tid)
                commit_copies()
            else:
                wait_flag(flags, g, epoch, tid)  # the first row is in scratch: it may be overwritten
            # Two cursors over the (step, chunk) units: staging runs ring - 1 units ahead of writing.
            s_row = d
            s_src = source_row(d, n0, n1, n2, n3, s0, s1, s2, s3)
            s_step = int64(0)
            s_k = int64(0)
            for i in range(ring - 1):
                if s_step < steps:
                    stage_unit(sm32, saved_vecs + i * ring_vecs, data, scratch, flags, s_row, s_src,
                               s_step == steps - 1, whole, following, s_k, seg, shift, head0, chunk, slot_bytes,
                               epoch, tid)
                    s_k += 1
                    if s_k == chunks:
                        s_k = 0
                        s_step += 1
                        s_row = s_src
                        s_src = source_row(s_src, n0, n1, n2, n3, s0, s1, s2, s3)
                else:
                    commit_copies()  # empty groups keep the count
            w_row = d
            w_src = source_row(d, n0, n1, n2, n3, s0, s1, s2, s3)
            w_step = int64(0)
            w_k = int64(0)
            w_buf = 0
            s_buf = ring - 1
            for u in range(steps * chunks):
                if s_step < steps:
                    stage_unit(sm32, saved_vecs + s_buf * ring_vecs, data, scratch, flags, s_row, s_src,
                               s_step == steps - 1, whole, following, s_k, seg, shift, head0, chunk, slot_bytes,
                               epoch, tid)
                    s_k += 1
                    if s_k == chunks:
                        s_k = 0
                        s_step += 1
                        s_row = s_src
                        s_src = source_row(s_src, n0, n1, n2, n3, s0, s1, s2, s3)
                else:
                    commit_copies()
                wait_ring()  # unit u's group and every older one (the saved row's included) have landed
                cuda.syncthreads()
                row_pos = w_row * seg
                lo, hi = chunk_span(w_k, chunk, seg, (head0 + row_pos) & 15)
                if lo < hi:
                    a, len_a = source_run(lo, hi, shift, seg)
                    if whole and w_step == steps - 1:  # the source is the saved first row, whole
                        head = (head0 + d * seg) & 15
                        a_byte = head + a
                        b_byte = head
                    else:
                        head = (head0 + w_src * seg) & 15
                        buf = saved_vecs + w_buf * ring_vecs
                        a_byte = 16 * buf + ((head + a) & 15)
                        b_byte = 16 * (buf + run_vecs(head, a, len_a)) + head
                    write_chunk(sm8, sm32, a_byte, len_a, b_byte, data, row_pos + lo, hi - lo,
                                (head0 + row_pos + lo) & 15, tid)
                cuda.syncthreads()  # this buffer is staged again on the next iteration
                w_k += 1
                if w_k == chunks:
                    w_k = 0
                    w_step += 1
                    w_row = w_src
                    w_src = source_row(w_src, n0, n1, n2, n3, s0, s1, s2, s3)
                w_buf = w_buf + 1 if w_buf + 1 < ring else 0
                s_buf = s_buf + 1 if s_buf + 1 < ring else 0

        if tid == 0:
            leave_launch(counters)

    return kernel
