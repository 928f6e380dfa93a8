"""GPU tuning overrides for A/B runs (a product benchmark's, or a probe forcing one chain layout), and a
lane-walks plan's exact traffic.

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


def forced_chain(tile_bytes: int, buffers: int):
    """A context for GPU probes: the planner's chain layouts other than ``(tile_bytes, buffers)`` are
    refused (with ``rotate._backends.cuda.tuning.override`` of those knobs, the chain plans only that configuration)."""
    from rotate._backends.cuda.schedules import chain
    from rotate._backends.cuda import tuning as cuda_tuning

    @contextlib.contextmanager
    def forced():
        real = chain.chain_layout

        def only(n, k, heads, tile, chain, lane_steps, ring, co_resident=False):
            if tile != tile_bytes or ring != buffers:
                return None, 0
            return real(n, k, heads, tile, chain, lane_steps, ring, co_resident)

        chain.chain_layout = only
        try:
            with cuda_tuning.override(tile_bytes=tile_bytes, buffers=buffers):
                yield
        finally:
            chain.chain_layout = real

    return forced()
