"""The GPU schedules' parameters: one frozen type a schedule (or kernel variant), fixed by the planner.

``rotate/_cuda/planner.py`` fills them; ``rotate/_cuda/launch.py`` looks its
runner up by the type and launches exactly what they say. Fields marked
``INTERNAL`` are read by the launcher but not printed by ``plan()``
(``Step.details`` shows them as ``_name``). Host-only: no numba here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional, Union

import numpy as np

from .._plan import INTERNAL, Params


def _internal() -> Any:
    return field(metadata=INTERNAL)


@dataclass(frozen=True, eq=False)
class ChainParams(Params):
    """``chain``: the flag-chained persistent kernel (``_kernels.chain_kernel``), one pass plus pre-reads."""

    CONSTANTS = (("schedule", "chain"),)
    tile_bytes: int
    block: int  # the data threads and the control warps
    control_warp: bool
    pipeline: bool
    bulk_store: bool
    decode: str
    buffers: int
    min_blocks: int
    grid: int
    chain_step: int
    lane_steps: int
    lanes: int
    pre_read_bytes: int
    head0: int  # the rows' offset from a 16-byte boundary, which the table's tile grid is cut for
    # False: every wait is on an earlier (lane, step), any residency finishes; True: waits on earlier
    # (step, lane) keys, one block a lane, launched cooperatively (all resident).
    co_resident: bool
    table: np.ndarray = _internal()
    scratch_row: int = _internal()
    heads: int = _internal()
    lanes_row: int = _internal()
    m_max: int = _internal()
    pre_row: int = _internal()


@dataclass(frozen=True, eq=False)
class BlockSwapParams(Params):
    """``block-swap``: Gries-Mills swaps (``_kernels.swap_kernel``) until the chain's pre-reads fit, then a
    chain step a row (one planned per 16-byte offset a row can start at)."""

    tile_bytes: int
    block: int
    grid: int
    swaps: tuple
    final: tuple  # (lo, sub_n, sub_k): the sub-problem the final chain step rotates
    final_steps: dict = _internal()  # row start % 16 -> the chain Step
    reason: str


@dataclass(frozen=True, eq=False)
class ReversalParams(Params):
    """``reversal``: three in-place reversals (``_kernels.reverse_kernel``), no scratch, 4N."""

    block: int
    grid: int
    reason: str


@dataclass(frozen=True, eq=False)
class LanePanelsParams(Params):
    """``lane-panels``, the panel variant (``_lanes.panel_kernel``): panels of whole lanes in shared memory."""

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
    buf_vecs: int = _internal()
    n: int = _internal()


@dataclass(frozen=True, eq=False)
class LaneWarpsParams(Params):
    """``lane-panels``, the warps variant (``_lanes.warp_lane_kernel``): a group of threads a lane."""

    CONSTANTS = (("schedule", "lane-panels"), ("variant", "warps"), ("co_resident", False))
    block: int
    grid: int
    slots: int
    min_blocks: int
    lane_threads: int
    writer: str
    smem_bytes: int
    head0: int
    slot_vecs: int = _internal()
    n: int = _internal()


@dataclass(frozen=True, eq=False)
class RowLanesParams(Params):
    """``row-panels``, ``row-walks`` or ``row-swaps``: every row rolled by one shift through a ``roll_rows``
    kernel (``lanes``: its params, the shift read from a one-element device array)."""

    lanes: Union[LanePanelsParams, LaneWarpsParams, "LaneWalksParams", "LaneSwapsParams"]
    shift: int = _internal()  # in items, numpy.roll's direction

    @property
    def schedule(self) -> str:
        if isinstance(self.lanes, (LanePanelsParams, LaneWarpsParams)):
            return "row-panels"
        return "row-walks" if isinstance(self.lanes, LaneWalksParams) else "row-swaps"

    def shown(self):
        yield ("schedule", self.schedule)
        for name, value in self.lanes.shown():
            if name != "schedule":
                yield name, value

    def as_details(self) -> dict:
        return {**self.lanes.as_details(), "schedule": self.schedule, "_shift": self.shift}


@dataclass(frozen=True, eq=False)
class HalfSwapsParams(Params):
    """``half-swaps`` (``_halfswap.half_swap_kernel``): every rolled axis by half its length, disjoint swaps."""

    CONSTANTS = (("schedule", "half-swaps"), ("co_resident", False))  # no block waits for another
    block: int
    grid: int
    vecs: int
    group: int
    rows_per_item: int
    chunk_bytes: int
    items: int
    chunks_per_half: int
    lead: tuple
    lead_shifts: tuple


@dataclass(frozen=True, eq=False)
class RowStripsParams(Params):
    """``row-strips`` (``_strips``): after a flat pass, bytes ``strip`` of every row moved a row."""

    CONSTANTS = (("schedule", "row-strips"), ("co_resident", False))  # no block waits for another
    block: int
    grid: int
    vecs: int
    items: int
    chunks: int
    chunk_rows: int
    rows: int
    pitch: int
    strip: tuple
    up: bool
    v_lo: int
    vectors: int


@dataclass(frozen=True, eq=False)
class LaneWalksParams(Params):
    """``lane-walks`` (``_lanes.walk_kernel``): a block walks each of its lanes in chain order, one pass."""

    # A block rotates whole lanes by itself: no block waits for another.
    CONSTANTS = (("schedule", "lane-walks"), ("launches", 1), ("bytes_moved_is_bound", True),
                 ("co_resident", False),
                 ("reason", "lanes longer than a block's shared memory: a block walks each of its lanes in chain "
                            "order (one pass), pre-reading into its share of scratch or, over it, the launch's "
                            "pool; block swaps for a lane whose pre-reads fit neither"))
    block: int
    grid: int
    smem_bytes: int
    tile_bytes: tuple  # the smallest and largest tile a lane may take
    buffers: int
    max_tiles: int
    min_blocks: int
    share_bytes: int
    pool_bytes: int
    save_bytes: int
    panel_bytes: int
    head0: int
    n: int = _internal()


@dataclass(frozen=True, eq=False)
class LaneSwapsParams(Params):
    """``lane-swaps`` (``_lanes.swap_kernel``): a block per lane, block swaps then one streamed pass."""

    CONSTANTS = (("schedule", "lane-swaps"),)
    block: int
    grid: int
    smem_bytes: int
    panel_bytes: int
    save_bytes: int
    head0: int
    launches: int
    bytes_moved_is_bound: bool
    co_resident: bool
    reason: str
    n: int = _internal()


@dataclass(frozen=True, eq=False)
class LaneChainsParams(Params):
    """``lane-chains``: a few huge lanes with host shifts, one planned chain step a run of equal shifts."""

    CONSTANTS = (("schedule", "lane-chains"),)
    max_scratch_bytes: Optional[int]
    launches: int
    runs: tuple  # (first lane, end lane, Step)
    head0: int
    reason: str


@dataclass(frozen=True, eq=False)
class ColumnPanelsParams(Params):
    """``column-panels`` (``_columns``): ``roll_rows`` along an axis that is not contiguous, a strip of every
    lane's rows a block (in shared memory, or ``staged`` in the block's slot of scratch)."""

    CONSTANTS = (("schedule", "column-panels"), ("co_resident", False))  # strips are disjoint: no block waits
    block: int
    grid: int
    staged: bool
    outer: int  # blocks of rows (the axes before the rolled one)
    pitch: int  # bytes from one item of a lane to the next
    strip_bytes: int  # the widest strip of a row a block takes
    word_bytes: int  # rows are read and written in these
    unit_bytes: int  # a lane's bytes are moved in these
    unroll: int  # words a thread loads before it stores them
    smem_bytes: int
    reason: str
    tile_rows: int  # staged: rows of the strip a tile in shared memory holds
    lanes_per_row: int = _internal()


@dataclass(frozen=True, eq=False)
class _RowCyclesParams(Params):
    """What both ``row-cycles`` kernels read: a multi-axis roll in one pass, segments of row cycles."""

    block: int
    grid: int
    segments: int
    cut_segments: int
    pre_read_rows: int
    piece_rows: int
    smem_bytes: int
    blocks_per_sm: int
    first_rows: str
    head0: int
    lead: tuple
    lead_shifts: tuple
    row_shift_bytes: int
    co_resident: bool  # False: every wait is on an earlier ticket (a pre-read)
    table: np.ndarray = _internal()
    slot: int = _internal()
    pre_bytes: int = _internal()


@dataclass(frozen=True, eq=False)
class RowCyclesParams(_RowCyclesParams):
    """``row-cycles``, ``three-rows`` (``_lanes.cycle_kernel``): a saved first row and two row buffers."""

    CONSTANTS = (("schedule", "row-cycles"), ("variant", "three-rows"))
    unit_bytes: int
    writer: str
    buf_vecs: int = _internal()


@dataclass(frozen=True, eq=False)
class RowCyclesChunkedParams(_RowCyclesParams):
    """``row-cycles``, ``chunked`` (``_lanes.cycle_stream_kernel``): the saved first row and a ring of chunks."""

    CONSTANTS = (("schedule", "row-cycles"), ("variant", "chunked"))
    chunk_bytes: int
    ring: int
    chunks_per_row: int
    ring_vecs: int = _internal()
    saved_vecs: int = _internal()


__all__ = ["ChainParams", "BlockSwapParams", "ReversalParams", "LanePanelsParams", "LaneWarpsParams",
           "RowLanesParams", "HalfSwapsParams", "RowStripsParams", "LaneWalksParams", "LaneSwapsParams",
           "LaneChainsParams", "ColumnPanelsParams", "RowCyclesParams", "RowCyclesChunkedParams"]
