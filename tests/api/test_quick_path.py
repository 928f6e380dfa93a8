"""Issue #36: the host quick path (``rotate._api._host_calls``) gives what the full path gives.

A repeated ``roll``/``rotate`` of a numpy array with plain int arguments runs the cached executable
of an earlier identical call (its layout and arguments as the key) instead of validating and planning
again; one contiguous step of a serial runner calls its kernel directly
(``CpuBackend.executable``). Here:

* the quick call gives byte for byte what the full path gave and what ``numpy.roll`` gives, over
  hypothesis-drawn small shapes, item sizes 1-16, C/F/strided layouts and shifts 0, +-n and beyond;
  every call that may take the quick path does (the full path is not entered), and the three runners
  the executable calls directly are each covered;
* a quick entry is never reused for a different dtype, shape, stride, argument or tuning override,
  and a read-only array of a cached layout raises, unchanged (``tests/api/test_cache_keys.py`` varies each
  key component one at a time; here calls of random layouts share one cache);
* the quick path still calls ``cpu.runners.run_rows`` when a test replaced it (the recorders and mutants the
  suite relies on see every step).
"""

from __future__ import annotations

import contextlib

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import rotate
from rotate import _api, _backends
from rotate._backends.cpu import runners
from rotate._backends.cpu import tuning as cpu_tuning

#: Item sizes 1-16: numbers of every width, and fixed-width bytes for the odd sizes.
DTYPES = ["u1", "i2", "S3", "f4", "S5", "V6", "S7", "f8", "S9", "V10", "S11", "V12", "S13", "S14", "S15", "c16"]


@contextlib.contextmanager
def empty_host_cache():
    """An empty host quick-path cache (the module's own restored afterwards): a context, not a fixture, so
    each hypothesis example starts empty."""
    saved = _api._host_calls
    _api._host_calls = {}
    try:
        yield _api._host_calls
    finally:
        _api._host_calls = saved


@pytest.fixture
def host_calls():
    with empty_host_cache() as calls:
        yield calls


@contextlib.contextmanager
def full_path_counted():
    """Count the calls that go down the full path (``_api._prepare``)."""
    count = [0]
    prepare = _api._prepare

    def counting(*args, **kwargs):
        count[0] += 1
        return prepare(*args, **kwargs)

    _api._prepare = counting
    try:
        yield count
    finally:
        _api._prepare = prepare


def _buffer(nbytes: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, max(nbytes, 1), dtype=np.uint8)


def _view(raw: np.ndarray, dtype: str, shape: tuple, layout: str) -> np.ndarray:
    """A view of ``shape`` cut from ``raw`` (a copy's bytes): C, F, or every other element of the last axis."""
    dtype = np.dtype(dtype)
    size = int(np.prod(shape))
    if layout == "strided" and shape:
        full = shape[:-1] + (2 * shape[-1],)
        return raw[:2 * size * dtype.itemsize].view(dtype).reshape(full)[..., ::2]
    flat = raw[:size * dtype.itemsize].view(dtype)
    return flat.reshape(shape, order="F" if layout == "F" else "C")


@st.composite
def calls(draw):
    """``(dtype, shape, layout, shift, axis)``: a small roll, shifts drawn around the rolled length."""
    dtype = draw(st.sampled_from(DTYPES))
    ndim = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(0, 12 if ndim > 1 else 80), min_size=ndim, max_size=ndim)))
    layout = draw(st.sampled_from(["C", "C", "F", "strided"]))
    axis = draw(st.sampled_from([None] + list(range(-ndim, ndim))))
    n = int(np.prod(shape)) if axis is None else shape[axis]
    shift = draw(st.sampled_from([0, n, -n, 1, -1, n + 1, -n - 1, 3 * n + 2, -(5 * n) - 3])
                 | st.integers(-3 * n - 3, 3 * n + 3))
    if layout != "C" and axis is None and ndim > 1:
        axis = 0  # axis None rolls C order: a non-C view is refused (tests/api/test_errors.py checks that)
    return dtype, shape, layout, shift, axis


