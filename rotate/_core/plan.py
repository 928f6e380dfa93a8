"""One plan object for every backend: what a call will do before it does it.

A roll decomposes into *steps*. Each step rotates ``rows`` back-to-back
segments of ``seg_bytes`` bytes left by ``left_bytes`` (a roll along axis
``k`` of a C-contiguous array is exactly that, with one segment per index of
the axes before ``k``), or, for a strided host array, rolls one axis of a
strided view. Backends plan and run steps; the public functions only
validate, plan and execute.
"""

from __future__ import annotations

import types
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar, Iterator, Optional

import numpy as np

from .arrays import ArrayInfo
from .validate import prod, word_view_params


def _same(a: Any, b: Any) -> bool:
    """Equality of plan values, tables (numpy arrays) compared by dtype, shape and contents."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.dtype == b.dtype
                and a.shape == b.shape and bool(np.array_equal(a, b)))
    if isinstance(a, Params) or isinstance(b, Params):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return bool(a == b)


#: ``field(metadata=INTERNAL)``: a value the runner reads that ``plan()`` does not print (tables,
#: derived sizes); ``Step.details`` names it with a leading underscore.
INTERNAL = types.MappingProxyType({"internal": True})


def internal() -> Any:
    """A params field (``dataclasses.field``) the runner reads and ``plan()`` does not print."""
    return field(metadata=INTERNAL)


@dataclass(frozen=True, eq=False)
class Params:
    """An algorithm's parameters: everything its runner reads, fixed when the step is planned.

    Each algorithm has a frozen subclass; a backend's runners are looked up by
    that type, so a step runs as planned and nothing is planned again.
    ``CONSTANTS`` are the ``(name, value)`` pairs every step of the type
    shares (the GPU's ``schedule`` name, the CPU's ``runner``), shown with the
    fields.
    """

    CONSTANTS: ClassVar[tuple] = ()

    def shown(self) -> Iterator[tuple[str, Any]]:
        """``(name, value)`` of the constants and fields ``plan()`` prints, in order (params inside
        params as their dicts)."""
        yield from self.CONSTANTS
        for f in fields(self):
            if not f.metadata.get("internal"):
                yield f.name, _as_value(getattr(self, f.name))

    def as_details(self) -> dict:
        """Everything as one dict: the constants, the fields, internal ones as ``_name``, params inside
        params as their dicts."""
        out = dict(self.CONSTANTS)
        for f in fields(self):
            out[("_" if f.metadata.get("internal") else "") + f.name] = _as_value(getattr(self, f.name))
        return out

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(_same(getattr(self, f.name), getattr(other, f.name)) for f in fields(self))

    __hash__ = None  # type: ignore[assignment]  # tables are numpy arrays


def _as_value(value: Any) -> Any:
    return value.as_details() if isinstance(value, Params) else value


@dataclass(frozen=True, eq=False)
class Step:
    """One batched in-place rotation.

    Attributes
    ----------
    axis : int or None
        The array axis this step rolls (None: the flattened array).
    shift : int
        numpy.roll shift along that axis, reduced to ``0 < shift < length``.
    rows, seg_bytes, left_bytes : int
        ``rows`` consecutive segments of ``seg_bytes`` bytes, each rotated
        left by ``left_bytes`` (``new[i] = old[(i + left) % seg]``).
    word_bytes : int
        The unsigned word width (1, 2, 4, 8) the CPU kernels move.
    algorithm : str
        The backend algorithm chosen for this step.
    scratch_bytes : int
        Temporary memory the step allocates or reuses.
    bytes_moved : int
        Bytes read plus bytes written (array and scratch); the ideal is
        ``2 * rows * seg_bytes``.
    strided : bool
        True when the step rolls a non-contiguous host view.
    params : Params
        The algorithm's parameters, one frozen type per algorithm (GPU:
        tile_bytes, grid, block, ...); the backend runs the step from them.
    shift_copy_bytes : int
        ``roll_rows``: bytes of host shifts copied first because they share
        memory with the array (0 when none were).
    """

    axis: Optional[int]
    shift: int
    rows: int
    seg_bytes: int
    left_bytes: int
    word_bytes: int
    algorithm: str
    scratch_bytes: int
    bytes_moved: int
    strided: bool = False
    params: Params = field(default_factory=Params)
    shift_copy_bytes: int = 0

    @property
    def details(self) -> dict:
        """The parameters as one dict (a fresh copy): ``params.as_details()``, internal values under
        ``_name``, and ``shift_copy_bytes`` when shifts were copied."""
        out = self.params.as_details()
        if self.shift_copy_bytes:
            out["shift_copy_bytes"] = self.shift_copy_bytes
        return out

    @property
    def ideal_bytes(self) -> int:
        """Read once, write once: ``2 * rows * seg_bytes``."""
        return 2 * self.rows * self.seg_bytes

    def __eq__(self, other: object) -> bool:
        # Field by field, as a dataclass would, but tables in params compare by value (a plan handed to a
        # caller is a copy of the cached one: its arrays are equal, not the same objects).
        if type(other) is not Step:
            return NotImplemented
        return all(_same(getattr(self, f.name), getattr(other, f.name)) for f in fields(self))

    __hash__ = None  # type: ignore[assignment]  # params hold tables: a Step was never hashable


@dataclass(frozen=True)
class Plan:
    """What :func:`rotate.roll` or :func:`rotate.rotate` will do to an array.

    Build one with :func:`rotate.plan`. ``backend`` is ``"cpu"`` or
    ``"cuda"``; ``steps`` is empty when the call moves nothing (zero shift,
    empty or single-element arrays).
    """

    backend: str
    shape: tuple[int, ...]
    dtype: np.dtype
    steps: tuple[Step, ...]

    @property
    def algorithm(self) -> str:
        """The algorithms used, in step order (``"noop"`` when nothing moves)."""
        names: list[str] = []
        for step in self.steps:
            if step.algorithm not in names:
                names.append(step.algorithm)
        return "+".join(names) if names else "noop"

    @property
    def scratch_bytes(self) -> int:
        """The most temporary memory any step uses (steps run one after another)."""
        return max((s.scratch_bytes for s in self.steps), default=0)

    @property
    def bytes_moved(self) -> int:
        """Bytes read plus written over all steps."""
        return sum(s.bytes_moved for s in self.steps)

    @property
    def ideal_bytes(self) -> int:
        """Read once, write once: the bytes a perfect in-place roll moves."""
        return sum(s.ideal_bytes for s in self.steps)

    @property
    def tile_bytes(self) -> Optional[int]:
        """GPU: the tile size in bytes of the first step that has one (None on the CPU)."""
        return self._detail("tile_bytes")

    @property
    def grid(self) -> Optional[int]:
        """GPU: the grid, in blocks, of the first step that has one (None on the CPU)."""
        return self._detail("grid")

    @property
    def block(self) -> Optional[int]:
        """GPU: the threads a block of the first step that has one (None on the CPU)."""
        return self._detail("block")

    def _detail(self, key: str) -> Any:
        for step in self.steps:
            details = step.details
            if key in details:
                return details[key]
        return None

    def __str__(self) -> str:
        lines = [
            f"Plan(backend={self.backend!r}, shape={self.shape}, dtype={self.dtype}, "
            f"algorithm={self.algorithm!r}, scratch_bytes={self.scratch_bytes}, "
            f"bytes_moved={self.bytes_moved}, ideal_bytes={self.ideal_bytes})"
        ]
        for s in self.steps:
            extra = "".join(f", {k}={v}" for k, v in s.params.shown())
            if s.shift_copy_bytes:
                extra += f", shift_copy_bytes={s.shift_copy_bytes}"
            lines.append(
                f"  step axis={s.axis} shift={s.shift}: {s.algorithm}, rows={s.rows}, "
                f"seg_bytes={s.seg_bytes}, left_bytes={s.left_bytes}, "
                f"scratch_bytes={s.scratch_bytes}, bytes_moved={s.bytes_moved}{extra}"
            )
        return "\n".join(lines)


def axis_rotations(info: ArrayInfo, shifts: Optional[dict[int, int]], flat_shift: Optional[int]):
    """Reduce numpy.roll shifts to ``(axis, length, shift)`` with ``0 < shift < length``.

    ``axis`` is None for a roll of the flattened array.
    """
    if flat_shift is not None:
        n = info.size
        s = flat_shift % n if n else 0
        return [(None, n, s)] if s else []
    out = []
    shifts = shifts or {}
    for axis in sorted(shifts):
        length = info.shape[axis]
        if length == 0 or info.size == 0:
            continue
        s = shifts[axis] % length
        if s:
            out.append((axis, length, s))
    return out


def contiguous_steps(info: ArrayInfo, rotations):
    """Yield ``(axis, shift, rows, seg_bytes, left_bytes, word)`` for contiguous layouts.

    Returns None when the layout needs the strided path. An F-contiguous
    array rolled along explicit axes is its own transpose, which is
    C-contiguous, so it takes the contiguous path too.
    """
    word = word_view_params(info.itemsize)
    shape = info.shape
    if rotations and rotations[0][0] is None:
        if not info.c_contiguous:
            return None
        _, n, s = rotations[0]
        return [(None, s, 1, n * info.itemsize, (n - s) * info.itemsize, word)]
    if info.c_contiguous:
        c_axis = lambda a: a  # noqa: E731
    elif info.f_contiguous:
        shape = shape[::-1]
        c_axis = lambda a: info.ndim - 1 - a  # noqa: E731
    else:
        return None
    out = []
    for axis, length, s in rotations:
        k = c_axis(axis)
        rows = prod(shape[:k])
        inner = prod(shape[k + 1 :]) * info.itemsize
        out.append((axis, s, rows, length * inner, (length - s) * inner, word))
    return out
