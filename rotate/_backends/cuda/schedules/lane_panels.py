"""``lane-panels``: ``roll_rows`` of lanes that fit a block's shared memory, panels of whole lanes in one
launch (the panel kernel, or its ``warps`` variant).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional


from ...._schedules import chain as S
from ...._core.plan import Params, Step, internal
from .. import device as D
from .. import runtime as R


@dataclass(frozen=True, eq=False)
class LanePanelsParams(Params):
    """``lane-panels``, the panel variant (``kernels.panels.panel_kernel``): panels of whole lanes in shared memory."""

    CONSTANTS = (("schedule", "lane-panels"), ("co_resident", False))  # lanes are disjoint: no block waits
    block: int
    grid: int
    panel_rows: int
    buffers: int
    writer: str
    row_threads: int
    unit_bytes: int
    smem_bytes: int
    head0: int
    buf_vecs: int = internal()
    n: int = internal()


@dataclass(frozen=True, eq=False)
class LaneWarpsParams(Params):
    """``lane-panels``, the warps variant (``kernels.panels.warp_lane_kernel``): a group of threads a lane."""

    CONSTANTS = (("schedule", "lane-panels"), ("variant", "warps"), ("co_resident", False))
    block: int
    grid: int
    slots: int
    min_blocks: int
    lane_threads: int
    writer: str
    smem_bytes: int
    head0: int
    slot_vecs: int = internal()
    n: int = internal()


def plan_lane_panels(axis: int, rows: int, n: int, itemsize: int, pointer: int) -> Optional[Step]:
    """``roll_rows`` of ``rows`` back-to-back lanes of ``n`` items: panels of whole lanes, one launch.

    None when one lane and its staging do not fit a block's shared memory
    (lanes longer than about 226 KiB): those take ``plan_long_lanes``.
    """
    T = D.policy()  # the policy, resolved once for the whole search
    from ..kernels import panels as K

    seg = n * itemsize
    head0 = pointer % 16
    unit = D.lane_unit(itemsize, head0)
    short = "windows" if seg >= 16 and unit <= T.max_window_unit else "gather"
    writer = D.lane_writer("runs" if seg >= K.FAST_GATHER_ROW else short)
    if writer == "runs" or T.lane_writer is None:  # the warps variant writes runs
        step = _plan_lane_warps(axis, rows, n, itemsize, head0)
        if step is not None:
            return step
    # The run writer's loops take 96 registers: big panels and wide blocks keep bytes in flight at one
    # block an SM (docs/tuning.md, `cuda.run_panel_bytes`); the gather writer streams at 48.
    threads = T.lane_threads or (T.run_threads if writer == "runs" else T.default_lane_threads)
    panel_bytes = T.panel_bytes or (T.run_panel_bytes if writer == "runs" else T.default_panel_bytes)
    panel_rows = max(1, min(T.max_panel_rows, panel_bytes // seg, rows))
    for buffers in (2, 1):  # two panels in flight per block if a lane allows, else one
        windows = writer == "windows"
        while panel_rows > 1 and K.panel_smem_bytes(panel_rows * seg, panel_rows, buffers, windows) > T.max_lane_smem:
            panel_rows //= 2
        smem = K.panel_smem_bytes(panel_rows * seg, panel_rows, buffers, windows)
        if smem <= T.max_lane_smem:
            break
    else:
        return None
    panels = S.ceil_div(rows, panel_rows)
    sms, _ = D.device_shape(D._device_id())
    grid = T.grid or sms * D.blocks_for_smem(smem, threads, T.run_registers if writer == "runs" else 0)
    row_threads = 0
    if writer == "runs":
        row_threads = T.row_threads or group_threads(threads, panel_rows)
        if row_threads < 1 or threads % row_threads:
            raise ValueError(f"GPU setting row_threads must divide the block's {threads} threads, got "
                             f"{row_threads!r}; use a power of two up to {threads}, or None")
    return _lane_panels_step(axis, rows, n, itemsize, LanePanelsParams(
        block=threads, grid=max(1, min(grid, panels)), panel_rows=panel_rows, buffers=buffers, writer=writer,
        row_threads=row_threads, unit_bytes=unit, smem_bytes=smem, head0=head0,
        buf_vecs=K.buffer_vecs(panel_rows * seg), n=n))


def _lane_panels_step(axis: int, rows: int, n: int, itemsize: int, params) -> Step:
    """A ``lane-panels`` step (either variant): every lane read once and written once, no scratch; lanes
    are disjoint, so no block waits for another."""
    return Step(axis, 0, rows, n * itemsize, 0, itemsize, algorithm="lane-panels", scratch_bytes=0,
                bytes_moved=2 * rows * n * itemsize, params=params)


def warp_group_threads(seg: int) -> int:
    """Threads that stage and write one lane of ``seg`` bytes in the ``warps`` variant: a quarter warp up to
    1 KiB, a half warp up to 2 KiB, a warp beyond. Measured on the H200 (device time, 1 GiB of float32
    lanes, docs/results/gpu-rows-lane-groups-*-h200.json): 1 KiB lanes 0.74 ms with 8 threads, 0.84 with
    16, 1.11 with 32; 2 KiB lanes 0.59 ms with 16, 0.65 with 8, 0.67-0.72 with 32; 4 KiB lanes 0.56-0.57
    ms with 32, 0.60 with 16. A short lane leaves a warp's 32 threads a few vectors each behind the same
    per-lane work (barriers, seam, two runs' setup); a long one gives a small group too few bytes in
    flight."""
    if seg <= 1024:
        return 8
    return 16 if seg <= 2048 else 32


def _plan_lane_warps(axis: int, rows: int, n: int, itemsize: int, head0: int) -> Optional[Step]:
    """``lane-panels``' ``warps`` variant (``kernels.panels.warp_lane_kernel``) where the tuning's ``lane_warps``
    takes it for lanes of ``n * itemsize`` bytes; else None."""
    from ..kernels import panels as K

    seg = n * itemsize
    choice = D.policy().lane_warps
    if choice is False or seg < 16 or (choice is None and not D.policy().warp_lane_min_bytes <= seg <= D.policy().warp_lane_bytes):
        return None
    threads = D.policy().lane_threads or (D.policy().warp_threads if seg <= 4096 else D.policy().warp_threads_long)
    slots = D.policy().warp_slots or D.policy().default_warp_slots
    min_blocks = D.policy().warp_min_blocks or 0
    group = D.policy().warp_lane_threads or warp_group_threads(seg)
    if threads % 32 or not 32 <= threads <= 1024:
        if choice is None:  # a block size set for the panel kernel: that kernel takes the lanes
            return None
        raise ValueError(f"GPU setting lane_threads must be a multiple of 32 up to 1024 for lane-panels' warps "
                         f"variant, got {threads!r}")
    if slots not in range(2, K.MAX_WARP_SLOTS + 1):
        raise ValueError(f"GPU setting warp_slots must be 2 to {K.MAX_WARP_SLOTS} or None, got {slots!r}")
    if group not in K.WARP_GROUPS:
        raise ValueError(f"GPU setting warp_lane_threads must be one of {', '.join(map(str, K.WARP_GROUPS))} "
                         f"or None, got {group!r}")
    smem = K.warp_smem_bytes(seg, threads, slots, group)
    if smem > D.policy().max_lane_smem:
        return None
    groups = threads // group
    sms, _ = D.device_shape(D._device_id())
    registers = 65536 // (threads * min_blocks) if min_blocks else D.policy().run_registers
    grid = D.policy().grid or sms * D.blocks_for_smem(smem, threads, registers)
    return _lane_panels_step(axis, rows, n, itemsize, LaneWarpsParams(
        block=threads, grid=max(1, min(grid, S.ceil_div(rows, groups))), slots=slots, min_blocks=min_blocks,
        lane_threads=group, writer="runs", smem_bytes=smem, head0=head0, slot_vecs=K.warp_slot_vecs(seg), n=n))


def group_threads(threads: int, panel_rows: int) -> int:
    """Threads of a group that writes one lane of a ``lane-panels`` panel with the run writer.

    Groups of at least the tuning's min_row_threads, as many as the panel has lanes (the
    largest such power-of-two split of ``threads``). Not balanced: 24 lanes
    of 4 KiB in a 512-thread block get 16 groups of 32, so half the groups
    idle through the second round; groups of 64 would take three full rounds
    (not measured; the tuning's ``row_threads`` forces a
    size for that A/B).
    """
    size = threads
    while size // 2 >= D.policy().min_row_threads and size % 2 == 0 and threads // size < panel_rows:
        size //= 2
    return size


def run_lane_panels(target: Any, info, step, handle: int, shifts: Any, shift_stride: int, p: Any = None) -> None:
    """Launch one ``lane-panels`` step: lane ``i`` rolled by ``shifts[i * shift_stride]`` (int64, on the device).
    ``p``: the lane-panels params (a ``row-panels`` step's ``params.lanes``), else the step's."""
    p = step.params if p is None else p
    if info.pointer % 16 != p.head0:
        raise AssertionError("internal error: a lane-panels plan run on an array at another 16-byte offset")
    if isinstance(p, LaneWarpsParams):
        _run_lane_warps(target, info, step, p, handle, shifts, shift_stride)
        return
    unit = p.unit_bytes
    scalars = (step.rows, step.seg_bytes, p.n, step.word_bytes // unit, shift_stride, p.panel_rows, p.head0,
               p.buf_vecs, p.buffers)
    compiled = R._compiled_lanes("panel", unit, p.block, 11, D._device_id(), row_threads=p.row_threads,
                                 windows=p.writer == "windows")
    R.launch_lane_kernel(compiled, target, info, step, p, handle, shifts, scalars)


def _run_lane_warps(target: Any, info, step, p: LaneWarpsParams, handle: int, shifts: Any,
                    shift_stride: int) -> None:
    """Launch a ``lane-panels`` step of the ``warps`` variant (``kernels.panels.warp_lane_kernel``)."""
    scalars = (step.rows, step.seg_bytes, p.n, step.word_bytes, shift_stride, p.head0, p.slot_vecs)
    compiled = R._compiled_lanes("warps", 1, p.block, 9, D._device_id(), p.slots, p.min_blocks, group=p.lane_threads)
    R.launch_lane_kernel(compiled, target, info, step, p, handle, shifts, scalars)


LANE_RUNS = {LanePanelsParams: run_lane_panels, LaneWarpsParams: run_lane_panels}
