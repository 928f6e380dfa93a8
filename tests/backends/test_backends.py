"""The backend protocol and executable plans.

* The registry, not rotate/_api.py, decides who takes an array: a new
  backend registered here takes its arrays without any change to the API.
* What runs is what ``rotate.plan`` says: the CPU backend executes the
  steps of the cached plan as given (recorded here by wrapping the runners),
  also after the thread count or a budget changes.
"""

from __future__ import annotations

import dataclasses

import numba
import numpy as np
import pytest
from hypothesis import given, note
from hypothesis import strategies as st

import rotate
from rotate import _api, _backends
from rotate._backends.cpu import runners
from rotate._core.arrays import ArrayInfo
from rotate._backends.cpu import tuning as cpu_tuning
from rotate._core.plan import Step

from api.test_roll import (DTYPES, as_python, as_void, assert_same_bytes, make_array, make_view, shapes, shift_and_axis,
                       views)


@pytest.fixture
def recorded(monkeypatch):
    """The Steps the CPU runners receive, in order."""
    seen = []
    run_rows, run_strided = runners.run_rows, runners.run_strided

    def rows(buf, step):
        seen.append(step)
        run_rows(buf, step)

    def strided(a, step):
        seen.append(step)
        run_strided(a, step)

    monkeypatch.setattr(runners, "run_rows", rows)
    monkeypatch.setattr(runners, "run_strided", strided)
    return seen


def roll_and_record(seen, a, shift, axis):
    seen.clear()
    expected_plan = rotate.plan(a, shift, axis)
    rotate.roll(a, shift, axis=axis)
    return expected_plan, list(seen)


@given(shape=shapes(max_size=3000), dtype=st.sampled_from(DTYPES), seed=st.integers(0, 2**32 - 1), data=st.data())
def test_executed_steps_are_the_plan_contiguous(shape, dtype, seed, data):
    seen = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(runners, "run_rows", lambda buf, step, run=runners.run_rows: (seen.append(step), run(buf, step)))
        mp.setattr(runners, "run_strided", lambda a, step, run=runners.run_strided: (seen.append(step), run(a, step)))
        shift, axis = data.draw(shift_and_axis(shape), label="shift, axis")
        a = make_array(seed, shape, dtype)
        expected = np.roll(as_void(a).copy(), as_python(shift), axis=axis)
        p, ran = roll_and_record(seen, a, shift, axis)
    note(str(p))
    assert tuple(ran) == p.steps
    assert_same_bytes(a, expected.view(a.dtype))  # field bytes: padding is never moved


@given(case=views(), dtype=st.sampled_from(DTYPES), seed=st.integers(0, 2**32 - 1), data=st.data())
def test_executed_steps_are_the_plan_strided_views(case, dtype, seed, data):
    base_shape, order, index, perm = case
    base, v = make_view(seed, base_shape, dtype, order, index, perm)
    shift, axis = data.draw(shift_and_axis(v.shape, allow_none=v.ndim == 1), label="shift, axis")
    expected = np.roll(as_void(v).copy(), as_python(shift), axis=axis)
    seen = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(runners, "run_rows", lambda buf, step, run=runners.run_rows: (seen.append(step), run(buf, step)))
        mp.setattr(runners, "run_strided", lambda a, step, run=runners.run_strided: (seen.append(step), run(a, step)))
        p, ran = roll_and_record(seen, v, shift, axis)
    note(str(p))
    assert tuple(ran) == p.steps
    assert_same_bytes(v, expected.view(v.dtype))  # field bytes: padding is never moved


