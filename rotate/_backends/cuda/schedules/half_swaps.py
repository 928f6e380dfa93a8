"""``half-swaps``: every rolled axis by half its length, as disjoint swaps of aligned runs (one shift, or a
multi-axis roll such as an even fftshift).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from ...._schedules import chain as S
from ...._core.plan import Params, Step
from .. import device as D
from .. import runtime as R
from ..kernels.memops import SIMULATED


@dataclass(frozen=True, eq=False)
class HalfSwapsParams(Params):
    """``half-swaps`` (``kernels.half_swaps.half_swap_kernel``): every rolled axis by half its length, disjoint swaps."""

    CONSTANTS = (("schedule", "half-swaps"), ("co_resident", False))  # no block waits for another
    block: int
    grid: int
    vecs: int
    group: int
    rows_per_item: int
    chunk_bytes: int
    items: int
    chunks_per_half: int
    lead: tuple
    lead_shifts: tuple


def plan_half_swaps(lead, lead_shifts, rows: int, seg: int, row_shift: int, word: int, pointer: int,
                    axis: Optional[int] = None, shift: int = 0, left: int = 0) -> Optional[Step]:
    """``half-swaps`` (rotate/_schedules/rowperm.py): every rolled axis by half its length, as disjoint swaps of runs.

    ``lead``/``lead_shifts``: the leading radices and their shifts (``(rows,)``
    and ``(0,)`` for a one-axis roll: every row swaps its own halves; ``axis``,
    ``shift`` and ``left`` then fill the step as for other schedules); ``row_shift``: the
    in-row shift in bytes. None unless it is a half-swap whose runs are
    16-byte aligned (the array's start, ``seg`` and ``seg / 2``), or when
    the tuning's ``half_swaps`` is off or a row-cycles variant is forced.
    """
    from ...._schedules.rowperm import half_swap_shape

    if not D.policy().half_swaps or D.policy().cycle_variant is not None:
        return None
    shape = half_swap_shape(tuple(lead), tuple(lead_shifts), seg, row_shift)
    if shape is None or pointer % 16 or seg % 32 or rows < 1:
        return None
    dims, halves = shape
    if int(np.prod(dims, dtype=np.int64)) != rows:
        return None
    half = seg // 2
    threads = D.policy().lane_threads or D.policy().half_swap_threads
    if threads < 1 or threads & (threads - 1):
        # A row's group is the block halved until it fits the half: only a power of two splits evenly.
        raise ValueError(f"GPU setting lane_threads must be a power of two for half-swaps, got {threads!r}; "
                         f"use 256 (the default) or set half_swaps=False")
    vecs = D.policy().half_swap_vecs or D.policy().default_half_swap_vecs
    if vecs not in (1, 2, 3, 4):
        raise ValueError(f"GPU setting half_swap_vecs must be 1, 2, 3, 4 or None, got {vecs!r}")
    # Halves shorter than a block moves at once share an item: a group of threads a row, the smallest
    # power of two whose vectors cover the half.
    group = threads
    while group > 1 and 16 * (group // 2) * vecs >= half:
        group //= 2
    rows_per_item = threads // group
    chunk = min(16 * group * vecs, half)
    chunks_per_half = S.ceil_div(half, chunk)
    items = S.ceil_div(rows, rows_per_item) * chunks_per_half
    sms, _ = D.device_shape(D._device_id())
    grid = D.policy().grid or sms * max(1, 2048 // threads)
    return Step(
        axis, shift, rows, seg, left, word,
        algorithm="half-swaps",
        scratch_bytes=0,
        bytes_moved=2 * rows * seg,
        params=HalfSwapsParams(
            block=threads,
            grid=max(1, min(grid, items)),
            vecs=vecs,
            group=group,
            rows_per_item=rows_per_item,
            chunk_bytes=chunk,
            items=items,
            chunks_per_half=chunks_per_half,
            lead=dims,
            lead_shifts=halves,
        ),
    )


def plan(axis, shift, rows, seg, left, word, pointer, cap) -> Optional[Step]:
    """A roll by half the segment: every row swaps its two halves (``half-swaps``)."""
    return plan_half_swaps((rows,), (0,), rows, seg, left, word, pointer, axis, shift, left)


@functools.lru_cache(maxsize=None)
def _compiled_half_swaps(threads: int, vecs: int, group: int, device: int = 0):
    """``kernels.half_swaps.half_swap_kernel`` compiled for int64 arguments (15) and its cuda.core handle in
    ``device``'s context."""
    from ..kernels import half_swaps as K

    kernel = K.half_swap_kernel(threads, vecs, group)
    if SIMULATED:
        return kernel, None
    return kernel, R._int64_cufunc(kernel, 15).kernel


def run_half_swaps(target: Any, info, step, handle: int) -> None:
    """Launch one ``half-swaps`` step (every rolled axis by half its length: disjoint swaps of aligned runs)."""
    p = step.params
    if info.pointer % 16:
        raise AssertionError("internal error: a half-swaps plan run on an array that is not 16-byte aligned")
    scalars = (p.items, step.rows, p.chunk_bytes, p.chunks_per_half, step.seg_bytes, step.seg_bytes // 2,
               *p.lead, *p.lead_shifts)
    kernel, cu_kernel = _compiled_half_swaps(p.block, p.vecs, p.group, D._device_id())
    if SIMULATED:
        kernel[p.grid, p.block](R._sim_bytes(target, step.rows * step.seg_bytes), *scalars)
        return
    R._launch_core(handle, p.grid, p.block, 0, cu_kernel, info.pointer, *scalars)


RUNS = {HalfSwapsParams: run_half_swaps}
