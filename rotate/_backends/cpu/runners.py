"""The CPU runners: each ``params`` type's runner (``ROW_RUNNERS``), the scratch they share, and
``rotate_rows_inplace`` / ``roll_strided`` (plan, then run).
"""

from __future__ import annotations

import numpy as np

from . import team as _team
from ..._core.arrays import host_span
from ..._core.plan import Step
from .kernels import (_chain_lanes_pre, _chain_lanes_walk, _chain_rows_serial, _chain_rows_spread,
                      _register_rows_run, _roll_strided_words, _rotate_register_rows, _rotate_rows_lanes,
                      _rotate_rows_serial, _rotate_segment_lanes, _rotate_small_rows, _rotate_small_rows_serial,
                      _rotate_word_rows, _rotate_word_rows_serial)
from .params import (ChainLanesParams, ChainRowsParams, ChainSerialParams, RegisterRowsParams, RowsLanesParams,
                     RowsParams, RowsReversalParams, RowsSerialParams, SegmentLanesParams, SmallRowsParams,
                     SmallRowsSerialParams, StridedParams, WordRowsParams, WordRowsSerialParams)
from .planner import _ops_array, plan_rows_params, plan_strided_params

def rotate_rows_inplace(buf: np.ndarray, rows: int, seg: int, k: int, max_scratch_bytes=None) -> None:
    """Rotate each of ``rows`` consecutive segments of ``buf`` left by ``k``, in place.

    Plans with :func:`plan_rows_params` and runs that plan with :func:`run_rows`.

    Parameters
    ----------
    buf : numpy.ndarray
        1-D, C-contiguous, writeable, dtype uint8/16/32/64, ``len(buf) == rows * seg``.
    rows : int
        Number of segments, >= 1.
    seg : int
        Words per segment, >= 2.
    k : int
        ``0 < k < seg``; afterwards ``new_seg[i] == old_seg[(i + k) % seg]``.
    max_scratch_bytes : int, optional
        The caller's scratch bound (tightens ``scratch_bytes``).
    """
    rows, seg, k = int(rows), int(seg), int(k)
    word = buf.itemsize
    name, scratch, moved, params = plan_rows_params(rows, seg, k, word, max_scratch_bytes)
    run_rows(buf, Step(None, 0, rows, seg * word, k * word, word, name, scratch, moved, params=params))


class _WordSpan:
    """Exposes the memory span of an array as a flat word array (keeps the array alive)."""

    def __init__(self, owner, address: int, words: int, word: int):
        self._owner = owner
        self.__array_interface__ = {
            "version": 3,
            "shape": (words,),
            "typestr": "<u%d" % word,
            "data": (address, False),
        }


def roll_strided(a: np.ndarray, shift: int, axis, max_scratch_bytes=None) -> None:
    """``a[...] = numpy.roll(a, shift, axis)`` in place, for any strides and fixed-size dtype.

    Plans with :func:`plan_strided_params` and runs that plan with :func:`run_strided`.

    Parameters
    ----------
    a : numpy.ndarray
        Writeable, ndim >= 1, any strides (also negative), any dtype without
        Python objects.  Its elements must not overlap each other in memory.
    shift : int
        ``0 < shift < a.shape[axis]``; positive moves elements to larger indices.
    axis : int or None
        Non-negative axis index; None rolls the C-order line of a view whose
        C order is one strided line (``rotate._core.arrays.c_order_line``).
    max_scratch_bytes : int, optional
        The caller's scratch bound (tightens ``scratch_bytes``).
    """
    shift = int(shift)
    if a.size == 0:
        return
    name, scratch, moved, params = plan_strided_params(a.shape, a.strides, a.itemsize, shift, axis,
                                                       max_scratch_bytes)
    length = params.layout[1]
    run_strided(a, Step(axis, shift, a.size // length, length * a.itemsize, (length - shift) * a.itemsize,
                        a.itemsize, name, scratch, moved, strided=True, params=params))


_WORDS = {w: np.dtype(f"u{w}") for w in (1, 2, 4, 8)}


