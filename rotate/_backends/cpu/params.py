"""The CPU steps' parameters: one frozen dataclass a kind of step, which ``runners.ROW_RUNNERS`` maps to
its runner.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from ..._core.plan import INTERNAL, Params

@dataclass(frozen=True, eq=False)
class StridedParams(Params):
    """``roll_strided``'s plan: ``layout`` (word, rows, row stride, columns, column stride, outer shape,
    outer strides; strides in words), the rows' left rotation ``k``, ``mode``, the column ``batch``,
    ``lanes`` and their scratch (words)."""

    CONSTANTS = (("runner", "strided"),)
    layout: tuple
    k: int
    mode: int
    batch: int
    lanes: int
    lane_scratch: int
    threads: int
    max_scratch_bytes: Optional[int]


@dataclass(frozen=True, eq=False)
class RowsParams(Params):
    """What every contiguous-rows runner reads: ``lanes``, scratch (words: all of it, and a lane's),
    the ``tile`` (words), the schedule ``ops`` (``(kind, a, b, c, chunks)``, for the ops runners),
    numba's thread count when planned and the caller's bound (None: the tuning's)."""

    lanes: int
    scratch_words: int
    tile: int
    threads: int
    max_scratch_bytes: Optional[int]
    lane_scratch: int
    ops: tuple


@dataclass(frozen=True, eq=False)
class RowsSerialParams(RowsParams):
    """One lane runs the ops (buffered shift, block swaps) row by row."""

    CONSTANTS = (("runner", "rows-serial"),)


@dataclass(frozen=True, eq=False)
class RowsLanesParams(RowsParams):
    """Many rows: each lane runs the ops on its own rows."""

    CONSTANTS = (("runner", "rows"),)


@dataclass(frozen=True, eq=False)
class SegmentLanesParams(RowsParams):
    """Few long rows: every lane takes a part of each row's ops."""

    CONSTANTS = (("runner", "segment"),)


@dataclass(frozen=True, eq=False)
class SmallRowsParams(RowsParams):
    """Short rows copied twice into a lane's scratch row, the window written back; rows over lanes."""

    CONSTANTS = (("runner", "small-rows"),)


@dataclass(frozen=True, eq=False)
class SmallRowsSerialParams(RowsParams):
    """``small-rows`` on one lane."""

    CONSTANTS = (("runner", "small-rows-serial"),)


@dataclass(frozen=True, eq=False)
class RegisterRowsParams(RowsParams):
    """Rows of 3-64 bytes (``row_bytes``; not 4 or 8) rotated in registers, no scratch; rows over lanes
    (one lane: called directly, no team)."""

    CONSTANTS = (("runner", "register-rows"),)
    row_bytes: int


@dataclass(frozen=True, eq=False)
class WordRowsParams(RowsParams):
    """Rows of one ``row_word``-byte word each, bit-rotated in a register; rows over lanes."""

    CONSTANTS = (("runner", "word-rows"),)
    row_word: int


@dataclass(frozen=True, eq=False)
class WordRowsSerialParams(RowsParams):
    """``word-rows`` on one lane."""

    CONSTANTS = (("runner", "word-rows-serial"),)
    row_word: int


@dataclass(frozen=True, eq=False)
class RowsChainParams(RowsParams):
    """The GPU's chain schedule (``rotate._schedules.chain``): tiles of ``tile_bytes`` in chain order, the bytes
    pre-read into ``scratch_row``-byte rows of scratch first (``table``: the plan table)."""

    tile_bytes: int
    chain_step: int
    lane_steps: int
    direct: bool
    ring: int
    pre_read_bytes: int
    alias_slack: int
    table: np.ndarray = field(metadata=INTERNAL)
    scratch_row: int = field(metadata=INTERNAL)


@dataclass(frozen=True, eq=False)
class ChainSerialParams(RowsChainParams):
    """One lane walks every row in chain order."""

    CONSTANTS = (("runner", "chain-serial"),)


@dataclass(frozen=True, eq=False)
class ChainLanesParams(RowsChainParams):
    """Each row's chain positions cut into one run a lane: pre-reads, then the lanes' walks."""

    CONSTANTS = (("runner", "chain-lanes"),)


@dataclass(frozen=True, eq=False)
class ChainRowsParams(RowsChainParams):
    """Many long rows: each lane walks its own rows, with its own pre-reads and ring."""

    CONSTANTS = (("runner", "chain-rows"),)


@dataclass(frozen=True, eq=False)
class RowsReversalParams(RowsParams):
    """No scratch fits the bound: the rows as a (rows x seg) word grid rolled by ``strided``'s plan
    (three in-place reversals)."""

    CONSTANTS = (("runner", "reversal"),)
    strided: StridedParams
