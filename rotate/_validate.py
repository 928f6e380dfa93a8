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

    Accepts Python and NumPy integers (and anything implementing
    ``__index__``), like numpy.roll; floats, strings and None are refused
    rather than truncated.
    """
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(
            f"{name} must be an integer, got {value!r} of type "
            f"{type(value).__name__}; pass an int such as {name}=3"
        ) from None


def as_index_tuple(value: Any, name: str) -> tuple[int, ...]:
    """An int or a 1-D sequence of ints, as a tuple of Python ints."""
    if isinstance(value, (list, tuple)):
        return tuple(as_index(v, name) for v in value)
    if isinstance(value, np.ndarray):
        if value.ndim > 1:
            raise ValueError(
                f"{name} must be an int or a 1-D sequence of ints, got an "
                f"array of shape {value.shape}"
            )
        return tuple(as_index(v, name) for v in value.reshape(-1).tolist())
    return (as_index(value, name),)


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
    axes = tuple(
        as_index(a, "axis") for a in (axis if isinstance(axis, (list, tuple)) else (axis,))
    )
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
    """Refuse arrays we cannot rotate in place: read-only or object dtypes."""
    check_dtype(a.dtype, name)
    if not a.flags.writeable:
        raise ValueError(
            f"{name} is read-only (flags.writeable is False); rotate works in place, "
            f"so pass a writeable array (for example {name}.copy(), or "
            f"np.require({name}, requirements='W'))"
        )


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
