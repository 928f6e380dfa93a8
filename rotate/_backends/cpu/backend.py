"""The CPU backend: numpy arrays, rolled by the numba kernels in rotate/_backends/cpu/."""

from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np

from ..._core import shifts as _shifts
from . import kernels, lanes as cpu_lanes, params as cpu_params, planner, runners
from ..._core.arrays import ArrayInfo, c_order_line, host_span
from ..._core.plan import Step
from ..._core.validate import check_numpy_array, check_stream_for_host
from ..base import RowBackend


class CpuBackend(RowBackend):
    name = "cpu"
    device_kind = "cpu"

    def recognizes(self, a: Any) -> bool:
        return isinstance(a, np.ndarray)

    def describe(self, a: np.ndarray) -> tuple[np.ndarray, ArrayInfo]:
        check_numpy_array(a)
        if type(a) is not np.ndarray:  # np.matrix reshapes to 2-D: work on a plain view
            a = np.asarray(a)
        return a, ArrayInfo(a.shape, a.strides, a.dtype, "cpu")

    def plan_key(self, info: ArrayInfo, max_scratch_bytes: Optional[int]) -> tuple:
        # Everything the CPU planners (rotate/_backends/cpu/, rotate/_backends/cpu/lanes.py) read: the thread count, the tuning
        # policy (every field), the caller's scratch bound (it tightens the policy's scratch_bytes, down
        # to the scratch-free reversal fallback) and whether this host has the byte shuffle short lanes use.
        return planner.planner_settings(info.size * info.itemsize) + (max_scratch_bytes, cpu_lanes.HAS_BYTE_SHUFFLE)

    def plan_steps(self, info, rotations, max_scratch_bytes):
        # Two or more axes of a contiguous array: one pass (rotate/_backends/cpu/lanes.py)
        # when a block of the first rolled axis fits the scratch budget;
        # otherwise one pass per axis, which the plan shows as one step each.
        # An innermost rolled axis whose rows are at most two words takes a pass
        # of its own, in registers: the one pass would cut every row into pieces
        # of a few bytes ((3782, 2281, 8) float16 over all axes: 9.7x np.copyto
        # in one pass, 1.7x as the other axes' pass and the rows').
        inner = cpu_lanes.register_axis(info, rotations)
        if inner is not None:
            rest = [r for r in rotations if r is not inner]
            return self.plan_steps(info, rest, max_scratch_bytes) + super().plan_steps(info, [inner],
                                                                                        max_scratch_bytes)
        step = cpu_lanes.plan_multiaxis(info, rotations, max_scratch_bytes)
        if step is not None:
            return (step,)
        if len(rotations) >= 3 and rotations[0][0] is not None and (info.c_contiguous or info.f_contiguous):
            # The outermost axis's blocks exceed the scratch budget: that axis alone (a pass that streams),
            # the others in one pass where their blocks fit ((13, 835, 1025, 5) float32: 2 passes, not 4).
            outer = (min if info.c_contiguous else max)(rotations, key=lambda r: r[0])
            rest = [r for r in rotations if r is not outer]
            rest_steps = self.plan_steps(info, rest, max_scratch_bytes)
            if len(rest_steps) < len(rest):
                return super().plan_steps(info, [outer], max_scratch_bytes) + rest_steps
        return super().plan_steps(info, rotations, max_scratch_bytes)

    def plan_step(self, info, axis, shift, rows, seg_bytes, left_bytes, word, max_scratch_bytes) -> Step:
        algorithm, scratch, moved, params = planner.plan_rows_params(rows, seg_bytes // word, left_bytes // word, word,
                                                                  max_scratch_bytes)
        return Step(axis, shift, rows, seg_bytes, left_bytes, word, algorithm, scratch, moved, params=params)

    def plan_noncontiguous(self, info, rotations, max_scratch_bytes):
        # axis=None rolls C order in place only where C order is one strided
        # line of memory (e.g. a[::2][None], shape (1, n)).
        if rotations[0][0] is None and info.ndim > 1 and c_order_line(info.shape, info.strides) is None:
            raise ValueError(
                f"roll with axis=None rolls a in C order, but a is not C-contiguous "
                f"(shape {info.shape}, strides {info.strides}), so C order is not its "
                f"memory order and there is no in-place way to do it without a copy. "
                f"Give explicit axes, or roll a C-contiguous copy: "
                f"b = np.ascontiguousarray(a); rotate.roll(b, shift); a[...] = b"
            )
        steps = []
        for axis, length, s in rotations:
            axis = 0 if axis is None and info.ndim == 1 else axis  # None: the C-order line
            algorithm, scratch, moved, params = planner.plan_strided_params(
                info.shape, info.strides, info.itemsize, s, axis, max_scratch_bytes)
            lines = info.size // length  # the strided roll moves every line along the axis
            steps.append(Step(axis, s, lines, length * info.itemsize, (length - s) * info.itemsize,
                              info.itemsize, algorithm, scratch, moved, strided=True, params=params))
        return tuple(steps)

    def plan_lanes(self, target: np.ndarray, info: ArrayInfo, shifts: Any, axis: int, max_scratch_bytes):
        lane_shifts = self.lane_shifts(target, info, shifts, axis)
        return self.plan_lane_layout(info, axis, max_scratch_bytes), lane_shifts

    def lane_shifts(self, target: np.ndarray, info: ArrayInfo, shifts: Any, axis: int):
        # roll_rows: shifts of any integer dtype but uint64 are read as they are (rotate/_core/shifts.py).
        n = info.shape[axis]
        lane_shape = info.shape[:axis] + info.shape[axis + 1:]
        return _shifts.lane_shifts(shifts, lane_shape, n, axis, info.shape, narrow=True)

    def plan_lane_layout(self, info: ArrayInfo, axis: int, max_scratch_bytes) -> Optional[Step]:
        # The lanes' step reads the layout, the axis, the bound and the tuning (plan_key), never the shifts'
        # values: the front door caches it in the one plan cache.
        if info.shape[axis] <= 1 or info.size == 0:
            return None
        return cpu_lanes.plan_lanes(info.shape, info.strides, info.itemsize, axis, max_scratch_bytes)

    def execute_lanes(self, target: np.ndarray, info: ArrayInfo, step: Step, stream: Any, lane_shifts) -> None:
        # The lanes' span as one flat array of the step's words (strided views: from their lowest byte).
        word = step.word_bytes
        address, low, high = host_span(target)
        flat = np.asarray(runners._WordSpan(target, low, (high - low) // word, word))
        cpu_lanes.run_lanes(flat, (address - low) // word, lane_shifts, step)

    def warmup(self, function: str, dtype: np.dtype, calls) -> None:
        from . import warmup

        warmup.warmup_calls(function, dtype, calls)

    def release_scratch(self) -> int:
        return 0  # scratch is allocated per call and freed with it

    def resolve_stream(self, target: Any, stream: Any) -> None:
        check_stream_for_host(False, stream)  # the one check: a TypeError naming stream=
        return None

    def execute(self, target: np.ndarray, info: ArrayInfo, plan, stream: Any) -> None:
        for step in plan.steps:
            if type(step.params) is cpu_params.StridedParams:
                runners.run_strided(target, step)
            else:
                runners.run_rows(runners.word_view(target, step.word_bytes), step)

    def executable(self, info: ArrayInfo, plan) -> Optional[Callable[[np.ndarray], None]]:
        """``plan`` bound to a callable that runs it on any writeable array of ``info``'s layout, or None.

        The host quick path (rotate/_api.py) calls it for repeated calls: the checks passed when the plan
        was made and hold for every array of the layout. One contiguous step of a serial runner calls its
        kernel directly, with the flat word view and the ops array made once here rather than in
        ``cpu.runners.run_rows`` on every call (its runner dispatch and checks cost more than a
        small roll's kernel). Scratch is still allocated per call through ``cpu.runners.scratch_array``
        (threads may roll arrays of one layout at once). Other plans (parallel, strided, several steps):
        None, and the API runs them through :meth:`execute`.
        """
        if not plan.steps:
            return _nothing
        if len(plan.steps) != 1 or type(plan.steps[0].params) is cpu_params.StridedParams:
            return None
        step = plan.steps[0]
        p = step.params
        kind = type(p)
        word = step.word_bytes
        words = runners._WORDS[word]
        rows, seg, k = step.rows, step.seg_bytes // word, step.left_bytes // word
        run_rows = runners.run_rows
        if kind is cpu_params.SmallRowsSerialParams:
            kernel, scratch_words = kernels._rotate_small_rows_serial, p.scratch_words

            def run(a: np.ndarray) -> None:
                if runners.run_rows is not run_rows:  # replaced (tests record and mutate the steps that run)
                    return self.execute(a, info, plan, None)
                kernel(a.reshape(-1, order="A").view(words), rows, seg, k, runners.scratch_array(scratch_words, words))
        elif kind is cpu_params.RowsSerialParams:
            kernel, scratch_words, tile = kernels._rotate_rows_serial, p.scratch_words, p.tile
            ops = planner._ops_array(p.ops)

            def run(a: np.ndarray) -> None:
                if runners.run_rows is not run_rows:
                    return self.execute(a, info, plan, None)
                kernel(a.reshape(-1, order="A").view(words), rows, seg, ops, runners.scratch_array(scratch_words, words),
                       tile)
        elif kind is cpu_params.RegisterRowsParams and p.lanes == 1:
            kernel, scratch_words, row_bytes, b = kernels._register_rows_run, p.scratch_words, p.row_bytes, step.left_bytes
            nbytes = rows * step.seg_bytes

            def run(a: np.ndarray) -> None:
                if runners.run_rows is not run_rows:
                    return self.execute(a, info, plan, None)
                runners.scratch_array(scratch_words, words)  # none needed, but allocated (and counted) as run_rows does
                kernel(a.reshape(-1, order="A").view(np.uint8)[:nbytes], 0, rows, row_bytes, b)
        elif kind is cpu_params.WordRowsSerialParams:
            kernel, scratch_words = kernels._rotate_word_rows_serial, p.scratch_words
            row_words, bits, r = runners._WORDS[p.row_word], 8 * p.row_word, 8 * word * k

            def run(a: np.ndarray) -> None:
                if runners.run_rows is not run_rows:
                    return self.execute(a, info, plan, None)
                runners.scratch_array(scratch_words, words)  # none needed, but allocated (and counted) as run_rows does
                kernel(a.reshape(-1, order="A").view(words)[:rows * seg].view(row_words), rows, r, bits)
        else:
            return None
        return run


def _nothing(a: np.ndarray) -> None:
    """The executable of a plan with no steps."""
