"""The backend protocol and the row-rotation base class (see rotate/_backends/__init__.py).

Separate from the registry so that the backends import this module, never
the package that registers them: no import cycle.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Optional, Protocol, runtime_checkable

from .._core.arrays import ArrayInfo
from .._core.plan import Plan, Step, contiguous_steps


@runtime_checkable
class Backend(Protocol):
    name: str
    device_kind: str

    def recognizes(self, a: Any) -> bool: ...

    def describe(self, a: Any) -> tuple[Any, ArrayInfo]: ...

    def plan_key(self, info: ArrayInfo, max_scratch_bytes: Optional[int]) -> tuple: ...

    def plan_steps(self, info: ArrayInfo, rotations: list, max_scratch_bytes: Optional[int]) -> tuple[Step, ...]: ...

    def resolve_stream(self, target: Any, stream: Any) -> Any: ...

    def execute(self, target: Any, info: ArrayInfo, plan: Plan, stream: Any) -> None: ...

    def plan_lanes(self, target: Any, info: ArrayInfo, shifts: Any, axis: int,
                   max_scratch_bytes: Optional[int]) -> tuple[Optional[Step], Any]: ...

    def execute_lanes(self, target: Any, info: ArrayInfo, step: Step, stream: Any, lane_shifts: Any) -> None: ...

    def warmup(self, function: str, dtype: Any, calls: Mapping[str, Callable]) -> None:
        """Make ``function``'s representative calls on ``dtype`` arrays of this backend (``rotate.warmup``;
        ``calls`` holds the public functions by name)."""
        ...

    def release_scratch(self) -> int:
        """Free the scratch this backend keeps between calls; the bytes released (``rotate.release_scratch``)."""
        ...


class RowBackend:
    """A backend that rolls contiguous layouts as batched row rotations.

    Subclasses implement ``plan_step``; layouts that are not C- or
    F-contiguous go to ``plan_noncontiguous``, which by default refuses them.
    """

    name = "?"
    device_kind = "?"

    def plan_step(self, info: ArrayInfo, axis: Optional[int], shift: int, rows: int, seg_bytes: int,
                  left_bytes: int, word: int, max_scratch_bytes: Optional[int]) -> Step:
        raise NotImplementedError

    def plan_steps(self, info: ArrayInfo, rotations: list, max_scratch_bytes: Optional[int]) -> tuple[Step, ...]:
        layout = contiguous_steps(info, rotations)
        if layout is None:
            return self.plan_noncontiguous(info, rotations, max_scratch_bytes)
        return tuple(
            self.plan_step(info, axis, s, rows, seg, left, word, max_scratch_bytes)
            for axis, s, rows, seg, left, word in layout
        )

    def plan_lanes(self, target: Any, info: ArrayInfo, shifts: Any, axis: int, max_scratch_bytes: Optional[int]):
        raise TypeError(f"roll_rows is not available for {self.device_kind} arrays (the {self.name} backend "
                        f"plans no per-lane shifts); roll each lane with rotate.roll instead")

    def execute_lanes(self, target: Any, info: ArrayInfo, step: Step, stream: Any, lane_shifts: Any) -> None:
        raise NotImplementedError(f"the {self.name} backend runs no per-lane shifts")

    def warmup(self, function: str, dtype: Any, calls: Mapping[str, Callable]) -> None:
        """Nothing to compile ahead (a backend whose kernels compile on first use overrides this)."""

    def release_scratch(self) -> int:
        return 0  # nothing kept between calls

    def plan_noncontiguous(self, info: ArrayInfo, rotations: list, max_scratch_bytes: Optional[int]):
        raise ValueError(
            f"a is a non-contiguous {self.device_kind} array (shape {info.shape}, strides "
            f"{info.strides}); the {self.name} backend rolls C- or F-contiguous arrays in "
            f"place. Roll a contiguous array instead (e.g. x = a.copy(); roll(x, ...); "
            f"a[...] = x), or roll the contiguous base array"
        )
