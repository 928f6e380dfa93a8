"""Per-lane shifts and in-place fftshift: ``roll_rows``, ``fftshift``, ``ifftshift``.

Thin public functions (validate, plan, execute) over the kernels in
rotate/_rows.py, using the same array recognition, checks and plan objects
as :func:`rotate.roll`.

>>> import numpy as np, rotate
>>> x = np.arange(12).reshape(3, 4)
>>> rotate.roll_rows(x, [0, 1, -1])
array([[ 0,  1,  2,  3],
       [ 7,  4,  5,  6],
       [ 9, 10, 11,  8]])
"""

from __future__ import annotations

from typing import Any, Optional, Sequence, Union

import dataclasses
import numbers

import numpy as np

from . import _api, _arrays, _cpu, _rows
from ._plan import Plan
from ._validate import as_index, normalize_axis

__all__ = ["roll_rows", "plan_roll_rows", "fftshift", "ifftshift"]

Axes = Optional[Union[int, Sequence[int]]]


def roll_rows(a: Any, shifts: Any, axis: int = -1, *, stream: Any = None,
              max_scratch_bytes: Optional[int] = None) -> Any:
    """Roll every 1-D lane of ``a`` along ``axis`` by its own shift, in place.

    Lane ``i`` (an index into ``a.shape`` without ``axis``) becomes
    ``numpy.roll(lane, shifts[i])``: the same direction and modulo rules as
    :func:`numpy.roll`, with one shift per lane. No second array and no index
    array: the data moves in place, lanes in parallel.

    Parameters
    ----------
    a : array
        A writeable numpy array (or PyTorch CPU tensor), any fixed-size dtype,
        C- or F-contiguous or a strided view; or a CUDA device array (numba,
        CuPy, PyTorch, anything with ``__cuda_array_interface__`` or DLPack)
        whose lanes are contiguous: ``axis`` the last axis of a C-contiguous
        array or the first of an F-contiguous one (one launch: ``lane-panels``;
        beyond a block's shared memory ``lane-walks``, one pass, for lanes of
        2-24 MiB, else ``lane-swaps``).
    shifts : int or array of ints
        One shift per lane: an integer array (or a scalar, or a list of
        Python ints of any size) that broadcasts to ``a.shape`` without
        ``axis``. Positive shifts move elements toward larger indices. With
        a GPU ``a`` it may also be an int64 device array on ``a``'s device,
        one shift per lane in the lanes' memory order (or a single shift); the
        kernel reads it there, so the host never waits for it.
    axis : int, optional
        The axis along which lanes run (default: the last).
    stream : optional
        GPU only: the CUDA stream to run on (as for :func:`rotate.roll`).
    max_scratch_bytes : int, optional
        Upper bound on temporary memory (default ``rotate._cpu.SCRATCH_BYTES``,
        8 MiB). Shifts that are not already an int64 array of the lanes'
        shape in C order (on the CPU: of any integer dtype but uint64) are
        copied once into one (on the CPU in their own dtype), e.g. when
        broadcast.

    Returns
    -------
    numpy.ndarray
        ``a`` itself, rolled.

    Raises
    ------
    TypeError
        Non-integer ``shifts`` (floats, bools, strings), ``shifts`` on a GPU
        while ``a`` is on the host, GPU ``shifts`` that are not int64, object
        dtypes, ``stream=`` with a host array.
    ValueError
        ``shifts`` whose shape does not broadcast to ``a.shape`` without
        ``axis``; a read-only ``a``; GPU lanes that are not contiguous; GPU
        ``shifts`` on another device.
    RuntimeError
        A device array on a machine without a usable CUDA GPU.
    numpy.exceptions.AxisError
        ``axis`` out of range.

    Examples
    --------
    >>> import numpy as np, rotate
    >>> signals = np.array([[1, 2, 3, 4, 5],
    ...                     [1, 2, 3, 4, 5]])
    >>> rotate.roll_rows(signals, [2, -1])
    array([[4, 5, 1, 2, 3],
           [2, 3, 4, 5, 1]])
    >>> cols = np.arange(6).reshape(3, 2)
    >>> rotate.roll_rows(cols, [1, 7], axis=0)    # one shift per column; 7 = 1 (mod 3)
    array([[4, 5],
           [0, 1],
           [2, 3]])
    """
    keys = _quick_keys(a, shifts, axis, max_scratch_bytes)
    if keys is not None and _quick_roll_rows(a, keys, max_scratch_bytes, stream):
        _arrays.mark_written(a)
        return a
    prepared = _prepare_call(a, shifts, axis, max_scratch_bytes)
    handles = [backend.resolve_stream(target, stream) for backend, target, _, _, _ in prepared]
    if keys is not None and len(prepared) == 1:
        _remember_quick(keys[1], max_scratch_bytes, prepared[0])
    for (backend, target, info, step, lane_shifts), handle in zip(prepared, handles):  # all checked: now move
        if step is None:
            continue
        if backend.name == "cpu":
            _run_lanes(target, step, lane_shifts)
        else:
            from ._cuda import launch

            launch.run_lanes(target, info, step, handle, *lane_shifts)
    _arrays.mark_written(a)
    return a


