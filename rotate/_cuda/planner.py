"""Choosing the GPU algorithm, tile and grid for one step, without launching.

Shared by ``rotate.plan`` (to report) and ``launch`` (to run): what plan()
says is what runs.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
from typing import Optional

import numpy as np

from numba import cuda

from .. import _schedule as S
from .._plan import Step
from .._tuning import cuda as tuning
from . import _kernels
from . import params as P
from ._memops import SIMULATED

NEWEST_CAPABILITY = (99, 0)


def gries_mills(n: int, k: int, fits, max_swaps: Optional[int] = None):
    """Block swaps that reduce "rotate n bytes left by k" until ``fits(n', k')``.

    Stops after ``max_swaps + 1`` swaps when ``max_swaps`` is given (the
    caller gives up past ``max_swaps``): a shift of 1 byte would otherwise
    take ``n`` swaps, each asking ``fits``, on the host.

    Returns ``(swaps, (lo, sub_n, sub_k))``: swap ``[a, a + m)`` with
    ``[b, b + m)`` for each ``(a, b, m)`` in order, then rotate
    ``[lo, lo + sub_n)`` left by ``sub_k`` (``sub_k == 0``: done). Each swap
    puts one block in its final place (Gries and Mills, 1981).
    """
    swaps = []
    lo, sub_n, sub_k = 0, n, k
    while sub_k and not fits(sub_n, sub_k):
        if max_swaps is not None and len(swaps) > max_swaps:
            break
        a, b, m, lo, sub_n, sub_k = S.swap_step(lo, sub_n, sub_k)  # the lane-swaps kernel's step too
        swaps.append((a, b, m))
    return swaps, (lo, sub_n, sub_k)


def _t() -> tuning.CudaTuning:
    """The tuning policy plans are made with: the current device's, with the override's fields."""
    return tuning.current(device_capability(_device_id()))


@functools.lru_cache(maxsize=None)
def device_shape(device_id: int = 0):
    """(multiprocessors, shared memory per multiprocessor) of the current device."""
    dev = cuda.get_current_device()
    sms = getattr(dev, "MULTIPROCESSOR_COUNT", 2)
    smem = getattr(dev, "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR", 228 * 1024)
    return int(sms), int(smem)


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
    variant = _t().chain_variant or _t().default_chain_variant
    if variant not in ("control-warp", "pipeline", "single", "auto"):
        raise ValueError(f"chain_variant must be 'control-warp', 'pipeline', 'single', 'auto' or None, "
                         f"got {variant!r}")
    if variant == "pipeline":
        capability = device_capability(_device_id())
        if capability < tuning.PIPELINE_MIN_CAPABILITY:
            if _t().chain_variant == "pipeline":
                raise ValueError(
                    f"chain_variant='pipeline' needs a GPU of compute capability "
                    f"{'.'.join(map(str, tuning.PIPELINE_MIN_CAPABILITY))} or newer (bulk copies, mbarrier transaction "
                    f"counts); this one is {'.'.join(map(str, capability))}: use 'auto' or None")
            return "auto"
    return variant


@functools.lru_cache(maxsize=None)
def device_capability(device_id: int = 0) -> tuple:
    """The compute capability of the current device, ``(major, minor)``.

    Under the CUDA simulator (which reports 5.2 but runs every kernel
    variant) and where no device answers (planning without a GPU), the
    newest is assumed.
    """
    if SIMULATED:
        return NEWEST_CAPABILITY
    try:
        return tuple(int(v) for v in cuda.get_current_device().compute_capability)
    except Exception:
        return NEWEST_CAPABILITY


def chain_threads() -> int:
    """Data threads of a chain kernel block (the tuning's ``threads``, or the variant's default)."""
    if _t().threads:
        return int(_t().threads)
    return _t().pipeline_threads if chain_pipeline() else _t().default_threads


def chain_pipeline() -> bool:
    """Whether chain steps run the pipelined variant: a producer thread bulk-copies sources and clears
    waits, data warps write with no block barrier (``_kernels.chain_kernel(pipeline=True)``)."""
    return _chain_variant() == "pipeline"


def _chain_decode() -> str:
    decode = _t().chain_decode
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
    _, smem_per_sm = device_shape(_device_id())
    block = threads + _kernels.control_threads(control_warp, control_warp and chain_pipeline())
    per_block = _kernels.smem_bytes(tile_bytes, buffers, control_warp) + 1024  # 1 KiB the driver reserves per block
    fit = max(1, min(smem_per_sm // per_block, 2048 // block, 32))
    wanted = _t().min_blocks or 3
    return max(1, min(fit, wanted, 65536 // (block * 32)))


def persistent_grid(tile_bytes: int, threads: int, buffers: int, control_warp: bool = False) -> int:
    """Blocks that fit on the GPU at once: the persistent grid.

    Blocks beyond what fits only wait for a free SM; they never deadlock
    (every wait is on an earlier lane), they only queue.
    """
    if _t().grid:
        return int(_t().grid)
    sms, _ = device_shape(_device_id())
    return sms * blocks_per_sm(tile_bytes, threads, buffers, control_warp)


def _device_id() -> int:
    """The current CUDA device's ordinal.

    Asked of the driver directly (``cuCtxGetDevice``): numba's
    ``get_current_device`` takes an uncached path when another library (torch,
    CuPy) made the context, which the profile of a 4 KiB roll showed as a
    quarter of its host time (twice a call). Falls back to numba.
    """
    if not SIMULATED:
        try:
            err, device = _ctx_get_device()()
            if int(err) == 0:
                return int(device)
        except Exception:
            pass
    try:
        return int(cuda.get_current_device().id)
    except Exception:
        return 0


@functools.lru_cache(maxsize=1)
def _ctx_get_device():
    from cuda.bindings import driver

    return driver.cuCtxGetDevice


def chain_layout(n: int, k: int, heads, tile_bytes: int, chain: int, lane_steps: int, ring: int,
                 co_resident: bool = False):
    """The plan table (``S.table_stride`` int64 per head) and the scratch bytes one row needs (max over heads).

    Returns ``(None, 0)`` when a tile has more runs than the kernel decodes.
    """
    layout = S.compiled_table_builders()[0]
    stride = S.table_stride(S.max_tiles(n, tile_bytes))
    # Padded: the kernel reads entries 16 at a time, aligned (``ENTRY_BATCH``).
    table = np.zeros(stride * len(heads) + _kernels.ENTRY_BATCH, np.int64)
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
    return S.pre_tickets_per_row(table, m_max, (len(table) - _kernels.ENTRY_BATCH) // S.table_stride(m_max))


def _heads(rows: int, seg: int, head0: int):
    """The 16-byte offsets the rows start at: one, or all 16 (the table is indexed by head then)."""
    if rows == 1 or seg % 16 == 0:
        return (head0,)
    return tuple(range(16))




def even_lane_steps(rows: int, m_max: int, shortest: int, longest: int, sms: int) -> np.ndarray:
    """The lane lengths in ``[shortest, longest]`` whose lane count fills the SMs evenly
    (``CO_RESIDENT_EVEN_SLACK``), at least two blocks an SM (one leaves too few bytes in flight)."""
    steps = np.arange(shortest, longest + 1, dtype=np.int64)
    lanes = rows * -(-m_max // steps)
    per_sm = -(-lanes // sms)
    even = (per_sm >= 2) & (lanes >= per_sm * sms - int(_t().co_resident_even_slack * sms))
    return steps[even]


def cooperative_launch() -> bool:
    """Whether chain plans may be co-resident: a real GPU (the simulator runs blocks one after another),
    the tuning's ``co_resident``, and a cuda.core that launches cooperatively (``is_cooperative``)."""
    if SIMULATED or not _t().co_resident:
        return False
    return _cooperative_config()


