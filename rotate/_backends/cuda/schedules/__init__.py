"""The GPU schedules: one module a schedule, each holding its params type, its planner and its runner.

The ordered lists below are the only place a schedule is registered: ``registry.plan_step`` walks
``ONE_SHIFT`` for a roll with one shift (the first that returns a step takes it), ``registry.plan_long_lanes``
walks ``LONG_LANES`` for ``roll_rows`` lanes beyond a block's shared memory; the runners come from each
module's ``RUNS`` (``run(target, info, step, handle)``) and ``LANE_RUNS`` (``roll_rows`` steps that read their
shifts on the device). ``lane-panels`` and ``column-panels`` are chosen by layout (``rotate/_backends/cuda/lane_args.py``),
the multi-axis schedules by ``multi_axis.plan_multi_axis``. CONTRIBUTING.md says how to add one.
"""

from __future__ import annotations

from .. import registry
from . import (block_swap, chain, column_panels, half_swaps, lane_chains, lane_panels, lane_swaps, lane_walks,
               multi_axis, reversal, row_cycles, row_lanes, row_strips)

ONE_SHIFT = (
    ("half-swaps", half_swaps.plan),
    ("row-panels", row_lanes.plan_row_panels),
    ("chain", chain.plan),
    ("block-swap", block_swap.plan),
    ("row-lanes", row_lanes.plan_row_lanes),
    ("reversal", reversal.plan),
)
LONG_LANES = (
    ("lane-chains", lane_chains.plan_long),
    ("lane-walks", lane_walks.plan_long),
    ("lane-swaps", lane_swaps.plan_long),
)
MODULES = (chain, block_swap, reversal, half_swaps, row_lanes, lane_panels, lane_walks, lane_swaps, lane_chains,
           column_panels, row_strips, row_cycles, multi_axis)

registry.install(ONE_SHIFT, LONG_LANES, MODULES)
