"""Argument checking shared by every public entry point.

Everything here runs before any byte of the caller's array moves, so a call
that raises leaves the array exactly as it was.
"""

from __future__ import annotations

import operator
from typing import Any, Sequence

import numpy as np

try:  # numpy >= 1.25
    from numpy.exceptions import AxisError
except ImportError:  # pragma: no cover - older numpy
    AxisError = np.AxisError  # type: ignore[attr-defined,misc]


def as_index(value: Any, name: str) -> int:
    """Return ``value`` as a Python int, or raise a TypeError naming ``name``.

    Accepts Python and NumPy integers and bools (and anything implementing
    ``__index__``, 0-d integer arrays included), like numpy.roll; floats,
    strings and None are refused rather than truncated.
    """
    if isinstance(value, np.bool_):  # numpy bools have no __index__; numpy.roll takes them
        return int(value)
    if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind == "b":
        return int(value)
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(
            f"{name} must be an integer, got {value!r} of type "
            f"{type(value).__name__}; pass an int such as {name}=3"
        ) from None


def as_index_tuple(value: Any, name: str) -> tuple[int, ...]:
    """An int or a 1-D sequence of ints (any iterable numpy.roll accepts), as Python ints.

    Lists, tuples, ranges, 1-D integer or bool arrays and other iterables of
    integers are accepted; float, string or None elements are refused (never
    truncated), and nested sequences raise a ValueError.
    """
    if isinstance(value, np.ndarray):
        if value.ndim > 1:
            raise ValueError(
                f"{name} must be an int or a 1-D sequence of ints, got an "
                f"array of shape {value.shape}"
            )
        if value.ndim == 0:
            return (as_index(value, name),)
        # Elements one by one: np.float64(2.0) must be refused, not int()-ed.
        return tuple(as_index(v, name) for v in value)
    if isinstance(value, (str, bytes, dict, set, frozenset)) or not hasattr(value, "__iter__"):
        return (as_index(value, name),)
    if getattr(value, "ndim", None) == 0:  # 0-d arrays of other libraries (torch.tensor(2)): one index
        return (as_index(value, name),)
    out = []
    for v in value:
        if isinstance(v, (list, tuple, range, np.ndarray)) and not (isinstance(v, np.ndarray) and v.ndim == 0):
            raise ValueError(
                f"{name} must be an int or a 1-D sequence of ints, got a nested "
                f"sequence {value!r}"
            )
        out.append(as_index(v, name))
    return tuple(out)


def normalize_axis(axis: int, ndim: int) -> int:
    """numpy's axis normalisation, raising numpy's AxisError when out of range."""
    if not -ndim <= axis < ndim:
        raise AxisError(axis, ndim)
    return axis % ndim


def broadcast_shifts(shift: Any, axis: Any, ndim: int) -> dict[int, int]:
    """numpy.roll's pairing of ``shift`` with ``axis``, summed per axis.

    ``shift`` and ``axis`` are each an int or a 1-D sequence; they broadcast
    together like numpy.roll's, and shifts that name the same axis add up.
    Returns ``{axis: total_shift}`` with every axis in ``range(ndim)``.
    The totals are Python ints, so shifts such as ``10**30`` do not overflow.
    """
    shifts = as_index_tuple(shift, "shift")
    axes = as_index_tuple(axis, "axis")
    if len(shifts) != len(axes) and len(shifts) != 1 and len(axes) != 1:
        raise ValueError(
            f"shift and axis must broadcast together like numpy.roll's: got "
            f"{len(shifts)} shifts for {len(axes)} axes; give one shift per axis "
            f"or a single shift"
        )
    count = max(len(shifts), len(axes))
    if count == 0:
        return {}
    shifts = shifts * count if len(shifts) == 1 else shifts
    axes = axes * count if len(axes) == 1 else axes
    totals: dict[int, int] = {}
    for s, a in zip(shifts, axes):
        a = normalize_axis(a, ndim)
        totals[a] = totals.get(a, 0) + s
    return totals


