"""The public functions: validate, plan, launch. Kernels live elsewhere."""

from __future__ import annotations

import functools
from typing import Any, Optional, Sequence, Union

import numpy as np

from . import _arrays
from ._plan import Plan, Step, axis_rotations, contiguous_steps
from ._validate import as_index, as_index_tuple, broadcast_shifts, check_numpy_array, check_stream_for_host

IntOrInts = Union[int, Sequence[int]]


def roll(a: Any, shift: IntOrInts, axis: Optional[IntOrInts] = None, *,
         stream: Any = None, max_scratch_bytes: Optional[int] = None) -> Any:
    """Roll array elements in place, with numpy.roll's semantics.

    Elements that roll beyond the last position are re-introduced at the
    first, exactly as ``numpy.roll(a, shift, axis)`` computes, but written
    back into ``a`` instead of a new array: the result needs no second array.

    Parameters
    ----------
    a : array
        A writeable numpy array (CPU backend) or a CUDA device array: a numba
        device array, CuPy array, PyTorch CUDA tensor, or anything exposing
        ``__cuda_array_interface__`` or CUDA DLPack (GPU backend).
    shift : int or sequence of ints
        Positions to move elements toward larger indices (negative: toward
        smaller). Any Python int; reduced modulo the axis length.
    axis : int or sequence of ints, optional
        Axis or axes to roll along. None (default) rolls the flattened array
        in C order and keeps the shape. ``shift`` and ``axis`` broadcast
        together; shifts naming the same axis add up.
    stream : optional
        GPU only: the CUDA stream to run on (numba stream, CuPy or PyTorch
        stream, or a raw handle). Default: the array library's current stream.
        Giving it with a numpy array is a TypeError (the CPU runs synchronously).
    max_scratch_bytes : int, optional
        Upper bound on temporary memory; see :func:`plan`.

    Returns
    -------
    array
        ``a`` itself, rolled.

    Raises
    ------
    TypeError
        Non-integer ``shift``/``axis``, object dtype, an unsupported array
        type, or ``stream=`` with a numpy array.
    ValueError
        Read-only array (or mask), elements that overlap in memory, or a
        layout that cannot be rolled in place.
    RuntimeError
        A device array on a machine without a usable CUDA GPU.
    numpy.exceptions.AxisError
        ``axis`` out of range.

    Notes
    -----
    Different arrays may be rolled from different threads at once; one array
    must not be rolled from two threads at once. Of a structured array only
    the fields' bytes move (padding, and the other fields of a multi-field
    view's base, stay where they are).

    Examples
    --------
    >>> import numpy as np, rotate
    >>> x = np.arange(10)
    >>> rotate.roll(x, 2)
    array([8, 9, 0, 1, 2, 3, 4, 5, 6, 7])
    >>> x                                   # the same array, rolled in place
    array([8, 9, 0, 1, 2, 3, 4, 5, 6, 7])
    >>> m = np.arange(6).reshape(2, 3)
    >>> rotate.roll(m, -1, axis=1)
    array([[1, 2, 0],
           [4, 5, 3]])
    """
    parts = _parts(a)
    plans = []
    for part in parts:  # plan (and so validate) everything before anything moves
        target, info = _inspect(part)
        check_stream_for_host(info.device, stream)
        plans.append((target, info, _make_plan(info, _shift_map(info, shift, axis), max_scratch_bytes)))
    for target, info, p in plans:
        _execute(target, info, p, stream)
    return a


def rotate(a: Any, middle: int, *, stream: Any = None,
           max_scratch_bytes: Optional[int] = None) -> int:
    """Rotate the flattened array in place with std::rotate's semantics.

    The element at flat index ``middle`` becomes the first; the elements
    before it move to the end, order kept. Equivalent to
    ``roll(a, -middle, axis=None)``.

    Parameters
    ----------
    a : array
        As for :func:`roll`.
    middle : int
        ``0 <= middle <= a.size``.

    Returns
    -------
    int
        ``a.size - middle``: the new index of the old first element
        (``a.size`` when ``middle == 0``, like std::rotate's return value).

    Examples
    --------
    >>> import numpy as np, rotate
    >>> x = np.array([1, 2, 3, 4, 5])
    >>> rotate.rotate(x, 2)
    3
    >>> x
    array([3, 4, 5, 1, 2])
    """
    parts = _parts(a)
    plans = []
    for part in parts:
        target, info = _inspect(part)
        check_stream_for_host(info.device, stream)
        middle = _check_middle(middle, info.size)
        plans.append((target, info, _make_plan(info, {None: -middle}, max_scratch_bytes)))
    for target, info, p in plans:
        _execute(target, info, p, stream)
    return plans[0][1].size - middle


