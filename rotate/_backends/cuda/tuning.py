"""The CUDA backend's tuning policies, one per compute-capability class (rotate/_backends/cuda/schedules/ plan from them).

Two kinds of field:

* the planner's values (``scratch_fraction``, ``item_cost_bytes``, the ``default_*`` fields ...): what it
  sizes and chooses with; ``docs/tuning.md`` ("GPU") says why each is what it is and which result file
  measured it;
* forcing fields (``threads``, ``lane_writer``, ``cycle_variant`` ...): None lets the planner choose; a
  value forces that choice (tests run tiny tiles in the simulator; measurements compare variants).

The compiled kernels take every size from their launch, which the planner fills from the policy; what a
kernel bakes in at compile time (table layouts, a warp's width) is the kernel module's own constant.
Importing this module imports nothing of numba.
"""

from __future__ import annotations

import dataclasses
from typing import Optional, Tuple

from ..._core.tuning import Policies, Policy

#: The pipelined chain variant's PTX (cp.async.bulk, mbarrier.expect_tx) needs Hopper (sm_90) or newer.
PIPELINE_MIN_CAPABILITY = (9, 0)


@dataclasses.dataclass(frozen=True)
class CudaTuning(Policy):
    # --- scratch ------------------------------------------------------------------------------------
    #: Default scratch bound: the larger of the array's bytes over this and ``min_scratch``.
    scratch_fraction: int = 100
    min_scratch: int = 16 << 20
    #: Where the caller gave no bound, a chain whose pre-reads pass the default one may take up to this
    #: share of the array before block swaps (4N) take the roll.
    chain_default_share: float = 1 / 8

    # --- the chain kernel (roll: one pass, flag-chained lanes) --------------------------------------
    #: Tile and ring: 32 KiB tiles, three buffers (two items' copies in flight while the third is
    #: written; two blocks an SM). Two buffers (three blocks an SM) ran 6 points slower.
    tile_bytes: int = 32 * 1024
    buffers: int = 3
    #: Data threads of a chain block; None: ``default_threads``, or ``pipeline_threads`` pipelined.
    threads: Optional[int] = None
    default_threads: int = 256
    #: Data threads of a pipelined chain block (six warps, plus the producer's and the decoder's): 128-224
    #: ran within a point of each other; 256 capped registers at two blocks an SM and spilled, 3-15 points
    #: slower (docs/results/chain-ab-pipeline-h200.jsonl).
    pipeline_threads: int = 192
    #: The chain kernel's fixed cost per item in bytes of traffic: 1 GiB uint8 shift 3 ran 0.676 ms with
    #: 32768 items of 32 KiB and 0.887 ms with 65536 of 16 KiB (H200): 6.4 ns an item for the whole GPU.
    item_cost_bytes: int = 26 * 1024
    #: The variant when ``chain_variant`` is None: "pipeline" (a producer warp bulk-copies sources, a
    #: decoder warp decodes ahead, data warps write with no block barrier) ran every gate shift 3-12 points
    #: faster than the others (docs/results/chain-ab-pipeline-h200.jsonl); it needs Hopper.
    default_chain_variant: str = "pipeline"
    #: Forces a variant: "pipeline", "control-warp", "single", "auto" (single below a tile, else
    #: control-warp); None: ``default_chain_variant``.
    chain_variant: Optional[str] = None
    #: Item decoding: "direct" takes one-array-run items and WAIT-free readers off the packed plan entry
    #: (0-1 points faster than "runs", docs/results/chain-ab-pipeline-h200.jsonl).
    chain_decode: str = "direct"
    #: >0: ask ptxas to fit this many chain blocks an SM (caps registers); 0: up to 3.
    min_blocks: int = 0
    #: Blocks of the persistent grid; None: fill the GPU.
    grid: Optional[int] = None
    #: None: one lane per resident block; an int forces the lane length (tiles).
    lane_steps: Optional[int] = None
    #: Chain plans may be co-resident (one block a lane, launched cooperatively) where that pre-reads less.
    co_resident: bool = True
    #: The co-resident lane scan: lengths from the shortest that gives every block at most one lane, up to
    #: ``co_resident_near`` times it first, then up to ``co_resident_scan`` times it (up to 1.25 alone, 3 of
    #: 6 random 1 GiB shifts found none within the bound; up to 2.0, none missed:
    #: docs/results/co-resident-scan-1g-h200.log).
    co_resident_scan: float = 2.0
    co_resident_near: float = 1.25
    #: Lane counts that load every SM alike, or all but this fraction of them: the last block ended 16-22 us
    #: after the median one where lanes filled SMs evenly, 43-103 us where they did not (traced at 1 GiB).
    co_resident_even_slack: float = 0.15

    # --- block swaps and reversals (what the chain cannot take in scratch) --------------------------
    #: Beyond these, three reversals are cheaper than block-swap passes.
    max_swap_passes: int = 16
    max_swap_rows: int = 64

    # --- roll_rows: lane-panels and its warps variant -----------------------------------------------
    #: lane-panels' block and panel (lanes packed into a panel's bytes); None: these defaults.
    lane_threads: Optional[int] = None
    default_lane_threads: int = 256
    panel_bytes: Optional[int] = None
    default_panel_bytes: int = 16 * 1024
    #: Lanes one panel holds at most (their shifts sit in shared memory too).
    max_panel_rows: int = 2048
    #: The run writer: the fewest threads a group writing one lane has, its block and panel (sweep of
    #: 32-96 KiB panels and 256-512 threads, 1 and 4 GiB, lanes of 4-64 KiB: docs/tuning.md, "lane-panels").
    min_row_threads: int = 32
    run_threads: int = 512
    run_panel_bytes: int = 96 * 1024
    #: Registers a thread of a kernel with the run writer takes at most (ptxas for sm_90: 92-114), and the
    #: widest row-cycles block that writes with it (512 threads ran a (32768, 8192) float32 roll at 64% of
    #: memcpy, 256 at 85%).
    run_registers: int = 120
    run_cycle_threads: int = 256
    #: The narrowest such block: halved from ``run_cycle_threads`` while registers, not shared memory, cap
    #: its blocks an SM (bytes in flight an SM are blocks times a row; rows of 4-16 KiB: 40-76% of memcpy
    #: at 128-256 threads, 63-95% at 64: docs/results/row-cycles-inflight-h100.json).
    run_cycle_min_threads: int = 64
    #: Threads a group writing one lane has; None: group_threads.
    row_threads: Optional[int] = None
    #: "runs" (each lane as two runs through the chain kernel's realigning loops), "gather" (each
    #: destination unit looks its source up) or "windows" (each destination vector built from the one to
    #: four source runs it covers); None: runs for lanes of 2 KiB and more and row-cycles, windows for
    #: lanes of 16 bytes to 2 KiB moved in units of at most ``max_window_unit`` bytes, gather elsewhere.
    lane_writer: Optional[str] = None
    #: 1: byte lanes of 16 B-1 KiB ran 1.2-2.6x faster with windows than with the gather's 16 lookups a
    #: vector; lanes of 2-16-byte units 1.1-2.5x slower (docs/results/lane-writer-h200.json).
    max_window_unit: int = 1
    #: The warps variant (a warp, or a group of 16, 8 or 4 threads, stages and writes one lane at a time)
    #: for lanes of ``warp_lane_min_bytes`` to ``warp_lane_bytes``: at 2, 4 and 8 KiB 19%, 7-9% and 3%
    #: faster than the panel kernel; from 1 KiB with quarter-warp lanes 16% faster than the gather
    #: writer; at 256-512 B the gather writer stays 22-44% faster (docs/results/gpu-rows-lane-groups-*).
    #: ``lane_warps``: None by those bounds, True wherever a group's slots fit, False never.
    lane_warps: Optional[bool] = None
    warp_lane_bytes: int = 8192
    warp_lane_min_bytes: int = 1024
    #: A warp's slots (lanes read ahead plus one): 2 KiB lanes ran 1.5 points slower with three, 1 KiB
    #: lanes no faster with five or eight; None: ``default_warp_slots``.
    warp_slots: Optional[int] = None
    default_warp_slots: int = 2
    #: Threads of a warps block: eight warps; four for lanes over 4 KiB (two slots of up to 8 KiB leave
    #: room for three blocks an SM).
    warp_threads: int = 256
    warp_threads_long: int = 128
    warp_min_blocks: Optional[int] = None
    warp_lane_threads: Optional[int] = None

    # --- roll_rows: long lanes (lane-walks, lane-swaps, lane-chains) --------------------------------
    #: "walks", "swaps" or None: walks for lanes from ``walk_min_lane_bytes`` (1 GiB of 1 MiB lanes: walks
    #: 0.81 ms against block swaps' 1.06-1.10; 512 KiB: swaps 0.94 against 1.23).
    long_lanes: Optional[str] = None
    walk_min_lane_bytes: int = 1 << 20
    #: A walking block's scratch share of a lane, more where there are no more lanes than blocks, and the
    #: pool for lanes over a share (docs/tuning.md, `cuda.walk_share`, `cuda.walk_share_one_lane`, `cuda.walk_pool`).
    walk_share: float = 1 / 12
    walk_share_one_lane: float = 1 / 6
    walk_pool: float = 1 / 100
    walk_share_bytes: Optional[int] = None
    walk_pool_bytes: Optional[int] = None
    #: A walk's tiles (the largest; half of it the smallest), tiles a lane may have, tile buffers; lanes from
    #: ``walk_wide_min_lane_bytes`` that fit ``walk_wide_max_tiles`` tiles of ``walk_wide_tile_bytes`` take
    #: those (4 MiB lanes at 1 GiB: 0.82 ms against 0.94; 1 MiB lanes keep the smaller tiles).
    walk_tile_bytes: Optional[int] = None
    default_walk_tile_bytes: int = 24 * 1024
    walk_max_tiles: Optional[int] = None
    default_walk_max_tiles: int = 1024
    walk_wide_tile_bytes: int = 32 * 1024
    walk_wide_max_tiles: int = 480
    walk_wide_min_lane_bytes: int = 2 << 20
    walk_buffers: Optional[int] = None
    default_walk_buffers: int = 3
    #: The walk kernel's launch bound on blocks an SM (3-4 with 16-20 KiB tiles were slower); None: 1.
    walk_min_blocks: Optional[int] = None
    #: lane-swaps: bytes a panel streams, and the largest small side saved (None: what fits two blocks an SM).
    swap_panel_bytes: int = 16 * 1024
    swap_save_bytes: Optional[int] = None
    #: lane-chains (a chain launch per run of equal host shifts) for at most this many lanes of at least
    #: ``min_chain_lane_bytes``: lane-swaps would give each lane one block (reasoned, not measured).
    max_chain_lanes: int = 8
    min_chain_lane_bytes: int = 64 << 20

    # --- roll_rows along a strided axis: column-panels -----------------------------------------------
    #: A block's threads, the widest strip of a row it takes, the narrowest it takes in shared memory (a
    #: sector: narrower strips would read part-sectors), the shared memory its panel may have (Hopper's
    #: opt-in limit less the shifts' 4 KiB), and the strip staged in scratch when a narrowest strip's rows
    #: do not fit (docs/tuning.md, "column-panels").
    column_threads: int = 256
    column_strip_bytes: int = 256
    column_min_strip_bytes: int = 32
    column_smem_bytes: int = 222 * 1024
    column_staged_strip_bytes: int = 32
    #: Threads an SM should have at least (blocks an SM by shared memory times a block's): panels that leave
    #: fewer blocks an SM take wider blocks, up to 1024 threads.
    column_sm_threads: int = 1024
    #: Words a thread loads before it stores them.
    column_unroll: int = 4
    #: Staged strips hold their lanes whole: the default scratch bound grows up to this share of the array
    #: where 1% would leave fewer slots than SMs.
    column_staged_share: float = 1 / 8

    # --- multi-axis: row-cycles, half-swaps, flat strips ----------------------------------------------
    #: Shared memory the lane kernels may ask for per block: Hopper's opt-in limit (227 KiB) less room
    #: for the kernels' static shared memory.
    max_lane_smem: int = 226 * 1024
    max_block_smem: int = 226 * 1024
    #: Rows shorter than ``min_cycle_row``, or cycle tables above ``max_segments`` segments with rows shorter
    #: than ``many_segments_min_row``: one pass per axis. Many segments are many short cycles (an fftshift's
    #: swaps), a block each with a row in flight: rows of 3.8-4.3 KiB ran them faster than a pass an axis,
    #: rows of 2 KiB slower (docs/results/row-cycles-rows-ab-h100.json).
    max_segments: int = 1 << 17
    min_cycle_row: int = 2048
    many_segments_min_row: int = 3 * 1024
    #: ... but up to this many rows row-cycles takes rows of any length: its cost grows with the rows (a
    #: step a row), and up to here one launch costs less than a launch an axis (docs/tuning.md).
    short_row_cycles_max_rows: int = 2048
    #: row-cycles declines (one pass per axis instead) where merging segments to fit the scratch bound
    #: left it fewer walks than this share of the SMs: each walk is one block, and with first rows
    #: pre-read a row a walk, megabyte rows under a 1% bound left 1-42 walks for 132 SMs (0.8-26% of
    #: memcpy; 2.3-47% without row-cycles, one case 15.5 -> 11.7%: docs/results/cycle-walks-h200.json).
    cycle_min_walk_share: float = 0.5
    #: Rows from this length swap through the chunked row-cycles kernel by default (measured at 64 KiB).
    min_chunked_swap_row: int = 64 * 1024
    #: The chunked variant's chunk sizes and ring depths, and the bytes staged ahead per SM it aims for
    #: (Little's law, about 36 GB/s an SM x ~1.5 us; not measured).
    cycle_chunks: Tuple[int, ...] = (32768, 16384, 8192, 4096)
    cycle_rings: Tuple[int, ...] = (2, 3, 4)
    cycle_ahead_bytes: int = 64 * 1024
    #: Forcing fields of row-cycles: its variant ("three-rows", "chunked", "chunked-scratch"), chunk, ring
    #: and shared memory.
    cycle_variant: Optional[str] = None
    cycle_chunk_bytes: Optional[int] = None
    cycle_ring: Optional[int] = None
    cycle_smem: Optional[int] = None
    #: row-cycles on the rows after the last rolled axis where rows from it on are too long for three-rows
    #: (``multi_axis._row_cycles``): None, that rule; True, wherever those rows can; False, never.
    cycle_fold: Optional[bool] = None
    #: Rolls by half of every rolled axis (even fftshifts) as disjoint swaps of aligned runs; a block's
    #: threads and the 16-byte vectors of each run a thread holds (None: ``default_half_swap_vecs``).
    half_swaps: bool = True
    half_swap_threads: int = 256
    half_swap_vecs: Optional[int] = None
    default_half_swap_vecs: int = 4
    #: A flat chain pass then a row-strips step where the strip is at most this share of a row (the strip
    #: moves its bytes twice; 0.04-1% strips ran 73-91% against row-cycles' 16-76%:
    #: docs/results/gpu-rows-multi-axis-flat-strips-h200.json). ``flat_strips``: None by that bound,
    #: True wherever the flat pass is one pass, False never.
    flat_strip_fraction: float = 0.125
    #: ... and the array holds at least this many bytes: below, the three launches (flat pass, strip save,
    #: strip move) cost the whole call more than one pass saves; they tied at 32 MiB
    #: (docs/results/flat-strips-sizes-h200.json).
    flat_strips_min_bytes: int = 32 << 20
    flat_strips: Optional[bool] = None
    #: Registers a thread of the row-strips kernel takes (ptxas for sm_90, four vectors a thread: 72).
    strip_registers: int = 72

    def __post_init__(self) -> None:
        self._seal()

    __hash__ = Policy._cached_hash


#: Hopper (sm_90) and newer: the policy the values above were measured for (H200).
HOPPER = CudaTuning()
#: Older GPUs: the chain kernel without Hopper's bulk copies ("auto": single below a tile, else control-warp).
PRE_HOPPER = dataclasses.replace(HOPPER, default_chain_variant="auto")


def policy_for(capability: Optional[tuple]) -> CudaTuning:
    """The default policy of a compute capability (None: planning without a GPU, the newest)."""
    if capability is None or tuple(capability) >= PIPELINE_MIN_CAPABILITY:
        return HOPPER
    return PRE_HOPPER


policies = Policies("GPU", policy_for)
#: ``current(capability)``: the policy plans are made with now (the default, with the override's fields).
current = policies.current
#: ``with override(tile_bytes=64): ...``: the one way tests and probes change GPU tuning.
override = policies.override
