"""``chain``: the flag-chained persistent kernel (``kernels.chain.chain_kernel``) for one shift, one pass plus
pre-reads; its tile, ring, chain step, lane length and plan table, and its launch.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from ...._schedules import chain as S
from ...._core.plan import Params, Step, internal
from .. import tuning
from ..kernels import chain as K
from .. import device as D
from .. import runtime as R
from ..kernels.memops import SIMULATED


@dataclass(frozen=True, eq=False)
class ChainParams(Params):
    """``chain``: the flag-chained persistent kernel (``kernels.chain.chain_kernel``), one pass plus pre-reads."""

    CONSTANTS = (("schedule", "chain"),)
    tile_bytes: int
    block: int  # the data threads and the control warps
    control_warp: bool
    pipeline: bool
    decode: str
    buffers: int
    min_blocks: int
    grid: int
    chain_step: int
    lane_steps: int
    lanes: int
    pre_read_bytes: int
    head0: int  # the rows' offset from a 16-byte boundary, which the table's tile grid is cut for
    # False: every wait is on an earlier (lane, step), any residency finishes; True: waits on earlier
    # (step, lane) keys, one block a lane, launched cooperatively (all resident).
    co_resident: bool
    table: np.ndarray = internal()
    scratch_row: int = internal()
    heads: int = internal()
    lanes_row: int = internal()
    m_max: int = internal()
    pre_row: int = internal()


def chain_control_warp(short: bool = False) -> bool:
    """Whether a chain step's block has control warps (the "pipeline" and "control-warp" variants).

    The default, "pipeline", has them for every shift: its producer and
    decoder warps ran every gate shift 3-12 points faster than the variants
    "auto" picks (docs/results/chain-ab-pipeline-h200.jsonl). Under "auto" a
    one-tile step (``short``: shifts shorter than a tile) runs "single".
    """
    variant = _chain_variant()
    return variant in ("control-warp", "pipeline") or (variant == "auto" and not short)


def _chain_variant() -> str:
    """The chain kernel variant that runs: the setting, or the default ("pipeline", which needs
    Hopper's bulk copies: an older GPU runs "auto" unless "pipeline" was asked for by name)."""
    variant = D.policy().chain_variant or D.policy().default_chain_variant
    if variant not in ("control-warp", "pipeline", "single", "auto"):
        raise ValueError(f"chain_variant must be 'control-warp', 'pipeline', 'single', 'auto' or None, "
                         f"got {variant!r}")
    if variant == "pipeline":
        capability = D.device_capability(D._device_id())
        if capability < tuning.PIPELINE_MIN_CAPABILITY:
            if D.policy().chain_variant == "pipeline":
                raise ValueError(
                    f"chain_variant='pipeline' needs a GPU of compute capability "
                    f"{'.'.join(map(str, tuning.PIPELINE_MIN_CAPABILITY))} or newer (bulk copies, mbarrier transaction "
                    f"counts); this one is {'.'.join(map(str, capability))}: use 'auto' or None")
            return "auto"
    return variant


def chain_threads() -> int:
    """Data threads of a chain kernel block (the tuning's ``threads``, or the variant's default)."""
    if D.policy().threads:
        return int(D.policy().threads)
    return D.policy().pipeline_threads if chain_pipeline() else D.policy().default_threads


def chain_pipeline() -> bool:
    """Whether chain steps run the pipelined variant: a producer thread bulk-copies sources and clears
    waits, data warps write with no block barrier (``kernels.chain.chain_kernel(pipeline=True)``)."""
    return _chain_variant() == "pipeline"


def _chain_decode() -> str:
    decode = D.policy().chain_decode
    if decode not in ("runs", "direct"):
        raise ValueError(f"chain_decode must be 'runs' or 'direct', got {decode!r}")
    return decode


def blocks_per_sm(tile_bytes: int, threads: int, buffers: int, control_warp: bool = False) -> int:
    """Blocks of the chain kernel that fit an SM at once: what ``launch_bounds`` asks ptxas for.

    Shared memory sets the first bound; registers the second: the kernel's
    thread-0 bookkeeping would take 180 registers a thread if let, which
    leaves one 256-thread block per SM, so ptxas is asked to fit
    the tuning's ``min_blocks`` (default: up to 3, 80 registers; more spill
    the bookkeeping).
    """
    _, smem_per_sm = D.device_shape(D._device_id())
    block = threads + K.control_threads(control_warp, control_warp and chain_pipeline())
    per_block = K.smem_bytes(tile_bytes, buffers, control_warp) + 1024  # 1 KiB the driver reserves per block
    fit = max(1, min(smem_per_sm // per_block, 2048 // block, 32))
    wanted = D.policy().min_blocks or 3
    return max(1, min(fit, wanted, 65536 // (block * 32)))


def persistent_grid(tile_bytes: int, threads: int, buffers: int, control_warp: bool = False) -> int:
    """Blocks that fit on the GPU at once: the persistent grid.

    Blocks beyond what fits only wait for a free SM; they never deadlock
    (every wait is on an earlier lane), they only queue.
    """
    if D.policy().grid:
        return int(D.policy().grid)
    sms, _ = D.device_shape(D._device_id())
    return sms * blocks_per_sm(tile_bytes, threads, buffers, control_warp)


def chain_layout(n: int, k: int, heads, tile_bytes: int, chain: int, lane_steps: int, ring: int,
                 co_resident: bool = False):
    """The plan table (``S.table_stride`` int64 per head) and the scratch bytes one row needs (max over heads).

    Returns ``(None, 0)`` when a tile has more runs than the kernel decodes.
    """
    layout = S.compiled_table_builders()[0]
    stride = S.table_stride(S.max_tiles(n, tile_bytes))
    # Padded: the kernel reads entries 16 at a time, aligned (``ENTRY_BATCH``).
    table = np.zeros(stride * len(heads) + K.ENTRY_BATCH, np.int64)
    row_bytes = 0
    for index, head in enumerate(heads):
        head_bytes = layout(n, k, head, tile_bytes, chain, lane_steps, ring, int(co_resident), table, stride * index)
        if head_bytes < 0:
            return None, 0
        row_bytes = max(row_bytes, head_bytes)
    return table, S.align_up(row_bytes)


def pre_tickets_per_row(table: np.ndarray, n: int, tile_bytes: int) -> int:
    """The pre-read tickets reserved per row: the most any head's row needs (``S.pre_row_tickets``)."""
    m_max = S.max_tiles(n, tile_bytes)
    return S.pre_tickets_per_row(table, m_max, (len(table) - K.ENTRY_BATCH) // S.table_stride(m_max))


def _heads(rows: int, seg: int, head0: int):
    """The 16-byte offsets the rows start at: one, or all 16 (the table is indexed by head then)."""
    if rows == 1 or seg % 16 == 0:
        return (head0,)
    return tuple(range(16))


def even_lane_steps(rows: int, m_max: int, shortest: int, longest: int, sms: int) -> np.ndarray:
    """The lane lengths in ``[shortest, longest]`` whose lane count fills the SMs evenly
    (the tuning's ``co_resident_even_slack``), at least two blocks an SM (one leaves too few bytes in flight)."""
    steps = np.arange(shortest, longest + 1, dtype=np.int64)
    lanes = rows * -(-m_max // steps)
    per_sm = -(-lanes // sms)
    even = (per_sm >= 2) & (lanes >= per_sm * sms - int(D.policy().co_resident_even_slack * sms))
    return steps[even]


def co_resident_lane_steps(rows: int, seg: int, left: int, head: int, tile_bytes: int, chain: int, buffers: int,
                           grid: int, cap: int, far: bool = False):
    """``(lane_steps, pre_bytes)`` of a co-resident plan's lanes, or None.

    Every lane needs a resident block of its own, so lanes are at least
    ``S0 = ceil(m / (grid // rows))`` steps. Longer lanes (fewer blocks)
    are scanned too, because which lengths leave a piece's writer at a later
    step than its reader depends on the shift. ``far`` False: the length up
    to ``co_resident_near * S0`` that pre-reads least. ``far`` True (the
    planner asks only when no configuration fitted ``cap`` otherwise): the
    shortest length up to ``co_resident_scan * S0`` that fits, failing that
    the one that pre-reads least. Both rules are the measured ones
    (docs/tuning.md, "GPU: co-resident chains"). A far scan
    that prefers fewer pre-reads over more lanes lost 3-4 points: lanes for
    97% of the resident blocks with 8.5 MB of pre-reads ran at 85% of
    memcpy, lanes for 40% with 6.6 MB at 82%, 82% with 14.5 MB at 76% and
    51% with 5.7 MB at 72% (docs/results/co-resident-scan-1g-h200.log).
    """
    lanes_row = grid // rows
    m_max = S.max_tiles(seg, tile_bytes)
    if lanes_row < 2 or m_max < 4:
        return None
    shortest = S.ceil_div(m_max, lanes_row)
    if S.ceil_div(m_max, shortest) < 2:
        return None

    def fitting(pre):  # spans are 16-byte aligned at both ends; the flags take 8 bytes a tile
        return np.flatnonzero(rows * (pre + 32 * m_max) + 8 * rows * m_max + 64 <= cap)

    # One scan for both sets (each scan first walks the whole row): the lengths that load every SM alike,
    # over the far scan's range, and the near (or far) scan's range.
    sms = D.device_shape(D._device_id())[0]
    even = even_lane_steps(rows, m_max, shortest, max(shortest, int(shortest * D.policy().co_resident_scan)), sms)
    reach = D.policy().co_resident_scan if far else D.policy().co_resident_near
    near = np.arange(shortest, max(shortest, int(shortest * reach)) + 1, dtype=np.int64)
    candidates = np.union1d(near, even).astype(np.int64)
    scanned = np.empty(len(candidates), np.int64)
    S.compiled_table_builders()[2](seg, left, head, tile_bytes, chain, buffers, 1, candidates, scanned)
    # First the even lengths that fit: the most blocks an SM, then the fewest pre-reads.
    pre = scanned[np.searchsorted(candidates, even)]
    fits = fitting(pre)
    if len(fits):
        per_sm = -(-(rows * -(-m_max // even[fits])) // sms)
        best = int(fits[np.lexsort((pre[fits], -per_sm))[0]])
        return int(even[best]), int(pre[best])
    pre = scanned[np.searchsorted(candidates, near)]
    fits = fitting(pre)
    best = int(fits[0]) if far and len(fits) else int(np.argmin(pre))
    return int(near[best]), int(pre[best])


def plan_chain(rows: int, seg: int, left: int, head0: int, cap: int):
    """The cheapest chain configuration within ``cap`` scratch bytes, or None (``_plan_chain``; where none
    fits, co-resident plans with the far lane scan, ``co_resident_lane_steps``)."""
    best = _plan_chain(rows, seg, left, head0, cap, far=False)
    if best is None and D.cooperative_launch() and not D.policy().lane_steps:
        best = _plan_chain(rows, seg, left, head0, cap, far=True)
    return best


def _plan_chain(rows: int, seg: int, left: int, head0: int, cap: int, far: bool):
    """The cheapest chain configuration within ``cap`` scratch bytes, or None.

    Candidates: the chain step (``k // T`` or one more: the tile that item
    reads most of comes next), the ring depth, and the tile size; the lane
    length gives every resident block a lane. Where a cooperative launch is
    available, each also as a *co-resident* plan (one block a lane, waits on
    later lanes at earlier steps) with the lane length ``co_resident_lane_steps``
    picks (``far``: co-resident plans only, from the far scan).
    """
    T = D.policy()  # the policy, resolved once for the whole search
    threads = chain_threads()
    heads = _heads(rows, seg, head0)
    tile_sizes = [T.tile_bytes]
    if T.tile_bytes >= 32 * 1024:
        tile_sizes.append(T.tile_bytes // 2)
    co_resident_ok = D.cooperative_launch()
    # Costs first (``count_kinds``: one walk of the row), plan tables only for the cheapest: a table
    # layout is the planner's slowest step, and only the cheapest configuration that fits is used.
    priced = []
    for tile_bytes in tile_sizes:
        rings = [T.buffers] + [b for b in (3, 4) if b > T.buffers and
                                          K.smem_bytes(tile_bytes, b) <= 110 * 1024]
        for buffers in rings:
            m_max = S.max_tiles(seg, tile_bytes)
            m0 = S.tile_count(seg, heads[0], tile_bytes)
            q = left // tile_bytes
            for chain in sorted({max(1, q), q + 1}):
              control_warp = chain_control_warp(short=S.chain_step(m0, chain) in (1, m0 - 1))
              min_blocks = blocks_per_sm(tile_bytes, threads, buffers, control_warp)
              grid = persistent_grid(tile_bytes, threads, buffers, control_warp)
              lanes_wanted = max(1, S.ceil_div(grid, rows))  # every resident block gets a lane
              per_block = max(1, S.ceil_div(m_max, lanes_wanted))
              # One lane a resident block, for short shifts too: lanes of one
              # tile (a band) cost a ticket and a wait on the neighbouring lane
              # every item, 6 points more than long lanes once the decoding
              # left the critical path (docs/results/chain-probe-7-describe-ahead.json).
              candidates = [] if far else [(T.lane_steps or per_block, False)]
              if co_resident_ok and not T.lane_steps:
                  found = co_resident_lane_steps(rows, seg, left, heads[0], tile_bytes, chain, buffers, grid, cap,
                                                 far)
                  if found is not None:
                      candidates.append((found[0], True))
              for lane_steps, co_resident in candidates:
                  _, waited, ringed, pre = S.compiled_table_builders()[1](seg, left, heads[0], tile_bytes, chain,
                                                                          lane_steps, buffers, int(co_resident))
                  if rows * pre + 8 * rows * m_max + 64 > cap:
                      continue  # its spans cover at least its PRE bytes: it cannot fit
                  lanes = rows * S.lanes_per_row(seg, tile_bytes, lane_steps)
                  # Cost in bytes of traffic: pre-reads move their bytes twice more;
                  # a RING wait stalls the block until its own copies land (part of
                  # its overlap is lost); a WAIT polls another lane's flag.
                  cost = rows * (2 * pre + ringed // 2 + waited // 16)
                  # Each item costs thread 0 a fixed decode and wait on the block's
                  # critical path, whatever its size: larger tiles, fewer items.
                  cost += rows * m0 * T.item_cost_bytes
                  # One block an SM leaves too few bytes in flight to stream; two
                  # with three 32 KiB buffers beat three with two (docs/tuning.md, "BUFFERS").
                  cost += rows * seg * {1: 50}.get(min_blocks, 0) // 100
                  if co_resident:
                      # A co-resident plan's lanes may leave resident blocks idle (reasoned, not
                      # measured: a quarter of the idle share's bytes).
                      cost += rows * seg * max(0, grid - lanes) // (4 * grid)
                  priced.append((cost, dict(tile_bytes=tile_bytes, buffers=buffers, chain=chain,
                                            lane_steps=lane_steps, lanes_row=S.lanes_per_row(seg, tile_bytes, lane_steps),
                                            grid=grid, min_blocks=min_blocks, heads=heads, m_max=m_max,
                                            control_warp=control_warp, co_resident=co_resident)))
    # The cheapest that fits ``cap``, ties broken by (scratch, classic first, the default ring, larger tiles):
    # laid out a cost group at a time, cheapest group first.
    priced.sort(key=lambda entry: entry[0])
    start = 0
    while start < len(priced):
        end = start
        while end < len(priced) and priced[end][0] == priced[start][0]:
            end += 1
        best = None
        for cost, cfg in priced[start:end]:
            table, row_bytes = chain_layout(seg, left, heads, cfg["tile_bytes"], cfg["chain"], cfg["lane_steps"],
                                            cfg["buffers"], cfg["co_resident"])
            if table is None or rows * row_bytes + 8 * rows * cfg["m_max"] + 64 > cap:
                continue
            score = (rows * row_bytes, cfg["co_resident"], cfg["buffers"] != T.buffers, -cfg["tile_bytes"])
            if best is None or score < best[0]:
                best = (score, dict(cfg, scratch_row=row_bytes, table=table))
        if best is not None:
            return best[1]
        start = end
    return None


def plan(axis, shift, rows, seg, left, word, pointer, cap) -> Optional[Step]:
    """The chain within ``cap``; where the caller gave no bound (``D.DefaultBound``) and the pre-reads pass
    it, within ``chain_default_share`` of the array, before block swaps move 4N (docs/tuning.md)."""
    step = chain_step(axis, shift, rows, seg, left, word, pointer % 16, cap)
    if step is None and isinstance(cap, D.DefaultBound):
        grown = int(rows * seg * D.policy().chain_default_share)
        if grown > cap:
            step = chain_step(axis, shift, rows, seg, left, word, pointer % 16, grown)
    return step


def chain_step(axis, shift, rows, seg, left, word, head0, cap) -> Optional[Step]:
    cfg = plan_chain(rows, seg, left, head0, cap)
    if cfg is not None:
        pre_bytes = rows * int(cfg["scratch_row"])
        return Step(
            axis, shift, rows, seg, left, word,
            algorithm="chain",
            scratch_bytes=pre_bytes + 8 * rows * cfg["m_max"] + 64,
            bytes_moved=2 * rows * seg + 2 * pre_bytes,
            params=ChainParams(
                tile_bytes=cfg["tile_bytes"],
                block=chain_threads() + K.control_threads(cfg["control_warp"], chain_pipeline()),
                control_warp=cfg["control_warp"],
                pipeline=chain_pipeline(),
                decode=_chain_decode(),
                buffers=cfg["buffers"],
                min_blocks=cfg["min_blocks"],
                grid=min(cfg["grid"], rows * cfg["lanes_row"]),
                chain_step=cfg["chain"],
                lane_steps=cfg["lane_steps"],
                lanes=rows * cfg["lanes_row"],
                pre_read_bytes=pre_bytes,
                head0=head0,
                co_resident=cfg["co_resident"],
                table=cfg["table"],
                scratch_row=cfg["scratch_row"],
                heads=len(cfg["heads"]),
                lanes_row=cfg["lanes_row"],
                m_max=cfg["m_max"],
                pre_row=pre_tickets_per_row(cfg["table"], seg, cfg["tile_bytes"]),
            ),
        )
    return None


def _chain_config(p: ChainParams):
    """``chain_kernel``'s arguments from a chain step's params (``block`` counts the control warps)."""
    control_warp, pipeline = bool(p.control_warp), bool(p.pipeline)
    return (p.tile_bytes, p.block - K.control_threads(control_warp, pipeline), p.buffers, p.min_blocks,
            control_warp, p.decode == "direct", pipeline, bool(p.co_resident))


@functools.lru_cache(maxsize=None)
def _compiled_chain(tile_bytes: int, threads: int, buffers: int, min_blocks: int, control_warp: bool = False,
                    direct_decode: bool = False, pipeline: bool = False, one_lane: bool = False, device: int = 0):
    """The chain kernel compiled for all-int64 arguments, and its cuda.core handle in ``device``'s context
    (numba loads the module per device: a handle from another device's context would not launch here)."""
    kernel = K.chain_kernel(tile_bytes, threads, buffers, min_blocks, control_warp, direct_decode, pipeline,
                                   one_lane)
    if SIMULATED:
        return kernel, None
    return kernel, R._int64_cufunc(kernel, 15).kernel


def run_chain(pointer: int, target: Any, step, handle: int) -> None:
    """Launch one chain step on the rows at device address ``pointer``."""
    p = step.params
    if pointer % 16 != p.head0:  # the plan table's tile grid is the address's: never run it elsewhere
        raise AssertionError(f"internal error: a chain plan for offset {p.head0} from a 16-byte boundary "
                             f"was given an array at offset {pointer % 16}")
    device = D._device_id()
    entry = R.scratch_for(handle, device)
    flags, pre, counters, epoch = entry.reserve(2 * step.rows * p.m_max, step.rows * p.scratch_row)
    if SIMULATED:
        kernel, _ = _compiled_chain(*_chain_config(p))
        data = R._sim_bytes(target, step.rows * step.seg_bytes)
        kernel[p.grid, p.block](data, pre, flags, counters, R._device_table(p.table),
                                *_chain_scalars(step, pointer), epoch)
        return
    prepared = R._prepared.get((id(step), device, handle))
    if prepared is None or prepared[0] is not step:
        prepared = _prepare_launch(step, device, handle)
    _, launch, ref, config, kernel, table_address, head_args, tail_args = prepared
    # Plain ints: cuda.core passes them as 64-bit values, every parameter here is int64.
    launch(ref, config, kernel, pointer, *entry.addresses, table_address, *head_args, pointer % 16,
           *tail_args, epoch)


def _chain_scalars(step, pointer: int):
    p = step.params
    return (step.rows, step.seg_bytes, step.left_bytes, pointer % 16, p.lane_steps, p.lanes_row, p.pre_row,
            p.scratch_row, p.heads)


def _prepare_launch(step, device: int, handle: int):
    from cuda.core import LaunchConfig, launch

    p = step.params
    _, cu_kernel = _compiled_chain(*_chain_config(p), device=device)
    ref = R.core_stream(handle)
    if p.co_resident:
        if p.grid != p.lanes:
            raise AssertionError(f"internal error: a co-resident chain plan has {p.lanes} lanes and a grid of "
                                 f"{p.grid} blocks; it needs one block a lane")
        check_co_resident(cu_kernel, p, device)
    # A co-resident plan's blocks wait on each other's later lanes: a cooperative launch makes the driver
    # start them all at once or refuse the launch (before any byte moves), never start part of them.
    config = LaunchConfig(grid=p.grid, block=p.block, is_cooperative=bool(p.co_resident))
    prepared = (step, launch, ref, config, cu_kernel, R._device_table_address(p.table),
                (step.rows, step.seg_bytes, step.left_bytes),
                (p.lane_steps, p.lanes_row, p.pre_row, p.scratch_row, p.heads))
    if len(R._prepared) > 256:
        R._prepared.clear()
    R._prepared[(id(step), device, handle)] = prepared
    return prepared


def check_co_resident(cu_kernel, p: ChainParams, device: int) -> None:
    """Raise before launching if the driver would not hold every block of a co-resident plan at once.

    The planner counts blocks from its model of the kernel's shared memory
    and registers (``blocks_per_sm``); the driver's occupancy of the
    compiled kernel is what a cooperative launch checks.
    """
    sms, _ = D.device_shape(device)
    fit = cu_kernel.occupancy.max_active_blocks_per_multiprocessor(p.block, 0) * sms
    if p.grid > fit:
        raise RuntimeError(
            f"internal error: a co-resident chain plan needs {p.grid} blocks resident at once, but the "
            f"compiled kernel fits {fit} on this GPU; plan with rotate's GPU setting co_resident=False "
            f"(rotate._backends.cuda.tuning.override(co_resident=False)) and report this")


RUNS = {ChainParams: lambda target, info, step, handle: run_chain(info.pointer, target, step, handle)}