def _roll_twice(dtype, shape, layout, shift, axis, seed=0):
    """The same call on two copies of one buffer: full path, then quick path; (raw, first, second)."""
    itemsize = np.dtype(dtype).itemsize
    raw = _buffer(2 * int(np.prod(shape)) * itemsize, seed)
    first, second = raw.copy(), raw.copy()
    with full_path_counted() as full:
        out = rotate.roll(_view(first, dtype, shape, layout), shift, axis)
        assert full[0] == 1
        view = _view(second, dtype, shape, layout)
        assert rotate.roll(view, shift, axis) is view
        assert full[0] == 1, "the repeated call went down the full path"
    assert type(out) is np.ndarray
    return raw, first, second


@given(calls())
@example(("f8", (10,), "C", 3, None))           # call_overhead.py's three cases
@example(("f8", (4096,), "C", 3, None))
@example(("f8", (100, 100), "C", 3, 1))
@example(("u1", (4, 8), "C", 3, 1))             # word-rows-serial: each row one uint64
@example(("i2", (6, 4), "F", -5, 0))
@example(("S3", (0, 5), "C", 2, 1))             # nothing to move
def test_quick_call_equals_full_path_and_numpy(call):
    dtype, shape, layout, shift, axis = call
    with empty_host_cache():
        raw, first, second = _roll_twice(dtype, shape, layout, shift, axis)
    assert second.tobytes() == first.tobytes()
    expected = raw.copy()
    view = _view(expected, dtype, shape, layout)
    view[...] = np.roll(view.copy(), shift, axis)
    assert first.tobytes() == expected.tobytes()  # the whole buffer: bytes outside a strided view stay


@given(st.sampled_from(DTYPES), st.integers(0, 70), st.data())
def test_quick_rotate_equals_full_path_and_numpy(dtype, n, data):
    middle = data.draw(st.integers(0, n))
    raw = _buffer(n * np.dtype(dtype).itemsize, 1)
    first, second = raw.copy(), raw.copy()
    with empty_host_cache(), full_path_counted() as full:
        got = [rotate.rotate(_view(b, dtype, (n,), "C"), middle) for b in (first, second)]
        assert full[0] == 1
    assert got == [n - middle] * 2
    assert second.tobytes() == first.tobytes()
    expected = np.roll(_view(raw.copy(), dtype, (n,), "C"), -middle)
    assert _view(first, dtype, (n,), "C").tobytes() == expected.tobytes()


@pytest.mark.parametrize("dtype, shape, shift, axis, runner", [
    ("f8", (10,), 3, None, "small-rows-serial"),
    ("f8", (4096,), 3, None, "rows-serial"),
    ("f8", (100, 100), 3, 1, "rows-serial"),
    ("u1", (16, 8), 3, 1, "word-rows-serial"),
    ("u1", (16, 5), 2, 1, "register-rows"),
    ("u2", (16, 7), 3, 1, "register-rows"),
])
def test_direct_kernel_runners_are_covered(host_calls, dtype, shape, shift, axis, runner):
    """The runners the executable calls directly (not through ``cpu.runners.run_rows``): one case each, so a change
    of their details (the planner is rewritten apart from this path) shows here first."""
    a = _view(_buffer(int(np.prod(shape)) * np.dtype(dtype).itemsize, 2), dtype, shape, "C")
    p = rotate.plan(a, shift, axis)
    assert [s.details["runner"] for s in p.steps] == [runner]
    cpu = _backends.backend_named("cpu")
    info = _api._inspect(a)[2]
    assert cpu.executable(info, _api._make_plan(cpu, info, _api._shift_map(info, shift, axis), None)) is not None
    _roll_twice(dtype, shape, "C", shift, axis)


