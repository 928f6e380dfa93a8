"""Per-lane shifts as the kernels take them: ``roll_rows``' ``shifts`` argument checked, reduced where it
must be, and broadcast to one integer per lane (shared by every backend)."""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from . import arrays as _arrays
from .validate import as_index


def broadcasts_to(shape: tuple, lane_shape: tuple) -> bool:
    try:
        return np.broadcast_shapes(tuple(shape), lane_shape) == lane_shape
    except ValueError:
        return False


def lane_shifts(shifts: Any, lane_shape: tuple, n: int, axis: int, shape: tuple,
                 narrow: bool = False) -> np.ndarray:
    """``shifts`` broadcast to one integer per lane (C order), as the kernels take them: int64, or with
    ``narrow`` (the CPU kernels) any native integer dtype but uint64, used as given."""
    if _arrays.is_device_array(shifts):
        raise TypeError(
            f"shifts is a GPU array ({type(shifts).__name__}) but a is a host array; pass shifts "
            f"on the host (a numpy array or Python ints, e.g. shifts.get() or shifts.cpu().numpy())"
        )
    if isinstance(shifts, (str, bytes)) or shifts is None:
        raise TypeError(f"shifts must be an integer or an array of integers, got {shifts!r}; "
                        f"pass e.g. shifts=3 or shifts=np.array([...], dtype=np.int64)")
    arr = np.asarray(shifts)
    if arr.dtype.kind == "f" and not isinstance(shifts, np.ndarray) and _all_ints(shifts):
        # Python ints numpy made floats: [] (no lanes), or ints beyond int64 beside negative ones
        arr = np.array(shifts, dtype=object) if arr.size else np.zeros(arr.shape, np.int64)
    if arr.dtype.kind == "O":  # Python ints too large for int64, or mixed objects: each checked and reduced
        flat = [as_index(v, "shifts") % n if n else 0 for v in arr.reshape(-1).tolist()]
        arr = np.array(flat, dtype=np.int64).reshape(arr.shape)
    elif arr.dtype.kind not in "iu":
        raise TypeError(
            f"shifts must be integers, got an array of dtype {arr.dtype}; numpy.roll shifts by whole "
            f"elements, so round and convert first (e.g. np.rint(shifts).astype(np.int64))"
        )
    if not broadcasts_to(arr.shape, lane_shape):
        raise ValueError(
            f"shifts has shape {arr.shape}, which does not broadcast to a.shape {shape} without axis "
            f"{axis}, i.e. {lane_shape}; give one shift per lane (shape {lane_shape}) or a shape that "
            f"broadcasts to it"
        )
    if n == 0:
        arr = np.zeros(arr.shape, np.int64)
    elif arr.dtype.kind == "u" and arr.dtype.itemsize == 8:  # may exceed int64: reduce here
        arr = np.mod(arr, np.uint64(n)).astype(np.int64)
    # The kernels reduce shifts modulo n themselves: an int64 array of the
    # lanes' shape in C order is used as it is, without a copy, and so is an
    # array of any other integer dtype on the CPU (numba compiles the kernels
    # once per dtype; uint64 was reduced to int64 above): an int64 per lane
    # would outweigh lanes of a few bytes (docs/results/cpu-rows-shift-dtypes.json).
    kernel_dtype = arr.dtype.newbyteorder("=") if narrow else np.dtype(np.int64)
    lanes = int(np.prod(lane_shape, dtype=np.int64))
    if arr.size == 1 and lanes > 1:  # one shift for every lane: a view that repeats it, not a copy a lane
        one = np.array(arr.reshape(-1), dtype=kernel_dtype)
        return np.lib.stride_tricks.as_strided(one, (lanes,), (0,))
    if arr.shape != lane_shape:
        arr = np.broadcast_to(arr, lane_shape)
    return np.ascontiguousarray(arr, dtype=kernel_dtype).reshape(-1)


def _all_ints(values: Any) -> bool:
    """Whether a (nested) sequence holds integers only (Python, numpy, or ``__index__``; bools refused)."""
    if isinstance(values, (list, tuple)):
        return all(_all_ints(v) for v in values)
    return isinstance(values, numbers.Integral) and not isinstance(values, (bool, np.bool_))
