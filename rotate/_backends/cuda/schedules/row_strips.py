"""``row-strips``: after a flat pass, one strip of every row moved a row (the second step of a multi-axis
roll planned as ``flat + strip``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Optional


from ...._schedules import chain as S
from ...._core.plan import Params, Step
from .. import device as D
from .. import runtime as R
from ..kernels.memops import SIMULATED


@dataclass(frozen=True, eq=False)
class RowStripsParams(Params):
    """``row-strips`` (``kernels.strips``): after a flat pass, bytes ``strip`` of every row moved a row."""

    CONSTANTS = (("schedule", "row-strips"), ("co_resident", False))  # no block waits for another
    block: int
    grid: int
    vecs: int
    items: int
    chunks: int
    chunk_rows: int
    rows: int
    pitch: int
    strip: tuple
    up: bool
    v_lo: int
    vectors: int


def plan_row_strips(batches: int, rows: int, seg: int, lo: int, hi: int, up: bool, word: int,
                    cap: int) -> Optional[Step]:
    """The ``row-strips`` step: in each of ``batches`` segments of ``rows`` rows of ``seg`` bytes, bytes
    ``[lo, hi)`` of every row moved up a row (``up``: row ``d`` takes row ``d + 1``'s, cyclically) or
    down. None when a strip a batch passes ``cap`` bytes of scratch."""
    from ..kernels import strips

    v_lo = lo // 16
    nv = S.ceil_div(hi, 16) - v_lo
    slot = 16 * nv
    if batches * slot > cap:
        return None
    threads = D.policy().lane_threads or strips.THREADS
    vecs = strips.VECS
    sms, _ = D.device_shape(D._device_id())
    blocks = sms * D.blocks_for_smem(0, threads, D.policy().strip_registers)
    # Chunks: about four items a block for balance, fewer where the strips are short (a batch of loads
    # a chunk at least) or the scratch (a strip a chunk) would pass the bound.
    per_batch = max(1, min(rows, S.ceil_div(4 * blocks, batches), rows * nv // (threads * vecs) or 1,
                           (cap // slot) // batches))
    chunk_rows = S.ceil_div(rows, per_batch)
    chunks = S.ceil_div(rows, chunk_rows)
    items = batches * chunks
    width = hi - lo
    return Step(
        None, 1 if up else -1, batches, rows * width, width if up else (rows - 1) * width, word,
        algorithm="row-strips",
        scratch_bytes=items * slot,
        bytes_moved=2 * batches * rows * slot + 2 * items * slot,
        params=RowStripsParams(
            block=threads,
            grid=max(1, min(blocks, items)),
            vecs=vecs,
            items=items,
            chunks=chunks,
            chunk_rows=chunk_rows,
            rows=rows,
            pitch=seg,
            strip=(lo, hi),
            up=up,
            v_lo=v_lo,
            vectors=nv,
        ),
    )


@functools.lru_cache(maxsize=None)
def _compiled_strips(threads: int, vecs: int, device: int):
    """``kernels.strips``' save and move kernels compiled for int64 arguments (10 and 12), with their cuda.core
    handles in ``device``'s context (the key holds the device: a handle belongs to one context)."""
    from ..kernels import strips

    save, move = strips.strip_save_kernel(threads), strips.strip_kernel(threads, vecs)
    if SIMULATED:
        return save, None, move, None
    return save, R._int64_cufunc(save, 10).kernel, move, R._int64_cufunc(move, 12).kernel


def run_row_strips(target: Any, info, step, handle: int) -> None:
    """Launch a ``row-strips`` step (after a flat pass, one strip of every row moved a row): the boundary
    rows to scratch, then the items."""
    p = step.params
    if info.pointer % 16 or p.pitch % 16:
        raise AssertionError("internal error: a row-strips plan run on rows that are not 16-byte aligned")
    device = D._device_id()
    entry = R.scratch_for(handle, device)
    _, pre, _, _ = entry.reserve(0, step.scratch_bytes)
    lo, hi = p.strip
    head = (p.items, p.chunks, p.chunk_rows, p.rows, p.pitch, p.v_lo, p.vectors)
    up = int(p.up)
    save, cu_save, move, cu_move = _compiled_strips(p.block, p.vecs, device)
    save_grid = max(1, min(p.grid, S.ceil_div(p.items * p.vectors, p.block)))
    if SIMULATED:
        data = R._sim_bytes(target, step.rows * p.rows * p.pitch)
        save[save_grid, p.block](data, pre, *head, up)
        move[p.grid, p.block](data, pre, *head, lo, hi, up)
        return
    pre_address = entry.addresses[0]
    R._launch_core(handle, save_grid, p.block, 0, cu_save, info.pointer, pre_address, *head, up)
    R._launch_core(handle, p.grid, p.block, 0, cu_move, info.pointer, pre_address, *head, lo, hi, up)


RUNS = {RowStripsParams: run_row_strips}
