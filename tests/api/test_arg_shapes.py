"""Issue #35: argument and dtype shapes the rest of the suite never passes.

* lists (and tuples) of 0-d arrays as ``shift``, ``axis`` and ``axes``, which
  numpy.roll takes (the shared table's ``RARE_ARGUMENT_CASES``, also run
  under the CUDA simulator);
* reversed views of more than 2**20 elements: past the overlap check's
  enumeration limit, only its nesting rule (on |stride|) tells them apart
  from overlapping layouts;
* a padded struct inside a subarray field (1-D and 2-D subarrays), checked
  against numpy field by field (the padding must keep its bytes), never
  against ``rotate._core.arrays.field_byte_ranges``, the code under test;
* byte-swapped shift arrays for ``roll_rows`` (``>i8``, ``>u4``, ``>i2``,
  ``>u8`` past int64), on the CPU and, device stubbed, as the host shifts a
  GPU launch gets.

Every result is compared byte for byte with numpy.
"""

from __future__ import annotations

import numpy as np
import pytest

import rotate
from rotate._core import validate as _validate
from cases.roll import RARE_ARGUMENT_CASES, STRUCT16, CpuRunner, check_roll_case
from test_cache_keys import FakeDeviceArray, caches, device  # noqa: F401 (fixtures)


def _random(shape, dtype, seed=0):
    dtype = np.dtype(dtype)
    raw = np.random.default_rng(seed).integers(1, 256, int(np.prod(shape)) * dtype.itemsize, dtype=np.uint8)
    return raw.view(dtype).reshape(shape)


def _same_bytes(got, want):
    got, want = np.ascontiguousarray(got), np.ascontiguousarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    g, w = got.view(np.uint8).reshape(-1), want.view(np.uint8).reshape(-1)
    wrong = np.flatnonzero(g != w)
    assert wrong.size == 0, f"{wrong.size} bytes differ, first at {wrong[:8]}"


# --- lists of 0-d arrays --------------------------------------------------------------------------

@pytest.mark.parametrize("case", RARE_ARGUMENT_CASES, ids=repr)
def test_rare_argument_cases_cpu(case):
    check_roll_case(CpuRunner(), case)


ZERO_D = [
    ([np.array(1), np.array(-2)], [np.array(0), np.array(1)]),
    ((np.array(1, np.uint8), np.array(2, np.int16)), (np.array(1), np.array(0))),
    ([np.array(5)], None),
    ([np.array(2), np.array(3)], None),  # summed over the flattened array
    ([np.array(7)], [np.array(-1)]),
    ([np.array(2), 3], [0, np.array(1, np.int8)]),  # mixed with Python ints
    ([np.array(True), np.array(2)], np.array(1)),
    (np.array(3), [np.array(0), np.array(1)]),
]


@pytest.mark.parametrize("shift,axis", ZERO_D, ids=repr)
def test_lists_of_0d_arrays_as_shift_and_axis(shift, axis):
    a = _random((5, 7), "int32", seed=3)
    want = np.roll(a, shift, axis)
    assert rotate.plan(a, shift, axis).shape == a.shape
    assert rotate.roll(a, shift, axis) is a
    _same_bytes(a, want)


def test_lists_of_0d_arrays_as_fftshift_axes_and_roll_rows_axis():
    a = _random((6, 5), "float32", seed=4)
    want = np.fft.fftshift(a, axes=[np.array(0), np.array(1)])
    rotate.fftshift(a, axes=[np.array(0), np.array(1)])
    _same_bytes(a, want)
    want = np.fft.ifftshift(a, axes=(np.array(-1),))
    rotate.ifftshift(a, axes=(np.array(-1),))
    _same_bytes(a, want)
    shifts = [np.array(1), np.array(-2), np.array(3), np.array(0), np.array(9)]
    want = np.stack([np.roll(a[:, j], int(shifts[j])) for j in range(5)], axis=1)
    rotate.roll_rows(a, shifts, axis=np.array(0))
    _same_bytes(a, want)
    b = _random((9,), "uint8", seed=5)
    want = np.roll(b, -4)
    assert rotate.rotate(b, np.array(4)) == 5
    _same_bytes(b, want)


# --- reversed views beyond the overlap check's enumeration limit ---------------------------------------

BIG = (1 << 20) + 3


