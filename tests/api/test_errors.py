"""Bad input: the right exception, a message that names the argument and the fix,
and the caller's array left exactly as it was (every check runs before a byte moves).
"""

from __future__ import annotations

import numpy as np
import pytest

import rotate
from rotate._core import arrays as _arrays

try:
    from numpy.exceptions import AxisError
except ImportError:  # pragma: no cover
    AxisError = np.AxisError


def fresh(shape=(4, 5), dtype=np.int64):
    a = np.arange(1, int(np.prod(shape)) + 1, dtype=dtype).reshape(shape)
    return a, a.copy()


def assert_unchanged(a, before):
    assert a.shape == before.shape and a.dtype == before.dtype
    assert a.tobytes() == before.tobytes(), "a failed call modified the array"


def raises(exc, fn, *args, **kwargs):
    with pytest.raises(exc) as err:
        fn(*args, **kwargs)
    return str(err.value)


# --- the array ---------------------------------------------------------------------

def test_read_only_array():
    a, before = fresh()
    a.flags.writeable = False
    for call in (lambda: rotate.roll(a, 1), lambda: rotate.roll(a, 1, axis=0),
                 lambda: rotate.rotate(a, 3), lambda: rotate.plan(a, 1), lambda: rotate.plan(a, middle=2)):
        msg = raises(ValueError, call)
        assert "read-only" in msg and "writeable" in msg  # what is wrong
        assert "copy()" in msg  # the fix
        assert_unchanged(a, before)


def test_read_only_view_of_writeable_base():
    base, before = fresh((20,))
    v = base[::2]
    v.flags.writeable = False
    assert "read-only" in raises(ValueError, rotate.roll, v, 1)
    assert_unchanged(base, before)


def test_broadcast_array_is_read_only():
    base, before = fresh((5,))
    b = np.broadcast_to(base, (3, 5))
    assert "read-only" in raises(ValueError, rotate.roll, b, 1, axis=1)
    assert_unchanged(base, before)


def test_object_dtype():
    a = np.array([1, "x", None, 2.5], dtype=object)
    before = list(a)
    for call in (lambda: rotate.roll(a, 1), lambda: rotate.rotate(a, 1), lambda: rotate.plan(a, 1)):
        msg = raises(TypeError, call)
        assert "object" in msg and "numpy.roll" in msg  # names the dtype and the way out
        assert list(a) == before and all(x is y for x, y in zip(a, before))


def test_structured_dtype_with_object_field():
    a = np.zeros(3, dtype=[("i", "i4"), ("o", "O")])
    a["i"] = [1, 2, 3]
    assert "object" in raises(TypeError, rotate.roll, a, 1)
    assert a["i"].tolist() == [1, 2, 3]


def test_zero_itemsize_dtype():
    a = np.zeros(3, dtype=np.dtype([]))
    msg = raises(TypeError, rotate.roll, a, 1)
    assert "itemsize 0" in msg and "S8" in msg


@pytest.mark.parametrize("obj", [[1, 2, 3], (1, 2, 3), range(3), "abc", 5, None],
                         ids=["list", "tuple", "range", "str", "int", "None"])
def test_not_an_array(obj):
    for call in (lambda: rotate.roll(obj, 1), lambda: rotate.rotate(obj, 1), lambda: rotate.plan(obj, 1)):
        msg = raises(TypeError, call)
        assert "numpy array" in msg and "numpy.asarray" in msg
        assert type(obj).__name__ in msg
    if isinstance(obj, list):
        assert obj == [1, 2, 3]  # no conversion in place either


def test_cpu_dlpack_object_is_not_a_device_array():
    class CpuDLPack:
        def __init__(self, a):
            self.a = a

        def __dlpack__(self, **kw):
            return self.a.__dlpack__(**kw)

        def __dlpack_device__(self):
            return (1, 0)

    a, before = fresh((6,))
    assert "CpuDLPack" in raises(TypeError, rotate.roll, CpuDLPack(a), 1)
    assert_unchanged(a, before)


# --- shift -------------------------------------------------------------------------

@pytest.mark.parametrize("shift", [1.5, "3", None, 2.0, np.float64(2.0), 1 + 0j, [1, 2.5], (None,)],
                         ids=["1.5", "str", "None", "2.0", "np.float64", "complex", "list-with-float", "tuple-None"])
def test_non_integer_shift(shift):
    a, before = fresh()
    for axis in (None, 0, -1, (0, 1)):
        msg = raises(TypeError, rotate.roll, a, shift, axis=axis)
        assert "shift must be an integer" in msg and "shift=3" in msg  # the argument and the fix
        assert_unchanged(a, before)
        if shift is not None:  # plan(a, None) means "no shift given" (tested below)
            assert "shift must be an integer" in raises(TypeError, rotate.plan, a, shift, axis=axis)
            assert_unchanged(a, before)


