"""Issue #10: no silent corruption, no dead processes, numpy.roll's arguments, honest plans.

Views that alias other data (multi-field structured views, self-overlapping
strides), fork/spawn/forkserver pools and threads under every threading
layer, integer sequences numpy.roll accepts, the CPU scratch bound (measured
with tracemalloc), masked arrays in plan(), ``stream=`` on the host, device
arrays without a GPU, and plan invariants checked on every planned case.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import textwrap
import tracemalloc
import types
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, note
from hypothesis import strategies as st

import rotate
from rotate import _api
from rotate._core import arrays as _arrays, validate as _validate
from rotate._backends.cpu import planner
from rotate._backends.cpu import tuning as cpu_tuning
from rotate._schedules import chain as S
from rotate._schedules import gries_mills
from rotate._backends.cuda import device as gpu_device, registry as gpu_registry, runtime as gpu_runtime
from rotate._backends.cuda.schedules import (chain as gpu_chain, half_swaps as gpu_half_swaps, lane_panels as gpu_lane_panels,
                                             lane_swaps as gpu_lane_swaps, lane_walks as gpu_lane_walks,
                                             multi_axis as gpu_multi_axis, row_cycles as gpu_row_cycles,
                                             row_lanes as gpu_row_lanes, row_strips as gpu_row_strips)
from rotate._backends.cuda import tuning as cuda_tuning

HERE = Path(__file__).parent
ROOT = HERE.parents[1]
as_strided = np.lib.stride_tricks.as_strided

KNOWN_CPU_ALGORITHMS = {
    "small-rows-copy", "small-rows-word-rotate", "small-rows-registers", "buffered-shift", "block-swap", "block-swap+buffered-shift",
    "block-swap+fused-shift", "reversal", "strided-buffered-shift", "strided-reversal",
    "chain-serial", "chain-lanes", "chain-rows",  # the chain schedule (issue #36)
    "multi-axis-cycles",  # several axes in one pass (rotate._backends.cpu.lanes)
}


def raw(seed, nbytes):
    return np.random.default_rng(seed).integers(1, 256, nbytes, dtype=np.uint8)


def void(a):
    return a.view(np.dtype((np.void, a.dtype.itemsize)))


# --- plan invariants, asserted on every planned case ---------------------------------

def check_plan(p, a, bound=None):
    """What every plan must satisfy; kills plans that sum scratch, under-count bytes, ..."""
    assert p.backend == "cpu"
    assert p.shape == tuple(np.shape(a))
    assert p.scratch_bytes == max((s.scratch_bytes for s in p.steps), default=0)
    assert p.bytes_moved == sum(s.bytes_moved for s in p.steps)
    assert p.ideal_bytes == sum(2 * s.rows * s.seg_bytes for s in p.steps)
    assert p.bytes_moved >= p.ideal_bytes
    assert p.algorithm == ("+".join(dict.fromkeys(s.algorithm for s in p.steps)) or "noop")
    for s in p.steps:
        assert s.algorithm in KNOWN_CPU_ALGORITHMS
        assert s.strided == s.algorithm.startswith("strided-")
        assert s.word_bytes in (1, 2, 4, 8)
        assert s.seg_bytes % s.word_bytes == 0 and s.left_bytes % s.word_bytes == 0
        assert 0 < s.left_bytes < s.seg_bytes
        assert s.rows >= 1 and s.scratch_bytes >= 0
        if s.algorithm in ("reversal", "strided-reversal"):
            assert s.scratch_bytes == 0
        if bound is not None:
            assert s.scratch_bytes <= bound
        assert s.scratch_bytes <= cpu_tuning.current().scratch_bytes
    return p


@given(seed=st.integers(0, 2**32 - 1),
       shape=st.lists(st.integers(1, 40), min_size=1, max_size=3),
       dtype=st.sampled_from([np.uint8, np.int16, np.float32, np.complex128, "S3"]),
       order=st.sampled_from("CF"), data=st.data())
def test_plan_invariants_and_result_on_random_cases(seed, shape, dtype, order, data):
    dtype = np.dtype(dtype)
    a = np.asarray(raw(seed, int(np.prod(shape)) * dtype.itemsize).view(dtype).reshape(shape), order=order)
    a = np.require(a, requirements="W")
    axes = data.draw(st.lists(st.integers(-len(shape), len(shape) - 1), min_size=1, max_size=3), label="axes")
    shifts = data.draw(st.lists(st.integers(-100, 100), min_size=len(axes), max_size=len(axes)), label="shifts")
    bound = data.draw(st.sampled_from([None, 0, 1, 16, 100, 4096]), label="max_scratch_bytes")
    note(f"a = {a!r}; rotate.roll(a, {shifts}, axis={axes}, max_scratch_bytes={bound})")
    expected = np.roll(void(a).copy(), shifts, axis=axes)
    p = check_plan(rotate.plan(a, shifts, axes, max_scratch_bytes=bound), a, bound)
    step_axes = {ax for s in p.steps for ax in (s.axis if isinstance(s.axis, tuple) else (s.axis,))}
    assert step_axes <= {ax % len(shape) for ax in axes}
    rotate.roll(a, shifts, axes, max_scratch_bytes=bound)
    assert void(a).tobytes() == expected.tobytes()


def test_scratch_is_the_largest_step_not_the_sum():
    # A strided view: one pass per axis (contiguous arrays roll both axes in one pass).
    a = np.require(raw(1, 2 * 64 * 4096).view(np.uint64).reshape(64, 1024), requirements="W")[:, ::2]
    p = check_plan(rotate.plan(a, (100, 200), axis=(0, 1)), a)
    assert len(p.steps) == 2 and all(s.scratch_bytes > 0 for s in p.steps)
    assert p.scratch_bytes < sum(s.scratch_bytes for s in p.steps)


# --- multi-field structured views --------------------------------------------------

XYZ = np.dtype([("x", "<i4"), ("y", "<i4"), ("z", "<i4")])


def test_multi_field_view_rolls_only_its_fields():
    a = np.zeros(4, XYZ)
    a["x"], a["y"], a["z"] = [1, 2, 3, 4], [10, 20, 30, 40], [5, 6, 7, 8]
    p = check_plan(rotate.plan(a[["x", "z"]], 1), a[["x", "z"]])
    assert p.ideal_bytes == 2 * 4 * 8  # the fields' bytes, not the items'
    assert rotate.roll(a[["x", "z"]], 1) is not None
    assert a["y"].tolist() == [10, 20, 30, 40]
    assert a["x"].tolist() == [4, 1, 2, 3] and a["z"].tolist() == [8, 5, 6, 7]


@pytest.mark.parametrize("fields", [["x", "z"], ["y"], ["z", "x"], ["x", "y"]])
@pytest.mark.parametrize("shape,axis,shift", [((7,), None, 3), ((5, 6), 1, -2), ((5, 6), None, 11),
                                              ((5, 6), (0, 1), (1, 4)), ((4, 3, 5), 2, 7)])
def test_multi_field_views_match_numpy(fields, shape, axis, shift):
    n = int(np.prod(shape))
    base = np.require(raw(3, n * 12).view(XYZ).reshape(shape), requirements="W")
    before = base.copy()
    v = base[fields]
    rotate.roll(v, shift, axis=axis)
    for name in XYZ.names:
        want = np.roll(before[name], shift, axis=axis) if name in fields else before[name]
        assert np.array_equal(base[name], want), name


def test_nested_and_subarray_fields():
    dt = np.dtype([("a", "u1"), ("b", [("c", "<i2"), ("d", "<f8")]), ("e", "<i4", (3,))])
    base = np.require(raw(5, 9 * dt.itemsize).view(dt), requirements="W")
    before = base.copy()
    rotate.roll(base[["b", "e"]], 2)
    assert np.array_equal(base["a"], before["a"])
    assert void(base["b"].copy()).tobytes() == void(np.roll(before["b"], 2).copy()).tobytes()
    assert np.array_equal(base["e"], np.roll(before["e"], 2, axis=0))


def test_padded_struct_rolls_its_fields_and_leaves_padding_alone():
    dt = np.dtype({"names": ["a", "b"], "formats": ["u1", "<f8"], "offsets": [0, 8], "itemsize": 16})
    a = np.require(raw(9, 16 * 10).view(dt), requirements="W")
    before = a.copy()
    padding = a.view(np.uint8).reshape(10, 16)[:, 1:8].copy()
    assert _arrays.has_gaps(a.dtype)
    rotate.roll(a, 3)
    assert np.array_equal(a["a"], np.roll(before["a"], 3)) and np.array_equal(a["b"], np.roll(before["b"], 3), equal_nan=True) or \
        a["b"].tobytes() == np.roll(before["b"], 3).tobytes()
    assert np.array_equal(a.view(np.uint8).reshape(10, 16)[:, 1:8], padding)


def test_field_byte_ranges():
    assert _arrays.field_byte_ranges(np.dtype("<f8")) == [(0, 8)]
    assert _arrays.field_byte_ranges(XYZ) == [(0, 12)]
    a = np.zeros(2, XYZ)
    assert _arrays.field_byte_ranges(a[["x", "z"]].dtype) == [(0, 4), (8, 12)]
    assert _arrays.field_byte_ranges(a[["z"]].dtype) == [(8, 12)]


def test_packed_field_view_word_width_follows_strides():
    """a['b'] of a packed 9-byte struct: 8-byte items 9 bytes apart; words must be bytes."""
    dt = np.dtype([("a", "u1"), ("b", "<u8")])
    base = np.require(raw(11, 9 * 50).view(dt), requirements="W")
    before = base.copy()
    word = planner._word_layout(base["b"].shape, base["b"].strides, 8, 0)[0]
    assert word == 1
    rotate.roll(base["b"], 7)
    assert np.array_equal(base["b"], np.roll(before["b"], 7))
    assert np.array_equal(base["a"], before["a"])


# --- self-overlapping views ---------------------------------------------------------

def _refused(v, base, *calls):
    before = base.copy()
    for call in calls:
        with pytest.raises(ValueError, match="overlap in memory") as err:
            call(v)
        assert "copy()" in str(err.value)
        assert np.array_equal(base, before)


def test_zero_stride_views_are_refused():
    x = np.arange(1, 5)
    v = as_strided(x, (2, 3, 4), (0, 0, 8))
    _refused(v, x, lambda v: rotate.roll(v, 1, axis=2), lambda v: rotate.plan(v, 1, axis=2),
             lambda v: rotate.roll(v, 1, axis=0))
    _refused(as_strided(x, (3,), (0,)), x, lambda v: rotate.roll(v, 1), lambda v: rotate.rotate(v, 1))


def test_sliding_windows_are_refused():
    y = np.arange(1, 11)
    w = np.lib.stride_tricks.sliding_window_view(y, 3, writeable=True)
    _refused(w, y, lambda v: rotate.roll(v, 1, axis=1), lambda v: rotate.roll(v, 1, axis=0))


def test_partially_overlapping_items_are_refused():
    x = np.arange(1, 11, dtype=np.int64)
    _refused(as_strided(x, (9,), (4,)), x, lambda v: rotate.roll(v, 1))  # 8-byte items 4 bytes apart


def test_zero_stride_on_a_length_one_axis_is_fine():
    x = np.arange(1, 9)
    v = as_strided(x, (1, 8), (0, 8))
    rotate.roll(v, 3, axis=1)
    assert x.tolist() == np.roll(np.arange(1, 9), 3).tolist()


@given(shape=st.lists(st.integers(0, 5), min_size=1, max_size=3),
       strides=st.lists(st.integers(-24, 24), min_size=3, max_size=3),
       itemsize=st.sampled_from([1, 2, 4, 8]))
def test_may_self_overlap_is_exact_on_small_layouts(shape, strides, itemsize):
    strides = strides[:len(shape)]
    offsets = np.zeros(1, dtype=np.int64)
    for n, s in zip(shape, strides):
        offsets = (offsets[:, None] + np.arange(n) * s).reshape(-1)
    cells = [o + b for o in offsets.tolist() for b in range(itemsize)]
    overlapping = len(cells) != len(set(cells))
    assert _validate.may_self_overlap(shape, strides, itemsize) == overlapping


def test_large_interleaved_layout_counts_as_overlapping():
    # Axes that do not nest and too many elements to enumerate: refused, not risked.
    assert _validate.may_self_overlap((1 << 11, 1 << 11), (8, 9), 8)
    assert not _validate.may_self_overlap((1 << 11, 1 << 11), (8 << 11, 8), 8)


# --- numpy.roll's integer arguments -------------------------------------------------

@pytest.mark.parametrize("shift,axis", [
    (range(1, 3), np.array([0, 1])), (np.array([1, 2]), (0, 1)), ((1, 2), np.array([0, 1], dtype=np.int8)),
    (np.True_, None), (np.True_, 1), (np.array(True), 0), ([np.True_, np.False_], [0, 1]),
    (np.array(3), None), (np.array([2, 255], dtype=np.uint8), [1, 0]), ((s for s in (1, 2)), (0, 1)),
    (np.int64(-7), np.int32(1)), (np.array([5]), np.array([1])),
])
def test_integer_sequences_numpy_accepts(shift, axis):
    a = np.arange(1, 13).reshape(3, 4)
    if hasattr(shift, "__next__"):
        expected = np.roll(a, (1, 2), axis=axis)
        shift = (s for s in (1, 2))
    else:
        expected = np.roll(a, shift, axis=axis)
    assert rotate.roll(a, shift, axis=axis) is a
    assert np.array_equal(a, expected)


@pytest.mark.parametrize("shift", [np.array([1.0, 2.0]), np.array([1.5]), (1, np.float64(2.0)),
                                   np.array(2.0), ["1", 2], [1, None], np.array([1 + 0j, 2])])
def test_float_and_other_sequences_are_refused_not_truncated(shift):
    a = np.arange(1, 13).reshape(3, 4)
    before = a.copy()
    for call in (lambda: rotate.roll(a, shift, axis=(0, 1)), lambda: rotate.plan(a, shift, axis=(0, 1)),
                 lambda: rotate.roll(a, shift)):
        with pytest.raises(TypeError, match="shift must be an integer"):
            call()
    assert np.array_equal(a, before)


def test_float_axis_arrays_and_nested_sequences_are_refused():
    a = np.arange(1, 13).reshape(3, 4)
    with pytest.raises(TypeError, match="axis must be an integer"):
        rotate.roll(a, 1, axis=np.array([0.0, 1.0]))
    with pytest.raises(ValueError, match="1-D"):
        rotate.roll(a, [[1, 2]], axis=(0, 1))
    with pytest.raises(ValueError, match="1-D"):
        rotate.roll(a, 1, axis=np.array([[0]]))
    assert np.array_equal(a, np.arange(1, 13).reshape(3, 4))


def test_middle_accepts_numpy_integers_only():
    a = np.arange(10)
    assert rotate.rotate(a, np.int8(3)) == 7
    assert rotate.rotate(a, np.array(7)) == 3
    assert np.array_equal(a, np.arange(10))
    for bad in (np.float64(3.0), np.array([3]), 3.0):
        with pytest.raises(TypeError, match="middle must be an integer"):
            rotate.rotate(a, bad)


# --- max_scratch_bytes on the CPU, measured -----------------------------------------

def _peak(fn):
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


# Bookkeeping (ops arrays, small int arrays, Python objects), not scratch; the default
# scratch these cases would take is MiBs. (Peaks of 11-20 KB in the strided case came
# from compiling its specialisation inside the measurement, when the warm-up used a
# contiguous copy.)
SLACK = 16384


@pytest.mark.parametrize("bound", [0, 1, 7, 64, 1000, 4096, 1 << 20])
@pytest.mark.parametrize("case", ["one-row", "rows", "small-rows", "strided", "axis-none-line"])
def test_max_scratch_bytes_is_honoured(case, bound):
    def make(base):
        if case == "one-row":
            return base, (1 << 17) - 12345, None
        if case == "rows":
            return base.reshape(8, -1), 3001, 1
        if case == "small-rows":
            return base.reshape(-1, 16), 5, 1
        if case == "strided":
            return base.reshape(512, 512)[:, ::2], 200, 0
        return base[::2][None], 40000, None

    a, shift, axis = make(np.arange(1 << 18, dtype=np.int64))  # 2 MiB: default scratch would be MiBs
    expected = np.roll(a, shift, axis=axis)
    p = check_plan(rotate.plan(a, shift, axis, max_scratch_bytes=bound), a, bound)
    # Compile outside the measurement, on a view of the same layout (a contiguous copy
    # compiled another specialisation, whose allocations then landed in the peak).
    warm = make(np.arange(1 << 18, dtype=np.int64))[0]
    rotate.roll(warm, shift, axis, max_scratch_bytes=bound)
    peak = _peak(lambda: rotate.roll(a, shift, axis, max_scratch_bytes=bound))
    assert np.array_equal(a, expected)
    assert peak <= min(bound, cpu_tuning.current().scratch_bytes) + SLACK, (p, peak)
    assert peak >= p.scratch_bytes  # the plan says what is really allocated


def test_default_scratch_bound_measured():
    a = np.arange(1 << 21, dtype=np.int64)  # 16 MiB, shift of 4 MiB: more than the scratch bound
    rotate.roll(a.copy(), 1 << 19)
    p = rotate.plan(a, 1 << 19)
    peak = _peak(lambda: rotate.roll(a, 1 << 19))
    bound = cpu_tuning.current().scratch_bytes
    assert p.scratch_bytes <= bound and peak <= bound + SLACK
    assert np.array_equal(a, np.roll(np.arange(1 << 21), 1 << 19))


def test_bound_below_one_word_still_rolls():
    a = np.arange(1, 1001, dtype=np.uint64)
    p = rotate.plan(a, 10, max_scratch_bytes=7)
    assert p.algorithm == "reversal" and p.scratch_bytes == 0
    rotate.roll(a, 10, max_scratch_bytes=7)
    assert np.array_equal(a, np.roll(np.arange(1, 1001, dtype=np.uint64), 10))


def test_cpu_plan_cache_follows_tunables(tune):
    a = np.arange(1 << 16, dtype=np.int64)
    before = rotate.plan(a, 3000)
    tune.cpu(scratch_bytes=1024)
    after = rotate.plan(a, 3000)
    assert after.scratch_bytes <= 1024 < before.scratch_bytes


# --- masked arrays --------------------------------------------------------------------

def test_masked_plan_counts_and_checks_the_mask():
    m = np.ma.array(np.arange(1, 11, dtype=np.int32), mask=[0, 1] * 5)
    p = check_plan(rotate.plan(m, 3), m)
    assert p.ideal_bytes == 2 * (m.data.nbytes + m.mask.nbytes)
    assert len(p.steps) == 2
    rotate.roll(m, 3)
    assert m.data.tolist() == np.roll(np.arange(1, 11), 3).tolist()
    assert m.mask.tolist() == np.roll([False, True] * 5, 3).tolist()


def test_read_only_mask_refused_by_plan_and_roll_naming_the_mask():
    m = np.ma.array(np.arange(1, 11), mask=[0, 1] * 5)
    m._mask.flags.writeable = False
    before, mask_before = m.data.copy(), m.mask.copy()
    assert m.flags.writeable
    for call in (lambda: rotate.plan(m, 1), lambda: rotate.roll(m, 1), lambda: rotate.rotate(m, 2),
                 lambda: rotate.plan(m, middle=2)):
        with pytest.raises(ValueError, match=r"a\.mask is read-only") as err:
            call()
        assert "unshare_mask" in str(err.value)
    assert np.array_equal(m.data, before) and np.array_equal(m.mask, mask_before)


def test_masked_array_with_nomask_plans_only_the_data():
    m = np.ma.array(np.arange(1, 11))
    assert rotate.plan(m, 1).ideal_bytes == 2 * m.data.nbytes


# --- axis=None on a strided line ------------------------------------------------------

@pytest.mark.parametrize("make", [
    lambda b: b[::2][None], lambda b: b[::-3][None, :, None], lambda b: b.reshape(6, 10)[:, ::2].T[:1],
    lambda b: b.reshape(10, 6)[::2, :], lambda b: b.reshape(2, 30)[:, ::3][None],
])
def test_axis_none_on_views_whose_c_order_is_one_line(make):
    b = np.arange(1, 61, dtype=np.int32)
    v = make(b)
    line = _arrays.c_order_line(v.shape, v.strides)
    ref = make(np.arange(1, 61, dtype=np.int32))
    if line is None:
        with pytest.raises(ValueError, match="C-contiguous"):
            rotate.roll(v, 4)
        return
    outside = np.ones(60, bool)
    outside[(np.asarray(make(np.arange(60))).reshape(-1))] = False
    for shift in (1, -4, v.size + 2):
        expected = np.roll(ref, shift)
        check_plan(rotate.plan(v, shift), v)
        rotate.roll(v, shift)
        rotate.roll(ref, shift)  # keep ref in step, then compare with numpy
        assert np.array_equal(v, expected)
    assert np.array_equal(b[outside], np.arange(1, 61)[outside])


def test_c_order_line():
    assert _arrays.c_order_line((1, 5), (999, 16)) == (5, 16)
    assert _arrays.c_order_line((2, 3), (48, 16)) == (6, 16)
    assert _arrays.c_order_line((2, 3), (40, 16)) is None
    assert _arrays.c_order_line((3, 2), (8, 24)) is None


# --- stream= on the host, device arrays without a GPU ----------------------------------

def test_stream_for_a_numpy_array_is_an_error():
    a = np.arange(1, 11)
    for call in (lambda: rotate.roll(a, 1, stream=0), lambda: rotate.rotate(a, 1, stream=object()),
                 lambda: rotate.roll(np.ma.array(a, mask=[0] * 10), 1, stream=7)):
        with pytest.raises(TypeError, match="stream="):
            call()
    assert a.tolist() == list(range(1, 11))
    assert rotate.roll(a, 1, stream=None) is a


def _cuda_available():
    try:
        from numba import cuda
        from numba.core import config
        return not config.ENABLE_CUDASIM and cuda.is_available()
    except Exception:
        return False


@pytest.mark.skipif(_cuda_available(), reason="this machine has a GPU: the no-GPU message cannot occur")
def test_device_array_without_a_gpu_gets_a_clear_error():
    class CAI:
        __cuda_array_interface__ = {"shape": (10,), "typestr": "<i8", "data": (1 << 20, False),
                                    "version": 3, "strides": None}

    for call in (lambda: rotate.roll(CAI(), 1), lambda: rotate.plan(CAI(), 1), lambda: rotate.rotate(CAI(), 2)):
        with pytest.raises(RuntimeError, match="no usable CUDA GPU") as err:
            call()
        assert "numpy array" in str(err.value)


# --- GPU planning arithmetic (no GPU needed: the device's shape is stubbed) -------------

@pytest.fixture
def gpu_planner(monkeypatch):
    monkeypatch.setattr(gpu_device, "device_shape", lambda device_id=0: (132, 228 * 1024))
    monkeypatch.setattr(gpu_device, "_device_id", lambda: 0)
    # Classic chain plans unless a test asks for co-resident ones: the same plans with or without a driver.
    monkeypatch.setattr(gpu_device, "_cooperative_config", lambda: False)


def test_gpu_default_scratch_is_the_larger_of_one_percent_and_the_floor(gpu_planner):
    # main's chain schedule replaced "short": its scratch is per-lane pre-reads, so the
    # bound shows in default_cap and in which plans fit under it.
    assert gpu_device.default_cap(1, 1 << 20) == gpu_device.policy().min_scratch  # 1% would be 10 KiB
    n = 4 << 30  # 1% is 43 MB > 16 MiB
    assert gpu_device.default_cap(1, n) == n // gpu_device.policy().scratch_fraction
    small = gpu_registry.plan_step(None, 1, 1, 1 << 20, (1 << 19) + 16, 1, 0, None)  # exactly half: half-swaps
    assert small.algorithm == "chain"  # needs more than 1% of the array: only the floor lets it buffer
    assert (1 << 20) // gpu_device.policy().scratch_fraction < small.scratch_bytes <= gpu_device.policy().min_scratch
    big = gpu_registry.plan_step(None, 1, 1, n, 30 << 20, 1, 0, None)
    assert big.algorithm == "chain"
    assert big.scratch_bytes <= max(n // gpu_device.policy().scratch_fraction, gpu_device.policy().min_scratch)
    capped = gpu_registry.plan_step(None, 1, 1, n, 30 << 20, 1, 0, 1 << 20)
    assert capped.algorithm != "chain" and capped.scratch_bytes <= 1 << 20


def test_gpu_rows_the_chain_and_block_swaps_decline_take_the_lane_kernels(gpu_planner):
    """Many long rows whose chain pre-reads pass the bound and whose count passes max_swap_rows: every row
    through a roll_rows kernel by one shift, in numpy.roll's direction (params.shift, items), within the
    bound; one row still takes reversal (there is no lane to spread)."""
    rows, word = 100, 4
    for seg, kind, algorithm in ((20_000, gpu_lane_panels.LanePanelsParams, "row-panels"),
                                 (1 << 20, (gpu_lane_walks.LaneWalksParams, gpu_lane_swaps.LaneSwapsParams),
                                  ("row-walks", "row-swaps"))):
        n = seg // word
        for s in (1, n // 3, n - 7):
            left = (n - s) * word
            step = gpu_registry.plan_step(1, s, rows, seg, left, word, 0, 0)
            assert isinstance(step.params, gpu_row_lanes.RowLanesParams) and isinstance(step.params.lanes, kind), step
            assert step.algorithm in algorithm and step.details["schedule"] == step.algorithm
            assert step.params.shift == s and step.scratch_bytes == 0, step
            assert (step.shift, step.left_bytes, step.rows, step.seg_bytes) == (s, left, rows, seg)
    one = gpu_registry.plan_step(None, 12345, 1, 1 << 20, (1 << 20) - 12345 * 4, 4, 0, 0)
    assert one.algorithm in ("reversal", "block-swap"), one


@pytest.mark.parametrize("capability", [(8, 0), (8, 9), (9, 0), (10, 0)])
def test_gpu_pipelined_kernel_only_where_bulk_copies_exist(gpu_planner, monkeypatch, capability):
    """The default chain kernel needs sm_90's bulk copies: an older GPU plans the "auto" variants, and
    asking for "pipeline" there by name is an error that names the fix, raised before any launch."""
    from rotate._backends.cuda.kernels import chain as chain_kernels

    monkeypatch.setattr(gpu_device, "device_capability", lambda device_id=0: capability)
    hopper = capability >= (9, 0)
    for shift in (3, 1 << 19):  # shorter than a tile (single under "auto"), and longer (control warp)
        d = gpu_registry.plan_step(None, 1, 1, 1 << 22, shift, 1, 0, None).details
        assert d["pipeline"] == hopper
        assert d["block"] == (gpu_device.policy().pipeline_threads + 64 if hopper else
                              chain_kernels.THREADS + (32 if d["control_warp"] else 0))
        assert d["control_warp"] == (hopper or shift >= d["tile_bytes"])
    with cuda_tuning.override(chain_variant="pipeline"):
        if hopper:
            assert gpu_registry.plan_step(None, 1, 1, 1 << 22, 3, 1, 0, None).details["pipeline"]
        else:
            with pytest.raises(ValueError, match=r"compute capability 9\.0 or newer.*use 'auto'"):
                gpu_registry.plan_step(None, 1, 1, 1 << 22, 3, 1, 0, None)


def test_gpu_plan_cache_key_includes_the_capability(gpu_planner, monkeypatch):
    """A plan made for one GPU generation is never served for another (the kernel variant differs)."""
    from rotate import _backends

    cuda = _backends.backend_named("cuda")
    info = _arrays.ArrayInfo((1 << 20,), (1,), np.dtype(np.uint8), "cuda", pointer=1 << 20)
    keys = []
    for capability in ((8, 0), (9, 0)):
        monkeypatch.setattr(gpu_device, "device_capability", lambda device_id=0, c=capability: c)
        keys.append(cuda.plan_key(info, None))
        plan = _api._make_plan(cuda, info, {None: 12345}, None)
        assert plan.steps[0].details["pipeline"] == (capability >= (9, 0))
    assert keys[0] != keys[1]


def test_gpu_plan_cache_key_includes_tunables(gpu_planner):
    from rotate import _backends

    cuda = _backends.backend_named("cuda")
    info = _arrays.ArrayInfo((1 << 20,), (1,), np.dtype(np.uint8), "cuda", pointer=1 << 20)
    with cuda_tuning.override(grid=8, tile_bytes=8192):
        a = _api._make_plan(cuda, info, {None: 12345}, None)
    with cuda_tuning.override(grid=8, tile_bytes=4096):
        b = _api._make_plan(cuda, info, {None: 12345}, None)
    assert a.tile_bytes == 8192 and b.tile_bytes == 4096


def test_gpu_lane_panel_groups(gpu_planner):
    """lane-panels' run writer: groups of a warp or more, as many as a panel has lanes, unless
    ``row_threads`` forces a size (which must divide the block)."""
    def details(n, **forced):
        with cuda_tuning.override(**forced):
            return gpu_lane_panels.plan_lane_panels(1, 1 << 18, n, 4, 0).details

    got = {n * 4: (details(n, lane_warps=False)["panel_rows"], details(n, lane_warps=False)["row_threads"])
           for n in (1024, 4096, 16384)}
    assert got == {4096: (24, 32), 16384: (6, 64), 65536: (1, 512)}, got
    assert details(1024, row_threads=64, lane_warps=False)["row_threads"] == 64
    with pytest.raises(ValueError, match="row_threads must divide the block's 512 threads, got 96"):
        details(1024, row_threads=96, lane_warps=False)


def test_gpu_lane_warps_take_lanes_of_1_to_8_kib(gpu_planner):
    """lane-panels' warps variant: by default for lanes of 1-8 KiB (unless ``lane_threads`` is a block size
    only the panel kernel takes, or ``lane_writer`` is forced), forced by ``lane_warps=True`` where a
    group's slots fit, never with False; a lane a quarter warp up to 1 KiB, a half warp up to 2 KiB, a warp
    beyond (``warp_lane_threads`` forces one); blocks of eight warps up to 4 KiB lanes, four beyond; two
    slots a group unless ``warp_slots`` says; the grid holds the blocks an SM's shared memory and
    registers allow, at most one group a lane; bad knobs are named."""
    from rotate._backends.cuda.kernels import panels

    def details(lanes, n, item=4, **forced):
        with cuda_tuning.override(**forced):
            return gpu_lane_panels.plan_lane_panels(1, lanes, n, item, 0).details

    sms, _ = gpu_device.device_shape(0)
    four = details(1 << 18, 1024)
    assert (four["variant"], four["block"], four["slots"], four["writer"], four["lane_threads"]) == \
        ("warps", 256, 2, "runs", 32), four
    assert four["smem_bytes"] == panels.warp_smem_bytes(4096) == 8 * (2 * 16 * panels.warp_slot_vecs(4096) + 128)
    assert four["grid"] == sms * 2  # 120 registers a thread: two blocks of 256 an SM
    eight = details(1 << 17, 2048)
    assert (eight["variant"], eight["block"], eight["slots"]) == ("warps", 128, 2), eight
    assert eight["smem_bytes"] == panels.warp_smem_bytes(8192, 128) and eight["grid"] == sms * 3  # by shared memory
    assert details(1 << 18, 1025)["block"] == 128  # past 4 KiB: four warps a block
    assert details(1 << 18, 1024, warp_min_blocks=3)["grid"] == sms * 3
    assert details(1 << 18, 1024, warp_slots=3)["smem_bytes"] == panels.warp_smem_bytes(4096, 256, 3)
    assert details(5, 1024)["grid"] == 1  # 5 lanes: one block of 8 warps
    two = details(1 << 18, 512)  # 2 KiB: a half warp a lane, 16 groups a block
    assert (two["variant"], two["lane_threads"]) == ("warps", 16), two
    assert two["smem_bytes"] == panels.warp_smem_bytes(2048, 256, 2, 16)
    assert two["smem_bytes"] == 16 * (2 * 16 * panels.warp_slot_vecs(2048) + 128)
    one = details(1 << 18, 256)  # 1 KiB: a quarter warp a lane, 32 groups a block
    assert (one["variant"], one["lane_threads"], one["block"]) == ("warps", 8, 256), one
    assert details(40, 256)["grid"] == 2  # 40 lanes, 32 groups a block
    assert "variant" not in details(1 << 18, 255)  # under 1 KiB: the gather writer
    assert "variant" not in details(1 << 18, 128)  # 512 B
    assert "variant" not in details(1 << 18, 256, lane_writer="gather")
    assert "variant" not in details(1 << 18, 256, lane_writer="runs", lane_warps=False)  # the panel run writer
    assert details(1 << 18, 256, lane_writer="runs")["variant"] == "warps"  # it writes runs too
    assert "variant" not in details(1 << 18, 1024, lane_threads=16)  # a panel block size: the panel kernel
    assert details(1 << 18, 128, lane_warps=True)["variant"] == "warps"
    assert details(1 << 18, 1024, warp_lane_threads=16)["lane_threads"] == 16
    assert "variant" not in details(1 << 18, 2049)  # past WARP_LANE_BYTES
    assert "variant" not in details(1 << 18, 1024, lane_warps=False)
    assert details(1 << 16, 4096, lane_warps=True)["grid"] == sms  # 16 KiB, forced: one block of 4 warps an SM
    assert "variant" not in details(1 << 14, 16384, lane_warps=True)  # 64 KiB: four warps' slots do not fit
    assert "variant" not in details(1 << 18, 3, item=4, lane_warps=True)  # under 16 bytes
    with pytest.raises(ValueError, match="warp_slots must be 2 to 8 or None, got 9"):
        details(1 << 18, 1024, warp_slots=9)
    with pytest.raises(ValueError, match="lane_threads must be a multiple of 32 up to 1024 .* got 48"):
        details(1 << 18, 1024, lane_threads=48, lane_warps=True)
    with pytest.raises(ValueError, match="warp_lane_threads must be one of 32, 16, 8, 4 or None, got 12"):
        details(1 << 18, 1024, warp_lane_threads=12)


def test_gpu_long_lanes_plan_lane_swaps_one_launch_of_two_blocks_an_sm(gpu_planner):
    """256 lanes of 4 MiB (issue #9) with ``long_lanes="swaps"``: lane-swaps, one launch, shifts host or
    device; the plan says grid, block, shared memory, scratch and bytes moved (exact for host shifts, a
    bound otherwise)."""
    from rotate._backends.cuda.kernels import lane_swaps as lane_swaps_kernels, panels

    rows, n = 256, 1 << 22
    assert gpu_lane_panels.plan_lane_panels(1, rows, n, 1, 0) is None
    shifts = np.random.default_rng(0).integers(-n, n, rows)
    with cuda_tuning.override(long_lanes="swaps"):
        host = gpu_registry.plan_long_lanes(1, rows, n, 1, 3, None, shifts)
        device = gpu_registry.plan_long_lanes(1, rows, n, 1, 3, None, None)
    for step in (host, device):
        d = step.details
        assert step.algorithm == d["schedule"] == "lane-swaps" and d["launches"] == 1 and not d["co_resident"]
        assert d["grid"] == min(rows, 132 * 2) and d["block"] == panels.THREADS and d["head0"] == 3
        assert 2 * (d["smem_bytes"] + 1024 + 64) <= 228 * 1024 and d["smem_bytes"] <= cuda_tuning.HOPPER.max_block_smem
        assert lane_swaps_kernels.swap_smem_bytes(d["panel_bytes"], d["save_bytes"]) == d["smem_bytes"]
        assert 75 * 1024 < d["save_bytes"] < 90 * 1024 and d["panel_bytes"] == 16 * 1024
        assert step.scratch_bytes == 0
    want = sum(gries_mills.swap_traffic(n, (n - int(s) % n) % n, host.details["save_bytes"]) for s in shifts)
    assert host.bytes_moved == want and not host.details["bytes_moved_is_bound"]
    assert device.bytes_moved == 4 * rows * n >= want and device.details["bytes_moved_is_bound"]
    # Lanes whose every small side fits the saved side: exactly 2N even for device shifts.
    with cuda_tuning.override(swap_save_bytes=120_000):
        short = gpu_registry.plan_long_lanes(1, 10, 120_000, 2, 0, None, None)
    assert short.bytes_moved == 2 * 10 * 240_000 and not short.details["bytes_moved_is_bound"]
    # A few huge lanes with host shifts: a chain launch per run of equal shifts.
    few = gpu_registry.plan_long_lanes(1, 2, 1 << 27, 1, 0, None, np.array([5, 5]))
    assert few.algorithm == "lane-chains"
    assert gpu_registry.plan_long_lanes(1, 2, 1 << 27, 1, 0, None, None).algorithm == "lane-swaps"  # over 24 MiB
    with cuda_tuning.override(swap_save_bytes=1 << 20, long_lanes="swaps"):
        with pytest.raises(ValueError, match="swap_save_bytes"):
            gpu_registry.plan_long_lanes(1, rows, n, 1, 0, None, None)


def test_gpu_lane_walks_default_scratch_is_what_the_readme_says(gpu_planner):
    """README, "Scratch": lane-walks' default is a twelfth of a lane a block (a sixth with fewer lanes than
    blocks) plus a 1% pool, over the general default bound (issue #30: 8 GiB of 1 MiB lanes, 1.27%);
    an explicit max_scratch_bytes bounds it all."""
    for rows, seg in ((8192, 1 << 20), (64, 4 << 20)):
        step = gpu_registry.plan_long_lanes(1, rows, seg, 1, 0, None, None)
        d = step.details
        share = seg // (6 if rows <= d["grid"] else 12)
        assert step.algorithm == "lane-walks" and abs(d["share_bytes"] - share) < 16, (d["share_bytes"], share)
        assert d["pool_bytes"] == int(rows * seg / 100) // 16 * 16
        assert step.scratch_bytes == d["grid"] * d["share_bytes"] + d["pool_bytes"]
        if rows == 8192:
            assert round(100 * step.scratch_bytes / (rows * seg), 2) == 1.27
        capped = gpu_registry.plan_long_lanes(1, rows, seg, 1, 0, 8 << 20, None)
        assert capped.scratch_bytes <= 8 << 20


@pytest.mark.slow  # 8 s of planning on 2 cores
@pytest.mark.mutants  # it kills tools/mutation.py's walk-traffic mutants
def test_gpu_long_lanes_plan_lane_walks(gpu_planner):
    """Lanes from 1 MiB take lane-walks by default (one launch, one pass, two blocks an SM, a share of
    scratch a block); shorter ones lane-swaps; the plan reports a bound on bytes moved, and
    ``walk_traffic`` the exact count (the kernel's own decisions, lane by lane: the emulator's plan);
    bad settings are errors that name the setting."""
    from rotate._testing import emulator as E
    from rotate._backends.cuda.kernels import panels, walks

    rows, n, head = 300, 1 << 22, 3  # more lanes than blocks: a share of a twelfth of a lane
    shifts = np.random.default_rng(1).integers(-n, n, rows)
    # Lanes whose spans exceed that share by 1.3-2.2x (16-32 KiB tiles), the largest asking first.
    shifts[[0, 100, 200]] = (2515571, -1796829, 466374)
    host = gpu_registry.plan_long_lanes(1, rows, n, 1, head, None, shifts)
    device = gpu_registry.plan_long_lanes(1, rows, n, 1, head, None, None)
    for step in (host, device):
        d = step.details
        assert step.algorithm == d["schedule"] == "lane-walks" and d["launches"] == 1 and not d["co_resident"]
        assert d["grid"] == min(rows, 132 * 2) and d["block"] == panels.THREADS and d["head0"] == head
        assert 2 * (d["smem_bytes"] + 1024 + 2048) <= 228 * 1024, d  # two blocks an SM, static memory too
        assert d["tile_bytes"] == (walks.WALK_WIDE_TILE_BYTES // 2, walks.WALK_WIDE_TILE_BYTES)
        assert d["max_tiles"] == walks.WALK_WIDE_MAX_TILES and d["buffers"] == walks.WALK_BUFFERS
        assert d["share_bytes"] == int(n * gpu_device.policy().walk_share) // 16 * 16
        assert d["pool_bytes"] == int(rows * n * gpu_device.policy().walk_pool) // 16 * 16
        assert step.scratch_bytes == d["grid"] * d["share_bytes"] + d["pool_bytes"]
    def replay(shifts, pool):
        """What the kernel does lane by lane, the pool asked in ticket (lane) order: (plan, bytes moved,
        lanes walked, pool bytes asked, lanes walked from the pool, each over-share lane's ask)."""
        with cuda_tuning.override(walk_pool_bytes=pool):
            host = gpu_registry.plan_long_lanes(1, rows, n, 1, head, None, shifts)
        want = walked = used = over = 0
        asks = []
        d = host.details
        for lane, s in enumerate(shifts):
            k = (n - int(s) % n) % n
            plan = E.walk_plan(n, k, (head + lane * n) % 16, d["tile_bytes"][1], d["max_tiles"], d["buffers"] - 1,
                               d["share_bytes"], d["save_bytes"], d["pool_bytes"] - used)
            pre = plan[5] if plan[0] == "walk" else plan[1]
            if pre > d["share_bytes"]:  # asked of the pool, whether it fits or not (the kernel keeps the add)
                used += pre
                asks.append(pre)
            if plan[0] == "walk":
                want += 2 * n + 2 * plan[5]
                walked += 1
                over += plan[5] > d["share_bytes"]
            else:
                assert plan[0] == "swaps", plan
                want += max(2 * n, gries_mills.swap_traffic(n, k, d["save_bytes"]))
        assert gpu_lane_walks.walk_traffic(host, shifts) == (want, walked)
        return host, want, walked, used, over, asks

    # The default pool holds every lane over its share; without one they all take block swaps.
    host, want, walked, used, over, asks = replay(shifts, None)
    assert walked == rows and 0 < over == len(asks) and 0 < used <= host.details["pool_bytes"]
    assert 2 * rows * n < want < 1.05 * 2 * rows * n  # random shifts: within 5% of one pass
    _, _, walked, _, over, _ = replay(shifts, 0)
    assert over == 0 and walked == rows - len(asks)
    # A pool the first asker overflows: it and every later asker take block swaps, even one the pool
    # could hold had the first not asked (its add stays).
    assert len(asks) >= 3 and asks[0] > min(asks[1:]), asks
    _, _, walked, _, over, _ = replay(shifts, min(asks[1:]))
    assert over == 0 and walked == rows - len(asks)
    for step in (host, device):  # the exact count costs ~80 us a lane: a plan reports the bound
        assert step.bytes_moved == 4 * rows * n and step.details["bytes_moved_is_bound"]
    with pytest.raises(ValueError, match="walk_traffic takes a lane-walks step, got 'lane-swaps'"):
        gpu_lane_walks.walk_traffic(gpu_registry.plan_long_lanes(1, 64, 300_000, 1, 0, None, None), shifts)
    # Shorter lanes: block swaps (most small sides fit the saved side there); walks when asked.
    assert gpu_registry.plan_long_lanes(1, 64, (1 << 20) - 16, 1, 0, None, None).algorithm == "lane-swaps"
    assert gpu_registry.plan_long_lanes(1, 64, 1 << 20, 1, 0, None, None).algorithm == "lane-walks"
    with cuda_tuning.override(long_lanes="walks"):
        assert gpu_registry.plan_long_lanes(1, 64, 300_000, 1, 0, None, None).algorithm == "lane-walks"
    # A bound on scratch sets the share, the pool gets what is left of it (lanes over both take block
    # swaps in the same launch).
    bounded = gpu_registry.plan_long_lanes(1, rows, n, 1, 0, 1 << 20, None)
    grid = bounded.details["grid"]
    assert bounded.scratch_bytes <= 1 << 20 and bounded.details["share_bytes"] == (1 << 20) // grid // 16 * 16
    assert bounded.details["pool_bytes"] == (1 << 20) - grid * bounded.details["share_bytes"]
    # No more lanes than blocks: a block's share holds one lane, a sixth of it.
    one_lane = gpu_registry.plan_long_lanes(1, 264, n, 1, 0, None, None).details
    assert one_lane["grid"] == 264 and one_lane["share_bytes"] == int(n * gpu_device.policy().walk_share_one_lane) // 16 * 16
    # Lanes under 2 MiB or over the wide tiles' most tiles (15 MiB) walk tiles of at most 24 KiB.
    for seg in ((1 << 20), (2 << 20) - 16, 16 << 20):
        narrow = gpu_registry.plan_long_lanes(1, 8, seg, 1, 0, None, None).details
        assert narrow["tile_bytes"][1] == walks.WALK_TILE_BYTES and narrow["max_tiles"] == walks.WALK_MAX_TILES, narrow
    assert gpu_registry.plan_long_lanes(1, 8, 2 << 20, 1, 0, None, None).details["tile_bytes"][1] == 32768
    # The launch bound's blocks an SM (a measurement knob): it caps the grid's blocks an SM; 1 by default.
    assert gpu_registry.plan_long_lanes(1, rows, n, 1, 0, None, None).details["min_blocks"] == 1
    with cuda_tuning.override(walk_tile_bytes=16384, walk_max_tiles=128, swap_panel_bytes=8192, walk_min_blocks=3):
        capped = gpu_registry.plan_long_lanes(1, 4096, 1 << 20, 1, 0, None, None).details
        assert capped["min_blocks"] == 3 and capped["grid"] == 3 * 132, capped
    for knobs, message in (({"walk_min_blocks": 0}, "walk_min_blocks must be an integer from 1 to 8"),
                           ({"walk_min_blocks": 2.5}, "walk_min_blocks must be an integer from 1 to 8"),
                           ({"long_lanes": "fast"}, "long_lanes must be 'walks', 'swaps' or None"),
                           ({"walk_tile_bytes": 100}, "walk_tile_bytes must be a multiple of 16 from 32"),
                           ({"walk_buffers": 5}, "walk_buffers must be 2, 3 or 4"),
                           ({"walk_max_tiles": 1}, "walk_max_tiles must be an integer >= 2"),
                           ({"walk_pool_bytes": -16}, "walk_pool_bytes must be >= 0"),
                           ({"walk_tile_bytes": 1 << 17}, "need .* bytes of shared memory a block"),
                           ({"long_lanes": "walks", "walk_max_tiles": 4}, "long_lanes='walks' cannot take lanes")):
        with cuda_tuning.override(**knobs):
            with pytest.raises(ValueError, match=message):
                gpu_registry.plan_long_lanes(1, rows, n, 1, 0, None, None)


def test_gpu_even_fftshifts_and_half_rolls_plan_half_swaps(gpu_planner):
    """Every rolled axis by half its length is disjoint swaps (rotate/_schedules/rowperm.py): issue #9's gate shapes
    (8192^2, 1 GiB and 4 GiB complex64 fftshifts), 3-D ones and one-axis rolls by n/2 plan ``half-swaps``,
    one pass, 2N, no scratch; misaligned halves, other shifts, a forced row-cycles variant or the setting
    off plan what they did before."""
    def multi(*args):
        steps = gpu_multi_axis.plan_multi_axis(*args)
        assert len(steps) == 1, steps  # one pass
        return steps[0]

    for shape in ((8192, 8192), (16384, 8192), (65536, 8192), (512, 512, 512)):
        step = multi(shape, 8, {ax: n // 2 for ax, n in enumerate(shape)}, 0, None)
        assert step.algorithm == "half-swaps" and step.scratch_bytes == 0, step
        assert step.bytes_moved == 2 * step.rows * step.seg_bytes == 2 * 8 * int(np.prod(shape))
        d = step.details
        assert d["items"] * d["chunk_bytes"] * d["rows_per_item"] >= step.rows * step.seg_bytes // 2
    assert multi((8192, 8192), 8, {0: 4096, 1: 4096}, 8, None).algorithm == "row-cycles"  # base 8 past 16
    assert multi((8191, 8193), 8, {0: 4095, 1: 4096}, 0, None).algorithm == "row-cycles"  # odd lengths
    assert multi((8192, 8192), 8, {0: 1001, 1: 4096}, 0, None).algorithm == "row-cycles"  # not half
    assert multi((8192, 8194), 4, {0: 4096, 1: 4097}, 0, None).algorithm == "row-cycles"  # half row 16388 B
    for forced in ({"cycle_variant": "chunked"}, {"half_swaps": False}):
        with cuda_tuning.override(**forced):
            assert multi((8192, 8192), 8, {0: 4096, 1: 4096}, 0, None).algorithm == "row-cycles"
    one = gpu_registry.plan_step(1, 512, 1000, 8192, 4096, 8, 0, None)  # roll(a, 512, axis=1), (1000, 1024) f64
    assert one.algorithm == "half-swaps" and one.details["lead"] == (1, 1, 1, 1000) and one.rows == 1000
    flat = gpu_registry.plan_step(None, 1 << 29, 1, 1 << 30, 1 << 29, 1, 0, None)  # roll(a, n // 2), axis=None
    assert flat.algorithm == "half-swaps" and (flat.axis, flat.shift, flat.left_bytes) == (None, 1 << 29, 1 << 29)
    assert gpu_registry.plan_step(None, (1 << 29) + 1, 1, 1 << 30, (1 << 29) - 1, 1, 0, None).algorithm == "chain"
    with cuda_tuning.override(half_swap_vecs=5):
        with pytest.raises(ValueError, match="half_swap_vecs"):
            multi((64, 64), 8, {0: 32, 1: 32}, 0, None)
    with cuda_tuning.override(lane_threads=384):  # groups are halvings of the block
        with pytest.raises(ValueError, match="lane_threads must be a power of two for half-swaps, got 384"):
            multi((64, 64), 8, {0: 32, 1: 32}, 0, None)


def test_gpu_flat_strips_plan_a_flat_pass_and_a_narrow_strip(gpu_planner):
    """``flat_strips``: issue #9's general multi-axis gate shapes as a flat chain pass and a row-strips
    step moving the narrower strip (77 of 8192 columns: ~1% more bytes than 2N); rows off a 16-byte
    boundary, two rolled leading axes or a strip a batch over the scratch bound keep row-cycles."""
    shape, shifts = (16384, 8192), {0: 1001, 1: 77}
    assert [s.algorithm for s in gpu_multi_axis.plan_multi_axis(shape, 8, shifts, 0, None)] == ["row-cycles"]
    with cuda_tuning.override(flat_strips=True):
        # the flat rotation's pre-reads need 27.6 MiB: over the 16 MiB default bound, row-cycles stays
        assert [s.algorithm for s in gpu_multi_axis.plan_multi_axis(shape, 8, shifts, 0, None)] == ["row-cycles"]
        flat, strip = gpu_multi_axis.plan_multi_axis(shape, 8, shifts, 0, 64 << 20)
        assert flat.algorithm == "chain" and (flat.rows, flat.seg_bytes) == (1, 1 << 30)
        assert flat.left_bytes == (1 << 30) - (1001 * 65536 + 77 * 8)
        d = strip.details
        assert strip.algorithm == "row-strips" and d["strip"] == (0, 616) and d["up"] and d["rows"] == 16384
        assert d["items"] >= 132 and strip.scratch_bytes == d["items"] * 16 * d["vectors"]
        assert strip.bytes_moved < 0.011 * 2 * (1 << 30)
        # (32768, 8192) float32 by (5, -3): the strip is the last 3 columns, moved down a row
        flat, strip = gpu_multi_axis.plan_multi_axis((32768, 8192), 4, {0: 5, 1: 8189}, 0, None)
        assert strip.details["strip"] == (8189 * 4, 32768) and not strip.details["up"]
        assert flat.left_bytes == (1 << 30) - (4 * 32768 + 8189 * 4)
        # (2, 8, 64) uint8 rolled over axes 1 and 2: two batches of 8 rows
        flat, strip = gpu_multi_axis.plan_multi_axis((2, 8, 64), 1, {1: 3, 2: 5}, 0, None)
        assert (flat.rows, flat.seg_bytes, strip.rows, strip.details["rows"]) == (2, 512, 2, 8)
        steps = gpu_multi_axis.plan_multi_axis(shape, 8, shifts, 8, 64 << 20)  # rows at 8 past a 16-byte boundary
        assert [s.algorithm for s in steps] == ["row-cycles"]
        three = gpu_multi_axis.plan_multi_axis((16, 16, 512), 8, {0: 3, 1: 5, 2: 7}, 0, None)
        assert [s.algorithm for s in three] == ["row-cycles"]
        assert gpu_multi_axis.plan_flat_strips((4096,), (5,), 1 << 20, 1 << 19, 1, 0, 1 << 18) is None


def test_gpu_row_cycles_variant_follows_the_row_length(gpu_planner):
    """Issue #9's long rows: three row buffers up to ~75 KiB rows (the measured kernel stays the default),
    the chunked kernel with the first row in shared memory beyond (the 16384 x 16384 complex64 fftshift: one
    pass, 2N), first rows in scratch where a row exceeds a block, per-axis passes where those exceed the
    scratch bound or leave too few walks to load the GPU; every choice within a block's shared memory."""
    plan = gpu_row_cycles.plan_row_cycles

    def run(shape, shifts, item=8, **settings):
        with cuda_tuning.override(**settings):
            return plan(shape, item, shifts, 0, None)

    mid = run((16384, 8192), {0: 1001, 1: 77})  # long cut cycles, a misaligned row shift: three rows
    assert mid.details["variant"] == "three-rows"
    swaps = run((16384, 8192), {0: 8192, 1: 4096})  # even fftshift (half-swaps by default): chunked swaps
    assert swaps.details["variant"] == "chunked" and swaps.bytes_moved == 2 * swaps.rows * swaps.seg_bytes
    assert run((16384, 8192), {0: 8192, 1: 4096}, cycle_variant="three-rows").details["variant"] == "three-rows"
    odd = run((8191, 8193), {0: 4096, 1: 4097})  # odd fftshift: one long cycle, misaligned
    assert run((512, 512, 512), {0: 256, 1: 256, 2: 256}).details["variant"] == "three-rows"  # 4 KiB rows
    assert odd.details["variant"] == "three-rows"
    assert gpu_row_cycles.plan_row_cycles((16384, 8192), 8, {0: 8192, 1: 4096}, 8, None).details["variant"] == \
        "three-rows"  # a base 8 bytes past a 16-byte boundary: the measured default
    big = run((16384, 16384), {0: 8192, 1: 8192})
    assert (big.details["variant"], big.details["first_rows"]) == ("chunked", "shared memory")
    assert big.bytes_moved == 2 * 16384 * 16384 * 8 and big.details["pre_read_rows"] == 0
    rolled = run((16384, 16384), {0: 1001, 1: 77})  # one long cycle: cut, pre-reads within the bound
    assert rolled.details["variant"] == "chunked" and 0 < rolled.details["pre_read_rows"] == rolled.details["segments"]
    assert rolled.details["_pre_bytes"] <= gpu_device.default_cap(16384, 16384 * 8)
    # 512 KiB rows: no saved row in a block; the bound leaves few walks, so by default one pass per axis
    assert run((4096, 65536), {0: 1, 1: 32768}) is None
    huge = run((4096, 65536), {0: 1, 1: 32768}, cycle_min_walk_share=0.0)
    assert (huge.details["variant"], huge.details["first_rows"]) == ("chunked", "scratch")
    assert huge.details["blocks_per_sm"] == 1 and huge.details["ring"] >= 3  # few walks: deep rings
    assert run((4096, 65536), {0: 2048, 1: 32768}) is None  # 2048 first rows of 512 KiB exceed the bound
    for step in (big, rolled, huge):
        assert step.details["smem_bytes"] <= gpu_device.policy().max_lane_smem
    forced = run((8192, 8192), {0: 4096, 1: 4096}, cycle_variant="chunked")  # measurable against three-rows
    assert forced.details["variant"] == "chunked" and forced.details["blocks_per_sm"] >= 2
    assert run((16384, 16384), {0: 8192, 1: 8192}, cycle_variant="three-rows") is None
    pinned = run((16384, 16384), {0: 8192, 1: 8192}, cycle_chunk_bytes=8192, cycle_ring=2)
    assert (pinned.details["chunk_bytes"], pinned.details["ring"]) == (8192, 2)
    for bad, words in ((dict(cycle_variant="chunks"), "cycle_variant"), (dict(cycle_chunk_bytes=1000), "multiple of 16"),
                       (dict(cycle_ring=5), "cycle_ring")):
        with pytest.raises(ValueError, match=words):
            run((16384, 16384), {0: 8192, 1: 8192}, **bad)


# --- threads and processes under every threading layer ----------------------------------

def _layers():
    out = []
    for layer, module in (("workqueue", "workqueue"), ("omp", "omppool"), ("tbb", "tbbpool")):
        try:
            __import__(f"numba.np.ufunc.{module}")
            available = True
        except ImportError:
            available = False
        out.append(pytest.param(layer, marks=pytest.mark.skipif(
            not available, reason=f"numba's {layer} threading layer cannot load here")))
    return out


PROCESS_SCRIPT = textwrap.dedent('''
    import multiprocessing as mp, os, sys, threading
    import numpy as np, numba, rotate
    from rotate._backends import cpu as _cpu

    def check(seed):
        n = (1 << 19) + seed
        a = np.random.default_rng(seed).integers(1, 1 << 60, n)
        want = np.roll(a, 3 * seed + 1001)
        rotate.roll(a, 3 * seed + 1001)
        ok = bool(np.array_equal(a, want))
        m = a.reshape(-1)[: (n // 64) * 64].reshape(64, -1)[:, ::3]
        want_m = np.roll(m, 5, axis=0)
        rotate.roll(m, 5, axis=0)
        return ok and bool(np.array_equal(m, want_m))

    if __name__ == "__main__":
        mode = sys.argv[1]
        assert check(0)  # the parent has launched its threading layer
        print("layer", numba.threading_layer())
        assert numba.threading_layer() == os.environ["NUMBA_THREADING_LAYER"]
        if mode == "fork":
            pid = os.fork()
            if pid == 0:
                os._exit(0 if check(1) and check(2) else 3)
            _, status = os.waitpid(pid, 0)
            assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
            assert check(3)  # the parent still runs in parallel
        elif mode == "threads":
            results = []
            threads = [threading.Thread(target=lambda s=s: results.append(check(s))) for s in range(1, 7)]
            [t.start() for t in threads]
            [t.join() for t in threads]
            assert results == [True] * 6, results
        else:
            with mp.get_context(mode).Pool(2) as pool:
                assert pool.map_async(check, range(1, 5)).get(timeout=300) == [True] * 4
        print("ok", mode)
''')


# fork and threads in the fast suite; pools and fresh interpreters (seconds each) under -m slow.
@pytest.mark.parametrize("mode", ["fork", "threads", pytest.param("pool-fork", marks=pytest.mark.slow),
                                  pytest.param("spawn", marks=pytest.mark.slow),
                                  pytest.param("forkserver", marks=pytest.mark.slow)])
@pytest.mark.parametrize("layer", _layers())
def test_processes_and_threads_under_each_threading_layer(layer, mode, tmp_path):
    if mode in ("fork", "pool-fork", "forkserver") and not hasattr(os, "fork"):
        pytest.skip("no fork on this platform")
    script = tmp_path / "job.py"
    script.write_text(PROCESS_SCRIPT)
    env = dict(os.environ, NUMBA_THREADING_LAYER=layer, NUMBA_NUM_THREADS="2",
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    result = subprocess.run([sys.executable, str(script), mode.replace("pool-", "")], env=env,
                            capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert f"ok {mode.replace('pool-', '')}" in result.stdout


@pytest.mark.parametrize("lanes", [1, 2, 3])
def test_any_team_size_gives_the_same_bytes(lanes, tune):
    """Lanes are run by rotate._backends.cpu.team's threads: 1, 2 or 3 of them move the same bytes (every CPU schedule
    with phases, strided grids and per-lane kernels included)."""
    tune.cpu(lanes=lanes, min_lane_bytes=1)
    rng = np.random.default_rng(4)
    for shape, shift, axis in [((4000,), 1234, None), ((64, 50), 7, 1), ((300, 8), 3, 1),
                               ((50, 64), 11, 0), ((10000,), 4999, None), ((9, 10, 11), (3, -4), (0, 2))]:
        a = rng.integers(1, 1 << 60, shape)
        want = np.roll(a, shift, axis)
        rotate.roll(a, shift, axis)
        assert a.tobytes() == want.tobytes()
        s = rng.integers(1, 1 << 60, (shape[0], 40))[:, ::3]
        want = np.roll(s, 2, axis=0)
        rotate.roll(s, 2, axis=0)
        assert s.tobytes() == want.tobytes()
        r = rng.integers(0, 256, (shape[0], 7), dtype=np.uint8)
        shifts = rng.integers(-9, 9, shape[0])
        want = np.stack([np.roll(row, k) for row, k in zip(r, shifts)])
        rotate.roll_rows(r, shifts)
        assert r.tobytes() == want.tobytes()
    with cpu_tuning.override(scratch_bytes=256):
        a = rng.integers(1, 1 << 60, 10001)
        want = np.roll(a, 5000)
        rotate.roll(a, 5000)
        assert a.tobytes() == want.tobytes()


def test_no_cpu_kernel_enters_a_numba_parallel_region():
    """The CPU kernels are serial nogil code run by rotate._backends.cpu.team (no threading layer's limits, and a first
    call compiles two to three times faster): none may be compiled with ``parallel=True``."""
    from numba.core.registry import CPUDispatcher

    from rotate._backends.cpu import kernels as cpu_kernels, lanes as cpu_lanes

    kernels = [obj for module in (cpu_kernels, cpu_lanes) for obj in vars(module).values() if isinstance(obj, CPUDispatcher)]
    assert len(kernels) > 20
    assert [k.py_func.__name__ for k in kernels if k.targetoptions.get("parallel")] == []


# --- waveops argument checks ------------------------------------------------------------

@pytest.mark.parametrize("width", [128, 3, 0, -32, 256])
def test_waveops_cpu_rotate_refuses_bad_widths(width):
    from waveops import cpu

    lanes = np.arange(512, dtype=np.int32)
    with pytest.raises(ValueError, match="power of two"):
        cpu.rotate(lanes, 1, width=width)


# --- the quick path of repeated device calls (issue #8; no GPU: the device is stubbed) -----

class _FakeDeviceArray:
    """A CUDA Array Interface exporter whose memory is never touched (only _prepare runs)."""

    def __init__(self, n, pointer=1 << 32, readonly=False, stream=None, typestr="<f4", strides=None):
        self.n, self.pointer, self.readonly, self.cai_stream, self.typestr = n, pointer, readonly, stream, typestr
        self.strides = strides
        self.reads = 0

    @property
    def __cuda_array_interface__(self):
        self.reads += 1
        return {"shape": (self.n,), "strides": self.strides, "data": (self.pointer, self.readonly),
                "typestr": self.typestr, "stream": self.cai_stream, "version": 3}


@pytest.fixture
def quick_device(gpu_planner, monkeypatch):
    from rotate._backends.cuda.kernels import memops

    if memops.SIMULATED:
        pytest.skip("the simulator's arrays take the full path")
    monkeypatch.setattr(_arrays, "_device_usable", True)
    monkeypatch.setattr(_api, "_quick_calls", {})
    monkeypatch.setattr(_api, "_quick_layouts", {})
    return gpu_planner


def test_quick_path_reuses_the_full_description_and_plan(quick_device):
    a = _FakeDeviceArray(1 << 20, stream=7)
    full = _api._prepare(a, 3, None, None, None, None)
    reads = a.reads
    again = _api._prepare(a, 3, None, None, None, None)
    assert a.reads == reads + 1  # one interface read: no second description
    assert again[2] is full[2] and again[3] is full[3]  # the same ArrayInfo and Plan objects
    assert again[3] == rotate.plan(a, 3)
    assert again[4] == full[4] == 7  # the interface's stream, as the full path resolves it
    moved = _FakeDeviceArray(1 << 20, pointer=(1 << 33) + 16, stream=7)  # same layout, same 16-byte offset
    m = _api._prepare(moved, 3, None, None, None, None)
    assert m[2].pointer == moved.pointer and m[3] is full[3]
    odd = _FakeDeviceArray(1 << 20, pointer=(1 << 33) + 4)  # another offset: planned on its own
    assert _api._prepare(odd, 3, None, None, None, None)[2].pointer == odd.pointer
    assert _api._prepare(a, 3, None, None, None, 0)[4] == 0  # stream= wins over the current stream


def test_quick_path_takes_tuples_of_ints(quick_device):
    """Multi-axis rolls and fftshift pass tuples: a repeated call skips the description and the planning too;
    lists and numpy integers still take the full path (same plans)."""
    a = _FakeDeviceArray(1 << 20)
    full = _api._prepare(a, (3,), (0,), None, None, None)
    reads = a.reads
    again = _api._prepare(a, (3,), (0,), None, None, None)
    assert a.reads == reads + 1 and again[3] is full[3]
    summed = _api._prepare(a, (3, 4), (0, 0), None, None, None)[3]  # shifts naming one axis add up
    assert summed == rotate.plan(a, 7, 0) and summed.steps[0].shift == 7
    reads = a.reads
    listed = _api._prepare(a, [3], [0], None, None, None)
    assert a.reads > reads + 1 and listed[3] == full[3]
    assert _api._prepare(a, (np.int64(3),), (0,), None, None, None)[3] == full[3]


def test_quick_path_replans_when_a_setting_changes(quick_device):
    a = _FakeDeviceArray(1 << 20)
    first = _api._prepare(a, 12345, None, None, None, None)[3]
    with cuda_tuning.override(grid=8, tile_bytes=4096):
        under = _api._prepare(a, 12345, None, None, None, None)[3]
        assert under.tile_bytes == 4096 and under == rotate.plan(a, 12345)
    assert _api._prepare(a, 12345, None, None, None, None)[3] == first


def test_quick_path_never_caches_a_refusal(quick_device):
    ro = _FakeDeviceArray(1 << 20, readonly=True)
    for _ in range(2):
        with pytest.raises(ValueError, match="read-only"):
            _api._prepare(ro, 3, None, None, None, None)
    bad = _FakeDeviceArray(1 << 20, typestr="|O8")
    for _ in range(2):
        with pytest.raises(TypeError):
            _api._prepare(bad, 3, None, None, None, None)
    a = _FakeDeviceArray(1 << 20)
    for _ in range(2):
        with pytest.raises(TypeError, match="stream"):
            _api._prepare(a, 3, None, None, None, "not a stream")


def test_quick_path_is_learnt_when_another_array_planned_the_layout(quick_device):
    # The full path's own plan cache (by layout) answered the first call for b
    # (its interface spells the same layout another way: explicit strides);
    # b's later calls must still take the quick path.
    a, b = _FakeDeviceArray(4096), _FakeDeviceArray(4096, pointer=1 << 34, strides=(4,))
    _api._prepare(a, 3, None, None, None, None)
    _api._prepare(b, 3, None, None, None, None)
    reads = b.reads
    _api._prepare(b, 3, None, None, None, None)
    assert b.reads == reads + 1
    assert any(key[0] == b.pointer for key in _api._quick_calls)


def test_quick_path_runs_on_the_stream_an_array_is_bound_to(quick_device):
    class BoundStream:
        def __cuda_stream__(self):
            return (0, 0xABC0)

    a = _FakeDeviceArray(1 << 20, stream=7)
    a.stream = BoundStream()  # like a numba array made on a stream: it wins over the interface's
    assert _api._prepare(a, 3, None, None, None, None)[4] == 0xABC0
    assert _api._prepare(a, 3, None, None, None, None)[4] == 0xABC0
    assert _arrays.quick_device(a)[2] == 0xABC0


def test_gpu_plan_cache_key_includes_the_tuning_policy(gpu_planner, tune):
    # Issue #8: the key holds everything a planner reads: the tuning policy itself, so a changed field
    # (any of them) plans anew.
    from rotate import _backends

    cuda = _backends.backend_named("cuda")
    info = _arrays.ArrayInfo((4096, 1024), (4096, 4), np.dtype(np.float32), "cuda", pointer=1 << 20)
    tune.cuda(flat_strips=False)  # a narrow strip: row-cycles, not a flat pass
    before = _api._make_plan(cuda, info, {0: 3, 1: 5}, None)
    tune.cuda(min_cycle_row=1 << 20)  # 4 KiB rows no longer take row-cycles
    after = _api._make_plan(cuda, info, {0: 3, 1: 5}, None)
    assert before.algorithm == "row-cycles" and after.algorithm != "row-cycles"
    key = cuda.plan_key(info, None)
    assert gpu_device.policy() in key
    for field in dataclasses.fields(cuda_tuning.CudaTuning):
        value = getattr(gpu_device.policy(), field.name)
        other = (not value) if isinstance(value, bool) else "x" if isinstance(value, str) else \
            value + (16,) if isinstance(value, tuple) else (value or 0) + 1
        with cuda_tuning.override(**{field.name: other}):
            assert cuda.plan_key(info, None) != key, field.name


@pytest.mark.parametrize("name", ["chain", "half_swaps", "strips"])
def test_gpu_kernel_handles_are_cached_per_device(monkeypatch, name):
    """numba loads a kernel's module once per device (``get_cufunc``), so the launcher caches cuda.core
    handles per device: an array on a second GPU never launches a handle loaded in the first one's
    context. Fakes stand in for the compiled kernels (no GPU needed)."""
    if gpu_runtime.SIMULATED:
        pytest.skip("the simulator compiles nothing")
    from rotate._backends.cuda.kernels import chain as chain_kernels, half_swaps as half_swaps_kernels, strips

    current = [0]

    class Compiled:
        class _codelibrary:  # noqa: N801 (numba's attribute name)
            @staticmethod
            def get_cufunc():
                return types.SimpleNamespace(kernel=("handle loaded on device", current[0]))

    class Kernel:
        def compile(self, signature):
            return Compiled()

    monkeypatch.setattr(chain_kernels, "chain_kernel", lambda *args: Kernel())
    monkeypatch.setattr(half_swaps_kernels, "half_swap_kernel", lambda *args: Kernel())
    monkeypatch.setattr(strips, "strip_save_kernel", lambda *args: Kernel())
    monkeypatch.setattr(strips, "strip_kernel", lambda *args: Kernel())
    compiled = {"chain": lambda device: gpu_chain._compiled_chain(-1, -2, -3, -4, device=device)[1],
                "half_swaps": lambda device: gpu_half_swaps._compiled_half_swaps(-1, -2, -4, device)[1],
                "strips": lambda device: gpu_row_strips._compiled_strips(-1, -2, device)[3]}[name]
    cache = {"chain": gpu_chain._compiled_chain, "half_swaps": gpu_half_swaps._compiled_half_swaps,
             "strips": gpu_row_strips._compiled_strips}[name]
    cache.cache_clear()
    try:
        handles = []
        for device in (0, 1, 0):
            current[0] = device
            handles.append(compiled(device))
        assert handles == [("handle loaded on device", 0), ("handle loaded on device", 1),
                           ("handle loaded on device", 0)]
    finally:
        cache.cache_clear()


@pytest.mark.slow  # plan tables of 1 GiB rows, seconds on 2 cores (CI runs -m slow)
@pytest.mark.mutants  # it kills tools/mutation.py's even-lanes mutants
def test_gpu_co_resident_chains_take_random_shifts(gpu_planner, monkeypatch):
    """Where a cooperative launch exists, random 1 GiB shifts plan one co-resident chain pass within the
    default bound (block swaps without it, where that bound is given; with no bound given the classic
    chain takes up to ``chain_default_share`` of the array first); structured shifts keep the classic
    plan; the plan's table is ``layout_pre_reads``' with the co-resident rule, its grid one block a lane."""
    from rotate._schedules import chain as S

    n = 1 << 30
    shifts = [int(s) for s in np.random.default_rng(0).integers(1, n, 4)]
    cap, share = gpu_device.default_cap(1, n), int(n * gpu_device.policy().chain_default_share)
    classic = [gpu_registry.plan_step(None, s, 1, n, s, 1, 0, cap).algorithm for s in shifts]
    assert classic.count("chain") <= 1, classic
    for s in shifts:
        step = gpu_registry.plan_step(None, s, 1, n, s, 1, 0, None)
        fits = gpu_chain.plan_chain(1, n, s, 0, share) is not None
        assert step.algorithm == ("chain" if fits else "block-swap"), (s, step)
        assert step.scratch_bytes <= (share if fits else cap), (s, step)
    monkeypatch.setattr(gpu_device, "_cooperative_config", lambda: True)
    for s in shifts:
        step = gpu_registry.plan_step(None, s, 1, n, s, 1, 0, None)
        d = step.details
        assert step.algorithm == "chain" and d["co_resident"], (s, step)
        assert d["grid"] == d["lanes"] <= gpu_chain.persistent_grid(d["tile_bytes"], gpu_chain.chain_threads(),
                                                                      d["buffers"], d["control_warp"])
        assert step.scratch_bytes <= gpu_device.default_cap(1, n)
        table, _ = gpu_chain.chain_layout(n, s, (0,), d["tile_bytes"], d["chain_step"], d["lane_steps"],
                                            d["buffers"], True)
        assert np.array_equal(table, d["_table"])
    for s in (3, 4097, n - 7):  # nothing pre-read either way: the classic plan, no cooperative launch
        d = gpu_registry.plan_step(None, s, 1, n, s, 1, 0, None).details
        assert not d["co_resident"], (s, d)
    with cuda_tuning.override(co_resident=False):
        assert not gpu_registry.plan_step(None, shifts[0], 1, n, shifts[0], 1, 0, None).details.get("co_resident")
    # The general multi-axis gate shape: a co-resident flat pass fits the default bound, then the strip.
    steps = gpu_multi_axis.plan_multi_axis((16384, 8192), 8, {0: 1001, 1: 77}, 0, None)
    assert [s.algorithm for s in steps] == ["chain", "row-strips"] and steps[0].details["co_resident"]
    # A wide strip (1500 of 4096 columns) stays with three-row row-cycles unless flat_strips=True forces it.
    wide = gpu_multi_axis.plan_multi_axis((3, 600, 4096), 1, {1: 77, 2: 1500}, 0, None)
    assert [s.algorithm for s in wide] == ["row-cycles"]
    with cuda_tuning.override(flat_strips=True):
        assert [s.algorithm for s in gpu_multi_axis.plan_multi_axis((3, 600, 4096), 1, {1: 77, 2: 1500}, 0, None)][1:] \
            == ["row-strips"]
    assert S.PRE == 3  # the co-resident rule only trades PRE for WAIT (tests/schedules/test_schedule.py)


def _stand_in_driver(monkeypatch, stale_stream=None):
    """Replace the runtime's numba.cuda with a stand-in: host arrays for device ones, events that complete
    when a test says (``event.done``) and remember their stream; recording on ``stale_stream`` raises (a
    destroyed stream's handle). Returns ``(events, synchronisations)``, both lists the stand-in appends to."""
    events, synced = [], []

    class Event:
        def __init__(self, timing=True):
            self.done, self.stream = False, None
            events.append(self)

        def record(self, stream):
            if stream == ("stream", stale_stream):
                raise RuntimeError("invalid resource handle")
            self.stream = stream

        def query(self):
            return self.done

    class DeviceArray:
        def __init__(self, host):
            self.size, self.dtype = host.size, host.dtype
            self.__cuda_array_interface__ = {"data": (id(self), False)}

    fake_cuda = types.SimpleNamespace(to_device=lambda host: DeviceArray(np.asarray(host)),
                                      device_array=lambda size, dtype: DeviceArray(np.empty(size, dtype)),
                                      event=Event, external_stream=lambda handle: ("stream", handle),
                                      default_stream=lambda: ("stream", 0), synchronize=lambda: synced.append(1),
                                      is_available=lambda: True)
    monkeypatch.setattr(gpu_runtime, "cuda", fake_cuda)
    monkeypatch.setattr(gpu_runtime, "SIMULATED", False)
    return events, synced


def test_gpu_scratch_keeps_replaced_buffers_until_the_stream_has_passed_them(monkeypatch):
    """A scratch buffer replaced by a larger one stays referenced until an event recorded on the call's
    stream at replacement completes (launches queued before it may still use it; an external memory pool
    would hand freed memory out at once), then is let go."""
    events, _ = _stand_in_driver(monkeypatch)
    scratch = gpu_runtime.Scratch(1234)
    scratch.reserve(10, 100)
    assert scratch._retired == []  # nothing replaced yet
    first_pre, first_flags = scratch.pre, scratch.flags
    scratch.reserve(10, 1000)  # the pre-read buffer grows; the flags fit
    assert scratch.pre is not first_pre and scratch.flags is first_flags
    assert [kept for _, kept in scratch._retired] == [first_pre] and events[-1].stream == ("stream", 1234)
    scratch.reserve(5000, 1000)  # the flags grow; the first buffer's launches have not finished: kept
    assert [kept for _, kept in scratch._retired] == [first_pre, first_flags]
    held = scratch.nbytes
    assert held >= first_pre.size + 4 * first_flags.size + scratch.pre.size + 4 * scratch.flags.size
    for event in events:
        event.done = True
    second_pre = scratch.pre
    scratch.reserve(5000, 10 ** 6)  # finished ones are let go; the one replaced now is kept
    assert [kept for _, kept in scratch._retired] == [second_pre]


def test_gpu_scratch_of_an_evicted_stream_is_kept_until_that_stream_has_passed_it(monkeypatch):
    """The least recently used stream's scratch, evicted from the cache by a ninth stream, stays referenced
    until an event recorded on *that* stream completes; a stale stream handle falls back to a device-wide
    synchronisation; release_scratch counts and drops the evicted scratch too."""
    events, synced = _stand_in_driver(monkeypatch, stale_stream=666)
    monkeypatch.setattr(gpu_runtime, "_scratch", gpu_runtime.collections.OrderedDict())
    monkeypatch.setattr(gpu_runtime, "_evicted", [])
    for handle in range(100, 100 + gpu_runtime.MAX_CACHED_STREAMS):
        gpu_runtime.scratch_for(handle, 0).reserve(10, 1000)
    oldest = gpu_runtime._scratch[(0, 100)]
    gpu_runtime.scratch_for(200, 0)  # a ninth stream evicts stream 100's scratch: kept, an event on stream 100
    assert (0, 100) not in gpu_runtime._scratch
    assert [kept for _, kept in gpu_runtime._evicted] == [oldest] and events[-1].stream == ("stream", 100)
    gpu_runtime.scratch_for(201, 0)  # evicts stream 101's; stream 100 has not passed its event: both kept
    assert len(gpu_runtime._evicted) == 2 and not synced
    for event in events:
        event.done = True
    gpu_runtime.scratch_for(202, 0)  # stream 100's and 101's are let go; stream 102's is kept
    assert [kept._handle for _, kept in gpu_runtime._evicted] == [102]
    stale = gpu_runtime.scratch_for(666, 0)  # a stream the caller will destroy
    stale.reserve(10, 1000)
    for handle in range(300, 300 + gpu_runtime.MAX_CACHED_STREAMS):
        gpu_runtime.scratch_for(handle, 0)
    assert synced  # its handle failed to take an event: the device was synchronised instead
    assert all(kept._handle != 666 for _, kept in gpu_runtime._evicted)
    held = sum(kept.nbytes for _, kept in gpu_runtime._evicted)
    assert held > 0 and gpu_runtime.release_scratch() >= held and gpu_runtime._evicted == []


@pytest.mark.slow  # 35 s of brute-force lane counts on 2 cores (.ci/run runs -m slow)
@pytest.mark.mutants  # it kills tools/mutation.py's even-lanes-one-block-an-sm
@given(m_max=st.integers(4, 1 << 18), sms=st.integers(2, 200), rows=st.integers(1, 3))
def test_gpu_even_lane_steps_are_exactly_the_lengths_that_load_every_sm_alike(m_max, sms, rows):
    shortest = max(1, -(-m_max // (3 * sms)))
    longest = 2 * shortest
    even = set(gpu_chain.even_lane_steps(rows, m_max, shortest, longest, sms).tolist())
    for steps in range(shortest, longest + 1):
        lanes = rows * -(-m_max // steps)
        per_sm = -(-lanes // sms)
        light = per_sm * sms - lanes  # SMs that hold one block fewer than the others
        assert (steps in even) == (per_sm >= 2 and light <= int(gpu_device.policy().co_resident_even_slack * sms)), \
            (steps, lanes, per_sm)


def test_gpu_co_resident_lane_scan_prefers_lanes_that_load_every_sm_alike(gpu_planner, monkeypatch):
    """The lane scan takes an even lane count that fits the bound over an uneven one that pre-reads less;
    among even ones, more blocks an SM first, then fewer pre-reads; with no even one fitting, the near
    scan's least pre-reading length, as before."""
    sms, m_max = 132, 100_000
    grid = 3 * sms
    shortest = -(-m_max // grid)
    pre_of = {}

    def fake_scan(seg, left, head, tile_bytes, chain, ring, co_resident, candidates, out):
        for i, steps in enumerate(candidates):
            out[i] = pre_of.get(int(steps), 100 << 20)

    monkeypatch.setattr(S, "compiled_table_builders", lambda: (None, None, fake_scan))
    monkeypatch.setattr(S, "max_tiles", lambda n, tile_bytes: m_max)

    def lanes(steps):
        return -(-m_max // steps)

    def scan(cap):
        return gpu_chain.co_resident_lane_steps(1, m_max * 16384, 12345, 0, 16384, 7, 3, grid, cap)

    even = gpu_chain.even_lane_steps(1, m_max, shortest, 2 * shortest, sms)
    three = [int(s) for s in even if -(-lanes(s) // sms) == 3]
    two = [int(s) for s in even if -(-lanes(s) // sms) == 2]
    uneven = next(s for s in range(shortest, 2 * shortest) if s not in set(even.tolist()))
    assert three and two
    pre_of.update({uneven: 1 << 20, two[0]: 2 << 20, three[-1]: 3 << 20})
    assert scan(64 << 20) == (three[-1], 3 << 20)  # three blocks an SM beat two with fewer pre-reads
    pre_of[three[-1]] = 40 << 20
    assert scan(32 << 20) == (two[0], 2 << 20)  # the three-an-SM length no longer fits: two an SM, not uneven
    pre_of.update({two[0]: 40 << 20})
    assert scan(32 << 20) == (uneven, 1 << 20)  # nothing even fits: the near scan's least pre-reading length


def test_gpu_chain_planner_lays_out_only_the_cheapest_tables(gpu_planner, monkeypatch):
    """Plan tables (the planner's slowest step) are built for the cheapest cost group that fits, not for
    every candidate: a random 1 GiB shift costs at most three layouts where building every candidate's
    cost twelve (the same plans: compared with that planner on 50 random problems when this changed)."""
    monkeypatch.setattr(gpu_device, "_cooperative_config", lambda: True)
    n, shift = 1 << 30, 871346366
    real, calls = gpu_chain.chain_layout, []

    def counted(*args):
        calls.append(args)
        return real(*args)

    monkeypatch.setattr(gpu_chain, "chain_layout", counted)
    cfg = gpu_chain.plan_chain(1, n, shift, 0, gpu_device.default_cap(1, n))
    assert cfg is not None and cfg["co_resident"] and len(calls) <= 3, (len(calls), cfg and cfg["lane_steps"])
    assert cfg["scratch_row"] + 8 * cfg["m_max"] + 64 <= gpu_device.default_cap(1, n)


class _FakeDeviceNd:
    """A C-contiguous device array's interface at a made-up address (planning reads no memory)."""

    def __init__(self, shape, dtype, pointer=1 << 33):
        self.shape, self.dtype = tuple(shape), np.dtype(dtype)
        self.__cuda_array_interface__ = {"shape": self.shape, "strides": None, "data": (pointer, False),
                                         "typestr": self.dtype.str, "version": 3}


def test_gpu_many_short_cycles_take_row_cycles_only_with_long_rows(gpu_planner, monkeypatch):
    """More than ``max_segments`` segments (many short cycles, as an fftshift's swaps) take one row-cycles pass
    only with rows of at least ``many_segments_min_row`` (3 KiB): 3,788 B rows in 149,472 segments ran at 63%
    of memcpy on the H100 in one pass against 24% a pass an axis; 2 KiB rows in 807,072 segments at 25%
    against 38% (docs/results/row-cycles-rows-ab-h100.json). A caller's ``max_scratch_bytes`` bounds the
    step's table and flags too."""
    from rotate._backends.cuda.kernels import memops

    if memops.SIMULATED:
        pytest.skip("the simulator's arrays take the full path")
    monkeypatch.setattr(_arrays, "_device_usable", True)

    def algorithms(shape, dtype, shifts, axes, bound=None):
        plan = rotate.plan(_FakeDeviceNd(shape, dtype, 1 << 33), shifts, axes, max_scratch_bytes=bound)
        assert bound is None or plan.scratch_bytes <= bound, str(plan)
        return [s.algorithm for s in plan.steps]

    assert algorithms((16, 3, 18684, 947), "float32", (8, 1, 9342, 473), (0, 1, 2, 3)) == ["row-cycles"]
    assert algorithms((1442254, 2165), "int16", (721127, 1082), (0, 1)) == ["row-cycles"]
    # Its table and flags (20 MB for 721,127 segments) are scratch a caller's bound must cover.
    assert "row-cycles" not in algorithms((1442254, 2165), "int16", (721127, 1082), (0, 1), bound=1 << 20)
    assert algorithms((1442254, 2165), "int16", (721127, 1082), (0, 1), bound=1 << 26) == ["row-cycles"]
    assert "row-cycles" not in algorithms((2, 807072, 1025, 2), "uint8", (1, 512), (0, 2))
    with cuda_tuning.override(many_segments_min_row=4096):
        assert algorithms((16, 3, 18684, 947), "float32", (8, 1, 9342, 473), (0, 1, 2, 3)) != ["row-cycles"]


def test_gpu_multi_axis_rolls_group_the_half_axes(gpu_planner, monkeypatch):
    """Where no one-pass schedule takes a multi-axis roll, the axes rolled by half their length take one
    ``half-swaps`` pass together and the others their own plan, rather than a pass an axis: issue #33's
    random fftshifts of 3-4 axes with an odd side ran a pass an axis at 17-28% of memcpy. Rows off a
    16-byte boundary (no half-swaps) keep a pass an axis; a plan saving no pass is not grouped."""
    from rotate._backends.cuda.kernels import memops

    if memops.SIMULATED:
        pytest.skip("the simulator's arrays take the full path")
    monkeypatch.setattr(_arrays, "_device_usable", True)

    def algorithms(shape, dtype, shifts=None, axes=None, offset=0):
        a = _FakeDeviceNd(shape, dtype, (1 << 33) + offset)
        if shifts is None:  # fftshift over every axis
            axes = tuple(range(len(shape)))
            shifts = tuple(n // 2 for n in shape)
        return [s.algorithm for s in rotate.plan(a, shifts, axes).steps]

    assert algorithms((29683, 38, 8, 64), "float16") == ["chain", "half-swaps"]  # was four passes
    assert algorithms((16385, 151, 128), "float32") == ["row-cycles", "half-swaps"]  # was three
    assert algorithms((199, 20, 64), "complex64", (5, 10, 32), (0, 1, 2)) == ["chain", "half-swaps"]
    assert len(algorithms((29683, 38, 8, 64), "float16", offset=4)) == 4  # misaligned: a pass an axis
    assert len(algorithms((199, 20, 64), "complex64", (5, 3, 32), (0, 1, 2))) <= 2  # one half axis: no group
    # A wide strip in few batches (14 strip items of 17 MiB: 9% of memcpy on the H100) is no flat pass
    # and row-strips step where row-cycles declines: a pass an axis, the half axes grouped.
    shape = (14, 17, 16305, 64)
    ifft = algorithms(shape, "float16", tuple(-(n // 2) for n in shape), (0, 1, 2, 3))
    assert "row-strips" not in ifft and ifft[-1] == "half-swaps", ifft
    # Up to short_row_cycles_max_rows (2048) one row-cycles launch takes any rows, however short.
    assert algorithms((99, 20, 64), "complex64", (5, 10, 32), (0, 1, 2)) == ["row-cycles"]
    assert algorithms((2048, 32), "float32", (3, 5), (0, 1)) == ["row-cycles"]
    assert len(algorithms((2049, 32), "float32", (3, 5), (0, 1))) == 2
