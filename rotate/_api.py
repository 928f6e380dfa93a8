"""The public functions: validate, plan, execute. Backends and kernels live elsewhere."""

from __future__ import annotations

import copy
import functools
from typing import Any, Optional, Sequence, SupportsIndex, TypeVar, Union

import numpy as np
import numpy.typing as npt

from ._core import arrays as _arrays
from . import _backends
from ._core.plan import Plan, axis_rotations
from ._core.validate import as_index, as_index_tuple, broadcast_shifts

#: A shift or axis, or several, as numpy.roll takes them: Python and numpy integers (anything with
#: ``__index__``), and 1-D sequences or integer arrays of them.
IntOrInts = Union[SupportsIndex, Sequence[SupportsIndex], npt.NDArray[np.integer[Any]]]
#: The array a call moves in place and returns: whatever type came in (numpy, CuPy, torch, numba, DTensor).
ArrayT = TypeVar("ArrayT")


def roll(a: ArrayT, shift: IntOrInts, axis: Optional[IntOrInts] = None, *,
         stream: Any = None, max_scratch_bytes: Optional[SupportsIndex] = None) -> ArrayT:
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
    Every argument is checked before any byte moves, so a call that raises
    leaves ``a`` as it was. Every byte of ``a`` is read once and written once
    (plus a little scratch): :func:`plan` says how, without moving anything.
    A roll over several axes of a C- or F-contiguous array is one pass where
    the backend allows it (the plan shows one step), else one pass per axis.

    Any fixed-size dtype works (bool, integers, floats, complex, datetime,
    fixed-width strings, structured dtypes); the kernels move bytes. Of a
    structured array only the fields' bytes move (padding, and the other
    fields of a multi-field view's base, stay where they are); a masked
    array's mask rolls with its data. PyTorch CPU tensors roll through a
    zero-copy numpy view.

    Different arrays may be rolled from different threads at once; one array
    must not be rolled from two threads at once, nor read while it is rolled.
    On the GPU the call is asynchronous, like any kernel launch on the stream.
    A ``torch.distributed.tensor.DTensor`` is rolled collectively by
    :func:`rotate.distributed.roll_dtensor`.

    See Also
    --------
    numpy.roll : The same result in a new array.
    rotate : std::rotate's semantics on the flattened array.
    plan : What this call would do, without doing it.
    roll_rows : A shift per 1-D lane.
    fftshift : ``roll`` by half of every axis.
    rotate.distributed.roll : An array sharded over a process group.

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
    >>> rotate.roll(m, (1, 1), axis=(0, 1))  # several axes: one pass here
    array([[3, 4, 5],
           [0, 1, 2]])

    A CuPy array (or a PyTorch CUDA tensor) rolls on the GPU, on its
    library's current stream:

    >>> import cupy as cp                                   # doctest: +SKIP
    >>> g = cp.arange(1 << 20, dtype=cp.float32)            # doctest: +SKIP
    >>> rotate.roll(g, 12345) is g                          # doctest: +SKIP
    True
    """
    key = None
    if type(a) is np.ndarray and stream is None:  # a numpy array: the host quick path, if this call ran before
        key = _host_key(a, shift, axis, None, max_scratch_bytes)
        if key is not None and _run_host_quick(a, key, max_scratch_bytes):
            return a
    elif _arrays.is_dtensor(a):  # a sharded torch tensor: a collective roll (rotate/distributed.py)
        return _dtensor_roll(a, shift, axis)
    # Validate and plan every part (a masked array's data and mask) before anything moves.
    parts = _parts(a)
    if key is not None and not (len(parts) == 1 and parts[0] is a):
        key = None
    _execute([_prepare(part, shift, axis, None, max_scratch_bytes, stream, key) for part in parts])
    _arrays.mark_written(a)
    return a


def rotate(a: Any, middle: SupportsIndex, *, stream: Any = None,
           max_scratch_bytes: Optional[SupportsIndex] = None) -> int:
    """Rotate the flattened array in place with std::rotate's semantics.

    The element at flat index ``middle`` becomes the first; the elements
    before it move to the end, order kept. Equivalent to
    ``roll(a, -middle, axis=None)``.

    Parameters
    ----------
    a : array
        As for :func:`roll`: a writeable numpy array or PyTorch CPU tensor, or
        a CUDA device array.
    middle : int
        The flat index of the element that becomes the first:
        ``0 <= middle <= a.size`` (an int, numpy integer or bool).
    stream : optional
        GPU only: the CUDA stream to run on, as for :func:`roll`.
    max_scratch_bytes : int, optional
        Upper bound on temporary memory; see :func:`plan`.

    Returns
    -------
    int
        ``a.size - middle``: the new index of the old first element
        (``a.size`` when ``middle == 0``, like std::rotate's return value).
        ``a`` itself is rotated in place.

    Raises
    ------
    TypeError
        Non-integer ``middle``, object dtype, an unsupported array type, or
        ``stream=`` with a host array.
    ValueError
        ``middle`` outside ``[0, a.size]``; a read-only array, elements that
        overlap in memory, or a layout that cannot be rotated in place.
    RuntimeError
        A device array on a machine without a usable CUDA GPU.

    Notes
    -----
    The flattened array is the array in C order; a non-C-contiguous N-D
    array whose C order is not one strided line in memory is refused with a
    ``ValueError`` (roll it along explicit axes with :func:`roll`). The same
    checks, guarantees and threading rules as :func:`roll` apply.

    See Also
    --------
    roll : numpy.roll's semantics; ``rotate(a, m)`` is ``roll(a, -m)``.
    plan : ``plan(a, middle=m)`` says what this call would do.

    Examples
    --------
    >>> import numpy as np, rotate
    >>> x = np.array([1, 2, 3, 4, 5])
    >>> rotate.rotate(x, 2)
    3
    >>> x
    array([3, 4, 5, 1, 2])
    >>> rotate.rotate(x, 0)                 # nothing moves; returns a.size
    5
    """
    key = None
    if type(a) is np.ndarray and stream is None:  # the host quick path, as for roll
        key = _host_key(a, 0, None, middle, max_scratch_bytes)
        if key is not None and _run_host_quick(a, key, max_scratch_bytes):
            return a.size - middle  # type: ignore[operator]  # an int: _host_key took it
    parts = _parts(a)
    if key is not None and not (len(parts) == 1 and parts[0] is a):
        key = None
    prepared = [_prepare(part, 0, None, middle, max_scratch_bytes, stream, key) for part in parts]
    _execute(prepared)
    _arrays.mark_written(a)
    return prepared[0][2].size - as_index(middle, "middle")


def plan(a: Any, shift: Optional[IntOrInts] = None, axis: Optional[IntOrInts] = None, *,
         middle: Optional[SupportsIndex] = None, max_scratch_bytes: Optional[SupportsIndex] = None) -> Plan:
    """Say what ``roll(a, shift, axis)`` or ``rotate(a, middle)`` would do, without doing it.

    Runs every check the call would run (so it raises the same errors) and
    returns a :class:`Plan`: the backend, the algorithm of each step, the
    scratch bytes it would allocate, the bytes it would move and, on the GPU,
    tile size, grid and block.

    Parameters
    ----------
    a : array
        As for :func:`roll`: a numpy array or PyTorch CPU tensor (CPU plan) or
        a CUDA device array (GPU plan).
    shift : int or sequence of ints, optional
        As for :func:`roll`. Give either ``shift`` or ``middle``.
    axis : int or sequence of ints, optional
        As for :func:`roll` (None: the flattened array).
    middle : int, optional
        Plan ``rotate(a, middle)`` instead; give either ``shift`` or ``middle``.
    max_scratch_bytes : int, optional
        Upper bound on temporary memory. GPU: rotation distances whose seam
        does not fit take the slower scratch-free fallback. Default: the
        larger of 1% of the array and 16 MiB (GPU; a roll whose chain needs
        more may take up to an eighth of the array instead of that
        fallback); 8 MiB on the CPU (a multi-axis roll whose blocks need
        more may take up to an eighth of the array instead of a pass per
        axis), where a bound too small for any buffered algorithm falls back
        to in-place reversals (no scratch), so every bound, 0 included, is met.

    Returns
    -------
    Plan
        ``backend`` (``"cpu"`` or ``"cuda"``), ``shape``, ``dtype`` and
        ``steps``, one :class:`Step` per pass (none when nothing moves), with
        the summaries ``algorithm``, ``scratch_bytes``, ``bytes_moved``,
        ``ideal_bytes`` and, on the GPU, ``tile_bytes``, ``grid`` and
        ``block``. The plan is the caller's copy: changing it changes nothing.

    Raises
    ------
    TypeError
        Both or neither of ``shift`` and ``middle``; any ``TypeError``
        :func:`roll` or :func:`rotate` would raise.
    ValueError
        A negative ``max_scratch_bytes``; any ``ValueError`` the call would
        raise (read-only array, overlapping elements, ``middle`` out of range,
        a layout that cannot be rolled in place).
    RuntimeError
        A device array on a machine without a usable CUDA GPU.
    numpy.exceptions.AxisError
        ``axis`` out of range.

    Notes
    -----
    A plan depends on the array's layout (shape, strides, dtype, alignment),
    the shifts, the scratch bound and the backend's settings, never on the
    data; the call itself finds the same plan in a cache. ``str(plan)``
    prints every step with its parameters. A masked array's plan holds
    the steps of its data and its mask.

    See Also
    --------
    roll, rotate : The calls this plans.
    plan_roll_rows : The plan of a :func:`roll_rows` call.
    Plan, Step : What the plan holds.

    Examples
    --------
    >>> import numpy as np, rotate
    >>> p = rotate.plan(np.zeros(1000, np.uint8), 3)
    >>> p.backend, p.bytes_moved >= p.ideal_bytes
    ('cpu', True)
    >>> rotate.plan(np.zeros(1000, np.uint8), 0).algorithm     # nothing to move
    'noop'
    >>> rotate.plan(np.zeros(1 << 20, np.uint8), middle=12345, max_scratch_bytes=0).scratch_bytes
    0
    """
    if (shift is None) == (middle is None):
        raise TypeError("plan() takes either shift (as for roll) or middle (as for rotate), not both or neither")
    plans = []
    for part in _parts(a):  # a masked array's mask is planned (and checked) with its data
        backend, _, info = _inspect(part)
        if middle is not None:
            shifts = {None: -_check_middle(middle, info.size)}
        else:
            shifts = _shift_map(info, shift, axis)
        plans.append(_make_plan(backend, info, shifts, max_scratch_bytes))
    return public_plan(_merge_plans(a, plans))


# --- internals -------------------------------------------------------------

#: Rolls DTensors collectively; rotate/distributed.py registers itself here when imported (rotate's
#: __init__ imports it), so this module never imports it (no import cycle).
_dtensor_handlers: list = []


def register_dtensor_roll(handler) -> None:
    """Let ``roll(dtensor, shift, axis)`` call ``handler(dtensor, shift, axis)``."""
    _dtensor_handlers[:] = [handler]


def _dtensor_roll(a: Any, shift: Any, axis: Any) -> Any:
    if not _dtensor_handlers:
        raise RuntimeError("rotate.distributed did not register its DTensor roll; import rotate.distributed")
    return _dtensor_handlers[0](a, shift, axis)


#
# Every public function is: _prepare (validate, plan) for each array the call
# moves, then _execute. Nothing here names a backend: the registry in
# rotate/_backends says who recognises an array, plans it and runs it.


def _parts(a: Any) -> list:
    """The arrays a call moves: a masked array's data and mask, a multi-field view's fields."""
    if type(a) is np.ndarray and a.dtype.names is None:  # the common case, without a call
        return [a]
    if not isinstance(a, np.ndarray):  # device arrays: one part (only numpy arrays have masks and fields)
        return [a]
    return _arrays.rolled_parts(a)


def public_plan(p: Plan) -> Plan:
    """A deep copy of ``p`` for the caller: the plan cache's own steps (and the tables in their
    params, which later calls execute from) are never handed out."""
    return copy.deepcopy(p)


def _merge_plans(a: Any, plans: list) -> Plan:
    """One plan for a call that moves several parts: every part's steps, a's shape and dtype."""
    if len(plans) == 1:
        return plans[0]
    return Plan(plans[0].backend, tuple(np.shape(a)), getattr(a, "dtype", plans[0].dtype),
                tuple(step for p in plans for step in p.steps))


def _inspect(a: Any):
    """Validate ``a`` and describe it: (backend, object the backend works on, ArrayInfo)."""
    host = _arrays.torch_host_view(a)  # torch CPU tensors: the CPU backend through a zero-copy numpy view
    if host is not None:
        a = host
    backend = _backends.backend_for(a)
    target, info = backend.describe(a)
    return backend, target, info


def _check_middle(middle: Any, size: int) -> int:
    middle = as_index(middle, "middle")
    if not 0 <= middle <= size:
        raise ValueError(
            f"middle must satisfy 0 <= middle <= a.size ({size}), got {middle}; "
            f"for a cyclic shift by any amount use rotate.roll(a, -middle)"
        )
    return middle


def _check_scratch(max_scratch_bytes: Any) -> Optional[int]:
    if max_scratch_bytes is None:
        return None
    max_scratch_bytes = as_index(max_scratch_bytes, "max_scratch_bytes")
    if max_scratch_bytes < 0:
        raise ValueError(f"max_scratch_bytes must be >= 0, got {max_scratch_bytes}")
    return max_scratch_bytes


def _shift_map(info, shift, axis) -> dict:
    if axis is None:  # the flattened array: shifts add up, like numpy.roll's
        return {None: sum(as_index_tuple(shift, "shift"))}
    return broadcast_shifts(shift, axis, info.ndim)


# Calls with plain int arguments (the common case in a loop) find their plan
# here by their raw arguments, skipping argument normalisation; an entry only
# exists once those exact arguments were validated. The backend's plan_key
# is checked on every hit, so a changed setting (thread count, tunables)
# plans again.
_fast_plans: dict = {}
_FAST_PLANS_MAX = 1024


# The quick path (device arrays): a call whose array a backend can describe
# cheaply (``quick_describe``: layout key, pointer, current stream) and whose
# exact arguments, layout and address went down the full path before reuses
# that call's description and plan; only the plan key (device, settings) is
# checked again. Keyed by the full address, so the ArrayInfo is reused as is;
# the same layout at a new address is described again (``_quick_layouts``
# keeps the plan, a new ArrayInfo is built).
_quick_calls: dict = {}
_quick_layouts: dict = {}


# The host quick path (issue #36): a call on a numpy array (exactly np.ndarray: no subclass, mask or
# torch tensor) with plain int arguments and no stream, whose layout and exact arguments went down the
# full path before, runs that call's cached executable: ``_host_calls[key]`` is (backend, info, plan key,
# plan, run), stored by the full path after every check passed. What the checks read is the key (shape,
# strides and dtype: object dtypes, zero itemsizes, self-overlap, the parts a call moves; the arguments)
# or is checked again on every hit: the writeable flag, and the backend's plan key (thread count, the
# tuning policy object, the scratch bound), so a changed setting plans again. A host plan never depends
# on the address (host ArrayInfo has pointer 0), so views of any buffer share an entry.
_host_calls: dict = {}


def _host_key(a: Any, shift: Any, axis: Any, middle: Any, max_scratch_bytes: Any) -> Optional[tuple]:
    """The host quick path's key for this call, or None when its arguments are not plain ints."""
    if ((type(shift) is int or _plain_ints(shift)) and (axis is None or type(axis) is int or _plain_ints(axis))
            and (middle is None or type(middle) is int)
            and (max_scratch_bytes is None or type(max_scratch_bytes) is int)):
        return (a.shape, a.strides, a.dtype, shift, axis, middle, max_scratch_bytes)
    return None