@functools.lru_cache(maxsize=1)
def _cooperative_config() -> bool:
    try:
        from cuda.core import LaunchConfig

        LaunchConfig(grid=1, block=32, is_cooperative=True)
        return True
    except Exception:
        return False


def co_resident_lane_steps(rows: int, seg: int, left: int, head: int, tile_bytes: int, chain: int, buffers: int,
                           grid: int, cap: int, far: bool = False):
    """``(lane_steps, pre_bytes)`` of a co-resident plan's lanes, or None.

    Every lane needs a resident block of its own, so lanes are at least
    ``S0 = ceil(m / (grid // rows))`` steps. Longer lanes (fewer blocks)
    are scanned too, because which lengths leave a piece's writer at a later
    step than its reader depends on the shift. ``far`` False: the length up
    to ``CO_RESIDENT_NEAR * S0`` that pre-reads least. ``far`` True (the
    planner asks only when no configuration fitted ``cap`` otherwise): the
    shortest length up to ``CO_RESIDENT_SCAN * S0`` that fits, failing that
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
    sms = device_shape(_device_id())[0]
    even = even_lane_steps(rows, m_max, shortest, max(shortest, int(shortest * _t().co_resident_scan)), sms)
    reach = _t().co_resident_scan if far else _t().co_resident_near
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
    if best is None and cooperative_launch() and not _t().lane_steps:
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
    T = _t()  # the policy, resolved once for the whole search
    threads = chain_threads()
    heads = _heads(rows, seg, head0)
    tile_sizes = [T.tile_bytes]
    if T.tile_bytes >= 32 * 1024:
        tile_sizes.append(T.tile_bytes // 2)
    co_resident_ok = cooperative_launch()
    # Costs first (``count_kinds``: one walk of the row), plan tables only for the cheapest: a table
    # layout is the planner's slowest step, and only the cheapest configuration that fits is used.
    priced = []
    for tile_bytes in tile_sizes:
        rings = [T.buffers] + [b for b in (3, 4) if b > T.buffers and
                                          _kernels.smem_bytes(tile_bytes, b) <= 110 * 1024]
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


def default_cap(rows: int, seg: int) -> int:
    return max(rows * seg // _t().scratch_fraction, _t().min_scratch)


#: The GPU schedules in order of preference: ``(name, plan)``, where
#: ``plan(axis, shift, rows, seg, left, word, pointer, cap)`` returns a Step
#: or None when the schedule cannot take the problem within ``cap`` bytes of
#: scratch. ``launch.RUNNERS`` holds the runner of each step's params type
#: (``rotate/_cuda/params.py``); the last schedule takes every problem.
SCHEDULES: list = []


def register_schedule(name: str, plan, before: Optional[str] = None) -> None:
    """Add a schedule (before the one named ``before``, else last)."""
    names = [entry[0] for entry in SCHEDULES]
    if name in names:
        raise ValueError(f"a GPU schedule named {name!r} is already registered")
    SCHEDULES.insert(names.index(before) if before in names else len(SCHEDULES), (name, plan))


def plan_step(axis, shift, rows, seg, left, word, pointer, max_scratch_bytes: Optional[int]) -> Step:
    """Plan rotating ``rows`` segments of ``seg`` bytes left by ``left`` bytes, the first at ``pointer``."""
    cap = default_cap(rows, seg) if max_scratch_bytes is None else max_scratch_bytes
    for name, plan in SCHEDULES:
        step = plan(axis, shift, rows, seg, left, word, pointer, cap)
        if step is not None:
            return step
    raise AssertionError("the last GPU schedule takes every problem")  # pragma: no cover


def _plan_chain_schedule(axis, shift, rows, seg, left, word, pointer, cap) -> Optional[Step]:
    return _chain_step(axis, shift, rows, seg, left, word, pointer % 16, cap)


def _chain_step(axis, shift, rows, seg, left, word, head0, cap) -> Optional[Step]:
    cfg = plan_chain(rows, seg, left, head0, cap)
    if cfg is not None:
        pre_bytes = rows * int(cfg["scratch_row"])
        return Step(
            axis, shift, rows, seg, left, word,
            algorithm="chain",
            scratch_bytes=pre_bytes + 8 * rows * cfg["m_max"] + 64,
            bytes_moved=2 * rows * seg + 2 * pre_bytes,
            params=P.ChainParams(
                tile_bytes=cfg["tile_bytes"],
                block=chain_threads() + _kernels.control_threads(cfg["control_warp"], chain_pipeline()),
                control_warp=cfg["control_warp"],
                pipeline=chain_pipeline(),
                bulk_store=chain_pipeline() and bool(_t().chain_bulk_store),
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


def _plan_block_swap(axis, shift, rows, seg, left, word, pointer, cap) -> Optional[Step]:
    # The pre-reads do not fit the scratch bound. Block swaps (Gries-Mills)
    # shrink the problem until they do, then the chain schedule finishes it;
    # when that takes too many passes (or rows), three reversals: no scratch, 4N.
    if rows <= _t().max_swap_rows:
        swaps, (lo, sub_n, sub_k) = gries_mills(seg, left, lambda n, k: plan_chain(1, n, k, 0, cap) is not None,
                                                _t().max_swap_passes)
        if len(swaps) <= _t().max_swap_passes:
            # Every row runs its own final chain step: rows whose start sits at
            # another offset from a 16-byte boundary need a plan for that offset.
            finals = {}
            if sub_k:
                for row in range(min(rows, 16)):
                    head = (pointer + row * seg + lo) % 16
                    if head not in finals:
                        finals[head] = _chain_step(axis, shift, 1, sub_n, sub_k, word, head, cap)
                        if finals[head] is None:
                            return None
            moved = sum(4 * m for _, _, m in swaps) + max((f.bytes_moved for f in finals.values()), default=0)
            sms, _ = device_shape(_device_id())
            return Step(
                axis, shift, rows, seg, left, word,
                algorithm="block-swap",
                scratch_bytes=max((f.scratch_bytes for f in finals.values()), default=0),
                bytes_moved=rows * moved,
                params=P.BlockSwapParams(
                    tile_bytes=_t().tile_bytes,
                    block=_t().threads or _t().default_threads,
                    grid=sms * 3,
                    swaps=tuple(swaps),
                    final=(lo, sub_n, sub_k),
                    final_steps=finals,
                    reason=f"the chain schedule's pre-reads exceed max_scratch_bytes={cap}",
                ),
            )
    return None


def _plan_reversal(axis, shift, rows, seg, left, word, pointer, cap) -> Step:
    # Three reversals: no scratch, 4N; takes every problem.
    k = left // word
    n = seg // word
    half_pairs = rows * (k // 2 + (n - k) // 2 + n // 2)
    return Step(
        axis, shift, rows, seg, left, word,
        algorithm="reversal",
        scratch_bytes=0,
        bytes_moved=4 * rows * seg,
        params=P.ReversalParams(
            block=256,
            grid=max(1, min(S.ceil_div(half_pairs, 256), device_shape(_device_id())[0] * 8)),
            reason=f"the chain schedule's pre-reads exceed max_scratch_bytes={cap}",
        ),
    )


def _plan_row_panels(axis, shift, rows, seg, left, word, pointer, cap) -> Optional[Step]:
    """Many rows shorter than a chain tile: ``lane-panels`` (the ``roll_rows`` kernel) with one shift.

    The chain kernel would make each such row an item of its own, with the
    per-item cost of a whole tile (a (2**20, 1000) uint8 roll ran at 2.5% of
    memcpy); lane-panels packs many rows into each panel (15% for those rows:
    docs/results/small-rows-32a60ab-h200.json).
    """
    if rows < 2 or seg >= _t().tile_bytes:
        return None
    step = plan_lane_panels(axis, rows, seg // word, word, pointer)
    if step is None:
        return None
    return _row_lanes_step(step, shift, seg, left, word)


def _row_lanes_step(lane_step: Step, shift: int, seg: int, left: int, word: int) -> Step:
    """A ``roll_rows`` step of the rows (one shift for every lane) as a roll step: the lanes' kernel and
    params, rolled by ``(seg - left) // word`` items."""
    params = P.RowLanesParams(lane_step.params, (seg - left) // word)
    return dataclasses.replace(lane_step, shift=shift, left_bytes=left, algorithm=params.schedule, params=params)


def _plan_row_lanes(axis, shift, rows, seg, left, word, pointer, cap) -> Optional[Step]:
    """Many long rows that neither the chain (its pre-reads pass ``cap``) nor block swaps (more than
    ``max_swap_rows`` rows, or too many passes) take: the ``roll_rows`` kernels, every row rolled by the
    same shift (``lane-panels`` where a row fits a block's shared memory, else ``lane-walks`` or
    ``lane-swaps``). Each block rotates whole rows by itself within ``cap``; ``reversal``, the fallback it
    stands before, moved 4N at 14-26% of memcpy on the H200 (docs/results/random-gpu-h200.json)."""
    if rows < 2 or seg % word:
        return None
    n = seg // word
    step = plan_lane_panels(axis, rows, n, word, pointer)
    if step is None:
        step = plan_long_lanes(axis, rows, n, word, pointer, cap)
        p = step.params
        if isinstance(p, P.LaneSwapsParams) and min(left, seg - left) <= p.save_bytes:
            # one shift for every row, its small side saved whole: one streamed pass, 2N exactly
            step = dataclasses.replace(step, bytes_moved=2 * rows * seg,
                                       params=dataclasses.replace(p, bytes_moved_is_bound=False))
    return _row_lanes_step(step, shift, seg, left, word)


def _plan_half_swap_schedule(axis, shift, rows, seg, left, word, pointer, cap) -> Optional[Step]:
    """A roll by half the segment: every row swaps its two halves (``half-swaps``)."""
    return plan_half_swaps((rows,), (0,), rows, seg, left, word, pointer, axis, shift, left)


register_schedule("half-swaps", _plan_half_swap_schedule)
register_schedule("row-panels", _plan_row_panels)
register_schedule("chain", _plan_chain_schedule)
register_schedule("block-swap", _plan_block_swap)
register_schedule("row-lanes", _plan_row_lanes)
register_schedule("reversal", _plan_reversal)


# --- per-lane shifts and one-pass multi-axis rolls (rotate/_cuda/_lanes.py) ---

def lane_unit(itemsize: int, head0: int) -> int:
    """The widest unit (1..16 bytes, a power of two) items and the array's 16-byte offset are made of."""
    unit = 16
    while unit > 1 and (itemsize % unit or head0 % unit):
        unit //= 2
    return unit


def _lane_writer(default: str) -> str:
    """the tuning's ``lane_writer``, checked, or ``default`` when it is None."""
    writer = _t().lane_writer or default
    if writer not in ("runs", "gather", "windows"):
        raise ValueError(f"GPU setting lane_writer must be 'runs', 'gather', 'windows' or None, got {writer!r}")
    return writer


def _blocks_for_smem(smem: int, threads: int, registers: int = 0) -> int:
    """Blocks an SM holds by shared memory, threads and (given a thread's ``registers``) the register file."""
    _, smem_per_sm = device_shape(_device_id())
    by_registers = 65536 // (registers * threads) if registers else 32
    return max(1, min(smem_per_sm // (smem + 1024), 2048 // threads, by_registers, 32))


def plan_lane_panels(axis: int, rows: int, n: int, itemsize: int, pointer: int) -> Optional[Step]:
    """``roll_rows`` of ``rows`` back-to-back lanes of ``n`` items: panels of whole lanes, one launch.

    None when one lane and its staging do not fit a block's shared memory
    (lanes longer than about 226 KiB): those take ``plan_long_lanes``.
    """
    T = _t()  # the policy, resolved once for the whole search
    from . import _lanes as L

    seg = n * itemsize
    head0 = pointer % 16
    unit = lane_unit(itemsize, head0)
    short = "windows" if seg >= 16 and unit <= T.max_window_unit else "gather"
    writer = _lane_writer("runs" if seg >= L.FAST_GATHER_ROW else short)
    if writer == "runs" or T.lane_writer is None:  # the warps variant writes runs
        step = _plan_lane_warps(axis, rows, n, itemsize, head0)
        if step is not None:
            return step
    # The run writer's loops take 96 registers: big panels and wide blocks keep bytes in flight at one
    # block an SM (docs/tuning.md, "RUN_PANEL_BYTES"); the gather writer streams at 48.
    threads = T.lane_threads or (T.run_threads if writer == "runs" else T.default_lane_threads)
    panel_bytes = T.panel_bytes or (T.run_panel_bytes if writer == "runs" else T.default_panel_bytes)
    panel_rows = max(1, min(T.max_panel_rows, panel_bytes // seg, rows))
    for buffers in (2, 1):  # two panels in flight per block if a lane allows, else one
        windows = writer == "windows"
        while panel_rows > 1 and L.panel_smem_bytes(panel_rows * seg, panel_rows, buffers, windows) > T.max_lane_smem:
            panel_rows //= 2
        smem = L.panel_smem_bytes(panel_rows * seg, panel_rows, buffers, windows)
        if smem <= T.max_lane_smem:
            break
    else:
        return None
    panels = S.ceil_div(rows, panel_rows)
    sms, _ = device_shape(_device_id())
    grid = T.grid or sms * _blocks_for_smem(smem, threads, T.run_registers if writer == "runs" else 0)
    row_threads = 0
    if writer == "runs":
        row_threads = T.row_threads or group_threads(threads, panel_rows)
        if row_threads < 1 or threads % row_threads:
            raise ValueError(f"GPU setting row_threads must divide the block's {threads} threads, got "
                             f"{row_threads!r}; use a power of two up to {threads}, or None")
    return _lane_panels_step(axis, rows, n, itemsize, P.LanePanelsParams(
        block=threads, grid=max(1, min(grid, panels)), panel_rows=panel_rows, buffers=buffers, writer=writer,
        row_threads=row_threads, unit_bytes=unit, smem_bytes=smem, head0=head0,
        buf_vecs=L.buffer_vecs(panel_rows * seg), n=n))


def _lane_panels_step(axis: int, rows: int, n: int, itemsize: int, params) -> Step:
    """A ``lane-panels`` step (either variant): every lane read once and written once, no scratch; lanes
    are disjoint, so no block waits for another."""
    return Step(axis, 0, rows, n * itemsize, 0, itemsize, algorithm="lane-panels", scratch_bytes=0,
                bytes_moved=2 * rows * n * itemsize, params=params)




def warp_group_threads(seg: int) -> int:
    """Threads that stage and write one lane of ``seg`` bytes in the ``warps`` variant: a quarter warp up to
    1 KiB, a half warp up to 2 KiB, a warp beyond. Measured on the H200 (device time, 1 GiB of float32
    lanes, docs/results/gpu-rows-lane-groups-*-h200.json): 1 KiB lanes 0.74 ms with 8 threads, 0.84 with
    16, 1.11 with 32; 2 KiB lanes 0.59 ms with 16, 0.65 with 8, 0.67-0.72 with 32; 4 KiB lanes 0.56-0.57
    ms with 32, 0.60 with 16. A short lane leaves a warp's 32 threads a few vectors each behind the same
    per-lane work (barriers, seam, two runs' setup); a long one gives a small group too few bytes in
    flight."""
    if seg <= 1024:
        return 8
    return 16 if seg <= 2048 else 32


def _plan_lane_warps(axis: int, rows: int, n: int, itemsize: int, head0: int) -> Optional[Step]:
    """``lane-panels``' ``warps`` variant (``_lanes.warp_lane_kernel``) where the tuning's ``lane_warps``
    takes it for lanes of ``n * itemsize`` bytes; else None."""
    from . import _lanes as L

    seg = n * itemsize
    choice = _t().lane_warps
    if choice is False or seg < 16 or (choice is None and not _t().warp_lane_min_bytes <= seg <= _t().warp_lane_bytes):
        return None
    threads = _t().lane_threads or (_t().warp_threads if seg <= 4096 else _t().warp_threads_long)
    slots = _t().warp_slots or _t().default_warp_slots
    min_blocks = _t().warp_min_blocks or 0
    group = _t().warp_lane_threads or warp_group_threads(seg)
    if threads % 32 or not 32 <= threads <= 1024:
        if choice is None:  # a block size set for the panel kernel: that kernel takes the lanes
            return None
        raise ValueError(f"GPU setting lane_threads must be a multiple of 32 up to 1024 for lane-panels' warps "
                         f"variant, got {threads!r}")
    if slots not in range(2, L.MAX_WARP_SLOTS + 1):
        raise ValueError(f"GPU setting warp_slots must be 2 to {L.MAX_WARP_SLOTS} or None, got {slots!r}")
    if group not in L.WARP_GROUPS:
        raise ValueError(f"GPU setting warp_lane_threads must be one of {', '.join(map(str, L.WARP_GROUPS))} "
                         f"or None, got {group!r}")
    smem = L.warp_smem_bytes(seg, threads, slots, group)
    if smem > _t().max_lane_smem:
        return None
    groups = threads // group
    sms, _ = device_shape(_device_id())
    registers = 65536 // (threads * min_blocks) if min_blocks else _t().run_registers
    grid = _t().grid or sms * _blocks_for_smem(smem, threads, registers)
    return _lane_panels_step(axis, rows, n, itemsize, P.LaneWarpsParams(
        block=threads, grid=max(1, min(grid, S.ceil_div(rows, groups))), slots=slots, min_blocks=min_blocks,
        lane_threads=group, writer="runs", smem_bytes=smem, head0=head0, slot_vecs=L.warp_slot_vecs(seg), n=n))


def group_threads(threads: int, panel_rows: int) -> int:
    """Threads of a group that writes one lane of a ``lane-panels`` panel with the run writer.

    Groups of at least MIN_ROW_THREADS, as many as the panel has lanes (the
    largest such power-of-two split of ``threads``). Not balanced: 24 lanes
    of 4 KiB in a 512-thread block get 16 groups of 32, so half the groups
    idle through the second round; groups of 64 would take three full rounds
    (not measured; the tuning's ``row_threads`` forces a
    size for that A/B).
    """
    size = threads
    while size // 2 >= _t().min_row_threads and size % 2 == 0 and threads // size < panel_rows:
        size //= 2
    return size




def plan_long_lanes(axis: int, rows: int, n: int, itemsize: int, pointer: int,
                    max_scratch_bytes: Optional[int] = None, host_shifts=None) -> Step:
    """``roll_rows`` of lanes too long for ``lane-panels``: ``lane-swaps`` (one launch, shifts read on the
    device), or ``lane-chains`` for a few huge lanes whose shifts are on the host."""
    seg = n * itemsize
    if host_shifts is not None and rows <= _t().max_chain_lanes and seg >= _t().min_chain_lane_bytes:
        return plan_lane_chains(axis, rows, n, itemsize, pointer, max_scratch_bytes, host_shifts)
    choice = _t().long_lanes
    if choice not in (None, "walks", "swaps"):
        raise ValueError(f"GPU setting long_lanes must be 'walks', 'swaps' or None, got {choice!r}")
    if choice == "walks" or (choice is None and seg >= _t().walk_min_lane_bytes):
        step = plan_lane_walks(axis, rows, n, itemsize, pointer, max_scratch_bytes, host_shifts)
        if step is not None:
            return step
        if choice == "walks":
            raise ValueError(f"GPU setting long_lanes='walks' cannot take lanes of {seg} bytes: a walk has at "
                             f"most {_walk_limits(seg)[1]} tiles; use long_lanes=None")
    return plan_lane_swaps(axis, rows, n, itemsize, pointer, host_shifts)





def _pow2_dividing(value: int, most: int = 8) -> int:
    """The widest power of two up to ``most`` that divides ``value`` (0: ``most``)."""
    width = most
    while width > 1 and value % width:
        width //= 2
    return width


def plan_column_panels(axis: int, outer: int, n: int, inner: int, itemsize: int, pointer: int,
                       max_scratch_bytes: Optional[int] = None) -> Step:
    """``roll_rows`` along an axis that is not contiguous: ``outer`` blocks of ``n`` rows of ``inner`` items
    (C order), lane ``(o, i)`` column ``i`` of block ``o``. One launch, every byte read and written once: a
    block takes a strip of a block's rows whole, in shared memory where ``n`` rows of a strip of at least
    ``column_min_strip_bytes`` fit ``column_smem_bytes``, else staged lane by lane in its slot of scratch."""
    from . import _columns as K

    T = _t()
    pitch = inner * itemsize
    unit = _pow2_dividing(itemsize | pointer)  # what items and the address are made of
    word = _pow2_dividing(pitch | pointer)  # what rows and the address are made of (a multiple of unit)
    pitch_w = pitch // word
    threads = T.column_threads
    if threads < 32 or threads % 32 or threads > 1024 or T.column_unroll < 1:
        raise ValueError(f"GPU settings column_threads must be a multiple of 32 up to 1024 and column_unroll at "
                         f"least 1; got {threads!r} and {T.column_unroll!r}")
    # A strip is at most a block's threads wide in words (a thread keeps one word position of it).
    widest = max(1, min(pitch // word, T.column_strip_bytes // word, K.MAX_STRIP_UNITS * unit // word, threads))
    narrowest = min(widest, -(-T.column_min_strip_bytes // word))
    fit = T.column_smem_bytes // (n * word)
    sms, _ = device_shape(_device_id())
    staged = fit < narrowest
    strip_w = min(widest, T.column_staged_strip_bytes // word if staged else fit)
    strip_w = max(narrowest if not staged else 1, strip_w)
    sector_w = max(1, T.column_min_strip_bytes // word)
    if strip_w > sector_w:  # whole sectors: a strip that ends inside one shares it with the next strip
        strip_w -= strip_w % sector_w
    # Narrower strips (down to the narrowest) where there would be fewer than two a block of a full GPU.
    while strip_w > narrowest and outer * K.strip_count(pitch_w, strip_w) < 2 * sms:
        half = strip_w // 2
        strip_w = max(narrowest, half - half % sector_w if half > sector_w else half)
    lanes = outer * inner
    total = lanes * n * itemsize
    if staged:
        # Each strip needs its whole lanes staged: the default bound grows to ``column_staged_share`` of the
        # array where the 1% bound would leave fewer slots than a block an SM, and to one slot of the
        # narrowest strip (a word) where even that holds none; a bound the caller gave is kept, the strip
        # narrowed to fit it.
        cap = max_scratch_bytes
        if cap is None:
            cap = max(default_cap(lanes, n * itemsize), min(int(total * T.column_staged_share),
                                                             sms * n * strip_w * word), n * word)
        if cap < n * word:
            raise ValueError(
                f"roll_rows along axis {axis} on the GPU stages whole lanes ({n} rows of at least a {word}-byte "
                f"word: {n * word} bytes) in scratch, but max_scratch_bytes={max_scratch_bytes}; allow at least "
                f"{n * word} bytes, or leave max_scratch_bytes=None")
        strip_w = max(1, min(strip_w, cap // (n * word)))
    strips = outer * K.strip_count(pitch_w, strip_w)
    slot_bytes = n * strip_w * word
    if staged:
        grid = max(1, min(strips, cap // slot_bytes, sms * (2048 // threads)))
        tile_rows = K.staged_tile_rows(threads, strip_w, T.column_unroll)
        smem = K.staged_smem_bytes(threads, strip_w, word, unit, T.column_unroll)
        reason = (f"lanes of {n} items along a strided axis: {n} rows of a strip do not fit a block's "
                  f"{T.column_smem_bytes} bytes of shared memory, so each block stages its strips in scratch")
    else:
        smem, tile_rows = slot_bytes, 0
        # Wider blocks where big panels leave an SM few: its loads in flight are threads x UNROLL words.
        while threads < 1024 and threads * _blocks_for_smem(smem + 8 * K.MAX_STRIP_UNITS, threads) < \
                T.column_sm_threads:
            threads *= 2
        grid = max(1, min(strips, sms * _blocks_for_smem(smem + 8 * K.MAX_STRIP_UNITS, threads)))
        reason = f"lanes along a strided axis: a strip of {n} rows a block, in shared memory"
    if T.grid:  # a forced grid (tests run one block through many strips)
        grid = max(1, min(grid, T.grid))
    params = P.ColumnPanelsParams(
        block=threads, grid=grid, staged=staged, outer=outer, pitch=pitch, strip_bytes=strip_w * word,
        word_bytes=word, unit_bytes=unit, unroll=T.column_unroll, smem_bytes=smem, reason=reason,
        tile_rows=tile_rows, lanes_per_row=inner)
    return Step(axis, 0, lanes, n * itemsize, 0, itemsize, algorithm="column-panels",
                scratch_bytes=grid * slot_bytes if staged else 0, bytes_moved=(4 if staged else 2) * total,
                params=params)


def _walk_limits(seg: Optional[int] = None):
    """``(tile_bytes, max_tiles, buffers)`` of ``lane-walks`` for lanes of ``seg`` bytes under the current
    settings: by default the wide tiles (``_lanes.WALK_WIDE_TILE_BYTES``) for lanes from
    ``walk_wide_min_lane_bytes`` that fit their most tiles, else ``default_walk_tile_bytes``."""
    from . import _lanes as L

    tile, max_tiles = _t().walk_tile_bytes, _t().walk_max_tiles
    if tile is None and max_tiles is None and seg is not None and seg >= _t().walk_wide_min_lane_bytes:
        tile_lo, tile_hi = S.walk_tile_range(seg, _t().walk_wide_tile_bytes, _t().walk_wide_max_tiles)
        if tile_lo <= tile_hi:
            tile, max_tiles = _t().walk_wide_tile_bytes, _t().walk_wide_max_tiles
    tile = tile or _t().default_walk_tile_bytes
    max_tiles = max_tiles or _t().default_walk_max_tiles
    buffers = _t().walk_buffers or _t().default_walk_buffers
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
                tile, _, spans = S.walk_decision(seg, k, (head0 + lane * seg) % 16, tile_max, max_tiles, reach,
                                                 share, pool - used)
            if spans > share:  # asked of the pool, whether it fitted or not
                used += spans
            if tile:
                moved = 2 * seg + 2 * spans
                walked += 1
            else:
                moved = max(2 * seg, S.swap_traffic(seg, k, save))
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
    if not isinstance(p, P.LaneWalksParams):
        raise ValueError(f"walk_traffic takes a lane-walks step, got {step.algorithm!r}")
    moved, walked = _walk_traffic_compiled()(np.asarray(shifts, np.int64).reshape(-1), p.n, step.word_bytes,
                                             p.head0, p.tile_bytes[1], p.max_tiles, p.buffers - 1,
                                             p.share_bytes, p.pool_bytes, p.save_bytes)
    return int(moved), int(walked)


def plan_lane_walks(axis: int, rows: int, n: int, itemsize: int, pointer: int,
                    max_scratch_bytes: Optional[int] = None, host_shifts=None) -> Optional[Step]:
    """``roll_rows`` of lanes beyond a block's shared memory in one pass: ``lane-walks``; None when a lane
    would have more than ``_lanes.WALK_MAX_TILES`` tiles of the walk's smallest size (``_walk_limits``).

    A block takes whole lanes (by ticket), picks each lane's tile size and
    chain step, pre-reads the bytes its look-ahead cannot hold into its share
    of scratch (or, over it, into the launch's pool while it lasts), and
    writes the tiles in chain order (rotate/_cuda/_lanes.py ``walk_kernel``).
    No block waits for another. A lane whose pre-reads fit neither takes
    ``lane-swaps``' steps in the same launch.
    ``bytes_moved`` is a bound (4N, every lane by block swaps) whether the
    shifts are on the host or the device: the exact count replays every
    lane's choice (``walk_traffic``, about 90 us a 4 MiB lane on the CPU),
    which a call should not pay for a statistic.
    """
    from . import _lanes as L

    seg = n * itemsize
    tile_max, max_tiles, buffers = _walk_limits(seg)
    tile_lo, tile_hi = S.walk_tile_range(seg, tile_max, max_tiles)
    if tile_lo > tile_hi:
        return None
    threads = _t().lane_threads or _t().default_lane_threads
    panel = int(_t().swap_panel_bytes)
    save = _t().swap_save_bytes
    save = L.walk_save_bytes(panel) if save is None else int(save)
    smem = L.walk_smem_bytes(tile_max, buffers, max_tiles, panel, save, threads)
    if smem > _t().max_block_smem:
        raise ValueError(f"GPU settings walk_tile_bytes={tile_max}, walk_buffers={buffers}, walk_max_tiles="
                         f"{max_tiles} need {smem} bytes of shared memory a block, more than {_t().max_block_smem}; "
                         f"choose smaller ones")
    sms, _ = device_shape(_device_id())
    min_blocks = _t().walk_min_blocks
    if min_blocks is not None and (int(min_blocks) != min_blocks or not 1 <= min_blocks <= 2048 // threads):
        raise ValueError(f"GPU setting walk_min_blocks must be an integer from 1 to {2048 // threads}, "
                         f"got {min_blocks!r}")
    resident = _blocks_for_smem(smem, threads)
    if min_blocks is not None:
        resident = min(resident, int(min_blocks))
    grid = max(1, min(_t().grid or sms * resident, rows))
    share = _t().walk_share_bytes
    if share is None:
        share = int(seg * (_t().walk_share_one_lane if rows <= grid else _t().walk_share))
        if max_scratch_bytes is not None:
            share = min(share, max_scratch_bytes // grid)
    share = int(share) // 16 * 16
    if share < 0:
        raise ValueError(f"GPU setting walk_share_bytes must be >= 0, got {_t().walk_share_bytes!r}")
    pool = _t().walk_pool_bytes
    if pool is None:
        pool = int(rows * seg * _t().walk_pool)
        if max_scratch_bytes is not None:
            pool = min(pool, max(0, max_scratch_bytes - grid * share))
    pool = int(pool) // 16 * 16
    if pool < 0:
        raise ValueError(f"GPU setting walk_pool_bytes must be >= 0, got {_t().walk_pool_bytes!r}")
    return Step(
        axis, 0, rows, seg, 0, itemsize,
        algorithm="lane-walks",
        scratch_bytes=grid * share + pool,
        bytes_moved=4 * rows * seg,
        params=P.LaneWalksParams(
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


def swap_sizes():
    """``lane-swaps``' ``(panel_bytes, save_bytes, smem_bytes)`` for the current settings and device.

    By default the saved side takes what is left of half an SM's shared
    memory after four panel buffers (about 80 KiB on an H200): two blocks an
    SM keep twice the bytes in flight, and for random shifts of 4 MiB lanes a
    saved side of 80 KiB moves about 5% more bytes than one of 190 KiB (more
    block swaps; ``rotate._schedule.swap_traffic``).
    """
    from . import _lanes as L

    panel = int(_t().swap_panel_bytes)
    panel_vecs = L.buffer_vecs(panel)
    save = _t().swap_save_bytes
    if save is None:
        _, smem_per_sm = device_shape(_device_id())
        budget = min(_t().max_lane_smem, smem_per_sm // 2 - 1024 - 64)  # two blocks, the driver's 1 KiB, static
        save = L.save_capacity(max(2 * panel_vecs, budget // 16 - 2 * panel_vecs))
    smem = L.swap_smem_bytes(panel, int(save))
    if smem > _t().max_block_smem:
        raise ValueError(f"GPU settings swap_panel_bytes={panel} and swap_save_bytes={save} need {smem} bytes "
                         f"of shared memory a block, more than {_t().max_block_smem}; choose smaller sizes")
    return panel, int(save), smem


@functools.lru_cache(maxsize=1)
def _swap_traffic_compiled():
    import numba

    @numba.njit(cache=True)
    def traffic(shifts, n, item, save):
        total = 0
        for s in shifts:  # a lane rolled by 0 counts 2 x its bytes, as in every plan (the kernel skips it)
            total += max(2 * n * item, S.swap_traffic(n * item, ((n - s % n) % n) * item, save))
        return total

    return traffic


def plan_lane_swaps(axis: int, rows: int, n: int, itemsize: int, pointer: int, host_shifts=None) -> Step:
    """``roll_rows`` of lanes too long for a block's shared memory, in one launch: ``lane-swaps``.

    A block takes whole lanes (grid-strided) and rotates each by itself (Gries-Mills
    block swaps until the small side fits the saved-side buffer, then one
    streamed pass; rotate/_cuda/_lanes.py ``swap_kernel``), so no block waits
    for another. ``bytes_moved`` is exact for ``host_shifts`` (int64, one per
    lane; a lane rolled by 0 counts 2 x its bytes, as in every plan, though
    the kernel skips it); for shifts on the device it is a bound
    (``bytes_moved_is_bound``):
    2N when every small side fits the buffer, else 4N (each swapped byte
    moves twice more, and swaps place at most the whole lane).
    """
    from . import _lanes as L

    seg = n * itemsize
    panel, save, smem = swap_sizes()
    threads = _t().lane_threads or _t().default_lane_threads
    sms, _ = device_shape(_device_id())
    grid = _t().grid or sms * _blocks_for_smem(smem, threads)
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
        params=P.LaneSwapsParams(
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
                   f"{_t().max_chain_lanes} lanes of {_t().min_chain_lane_bytes >> 20} MiB or more with host shifts",
            n=n,
        ),
    )


#: lane-chains' run steps by sub-problem: host shifts are planned on every roll_rows call (they are read per
#: call, not part of a cached plan's key), and a huge lane's chain step costs 0.2-3 s to plan (plan tables
#: of 1-6 GiB lanes), which a repeated call would otherwise pay each time.
_chain_runs: collections.OrderedDict = collections.OrderedDict()
MAX_CHAIN_RUNS = 16  # a 6 GiB lane's step holds about 8 MB of plan table


def _chain_run(s: int, lanes: int, n: int, itemsize: int, head: int, max_scratch_bytes: Optional[int]) -> Step:
    """``plan_step`` for ``lanes`` lanes of ``n`` items at 16-byte offset ``head``, rolled by ``s``: the one
    planned before for the same problem, policy and device, else a new one."""
    device = _device_id()
    key = (s, lanes, n, itemsize, head, max_scratch_bytes, _t(), device, device_shape(device),
           device_capability(device), cooperative_launch())
    step = _chain_runs.get(key)
    if step is not None:
        _chain_runs.move_to_end(key)
    else:
        seg = n * itemsize
        step = _chain_runs[key] = plan_step(None, s, lanes, seg, (n - s) * itemsize, itemsize, head,
                                            max_scratch_bytes)
        while len(_chain_runs) > MAX_CHAIN_RUNS:
            _chain_runs.popitem(last=False)
    return step


def plan_lane_chains(axis: int, rows: int, n: int, itemsize: int, pointer: int,
                     max_scratch_bytes: Optional[int], host_shifts) -> Step:
    """``roll_rows`` of a few huge lanes with host shifts: one chain launch per run of lanes with equal
    shifts, each spread over the whole GPU (see MAX_CHAIN_LANES). Every run's chain step is planned here,
    from the shifts (``params.runs``: first lane, end lane, Step); the launcher runs them as given."""
    seg = n * itemsize
    shifts = np.asarray(host_shifts, np.int64) % n
    runs = []
    lane = 0
    while lane < rows:
        end = lane + 1
        while end < rows and shifts[end] == shifts[lane]:
            end += 1
        s = int(shifts[lane])
        if s:
            runs.append((lane, end, _chain_run(s, end - lane, n, itemsize, (pointer + lane * seg) % 16,
                                               max_scratch_bytes)))
        lane = end
    return Step(
        axis, 0, rows, seg, 0, itemsize,
        algorithm="lane-chains",
        scratch_bytes=max((sub.scratch_bytes for _, _, sub in runs), default=0),
        # lanes rolled by 0 are counted as read and written once, as every roll_rows plan counts them
        bytes_moved=sum(sub.bytes_moved for _, _, sub in runs) + 2 * seg * (rows - sum(e - b for b, e, _ in runs)),
        params=P.LaneChainsParams(
            max_scratch_bytes=max_scratch_bytes,
            launches=len(runs),
            runs=tuple(runs),
            head0=pointer % 16,
            reason=f"at most {_t().max_chain_lanes} lanes of {_t().min_chain_lane_bytes >> 20} MiB or more, shifts "
                   f"on the host: one chain launch per run of equal shifts uses the whole GPU, where lane-swaps "
                   f"would give each lane one block",
        ),
    )




#: What the ``cycle_variant`` setting takes (None: the planner's pick).
CYCLE_VARIANTS = (None, "three-rows", "chunked", "chunked-scratch")


def _check_cycle_settings() -> None:
    variant, chunk, ring = _t().cycle_variant, _t().cycle_chunk_bytes, _t().cycle_ring
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
    CYCLE_AHEAD_BYTES, then the most blocks an SM (their barriers and
    writes overlap), then the least shared memory. A prediction, not a
    measurement: ``cycle_chunk_bytes`` and ``cycle_ring`` pin the choice
    for a sweep. ``max_blocks``: the walks an SM can have at most (few
    segments leave SMs with one block or none, which then want deep rings).
    """
    T = _t()  # the policy, resolved once for the whole search
    from . import _lanes as L

    chunks = [int(T.cycle_chunk_bytes)] if T.cycle_chunk_bytes else T.cycle_chunks
    rings = [int(T.cycle_ring)] if T.cycle_ring else T.cycle_rings
    best = None
    for chunk in chunks:
        for ring in rings:
            smem = L.cycle_stream_smem_bytes(seg, chunk, ring, first_rows_in_smem)
            if smem > limit:
                continue
            threads = T.lane_threads or L.cycle_stream_threads(chunk)
            blocks = min(_blocks_for_smem(smem, threads), max_blocks)
            score = (min((ring - 1) * min(chunk, seg + 15) * blocks, T.cycle_ahead_bytes), blocks, -smem)
            if best is None or score > best[0]:
                best = (score, (chunk, ring, smem, threads, blocks))
    return None if best is None else best[1]


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


def plan_multi_axis(shape: tuple, itemsize: int, c_shifts: dict, pointer: int,
                    cap: Optional[int]) -> Optional[tuple]:
    """The steps of a roll over several axes of a C-ordered array: one ``half-swaps`` step where every
    rolled axis moves by half its length; a flat one-pass rotation and a ``row-strips`` step where one
    leading axis rolls and the strip is narrow (``FLAT_STRIP_FRACTION``) or ``row-cycles`` cannot take
    it (the tuning's ``flat_strips``: None, that rule; True, wherever it applies; False, never); else one
    ``row-cycles`` step. None when none takes
    it (one pass per axis then)."""
    lead, offs, seg, block = _fold_rows(shape, itemsize, c_shifts)
    rows = int(np.prod(lead, dtype=np.int64)) if lead else 1
    row_shift = c_shifts[max(c_shifts)] * block
    step = plan_half_swaps(lead, offs, rows, seg, row_shift, itemsize, pointer)
    if step is not None:
        return (step,)
    # A forced cycle variant asks for row-cycles (measurements, tests), as it does over half-swaps.
    flat = _t().flat_strips is not False and _t().cycle_variant is None
    steps = plan_flat_strips(lead, offs, seg, row_shift, itemsize, pointer, cap) if flat else None
    if steps is not None and (_t().flat_strips
                              or steps[1].seg_bytes <= _t().flat_strip_fraction * steps[0].seg_bytes):
        return steps  # a narrow strip: row-cycles need not be planned at all
    step = plan_row_cycles(shape, itemsize, c_shifts, pointer, cap)
    if step is None:
        return steps  # a wide strip, but row-cycles cannot take the roll (None if neither can)
    return (step,)




#: Schedules that move each byte once (plus pre-reads): a flat pass worth a strip step after it.
ONE_PASS_SCHEDULES = ("chain", "half-swaps", "row-panels")


def plan_flat_strips(lead, lead_shifts, seg: int, row_shift: int, word: int, pointer: int,
                     max_scratch_bytes: Optional[int]) -> Optional[tuple]:
    """A multi-axis roll with one rolled leading radix as two steps (rotate/_rowperm.py): each batch of
    rows rotated flat (``chain``, or whichever one-pass schedule ``plan_step`` picks), then the strip
    left one row off moved by ``row-strips``. None unless rows start on 16-byte boundaries, the strip
    step's scratch (a strip a chunk) fits ``max_scratch_bytes`` and the flat rotation is one pass
    within it (at 1 GiB the chain's pre-reads for many shifts need more than the default bound:
    docs/results/plan-probes-h200-shape.json)."""
    from .._rowperm import flat_strip_shape

    shape = flat_strip_shape(tuple(lead), tuple(lead_shifts), seg, row_shift)
    if shape is None or pointer % 16 or seg % 16:
        return None
    batches, rows, flat, lo, hi, up = shape
    total = rows * seg
    strip = plan_row_strips(batches, rows, seg, lo, hi, up, word,
                            default_cap(batches, total) if max_scratch_bytes is None else max_scratch_bytes)
    if strip is None:
        return None
    flat_step = plan_step(None, flat // word, batches, total, (total - flat) % total, word, pointer,
                          max_scratch_bytes)
    if flat_step.algorithm not in ONE_PASS_SCHEDULES:  # the chain's pre-reads passed the bound: two passes
        return None
    return flat_step, strip


def plan_row_strips(batches: int, rows: int, seg: int, lo: int, hi: int, up: bool, word: int,
                    cap: int) -> Optional[Step]:
    """The ``row-strips`` step: in each of ``batches`` segments of ``rows`` rows of ``seg`` bytes, bytes
    ``[lo, hi)`` of every row moved up a row (``up``: row ``d`` takes row ``d + 1``'s, cyclically) or
    down. None when a strip a batch passes ``cap`` bytes of scratch."""
    from . import _strips

    v_lo = lo // 16
    nv = S.ceil_div(hi, 16) - v_lo
    slot = 16 * nv
    if batches * slot > cap:
        return None
    threads = _t().lane_threads or _strips.THREADS
    vecs = _strips.VECS
    sms, _ = device_shape(_device_id())
    blocks = sms * _blocks_for_smem(0, threads, _t().strip_registers)
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
        params=P.RowStripsParams(
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


def plan_half_swaps(lead, lead_shifts, rows: int, seg: int, row_shift: int, word: int, pointer: int,
                    axis: Optional[int] = None, shift: int = 0, left: int = 0) -> Optional[Step]:
    """``half-swaps`` (rotate/_rowperm.py): every rolled axis by half its length, as disjoint swaps of runs.

    ``lead``/``lead_shifts``: the leading radices and their shifts (``(rows,)``
    and ``(0,)`` for a one-axis roll: every row swaps its own halves; ``axis``,
    ``shift`` and ``left`` then fill the step as for other schedules); ``row_shift``: the
    in-row shift in bytes. None unless it is a half-swap whose runs are
    16-byte aligned (the array's start, ``seg`` and ``seg / 2``), or when
    the tuning's ``half_swaps`` is off or a row-cycles variant is forced.
    """
    from .._rowperm import half_swap_shape

    if not _t().half_swaps or _t().cycle_variant is not None:
        return None
    shape = half_swap_shape(tuple(lead), tuple(lead_shifts), seg, row_shift)
    if shape is None or pointer % 16 or seg % 32 or rows < 1:
        return None
    dims, halves = shape
    if int(np.prod(dims, dtype=np.int64)) != rows:
        return None
    half = seg // 2
    threads = _t().lane_threads or _t().half_swap_threads
    if threads < 1 or threads & (threads - 1):
        # A row's group is the block halved until it fits the half: only a power of two splits evenly.
        raise ValueError(f"GPU setting lane_threads must be a power of two for half-swaps, got {threads!r}; "
                         f"use 256 (the default) or set half_swaps=False")
    vecs = _t().half_swap_vecs or _t().default_half_swap_vecs
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
    sms, _ = device_shape(_device_id())
    grid = _t().grid or sms * max(1, 2048 // threads)
    return Step(
        axis, shift, rows, seg, left, word,
        algorithm="half-swaps",
        scratch_bytes=0,
        bytes_moved=2 * rows * seg,
        params=P.HalfSwapsParams(
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


def plan_row_cycles(shape: tuple, itemsize: int, c_shifts: dict, pointer: int,
                    cap: Optional[int]) -> Optional[Step]:
    """A multi-axis roll of a C-ordered array in one pass (``row-cycles``), or None.

    ``c_shifts`` maps C-order axes to shifts in ``(0, length)``. The axes up
    to the last rolled one index rows; the last rolled axis and everything
    after it form a row, rolled while it moves. Two kernels (two params
    types): ``three-rows`` (``cycle_kernel``: a saved first row and
    two staging buffers a block, rows up to about 75 KiB) and, where three
    rows do not fit, ``chunked`` (``cycle_stream_kernel``: the saved first
    row and a ring of chunks; rows up to about 200 KiB keep first rows in
    shared memory, longer ones pre-read every segment's first row into
    scratch). None when a row is shorter than MIN_CYCLE_ROW, the leading
    axes do not fold into MAX_LEAD radices, the table is too large or the
    pre-reads exceed ``cap``.
    """
    T = _t()  # the policy, resolved once for the whole search
    from . import _lanes as L

    _check_cycle_settings()
    last = max(c_shifts)
    lead, offs, seg, block = _fold_rows(shape, itemsize, c_shifts)
    head0 = pointer % 16
    unit = lane_unit(itemsize, head0)
    if seg < T.min_cycle_row:
        return None
    if len(lead) > L.MAX_LEAD:
        return None
    rows = int(np.prod(lead, dtype=np.int64)) if lead else 1
    limit = T.cycle_smem or T.max_lane_smem
    variant = T.cycle_variant
    sms, _ = device_shape(_device_id())
    stream = None
    # Measured (docs/results/gpu-rows-chunked-mid-h200.json): where every cycle is a swap of two rows
    # (an involution: fftshift of even lengths) and the in-row shift keeps 16-byte alignment, the
    # chunked kernel ran 64 KiB rows at 67-69% against 61-67% for three rows; on long cut cycles with
    # misaligned row shifts it lost 19-22 points, and on 4 KiB rows (the 512^3 fftshift: 131,072
    # swaps) 20 points. So the default takes it only for aligned swaps of rows of 64 KiB and more.
    swaps_aligned = (head0 == 0 and seg >= T.min_chunked_swap_row and (c_shifts[last] * block) % 16 == 0
                     and all((2 * s) % n == 0 for n, s in zip(lead, offs)))
    writer = _lane_writer("runs")
    if writer == "windows":  # the cycle kernel has no window writer
        writer = "gather"
    if variant in (None, "three-rows") and L.cycle_smem_bytes(seg) <= limit and \
            not (variant is None and swaps_aligned):
        smem = L.cycle_smem_bytes(seg)
        threads = T.lane_threads or L.cycle_threads(seg)
        if writer == "runs":
            threads = T.lane_threads or min(threads, T.run_cycle_threads)
        blocks = _blocks_for_smem(smem, threads, T.run_registers if writer == "runs" else 0)
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
    cap = default_cap(rows, seg) if cap is None else cap
    piece = max(4, S.ceil_div(rows, 2 * grid))
    grown = False  # segments merged to fit the table or the scratch bound (not for want of rows)
    while True:
        table = L.segment_table(tuple(lead), tuple(offs), piece)
        nseg = len(table) // 3
        cut = int(np.count_nonzero(table[2::3] != np.arange(nseg)))
        pre_reads = cut if first_rows_in_smem else nseg  # first rows copied to scratch
        pre_bytes = nseg * slot if pre_reads else 0  # slots are indexed by segment
        if nseg <= T.max_segments and pre_bytes <= cap:
            break
        if piece >= rows:
            return None
        piece *= 2
        grown = True
    if variant is None and grown and nseg < T.cycle_min_walk_share * sms:
        return None  # the bound left too few walks to load the GPU: one pass per axis moves the bytes faster
    if stream is not None and nseg < sms * blocks:  # fewer walks than blocks: deeper rings, fewer blocks
        stream = _cycle_stream_config(seg, limit, first_rows_in_smem, S.ceil_div(nseg, sms))
        chunk, ring, smem, threads, blocks = stream
        grid = T.grid or sms * blocks
    dims = (1,) * (L.MAX_LEAD - len(lead)) + tuple(lead)
    shifts = (0,) * (L.MAX_LEAD - len(offs)) + tuple(offs)
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
        params = P.RowCyclesParams(**common, unit_bytes=unit, writer=writer, buf_vecs=L.buffer_vecs(seg))
    else:
        params = P.RowCyclesChunkedParams(
            **common, chunk_bytes=chunk, ring=ring, chunks_per_row=L.chunks_per_row(seg, chunk),
            ring_vecs=L.chunk_vecs(chunk), saved_vecs=L.buffer_vecs(seg) if first_rows_in_smem else 0)
    return Step(
        None, 0, rows, seg, 0, itemsize,
        algorithm="row-cycles",
        scratch_bytes=pre_bytes + 4 * nseg + table.nbytes + 64,
        bytes_moved=2 * rows * seg + 2 * pre_reads * seg,
        params=params,
    )