def test_thread_count_and_budgets_change_the_plan_and_what_runs(recorded, tune):
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip(f"numba runs {numba.config.NUMBA_NUM_THREADS} thread here; the test switches between 1 and 2")
    tune.cpu(min_lane_bytes=1)  # let a small array use every thread
    saved = numba.get_num_threads()
    cases = [((64, 257), np.float64, 5, 1), ((20000,), np.uint8, 4097, None), ((7, 3000), np.int32, 1000, 1),
             ((33, 40), np.int16, 3, 0), ((50, 60), np.float32, 7, 1)]
    try:
        for shape, dtype, shift, axis in cases:
            make = lambda: make_array(1, shape, np.dtype(dtype))  # noqa: E731
            views_ = [make(), make()[:, ::2] if len(shape) > 1 else make()[::3]]
            for a in views_:
                lanes = {}
                for threads in (2, 1, 2):
                    numba.set_num_threads(threads)
                    expected = np.roll(a, shift, axis=axis)
                    p, ran = roll_and_record(recorded, a, shift, axis)
                    assert tuple(ran) == p.steps
                    assert all(s.details["threads"] == threads for s in ran)
                    lanes.setdefault(threads, p.steps[0].details["lanes"])
                    assert p.steps[0].details["lanes"] == lanes[threads]
                    np.testing.assert_array_equal(a, expected)
                assert lanes[1] == 1, (shape, lanes)
                if a.ndim > 1 or a.flags.c_contiguous:  # a 1-D strided view is one column: one lane
                    assert lanes[2] == 2, (shape, a.strides, lanes)
        # A budget change re-plans too: a tiny scratch bound turns the shift into block swaps.
        numba.set_num_threads(saved)
        a = make_array(2, (5000,), np.dtype(np.uint8))
        before = rotate.plan(a, 2000)
        tune.cpu(scratch_bytes=64)
        after = rotate.plan(a, 2000)
        assert before.algorithm == "buffered-shift" and after.algorithm.startswith("block-swap"), after
        expected = np.roll(a, 2000)
        p, ran = roll_and_record(recorded, a, 2000, None)
        assert p == after and tuple(ran) == after.steps
        np.testing.assert_array_equal(a, expected)
    finally:
        numba.set_num_threads(saved)


@pytest.mark.parametrize("shape, dtype, algorithm", [
    ((500, 3), "uint8", "per-lane-byte-window"),  # 3 B lanes: windows at byte offsets
    ((300, 7), "uint8", "per-lane-byte-window"),
    ((200, 5), "int16", "per-lane-byte-window"),  # 10 B: two words built in registers
    ((90, 11), "V3", "per-lane-byte-window"),  # 33 B: twice through scratch
    ((400, 4), "uint8", "per-lane-word-rotate"),
    ((100, 6), "float32", "per-lane-small-copy"),  # 24 B: three 8-byte words (from four: the byte windows)
    ((100, 8), "float32", "per-lane-byte-window"),  # 32 B: four words, doubled in 16-byte copies
    ((10, 2000), "float32", "per-lane-copy"),
])
def test_roll_rows_runs_the_step_its_plan_names(monkeypatch, tune, shape, dtype, algorithm):
    """roll_rows executes plan_roll_rows' step (recorded at the lanes runner), on 1 and 2 threads."""
    from rotate._backends.cpu import lanes as cpu_lanes

    seen = []
    monkeypatch.setattr(cpu_lanes, "run_lanes", lambda flat, origin, shifts, step, run=cpu_lanes.run_lanes:
                        (seen.append(step), run(flat, origin, shifts, step)))
    tune.cpu(min_lane_bytes=1)  # let a small array use every thread
    a = make_array(3, shape, np.dtype(dtype))
    shifts = np.random.default_rng(4).integers(-3 * shape[1], 3 * shape[1], shape[0])
    saved = numba.get_num_threads()
    try:
        for threads in sorted({1, min(2, numba.config.NUMBA_NUM_THREADS)}):
            numba.set_num_threads(threads)
            b = a.copy()
            seen.clear()
            p = rotate.plan_roll_rows(b, shifts)
            rotate.roll_rows(b, shifts)
            assert p.algorithm == algorithm and tuple(seen) == p.steps, str(p)
            assert seen[0].details["threads"] == threads
            expected = np.array([np.roll(as_void(r), s) for r, s in zip(a, shifts)])
            assert_same_bytes(b, expected.view(b.dtype))
    finally:
        numba.set_num_threads(saved)


def test_cpu_plan_key_holds_everything_the_planner_reads():
    """The key holds the tuning policy itself: a change to any field (each set to a value it does not have)
    changes it, so no list of names can fall behind what the planners read."""
    cpu = _backends.backend_named("cpu")
    info = ArrayInfo((10,), (8,), np.dtype(np.float64), "cpu")
    key = cpu.plan_key(info, None)
    assert cpu_tuning.current() in key
    for field in dataclasses.fields(cpu_tuning.CpuTuning):
        value = getattr(cpu_tuning.current(), field.name)
        other = (not value) if isinstance(value, bool) else (value or 0) + 1 if not isinstance(value, tuple) \
            else value + (16,)
        with cpu_tuning.override(**{field.name: other}):
            assert cpu.plan_key(info, None) != key, field.name
    assert cpu.plan_key(info, 123) != key
    assert key[0] == numba.get_num_threads()


