"""``row-cycles``: a multi-axis roll of a C-ordered array in one pass, rows moved along their cycles (the
``three-rows`` and ``chunked`` kernels).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from ...._schedules import chain as S
from ...._core.plan import Params, Step, internal
from .. import device as D
from .. import runtime as R
from ..kernels.memops import SIMULATED


@dataclass(frozen=True, eq=False)
class _RowCyclesParams(Params):
    """What both ``row-cycles`` kernels read: a multi-axis roll in one pass, segments of row cycles."""

    block: int
    grid: int
    segments: int
    cut_segments: int
    pre_read_rows: int
    piece_rows: int
    smem_bytes: int
    blocks_per_sm: int
    first_rows: str
    head0: int
    lead: tuple
    lead_shifts: tuple
    row_shift_bytes: int
    co_resident: bool  # False: every wait is on an earlier ticket (a pre-read)
    table: np.ndarray = internal()
    slot: int = internal()
    pre_bytes: int = internal()


@dataclass(frozen=True, eq=False)
class RowCyclesParams(_RowCyclesParams):
    """``row-cycles``, ``three-rows`` (``kernels.cycles.cycle_kernel``): a saved first row and two row buffers."""

    CONSTANTS = (("schedule", "row-cycles"), ("variant", "three-rows"))
    unit_bytes: int
    writer: str
    buf_vecs: int = internal()


@dataclass(frozen=True, eq=False)
class RowCyclesChunkedParams(_RowCyclesParams):
    """``row-cycles``, ``chunked`` (``kernels.cycles.cycle_stream_kernel``): the saved first row and a ring of chunks."""

    CONSTANTS = (("schedule", "row-cycles"), ("variant", "chunked"))
    chunk_bytes: int
    ring: int
    chunks_per_row: int
    ring_vecs: int = internal()
    saved_vecs: int = internal()


#: What the ``cycle_variant`` setting takes (None: the planner's pick).
CYCLE_VARIANTS = (None, "three-rows", "chunked", "chunked-scratch")


def _check_cycle_settings() -> None:
    variant, chunk, ring = D.policy().cycle_variant, D.policy().cycle_chunk_bytes, D.policy().cycle_ring
    if variant not in CYCLE_VARIANTS:
        raise ValueError(f"GPU setting cycle_variant must be one of {CYCLE_VARIANTS}, got {variant!r}")
    if chunk is not None and (int(chunk) != chunk or chunk < 16 or chunk % 16):
        raise ValueError(f"GPU setting cycle_chunk_bytes must be a positive multiple of 16 or None, got {chunk!r}")
    if ring is not None and ring not in (2, 3, 4):
        raise ValueError(f"GPU setting cycle_ring must be 2, 3, 4 or None, got {ring!r}")


def _cycle_stream_config(seg: int, limit: int, first_rows_in_smem: bool, max_blocks: int = 32):
    """``(chunk, ring, smem, threads, blocks per SM)`` of the chunked row-cycles variant, or None.

    Picks the most bytes staged ahead per SM (``(ring - 1) x chunk`` a block,
    at most a row's worth, times the blocks that fit) up to
    the tuning's cycle_ahead_bytes, then the most blocks an SM (their barriers and
    writes overlap), then the least shared memory. A prediction, not a
    measurement: ``cycle_chunk_bytes`` and ``cycle_ring`` pin the choice
    for a sweep. ``max_blocks``: the walks an SM can have at most (few
    segments leave SMs with one block or none, which then want deep rings).
    """
    T = D.policy()  # the policy, resolved once for the whole search
    from ..kernels import cycles

    chunks = [int(T.cycle_chunk_bytes)] if T.cycle_chunk_bytes else T.cycle_chunks
    rings = [int(T.cycle_ring)] if T.cycle_ring else T.cycle_rings
    best = None
    for chunk in chunks:
        for ring in rings:
            smem = cycles.cycle_stream_smem_bytes(seg, chunk, ring, first_rows_in_smem)
            if smem > limit:
                continue
            threads = T.lane_threads or cycles.cycle_stream_threads(chunk)
            blocks = min(D.blocks_for_smem(smem, threads), max_blocks)
            score = (min((ring - 1) * min(chunk, seg + 15) * blocks, T.cycle_ahead_bytes), blocks, -smem)
            if best is None or score > best[0]:
                best = (score, (chunk, ring, smem, threads, blocks))
    return None if best is None else best[1]


def _unbound_block(smem: int, threads: int) -> int:
    """A three-rows block with the run writer: halved (down to ``run_cycle_min_threads``) while the register
    file, not shared memory, caps the blocks an SM holds. A block has about one row in flight, so an SM's
    bytes in flight are its blocks times a row: rows of 4-16 KiB ran at 40-76% of memcpy with 128-256
    threads (2-4 blocks an SM) and 63-95% with 64 (8); docs/tuning.md, ``cuda.run_cycle_min_threads``."""
    T = D.policy()
    while threads > T.run_cycle_min_threads and \
            D.blocks_for_smem(smem, threads, T.run_registers) < D.blocks_for_smem(smem, threads):
        threads //= 2
    return max(threads, T.run_cycle_min_threads)


def _fold_rows(shape: tuple, itemsize: int, c_shifts: dict):
    """``(lead, lead_shifts, seg, block)``: a C-ordered array as rows of ``seg`` bytes from the last rolled
    axis on (``block``: the bytes of one index of that axis), the axes before it folded into leading radices
    (axes of length 1 dropped, adjacent unrolled ones merged)."""
    last = max(c_shifts)
    block = int(np.prod(shape[last + 1:], dtype=np.int64)) * itemsize
    lead, offs = [], []
    for ax in range(last):
        s = c_shifts.get(ax, 0)
        if shape[ax] == 1:
            continue
        if s == 0 and lead and offs[-1] == 0:
            lead[-1] *= shape[ax]
        else:
            lead.append(shape[ax])
            offs.append(s)
    return lead, offs, shape[last] * block, block


def plan_row_cycles_folded(shape: tuple, itemsize: int, c_shifts: dict, pointer: int,
                           cap: Optional[int]) -> Optional[Step]:
    """``row-cycles`` with the last rolled axis folded into the leading radices too: rows are the bytes
    after it (no in-row shift), or None. A row from the last rolled axis on can be far too long for a
    block (an axis of a thousand 8 KiB blocks: 8 MiB rows) where the bytes after it make rows of a few
    KiB that three-rows moves whole. The fold is a length-1 axis after the last rolled one, "rolled" by 0."""
    last = max(c_shifts)
    folded = tuple(shape[:last + 1]) + (1,) + tuple(shape[last + 1:])
    return plan_row_cycles(folded, itemsize, {**c_shifts, last + 1: 0}, pointer, cap, short_rows=False)


def three_rows_fit(seg: int) -> bool:
    """Whether ``three-rows`` (a saved first row and two staging buffers) holds rows of ``seg`` bytes."""
    from ..kernels import cycles

    return cycles.cycle_smem_bytes(seg) <= (D.policy().cycle_smem or D.policy().max_lane_smem)


def plan_row_cycles(shape: tuple, itemsize: int, c_shifts: dict, pointer: int,
                    cap: Optional[int], short_rows: bool = True) -> Optional[Step]:
    """A multi-axis roll of a C-ordered array in one pass (``row-cycles``), or None.

    ``c_shifts`` maps C-order axes to shifts in ``(0, length)``. The axes up
    to the last rolled one index rows; the last rolled axis and everything
    after it form a row, rolled while it moves. Two kernels (two params
    types): ``three-rows`` (``cycle_kernel``: a saved first row and
    two staging buffers a block, rows up to about 75 KiB) and, where three
    rows do not fit, ``chunked`` (``cycle_stream_kernel``: the saved first
    row and a ring of chunks; rows up to about 200 KiB keep first rows in
    shared memory, longer ones pre-read every segment's first row into
    scratch). None when rows are shorter than the tuning's min_cycle_row and
    more than its short_row_cycles_max_rows (any number without
    ``short_rows``), the leading axes do not fold into MAX_LEAD radices, the
    table has more than ``max_segments`` segments of rows shorter than
    ``many_segments_min_row``, the pre-reads exceed ``cap``, merging segments
    to fit left fewer walks than ``cycle_min_walk_share`` of the SMs, or the
    step's scratch (pre-reads, flags and table) exceeds a ``cap`` the caller
    gave.
    """
    T = D.policy()  # the policy, resolved once for the whole search
    from ..kernels import cycles, panels
    from ...._schedules import rowperm as _rowperm

    _check_cycle_settings()
    last = max(c_shifts)
    lead, offs, seg, block = _fold_rows(shape, itemsize, c_shifts)
    head0 = pointer % 16
    unit = D.lane_unit(itemsize, head0)
    if len(lead) > _rowperm.MAX_LEAD:
        return None
    rows = int(np.prod(lead, dtype=np.int64)) if lead else 1
    if seg < T.min_cycle_row and (not short_rows or rows > T.short_row_cycles_max_rows):
        return None
    limit = T.cycle_smem or T.max_lane_smem
    variant = T.cycle_variant
    sms, _ = D.device_shape(D._device_id())
    stream = None
    # Measured (docs/results/gpu-rows-chunked-mid-h200.json): where every cycle is a swap of two rows
    # (an involution: fftshift of even lengths) and the in-row shift keeps 16-byte alignment, the
    # chunked kernel ran 64 KiB rows at 67-69% against 61-67% for three rows; on long cut cycles with
    # misaligned row shifts it lost 19-22 points, and on 4 KiB rows (the 512^3 fftshift: 131,072
    # swaps) 20 points. So the default takes it only for aligned swaps of rows of 64 KiB and more.
    swaps_aligned = (head0 == 0 and seg >= T.min_chunked_swap_row and (c_shifts[last] * block) % 16 == 0
                     and all((2 * s) % n == 0 for n, s in zip(lead, offs)))
    writer = D.lane_writer("runs")
    if writer == "windows":  # the cycle kernel has no window writer
        writer = "gather"
    if variant in (None, "three-rows") and three_rows_fit(seg) and \
            not (variant is None and swaps_aligned):
        smem = cycles.cycle_smem_bytes(seg)
        threads = T.lane_threads or cycles.cycle_threads(seg)
        if writer == "runs":
            threads = T.lane_threads or _unbound_block(smem, min(threads, T.run_cycle_threads))
        blocks = D.blocks_for_smem(smem, threads, T.run_registers if writer == "runs" else 0)
        first_rows_in_smem = True
    elif variant == "three-rows":
        return None
    else:
        first_rows_in_smem = variant != "chunked-scratch"
        stream = _cycle_stream_config(seg, limit, True) if first_rows_in_smem else None
        if stream is None:
            first_rows_in_smem = False
            stream = _cycle_stream_config(seg, limit, False)
        if stream is None:
            return None
        chunk, ring, smem, threads, blocks = stream
    grid = T.grid or sms * blocks
    slot = S.align_up(seg + 32)
    bound = None if cap is None or isinstance(cap, D.DefaultBound) else int(cap)  # the caller's own
    cap = D.default_cap(rows, seg) if cap is None else cap
    piece = max(4, S.ceil_div(rows, 2 * grid))
    grown = False  # segments merged to fit the table or the scratch bound (not for want of rows)
    while True:
        table = cycles.segment_table(tuple(lead), tuple(offs), piece)
        nseg = len(table) // 3
        cut = int(np.count_nonzero(table[2::3] != np.arange(nseg)))
        pre_reads = cut if first_rows_in_smem else nseg  # first rows copied to scratch
        pre_bytes = nseg * slot if pre_reads else 0  # slots are indexed by segment
        if (nseg <= T.max_segments or seg >= T.many_segments_min_row) and pre_bytes <= cap:
            break
        if piece >= rows or cut == 0:  # whole cycles only: longer pieces give the same table
            return None
        piece *= 2
        grown = True
    if variant is None and grown and nseg < T.cycle_min_walk_share * sms:
        return None  # the bound left too few walks to load the GPU: one pass per axis moves the bytes faster
    if bound is not None and pre_bytes + 4 * nseg + table.nbytes + 64 > bound:
        return None  # the table and flags are scratch too: a caller's max_scratch_bytes bounds them all
    if stream is not None and nseg < sms * blocks:  # fewer walks than blocks: deeper rings, fewer blocks
        stream = _cycle_stream_config(seg, limit, first_rows_in_smem, S.ceil_div(nseg, sms))
        chunk, ring, smem, threads, blocks = stream
        grid = T.grid or sms * blocks
    dims = (1,) * (_rowperm.MAX_LEAD - len(lead)) + tuple(lead)
    shifts = (0,) * (_rowperm.MAX_LEAD - len(offs)) + tuple(offs)
    common = dict(
        block=threads,
        grid=max(1, min(grid, 2 * nseg)),
        segments=nseg,
        cut_segments=cut,
        pre_read_rows=pre_reads,
        piece_rows=piece,
        smem_bytes=smem,
        blocks_per_sm=blocks,
        first_rows="shared memory" if first_rows_in_smem else "scratch",
        head0=head0,
        lead=dims,
        lead_shifts=shifts,
        row_shift_bytes=c_shifts[last] * block,
        co_resident=False,  # every wait is on an earlier ticket (a pre-read)
        table=table,
        slot=slot,
        pre_bytes=pre_bytes,
    )
    if stream is None:
        params = RowCyclesParams(**common, unit_bytes=unit, writer=writer, buf_vecs=panels.buffer_vecs(seg))
    else:
        params = RowCyclesChunkedParams(
            **common, chunk_bytes=chunk, ring=ring, chunks_per_row=cycles.chunks_per_row(seg, chunk),
            ring_vecs=cycles.chunk_vecs(chunk), saved_vecs=panels.buffer_vecs(seg) if first_rows_in_smem else 0)
    return Step(
        None, 0, rows, seg, 0, itemsize,
        algorithm="row-cycles",
        scratch_bytes=pre_bytes + 4 * nseg + table.nbytes + 64,
        bytes_moved=2 * rows * seg + 2 * pre_reads * seg,
        params=params,
    )


def run_row_cycles(target: Any, info, step, handle: int) -> None:
    """Launch one ``row-cycles`` step (a multi-axis roll in one pass)."""
    p = step.params
    if info.pointer % 16 != p.head0:
        raise AssertionError("internal error: a row-cycles plan run on an array at another 16-byte offset")
    device = D._device_id()
    nseg = p.segments
    flags, pre, counters, epoch = R.scratch_for(handle, device).reserve(nseg, p.pre_bytes)
    if isinstance(p, RowCyclesChunkedParams):
        _run_row_cycles_chunked(target, info, step, handle, device, pre, flags, counters, epoch)
        return
    unit = p.unit_bytes
    scalars = (nseg, step.seg_bytes, step.seg_bytes // unit, p.row_shift_bytes // unit, p.head0, p.slot,
               p.buf_vecs, *p.lead, *p.lead_shifts, epoch)
    _launch_cycles(target, info, step, handle, device, (pre, flags, counters),
                   R._compiled_lanes("cycle", unit, p.block, 21, device, runs=p.writer == "runs"), scalars)


def _launch_cycles(target: Any, info, step, handle: int, device: int, scratch: tuple, compiled: tuple,
                   scalars: tuple) -> None:
    """Launch a ``row-cycles`` kernel (either variant): data, scratch and the segment table, then ``scalars``."""
    p = step.params
    kernel, cu_kernel = compiled
    if SIMULATED:
        data = R._sim_bytes(target, step.rows * step.seg_bytes)
        kernel[p.grid, p.block, 0, p.smem_bytes](data, *scratch, R._device_table(p.table), *scalars)
        return
    pre_address, flags_address, counters_address = R.scratch_for(handle, device).addresses
    R._launch_core(handle, p.grid, p.block, p.smem_bytes, cu_kernel, info.pointer, pre_address, flags_address,
                 counters_address, R._device_table_address(p.table), *scalars)


@functools.lru_cache(maxsize=None)
def _compiled_cycle_stream(threads: int, ring: int, device: int):
    """``kernels.cycles.cycle_stream_kernel`` compiled for int64 arguments (23), its cuda.core handle, allowed the
    most dynamic shared memory a block can have (on ``device``)."""
    from ..kernels import cycles

    kernel = cycles.cycle_stream_kernel(threads, ring)
    if SIMULATED:
        return kernel, None
    cufunc = R._int64_cufunc(kernel, 23)
    R._set_dynamic_smem(cufunc)
    return kernel, cufunc.kernel


def _run_row_cycles_chunked(target: Any, info, step, handle: int, device: int, pre, flags, counters,
                            epoch: int) -> None:
    """Launch a ``row-cycles`` step of the ``chunked`` variant (rows too long for three row buffers)."""
    p = step.params
    scalars = (p.segments, step.seg_bytes, p.row_shift_bytes, p.head0, p.slot, p.saved_vecs, p.chunk_bytes,
               p.ring_vecs, p.chunks_per_row, *p.lead, *p.lead_shifts, epoch)
    _launch_cycles(target, info, step, handle, device, (pre, flags, counters),
                   _compiled_cycle_stream(p.block, p.ring, device), scalars)


RUNS = {RowCyclesParams: run_row_cycles, RowCyclesChunkedParams: run_row_cycles}
