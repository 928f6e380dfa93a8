"""Per-lane shifts and in-place fftshift: ``roll_rows``, ``fftshift``, ``ifftshift``.

Thin public functions (validate, plan, execute): the array's backend plans
and runs the lanes, with the same array recognition, checks and plan objects
as :func:`rotate.roll`.

>>> import numpy as np, rotate
>>> x = np.arange(12).reshape(3, 4)
>>> rotate.roll_rows(x, [0, 1, -1])
array([[ 0,  1,  2,  3],
       [ 7,  4,  5,  6],
       [ 9, 10, 11,  8]])
"""

from __future__ import annotations

from typing import Any, Optional, SupportsIndex

import dataclasses

import numpy as np

from . import _api
from ._core import arrays as _arrays
from ._api import ArrayT, IntOrInts
from ._core.plan import Plan
from ._core.validate import as_index, normalize_axis

__all__ = ["roll_rows", "plan_roll_rows", "fftshift", "ifftshift"]

#: numpy.fft.fftshift's axes: None (all), an integer, or a list, tuple or 1-D integer array of them.
Axes = Optional[IntOrInts]


def roll_rows(a: ArrayT, shifts: Any, axis: SupportsIndex = -1, *, stream: Any = None,
              max_scratch_bytes: Optional[SupportsIndex] = None) -> ArrayT:
    """Roll every 1-D lane of ``a`` along ``axis`` by its own shift, in place.

    Lane ``i`` (an index into ``a.shape`` without ``axis``) becomes
    ``numpy.roll(lane, shifts[i])``: the same direction and modulo rules as
    :func:`numpy.roll`, with one shift per lane. No second array and no index
    array: the data moves in place, lanes in parallel.

    Parameters
    ----------
    a : array
        A writeable numpy array (or PyTorch CPU tensor), any fixed-size dtype,
        C- or F-contiguous or a strided view; or a C- or F-contiguous CUDA
        device array (numba, CuPy, PyTorch, anything with
        ``__cuda_array_interface__`` or DLPack), along any axis. Lanes
        contiguous in memory (``axis`` the last axis of a C-contiguous array
        or the first of an F-contiguous one) take one launch of
        ``lane-panels``; beyond a block's shared memory ``lane-walks``, one
        pass, for lanes of 2-24 MiB, else ``lane-swaps``. Lanes along any
        other axis are columns of rows and take one launch of
        ``column-panels``: each block rolls a strip of every lane's rows.
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
        Upper bound on temporary memory (default: 8 MiB on the CPU; on the
        GPU the larger of 1% of the array and 16 MiB, more for lanes of 1-24
        MiB and for a few huge lanes' chain passes, see :func:`plan_roll_rows`). Shifts that are not already an
        int64 array of the lanes' shape in C order (on the CPU: of any
        integer dtype but uint64) are copied once into one (on the CPU in
        their own dtype), e.g. when broadcast; a single shift is not copied
        a lane. Host shifts that share memory with ``a`` (``a[0]``) are
        copied before any lane moves.

    Returns
    -------
    array
        ``a`` itself (the same object: numpy array, torch tensor, device
        array), rolled.

    Raises
    ------
    TypeError
        Non-integer ``shifts`` (floats, bools, strings), ``shifts`` on a GPU
        while ``a`` is on the host, GPU ``shifts`` that are not int64, object
        dtypes, ``stream=`` with a host array.
    ValueError
        ``shifts`` whose shape does not broadcast to ``a.shape`` without
        ``axis``; a read-only ``a``; a GPU array that is neither C- nor
        F-contiguous; GPU
        ``shifts`` on another device or inside ``a``'s memory; a torch
        tensor that requires grad.
    RuntimeError
        A device array on a machine without a usable CUDA GPU.
    numpy.exceptions.AxisError
        ``axis`` out of range.

    Notes
    -----
    Every argument is checked before any lane moves. ``roll_rows(a, s)`` on a
    2-D ``a`` gives what ``numpy.take_along_axis(a, (arange(n) - s[:, None])
    % n, axis=1)`` gives, without the index array (8 bytes per element) or the
    second array. On the CPU, a ``shifts`` array of any integer dtype is read
    as it is: int32 shifts are half the bytes of int64 ones, which matters
    when lanes are a few bytes long. On the GPU, device ``shifts`` are read on
    the device, so the host never waits for them. :func:`plan_roll_rows` says which algorithm a call takes.

    See Also
    --------
    plan_roll_rows : What this call would do, without doing it.
    roll : One shift for every lane (numpy.roll's semantics).
    numpy.take_along_axis : The out-of-place gather this replaces.

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
        if step is not None:
            backend.execute_lanes(target, info, step, handle, lane_shifts)
    _arrays.mark_written(a)
    return a


def plan_roll_rows(a: Any, shifts: Any, axis: SupportsIndex = -1, *,
                   max_scratch_bytes: Optional[SupportsIndex] = None) -> Plan:
    """Say what :func:`roll_rows` would do, without doing it (same checks, same errors).

    Parameters
    ----------
    a : array
        As for :func:`roll_rows`.
    shifts : int or array of ints
        As for :func:`roll_rows`: one shift per lane, broadcast to ``a.shape``
        without ``axis``.
    axis : int, optional
        The axis along which lanes run (default: the last).
    max_scratch_bytes : int, optional
        Upper bound on temporary memory, as for :func:`roll_rows`.

    Returns
    -------
    Plan
        One step per array the call moves (none when nothing moves): the
        backend, the lane algorithm (CPU: ``per-lane-copy``,
        ``per-lane-shift``, ...; GPU: ``lane-panels``, ``lane-walks``,
        ``lane-swaps``, ``column-panels``, ...), its scratch bytes and the bytes it moves; a
        step's ``params`` say more, and its ``shift_copy_bytes`` counts host
        shifts that share memory with ``a``, copied first.

    Raises
    ------
    TypeError, ValueError, RuntimeError, numpy.exceptions.AxisError
        Whatever :func:`roll_rows` would raise for the same arguments.

    Notes
    -----
    Like :func:`rotate.plan`, the plan depends on the layout, the shifts'
    layout and dtype, the scratch bound and the backend's settings, not on
    the data; the returned plan is the caller's copy.

    See Also
    --------
    roll_rows : The call this plans.
    plan : The plan of a :func:`roll` or :func:`rotate` call.

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


