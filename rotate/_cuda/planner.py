"""Choosing the GPU algorithm, tile and grid for one step, without launching.

Shared by ``rotate.plan`` (to report) and ``launch`` (to run): what plan()
says is what runs.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
from typing import Optional

import numpy as np

from numba import cuda

from .. import _schedule as S
from .._plan import Step
from . import _kernels
from ._memops import SIMULATED

#: Tunables; ``override`` changes them (tests use tiny tiles in the simulator).
settings = {
    "tile_bytes": _kernels.TILE_BYTES,
    "threads": None,  # data threads of a chain block; None: _kernels.THREADS, PIPELINE_THREADS pipelined
    "buffers": _kernels.BUFFERS,
    "min_blocks": 0,  # >0: ask ptxas to fit this many blocks per SM (caps registers)
    "grid": None,  # None: fill the GPU (blocks per SM x SMs)
    "lane_steps": None,  # None: one lane per resident block; an int forces the lane length
    # Chain plans may be co-resident (one block a lane, launched cooperatively, waits on later lanes
    # at earlier steps) where that pre-reads less: random shifts (docs/design.md, "Co-resident lanes").
    "co_resident": True,
    "lane_threads": None,  # roll_rows / row-cycles block size; None: each kernel's default
    # chain kernel: "pipeline" (a producer warp bulk-copies sources, publishes and clears waits, a
    # decoder warp decodes items ahead, data warps write with no block barrier), "control-warp" (a
    # warp of its own decodes items and clears waits ahead of the data warps, which copy), "single"
    # (thread 0 of the data warps does it between barriers), "auto" (single for shifts shorter than
    # a tile, else control-warp); None: DEFAULT_CHAIN_VARIANT.
    "chain_variant": None,
    # chain kernel item decoding: "runs" walks every item's source and reader runs; "direct" takes
    # one-array-run items and WAIT-free readers off the packed plan entry (same descriptors, fewer
    # instructions on the decoding thread; 0-1 points faster, docs/results/chain-ab-pipeline-h200.jsonl).
    "chain_decode": "direct",
    # pipelined chain kernel: items whose source sits at the destination's 16-byte phase stored by the
    # producer with one bulk copy instead of by the data warps (not yet timed on a GPU: off).
    "chain_bulk_store": False,
    "swap_panel_bytes": 16 * 1024,  # lane-swaps: bytes a panel streams
    "swap_save_bytes": None,  # lane-swaps: the largest small side saved; None: what fits two blocks an SM
    # roll_rows of lanes beyond lane-panels: "walks" (lane-walks, one pass: a block walks its lane in chain
    # order, pre-reading into its share of scratch), "swaps" (lane-swaps, block swaps); None: walks for lanes
    # from WALK_MIN_LANE_BYTES with at most _lanes.WALK_MAX_TILES tiles of the walk's smallest size, else swaps.
    "long_lanes": None,
    "walk_share_bytes": None,  # lane-walks: scratch bytes a block holds pre-reads in; None: WALK_SHARE(_ONE_LANE) of a lane
    "walk_pool_bytes": None,  # lane-walks: scratch for lanes over a share, taken in ticket order; None: WALK_POOL
    "walk_tile_bytes": None,  # lane-walks: the largest tile (a multiple of 16; half of it the smallest); None: _walk_limits
    "walk_buffers": None,  # lane-walks: tile buffers (2-4; look-ahead of one less); None: _lanes.WALK_BUFFERS
    "walk_max_tiles": None,  # lane-walks: most tiles a lane may have; None: _walk_limits
    # lane-walks: the launch bound's blocks an SM, registers capped to fit (a measurement knob: 3-4 with 16-20
    # KiB tiles were slower on an H200, docs/tuning.md "lane-walks"); None: 1
    "walk_min_blocks": None,
    "walk_trace": 0,  # lane-walks: 0, or a device address where each block adds up its phases' time (diagnostic)
    # row-cycles variant: None picks "three-rows" where three rows fit a block (except aligned
    # two-row swaps, which stream faster chunked), else "chunked";
    # "chunked" forces the streaming kernel (first rows in shared memory where they fit, else in
    # scratch); "chunked-scratch" also forces first rows into scratch (tests, measurements).
    "cycle_variant": None,
    "cycle_chunk_bytes": None,  # the chunked variant's chunk (a multiple of 16); None: the planner's pick
    "cycle_ring": None,  # the chunked variant's ring depth (2-4); None: the planner's pick
    "cycle_smem": None,  # shared memory a row-cycles block may take; None: MAX_LANE_SMEM
    # Rolls by half of every rolled axis (even fftshifts) as disjoint swaps of aligned runs (half-swaps);
    # False leaves them to the chain / row-cycles kernels (measurements).
    "half_swaps": True,
    "half_swap_vecs": None,  # 16-byte vectors of each run a half-swap thread holds (1-4); None: HALF_SWAP_VECS
    # Multi-axis rolls with one rolled leading axis as a flat rotation (chain) and a strip step (row-strips,
    # rotate/_rowperm.py), where rows are 16-byte aligned: 2N(1 + w/seg) bytes with a strip of w <= seg/2
    # bytes a row, against row-cycles' 2N at 18-76% of memcpy. None: where the strip is at most
    # FLAT_STRIP_FRACTION of a row (or row-cycles cannot take the roll); True: wherever the flat pass is
    # one pass (tests, measurements); False: never.
    "flat_strips": None,
    "panel_bytes": None,  # lane-panels: lane bytes a panel holds; None: _lanes.PANEL_BYTES
    "row_threads": None,  # lane-panels' run writer: threads a group writing one lane has; None: group_threads
    # lane-panels' and row-cycles' (three-rows) write: "runs" (each lane or row as two runs through the
    # chain kernel's realigning loops; lane-panels by groups of threads), "gather" (each destination unit
    # looks its source up); None: runs for row-cycles and for lanes of FAST_GATHER_ROW bytes and more.
    "lane_writer": None,
    # lane-panels' "warps" variant (rotate/_cuda/_lanes.py, warp_lane_kernel: a warp, or a group of 16, 8
    # or 4 of its threads, stages and writes one lane at a time, no block barrier, the seam on the vector
    # grid). None: for lanes of WARP_LANE_MIN_BYTES to WARP_LANE_BYTES (1-8 KiB) unless lane_writer is
    # forced; True: wherever a group's slots fit (the run writer);
    # False: never. warp_slots: slots a warp has (2-8; None: _lanes.WARP_SLOTS);
    # warp_min_blocks: the kernel's launch bound on blocks an SM (None: registers as compiled);
    # warp_lane_threads: threads a lane (32, 16, 8 or 4: _lanes.WARP_GROUPS; None: warp_group_threads).
    "lane_warps": None,
    "warp_slots": None,
    "warp_min_blocks": None,
    "warp_lane_threads": None,
}

#: Default scratch bound: the larger of this fraction of the array and MIN_SCRATCH.
SCRATCH_FRACTION = 100
MIN_SCRATCH = 16 << 20
#: The chain kernel's fixed cost per item (thread 0 decodes it and polls its
#: waits while the block's other warps wait at a barrier), in bytes of traffic:
#: 1 GiB uint8 shift 3 ran 0.676 ms with 32768 items of 32 KiB and 0.887 ms
#: with 65536 of 16 KiB (H200, docs/tuning.md, "GPU: the chain kernel"): 6.4 ns an item for the
#: whole GPU, what a memcpy moves in that time.
ITEM_COST_BYTES = 26 * 1024
#: The chain kernel variant when ``settings["chain_variant"]`` is None.
DEFAULT_CHAIN_VARIANT = "pipeline"
#: Data threads of a pipelined chain block (six warps, plus the producer's and the decoder's: 256).
#: 128-224 ran within a point of each other; 256 (320 a block) capped registers at two blocks an SM
#: and spilled the data warps' loop state, 3-15 points slower (docs/results/chain-ab-pipeline-h200.jsonl).
PIPELINE_THREADS = 192
#: The pipelined variant's PTX (cp.async.bulk, mbarrier.expect_tx) needs Hopper (sm_90) or newer.
PIPELINE_MIN_CAPABILITY = (9, 0)
NEWEST_CAPABILITY = (99, 0)
#: lane-panels' run writer: the fewest threads a group writing one lane has; block size and panel bytes
#: (sweep of 32-96 KiB panels and 256-512 threads, 1 and 4 GiB, lanes of 4-64 KiB: docs/tuning.md, "lane-panels").
MIN_ROW_THREADS = 32
RUN_THREADS = 512
RUN_PANEL_BYTES = 96 * 1024
#: Registers a thread of a kernel with the run writer takes at most (ptxas for sm_90: 92-114), for the
#: blocks an SM can hold; and the widest row-cycles block that writes with it (1024 threads spill; 512
#: ran the (32768, 8192) float32 roll at 64% of memcpy, 256 at 85%, the other rows within a point).
RUN_REGISTERS = 120
RUN_CYCLE_THREADS = 256
#: half-swaps: threads a block and 16-byte vectors of each run a thread holds at once.
HALF_SWAP_THREADS = 256
HALF_SWAP_VECS = 4
#: Block-swap fallback limits: beyond these, three reversals are cheaper.
MAX_SWAP_PASSES = 16
MAX_SWAP_ROWS = 64


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


@contextlib.contextmanager
def override(**values):
    """Temporarily change ``settings`` (tile_bytes, threads, buffers, grid)."""
    unknown = set(values) - set(settings)
    if unknown:
        raise KeyError(f"unknown GPU settings {sorted(unknown)}; known: {sorted(settings)}")
    global _settings_key
    saved = dict(settings)
    settings.update(values)
    _settings_key = None
    try:
        yield
    finally:
        settings.clear()
        settings.update(saved)
        _settings_key = None


_settings_key = None


def settings_key() -> tuple:
    """``settings`` as a hashable key; rebuilt only after ``override`` changed them."""
    global _settings_key
    if _settings_key is None:
        _settings_key = tuple(sorted(settings.items()))
    return _settings_key


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
    variant = settings["chain_variant"] or DEFAULT_CHAIN_VARIANT
    if variant not in ("control-warp", "pipeline", "single", "auto"):
        raise ValueError(f"chain_variant must be 'control-warp', 'pipeline', 'single', 'auto' or None, "
                         f"got {variant!r}")
    if variant == "pipeline":
        capability = device_capability(_device_id())
        if capability < PIPELINE_MIN_CAPABILITY:
            if settings["chain_variant"] == "pipeline":
                raise ValueError(
                    f"chain_variant='pipeline' needs a GPU of compute capability "
                    f"{'.'.join(map(str, PIPELINE_MIN_CAPABILITY))} or newer (bulk copies, mbarrier transaction "
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
    """Data threads of a chain kernel block (``settings["threads"]``, or the variant's default)."""
    if settings["threads"]:
        return int(settings["threads"])
    return PIPELINE_THREADS if chain_pipeline() else _kernels.THREADS


def chain_pipeline() -> bool:
    """Whether chain steps run the pipelined variant: a producer thread bulk-copies sources and clears
    waits, data warps write with no block barrier (``_kernels.chain_kernel(pipeline=True)``)."""
    return _chain_variant() == "pipeline"


def _chain_decode() -> str:
    decode = settings["chain_decode"]
    if decode not in ("runs", "direct"):
        raise ValueError(f"chain_decode must be 'runs' or 'direct', got {decode!r}")
    return decode


def blocks_per_sm(tile_bytes: int, threads: int, buffers: int, control_warp: bool = False) -> int:
    """Blocks of the chain kernel that fit an SM at once: what ``launch_bounds`` asks ptxas for.

    Shared memory sets the first bound; registers the second: the kernel's
    thread-0 bookkeeping would take 180 registers a thread if let, which
    leaves one 256-thread block per SM, so ptxas is asked to fit
    ``settings["min_blocks"]`` (default: up to 3, 80 registers; more spill
    the bookkeeping).
    """
    _, smem_per_sm = device_shape(_device_id())
    block = threads + _kernels.control_threads(control_warp, control_warp and chain_pipeline())
    per_block = _kernels.smem_bytes(tile_bytes, buffers, control_warp) + 1024  # 1 KiB the driver reserves per block
    fit = max(1, min(smem_per_sm // per_block, 2048 // block, 32))
    wanted = settings["min_blocks"] or 3
    return max(1, min(fit, wanted, 65536 // (block * 32)))


def persistent_grid(tile_bytes: int, threads: int, buffers: int, control_warp: bool = False) -> int:
    """Blocks that fit on the GPU at once: the persistent grid.

    Blocks beyond what fits only wait for a free SM; they never deadlock
    (every wait is on an earlier lane), they only queue.
    """
    if settings["grid"]:
        return int(settings["grid"])
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


#: A co-resident plan's lane scan (``co_resident_lane_steps``): lane lengths from the shortest that gives
#: every resident block at most one lane up to CO_RESIDENT_NEAR times it first (the one that pre-reads
#: least), up to CO_RESIDENT_SCAN times it where nothing fitted (the shortest that fits). Fewer lanes, fewer
#: busy blocks. Up to 1.25 alone, 3 of 6 random 1 GiB shifts found no length within the bound; up to 2.0,
#: none missed (docs/results/co-resident-scan-1g-h200.log).
CO_RESIDENT_SCAN = 2.0
CO_RESIDENT_NEAR = 1.25
#: Lane counts that load every SM alike (``even_lane_steps``): ``b`` blocks on each SM, or on all but at most
#: this fraction of them, which then hold ``b - 1``. A co-resident launch ends with its slowest lane, and
#: blocks on SMs that hold one block more than others ran slower: traced at 1 GiB
#: (benchmarks/chain_trace.py), the last block ended 16-22 us after the median one where the lanes filled the
#: SMs evenly (263 and 382 lanes on 132 SMs), 43-103 us where they did not (152-323 lanes). Among even
#: counts more blocks an SM won: 382 lanes (3 an SM) ran 2 points faster than 255 (2 an SM).
CO_RESIDENT_EVEN_SLACK = 0.15


def even_lane_steps(rows: int, m_max: int, shortest: int, longest: int, sms: int) -> np.ndarray:
    """The lane lengths in ``[shortest, longest]`` whose lane count fills the SMs evenly
    (``CO_RESIDENT_EVEN_SLACK``), at least two blocks an SM (one leaves too few bytes in flight)."""
    steps = np.arange(shortest, longest + 1, dtype=np.int64)
    lanes = rows * -(-m_max // steps)
    per_sm = -(-lanes // sms)
    even = (per_sm >= 2) & (lanes >= per_sm * sms - int(CO_RESIDENT_EVEN_SLACK * sms))
    return steps[even]


def cooperative_launch() -> bool:
    """Whether chain plans may be co-resident: a real GPU (the simulator runs blocks one after another),
    ``settings["co_resident"]``, and a cuda.core that launches cooperatively (``is_cooperative``)."""
    if SIMULATED or not settings["co_resident"]:
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
    even = even_lane_steps(rows, m_max, shortest, max(shortest, int(shortest * CO_RESIDENT_SCAN)), sms)
    reach = CO_RESIDENT_SCAN if far else CO_RESIDENT_NEAR
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
    if best is None and cooperative_launch() and not settings["lane_steps"]:
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
    threads = chain_threads()
    heads = _heads(rows, seg, head0)
    tile_sizes = [settings["tile_bytes"]]
    if settings["tile_bytes"] >= 32 * 1024:
        tile_sizes.append(settings["tile_bytes"] // 2)
    co_resident_ok = cooperative_launch()
    # Costs first (``count_kinds``: one walk of the row), plan tables only for the cheapest: a table
    # layout is the planner's slowest step, and only the cheapest configuration that fits is used.
    priced = []
    for tile_bytes in tile_sizes:
        rings = [settings["buffers"]] + [b for b in (3, 4) if b > settings["buffers"] and
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
              candidates = [] if far else [(settings["lane_steps"] or per_block, False)]
              if co_resident_ok and not settings["lane_steps"]:
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
                  cost += rows * m0 * ITEM_COST_BYTES
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
            score = (rows * row_bytes, cfg["co_resident"], cfg["buffers"] != settings["buffers"], -cfg["tile_bytes"])
            if best is None or score < best[0]:
                best = (score, dict(cfg, scratch_row=row_bytes, table=table))
        if best is not None:
            return best[1]
        start = end
    return None


def default_cap(rows: int, seg: int) -> int:
    return max(rows * seg // SCRATCH_FRACTION, MIN_SCRATCH)


#: The GPU schedules in order of preference: ``(name, plan)``, where
#: ``plan(axis, shift, rows, seg, left, word, pointer, cap)`` returns a Step
#: or None when the schedule cannot take the problem within ``cap`` bytes of
#: scratch. ``launch.RUNNERS`` holds the runner of each name; the last
#: schedule takes every problem.
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
            details={
                "schedule": "chain",
                "tile_bytes": cfg["tile_bytes"],
                "block": chain_threads() + _kernels.control_threads(cfg["control_warp"], chain_pipeline()),
                "control_warp": cfg["control_warp"],
                "pipeline": chain_pipeline(),
                "bulk_store": chain_pipeline() and bool(settings["chain_bulk_store"]),
                "decode": _chain_decode(),
                "buffers": cfg["buffers"],
                "min_blocks": cfg["min_blocks"],
                "grid": min(cfg["grid"], rows * cfg["lanes_row"]),
                "chain_step": cfg["chain"],
                "lane_steps": cfg["lane_steps"],
                "lanes": rows * cfg["lanes_row"],
                "pre_read_bytes": pre_bytes,
                "head0": head0,
                # False: every wait is on an earlier (lane, step), any residency finishes; True: waits
                # on earlier (step, lane) keys, one block a lane, launched cooperatively (all resident).
                "co_resident": cfg["co_resident"],
                "_table": cfg["table"],
                "_scratch_row": cfg["scratch_row"],
                "_heads": len(cfg["heads"]),
                "_lanes_row": cfg["lanes_row"],
                "_m_max": cfg["m_max"],
                "_pre_row": pre_tickets_per_row(cfg["table"], seg, cfg["tile_bytes"]),
            },
        )
    return None


def _plan_block_swap(axis, shift, rows, seg, left, word, pointer, cap) -> Optional[Step]:
    # The pre-reads do not fit the scratch bound. Block swaps (Gries-Mills)
    # shrink the problem until they do, then the chain schedule finishes it;
    # when that takes too many passes (or rows), three reversals: no scratch, 4N.
    if rows <= MAX_SWAP_ROWS:
        swaps, (lo, sub_n, sub_k) = gries_mills(seg, left, lambda n, k: plan_chain(1, n, k, 0, cap) is not None,
                                                MAX_SWAP_PASSES)
        if len(swaps) <= MAX_SWAP_PASSES:
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
                details={
                    "tile_bytes": settings["tile_bytes"],
                    "block": settings["threads"] or _kernels.THREADS,
                    "grid": sms * 3,
                    "swaps": tuple(swaps),
                    "final": (lo, sub_n, sub_k),
                    "_final_steps": finals,
                    "reason": f"the chain schedule's pre-reads exceed max_scratch_bytes={cap}",
                },
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
        details={
            "block": 256,
            "grid": max(1, min(S.ceil_div(half_pairs, 256), device_shape(_device_id())[0] * 8)),
            "reason": f"the chain schedule's pre-reads exceed max_scratch_bytes={cap}",
        },
    )


def _plan_row_panels(axis, shift, rows, seg, left, word, pointer, cap) -> Optional[Step]:
    """Many rows shorter than a chain tile: ``lane-panels`` (the ``roll_rows`` kernel) with one shift.

    The chain kernel would make each such row an item of its own, with the
    per-item cost of a whole tile (a (2**20, 1000) uint8 roll ran at 2.5% of
    memcpy); lane-panels packs many rows into each panel (15% for those rows:
    docs/results/small-rows-32a60ab-h200.json).
    """
    if rows < 2 or seg >= settings["tile_bytes"]:
        return None
    step = plan_lane_panels(axis, rows, seg // word, word, pointer)
    if step is None:
        return None
    details = dict(step.details, schedule="row-panels", _shift=(seg - left) // word)
    return dataclasses.replace(step, shift=shift, left_bytes=left, algorithm="row-panels", details=details)


def _plan_half_swap_schedule(axis, shift, rows, seg, left, word, pointer, cap) -> Optional[Step]:
    """A roll by half the segment: every row swaps its two halves (``half-swaps``)."""
    return plan_half_swaps((rows,), (0,), rows, seg, left, word, pointer, axis, shift, left)


register_schedule("half-swaps", _plan_half_swap_schedule)
register_schedule("row-panels", _plan_row_panels)
register_schedule("chain", _plan_chain_schedule)
register_schedule("block-swap", _plan_block_swap)
register_schedule("reversal", _plan_reversal)


# --- per-lane shifts and one-pass multi-axis rolls (rotate/_cuda/_lanes.py) ---

def lane_unit(itemsize: int, head0: int) -> int:
    """The widest unit (1..16 bytes, a power of two) items and the array's 16-byte offset are made of."""
    unit = 16
    while unit > 1 and (itemsize % unit or head0 % unit):
        unit //= 2
    return unit


def _lane_writer(default: str) -> str:
    """``settings["lane_writer"]``, checked, or ``default`` when it is None."""
    writer = settings["lane_writer"] or default
    if writer not in ("runs", "gather"):
        raise ValueError(f"GPU setting lane_writer must be 'runs', 'gather' or None, got {writer!r}")
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
    from . import _lanes as L

    seg = n * itemsize
    head0 = pointer % 16
    unit = lane_unit(itemsize, head0)
    writer = _lane_writer("runs" if seg >= L.FAST_GATHER_ROW else "gather")
    if writer == "runs" or settings["lane_writer"] is None:  # the warps variant writes runs
        step = _plan_lane_warps(axis, rows, n, itemsize, head0)
        if step is not None:
            return step
    # The run writer's loops take 96 registers: big panels and wide blocks keep bytes in flight at one
    # block an SM (docs/tuning.md, "RUN_PANEL_BYTES"); the gather writer streams at 48.
    threads = settings["lane_threads"] or (RUN_THREADS if writer == "runs" else L.THREADS)
    panel_bytes = settings["panel_bytes"] or (RUN_PANEL_BYTES if writer == "runs" else L.PANEL_BYTES)
    panel_rows = max(1, min(L.MAX_PANEL_ROWS, panel_bytes // seg, rows))
    for buffers in (2, 1):  # two panels in flight per block if a lane allows, else one
        while panel_rows > 1 and L.panel_smem_bytes(panel_rows * seg, panel_rows, buffers) > MAX_LANE_SMEM:
            panel_rows //= 2
        smem = L.panel_smem_bytes(panel_rows * seg, panel_rows, buffers)
        if smem <= MAX_LANE_SMEM:
            break
    else:
        return None
    panels = S.ceil_div(rows, panel_rows)
    sms, _ = device_shape(_device_id())
    grid = settings["grid"] or sms * _blocks_for_smem(smem, threads, RUN_REGISTERS if writer == "runs" else 0)
    row_threads = 0
    if writer == "runs":
        row_threads = settings["row_threads"] or group_threads(threads, panel_rows)
        if row_threads < 1 or threads % row_threads:
            raise ValueError(f"GPU setting row_threads must divide the block's {threads} threads, got "
                             f"{row_threads!r}; use a power of two up to {threads}, or None")
    return _lane_panels_step(axis, rows, n, itemsize, block=threads, grid=max(1, min(grid, panels)),
                             panel_rows=panel_rows, buffers=buffers, writer=writer, row_threads=row_threads,
                             unit_bytes=unit, smem_bytes=smem, head0=head0,
                             _buf_vecs=L.buffer_vecs(panel_rows * seg))


def _lane_panels_step(axis: int, rows: int, n: int, itemsize: int, **details) -> Step:
    """A ``lane-panels`` step (either variant): every lane read once and written once, no scratch; lanes
    are disjoint, so no block waits for another."""
    return Step(axis, 0, rows, n * itemsize, 0, itemsize, algorithm="lane-panels", scratch_bytes=0,
                bytes_moved=2 * rows * n * itemsize,
                details={"schedule": "lane-panels", **details, "co_resident": False, "_n": n})


#: Lanes of WARP_LANE_MIN_BYTES to WARP_LANE_BYTES take lane-panels' ``warps`` variant by default: measured
#: at 2, 4 and 8 KiB (19%, 7-9% and 3% faster than the panel kernel); at 16 KiB a block of four warps'
#: slots leaves one block an SM. From 1 KiB with lanes of a quarter warp (``warp_group_threads``): 16%
#: faster than the gather writer there; at 512 B and 256 B the gather writer stays 22-44% faster
#: (docs/results/gpu-rows-lane-groups-*-h200.json).
WARP_LANE_BYTES = 8192
WARP_LANE_MIN_BYTES = 1024


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
    """``lane-panels``' ``warps`` variant (``_lanes.warp_lane_kernel``) where ``settings["lane_warps"]``
    takes it for lanes of ``n * itemsize`` bytes; else None."""
    from . import _lanes as L

    seg = n * itemsize
    choice = settings["lane_warps"]
    if choice is False or seg < 16 or (choice is None and not WARP_LANE_MIN_BYTES <= seg <= WARP_LANE_BYTES):
        return None
    threads = settings["lane_threads"] or (L.WARP_THREADS if seg <= 4096 else L.WARP_THREADS_LONG)
    slots = settings["warp_slots"] or L.WARP_SLOTS
    min_blocks = settings["warp_min_blocks"] or 0
    group = settings["warp_lane_threads"] or warp_group_threads(seg)
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
    if smem > MAX_LANE_SMEM:
        return None
    groups = threads // group
    sms, _ = device_shape(_device_id())
    registers = 65536 // (threads * min_blocks) if min_blocks else RUN_REGISTERS
    grid = settings["grid"] or sms * _blocks_for_smem(smem, threads, registers)
    return _lane_panels_step(axis, rows, n, itemsize, variant="warps", block=threads,
                             grid=max(1, min(grid, S.ceil_div(rows, groups))), slots=slots, min_blocks=min_blocks,
                             lane_threads=group, writer="runs", smem_bytes=smem, head0=head0,
                             _slot_vecs=L.warp_slot_vecs(seg))


def group_threads(threads: int, panel_rows: int) -> int:
    """Threads of a group that writes one lane of a ``lane-panels`` panel with the run writer.

    Groups of at least MIN_ROW_THREADS, as many as the panel has lanes (the
    largest such power-of-two split of ``threads``). Not balanced: 24 lanes
    of 4 KiB in a 512-thread block get 16 groups of 32, so half the groups
    idle through the second round; groups of 64 would take three full rounds
    (not measured; ``settings["row_threads"]`` forces a
    size for that A/B).
    """
    size = threads
    while size // 2 >= MIN_ROW_THREADS and size % 2 == 0 and threads // size < panel_rows:
        size //= 2
    return size


#: ``roll_rows`` lanes beyond ``lane-panels`` with shifts on the host take ``lane-chains`` (one
#: chain launch per run of lanes with equal shifts, each over the whole GPU) only when there are at
#: most this many lanes of at least MIN_CHAIN_LANE_BYTES: ``lane-swaps`` gives a lane one block, so
#: a handful of huge lanes would leave almost every SM idle, while a chain step per lane costs a
#: host plan (milliseconds) that such lanes amortise. Reasoned, not measured (docs/tuning.md).
MAX_CHAIN_LANES = 8
MIN_CHAIN_LANE_BYTES = 64 << 20


def plan_long_lanes(axis: int, rows: int, n: int, itemsize: int, pointer: int,
                    max_scratch_bytes: Optional[int] = None, host_shifts=None) -> Step:
    """``roll_rows`` of lanes too long for ``lane-panels``: ``lane-swaps`` (one launch, shifts read on the
    device), or ``lane-chains`` for a few huge lanes whose shifts are on the host."""
    seg = n * itemsize
    if host_shifts is not None and rows <= MAX_CHAIN_LANES and seg >= MIN_CHAIN_LANE_BYTES:
        return plan_lane_chains(axis, rows, n, itemsize, pointer, max_scratch_bytes, host_shifts)
    choice = settings["long_lanes"]
    if choice not in (None, "walks", "swaps"):
        raise ValueError(f"GPU setting long_lanes must be 'walks', 'swaps' or None, got {choice!r}")
    if choice == "walks" or (choice is None and seg >= WALK_MIN_LANE_BYTES):
        step = plan_lane_walks(axis, rows, n, itemsize, pointer, max_scratch_bytes, host_shifts)
        if step is not None:
            return step
        if choice == "walks":
            raise ValueError(f"GPU setting long_lanes='walks' cannot take lanes of {seg} bytes: a walk has at "
                             f"most {_walk_limits(seg)[1]} tiles; use long_lanes=None")
    return plan_lane_swaps(axis, rows, n, itemsize, pointer, host_shifts)


#: ``roll_rows`` lanes from this long take ``lane-walks`` by default, shorter ones ``lane-swaps``. Measured on
#: an H200 with lanes by ticket (docs/tuning.md, "WALK_MIN_LANE_BYTES"), 1 GiB each: walks
#: 0.81 ms against block swaps' 1.06-1.10 at 1 MiB lanes, 0.85 against 1.19 at 2 MiB; block swaps 0.94
#: against 1.23 at 512 KiB, 0.21 against 0.47 at 256 KiB (256 MiB).
WALK_MIN_LANE_BYTES = 1 << 20

#: ``lane-walks``' default scratch a block: this share of a lane. In the H200 run at af6e334 (random shifts,
#: docs/results/gpu-rows-af6e334-h200.json) 255 of 256 4 MiB lanes, 1002 of 1024 4 MiB float32 lanes and 944
#: of 1024 1 MiB lanes fitted it and walked; there a lane whose spans exceeded it took block swaps, which
#: set the launch's end at one lane a block (docs/tuning.md, "WALK_SHARE").
WALK_SHARE = 1 / 12
#: The same where there are no more lanes than blocks: a block's share then holds one lane only, and a
#: larger one lets the choice take fewer, larger tiles over more pre-reads (the slowest lane ends such
#: a launch). Measured on an H200, 256 lanes of 4 MiB (docs/tuning.md, "WALK_SHARE_ONE_LANE").
WALK_SHARE_ONE_LANE = 1 / 6
#: ``lane-walks``' default pool, for lanes whose spans exceed their block's share: this share of the array.
#: Replaying the kernel's choice on the CPU for seeded random shifts (benchmarks/walk_penalty_probe.py,
#: docs/results/walk-penalty-probe.json, rule "kernel") it turns away no lane of 2-4 MiB and 9 of 1,024 of
#: 1 MiB; on the H200 every 4 MiB lane of the traced runs walked (docs/tuning.md, "WALK_POOL").
WALK_POOL = 1 / 100


def _walk_limits(seg: Optional[int] = None):
    """``(tile_bytes, max_tiles, buffers)`` of ``lane-walks`` for lanes of ``seg`` bytes under the current
    settings: by default the wide tiles (``_lanes.WALK_WIDE_TILE_BYTES``) for lanes from
    ``_lanes.WALK_WIDE_MIN_LANE_BYTES`` that fit their most tiles, else ``_lanes.WALK_TILE_BYTES``."""
    from . import _lanes as L

    tile, max_tiles = settings["walk_tile_bytes"], settings["walk_max_tiles"]
    if tile is None and max_tiles is None and seg is not None and seg >= L.WALK_WIDE_MIN_LANE_BYTES:
        tile_lo, tile_hi = S.walk_tile_range(seg, L.WALK_WIDE_TILE_BYTES, L.WALK_WIDE_MAX_TILES)
        if tile_lo <= tile_hi:
            tile, max_tiles = L.WALK_WIDE_TILE_BYTES, L.WALK_WIDE_MAX_TILES
    tile = tile or L.WALK_TILE_BYTES
    max_tiles = max_tiles or L.WALK_MAX_TILES
    buffers = settings["walk_buffers"] or L.WALK_BUFFERS
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
    d = step.details
    if step.algorithm != "lane-walks":
        raise ValueError(f"walk_traffic takes a lane-walks step, got {step.algorithm!r}")
    moved, walked = _walk_traffic_compiled()(np.asarray(shifts, np.int64).reshape(-1), d["_n"], step.word_bytes,
                                             d["head0"], d["tile_bytes"][1], d["max_tiles"], d["buffers"] - 1,
                                             d["share_bytes"], d["pool_bytes"], d["save_bytes"])
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
    threads = settings["lane_threads"] or L.THREADS
    panel = int(settings["swap_panel_bytes"])
    save = settings["swap_save_bytes"]
    save = L.walk_save_bytes(panel) if save is None else int(save)
    smem = L.walk_smem_bytes(tile_max, buffers, max_tiles, panel, save, threads)
    if smem > L.MAX_BLOCK_SMEM:
        raise ValueError(f"GPU settings walk_tile_bytes={tile_max}, walk_buffers={buffers}, walk_max_tiles="
                         f"{max_tiles} need {smem} bytes of shared memory a block, more than {L.MAX_BLOCK_SMEM}; "
                         f"choose smaller ones")
    sms, _ = device_shape(_device_id())
    min_blocks = settings["walk_min_blocks"]
    if min_blocks is not None and (int(min_blocks) != min_blocks or not 1 <= min_blocks <= 2048 // threads):
        raise ValueError(f"GPU setting walk_min_blocks must be an integer from 1 to {2048 // threads}, "
                         f"got {min_blocks!r}")
    resident = _blocks_for_smem(smem, threads)
    if min_blocks is not None:
        resident = min(resident, int(min_blocks))
    grid = max(1, min(settings["grid"] or sms * resident, rows))
    share = settings["walk_share_bytes"]
    if share is None:
        share = int(seg * (WALK_SHARE_ONE_LANE if rows <= grid else WALK_SHARE))
        if max_scratch_bytes is not None:
            share = min(share, max_scratch_bytes // grid)
    share = int(share) // 16 * 16
    if share < 0:
        raise ValueError(f"GPU setting walk_share_bytes must be >= 0, got {settings['walk_share_bytes']!r}")
    pool = settings["walk_pool_bytes"]
    if pool is None:
        pool = int(rows * seg * WALK_POOL)
        if max_scratch_bytes is not None:
            pool = min(pool, max(0, max_scratch_bytes - grid * share))
    pool = int(pool) // 16 * 16
    if pool < 0:
        raise ValueError(f"GPU setting walk_pool_bytes must be >= 0, got {settings['walk_pool_bytes']!r}")
    return Step(
        axis, 0, rows, seg, 0, itemsize,
        algorithm="lane-walks",
        scratch_bytes=grid * share + pool,
        bytes_moved=4 * rows * seg,
        details={
            "schedule": "lane-walks",
            "block": threads,
            "grid": grid,
            "smem_bytes": smem,
            "tile_bytes": (tile_lo, tile_hi),
            "buffers": buffers,
            "max_tiles": max_tiles,
            "min_blocks": int(min_blocks or 1),
            "share_bytes": share,
            "pool_bytes": pool,
            "save_bytes": save,
            "panel_bytes": panel,
            "head0": pointer % 16,
            "launches": 1,
            "bytes_moved_is_bound": True,
            "co_resident": False,  # a block rotates whole lanes by itself: no block waits for another
            "reason": "lanes longer than a block's shared memory: a block walks each of its lanes in chain "
                      "order (one pass), pre-reading into its share of scratch or, over it, the launch's "
                      "pool; block swaps for a lane whose pre-reads fit neither",
            "_n": n,
        },
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

    panel = int(settings["swap_panel_bytes"])
    panel_vecs = L.buffer_vecs(panel)
    save = settings["swap_save_bytes"]
    if save is None:
        _, smem_per_sm = device_shape(_device_id())
        budget = min(MAX_LANE_SMEM, smem_per_sm // 2 - 1024 - 64)  # two blocks, the driver's 1 KiB, static
        save = L.save_capacity(max(2 * panel_vecs, budget // 16 - 2 * panel_vecs))
    smem = L.swap_smem_bytes(panel, int(save))
    if smem > L.MAX_BLOCK_SMEM:
        raise ValueError(f"GPU settings swap_panel_bytes={panel} and swap_save_bytes={save} need {smem} bytes "
                         f"of shared memory a block, more than {L.MAX_BLOCK_SMEM}; choose smaller sizes")
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
    threads = settings["lane_threads"] or L.THREADS
    sms, _ = device_shape(_device_id())
    grid = settings["grid"] or sms * _blocks_for_smem(smem, threads)
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
        details={
            "schedule": "lane-swaps",
            "block": threads,
            "grid": max(1, min(grid, rows)),
            "smem_bytes": smem,
            "panel_bytes": panel,
            "save_bytes": save,
            "head0": pointer % 16,
            "launches": 1,
            "bytes_moved_is_bound": bound,
            "co_resident": False,  # a block rotates whole lanes by itself: no block waits for another
            "reason": "lanes longer than a block's shared memory: a block per lane, shifts read on the device "
                      "(no synchronisation); lane-chains only for at most "
                      f"{MAX_CHAIN_LANES} lanes of {MIN_CHAIN_LANE_BYTES >> 20} MiB or more with host shifts",
            "_n": n,
        },
    )


def plan_lane_chains(axis: int, rows: int, n: int, itemsize: int, pointer: int,
                     max_scratch_bytes: Optional[int], host_shifts) -> Step:
    """``roll_rows`` of a few huge lanes with host shifts: one chain launch per run of lanes with equal
    shifts, each spread over the whole GPU (see MAX_CHAIN_LANES). Every run's chain step is planned here,
    from the shifts (``details["runs"]``: first lane, end lane, Step); the launcher runs them as given."""
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
            sub = plan_step(None, s, end - lane, seg, (n - s) * itemsize, itemsize, (pointer + lane * seg) % 16,
                            max_scratch_bytes)
            runs.append((lane, end, sub))
        lane = end
    return Step(
        axis, 0, rows, seg, 0, itemsize,
        algorithm="lane-chains",
        scratch_bytes=max((sub.scratch_bytes for _, _, sub in runs), default=0),
        # lanes rolled by 0 are counted as read and written once, as every roll_rows plan counts them
        bytes_moved=sum(sub.bytes_moved for _, _, sub in runs) + 2 * seg * (rows - sum(e - b for b, e, _ in runs)),
        details={
            "schedule": "lane-chains",
            "max_scratch_bytes": max_scratch_bytes,
            "launches": len(runs),
            "runs": tuple(runs),
            "head0": pointer % 16,
            "reason": f"at most {MAX_CHAIN_LANES} lanes of {MIN_CHAIN_LANE_BYTES >> 20} MiB or more, shifts on the "
                      f"host: one chain launch per run of equal shifts uses the whole GPU, where lane-swaps "
                      f"would give each lane one block",
        },
    )


#: Shared memory the lane kernels may ask for per block (rotate/_cuda/_lanes.py).
MAX_LANE_SMEM = 226 * 1024
#: Cycle-kernel tables above this many segments: one pass per axis instead.
MAX_SEGMENTS = 1 << 17
#: Rows shorter than this: one pass per axis (a step per row costs more than its bytes).
MIN_CYCLE_ROW = 2048


#: Rows from this length swap through the chunked row-cycles kernel by default (measured at 64 KiB).
MIN_CHUNKED_SWAP_ROW = 64 * 1024
#: What the ``cycle_variant`` setting takes (None: the planner's pick).
CYCLE_VARIANTS = (None, "three-rows", "chunked", "chunked-scratch")
#: Chunk sizes and ring depths the chunked row-cycles variant picks from.
CYCLE_CHUNKS = (32768, 16384, 8192, 4096)
CYCLE_RINGS = (2, 3, 4)
#: Bytes staged ahead per SM that the chunked variant aims for before it prefers more blocks an SM
#: (a prediction from Little's law, about 36 GB/s an SM x ~1.5 us; not measured).
CYCLE_AHEAD_BYTES = 64 * 1024


def _check_cycle_settings() -> None:
    variant, chunk, ring = settings["cycle_variant"], settings["cycle_chunk_bytes"], settings["cycle_ring"]
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
    from . import _lanes as L

    chunks = [int(settings["cycle_chunk_bytes"])] if settings["cycle_chunk_bytes"] else CYCLE_CHUNKS
    rings = [int(settings["cycle_ring"])] if settings["cycle_ring"] else CYCLE_RINGS
    best = None
    for chunk in chunks:
        for ring in rings:
            smem = L.cycle_stream_smem_bytes(seg, chunk, ring, first_rows_in_smem)
            if smem > limit:
                continue
            threads = settings["lane_threads"] or L.cycle_stream_threads(chunk)
            blocks = min(_blocks_for_smem(smem, threads), max_blocks)
            score = (min((ring - 1) * min(chunk, seg + 15) * blocks, CYCLE_AHEAD_BYTES), blocks, -smem)
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
    it (``settings["flat_strips"]``: None, that rule; True, wherever it applies; False, never); else one
    ``row-cycles`` step. None when none takes
    it (one pass per axis then)."""
    lead, offs, seg, block = _fold_rows(shape, itemsize, c_shifts)
    rows = int(np.prod(lead, dtype=np.int64)) if lead else 1
    row_shift = c_shifts[max(c_shifts)] * block
    step = plan_half_swaps(lead, offs, rows, seg, row_shift, itemsize, pointer)
    if step is not None:
        return (step,)
    # A forced cycle variant asks for row-cycles (measurements, tests), as it does over half-swaps.
    flat = settings["flat_strips"] is not False and settings["cycle_variant"] is None
    steps = plan_flat_strips(lead, offs, seg, row_shift, itemsize, pointer, cap) if flat else None
    if steps is not None and (settings["flat_strips"]
                              or steps[1].seg_bytes <= FLAT_STRIP_FRACTION * steps[0].seg_bytes):
        return steps  # a narrow strip: row-cycles need not be planned at all
    step = plan_row_cycles(shape, itemsize, c_shifts, pointer, cap)
    if step is None:
        return steps  # a wide strip, but row-cycles cannot take the roll (None if neither can)
    return (step,)


#: ``flat_strips`` replaces a ``row-cycles`` step only when its strip is at most this share of the rows:
#: the strip moves its bytes a second time, so a strip of a quarter of every row costs a pass at 85% about
#: as much as one at 75% (reasoned from the 0.04-1% strips of docs/results/gpu-rows-multi-axis-flat-strips-
#: h200.json, where row-cycles ran 16-76% and the flat pass and strip 73-91%; wide strips not measured).
#: Aligned two-row swaps (half of every row moved) stay with row-cycles' fast chunked swaps.
FLAT_STRIP_FRACTION = 0.125


#: Registers a thread of the row-strips kernel takes (ptxas for sm_90, four vectors a thread: 72).
STRIP_REGISTERS = 72
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
    threads = settings["lane_threads"] or _strips.THREADS
    vecs = _strips.VECS
    sms, _ = device_shape(_device_id())
    blocks = sms * _blocks_for_smem(0, threads, STRIP_REGISTERS)
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
        details={
            "schedule": "row-strips",
            "block": threads,
            "grid": max(1, min(blocks, items)),
            "vecs": vecs,
            "items": items,
            "chunks": chunks,
            "chunk_rows": chunk_rows,
            "rows": rows,
            "pitch": seg,
            "strip": (lo, hi),
            "up": up,
            "v_lo": v_lo,
            "vectors": nv,
            "co_resident": False,  # no block waits for another
        },
    )


def plan_half_swaps(lead, lead_shifts, rows: int, seg: int, row_shift: int, word: int, pointer: int,
                    axis: Optional[int] = None, shift: int = 0, left: int = 0) -> Optional[Step]:
    """``half-swaps`` (rotate/_rowperm.py): every rolled axis by half its length, as disjoint swaps of runs.

    ``lead``/``lead_shifts``: the leading radices and their shifts (``(rows,)``
    and ``(0,)`` for a one-axis roll: every row swaps its own halves; ``axis``,
    ``shift`` and ``left`` then fill the step as for other schedules); ``row_shift``: the
    in-row shift in bytes. None unless it is a half-swap whose runs are
    16-byte aligned (the array's start, ``seg`` and ``seg / 2``), or when
    ``settings["half_swaps"]`` is off or a row-cycles variant is forced.
    """
    from .._rowperm import half_swap_shape

    if not settings["half_swaps"] or settings["cycle_variant"] is not None:
        return None
    shape = half_swap_shape(tuple(lead), tuple(lead_shifts), seg, row_shift)
    if shape is None or pointer % 16 or seg % 32 or rows < 1:
        return None
    dims, halves = shape
    if int(np.prod(dims, dtype=np.int64)) != rows:
        return None
    half = seg // 2
    threads = settings["lane_threads"] or HALF_SWAP_THREADS
    if threads < 1 or threads & (threads - 1):
        # A row's group is the block halved until it fits the half: only a power of two splits evenly.
        raise ValueError(f"GPU setting lane_threads must be a power of two for half-swaps, got {threads!r}; "
                         f"use 256 (the default) or set half_swaps=False")
    vecs = settings["half_swap_vecs"] or HALF_SWAP_VECS
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
    grid = settings["grid"] or sms * max(1, 2048 // threads)
    return Step(
        axis, shift, rows, seg, left, word,
        algorithm="half-swaps",
        scratch_bytes=0,
        bytes_moved=2 * rows * seg,
        details={
            "schedule": "half-swaps",
            "block": threads,
            "grid": max(1, min(grid, items)),
            "vecs": vecs,
            "group": group,
            "rows_per_item": rows_per_item,
            "chunk_bytes": chunk,
            "items": items,
            "chunks_per_half": chunks_per_half,
            "lead": dims,
            "lead_shifts": halves,
            "co_resident": False,  # no block waits for another
        },
    )


def plan_row_cycles(shape: tuple, itemsize: int, c_shifts: dict, pointer: int,
                    cap: Optional[int]) -> Optional[Step]:
    """A multi-axis roll of a C-ordered array in one pass (``row-cycles``), or None.

    ``c_shifts`` maps C-order axes to shifts in ``(0, length)``. The axes up
    to the last rolled one index rows; the last rolled axis and everything
    after it form a row, rolled while it moves. Two kernels (``details
    ["variant"]``): ``three-rows`` (``cycle_kernel``: a saved first row and
    two staging buffers a block, rows up to about 75 KiB) and, where three
    rows do not fit, ``chunked`` (``cycle_stream_kernel``: the saved first
    row and a ring of chunks; rows up to about 200 KiB keep first rows in
    shared memory, longer ones pre-read every segment's first row into
    scratch). None when a row is shorter than MIN_CYCLE_ROW, the leading
    axes do not fold into MAX_LEAD radices, the table is too large or the
    pre-reads exceed ``cap``.
    """
    from . import _lanes as L

    _check_cycle_settings()
    last = max(c_shifts)
    lead, offs, seg, block = _fold_rows(shape, itemsize, c_shifts)
    head0 = pointer % 16
    unit = lane_unit(itemsize, head0)
    if seg < MIN_CYCLE_ROW:
        return None
    if len(lead) > L.MAX_LEAD:
        return None
    rows = int(np.prod(lead, dtype=np.int64)) if lead else 1
    limit = settings["cycle_smem"] or MAX_LANE_SMEM
    variant = settings["cycle_variant"]
    sms, _ = device_shape(_device_id())
    stream = None
    # Measured (docs/results/gpu-rows-chunked-mid-h200.json): where every cycle is a swap of two rows
    # (an involution: fftshift of even lengths) and the in-row shift keeps 16-byte alignment, the
    # chunked kernel ran 64 KiB rows at 67-69% against 61-67% for three rows; on long cut cycles with
    # misaligned row shifts it lost 19-22 points, and on 4 KiB rows (the 512^3 fftshift: 131,072
    # swaps) 20 points. So the default takes it only for aligned swaps of rows of 64 KiB and more.
    swaps_aligned = (head0 == 0 and seg >= MIN_CHUNKED_SWAP_ROW and (c_shifts[last] * block) % 16 == 0
                     and all((2 * s) % n == 0 for n, s in zip(lead, offs)))
    writer = _lane_writer("runs")
    if variant in (None, "three-rows") and L.cycle_smem_bytes(seg) <= limit and \
            not (variant is None and swaps_aligned):
        smem = L.cycle_smem_bytes(seg)
        threads = settings["lane_threads"] or L.cycle_threads(seg)
        if writer == "runs":
            threads = settings["lane_threads"] or min(threads, RUN_CYCLE_THREADS)
        blocks = _blocks_for_smem(smem, threads, RUN_REGISTERS if writer == "runs" else 0)
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
    grid = settings["grid"] or sms * blocks
    slot = S.align_up(seg + 32)
    cap = default_cap(rows, seg) if cap is None else cap
    piece = max(4, S.ceil_div(rows, 2 * grid))
    while True:
        table = L.segment_table(tuple(lead), tuple(offs), piece)
        nseg = len(table) // 3
        cut = int(np.count_nonzero(table[2::3] != np.arange(nseg)))
        pre_reads = cut if first_rows_in_smem else nseg  # first rows copied to scratch
        pre_bytes = nseg * slot if pre_reads else 0  # slots are indexed by segment
        if nseg <= MAX_SEGMENTS and pre_bytes <= cap:
            break
        if piece >= rows:
            return None
        piece *= 2
    if stream is not None and nseg < sms * blocks:  # fewer walks than blocks: deeper rings, fewer blocks
        stream = _cycle_stream_config(seg, limit, first_rows_in_smem, S.ceil_div(nseg, sms))
        chunk, ring, smem, threads, blocks = stream
        grid = settings["grid"] or sms * blocks
    dims = (1,) * (L.MAX_LEAD - len(lead)) + tuple(lead)
    shifts = (0,) * (L.MAX_LEAD - len(offs)) + tuple(offs)
    details = {
        "schedule": "row-cycles",
        "variant": "three-rows" if stream is None else "chunked",
        "block": threads,
        "grid": max(1, min(grid, 2 * nseg)),
        "segments": nseg,
        "cut_segments": cut,
        "pre_read_rows": pre_reads,
        "piece_rows": piece,
        "smem_bytes": smem,
        "blocks_per_sm": blocks,
        "first_rows": "shared memory" if first_rows_in_smem else "scratch",
        "head0": head0,
        "lead": dims,
        "lead_shifts": shifts,
        "row_shift_bytes": c_shifts[last] * block,
        "co_resident": False,  # every wait is on an earlier ticket (a pre-read)
        "_table": table,
        "_slot": slot,
        "_pre_bytes": pre_bytes,
    }
    if stream is None:
        details.update(unit_bytes=unit, writer=writer, _buf_vecs=L.buffer_vecs(seg))
    else:
        details.update(chunk_bytes=chunk, ring=ring, chunks_per_row=L.chunks_per_row(seg, chunk),
                       _ring_vecs=L.chunk_vecs(chunk), _saved_vecs=L.buffer_vecs(seg) if first_rows_in_smem else 0)
    return Step(
        None, 0, rows, seg, 0, itemsize,
        algorithm="row-cycles",
        scratch_bytes=pre_bytes + 4 * nseg + table.nbytes + 64,
        bytes_moved=2 * rows * seg + 2 * pre_reads * seg,
        details=details,
    )