def test_two_dimensional_shift_array():
    a, before = fresh()
    msg = raises(ValueError, rotate.roll, a, np.ones((2, 2), dtype=int), axis=0)
    assert "shift" in msg and "1-D" in msg
    assert_unchanged(a, before)


def test_shift_axis_length_mismatch():
    a, before = fresh((3, 4, 5))
    for shift, axis in [((1, 2, 3), (0, 1)), ((1, 2), (0, 1, 2)), ([1, 2], [0, 1, 2, 0])]:
        for call in (lambda: rotate.roll(a, shift, axis=axis), lambda: rotate.plan(a, shift, axis=axis)):
            msg = raises(ValueError, call)
            assert "shift" in msg and "axis" in msg and "broadcast" in msg
            assert "one shift per axis" in msg  # the fix
            assert_unchanged(a, before)


# --- axis --------------------------------------------------------------------------

@pytest.mark.parametrize("axis", [2, -3, 100, (0, 2), [1, -3], (0, 1, 5)])
def test_axis_out_of_range(axis):
    a, before = fresh()
    for call in (lambda: rotate.roll(a, 1, axis=axis), lambda: rotate.plan(a, 1, axis=axis)):
        with pytest.raises(AxisError) as err:
            call()
        # numpy's AxisError is both: code catching either keeps working, as with numpy.roll
        assert isinstance(err.value, ValueError) and isinstance(err.value, IndexError)
        assert err.type is AxisError and rotate.AxisError is AxisError
        msg = str(err.value)
        assert "axis" in msg and "out of bounds" in msg and "dimension 2" in msg
        assert_unchanged(a, before)
    with pytest.raises(AxisError):  # the oracle agrees this is an axis error
        np.roll(a, 1, axis=axis)


def test_axis_on_zero_dim_array():
    z = np.array(7.5)
    with pytest.raises(AxisError, match="dimension 0"):
        rotate.roll(z, 1, axis=0)
    assert z == 7.5


@pytest.mark.parametrize("axis", [1.0, "0", (0, 1.0)])
def test_non_integer_axis(axis):
    a, before = fresh()
    msg = raises(TypeError, rotate.roll, a, 1, axis=axis)
    assert "axis must be an integer" in msg
    assert_unchanged(a, before)


def test_axis_error_before_any_axis_moves():
    """A valid first axis must not be rolled when a later one is bad."""
    a, before = fresh()
    raises(AxisError, rotate.roll, a, (1, 1), axis=(0, 7))
    raises(TypeError, rotate.roll, a, (1, 1.5), axis=(0, 1))
    assert_unchanged(a, before)


# --- middle (rotate) ----------------------------------------------------------------

@pytest.mark.parametrize("middle", [1.5, "2", None, 2.0, np.float32(1)], ids=["1.5", "str", "None", "2.0", "np.float32"])
def test_non_integer_middle(middle):
    a, before = fresh()
    msg = raises(TypeError, rotate.rotate, a, middle)
    assert "middle must be an integer" in msg and "middle=3" in msg
    assert_unchanged(a, before)
    if middle is not None:
        assert "middle must be an integer" in raises(TypeError, rotate.plan, a, middle=middle)


@pytest.mark.parametrize("shape", [(4, 5), (7,), (0,), ()])
def test_middle_out_of_range(shape):
    a, before = fresh(shape)
    for middle in (-1, a.size + 1, np.int64(-5), 10**30):
        for call in (lambda: rotate.rotate(a, middle), lambda: rotate.plan(a, middle=middle)):
            msg = raises(ValueError, call)
            assert "middle" in msg and f"0 <= middle <= a.size ({a.size})" in msg
            assert "rotate.roll" in msg  # the fix for an arbitrary cyclic shift
            assert_unchanged(a, before)


# --- plan's own arguments ------------------------------------------------------------

def test_plan_needs_exactly_one_of_shift_and_middle():
    a, before = fresh()
    for kwargs in ({}, {"shift": 1, "middle": 1}, {"axis": 0}, {"shift": 0, "middle": 0}):
        msg = raises(TypeError, rotate.plan, a, **kwargs)
        assert "shift" in msg and "middle" in msg and "either" in msg
    assert_unchanged(a, before)


