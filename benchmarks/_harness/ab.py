"""GPU A/B runs of tuning settings: one roll planned and timed under each setting, alternated in one process.

Why here: the probes that back GPU tuning values each wrote this loop (plan under an override, check the
result against torch byte for byte once, time the whole call and device time as % of a memcpy of the same
bytes in the same run); new probes share this copy, so their numbers are taken alike (the older ones keep
theirs: their committed results were written by them).
"""

from __future__ import annotations

import time

from . import knobs, timing


def step_record(step) -> dict:
    """What a plan step says of itself that an A/B result needs to explain a time: rows, row bytes, and the
    launch's shape where its params have one."""
    record = {"algorithm": step.algorithm, "rows": step.rows, "seg_bytes": step.seg_bytes}
    params = step.params
    for field in ("variant", "segments", "piece_rows", "grid", "block", "blocks_per_sm", "first_rows"):
        value = getattr(params, field, None) if field != "variant" else dict(getattr(params, "CONSTANTS", ())).get(
            "variant")
        if value is not None:
            record[field] = value
    return record


def time_settings(torch, rotate, x, shifts, axes, settings: dict, timers, memcpy_ms: float, repeat: int) -> dict:
    """``{label: {...}}`` for each ``label: fields`` of ``settings``: the plan made under
    ``rotate._backends.cuda.tuning.override(**fields)``, whether one call matched ``torch.roll`` byte for byte
    (``x`` is restored after it), the first plan's host milliseconds, and its times (``timing.time_all_ways``) with their % of ``memcpy_ms``."""
    out = {}
    for label, fields in settings.items():
        with knobs.gpu_override(**fields):
            began = time.perf_counter()
            plan = rotate.plan(x, shifts, axes)  # the first plan of this setting: host work a first call pays
            plan_ms = 1e3 * (time.perf_counter() - began)
            want = torch.roll(x, shifts, axes)
            rotate.roll(x, shifts, axes)
            torch.cuda.synchronize()
            correct = bool(torch.equal(x.view(torch.uint8), want.view(torch.uint8)))
            x.copy_(want)
            del want
            times = timing.with_pct(timing.time_all_ways(lambda: rotate.roll(x, shifts, axes), timers, repeat),
                                    memcpy_ms)
        out[label] = {"algorithm": plan.algorithm, "steps": [step_record(s) for s in plan.steps],
                      "plan_ms": plan_ms, "correct": correct, **times}
    return out