def scratch_array(words: int, dtype: np.dtype) -> np.ndarray:
    """The one place the runners allocate scratch (tests poison it and count it)."""
    return np.empty(words, dtype)


def word_view(a: np.ndarray, word: int) -> np.ndarray:
    """``a``'s memory (C- or F-contiguous) as a flat array of ``word``-byte unsigned words."""
    flat = a.reshape(-1, order="A").view(_WORDS[word])
    if not np.may_share_memory(flat, a):  # a copy would silently lose the result
        raise AssertionError("internal error: contiguous view of a was a copy")
    return flat


# Runners that never enter a parallel region: safe under every threading layer
# and in a forked child as they are, so they take neither the lock nor a twin.


def run_rows(buf: np.ndarray, step) -> None:
    """Run a contiguous ``Step`` planned by :func:`plan_rows_params` (or another module's planner that
    registered its params type in ``ROW_RUNNERS``) on the word buffer ``buf``."""
    word = step.word_bytes
    if buf.itemsize != word:
        raise AssertionError(f"internal error: step planned for {word}-byte words, buffer has {buf.itemsize}")
    run = ROW_RUNNERS.get(type(step.params))
    if run is None:
        raise AssertionError(f"internal error: no CPU runner for {type(step.params).__name__}")
    run(buf, step, step.params)


