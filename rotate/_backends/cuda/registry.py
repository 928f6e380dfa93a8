"""The GPU's schedule registry: the ordered lists the planners walk and the runners by params type.

``rotate/_backends/cuda/schedules/__init__.py`` fills them, in one ordered list, when the schedules are imported;
this module only holds and walks them, so a schedule that plans sub-steps (``lane-chains``, a multi-axis
roll's flat pass) reaches the others here without importing them.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Optional

import numpy as np
from numba import cuda

from ..._core.plan import Step
from . import device as D
from . import runtime as R
from .kernels.memops import SIMULATED

#: The schedules for one shift, in order of preference: ``(name, plan)``, where
#: ``plan(axis, shift, rows, seg, left, word, pointer, cap)`` returns a Step or None when the schedule cannot
#: take the problem within ``cap`` bytes of scratch; the last takes every problem.
SCHEDULES: list = []
#: The schedules for ``roll_rows`` lanes too long for a block's shared memory, in order of preference:
#: ``(name, plan)``, ``plan(axis, rows, n, itemsize, pointer, max_scratch_bytes, host_shifts)`` a Step or None.
LONG_LANES: list = []
#: The runner of each params type: ``run(target, info, step, handle)``.
RUNNERS: dict = {}
#: The runners of ``roll_rows`` steps that read the shifts on the device:
#: ``run(target, info, step, handle, shifts, shift_stride)``.
LANE_RUNNERS: dict = {}


def install(one_shift: tuple, long_lanes: tuple, modules: tuple) -> None:
    """Fill the registry: the two ordered lists and every module's ``RUNS`` and ``LANE_RUNS``."""
    SCHEDULES[:] = one_shift
    LONG_LANES[:] = long_lanes
    for module in modules:
        RUNNERS.update(getattr(module, "RUNS", {}))
        LANE_RUNNERS.update(getattr(module, "LANE_RUNS", {}))


def _first(schedules: list, *args) -> Optional[Step]:
    if not schedules:  # pragma: no cover
        raise AssertionError("internal error: the GPU schedules are not registered (import rotate._backends.cuda.schedules)")
    for _, plan in schedules:
        step = plan(*args)
        if step is not None:
            return step
    return None


def plan_step(axis, shift, rows, seg, left, word, pointer, max_scratch_bytes: Optional[int]) -> Step:
    """Plan rotating ``rows`` segments of ``seg`` bytes left by ``left`` bytes, the first at ``pointer``."""
    cap = D.DefaultBound(D.default_cap(rows, seg)) if max_scratch_bytes is None else max_scratch_bytes
    step = _first(SCHEDULES, axis, shift, rows, seg, left, word, pointer, cap)
    if step is None:  # pragma: no cover
        raise AssertionError("the last GPU schedule takes every problem")
    return step


def plan_long_lanes(axis: int, rows: int, n: int, itemsize: int, pointer: int,
                    max_scratch_bytes: Optional[int] = None, host_shifts=None) -> Step:
    """``roll_rows`` of lanes too long for ``lane-panels``: the first of ``LONG_LANES`` that takes them."""
    step = _first(LONG_LANES, axis, rows, n, itemsize, pointer, max_scratch_bytes, host_shifts)
    if step is None:  # pragma: no cover
        raise AssertionError("the last long-lane schedule takes every problem")
    return step


def execute(target: Any, info, plan, stream: Any = None) -> None:
    """Run every step of ``plan`` on ``target`` (an object with __cuda_array_interface__).

    ``stream`` is normally the handle ``runtime.resolve_stream`` gave while validating.
    """
    handle = stream if type(stream) is int else R.resolve_stream(target, stream)
    for step in plan.steps:
        RUNNERS[type(step.params)](target, info, step, handle)


def run_lanes(target: Any, info, step, handle: int, host_shifts, device_shifts, stride: int) -> None:
    """Run a ``roll_rows`` step: a lane runner reads the shifts on the device (host shifts are uploaded
    first); any other step (``lane-chains``: the chain steps its plan holds) runs as ``execute`` runs it."""
    run: Optional[Callable] = LANE_RUNNERS.get(type(step.params))
    if run is None:
        RUNNERS[type(step.params)](target, info, step, handle)
        return
    if device_shifts is None:
        if stride == 0:  # one shift for every lane (a repeating view): upload it once
            host_shifts = np.ascontiguousarray(host_shifts[:1])
        if SIMULATED:
            device_shifts = cuda.to_device(host_shifts)
        else:
            device_shifts = cuda.to_device(host_shifts, stream=R._numba_stream(handle))
    run(target, info, step, handle, device_shifts, stride)


def run_sub_steps(target: Any, info, step, handle: int) -> None:
    """Run a ``lane-chains`` step: one planned step a run of lanes with equal shifts (``params.runs``)."""
    n = step.seg_bytes // step.word_bytes
    for lane, end, sub in step.params.runs:
        pointer = info.pointer + lane * step.seg_bytes
        lane_info = dataclasses.replace(info, shape=(end - lane, n), strides=(step.seg_bytes, step.word_bytes),
                                        pointer=pointer)
        lane_target = R._SimSlice(target, lane * step.seg_bytes, (end - lane) * step.seg_bytes) if SIMULATED \
            else target
        RUNNERS[type(sub.params)](lane_target, lane_info, sub, handle)
