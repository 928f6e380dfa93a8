"""GPU tuning overrides for A/B runs of a product benchmark, and a lane-walks plan's exact traffic.

Why private: tuning fields are not API (docs/tuning.md lists them; ``rotate._backends.cuda.tuning.override`` is
how tests, probes and measurements change them), and the exact count replays the kernel's choices on
the host (``rotate._backends.cuda.schedules.lane_walks.walk_traffic``), where the public plan reports a bound.
"""

from __future__ import annotations

import ast
import contextlib


def parse_settings(items) -> dict:
    """``["knob=value", ...]`` (Python literals) as a dict of tuning fields."""
    forced = {}
    for item in items:
        key, _, value = item.partition("=")
        forced[key] = ast.literal_eval(value)
    return forced


def gpu_override(**fields) -> contextlib.AbstractContextManager:
    """``rotate._backends.cuda.tuning.override(**fields)``: the GPU planner plans with these fields changed."""
    from rotate._backends.cuda import tuning as cuda_tuning

    return cuda_tuning.override(**fields)


def walk_traffic(step, shifts) -> tuple:
    """(bytes moved, lanes walked) of a ``lane-walks`` step for host ``shifts``: the kernel's decisions
    replayed (the plan's ``bytes_moved`` is a bound)."""
    from rotate._backends.cuda.schedules import lane_walks as gpu_lane_walks

    return gpu_lane_walks.walk_traffic(step, shifts)
