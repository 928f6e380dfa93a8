"""The ``row-cycles`` kernels: multi-axis ``roll`` and ``fftshift`` in one pass.

``cycle_kernel``
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

``cycle_stream_kernel``
    The same cycles for rows too long for shared memory: the moving rows
    streamed in chunks.

Deadlock freedom (cycle kernel): tickets ``0 .. nseg - 1`` are pre-reads and
wait for nothing; ticket ``nseg + g`` walks segment ``g`` and waits only for
the pre-read flags of segments ``g`` and ``next(g)``, tickets smaller than
its own. A ticket is only taken by a running block, so every awaited ticket
is held by a running block that does not wait: the launch finishes with any
number of resident blocks, one included (docs/design.md).
"""

from __future__ import annotations

import functools

import numpy as np
from numba import cuda, int64, njit, uint8, uint16, uint32
from numba.extending import register_jitable

from ...._schedules.rowperm import MAX_LEAD, source_row  # noqa: F401 
from .common import _write_moved, block_ticket, leave_launch, store_realigned
from .memops import (SIMULATED, commit_copies, copies_waiter, copy16_async, load16, load_acquire, load_i64, store16,
                      store8, store_relaxed)
from .panels import THREADS, _movers, buffer_vecs, log2_unit, wait_but_one

def cycle_smem_bytes(seg: int) -> int:
    """Dynamic shared memory of the cycle kernel: the saved first row and two staging buffers."""
    return 3 * 16 * buffer_vecs(seg)


def cycle_threads(seg: int) -> int:
    """The cycle kernel's block: about four 16-byte vectors of a row a thread, 128 to 1024 threads."""
    threads = 128
    while threads < 1024 and threads * 64 < seg:
        threads *= 2
    return threads


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
