"""``lane-swaps``: ``roll_rows`` of long lanes, a block per lane: block swaps, then one streamed pass.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from ...._schedules import gries_mills
from ...._core.plan import Params, Step, internal
from .. import device as D
from .. import runtime as R


@dataclass(frozen=True, eq=False)
class LaneSwapsParams(Params):
    """``lane-swaps`` (``kernels.lane_swaps.swap_kernel``): a block per lane, block swaps then one streamed pass."""

    CONSTANTS = (("schedule", "lane-swaps"),)
    block: int
    grid: int
    smem_bytes: int
    panel_bytes: int
    save_bytes: int
    head0: int
    launches: int
    bytes_moved_is_bound: bool
    co_resident: bool
    reason: str
    n: int = internal()


def swap_sizes():
    """``lane-swaps``' ``(panel_bytes, save_bytes, smem_bytes)`` for the current settings and device.

    By default the saved side takes what is left of half an SM's shared
    memory after four panel buffers (about 80 KiB on an H200): two blocks an
    SM keep twice the bytes in flight, and for random shifts of 4 MiB lanes a
    saved side of 80 KiB moves about 5% more bytes than one of 190 KiB (more
    block swaps; ``rotate._schedules.gries_mills.swap_traffic``).
    """
    from ..kernels import lane_swaps, panels

    panel = int(D.policy().swap_panel_bytes)
    panel_vecs = panels.buffer_vecs(panel)
    save = D.policy().swap_save_bytes
    if save is None:
        _, smem_per_sm = D.device_shape(D._device_id())
        budget = min(D.policy().max_lane_smem, smem_per_sm // 2 - 1024 - 64)  # two blocks, the driver's 1 KiB, static
        save = lane_swaps.save_capacity(max(2 * panel_vecs, budget // 16 - 2 * panel_vecs))
    smem = lane_swaps.swap_smem_bytes(panel, int(save))
    if smem > D.policy().max_block_smem:
        raise ValueError(f"GPU settings swap_panel_bytes={panel} and swap_save_bytes={save} need {smem} bytes "
                         f"of shared memory a block, more than {D.policy().max_block_smem}; choose smaller sizes")
    return panel, int(save), smem


@functools.lru_cache(maxsize=1)
def _swap_traffic_compiled():
    import numba

    @numba.njit(cache=True)
    def traffic(shifts, n, item, save):
        total = 0
        for s in shifts:  # a lane rolled by 0 counts 2 x its bytes, as in every plan (the kernel skips it)
            total += max(2 * n * item, gries_mills.swap_traffic(n * item, ((n - s % n) % n) * item, save))
        return total

    return traffic


def plan_lane_swaps(axis: int, rows: int, n: int, itemsize: int, pointer: int, host_shifts=None) -> Step:
    """``roll_rows`` of lanes too long for a block's shared memory, in one launch: ``lane-swaps``.

    A block takes whole lanes (grid-strided) and rotates each by itself (Gries-Mills
    block swaps until the small side fits the saved-side buffer, then one
    streamed pass; rotate/_backends/cuda/kernels/lane_swaps.py ``swap_kernel``), so no block waits
    for another. ``bytes_moved`` is exact for ``host_shifts`` (int64, one per
    lane; a lane rolled by 0 counts 2 x its bytes, as in every plan, though
    the kernel skips it); for shifts on the device it is a bound
    (``bytes_moved_is_bound``):
    2N when every small side fits the buffer, else 4N (each swapped byte
    moves twice more, and swaps place at most the whole lane).
    """
    seg = n * itemsize
    panel, save, smem = swap_sizes()
    threads = D.policy().lane_threads or D.policy().default_lane_threads
    sms, _ = D.device_shape(D._device_id())
    grid = D.policy().grid or sms * D.blocks_for_smem(smem, threads)
    if host_shifts is not None:
        moved = int(_swap_traffic_compiled()(np.asarray(host_shifts, np.int64).reshape(-1), n, itemsize, save))
        bound = False
    else:
        fits = (n // 2) * itemsize <= save  # the small side of any shift
        moved = (2 if fits else 4) * rows * seg
        bound = not fits
    return Step(
        axis, 0, rows, seg, 0, itemsize,
        algorithm="lane-swaps",
        scratch_bytes=0,
        bytes_moved=moved,
        params=LaneSwapsParams(
            block=threads,
            grid=max(1, min(grid, rows)),
            smem_bytes=smem,
            panel_bytes=panel,
            save_bytes=save,
            head0=pointer % 16,
            launches=1,
            bytes_moved_is_bound=bound,
            co_resident=False,  # a block rotates whole lanes by itself: no block waits for another
            reason="lanes longer than a block's shared memory: a block per lane, shifts read on the device "
                   "(no synchronisation); lane-chains only for at most "
                   f"{D.policy().max_chain_lanes} lanes of {D.policy().min_chain_lane_bytes >> 20} MiB or more with host shifts",
            n=n,
        ),
    )


def run_lane_swaps(target: Any, info, step, handle: int, shifts: Any, shift_stride: int, p: Any = None) -> None:
    """Launch one ``lane-swaps`` step: lane ``i`` rolled by ``shifts[i * shift_stride]`` (int64, on the
    device), a block per lane (``p``: a ``row-swaps`` step's ``params.lanes``, else the step's)."""
    p = step.params if p is None else p
    if info.pointer % 16 != p.head0:
        raise AssertionError("internal error: a lane-swaps plan run on an array at another 16-byte offset")
    scalars = (step.rows, step.seg_bytes, p.n, step.word_bytes, shift_stride, p.head0, p.save_bytes)
    compiled = R._compiled_lanes("swap", 1, p.block, 9, D._device_id(), p.panel_bytes)
    R.launch_lane_kernel(compiled, target, info, step, p, handle, shifts, scalars)


def plan_long(axis: int, rows: int, n: int, itemsize: int, pointer: int, max_scratch_bytes: Optional[int],
              host_shifts) -> Step:
    """The long-lane registry's entry, the last: takes every problem."""
    return plan_lane_swaps(axis, rows, n, itemsize, pointer, host_shifts)


LANE_RUNS = {LaneSwapsParams: run_lane_swaps}