def test_quick_path_calls_a_replaced_run_rows(host_calls, monkeypatch):
    """Recorders and mutants replace ``cpu.runners.run_rows``: a quick call must go through the replacement."""
    a = np.arange(10.0)
    rotate.roll(a, 3)
    seen = []
    run_rows = runners.run_rows
    monkeypatch.setattr(runners, "run_rows", lambda buf, step: (seen.append(step), run_rows(buf, step)))
    with full_path_counted() as full:
        rotate.roll(a, 3)
    assert full[0] == 0 and len(seen) == 1
    assert a.tolist() == np.roll(np.arange(10.0), 6).tolist()


def test_read_only_array_of_a_cached_layout_raises_unchanged(host_calls):
    a = np.arange(12.0)
    rotate.roll(a, 5)
    b = np.arange(12.0)
    b.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        rotate.roll(b, 5)
    assert b.tolist() == list(range(12))


SETTINGS = {None: {}, "tile": {"tile_bytes": 64}, "lanes": {"lanes": 2, "min_lane_bytes": 64},
            "scratch": {"scratch_bytes": 0}}


@st.composite
def shared_argument_calls(draw):
    """Calls that share ``shift`` and ``axis`` (so only the layout or a setting tells their keys apart):
    ``[(dtype, shape, layout, shift, axis, setting), ...]``."""
    ndim = draw(st.integers(1, 2))
    axis = draw(st.sampled_from([None] + list(range(-ndim, ndim))))
    shift = draw(st.integers(-30, 30))
    out = []
    for _ in range(draw(st.integers(2, 6))):
        dtype = draw(st.sampled_from(["u1", "i2", "S3", "f4", "f8", "V12", "c16"]))
        shape = tuple(draw(st.lists(st.integers(1, 6 if ndim > 1 else 24), min_size=ndim, max_size=ndim)))
        layout = draw(st.sampled_from(["C", "F", "strided"] if axis is not None or ndim == 1 else ["C"]))
        out.append((dtype, shape, layout, shift, axis, draw(st.sampled_from(sorted(SETTINGS, key=str)))))
    return out


@given(shared_argument_calls())
@example([("f8", (12,), "C", 3, None, None), ("f8", (13,), "C", 3, None, None)])       # shape alone differs
@example([("f4", (3, 4), "C", 1, 1, None), ("f4", (3, 4), "F", 1, 1, None)])          # strides alone
@example([("f8", (12,), "C", 3, None, None), ("f4", (12,), "strided", 3, None, None)])  # dtype alone (strides 8)
@example([("f8", (512,), "C", 3, None, None), ("f8", (512,), "C", 3, None, "scratch")])  # a tuning override
def test_calls_of_other_layouts_and_settings_never_take_a_wrong_entry(sequence):
    """Calls with the same arguments on other dtypes, shapes, strides and tuning overrides, back to back on
    one cache and each repeated: every result equals numpy.roll's, so no call ran another's entry."""
    with empty_host_cache():
        for i, (dtype, shape, layout, shift, axis, setting) in enumerate(sequence * 2):
            raw = _buffer(2 * int(np.prod(shape)) * np.dtype(dtype).itemsize, i)
            buf = raw.copy()
            expected = raw.copy()
            view = _view(expected, dtype, shape, layout)
            view[...] = np.roll(view.copy(), shift, axis)
            with cpu_tuning.override(**SETTINGS[setting]):
                rotate.roll(_view(buf, dtype, shape, layout), shift, axis)
            assert buf.tobytes() == expected.tobytes(), (i, dtype, shape, layout, shift, axis, setting)


def test_tuning_override_plans_again(host_calls):
    """A quick entry made under one policy is not run under another: the plan key holds the policy object."""
    a = np.zeros(4096)
    rotate.roll(a, 3)
    with cpu_tuning.override(scratch_bytes=0):
        with full_path_counted() as full:
            rotate.roll(a, 3)
            assert full[0] == 1
            rotate.roll(a, 3)
            assert full[0] == 1  # and the override's own entry is quick after that
        assert rotate.plan(a, 3).scratch_bytes == 0
    with full_path_counted() as full:
        rotate.roll(a, 3)
        assert full[0] == 1  # back to the default policy: its entry was replaced, so planned again
