"""The backend protocol and the row-rotation base class (see rotate/_backends/__init__.py).

Separate from the registry so that the backends import this module, never
the package that registers them: no import cycle.
"""

from __future__ import annotations

from typing import Any, Optional, Protocol, runtime_checkable

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

    def plan_noncontiguous(self, info: ArrayInfo, rotations: list, max_scratch_bytes: Optional[int]):
        raise ValueError(
            f"a is a non-contiguous {self.device_kind} array (shape {info.shape}, strides "
            f"{info.strides}); the {self.name} backend rolls C- or F-contiguous arrays in "
            f"place. Roll a contiguous array instead (e.g. x = a.copy(); roll(x, ...); "
            f"a[...] = x), or roll the contiguous base array"
        )