def _run_host_quick(a: Any, key: tuple, max_scratch_bytes: Any) -> bool:
    """Run a repeated host call from ``_host_calls``; False: nothing moved, take the full path."""
    hit = _host_calls.get(key)
    if hit is None or not a.flags.writeable:  # a read-only array: the full path raises its error
        return False
    backend, info, plan_key, p, run = hit
    if plan_key != backend.plan_key(info, max_scratch_bytes):  # a setting changed: plan again
        return False
    run(a)
    return True


def _remember_host(key: tuple, backend: Any, info: Any, plan_key: tuple, p: Plan) -> None:
    """Let later calls with ``key`` take the host quick path (only after the full path passed)."""
    run = getattr(backend, "executable", None)
    run = run(info, p) if run is not None else None
    if run is None:
        run = functools.partial(_run_plan, backend, info, p)
    _remember(_host_calls, key, (backend, info, plan_key, p, run))


def _run_plan(backend: Any, info: Any, p: Plan, target: Any) -> None:
    if p.steps:
        backend.execute(target, info, p, None)


def _prepare(part: Any, shift: Any, axis: Any, middle: Any, max_scratch_bytes: Any, stream: Any,
             host_key: Optional[tuple] = None):
    """Validate and plan one array: (backend, target, info, plan, resolved stream).

    ``host_key``: the host quick path's key of a call that moves ``part`` alone; once every check
    passed, the call's description, plan key and plan are remembered under it.
    """
    fast = (_plain_ints(shift) and (axis is None or _plain_ints(axis))
            and (middle is None or type(middle) is int)
            and (max_scratch_bytes is None or type(max_scratch_bytes) is int))
    quick = None
    if fast and type(part) is not np.ndarray:
        quick = _backends.quick_describe(part)
        if quick is not None:
            backend, (layout, pointer, default_stream) = quick
            args = (layout, shift, axis, middle, max_scratch_bytes)
            hit = _quick_calls.get((pointer, args))
            if hit is None:
                hit = _quick_layouts.get((pointer & 15, args))
                if hit is not None:
                    template = hit[0]
                    hit = (_arrays.ArrayInfo(template.shape, template.strides, template.dtype, template.kind,
                                             pointer, template.readonly), hit[1], hit[2])
                    _remember(_quick_calls, (pointer, args), hit)
            if hit is not None and hit[1] == backend.plan_key(hit[0], max_scratch_bytes):
                return backend, part, hit[0], hit[2], backend.quick_stream(default_stream, stream)
    backend, target, info = _inspect(part)
    if fast:
        key = (backend.name, info.shape, info.strides, info.dtype, info.pointer % 16, shift, axis, middle,
               max_scratch_bytes)
        hit = _fast_plans.get(key)
        if hit is not None and hit[0] == backend.plan_key(info, max_scratch_bytes):
            resolved = backend.resolve_stream(target, stream)
            if quick is not None and target is part and info.pointer == pointer:
                _remember_quick(pointer, args, (info, hit[0], hit[1]))
            if host_key is not None and target is part:
                _remember_host(host_key, backend, info, hit[0], hit[1])
            return backend, target, info, hit[1], resolved
    scratch = _check_scratch(max_scratch_bytes)
    if middle is not None:
        shifts = {None: -_check_middle(middle, info.size)}
    else:
        shifts = _shift_map(info, shift, axis)
    plan_key = backend.plan_key(info, scratch)
    p = _cached_plan(backend, (info.shape, info.strides, info.dtype, info.kind, info.pointer % 16),
                     tuple(sorted(shifts.items(), key=repr)), scratch, plan_key)
    resolved = backend.resolve_stream(target, stream)
    if fast:
        _remember(_fast_plans, key, (plan_key, p))
        if quick is not None and target is part and info.pointer == pointer:
            _remember_quick(pointer, args, (info, plan_key, p))
        if host_key is not None and target is part:
            _remember_host(host_key, backend, info, plan_key, p)
    return backend, target, info, p, resolved


