"""In place, where users share memory (issue #30): shifts inside the rolled array, autograd's saved
tensors, plans handed to callers, and argument forms numpy.roll takes."""

from __future__ import annotations

import dataclasses
import os
import tracemalloc

import numpy as np
import numpy.ma as ma
import pytest

import rotate


def lanes_rolled(data: np.ndarray, shifts) -> np.ndarray:
    """numpy.roll lane by lane (lanes along the last axis), shifts read before anything moves."""
    shifts = np.array(shifts, copy=True)
    return np.stack([np.roll(data[i], int(shifts[i])) for i in range(data.shape[0])])


# --- roll_rows with shifts that share memory with the data -------------------------------------

@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.int8])
def test_roll_rows_with_shifts_inside_the_rolled_rows(dtype):
    """``roll_rows(a, a[0])``: the kernels would read lane i's shift after lane 0 moved (62 of 64 rows
    were wrong); the shifts are copied first, and the plan says so."""
    a = np.random.default_rng(0).integers(-100, 100, (64, 64)).astype(dtype)
    want = lanes_rolled(a, a[0])
    plan = rotate.plan_roll_rows(a, a[0])
    assert plan.steps[0].details["shift_copy_bytes"] == 64 * a.itemsize
    assert rotate.roll_rows(a, a[0]) is a
    assert a.tobytes() == want.tobytes()


def test_roll_rows_f_order_with_shifts_from_the_first_column():
    a = np.asfortranarray(np.random.default_rng(1).integers(-1000, 1000, (64, 48)))
    want = lanes_rolled(a, a[:, 0])
    rotate.roll_rows(a, a[:, 0])
    assert a.tobytes() == np.asfortranarray(want).tobytes()


def test_roll_rows_masked_array_with_shifts_from_its_data():
    """The mask rolls after the data: with shifts read from the moved data it would be wrong."""
    rng = np.random.default_rng(2)
    data = rng.integers(-50, 50, (16, 16))
    mask = rng.random((16, 16)) < 0.5
    x = ma.array(data.copy(), mask=mask.copy())
    rotate.roll_rows(x, x.data[0])
    assert x.data.tobytes() == lanes_rolled(data, data[0]).tobytes()
    assert x.mask.tobytes() == lanes_rolled(mask, data[0]).tobytes()


def test_roll_rows_shifts_that_do_not_alias_are_not_copied():
    a = np.zeros((8, 8))
    shifts = np.arange(8)
    assert "shift_copy_bytes" not in rotate.plan_roll_rows(a, shifts).steps[0].details


def test_gpu_shifts_inside_the_rolled_array_are_refused(monkeypatch):
    """On the GPU such shifts are refused before anything moves (the device is stubbed: CAI objects)."""
    from rotate._core import arrays as _arrays
    lane_args = pytest.importorskip("rotate._backends.cuda.lane_args")

    class Fake:
        def __init__(self, shape, typestr, pointer):
            self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr, "data": (pointer, False),
                                             "strides": None, "version": 3}

    monkeypatch.setattr(lane_args, "_check_same_device", lambda *args: None)
    a = _arrays.describe_device(Fake((64, 64), "<i8", 1 << 20))
    inside = Fake((64,), "<i8", (1 << 20) + 8 * 64 * 5)
    with pytest.raises(ValueError, match=r"shifts shares memory with a.*copy"):
        lane_args._device_shifts(inside, (64,), "C", a)
    beside = Fake((64,), "<i8", (1 << 20) + 8 * 64 * 64)  # just past a's last byte
    assert lane_args._device_shifts(beside, (64,), "C", a)[1] == 1


# --- autograd: a tensor saved for backward, rolled in place ------------------------------------

def _torch():
    """torch, or a skip; CI installs it and sets ROTATE_REQUIRE_TORCH=1, which turns the skip into a failure."""
    try:
        import torch
    except ImportError:
        if os.environ.get("ROTATE_REQUIRE_TORCH") == "1":
            pytest.fail("ROTATE_REQUIRE_TORCH=1 but torch is not installed")
        pytest.skip("needs torch (pip install -e '.[dist]')")
    return torch


@pytest.mark.parametrize("call", ["roll", "rotate", "roll_rows", "fftshift"])
def test_torch_saved_tensor_rolled_in_place_makes_backward_raise(call):
    torch = _torch()
    w = torch.ones(4, 6, requires_grad=True)
    x = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    y = (w * x).sum()  # autograd saved x
    version = x._version
    {"roll": lambda: rotate.roll(x, 1), "rotate": lambda: rotate.rotate(x, 5),
     "roll_rows": lambda: rotate.roll_rows(x, [1, 2, 3, 4]), "fftshift": lambda: rotate.fftshift(x)}[call]()
    assert x._version == version + 1  # one in-place change, one bump (as torch's own in-place ops)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


def test_torch_leaf_that_requires_grad_stays_refused():
    torch = _torch()
    x = torch.ones(5, requires_grad=True)
    with pytest.raises(ValueError, match="requires grad"):
        rotate.roll(x, 1)
    assert x._version == 0