def plan_roll_rows(a: Any, shifts: Any, axis: int = -1, *, max_scratch_bytes: Optional[int] = None) -> Plan:
    """Say what :func:`roll_rows` would do, without doing it (same checks, same errors).

    Examples
    --------
    >>> import numpy as np, rotate
    >>> p = rotate.plan_roll_rows(np.zeros((1000, 512), np.float32), np.arange(1000))
    >>> p.algorithm, p.bytes_moved >= p.ideal_bytes, p.scratch_bytes <= 8 << 20
    ('per-lane-copy', True, True)
    >>> rotate.plan_roll_rows(np.zeros((10, 1 << 20), np.uint8), 3).algorithm
    'per-lane-shift'
    """
    plans = []
    for backend, _, info, step, _ in _prepare_call(a, shifts, axis, max_scratch_bytes):
        plans.append(Plan(backend.name, info.shape, info.dtype, () if step is None else (step,)))
    return _api.public_plan(_api._merge_plans(a, plans))


def fftshift(a: Any, axes: Axes = None, *, stream: Any = None, max_scratch_bytes: Optional[int] = None) -> Any:
    """Shift the zero-frequency component to the centre, in place, with numpy.fft.fftshift's semantics.

    ``rotate.roll(a, [a.shape[ax] // 2 for ax in axes], axes)``: every axis
    moves in one pass for C- and F-contiguous arrays (see :func:`rotate.plan`:
    one ``multi-axis-cycles`` step on the CPU; on the GPU one ``half-swaps``
    step when every shifted length is even and the half rows are 16-byte
    aligned (the shift is its own inverse: disjoint swaps, no scratch),
    else one ``row-cycles`` step where a row, from the last shifted axis on,
    is at least 2 KiB: up to ~75 KiB three rows a block, beyond that a ring
    of chunks, with first rows in scratch above ~200 KiB as far as
    ``max_scratch_bytes`` allows); strided views and other GPU layouts take
    one pass per axis (one step per axis in the plan).

    Parameters
    ----------
    a : array
        As for :func:`rotate.roll` (numpy arrays, CUDA device arrays).
    axes : int or sequence of ints, optional
        Axes to shift; None (default) shifts all of them.
    stream, max_scratch_bytes
        As for :func:`rotate.roll`.

    Returns
    -------
    array
        ``a`` itself.

    Examples
    --------
    >>> import numpy as np, rotate
    >>> freqs = np.fft.fftfreq(5, d=0.2)
    >>> rotate.fftshift(freqs)
    array([-2., -1.,  0.,  1.,  2.])
    >>> x = np.arange(6).reshape(2, 3)
    >>> rotate.fftshift(x)
    array([[5, 3, 4],
           [2, 0, 1]])
    >>> rotate.plan(x, (1, 1), axis=(0, 1)).algorithm
    'multi-axis-cycles'
    """
    axes, shape = _fft_axes(a, axes)  # tuples: a repeated call takes roll's cached plan
    return _api.roll(a, tuple(shape[ax] // 2 for ax in axes), axes, stream=stream, max_scratch_bytes=max_scratch_bytes)


def ifftshift(a: Any, axes: Axes = None, *, stream: Any = None, max_scratch_bytes: Optional[int] = None) -> Any:
    """The inverse of :func:`fftshift`, in place (differs from it for odd lengths).

    Examples
    --------
    >>> import numpy as np, rotate
    >>> x = np.array([-2., -1., 0., 1., 2.])
    >>> rotate.ifftshift(x)
    array([ 0.,  1.,  2., -2., -1.])
    """
    axes, shape = _fft_axes(a, axes)
    return _api.roll(a, tuple(-(shape[ax] // 2) for ax in axes), axes, stream=stream,
                     max_scratch_bytes=max_scratch_bytes)


# --- internals -------------------------------------------------------------

#: GPU calls with device shifts that passed the full path, by both arrays' layouts and addresses:
#: (info, plan key, step, shift stride). A later identical call skips describing, checking and
#: planning (the checks' outcome depends only on what the key holds).
_quick_lanes: dict = {}


def _quick_keys(a: Any, shifts: Any, axis: Any, max_scratch_bytes: Any):
    """``(backend, key, default stream)`` for the quick path, or None (host arrays, host shifts, odd args)."""
    if type(a) is np.ndarray or type(axis) is not int or not (max_scratch_bytes is None
                                                               or type(max_scratch_bytes) is int):
        return None
    from . import _backends

    quick = _backends.quick_describe(a)
    if quick is None:
        return None
    quick_shifts = _backends.quick_describe(shifts)
    if quick_shifts is None:
        return None
    backend, (layout, pointer, default_stream) = quick
    _, (shift_layout, shift_pointer, _) = quick_shifts
    return backend, (layout, pointer, shift_layout, shift_pointer, axis, max_scratch_bytes), default_stream


def _quick_roll_rows(a: Any, keys: tuple, max_scratch_bytes: Any, stream: Any) -> bool:
    """Run a repeated GPU call from the cache (``keys`` from :func:`_quick_keys`); False: take the full path."""
    backend, key, default_stream = keys
    hit = _quick_lanes.get(key)
    if hit is None:
        return False
    info, plan_key, step, stride = hit
    if plan_key != backend.plan_key(info, max_scratch_bytes):  # a setting changed: plan again
        return False
    handle = backend.quick_stream(default_stream, stream)
    if step is not None:
        from ._cuda import launch

        launch.run_lanes(a, info, step, handle, None, key[3], stride)
    return True


def _remember_quick(key: tuple, max_scratch_bytes: Any, prepared: tuple) -> None:
    """Let later calls with this key take the quick path (only after the full path passed)."""
    backend, target, info, step, lane_shifts = prepared
    if backend.name == "cpu" or lane_shifts is None or lane_shifts[1] is None:
        return
    if key[1] != info.pointer or (step is not None and step.algorithm == "lane-chains"):
        return
    _api._remember(_quick_lanes, key, (info, backend.plan_key(info, max_scratch_bytes), step, lane_shifts[2]))


def _fft_axes(a: Any, axes: Axes):
    """numpy.fft's axes: None means all; ints normalised (AxisError out of range)."""
    shape = tuple(int(n) for n in getattr(a, "shape", ()))
    if not hasattr(a, "shape"):
        _api._inspect(a)  # the same TypeError rotate.roll gives (lists, scalars)
    if axes is None:
        return tuple(range(len(shape))), shape
    if isinstance(axes, (list, tuple)):
        items = axes
    elif isinstance(axes, np.ndarray) and axes.ndim == 1:
        items = axes.tolist()
    else:
        items = [axes]
    return tuple(normalize_axis(as_index(ax, "axes"), len(shape)) for ax in items), shape


def _prepare_call(a: Any, shifts: Any, axis: Any, max_scratch_bytes: Any) -> list:
    """Validate and plan every array the call moves (a masked array's data and mask, a padded struct's
    fields: each rolls alike), with host shifts that share memory with any of them copied first."""
    prepared = [_prepare_lanes(part, shifts, axis, max_scratch_bytes) for part in _api._parts(a)]
    targets = [target for backend, target, _, _, _ in prepared if backend.name == "cpu"]
    return [_unaliased(p, targets) for p in prepared]


def _unaliased(prepared: tuple, targets: list) -> tuple:
    """``prepared`` with its host shifts copied when they share memory with an array the call rolls.

    The kernels read a lane's shift while other lanes move, and a masked array's mask rolls after its
    data: shifts inside the rolled memory (``roll_rows(a, a[0])``) would be read already moved. The copy
    is one shift per lane (``shift_copy_bytes`` in the plan). Device shifts are checked in
    :func:`_device_shifts`; host shifts of a GPU call are uploaded, so never alias it.
    """
    backend, target, info, step, lane_shifts = prepared
    if backend.name != "cpu" or not any(np.may_share_memory(lane_shifts, t) for t in targets):
        return prepared
    lane_shifts = lane_shifts.copy()
    if step is not None:
        step = dataclasses.replace(step, details={**step.details, "shift_copy_bytes": lane_shifts.nbytes})
    return backend, target, info, step, lane_shifts


def _prepare_lanes(part: Any, shifts: Any, axis: Any, max_scratch_bytes: Any):
    """Validate one array and plan it: (backend, target, info, Step or None, shifts as the runner takes them)."""
    backend, target, info = _api._inspect(part)
    axis = normalize_axis(as_index(axis, "axis"), info.ndim)
    scratch = _api._check_scratch(max_scratch_bytes)
    n = info.shape[axis]
    lane_shape = info.shape[:axis] + info.shape[axis + 1:]
    if backend.name != "cpu":
        return _prepare_device_lanes(backend, target, info, shifts, axis, n, lane_shape, scratch)
    lane_shifts = _lane_shifts(shifts, lane_shape, n, axis, info.shape, narrow=True)
    if n <= 1 or info.size == 0:
        return backend, target, info, None, lane_shifts
    step = _rows.plan_lanes(info.shape, info.strides, info.itemsize, axis, scratch)
    return backend, target, info, step, lane_shifts


def _prepare_device_lanes(backend, target, info, shifts, axis: int, n: int, lane_shape: tuple,
                          max_scratch_bytes: Optional[int]):
    """The GPU side of :func:`_prepare_lanes`: lanes must be back to back in memory."""
    from ._cuda import planner

    if info.ndim <= 1 or (info.c_contiguous and axis == info.ndim - 1):
        order = "C"
    elif info.f_contiguous and axis == 0:
        order = "F"
    else:
        raise ValueError(
            f"roll_rows on the GPU needs each lane contiguous in memory (axis -1 of a C-contiguous array "
            f"or axis 0 of an F-contiguous one); got axis {axis} of an array of shape {info.shape} and "
            f"strides {info.strides}. Move the axis last first, e.g. x = cupy.ascontiguousarray("
            f"cupy.moveaxis(a, {axis}, -1)); rotate.roll_rows(x, shifts); then copy back"
        )
    rows = info.size // n if n else 0
    if _arrays.is_device_array(shifts):
        device_shifts, stride = _device_shifts(shifts, lane_shape, order, info)
        host_shifts = None
    else:
        host_shifts = _lane_shifts(shifts, lane_shape, n, axis, info.shape)
        stride = 0 if host_shifts.strides[0] == 0 else 1  # one shift for every lane: uploaded once
        if stride and order == "F" and len(lane_shape) > 1:  # lanes lie in memory in F order of their indices
            host_shifts = np.ascontiguousarray(host_shifts.reshape(lane_shape).ravel(order="F"))
        device_shifts = None
    if n <= 1 or info.size == 0:
        return backend, target, info, None, None
    step = planner.plan_lane_panels(axis, rows, n, info.itemsize, info.pointer)
    if step is None:
        step = planner.plan_long_lanes(axis, rows, n, info.itemsize, info.pointer, max_scratch_bytes, host_shifts)
    return backend, target, info, step, (host_shifts, device_shifts, stride)


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
    if not _broadcasts_to(sinfo.shape, lane_shape):
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
    from ._cuda._memops import SIMULATED

    if SIMULATED:
        return
    from ._cuda import launch

    got, want = launch.pointer_device(shifts_pointer), launch.pointer_device(a_pointer)
    if got != want:
        raise ValueError(
            f"shifts is on GPU {got} but a is on GPU {want}; move shifts to a's device first "
            f"(e.g. shifts.to(a.device) for PyTorch, cupy.asarray(shifts) under a's device for CuPy)"
        )


def _broadcasts_to(shape: tuple, lane_shape: tuple) -> bool:
    try:
        return np.broadcast_shapes(tuple(shape), lane_shape) == lane_shape
    except ValueError:
        return False


def _lane_shifts(shifts: Any, lane_shape: tuple, n: int, axis: int, shape: tuple,
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
    if not _broadcasts_to(arr.shape, lane_shape):
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


def _run_lanes(target: np.ndarray, step, lane_shifts: np.ndarray) -> None:
    word = step.details["word"]
    address = target.__array_interface__["data"][0]
    low = address + sum((n - 1) * st for n, st in zip(target.shape, target.strides) if st < 0)
    high = address + sum((n - 1) * st for n, st in zip(target.shape, target.strides) if st > 0) + target.itemsize
    flat = np.asarray(_cpu._WordSpan(target, low, (high - low) // word, word))
    _rows.run_lanes(flat, (address - low) // word, lane_shifts, step)