def _plain_ints(value: Any) -> bool:
    """An int, or a tuple of ints (multi-axis rolls, fftshift): arguments a cached plan can be keyed on."""
    if type(value) is int:
        return True
    if type(value) is not tuple:
        return False
    for v in value:  # a loop, not all() over a generator: half the time for two or three axes
        if type(v) is not int:
            return False
    return True


def _remember_quick(pointer: int, args: tuple, entry: tuple) -> None:
    """Let later calls with these arguments take the quick path (only after the full path passed)."""
    _remember(_quick_calls, (pointer, args), entry)
    _remember(_quick_layouts, (pointer & 15, args), entry)


def _remember(cache: dict, key, value) -> None:
    if len(cache) >= _FAST_PLANS_MAX:
        cache.clear()
    cache[key] = value


def _make_plan(backend, info, shifts: dict, max_scratch_bytes: Any) -> Plan:
    scratch = _check_scratch(max_scratch_bytes)
    return _cached_plan(backend, (info.shape, info.strides, info.dtype, info.kind, info.pointer % 16),
                        tuple(sorted(shifts.items(), key=repr)), scratch,
                        backend.plan_key(info, scratch))


def lanes_step(backend, info, axis: int, scratch: Optional[int]):
    """``roll_rows``' step from the one plan cache, for a backend whose lane step depends on the layout, the
    axis, the scratch bound and its plan key only (``plan_lane_layout``); None: nothing moves."""
    p = _cached_plan(backend, (info.shape, info.strides, info.dtype, info.kind, info.pointer % 16),
                     ("lanes", axis), scratch, backend.plan_key(info, scratch))
    return p.steps[0] if p.steps else None


