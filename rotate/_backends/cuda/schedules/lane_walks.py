"""``lane-walks``: ``roll_rows`` of lanes beyond a block's shared memory in one pass, each lane walked in
chain order by one block.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from ...._schedules import gries_mills
from ...._schedules import walks as SW
from ...._core.plan import Params, Step, internal
from .. import device as D
from .. import runtime as R
from ..kernels.memops import SIMULATED


@dataclass(frozen=True, eq=False)
class LaneWalksParams(Params):
    """``lane-walks`` (``kernels.walks.walk_kernel``): a block walks each of its lanes in chain order, one pass."""

    # A block rotates whole lanes by itself: no block waits for another.
    CONSTANTS = (("schedule", "lane-walks"), ("launches", 1), ("bytes_moved_is_bound", True),
                 ("co_resident", False),
                 ("reason", "lanes longer than a block's shared memory: a block walks each of its lanes in chain "
                            "order (one pass), pre-reading into its share of scratch or, over it, the launch's "
                            "pool; block swaps for a lane whose pre-reads fit neither"))
    block: int
    grid: int
    smem_bytes: int
    tile_bytes: tuple  # the smallest and largest tile a lane may take
    buffers: int
    max_tiles: int
    min_blocks: int
    share_bytes: int
    pool_bytes: int
    save_bytes: int
    panel_bytes: int
    head0: int
    n: int = internal()


def _walk_limits(seg: Optional[int] = None):
    """``(tile_bytes, max_tiles, buffers)`` of ``lane-walks`` for lanes of ``seg`` bytes under the current
    settings: by default the wide tiles (``kernels.walks.WALK_WIDE_TILE_BYTES``) for lanes from
    ``walk_wide_min_lane_bytes`` that fit their most tiles, else ``default_walk_tile_bytes``."""
    tile, max_tiles = D.policy().walk_tile_bytes, D.policy().walk_max_tiles
    if tile is None and max_tiles is None and seg is not None and seg >= D.policy().walk_wide_min_lane_bytes:
        tile_lo, tile_hi = SW.walk_tile_range(seg, D.policy().walk_wide_tile_bytes, D.policy().walk_wide_max_tiles)
        if tile_lo <= tile_hi:
            tile, max_tiles = D.policy().walk_wide_tile_bytes, D.policy().walk_wide_max_tiles
    tile = tile or D.policy().default_walk_tile_bytes
    max_tiles = max_tiles or D.policy().default_walk_max_tiles
    buffers = D.policy().walk_buffers or D.policy().default_walk_buffers
    if int(tile) != tile or tile < 32 or tile % 16:
        raise ValueError(f"GPU setting walk_tile_bytes must be a multiple of 16 from 32, got {tile!r}")
    if buffers not in (2, 3, 4):
        raise ValueError(f"GPU setting walk_buffers must be 2, 3 or 4, got {buffers!r}")
    if int(max_tiles) != max_tiles or max_tiles < 2:
        raise ValueError(f"GPU setting walk_max_tiles must be an integer >= 2, got {max_tiles!r}")
    return int(tile), int(max_tiles), int(buffers)


@functools.lru_cache(maxsize=1)
def _walk_traffic_compiled():
    import numba

    @numba.njit(cache=True)
    def traffic(shifts, n, item, head0, tile_max, max_tiles, reach, share, pool, save):
        """Bytes ``lane-walks`` moves for these shifts: its decisions, lane by lane, as the kernel takes them
        (the pool asked in lane order, the order of the tickets)."""
        seg = n * item
        total = 0
        walked = 0
        used = 0
        for lane in range(shifts.shape[0]):
            s = shifts[lane] % n
            k = ((n - s) % n) * item
            tile = 0
            spans = 0
            if k != 0:
                tile, _, spans = SW.walk_decision(seg, k, (head0 + lane * seg) % 16, tile_max, max_tiles, reach,
                                                 share, pool - used)
            if spans > share:  # asked of the pool, whether it fitted or not
                used += spans
            if tile:
                moved = 2 * seg + 2 * spans
                walked += 1
            else:
                moved = max(2 * seg, gries_mills.swap_traffic(seg, k, save))
            total += moved
        return total, walked

    return traffic


def walk_traffic(step: Step, shifts) -> tuple:
    """``(bytes, lanes walked)``: what a ``lane-walks`` step moves for these shifts (host integers, one a
    lane, numpy.roll's direction), replaying the kernel's decisions lane by lane (compiled for the CPU).
    The plan itself reports a bound; benchmarks and tests take the exact count here. Exact while the pool
    holds every lane over its share; once it runs short, which lanes take block swaps depends on the
    order blocks reach it (counted here in lane order, the order of the tickets)."""
    p = step.params
    if not isinstance(p, LaneWalksParams):
        raise ValueError(f"walk_traffic takes a lane-walks step, got {step.algorithm!r}")
    moved, walked = _walk_traffic_compiled()(np.asarray(shifts, np.int64).reshape(-1), p.n, step.word_bytes,
                                             p.head0, p.tile_bytes[1], p.max_tiles, p.buffers - 1,
                                             p.share_bytes, p.pool_bytes, p.save_bytes)
    return int(moved), int(walked)


def plan_lane_walks(axis: int, rows: int, n: int, itemsize: int, pointer: int,
                    max_scratch_bytes: Optional[int] = None, host_shifts=None) -> Optional[Step]:
    """``roll_rows`` of lanes beyond a block's shared memory in one pass: ``lane-walks``; None when a lane
    would have more than ``kernels.walks.WALK_MAX_TILES`` tiles of the walk's smallest size (``_walk_limits``).

    A block takes whole lanes (by ticket), picks each lane's tile size and
    chain step, pre-reads the bytes its look-ahead cannot hold into its share
    of scratch (or, over it, into the launch's pool while it lasts), and
    writes the tiles in chain order (rotate/_backends/cuda/kernels/walks.py ``walk_kernel``).
    No block waits for another. A lane whose pre-reads fit neither takes
    ``lane-swaps``' steps in the same launch.
    ``bytes_moved`` is a bound (4N, every lane by block swaps) whether the
    shifts are on the host or the device: the exact count replays every
    lane's choice (``walk_traffic``, about 90 us a 4 MiB lane on the CPU),
    which a call should not pay for a statistic.
    """
    from ..kernels import walks

    seg = n * itemsize
    tile_max, max_tiles, buffers = _walk_limits(seg)
    tile_lo, tile_hi = SW.walk_tile_range(seg, tile_max, max_tiles)
    if tile_lo > tile_hi:
        return None
    threads = D.policy().lane_threads or D.policy().default_lane_threads
    panel = int(D.policy().swap_panel_bytes)
    save = D.policy().swap_save_bytes
    save = walks.walk_save_bytes(panel) if save is None else int(save)
    smem = walks.walk_smem_bytes(tile_max, buffers, max_tiles, panel, save, threads)
    if smem > D.policy().max_block_smem:
        raise ValueError(f"GPU settings walk_tile_bytes={tile_max}, walk_buffers={buffers}, walk_max_tiles="
                         f"{max_tiles} need {smem} bytes of shared memory a block, more than {D.policy().max_block_smem}; "
                         f"choose smaller ones")
    sms, _ = D.device_shape(D._device_id())
    min_blocks = D.policy().walk_min_blocks
    if min_blocks is not None and (int(min_blocks) != min_blocks or not 1 <= min_blocks <= 2048 // threads):
        raise ValueError(f"GPU setting walk_min_blocks must be an integer from 1 to {2048 // threads}, "
                         f"got {min_blocks!r}")
    resident = D.blocks_for_smem(smem, threads)
    if min_blocks is not None:
        resident = min(resident, int(min_blocks))
    grid = max(1, min(D.policy().grid or sms * resident, rows))
    share = D.policy().walk_share_bytes
    if share is None:
        share = int(seg * (D.policy().walk_share_one_lane if rows <= grid else D.policy().walk_share))
        if max_scratch_bytes is not None:
            share = min(share, max_scratch_bytes // grid)
    share = int(share) // 16 * 16
    if share < 0:
        raise ValueError(f"GPU setting walk_share_bytes must be >= 0, got {D.policy().walk_share_bytes!r}")
    pool = D.policy().walk_pool_bytes
    if pool is None:
        pool = int(rows * seg * D.policy().walk_pool)
        if max_scratch_bytes is not None:
            pool = min(pool, max(0, max_scratch_bytes - grid * share))
    pool = int(pool) // 16 * 16
    if pool < 0:
        raise ValueError(f"GPU setting walk_pool_bytes must be >= 0, got {D.policy().walk_pool_bytes!r}")
    return Step(
        axis, 0, rows, seg, 0, itemsize,
        algorithm="lane-walks",
        scratch_bytes=grid * share + pool,
        bytes_moved=4 * rows * seg,
        params=LaneWalksParams(
            block=threads,
            grid=grid,
            smem_bytes=smem,
            tile_bytes=(tile_lo, tile_hi),
            buffers=buffers,
            max_tiles=max_tiles,
            min_blocks=int(min_blocks or 1),
            share_bytes=share,
            pool_bytes=pool,
            save_bytes=save,
            panel_bytes=panel,
            head0=pointer % 16,
            n=n,
        ),
    )


def run_lane_walks(target: Any, info, step, handle: int, shifts: Any, shift_stride: int, p: Any = None) -> None:
    """Launch one ``lane-walks`` step: lane ``i`` rolled by ``shifts[i * shift_stride]`` (int64, on the
    device), lanes by ticket, each block with its share of scratch and the launch's pool after them
    (``p``: a ``row-walks`` step's ``params.lanes``, else the step's)."""
    p = step.params if p is None else p
    if info.pointer % 16 != p.head0:
        raise AssertionError("internal error: a lane-walks plan run on an array at another 16-byte offset")
    device = D._device_id()
    entry = R.scratch_for(handle, device)
    _, pre, counters, _ = entry.reserve(0, step.scratch_bytes)
    scalars = (step.rows, step.seg_bytes, p.n, step.word_bytes, shift_stride, p.head0, p.share_bytes, p.pool_bytes,
               p.save_bytes)
    kernel, cu_kernel = R._compiled_lanes("walk", p.tile_bytes[1], p.block, 13, device, p.panel_bytes, p.buffers,
                                        group=p.max_tiles, min_blocks=p.min_blocks)
    if SIMULATED:
        data = R._sim_bytes(target, step.rows * step.seg_bytes)
        flat = getattr(shifts, "_ary", shifts).reshape(-1)
        kernel[p.grid, p.block, 0, p.smem_bytes](data, flat, pre, counters, *scalars)
        return
    R._launch_core(handle, p.grid, p.block, p.smem_bytes, cu_kernel, info.pointer, R._address(shifts),
                 entry.addresses[0], entry.addresses[2], *scalars)


LANE_RUNS = {LaneWalksParams: run_lane_walks}


def plan_long(axis: int, rows: int, n: int, itemsize: int, pointer: int, max_scratch_bytes: Optional[int],
              host_shifts) -> Optional[Step]:
    """The long-lane registry's entry: ``lane-walks`` where the tuning's ``long_lanes`` asks for walks, or
    (None) for lanes of ``walk_min_lane_bytes`` or more that a walk can take; else None (``lane-swaps``)."""
    choice = D.policy().long_lanes
    if choice not in (None, "walks", "swaps"):
        raise ValueError(f"GPU setting long_lanes must be 'walks', 'swaps' or None, got {choice!r}")
    seg = n * itemsize
    if choice == "walks" or (choice is None and seg >= D.policy().walk_min_lane_bytes):
        step = plan_lane_walks(axis, rows, n, itemsize, pointer, max_scratch_bytes, host_shifts)
        if step is not None:
            return step
        if choice == "walks":
            raise ValueError(f"GPU setting long_lanes='walks' cannot take lanes of {seg} bytes: a walk has at "
                             f"most {_walk_limits(seg)[1]} tiles; use long_lanes=None")
    return None
