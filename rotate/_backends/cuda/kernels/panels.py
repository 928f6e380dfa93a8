"""The lane-panel kernels of ``roll_rows`` (``lane-panels``), and the lane movers other families share.

A lane (a row of ``seg`` bytes) is staged raw into shared memory with
asynchronous 16-byte copies, then written back *gathering* each
destination unit from its rotated source position in shared memory, as
whole aligned 16-byte stores. Every byte is read once and written once.

``panel_kernel``
    Consecutive lanes, as many as fit a panel of ``PANEL_BYTES``, are one
    work item; lane ``i`` is rolled by ``shifts[i * shift_stride]`` (an int64
    array on the device, reduced modulo the lane length on the device, so a
    device array of shifts is never read by the host). Items are disjoint:
    no flags. Two panels are in flight per block (the next one's copies fly
    while the current one is written). Lanes of FAST_GATHER_ROW bytes and
    more are written as two runs each (``_run_writer``), shorter ones by
    ``gather_write``.

``warp_lane_kernel`` (the ``warps`` variant)
    A warp, or a group of a warp's threads, stages and writes one lane at a
    time, with slots of its own: no block-wide barrier between lanes.
"""

from __future__ import annotations

import functools

from numba import cuda, int64, uint8, uint16, uint32, uint64

from ...._schedules import chain as S
from ..tuning import HOPPER as _HOPPER
from .common import _write_moved, load_realigned, store_realigned
from .memops import (SIMULATED, commit_copies, copies_waiter, copy16_async, load16_shared, load_i64, store16,
                      store8, sync_warp)

#: The kernel factories' defaults (probes, codegen tests): the tuning policy's values, which plans pass
#: explicitly (rotate/_backends/cuda/tuning.py says why they are what they are).
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


def log2_unit(unit: int) -> int:
    return {1: 0, 2: 1, 4: 2, 8: 3, 16: 4}[unit]


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
    (``common._write_moved``) does with the realignment loop chosen once a
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
