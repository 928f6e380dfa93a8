"""Backends: who recognises an array, plans its steps and runs them.

``rotate/_api.py`` knows no backend by name. It asks the registry which
backend recognises the array (:func:`backend_for`), lets that backend
describe it, keys the plan cache with the backend's :meth:`Backend.plan_key`,
plans through :meth:`Backend.plan_steps` and runs the plan with
:meth:`Backend.execute`. Adding a backend (HIP, say) is a new module here
plus one :func:`register` call; the API does not change.

The protocol
------------
``name``
    The plan's ``backend`` string (``"cpu"``, ``"cuda"``).
``device_kind``
    Where the memory lives; becomes ``ArrayInfo.kind``.
``recognizes(a) -> bool``
    Cheap, and must not import heavy modules for arrays it does not take.
``describe(a) -> (target, ArrayInfo)``
    Array-level checks (read-only, dtype) and the layout the planner reads;
    ``target`` is what ``execute`` works on (a view, an interface object).
``plan_key(info, max_scratch_bytes) -> tuple``
    Everything the planner reads besides the layout and the shifts (device
    and its SM count, thread count, budgets, tunables). Plans are cached
    under it, so a plan never outlives a setting it depends on.
``plan_steps(info, rotations, max_scratch_bytes) -> tuple[Step, ...]``
    The steps of one call; ``RowBackend`` builds them from ``plan_step``.
``resolve_stream(target, stream)``
    The stream the call runs on; raises for a stream the backend cannot use.
    Called while validating, before anything moves.
``execute(target, info, plan, stream)``
    Runs exactly ``plan.steps`` (never plans again) on the resolved stream.

``plan_lanes(target, info, shifts, axis, max_scratch_bytes) -> (Step | None, lane_shifts)``
    ``roll_rows``: the backend's own checks of the lanes' layout and of
    ``shifts`` (host or device), and the step; ``lane_shifts`` is whatever
    its ``execute_lanes`` takes. None: nothing moves.
``execute_lanes(target, info, step, stream, lane_shifts)``
    Runs that step exactly as planned.
``lane_shifts(target, info, shifts, axis)`` and ``plan_lane_layout(info, axis, max_scratch_bytes)``
    Optional, together: a backend whose lane step never reads the shifts'
    values splits ``plan_lanes`` in two, and ``roll_rows`` takes the step
    from the one plan cache (keyed by the layout, the axis, the bound and
    ``plan_key``) and converts the shifts per call.
``warmup(function, dtype, calls)``
    ``rotate.warmup``: makes ``function``'s representative calls on this
    backend's arrays of ``dtype``; ``calls`` maps the public functions' names
    to them (handed down: no backend imports the API).
``release_scratch() -> int``
    ``rotate.release_scratch``: frees what the backend keeps between calls.

Optional, for the quick path of repeated calls (issue #8):

``quick_describe(a) -> (layout_key, pointer, default_stream) | None``
    Cheap: a key that determines ``describe(a)``'s ArrayInfo apart from the
    pointer, the pointer, and the stream ``resolve_stream(a, None)`` would
    give. None sends the call down the full path. The API runs the full
    path (every check) the first time a key is seen and reuses its
    description, plan and stream rules after that.
``quick_stream(default_stream, stream)``
    ``resolve_stream`` for a quick call: ``default_stream`` when ``stream``
    is None.

Optional, for the host quick path of repeated numpy calls (issue #36):

``executable(info, plan) -> callable(a) | None``
    ``plan`` bound to a callable that runs it on any writeable array of
    ``info``'s layout (the checks passed when the plan was made), with
    whatever it can prepare once prepared here. None: the API runs the plan
    through ``execute``.
"""

from __future__ import annotations

from typing import Any, Optional

from .base import Backend, RowBackend

__all__ = ["Backend", "RowBackend", "register", "backend_for", "backends", "backend_named",
           "quick_describe"]


_registry: list = []


def register(backend: Backend, *, before: Optional[str] = None) -> None:
    """Add ``backend`` to the registry (at the end, or before the backend named ``before``)."""
    if any(b.name == backend.name for b in _registry):
        raise ValueError(f"a backend named {backend.name!r} is already registered")
    index = len(_registry)
    if before is not None:
        index = next(i for i, b in enumerate(_registry) if b.name == before)
    _registry.insert(index, backend)
    _quick[:] = [b for b in _registry if getattr(b, "quick_describe", None) is not None]


_quick: list = []  # the registered backends that have quick_describe, in registry order


def quick_describe(a: Any):
    """``(backend, (layout_key, pointer, default_stream))`` from the first backend whose
    ``quick_describe`` takes ``a``; None when none does."""
    for b in _quick:
        described = b.quick_describe(a)
        if described is not None:
            return b, described
    return None


def backends() -> tuple:
    """The registered backends, in the order they are asked."""
    return tuple(_registry)


def backend_named(name: str) -> Backend:
    for b in _registry:
        if b.name == name:
            return b
    raise KeyError(f"no backend named {name!r}; registered: {[b.name for b in _registry]}")


def backend_for(a: Any) -> Backend:
    """The first registered backend that recognises ``a``; TypeError when none does."""
    for b in _registry:
        if b.recognizes(a):
            return b
    raise TypeError(
        f"a must be a numpy array or a CUDA device array (numba, CuPy, PyTorch, or "
        f"anything with __cuda_array_interface__ or DLPack), got {type(a).__name__}; "
        f"for lists use numpy.asarray first"
    )


from .cpu.backend import CpuBackend  # noqa: E402  (after the registry they join)
from .cuda.backend import CudaBackend  # noqa: E402

register(CpuBackend())  # numpy arrays first: the cheapest check
register(CudaBackend())