@functools.lru_cache(maxsize=256)
def _cached_plan(backend, layout_key, shift_items, max_scratch_bytes, plan_key) -> Plan:
    # Plans depend on the layout (the address only through its offset from a
    # 16-byte boundary, which decides the GPU's tile grid), the shifts and
    # plan_key (everything else the backend's planner reads), never on the data.
    shape, strides, dtype, kind, head = layout_key
    info = _arrays.ArrayInfo(shape, strides, dtype, kind, pointer=head)
    if shift_items[:1] == ("lanes",):  # roll_rows on a backend whose lane step reads the layout alone
        step = backend.plan_lane_layout(info, shift_items[1], max_scratch_bytes)
        return Plan(backend.name, info.shape, info.dtype, () if step is None else (step,))
    shifts = dict(shift_items)
    if None in shifts:
        rotations = axis_rotations(info, None, shifts[None])
    else:
        rotations = axis_rotations(info, shifts, None)
    if not rotations:
        return Plan(backend.name, info.shape, info.dtype, ())
    return Plan(backend.name, info.shape, info.dtype, backend.plan_steps(info, rotations, max_scratch_bytes))


def _execute(prepared: list) -> None:
    for backend, target, info, p, stream in prepared:
        if p.steps:
            backend.execute(target, info, p, stream)