def fftshift(a: ArrayT, axes: Axes = None, *, stream: Any = None,
             max_scratch_bytes: Optional[SupportsIndex] = None) -> ArrayT:
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
        ``a`` itself (the same object: numpy array, torch tensor, device
        array), shifted.

    Raises
    ------
    TypeError
        Non-integer ``axes``; an unsupported array type, object dtype, or
        ``stream=`` with a host array (as for :func:`rotate.roll`).
    ValueError
        A read-only array, elements that overlap in memory, or a layout that
        cannot be rolled in place (as for :func:`rotate.roll`).
    RuntimeError
        A device array on a machine without a usable CUDA GPU.
    numpy.exceptions.AxisError
        An axis in ``axes`` out of range.

    Notes
    -----
    For even lengths :func:`fftshift` and :func:`ifftshift` are the same
    shift; for odd ones they are each other's inverse. A repeated axis in
    ``axes`` shifts that axis twice, as in numpy.

    See Also
    --------
    ifftshift : The inverse.
    numpy.fft.fftshift : The same result in a new array.
    roll : The general in-place roll.

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
    >>> rotate.plan(np.zeros((100, 100)), (50, 50), axis=(0, 1)).algorithm  # every axis in one pass
    'multi-axis-cycles'
    """
    shifts, axes = _fft_shifts(a, axes, False)  # tuples: a repeated call takes roll's cached plan
    return _api.roll(a, shifts, axes, stream=stream, max_scratch_bytes=max_scratch_bytes)


def ifftshift(a: ArrayT, axes: Axes = None, *, stream: Any = None,
              max_scratch_bytes: Optional[SupportsIndex] = None) -> ArrayT:
    """The inverse of :func:`fftshift`, in place, with numpy.fft.ifftshift's semantics.

    ``rotate.roll(a, [-(a.shape[ax] // 2) for ax in axes], axes)``: it undoes
    :func:`fftshift` (and differs from it only for odd lengths), taking the
    same one-pass paths.

    Parameters
    ----------
    a : array
        As for :func:`rotate.roll`: a writeable numpy array or PyTorch CPU
        tensor, or a CUDA device array.
    axes : int or sequence of ints, optional
        Axes to shift; None (default) shifts all of them.
    stream : optional
        GPU only: the CUDA stream to run on (as for :func:`rotate.roll`).
    max_scratch_bytes : int, optional
        Upper bound on temporary memory (as for :func:`rotate.roll`).

    Returns
    -------
    array
        ``a`` itself (the same object: numpy array, torch tensor, device
        array), shifted.

    Raises
    ------
    TypeError
        Non-integer ``axes``; an unsupported array type, object dtype, or
        ``stream=`` with a host array (as for :func:`rotate.roll`).
    ValueError
        A read-only array, elements that overlap in memory, or a layout that
        cannot be rolled in place (as for :func:`rotate.roll`).
    RuntimeError
        A device array on a machine without a usable CUDA GPU.
    numpy.exceptions.AxisError
        An axis in ``axes`` out of range.

    Notes
    -----
    ``ifftshift(fftshift(a, axes), axes)`` leaves ``a`` as it was, for every
    length; :func:`rotate.plan` with the negated half shifts shows the plan.

    See Also
    --------
    fftshift : The shift this undoes.
    numpy.fft.ifftshift : The same result in a new array.

    Examples
    --------
    >>> import numpy as np, rotate
    >>> x = np.array([-2., -1., 0., 1., 2.])
    >>> rotate.ifftshift(x)
    array([ 0.,  1.,  2., -2., -1.])
    >>> m = np.arange(6).reshape(2, 3)
    >>> rotate.ifftshift(rotate.fftshift(m, axes=1), axes=1)   # a round trip
    array([[0, 1, 2],
           [3, 4, 5]])
    """
    shifts, axes = _fft_shifts(a, axes, True)
    return _api.roll(a, shifts, axes, stream=stream, max_scratch_bytes=max_scratch_bytes)


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
        backend.execute_lanes(a, info, step, handle, (None, key[3], stride))
    return True


def _remember_quick(key: tuple, max_scratch_bytes: Any, prepared: tuple) -> None:
    """Let later calls with this key take the quick path (only after the full path passed)."""
    backend, target, info, step, lane_shifts = prepared
    replayable = getattr(backend, "replayable_lanes", None)
    stride = None if replayable is None or key[1] != info.pointer else replayable(step, lane_shifts)
    if stride is not None:
        _api._remember(_quick_lanes, key, (info, backend.plan_key(info, max_scratch_bytes), step, stride))


#: ``(shape, axes, inverse) -> (shifts, axes)`` of calls whose ``axes`` were None, an int or a tuple of ints
#: (what a repeated call passes): the normalisation ran once, with every check, for that shape.
_fft_calls: dict = {}


def _fft_shifts(a: Any, axes: Axes, inverse: bool) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """fftshift's (``inverse``: ifftshift's) shifts and axes for ``rotate.roll``."""
    shape = getattr(a, "shape", None)
    key = None
    if isinstance(shape, tuple) and (axes is None or _api._plain_ints(axes)):  # tuples, torch.Size
        key = (shape, axes, inverse)
        hit = _fft_calls.get(key)
        if hit is not None:
            return hit
    axes, shape = _fft_axes(a, axes)
    shifts = tuple(-(shape[ax] // 2) if inverse else shape[ax] // 2 for ax in axes)
    if key is not None:
        _api._remember(_fft_calls, key, (shifts, axes))
    return shifts, axes


def _fft_axes(a: Any, axes: Axes) -> tuple[tuple[int, ...], tuple[int, ...]]:
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
    targets = [target for _, target, info, _, _ in prepared if not info.device]
    return [_unaliased(p, targets) for p in prepared]


def _unaliased(prepared: tuple, targets: list) -> tuple:
    """``prepared`` with its host shifts copied when they share memory with an array the call rolls.

    The kernels read a lane's shift while other lanes move, and a masked array's mask rolls after its
    data: shifts inside the rolled memory (``roll_rows(a, a[0])``) would be read already moved. The copy
    is one shift per lane (``shift_copy_bytes`` in the plan). A device backend checks its own shifts
    (the CUDA backend refuses device shifts inside the array; host shifts of a GPU call are uploaded).
    """
    backend, target, info, step, lane_shifts = prepared
    if info.device or not any(np.may_share_memory(lane_shifts, t) for t in targets):
        return prepared
    lane_shifts = lane_shifts.copy()
    if step is not None:
        step = dataclasses.replace(step, shift_copy_bytes=lane_shifts.nbytes)
    return backend, target, info, step, lane_shifts


def _prepare_lanes(part: Any, shifts: Any, axis: Any, max_scratch_bytes: Any):
    """Validate one array and plan it: (backend, target, info, Step or None, shifts as the backend runs them)."""
    backend, target, info = _api._inspect(part)
    axis = normalize_axis(as_index(axis, "axis"), info.ndim)
    scratch = _api._check_scratch(max_scratch_bytes)
    if getattr(backend, "plan_lane_layout", None) is None:  # its lane step may read the shifts' values
        step, lane_shifts = backend.plan_lanes(target, info, shifts, axis, scratch)
    else:
        lane_shifts = backend.lane_shifts(target, info, shifts, axis)
        step = _api.lanes_step(backend, info, axis, scratch)
    return backend, target, info, step, lane_shifts