def plan(a: Any, shift: Optional[IntOrInts] = None, axis: Optional[IntOrInts] = None, *,
         middle: Optional[int] = None, max_scratch_bytes: Optional[int] = None) -> Plan:
    """Say what ``roll(a, shift, axis)`` or ``rotate(a, middle)`` would do, without doing it.

    Runs every check the call would run (so it raises the same errors) and
    returns a :class:`Plan`: the backend, the algorithm of each step, the
    scratch bytes it would allocate, the bytes it would move and, on the GPU,
    tile size, grid and block.

    Parameters
    ----------
    a, shift, axis
        As for :func:`roll`.
    middle : int, optional
        Plan ``rotate(a, middle)`` instead; give either ``shift`` or ``middle``.
    max_scratch_bytes : int, optional
        Upper bound on temporary memory. GPU: rotation distances whose seam
        does not fit take the slower scratch-free fallback. Default: the
        larger of 1% of the array and 16 MiB (GPU); 8 MiB on the CPU, where a
        bound too small for any buffered algorithm falls back to in-place
        reversals (no scratch), so every bound, 0 included, is met.

    Examples
    --------
    >>> import numpy as np, rotate
    >>> p = rotate.plan(np.zeros(1000, np.uint8), 3)
    >>> p.backend, p.bytes_moved >= p.ideal_bytes
    ('cpu', True)
    """
    if (shift is None) == (middle is None):
        raise TypeError("plan() takes either shift (as for roll) or middle (as for rotate), not both or neither")
    plans = []
    for part in _parts(a):  # a masked array's mask is planned (and checked) with its data
        _, info = _inspect(part)
        if middle is not None:
            shifts = {None: -_check_middle(middle, info.size)}
        else:
            shifts = _shift_map(info, shift, axis)
        plans.append(_make_plan(info, shifts, max_scratch_bytes))
    return _merge_plans(a, plans)


# --- internals -------------------------------------------------------------

def _parts(a: Any) -> list:
    """The arrays a call moves: a masked array's data and mask, a multi-field view's fields."""
    return _arrays.rolled_parts(a)


def _merge_plans(a: Any, plans: list) -> Plan:
    """One plan for a call that moves several parts: every part's steps, a's shape and dtype."""
    if len(plans) == 1:
        return plans[0]
    return Plan(plans[0].backend, tuple(np.shape(a)), getattr(a, "dtype", plans[0].dtype),
                tuple(step for p in plans for step in p.steps))


def _inspect(a: Any):
    """Validate ``a`` and describe it. Returns (object the backend works on, ArrayInfo)."""
    if isinstance(a, np.ndarray):
        check_numpy_array(a)
        return a, _arrays.describe_host(a)
    if _arrays.is_device_array(a):
        view = _arrays.device_view(a)
        info = _arrays.describe_device(view)
        if info.readonly:
            raise ValueError(
                "a is a read-only device array (its __cuda_array_interface__ says so); "
                "rotate works in place, so pass a writeable array"
            )
        _arrays.check_device_usable()
        return view, info
    raise TypeError(
        f"a must be a numpy array or a CUDA device array (numba, CuPy, PyTorch, or "
        f"anything with __cuda_array_interface__ or DLPack), got {type(a).__name__}; "
        f"for lists use numpy.asarray first"
    )


def _check_middle(middle: Any, size: int) -> int:
    middle = as_index(middle, "middle")
    if not 0 <= middle <= size:
        raise ValueError(
            f"middle must satisfy 0 <= middle <= a.size ({size}), got {middle}; "
            f"for a cyclic shift by any amount use rotate.roll(a, -middle)"
        )
    return middle


def _shift_map(info, shift, axis) -> dict:
    if axis is None:  # the flattened array: shifts add up, like numpy.roll's
        return {None: sum(as_index_tuple(shift, "shift"))}
    return broadcast_shifts(shift, axis, info.ndim)