def test_numpy_array_with_stream_is_refused_untouched():
    a = np.arange(10)
    for call in (lambda: rotate.roll(a, 3, stream=0), lambda: rotate.roll(a, 3, stream=object()),
                 lambda: rotate.rotate(a, 3, stream=1)):
        # TypeError (branch robust's choice: stream= is the wrong kind of argument for a host array)
        with pytest.raises(TypeError, match="stream= applies to GPU arrays; a is a numpy array"):
            call()
        assert a.tolist() == list(range(10))
    m = np.ma.array(np.arange(6), mask=[1, 0, 0, 0, 0, 0])
    with pytest.raises(TypeError, match="stream="):
        rotate.roll(m, 2, stream=5)
    assert m.data.tolist() == list(range(6)) and m.mask.tolist()[0]


# --- the registry --------------------------------------------------------------

class Buffer:
    """An array type no built-in backend knows: a bytearray with a shape."""

    def __init__(self, values):
        self.data = np.asarray(values, dtype=np.int32)


class RecordingBackend(_backends.RowBackend):
    name = "toy"
    device_kind = "toy"

    def __init__(self):
        self.executed = []

    def recognizes(self, a):
        return isinstance(a, Buffer)

    def describe(self, a):
        return a, ArrayInfo(a.data.shape, a.data.strides, a.data.dtype, self.device_kind)

    def plan_key(self, info, max_scratch_bytes):
        return (max_scratch_bytes,)

    def plan_step(self, info, axis, shift, rows, seg_bytes, left_bytes, word, max_scratch_bytes):
        return Step(axis, shift, rows, seg_bytes, left_bytes, word, "toy-roll", 0, 2 * rows * seg_bytes)

    def resolve_stream(self, target, stream):
        return ("resolved", stream)

    def execute(self, target, info, plan, stream):
        self.executed.append((plan, stream))
        for step in plan.steps:
            target.data[...] = np.roll(target.data, step.shift, axis=step.axis)

    def plan_lanes(self, target, info, shifts, axis, max_scratch_bytes):
        step = Step(axis, 0, info.size // info.shape[axis], info.shape[axis] * info.itemsize, 0, info.itemsize,
                    "toy-lanes", 0, 2 * info.nbytes)
        return step, np.broadcast_to(np.asarray(shifts), info.shape[:axis] + info.shape[axis + 1:])

    def execute_lanes(self, target, info, step, stream, lane_shifts):
        self.executed.append((step, stream))
        moved = np.moveaxis(target.data, step.axis, -1)
        for index in np.ndindex(*lane_shifts.shape):
            moved[index] = np.roll(moved[index], int(lane_shifts[index]))


def test_a_new_backend_plugs_in_without_touching_the_api(monkeypatch):
    toy = RecordingBackend()
    assert isinstance(toy, _backends.Backend)  # the runtime-checkable protocol
    monkeypatch.setattr(_backends, "_registry", list(_backends.backends()))
    _backends.register(toy, before="cuda")
    with pytest.raises(ValueError, match="already registered"):
        _backends.register(RecordingBackend())
    b = Buffer([1, 2, 3, 4, 5])
    p = rotate.plan(b, 2)
    assert p.backend == "toy" and p.algorithm == "toy-roll"
    assert rotate.roll(b, 2, stream=7) is b
    assert b.data.tolist() == [4, 5, 1, 2, 3]
    assert toy.executed == [(p, ("resolved", 7))]
    assert rotate.rotate(b, 1) == 4 and b.data.tolist() == [5, 1, 2, 3, 4]
    # roll_rows goes through the same protocol: the backend's own lane planning and running
    grid = Buffer([[1, 2, 3], [4, 5, 6]])
    assert rotate.plan_roll_rows(grid, [1, 2]).algorithm == "toy-lanes"
    assert rotate.roll_rows(grid, [1, 2], stream=3) is grid
    assert grid.data.tolist() == [[3, 1, 2], [5, 6, 4]] and toy.executed[-1][1] == ("resolved", 3)
    assert _backends.backend_for(np.arange(3)).name == "cpu"


def test_registry_order_and_unknown_arrays():
    assert [b.name for b in _backends.backends()][:2] == ["cpu", "cuda"]
    assert [b.device_kind for b in _backends.backends()][:2] == ["cpu", "cuda"]
    with pytest.raises(TypeError, match="numpy array or a CUDA device array"):
        _backends.backend_for([1, 2, 3])
    with pytest.raises(KeyError):
        _backends.backend_named("hip")
    info = _api._inspect(np.arange(3))[2]
    assert info.kind == "cpu" and info.device is False
