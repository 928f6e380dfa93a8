"""``row-panels``, ``row-walks``, ``row-swaps``: a roll with one shift for every row run by a ``roll_rows``
kernel (the shift read from a one-element device array).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Optional, Union

from ...._core.plan import Params, Step, internal
from .. import device as D
from .. import registry as REG
from .. import runtime as R
from . import lane_panels
from . import lane_swaps
from . import lane_walks


@dataclass(frozen=True, eq=False)
class RowLanesParams(Params):
    """``row-panels``, ``row-walks`` or ``row-swaps``: every row rolled by one shift through a ``roll_rows``
    kernel (``lanes``: its params, the shift read from a one-element device array)."""

    lanes: Union[lane_panels.LanePanelsParams, lane_panels.LaneWarpsParams, lane_walks.LaneWalksParams,
                 lane_swaps.LaneSwapsParams]
    shift: int = internal()  # in items, numpy.roll's direction

    @property
    def schedule(self) -> str:
        if isinstance(self.lanes, (lane_panels.LanePanelsParams, lane_panels.LaneWarpsParams)):
            return "row-panels"
        return "row-walks" if isinstance(self.lanes, lane_walks.LaneWalksParams) else "row-swaps"

    def shown(self):
        yield ("schedule", self.schedule)
        for name, value in self.lanes.shown():
            if name != "schedule":
                yield name, value

    def as_details(self) -> dict:
        return {**self.lanes.as_details(), "schedule": self.schedule, "_shift": self.shift}


def plan_row_panels(axis, shift, rows, seg, left, word, pointer, cap) -> Optional[Step]:
    """Many rows shorter than a chain tile: ``lane-panels`` (the ``roll_rows`` kernel) with one shift.

    The chain kernel would make each such row an item of its own, with the
    per-item cost of a whole tile (a (2**20, 1000) uint8 roll ran at 2.5% of
    memcpy); lane-panels packs many rows into each panel (15% for those rows:
    docs/results/small-rows-32a60ab-h200.json).
    """
    if rows < 2 or seg >= D.policy().tile_bytes:
        return None
    step = lane_panels.plan_lane_panels(axis, rows, seg // word, word, pointer)
    if step is None:
        return None
    return _row_lanes_step(step, shift, seg, left, word)


def _row_lanes_step(lane_step: Step, shift: int, seg: int, left: int, word: int) -> Step:
    """A ``roll_rows`` step of the rows (one shift for every lane) as a roll step: the lanes' kernel and
    params, rolled by ``(seg - left) // word`` items."""
    params = RowLanesParams(lane_step.params, (seg - left) // word)
    return dataclasses.replace(lane_step, shift=shift, left_bytes=left, algorithm=params.schedule, params=params)


def plan_row_lanes(axis, shift, rows, seg, left, word, pointer, cap) -> Optional[Step]:
    """Many long rows that neither the chain (its pre-reads pass ``cap``) nor block swaps (more than
    ``max_swap_rows`` rows, or too many passes) take: the ``roll_rows`` kernels, every row rolled by the
    same shift (``lane-panels`` where a row fits a block's shared memory, else ``lane-walks`` or
    ``lane-swaps``). Each block rotates whole rows by itself within ``cap``; ``reversal``, the fallback it
    stands before, moves 4N (twice a copy's traffic: at best half of memcpy's speed)."""
    if rows < 2 or seg % word:
        return None
    n = seg // word
    step = lane_panels.plan_lane_panels(axis, rows, n, word, pointer)
    if step is None:
        step = REG.plan_long_lanes(axis, rows, n, word, pointer, cap)
        p = step.params
        if isinstance(p, lane_swaps.LaneSwapsParams) and min(left, seg - left) <= p.save_bytes:
            # one shift for every row, its small side saved whole: one streamed pass, 2N exactly
            step = dataclasses.replace(step, bytes_moved=2 * rows * seg,
                                       params=dataclasses.replace(p, bytes_moved_is_bound=False))
    return _row_lanes_step(step, shift, seg, left, word)


def run_row_lanes(target: Any, info, step, handle: int) -> None:
    """A ``row-panels``, ``row-walks`` or ``row-swaps`` step: every row rolled by the same shift through the
    ``roll_rows`` kernel its params hold."""
    p = step.params
    REG.LANE_RUNNERS[type(p.lanes)](target, info, step, handle, R._shift_scalar(D._device_id(), p.shift), 0,
                                p.lanes)


RUNS = {RowLanesParams: run_row_lanes}
