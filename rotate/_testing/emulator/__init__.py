"""The schedules' emulators: the exact index math of ``rotate._schedules`` run on the CPU under hostile
interleavings of virtual blocks, one module a schedule family (``chain``, ``cycles``, ``lanes``,
``free_lanes``, ``rowperm``). A tool for the project's tests, not an API; the names below are re-exported so a test
reads ``emulator.emulate_row_cycles`` whichever module holds it.
"""

from __future__ import annotations

from .chain import Deadlock, POLICIES, ScheduleError, emulate, plan_rows
from .cycles import emulate_row_cycles, emulate_row_cycles_chunked
from .lanes import emulate_lane_swaps, emulate_lane_walk, walk_plan
from .free_lanes import FREE_POLICIES, RaceError, emulate_free_lanes
from .rowperm import emulate_half_swaps, emulate_row_strips

__all__ = ["Deadlock", "POLICIES", "ScheduleError", "emulate", "plan_rows", "emulate_row_cycles",
           "emulate_row_cycles_chunked", "emulate_lane_swaps", "emulate_lane_walk", "walk_plan", "FREE_POLICIES",
           "RaceError", "emulate_free_lanes", "emulate_half_swaps", "emulate_row_strips"]