@pytest.mark.parametrize("value", [-1, -(2**70), np.int64(-8)])
def test_negative_max_scratch_bytes(value):
    a, before = fresh()
    for call in (lambda: rotate.roll(a, 1, max_scratch_bytes=value),
                 lambda: rotate.rotate(a, 1, max_scratch_bytes=value),
                 lambda: rotate.plan(a, 1, max_scratch_bytes=value)):
        msg = raises(ValueError, call)
        assert "max_scratch_bytes" in msg and ">= 0" in msg
        assert_unchanged(a, before)


def test_non_integer_max_scratch_bytes():
    a, before = fresh()
    msg = raises(TypeError, rotate.roll, a, 1, max_scratch_bytes=1.5)
    assert "max_scratch_bytes must be an integer" in msg
    assert_unchanged(a, before)


def test_non_c_contiguous_axis_none():
    a = np.asfortranarray(np.arange(1, 13, dtype=np.float32).reshape(3, 4))
    before = a.copy(order="K")
    for call in (lambda: rotate.roll(a, 1), lambda: rotate.rotate(a, 1), lambda: rotate.plan(a, 1)):
        msg = raises(ValueError, call)
        assert "C-contiguous" in msg and "axes" in msg and "ascontiguousarray" in msg
        assert a.tobytes(order="A") == before.tobytes(order="A")


# --- device-array recognition (no GPU needed) ----------------------------------------

class FakeCAI:
    """Has only ``__cuda_array_interface__``: nothing is ever dereferenced in these tests."""

    def __init__(self, readonly=False, typestr="<i8", mask=None, shape=(10,)):
        self._cai = {"shape": shape, "typestr": typestr, "data": (0, readonly), "version": 3, "strides": None}
        if mask is not None:
            self._cai["mask"] = mask

    @property
    def __cuda_array_interface__(self):
        return self._cai


class FakeDLPack:
    def __init__(self, device):
        self.device = device

    def __dlpack__(self, **kw):  # pragma: no cover - never called
        raise AssertionError("must not be exported")

    def __dlpack_device__(self):
        return self.device


class BrokenDLPack:
    def __dlpack_device__(self):
        raise RuntimeError("no device")


def test_is_device_array_recognises_cuda_objects():
    assert _arrays.is_device_array(FakeCAI())
    assert _arrays.is_device_array(FakeDLPack((2, 0)))  # kDLCUDA
    assert _arrays.is_device_array(FakeDLPack((2, 3)))
    assert _arrays.is_device_array(FakeDLPack((13, 0)))  # kDLCUDAManaged


def test_is_device_array_rejects_host_objects():
    assert not _arrays.is_device_array(np.arange(3))
    assert np.arange(3).__dlpack_device__()[0] == 1  # numpy speaks DLPack, on the CPU
    assert not _arrays.is_device_array(FakeDLPack((1, 0)))  # kDLCPU
    assert not _arrays.is_device_array(FakeDLPack((3, 0)))  # kDLCUDAHost: pinned host memory
    assert not _arrays.is_device_array(BrokenDLPack())
    assert not _arrays.is_device_array([1, 2, 3])
    assert not _arrays.is_device_array(object())


def test_device_array_checks_run_before_any_cuda_call():
    """Read-only, object-typed and masked CUDA arrays are refused from the interface alone."""
    msg = raises(ValueError, rotate.roll, FakeCAI(readonly=True), 1)
    assert "read-only" in msg and "writeable" in msg
    assert "read-only" in raises(ValueError, rotate.rotate, FakeCAI(readonly=True), 1)
    assert "object" in raises(TypeError, rotate.roll, FakeCAI(typestr="|O8"), 1)
    assert "mask" in raises(ValueError, rotate.roll, FakeCAI(mask=object()), 1)


def _gpu_available():
    try:
        from numba import cuda
        from numba.core import config
        return not config.ENABLE_CUDASIM and cuda.is_available()
    except Exception:
        return False


def test_cuda_interface_only_object_on_gpu():
    """An object with nothing but ``__cuda_array_interface__`` rolls on the GPU; bad args still refused."""
    if not _gpu_available():
        pytest.skip("no CUDA GPU here: a writeable __cuda_array_interface__ object can only be rolled on a device")
    from numba import cuda

    host = np.arange(1, 101, dtype=np.int32)
    dev = cuda.to_device(host)

    class Wrapper:
        __cuda_array_interface__ = property(lambda self: dev.__cuda_array_interface__)

    w = Wrapper()
    raises(TypeError, rotate.roll, w, 1.5)
    raises(AxisError, rotate.roll, w, 1, axis=1)
    assert np.array_equal(dev.copy_to_host(), host)
    assert rotate.roll(w, 7) is w
    cuda.synchronize()
    assert np.array_equal(dev.copy_to_host(), np.roll(host, 7))