def check_numpy_array(a: np.ndarray, name: str = "a") -> None:
    """Refuse arrays we cannot rotate in place: read-only, object dtypes, self-overlapping views."""
    check_dtype(a.dtype, name)
    if not a.flags.writeable:
        raise ValueError(
            f"{name} is read-only (flags.writeable is False); rotate works in place, "
            f"so pass a writeable array (for example {name}.copy(), or "
            f"np.require({name}, requirements='W'))"
        )
    check_no_self_overlap(a.shape, a.strides, a.itemsize, name)


def check_dtype(dtype: np.dtype, name: str = "a") -> None:
    """Any fixed-size dtype is plain bytes to a rotation; Python objects are not."""
    if dtype.hasobject:
        raise TypeError(
            f"{name} has dtype {dtype}, which holds Python object references; rotate "
            f"moves raw bytes and supports only fixed-size dtypes (numbers, bool, "
            f"datetime, fixed-width strings, structured dtypes without objects). "
            f"Use numpy.roll for object arrays"
        )
    if dtype.itemsize == 0:
        raise TypeError(
            f"{name} has dtype {dtype} with itemsize 0; give the dtype a size "
            f"(for example 'S8' instead of 'S')"
        )


def word_view_params(itemsize: int) -> int:
    """The widest unsigned word (1, 2, 4 or 8 bytes) that divides ``itemsize``.

    A rotation by whole elements is a rotation by whole words of this width,
    so every dtype maps onto one of four kernels.
    """
    for width in (8, 4, 2, 1):
        if itemsize % width == 0:
            return width
    raise AssertionError("unreachable: 1 divides every itemsize")


def prod(values: Sequence[int]) -> int:
    out = 1
    for v in values:
        out *= int(v)
    return out


def may_self_overlap(shape: Sequence[int], strides: Sequence[int], itemsize: int) -> bool:
    """Whether two elements of a strided layout may share a byte.

    Exact for layouts whose axes nest (each |stride| spans every smaller
    axis: every C/F-contiguous array and every slice of one) and for small
    arrays (element offsets enumerated); other large layouts count as
    overlapping, so they are refused rather than risked.
    """
    if any(int(n) == 0 for n in shape):
        return False
    dims = sorted((abs(int(s)), int(n)) for n, s in zip(shape, strides) if int(n) > 1)
    extent = itemsize
    nested = True
    for stride, n in dims:
        if stride < extent:
            nested = False
            break
        extent += stride * (n - 1)
    if nested:
        return False
    if prod(shape) > 1 << 20:
        return True
    offsets = np.zeros(1, dtype=np.int64)
    for n, s in zip(shape, strides):
        offsets = (offsets[:, None] + np.arange(int(n), dtype=np.int64) * int(s)).reshape(-1)
    offsets.sort()
    return bool(np.any(np.diff(offsets) < itemsize))


def check_no_self_overlap(shape: Sequence[int], strides: Sequence[int], itemsize: int,
                          name: str = "a") -> None:
    """Refuse views whose elements share memory (0-strides, overlapping windows).

    Rolling such a view in place would move each shared byte once per alias
    and corrupt the base array.
    """
    if may_self_overlap(shape, strides, itemsize):
        raise ValueError(
            f"{name} has elements that overlap in memory (shape {tuple(shape)}, strides "
            f"{tuple(strides)}, itemsize {itemsize}: a 0-stride, as_strided or "
            f"sliding_window_view(..., writeable=True) view); rolling it in place would "
            f"move the shared bytes once per alias. Roll the base array, or roll a copy: "
            f"b = {name}.copy(); rotate.roll(b, ...)"
        )


def check_stream_for_host(device: bool, stream: Any) -> None:
    """``stream=`` only means something on the GPU; silently ignoring it would hide a bug."""
    if stream is not None and not device:
        raise TypeError(
            f"stream= applies to GPU arrays; a is a numpy array (a host array, which the CPU "
            f"backend rolls synchronously on the calling thread), got stream={stream!r} "
            f"({type(stream).__name__}). Drop stream=, or pass a device array (CuPy, PyTorch "
            f"CUDA, numba device array) to roll on that stream"
        )
