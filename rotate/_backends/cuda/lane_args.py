"""``roll_rows``' arguments on the GPU: lanes back to back in memory, host shifts as uploaded, device shifts
as the lane kernels read them (the CUDA backend's ``plan_lanes``)."""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ..._core import arrays as _arrays
from ..._core.shifts import broadcasts_to, lane_shifts
from ..._core.validate import prod


def plan_lanes(info, shifts, axis: int, max_scratch_bytes: Optional[int]):
    """Plan a ``roll_rows`` call on the GPU: ``(Step or None, (host shifts, device shifts, stride))``.

    Lanes must be back to back in memory; host shifts are one int64 a lane (or one for every lane,
    ``stride`` 0), device shifts are checked as :func:`_device_shifts` says.
    """
    from . import registry
    from .schedules import column_panels, lane_panels

    n = info.shape[axis]
    lane_shape = info.shape[:axis] + info.shape[axis + 1:]
    columns = None  # (outer, inner): lanes along a strided axis, as columns of C-ordered blocks of rows
    if info.ndim <= 1 or (info.c_contiguous and axis == info.ndim - 1):
        order = "C"
    elif info.f_contiguous and axis == 0:
        order = "F"
    elif info.c_contiguous:
        order, columns = "C", (prod(info.shape[:axis]), prod(info.shape[axis + 1:]))
    elif info.f_contiguous:  # its transpose is C-ordered: the axes before `axis` are the inner ones
        order, columns = "F", (prod(info.shape[axis + 1:]), prod(info.shape[:axis]))
    else:
        raise ValueError(
            f"roll_rows on the GPU needs a C- or F-contiguous array; got one of shape {info.shape} with "
            f"strides {info.strides}. Roll a contiguous copy and copy it back, e.g. x = cupy.ascontiguousarray(a); "
            f"rotate.roll_rows(x, shifts, axis={axis}); a[...] = x"
        )
    rows = info.size // n if n else 0
    if _arrays.is_device_array(shifts):
        device_shifts, stride = _device_shifts(shifts, lane_shape, order, info)
        host_shifts = None
    else:
        host_shifts = lane_shifts(shifts, lane_shape, n, axis, info.shape)
        stride = 0 if host_shifts.strides[0] == 0 else 1  # one shift for every lane: uploaded once
        if stride and order == "F" and len(lane_shape) > 1:  # lanes lie in memory in F order of their indices
            host_shifts = np.ascontiguousarray(host_shifts.reshape(lane_shape).ravel(order="F"))
        device_shifts = None
    if n <= 1 or info.size == 0:
        return None, None
    if columns is not None:
        outer, inner = columns
        return column_panels.plan_column_panels(axis, outer, n, inner, info.itemsize, info.pointer,
                                          max_scratch_bytes), (host_shifts, device_shifts, stride)
    step = lane_panels.plan_lane_panels(axis, rows, n, info.itemsize, info.pointer)
    if step is None:
        step = registry.plan_long_lanes(axis, rows, n, info.itemsize, info.pointer, max_scratch_bytes, host_shifts)
    return step, (host_shifts, device_shifts, stride)


def _device_shifts(shifts: Any, lane_shape: tuple, order: str, info):
    """A device array of shifts as the lane kernel reads it: (its CUDA-array-interface view, stride)."""
    view = _arrays.device_view(shifts)
    sinfo = _arrays.describe_device(view)
    if sinfo.dtype != np.dtype(np.int64):
        raise TypeError(
            f"shifts on the GPU must be int64, got {sinfo.dtype}; convert on the device first "
            f"(shifts.astype('int64') for CuPy, shifts.long() for PyTorch)"
        )
    size = int(np.prod(sinfo.shape, dtype=np.int64))
    if not broadcasts_to(sinfo.shape, lane_shape):
        raise ValueError(
            f"shifts has shape {sinfo.shape}, which does not broadcast to the lanes' shape {lane_shape} "
            f"(a.shape {info.shape} without axis); give one shift per lane"
        )
    if size == 1:
        stride = 0
    elif tuple(sinfo.shape) == tuple(lane_shape) and (
            sinfo.c_contiguous if order == "C" or sum(d > 1 for d in lane_shape) <= 1 else sinfo.f_contiguous):
        stride = 1
    else:
        raise ValueError(
            f"shifts on the GPU must hold one shift per lane in the lanes' memory order (shape "
            f"{lane_shape}, {order}-contiguous) or a single shift; got shape {sinfo.shape} with strides "
            f"{sinfo.strides}. Broadcast and copy it on the device first, e.g. "
            f"cupy.ascontiguousarray(cupy.broadcast_to(shifts, {lane_shape}))"
        )
    _check_same_device(sinfo.pointer, info.pointer)
    lo, hi = _arrays.byte_extent(sinfo)
    a_lo, a_hi = _arrays.byte_extent(info)
    if lo < a_hi and a_lo < hi:  # the kernels would read shifts that other lanes are moving
        raise ValueError(
            f"shifts shares memory with a (shifts spans device bytes [{lo:#x}, {hi:#x}), a spans "
            f"[{a_lo:#x}, {a_hi:#x})); the lanes would be rolled by shifts that are moving. Pass a copy, "
            f"e.g. shifts.copy() (CuPy) or shifts.clone() (PyTorch)"
        )
    return view, stride


def _check_same_device(shifts_pointer: int, a_pointer: int) -> None:
    from .kernels.memops import SIMULATED

    if SIMULATED:
        return
    from . import runtime

    got, want = runtime.pointer_device(shifts_pointer), runtime.pointer_device(a_pointer)
    if got != want:
        raise ValueError(
            f"shifts is on GPU {got} but a is on GPU {want}; move shifts to a's device first "
            f"(e.g. shifts.to(a.device) for PyTorch, cupy.asarray(shifts) under a's device for CuPy)"
        )