def _make_plan(info, shifts: dict, max_scratch_bytes: Optional[int]) -> Plan:
    if max_scratch_bytes is not None:
        max_scratch_bytes = as_index(max_scratch_bytes, "max_scratch_bytes")
        if max_scratch_bytes < 0:
            raise ValueError(f"max_scratch_bytes must be >= 0, got {max_scratch_bytes}")
    settings_key = None
    if info.device:
        from ._cuda import planner
        settings_key = tuple(sorted(planner.settings.items()))
    else:
        from . import _cpu
        settings_key = _cpu.settings_key()
    # Plans depend on layout, not on the data or its address: repeated calls
    # (the common case in a loop) skip planning entirely.
    layout_key = (info.shape, info.strides, info.dtype, info.device)
    return _cached_plan(layout_key, tuple(sorted(shifts.items(), key=repr)),
                        max_scratch_bytes, settings_key)


@functools.lru_cache(maxsize=256)
def _cached_plan(layout_key, shift_items, max_scratch_bytes, settings_key) -> Plan:
    shape, strides, dtype, device = layout_key
    info = _arrays.ArrayInfo(shape, strides, dtype, device)
    return _build_plan(info, dict(shift_items), max_scratch_bytes)


def _build_plan(info, shifts: dict, max_scratch_bytes: Optional[int]) -> Plan:
    if None in shifts:
        rotations = axis_rotations(info, None, shifts[None])
    else:
        rotations = axis_rotations(info, shifts, None)
    backend = "cuda" if info.device else "cpu"
    if not rotations:
        return Plan(backend, info.shape, info.dtype, ())
    layout = contiguous_steps(info, rotations)
    if info.device:
        if layout is None:
            raise ValueError(
                f"a is a non-contiguous device array (shape {info.shape}, strides "
                f"{info.strides}); the GPU backend rolls C- or F-contiguous arrays in "
                f"place. Roll a contiguous array instead (e.g. x = a.copy(); roll(x, ...); "
                f"a[...] = x), or roll the contiguous base array"
            )
        from ._cuda import planner
        steps = tuple(
            planner.plan_step(axis, s, rows, seg, left, word, info.pointer, max_scratch_bytes)
            for axis, s, rows, seg, left, word in layout
        )
        return Plan(backend, info.shape, info.dtype, steps)

    from . import _cpu
    if layout is None:
        if rotations[0][0] is None and info.ndim > 1 and _arrays.c_order_line(info.shape, info.strides) is None:
            raise ValueError(
                f"roll with axis=None rolls a in C order, but a is not C-contiguous "
                f"(shape {info.shape}, strides {info.strides}), so C order is not its "
                f"memory order and there is no in-place way to do it without a copy. "
                f"Give explicit axes, or roll a C-contiguous copy: "
                f"b = np.ascontiguousarray(a); rotate.roll(b, shift); a[...] = b"
            )
        steps = []
        for axis, length, s in rotations:
            axis = 0 if axis is None and info.ndim == 1 else axis  # None: the C-order line
            algorithm, scratch, moved = _cpu.plan_strided(info.shape, info.strides, info.itemsize, s, axis,
                                                          max_scratch_bytes)
            lines = info.size // length  # the strided roll moves every line along the axis
            steps.append(Step(axis, s, lines, length * info.itemsize, (length - s) * info.itemsize,
                              info.itemsize, algorithm, scratch, moved, strided=True,
                              details=_cpu.step_details(max_scratch_bytes)))
        return Plan(backend, info.shape, info.dtype, tuple(steps))
    steps = []
    for axis, s, rows, seg, left, word in layout:
        algorithm, scratch, moved = _cpu.plan_rows(rows, seg // word, left // word, word, max_scratch_bytes)
        steps.append(Step(axis, s, rows, seg, left, word, algorithm, scratch, moved,
                          details=_cpu.step_details(max_scratch_bytes)))
    return Plan(backend, info.shape, info.dtype, tuple(steps))


def _execute(target: Any, info, p: Plan, stream: Any) -> None:
    if not p.steps:
        return
    if p.backend == "cuda":
        from ._cuda import launch
        launch.execute(target, info, p, stream)
        return
    from . import _cpu
    arr = np.asarray(target)
    for step in p.steps:
        if step.strided:
            _cpu.roll_strided(arr, step.shift, step.axis, step.details.get("max_scratch_bytes"))
            continue
        word = step.word_bytes
        flat = arr.reshape(-1, order="A").view(np.dtype(f"u{word}"))
        if not np.may_share_memory(flat, arr):  # a copy would silently lose the result
            raise AssertionError("internal error: contiguous view of a was a copy")
        _cpu.rotate_rows_inplace(flat, step.rows, step.seg_bytes // word, step.left_bytes // word,
                                 step.details.get("max_scratch_bytes"))