@pytest.mark.parametrize("dtype", ["uint8", "float32"])
@pytest.mark.parametrize("shift", [1, -5, BIG // 3, 12345])
def test_reversed_views_past_the_enumeration_limit(dtype, shift):
    base = _random((BIG,), dtype, seed=shift % 7)
    view = base[::-1]
    assert not _validate.may_self_overlap(view.shape, view.strides, view.itemsize)
    want = np.roll(view, shift)
    rotate.roll(view, shift)
    _same_bytes(view, want)


@pytest.mark.parametrize("axis", [0, 1, None])
def test_reversed_2d_views_past_the_enumeration_limit(axis):
    base = _random((1025, 1031), "uint8", seed=2)
    for view in (base[::-1, ::-1], base[::-1], base[:, ::-1], base.T[::-1]):
        assert view.size > 1 << 20
        assert not _validate.may_self_overlap(view.shape, view.strides, view.itemsize)
        if axis is None and rotate._core.arrays.c_order_line(view.shape, view.strides) is None:
            continue  # numpy's C order is not one line of memory there: refused (tested elsewhere)
        want = np.roll(view, 777, axis)
        rotate.roll(view, 777, axis)
        _same_bytes(view, want)


def test_reversed_views_past_the_enumeration_limit_roll_rows_and_fftshift():
    base = _random((1025, 1031), "uint8", seed=6)
    view = base[::-1, ::-1]
    shifts = np.arange(1025) * 7 - 3000
    want = np.stack([np.roll(view[i], int(shifts[i])) for i in range(1025)])
    rotate.roll_rows(view, shifts)
    _same_bytes(view, want)
    want = np.fft.fftshift(view)
    rotate.fftshift(view)
    _same_bytes(view, want)


def test_interleaved_layouts_past_the_limit_are_still_refused():
    """The nesting rule's other side: past 2**20 elements a layout whose axes do not nest is refused."""
    base = np.zeros(1 << 22, np.uint8)
    view = np.lib.stride_tricks.as_strided(base, shape=(1 << 11, 1 << 10), strides=(-3, 1 << 11))[:, :]
    assert _validate.may_self_overlap(view.shape, view.strides, 1)


# --- a padded struct inside a subarray field --------------------------------------------------------------

NESTED = {
    "2x2 of a padded struct": np.dtype([("t", STRUCT16, (2, 2)), ("c", "u1")]),
    "3 of a padded struct": np.dtype([("t", STRUCT16, (3,))]),
    "aligned 2x3 of a packed struct": np.dtype([("x", "u1"), ("s", [("p", "<u2"), ("q", "u1")], (2, 3))], align=True),
    "3x2 of 2 of a padded struct": np.dtype([("z", "<u2"), ("t", (STRUCT16, (2,)), (3,))]),
}


def _leaves(dtype, path=()):
    """Every leaf field's path of names (numpy's own field access: independent of rotate's byte ranges)."""
    base = dtype.subdtype[0] if dtype.subdtype else dtype
    if base.names is None:
        yield path
        return
    for name in base.names:
        yield from _leaves(base.fields[name][0], path + (name,))


def _field(a, path):
    for name in path:
        a = a[name]
    return a


def raw_copy(a):
    """A copy of ``a``'s bytes, padding included (``ndarray.copy`` of a padded struct copies only the fields)."""
    return np.frombuffer(np.ascontiguousarray(a).tobytes(), np.uint8).copy().view(a.dtype).reshape(a.shape)


def _expected_fields_rolled(a, shift, axis):
    """numpy.roll of every leaf field; every byte that belongs to no field (padding) keeps its value."""
    out = raw_copy(a)
    for path in _leaves(a.dtype):
        src = _field(a, path)
        # a subarray field's extra axes trail the array's: roll only the array's own axes
        axes = tuple(range(a.ndim)) if axis is None else axis
        if axis is None:
            moved = np.roll(src.reshape((a.size,) + src.shape[a.ndim:]), shift, 0).reshape(src.shape)
        else:
            moved = np.roll(src, shift, axes)
        _field(out, path)[...] = moved
    return out


@pytest.mark.parametrize("name", list(NESTED))
@pytest.mark.parametrize("shape,shift,axis", [((13,), 5, None), ((4, 7), (1, -3), (0, 1)), ((4, 7), 2, None),
                                              ((6, 5), 4, 0)])
def test_padded_struct_inside_a_subarray_field(name, shape, shift, axis):
    dtype = NESTED[name]
    a = _random(shape, dtype, seed=len(name))
    want = _expected_fields_rolled(a, shift, axis)
    rotate.roll(a, shift, axis)
    _same_bytes(a, want)


@pytest.mark.parametrize("name", list(NESTED))
def test_padded_struct_inside_a_subarray_field_roll_rows_and_fftshift(name):
    dtype = NESTED[name]
    a = _random((5, 6), dtype, seed=11)
    shifts = np.array([1, -2, 7, 0, 3])
    want = raw_copy(a)
    for i, s in enumerate(shifts):
        want[i] = _expected_fields_rolled(a[i], int(s), 0)
    rotate.roll_rows(a, shifts)
    _same_bytes(a, want)
    want = _expected_fields_rolled(a, (2, 3), (0, 1))
    rotate.fftshift(a)
    _same_bytes(a, want)


# --- byte-swapped shift arrays for roll_rows ---------------------------------------------------------------

def _per_lane(a, shifts, axis=-1):
    moved = np.moveaxis(a, axis, -1)
    lanes = moved.reshape(-1, moved.shape[-1])
    flat = np.broadcast_to(np.asarray(shifts, dtype=object) if np.asarray(shifts).dtype.kind == "u"
                           else shifts, moved.shape[:-1]).reshape(-1)
    out = np.array([np.roll(lane, int(s) % lane.shape[0]) for lane, s in zip(lanes, flat)]).reshape(moved.shape)
    return np.moveaxis(out, -1, axis)


SWAPPED = [
    np.array([3, -1, 258, -70000, 5], ">i8"),
    # uint32 and int16 shifts compile the CPU lane kernels once more each (numba specialises them on the
    # shifts' dtype): the slow suite's (CI runs it); the README's command keeps the int64 and int32 ones.
    pytest.param(np.array([3, 1, 258, 70000, 2**31 + 5], ">u4"), marks=pytest.mark.slow, id=">u4"),
    pytest.param(np.array([3, -1, 258, -300, 7], ">i2"), marks=pytest.mark.slow, id=">i2"),
    np.array([2**64 - 3, 1, 2**63 + 11, 0, 2**64 - 1], ">u8"),
    np.array([2**64 - 3, 1, 2**63 + 11, 0, 2**64 - 1], "<u8"),
    # int32 shifts (a reversed view) compile the lane kernels once more for V3 items: the slow suite's.
    pytest.param(np.array([3, -1, 258, -70000, 5], ">i4")[::-1], marks=pytest.mark.slow, id=">i4"),
]


@pytest.mark.parametrize("shifts", SWAPPED, ids=lambda s: s.dtype.str)
@pytest.mark.parametrize("dtype", [pytest.param("uint8", marks=pytest.mark.slow),
                                   pytest.param("float64", marks=pytest.mark.slow), "V3"])  # V3 fast, the rest slow
def test_roll_rows_byte_swapped_shifts_cpu(shifts, dtype):
    a = _random((5, 13), dtype, seed=7)
    want = _per_lane(a, shifts)
    before = shifts.copy()
    rotate.roll_rows(a, shifts)
    _same_bytes(a, want)
    _same_bytes(shifts, before)  # the caller's shifts are read, never changed


@pytest.mark.parametrize("shifts", SWAPPED, ids=lambda s: s.dtype.str)
def test_roll_rows_byte_swapped_shifts_broadcast_and_other_axes(shifts):
    a = _random((5, 3, 11), "int16", seed=8)
    col = shifts.reshape(5, 1)  # broadcast over the middle axis
    want = _per_lane(a, col)
    rotate.roll_rows(a, col)
    _same_bytes(a, want)
    b = _random((11, 5), "int32", seed=9)  # lanes along axis 0
    want = _per_lane(b, shifts, axis=0)
    rotate.roll_rows(b, shifts, axis=0)
    _same_bytes(b, want)


@pytest.mark.parametrize("shifts", SWAPPED, ids=lambda s: s.dtype.str)
def test_roll_rows_byte_swapped_host_shifts_reach_a_gpu_launch_as_their_values(device, shifts):
    """Device stubbed: the host shifts a launch gets are the shifts' values (int64, modulo the lane length
    where they exceed int64), whatever their byte order."""
    n = 64
    rotate.roll_rows(FakeDeviceArray((5, n)), shifts)
    (call,) = device.launched
    host = call[4]
    assert host[0] == "ndarray" and host[1] == np.dtype(np.int64).str
    got = np.frombuffer(host[3], np.int64)
    want = np.array([int(s) % n for s in shifts.tolist()])
    assert np.array_equal(got % n, want), (got, want)