# --- plan() hands out copies -------------------------------------------------------------------

def test_plan_details_changed_by_the_caller_do_not_change_later_calls():
    n = 1_000_003
    a = np.random.default_rng(3).integers(0, 256, n, dtype=np.uint8)
    p = rotate.plan(a, n // 3, max_scratch_bytes=300_000)
    params = p.steps[0].params
    assert "_table" in p.steps[0].details
    params.table[:] = 0  # the caller's copy: a shared table made later calls silently wrong
    object.__setattr__(params, "ops", ((0, 0, 0, 0, 0),))  # frozen, but not proof against this
    want = np.roll(a, n // 3)
    rotate.roll(a, n // 3, max_scratch_bytes=300_000)
    assert a.tobytes() == want.tobytes()
    assert "_table" in rotate.plan(a, n // 3, max_scratch_bytes=300_000).steps[0].details


def test_plan_roll_rows_details_changed_by_the_caller_do_not_change_later_calls():
    a = np.random.default_rng(4).random((300, 40))
    shifts = np.arange(300)
    p = rotate.plan_roll_rows(a, shifts)
    for f in dataclasses.fields(p.steps[0].params):
        object.__setattr__(p.steps[0].params, f.name, 0)  # the caller's copy, not the cached plan's
    want = lanes_rolled(a, shifts)
    rotate.roll_rows(a, shifts)
    assert a.tobytes() == want.tobytes()


# --- argument forms ----------------------------------------------------------------------------

def test_torch_cpu_tensor_of_shifts_is_a_host_array():
    torch = _torch()
    a = np.arange(15).reshape(3, 5)
    want = lanes_rolled(a, [1, 2, 3])
    rotate.roll_rows(a, torch.tensor([1, 2, 3]))
    assert np.array_equal(a, want)


def test_zero_d_torch_tensor_as_shift_and_axis():
    torch = _torch()
    x = np.arange(10)
    rotate.roll(x, torch.tensor(2))
    assert np.array_equal(x, np.roll(np.arange(10), 2))
    m = np.arange(12).reshape(3, 4)
    rotate.roll(m, torch.tensor(1), axis=torch.tensor(1))
    assert np.array_equal(m, np.roll(np.arange(12).reshape(3, 4), 1, axis=1))


def test_roll_rows_python_ints_beyond_int64_beside_negative_ones():
    a = np.arange(10).reshape(2, 5)
    rotate.roll_rows(a, [2 ** 63, -1])
    assert np.array_equal(a, np.stack([np.roll(np.arange(5), 2 ** 63 % 5), np.roll(np.arange(5, 10), -1)]))
    with pytest.raises(TypeError, match="integers"):
        rotate.roll_rows(np.zeros((2, 5)), [1.5, 2])


def test_roll_rows_of_no_lanes_takes_an_empty_list():
    a = np.zeros((0, 5))
    assert rotate.roll_rows(a, []) is a
    assert rotate.plan_roll_rows(a, []).algorithm == "noop"


def test_roll_rows_scalar_shift_allocates_nothing_a_lane():
    """One shift for every lane: a view that repeats it, not an int64 a lane (32 MB for 8 MB of 2-byte
    lanes), so the call stays within max_scratch_bytes."""
    a = np.zeros((1 << 20, 2), np.uint8)
    a[:, 0] = 1
    rotate.roll_rows(a, 1)  # compiled and warm
    tracemalloc.start()
    try:
        rotate.roll_rows(a, 1, max_scratch_bytes=1 << 16)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 16, peak
    assert (a[:, 0] == 1).all() and (a[:, 1] == 0).all()  # rolled twice by one: back where it was


def test_cached_launch_configurations_launch_each_call_as_given(monkeypatch):
    # GPU launches reuse a cuda.core LaunchConfig per (grid, block, shared memory): each call still passes
    # its own stream, kernel and arguments, and another shape gets its own configuration.
    cuda_core = pytest.importorskip("cuda.core")
    from rotate._backends.cuda import runtime as R

    launched = []
    monkeypatch.setattr(cuda_core, "launch", lambda *args: launched.append(args))
    R._core_launch.cache_clear()
    monkeypatch.setattr(R, "_stream_refs", {7: "stream 7", 9: "stream 9"})
    try:
        R._launch_core(7, 3, 256, 1024, "kernel a", 1, 2)
        R._launch_core(9, 3, 256, 1024, "kernel b", 5)
        R._launch_core(7, 4, 256, 0, "kernel a", 6)
    finally:
        R._core_launch.cache_clear()
    assert [(s, k, a) for s, _, k, *a in launched] == [("stream 7", "kernel a", [1, 2]), ("stream 9", "kernel b", [5]),
                                                      ("stream 7", "kernel a", [6])]
    first, second, third = (args[1] for args in launched)
    assert first is second and (first.grid, first.block, first.shmem_size) == ((3, 1, 1), (256, 1, 1), 1024)
    assert (third.grid, third.shmem_size) == ((4, 1, 1), 0)
