"""The CUDA backend: a thin adapter over rotate/_backends/cuda/ (the device, the schedule registry, the runtime).

Nothing here imports numba.cuda until an array has been recognised as a
CUDA array: numpy-only users never pay for it.
"""

from __future__ import annotations

import sys
from typing import Any, Optional

from ..._core import arrays as _arrays
from ..base import RowBackend


# Modules imported on first use (numpy-only users never import numba.cuda), then
# held here: an import statement inside a per-call function costs ~0.3 us each.
_modules: dict = {}


def _device():
    module = _modules.get("device")
    if module is None:
        from . import device as module

        _modules["device"] = module
    return module


def _runtime():
    module = _modules.get("runtime")
    if module is None:
        from . import runtime as module

        _modules["runtime"] = module
    return module


def _registry():
    """The schedule registry, filled (importing the schedules registers them)."""
    module = _modules.get("registry")
    if module is None:
        from . import registry as module
        from . import schedules  # noqa: F401

        _modules["registry"] = module
    return module


def _tuning():
    module = _modules.get("tuning")
    if module is None:
        from . import tuning as module

        _modules["tuning"] = module
    return module


def _simulated() -> bool:
    flag = _modules.get("simulated")
    if flag is None:
        from .kernels.memops import SIMULATED as flag

        _modules["simulated"] = flag
    return flag


def _plan_multi_axis(info, rotations, max_scratch_bytes):
    """``multi_axis.plan_multi_axis`` for ``rotations`` of a C- or F-contiguous array (an F-contiguous array
    is its transpose, C-ordered), or None."""
    from .schedules import multi_axis

    flip = not info.c_contiguous
    shape = info.shape[::-1] if flip else info.shape
    c_shifts = {(info.ndim - 1 - axis if flip else axis): s for axis, _, s in rotations}
    return multi_axis.plan_multi_axis(shape, info.itemsize, c_shifts, info.pointer, max_scratch_bytes)


class CudaBackend(RowBackend):
    name = "cuda"
    device_kind = "cuda"

    def recognizes(self, a: Any) -> bool:
        return _arrays.is_device_array(a)

    def describe(self, a: Any):
        view = _arrays.device_view(a)
        info = _arrays.describe_device(view)
        if info.readonly:
            raise ValueError(
                "a is a read-only device array (its __cuda_array_interface__ says so); "
                "rotate works in place, so pass a writeable array"
            )
        _arrays.check_device_usable()  # numba's raw CudaSupportError would not say what to do
        return view, info

    def quick_describe(self, a: Any):
        if _simulated():
            return None  # the simulator's arrays take the full path (they have no device address)
        return _arrays.quick_device(a)

    def quick_stream(self, default_stream: int, stream: Any) -> int:
        if stream is None:
            return default_stream
        return _runtime().stream_handle(stream)

    def plan_key(self, info, max_scratch_bytes: Optional[int]) -> tuple:
        # The device, its shape and the tuning policy itself (every field the planners read: rotate/_backends/cuda/tuning.py).
        gpu = _device()
        device = gpu._device_id()
        capability = gpu.device_capability(device)
        return (device, gpu.device_shape(device), capability, _tuning().current(capability), max_scratch_bytes)

    def plan_steps(self, info, rotations, max_scratch_bytes):
        # Several axes of a C- or F-contiguous array: one pass (half-swaps, or row-cycles where rows fit a block;
        # or a flat pass and a strip step, the tuning field ``flat_strips``).
        if len(rotations) >= 2 and rotations[0][0] is not None and (info.c_contiguous or info.f_contiguous):
            steps = _plan_multi_axis(info, rotations, max_scratch_bytes)
            if steps is None:
                steps = self._plan_halves_apart(info, rotations, max_scratch_bytes)
            if steps is not None:
                return steps
        return super().plan_steps(info, rotations, max_scratch_bytes)

    def _plan_halves_apart(self, info, rotations, max_scratch_bytes):
        """Where no one-pass schedule takes the whole roll: the axes rolled by half their length together
        (one ``half-swaps`` pass) and the others together, rather than a pass an axis (rolls along
        different axes commute). None where that saves no pass."""
        halves = [r for r in rotations if 2 * r[2] == r[1]]
        others = [r for r in rotations if 2 * r[2] != r[1]]
        if not halves or not others or (len(halves) < 2 and len(others) < 2):
            return None
        steps = []
        for group in (others, halves):
            joint = _plan_multi_axis(info, group, max_scratch_bytes) if len(group) >= 2 else None
            steps.extend(joint if joint is not None else super().plan_steps(info, group, max_scratch_bytes))
        return tuple(steps) if len(steps) < len(rotations) else None

    def plan_step(self, info, axis, shift, rows, seg_bytes, left_bytes, word, max_scratch_bytes):
        return _registry().plan_step(axis, shift, rows, seg_bytes, left_bytes, word, info.pointer, max_scratch_bytes)

    def plan_lanes(self, target: Any, info, shifts: Any, axis: int, max_scratch_bytes: Optional[int]):
        from . import lane_args

        return lane_args.plan_lanes(info, shifts, axis, max_scratch_bytes)

    def execute_lanes(self, target: Any, info, step, stream: Any, lane_shifts) -> None:
        _registry().run_lanes(target, info, step, stream, *lane_shifts)

    def replayable_lanes(self, step, lane_shifts) -> Optional[int]:
        """The shift stride a repeated call may replay this plan with (device shifts only, read on the
        device), or None: host shifts are uploaded per call, and lane-chains plans from host shifts."""
        if lane_shifts is None or lane_shifts[1] is None:
            return None
        from .schedules.lane_chains import LaneChainsParams

        if step is not None and isinstance(step.params, LaneChainsParams):
            return None
        return lane_shifts[2]

    def warmup(self, function: str, dtype, calls) -> None:
        from . import warmup

        warmup.warmup_calls(function, dtype, calls)

    def release_scratch(self) -> int:
        # Only a process that has used the GPU holds scratch: numpy-only users never import numba.cuda here.
        runtime = sys.modules.get(__package__ + ".runtime")
        return runtime.release_scratch() if runtime is not None else 0

    def resolve_stream(self, target: Any, stream: Any):
        # The raw handle, resolved once before anything moves (a bad stream=
        # is refused here); execute() launches on it as given.
        return _runtime().resolve_stream(target, stream)

    def execute(self, target: Any, info, plan, stream: Any) -> None:
        _registry().execute(target, info, plan, stream)
