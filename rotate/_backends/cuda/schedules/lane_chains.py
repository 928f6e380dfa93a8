"""``lane-chains``: ``roll_rows`` of a few huge lanes with host shifts, one chain launch per run of equal
shifts (each planned through the one-shift schedules).
"""

from __future__ import annotations

import collections
from dataclasses import dataclass
from typing import Optional

import numpy as np

from ...._core.plan import Params, Step
from .. import device as D
from .. import registry as REG


@dataclass(frozen=True, eq=False)
class LaneChainsParams(Params):
    """``lane-chains``: a few huge lanes with host shifts, one planned chain step a run of equal shifts."""

    CONSTANTS = (("schedule", "lane-chains"),)
    max_scratch_bytes: Optional[int]
    launches: int
    runs: tuple  # (first lane, end lane, Step)
    head0: int
    reason: str


#: lane-chains' run steps by sub-problem: host shifts are planned on every roll_rows call (they are read per
#: call, not part of a cached plan's key), and a huge lane's chain step costs 0.2-3 s to plan (plan tables
#: of 1-6 GiB lanes), which a repeated call would otherwise pay each time.
_chain_runs: collections.OrderedDict = collections.OrderedDict()


MAX_CHAIN_RUNS = 16  # a 6 GiB lane's step holds about 8 MB of plan table


def _chain_run(s: int, lanes: int, n: int, itemsize: int, head: int, max_scratch_bytes: Optional[int]) -> Step:
    """``plan_step`` for ``lanes`` lanes of ``n`` items at 16-byte offset ``head``, rolled by ``s``: the one
    planned before for the same problem, policy and device, else a new one."""
    device = D._device_id()
    key = (s, lanes, n, itemsize, head, max_scratch_bytes, D.policy(), device, D.device_shape(device),
           D.device_capability(device), D.cooperative_launch())
    step = _chain_runs.get(key)
    if step is not None:
        _chain_runs.move_to_end(key)
    else:
        seg = n * itemsize
        step = _chain_runs[key] = REG.plan_step(None, s, lanes, seg, (n - s) * itemsize, itemsize, head,
                                            max_scratch_bytes)
        while len(_chain_runs) > MAX_CHAIN_RUNS:
            _chain_runs.popitem(last=False)
    return step


def plan_lane_chains(axis: int, rows: int, n: int, itemsize: int, pointer: int,
                     max_scratch_bytes: Optional[int], host_shifts) -> Step:
    """``roll_rows`` of a few huge lanes with host shifts: one chain launch per run of lanes with equal
    shifts, each spread over the whole GPU (see the tuning's max_chain_lanes). Every run's chain step is planned here,
    from the shifts (``params.runs``: first lane, end lane, Step); the launcher runs them as given."""
    seg = n * itemsize
    shifts = np.asarray(host_shifts, np.int64) % n
    runs = []
    lane = 0
    while lane < rows:
        end = lane + 1
        while end < rows and shifts[end] == shifts[lane]:
            end += 1
        s = int(shifts[lane])
        if s:
            runs.append((lane, end, _chain_run(s, end - lane, n, itemsize, (pointer + lane * seg) % 16,
                                               max_scratch_bytes)))
        lane = end
    return Step(
        axis, 0, rows, seg, 0, itemsize,
        algorithm="lane-chains",
        scratch_bytes=max((sub.scratch_bytes for _, _, sub in runs), default=0),
        # lanes rolled by 0 are counted as read and written once, as every roll_rows plan counts them
        bytes_moved=sum(sub.bytes_moved for _, _, sub in runs) + 2 * seg * (rows - sum(e - b for b, e, _ in runs)),
        params=LaneChainsParams(
            max_scratch_bytes=max_scratch_bytes,
            launches=len(runs),
            runs=tuple(runs),
            head0=pointer % 16,
            reason=f"at most {D.policy().max_chain_lanes} lanes of {D.policy().min_chain_lane_bytes >> 20} MiB or "
                   f"more, shifts on the host: one chain launch per run of equal shifts uses the whole GPU, where "
                   f"lane-swaps would give each lane one block",
        ),
    )


def plan_long(axis: int, rows: int, n: int, itemsize: int, pointer: int, max_scratch_bytes: Optional[int],
              host_shifts) -> Optional[Step]:
    """The long-lane registry's entry: at most ``max_chain_lanes`` lanes of ``min_chain_lane_bytes`` or more
    with host shifts, else None."""
    T = D.policy()
    if host_shifts is not None and rows <= T.max_chain_lanes and n * itemsize >= T.min_chain_lane_bytes:
        return plan_lane_chains(axis, rows, n, itemsize, pointer, max_scratch_bytes, host_shifts)
    return None


RUNS = {LaneChainsParams: REG.run_sub_steps}