def _run_reversal(buf: np.ndarray, step, p: RowsReversalParams) -> None:
    # no scratch fits the bound: the rows as a strided grid, reversed in place
    _run_strided_params(buf.reshape(step.rows, step.seg_bytes // step.word_bytes), p.strided)


def _rows_scratch(buf: np.ndarray, p: RowsParams) -> np.ndarray:
    return scratch_array(p.scratch_words, buf.dtype)  # none for word rows, but allocated (and counted) alike


def _run_word_rows(buf: np.ndarray, step, p) -> None:
    # each row one word, bit-rotated
    _rows_scratch(buf, p)
    rows, word = step.rows, step.word_bytes
    rows_buf = buf[:rows * (step.seg_bytes // word)].view(_WORDS[p.row_word])
    bits, r = 8 * p.row_word, 8 * word * (step.left_bytes // word)
    if type(p) is WordRowsParams:
        _team.run(_rotate_word_rows, p.lanes, p.lanes, rows_buf, rows, r, bits, p.lanes)
    else:
        _rotate_word_rows_serial(rows_buf, rows, r, bits)


def _run_register_rows(buf: np.ndarray, step, p: RegisterRowsParams) -> None:
    _rows_scratch(buf, p)  # none needed, but allocated (and counted) as every runner does
    data = buf[:step.rows * (step.seg_bytes // step.word_bytes)].view(np.uint8)
    if p.lanes > 1:
        _team.run(_rotate_register_rows, p.lanes, p.lanes, data, step.rows, p.row_bytes, step.left_bytes, p.lanes)
    else:
        _register_rows_run(data, 0, step.rows, p.row_bytes, step.left_bytes)


def _chain_bytes(buf: np.ndarray, step):
    return buf[:step.rows * (step.seg_bytes // step.word_bytes)].view(np.uint8)


def _run_chain_serial(buf: np.ndarray, step, p: ChainSerialParams) -> None:
    # byte positions: the GPU schedule's hooks
    scratch = _rows_scratch(buf, p)
    _chain_rows_serial(_chain_bytes(buf, step), step.rows, step.seg_bytes, step.left_bytes, p.tile_bytes, p.ring,
                       p.table, scratch.view(np.uint8), p.scratch_row, p.alias_slack, p.direct)


def _run_chain_rows(buf: np.ndarray, step, p: ChainRowsParams) -> None:
    # each lane its own rows, pre-read spans and ring
    scratch = _rows_scratch(buf, p)
    _team.run(_chain_rows_spread, p.lanes, p.lanes, _chain_bytes(buf, step), step.rows, step.seg_bytes,
              step.left_bytes, p.tile_bytes, p.ring, p.table, scratch.view(np.uint8), p.scratch_row, p.alias_slack,
              p.lanes, p.direct)


def _run_chain_lanes(buf: np.ndarray, step, p: ChainLanesParams) -> None:
    # lanes that share nothing: every row's pre-reads, then its lanes, no waits
    scratch = _rows_scratch(buf, p).view(np.uint8)
    data, n, lanes = _chain_bytes(buf, step), step.seg_bytes, p.lanes
    for row in range(step.rows):
        _team.run(_chain_lanes_pre, lanes, lanes, data, row * n, n, p.tile_bytes, p.table, scratch, p.scratch_row,
                  lanes)
        _team.run(_chain_lanes_walk, lanes, lanes, data, row * n, n, step.left_bytes, p.tile_bytes, p.ring, p.table,
                  scratch, p.scratch_row, p.alias_slack, p.lane_steps, p.direct)


def _run_small_rows(buf: np.ndarray, step, p: RowsParams) -> None:
    scratch = _rows_scratch(buf, p)
    rows, word = step.rows, step.word_bytes
    seg, k = step.seg_bytes // word, step.left_bytes // word
    if type(p) is SmallRowsSerialParams:
        _rotate_small_rows_serial(buf, rows, seg, k, scratch)
    else:
        _team.run(_rotate_small_rows, p.lanes, p.lanes, buf, rows, seg, k, scratch, p.lanes, p.lane_scratch)


def _run_ops_rows(buf: np.ndarray, step, p: RowsParams) -> None:
    scratch = _rows_scratch(buf, p)
    rows, seg, ops = step.rows, step.seg_bytes // step.word_bytes, _ops_array(p.ops)
    if type(p) is RowsSerialParams:
        _rotate_rows_serial(buf, rows, seg, ops, scratch, p.tile)
    elif type(p) is RowsLanesParams:
        _team.run(_rotate_rows_lanes, p.lanes, p.lanes, buf, rows, seg, ops, scratch, p.lanes, p.lane_scratch,
                  p.tile)
    else:
        for r in range(rows):
            _rotate_segment_lanes(buf, r * seg, ops, scratch, p.lanes, p.tile)


#: The runner of each contiguous step's params type: ``run(buf, step, params)``. rotate/_backends/cpu/lanes.py
#: registers its multi-axis runner, so this module never imports it (no import cycle).
ROW_RUNNERS: dict = {
    RowsReversalParams: _run_reversal,
    WordRowsParams: _run_word_rows,
    WordRowsSerialParams: _run_word_rows,
    RegisterRowsParams: _run_register_rows,
    ChainSerialParams: _run_chain_serial,
    ChainRowsParams: _run_chain_rows,
    ChainLanesParams: _run_chain_lanes,
    SmallRowsParams: _run_small_rows,
    SmallRowsSerialParams: _run_small_rows,
    RowsSerialParams: _run_ops_rows,
    RowsLanesParams: _run_ops_rows,
    SegmentLanesParams: _run_ops_rows,
}


def run_strided(a: np.ndarray, step) -> None:
    """Run a strided ``Step`` planned by :func:`plan_strided_params` on ``a`` (its shape and strides)."""
    _run_strided_params(a, step.params)


def _run_strided_params(a: np.ndarray, p: StridedParams) -> None:
    # The layout's word grid addresses a's elements from a's first element;
    # the span below only has to cover them (an axis=None line included).
    if a.size == 0:
        return
    word, n_rows, s, n_cols, t, outer_shape, outer_strides = p.layout
    address, low, high = host_span(a)
    flat = np.asarray(_WordSpan(a, low, (high - low) // word, word))
    scratch = scratch_array(p.lanes * p.lane_scratch, flat.dtype)
    _team.run(_roll_strided_words, p.lanes, p.lanes, flat, (address - low) // word, n_rows, s, p.k, n_cols, t,
              p.batch, np.array(outer_shape, dtype=np.int64), np.array(outer_strides, dtype=np.int64), p.mode,
              scratch, p.lanes, p.lane_scratch)
