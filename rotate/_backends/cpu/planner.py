"""The CPU planner: which schedule rotates ``rows`` segments of ``seg`` words by ``k`` (or rolls a
strided array), its lanes, scratch and traffic, as the ``params`` types the runners execute.
"""

from __future__ import annotations

import functools
import math
import sys
import time
from typing import Any

import numpy as np

from ..._schedules import chain as S
from ..._schedules import free_lanes
from .tuning import current as _T
from .kernels import _SHIFT, _STRIDED_REVERSAL, _STRIDED_SHIFT, _SWAP, _SWAP_SHIFT
from .params import (ChainLanesParams, ChainRowsParams, ChainSerialParams, RegisterRowsParams, RowsLanesParams,
                     RowsParams, RowsReversalParams, RowsSerialParams, SegmentLanesParams, SmallRowsParams,
                     SmallRowsSerialParams, StridedParams, WordRowsParams, WordRowsSerialParams)
from .threads import _lanes, num_threads, usable_threads

def _alias_slack(tile_bytes):
    """Spare scratch bytes chain-serial keeps to place its ring (tiles of at least the tuning's ``alias_slack``).

    The plan passes it to the kernel, which places the ring only where it has a page to spare
    (``_ring_offset`` is below 4096): the kernel never reads the tuning itself.
    """
    return _T().alias_slack if tile_bytes >= _T().alias_slack else 0


def _budget(max_scratch_bytes) -> int:
    """The scratch bound in force: the module's, tightened by the caller's."""
    if max_scratch_bytes is None:
        return _T().scratch_bytes
    return min(_T().scratch_bytes, int(max_scratch_bytes))


def _segment_schedule(seg: int, k: int, shift_cap: int, chunks_wanted: int, tile: int = 0):
    """Gries--Mills reduction of a left rotation of ``seg`` by ``k`` to a buffered shift.

    Returns a list of ops ``(kind, a, b, c, chunks)``:
    ``(_SWAP, i, j, m, 0)`` swaps words ``[i, i+m)`` and ``[j, j+m)``;
    ``(_SHIFT, lo, n, k, chunks)`` rotates ``[lo, lo+n)`` left by ``k`` with a
    buffered shift split into ``chunks`` pieces;
    ``(_SWAP_SHIFT, lo, n, k, lanes)`` (only when ``tile`` is given) does the last
    swap and the shift after it in one pass.
    """
    ops = []
    lo, n = 0, seg
    while 0 < k < n:
        d = min(k, n - k)
        if d <= shift_cap:
            ops.append((_SHIFT, lo, n, k, max(1, min(chunks_wanted, n // d))))
            break
        e = abs(n - 2 * k)
        if tile and 0 < e and e + min(tile, d) <= shift_cap:
            tile_eff = min(tile, d)
            n_tiles = -(-d // tile_eff)
            lanes = max(1, min(chunks_wanted, n_tiles))
            tiles_per_lane = -(-n_tiles // lanes)
            if tiles_per_lane * tile_eff < e:  # every lane but the last must cover its seam
                lanes = max(1, d // (-(-e // tile_eff) * tile_eff))
                tiles_per_lane = -(-n_tiles // lanes)
            lanes = -(-n_tiles // tiles_per_lane)  # drop lanes that would get no pairs
            ops.append((_SWAP_SHIFT, lo, n, k, lanes))
            break
        if k <= n - k:
            # [A | B_l | B_r] with |B_r| = |A|: swap A, B_r -> A is final at the end.
            ops.append((_SWAP, lo, lo + n - k, k, 0))
            n -= k
        else:
            # [A_l | A_r | B] with |A_l| = |B|: swap A_l, B -> B is final at the front.
            m = n - k
            ops.append((_SWAP, lo, lo + k, m, 0))
            lo += m
            n -= m
            k -= m
    return ops


def _schedule_cost(ops, tile: int, swap_lanes: int):
    """(scratch words, words moved) of one segment's schedule."""
    scratch = 0
    moved = 0
    for kind, _a, b, c, chunks in ops:
        if kind == _SWAP:
            m = c
            n_tiles = -(-m // tile)
            scratch = max(scratch, min(swap_lanes, n_tiles) * min(tile, m))
            moved += 6 * m  # array: read+write both blocks; tile: write+read one
        elif kind == _SWAP_SHIFT:
            n, k, lanes = b, c, chunks
            d = min(k, n - k)
            e = n - 2 * d
            scratch = max(scratch, lanes * (e + min(tile, d)))
            moved += 6 * d + 2 * lanes * e + 2 * e
        else:
            n, k = b, c
            d = min(k, n - k)
            scratch = max(scratch, chunks * d)
            moved += 2 * n + 2 * chunks * d
    return scratch, moved


def _aliasing(distance_bytes: int, window: int = 16) -> bool:
    """Whether a forward copy whose destination lies ``distance_bytes`` after its source suffers 4 KiB
    aliasing: destination 1-15 bytes ahead of the source modulo 4096 made a 16 KiB copy 7-8x slower on
    this host (each load waits for a store it does not depend on); 0 and 16 or more did not
    (``benchmarks/probes/cpu_aliasing.py``). The chain's straight copies, streaming from memory, pass
    ``window=32``: 16-31 bytes ahead ran a 256 MiB roll at 3.6-3.7x copyto, 32 and more at 0.92-1.02x."""
    return 1 <= distance_bytes % 4096 < window


def _ops_alias(ops, itemsize: int) -> bool:
    """Whether a block-swap schedule's copies from one part of the row to another alias (``_aliasing``):
    a swap's middle copy, a fused swap-shift's direct copy, a buffered shift's forward move."""
    for kind, a, b, c, _ in ops:
        if kind == _SWAP and _aliasing((a - b) * itemsize):
            return True
        if kind in (_SWAP_SHIFT, _SHIFT) and _aliasing(-c * itemsize):
            return True
    return False


def _plan_rows(rows: int, seg: int, k: int, itemsize: int, max_scratch_bytes=None):
    """Decide how to rotate within the scratch bound; returns (name, scratch_words, words_moved, runner)."""
    budget = _budget(max_scratch_bytes)
    for max_lanes in (None, 1):  # fewer lanes need less scratch
        plan = _plan_rows_lanes(rows, seg, k, itemsize, budget, max_lanes)
        if plan[1] * itemsize <= budget:
            # Block swaps: the one-pass chain schedule instead. Measured on this 2-core host,
            # 256 MiB (docs/tuning.md, "CPU: the chain"): one thread, swaps 1.0-4.8x np.copyto,
            # the chain 0.9-1.1x; two threads, swaps 0.8-2.9x (the fused pass moves word by word).
            # A rotation by exactly half stays one swap (every byte read and written once already).
            # Swaps whose copies alias at 4 KiB (float64 n/2 + 1: 1.6-2.0x copyto on two
            # threads, the chain 1.0x on one) take the chain too: its ring is placed.
            swaps = plan[0].startswith("block-swap")
            single_swap = swaps and len(plan[3][3]) == 1 and plan[3][3][0][0] == _SWAP
            if swaps and not single_swap:
                # The chain, one pass on every lane (issue #36): few long rows cut into lanes that
                # share each row (chain-lanes, chain-serial on one lane), or many rows spread over lanes,
                # each lane walking its own rows (chain-rows).
                lanes = plan[3][1]
                if plan[3][0] == "rows" and lanes > 1:
                    # Many rows spread over lanes: each lane runs chain-serial on its own rows.
                    chain = _plan_chain(rows, seg * itemsize, k * itemsize, budget // lanes, 1)
                    if chain is not None:
                        scratch_bytes, moved_bytes, runner = chain
                        runner = ("chain-rows", lanes) + runner[2:]
                        return ("chain-rows", -(-lanes * scratch_bytes // itemsize), moved_bytes // itemsize,
                                runner)
                    # Swaps whose copies alias at 4 KiB: one lane walks the rows in turn rather.
                    lanes = 1 if _ops_alias(plan[3][3], itemsize) else 0
                if lanes:
                    chain = _plan_chain(rows, seg * itemsize, k * itemsize, budget, lanes)
                    if chain is not None:
                        scratch_bytes, moved_bytes, runner = chain
                        name = "chain-lanes" if runner[1] > 1 else "chain-serial"
                        return name, -(-scratch_bytes // itemsize), moved_bytes // itemsize, runner
            return plan
    # Not even one lane's scratch fits: three reversals in place, no scratch.
    _, _, moved, _ = _plan_strided((rows, seg), (seg * itemsize, itemsize), itemsize, seg - k, 1, 0)
    return "reversal", 0, moved // itemsize, ("reversal",)


# The chain planner's table builders, interpreted (the same Python functions, uncompiled) while that is
# cheap: compiling them costs ~2.5 s on a fresh install (issue #32); interpreted, a random shift's plan
# takes 30-70 ms at 64 MiB, 80-190 ms at 256 MiB (compiled: 0.5 ms, 2.5-4 ms); 1 GiB up to 4.7 s.
_INTERPRET_TILES = 1 << 18  # at most this many tiles times tries (rows up to ~256 MiB) are interpreted
_INTERPRET_SECONDS = 1.0  # a process that has interpreted this long compiles: the compile then pays off
_interpreted = [0.0]


def _chain_builders(n: int, tuning):
    """``(layout, pre_bytes)`` for ``_plan_chain``: compiled if already compiled in this process, if the
    interpreter would take long (many tiles), or once this process has interpreted ``_INTERPRET_SECONDS``;
    else the uncompiled functions (same results: the integers stay far below 2**63 there)."""
    layout, pre_bytes = free_lanes.compiled_free_builders()
    if pre_bytes.signatures or _interpreted[0] >= _INTERPRET_SECONDS:
        return layout, pre_bytes
    tiles = sum(S.tile_count(n, 0, int(t)) for t in tuning.chain_tile_bytes if 16 <= int(t) < n)
    if tiles * (2 + max(0, int(tuning.chain_tries))) > _INTERPRET_TILES:
        return layout, pre_bytes
    return free_lanes.layout_free_lanes, free_lanes.free_pre_bytes


def compile_chain_builders() -> None:
    """Compile the chain planner's table builders (``rotate.warmup``): rows too long to interpret need them."""
    layout, pre_bytes = free_lanes.compiled_free_builders()
    n, tile_bytes, ring = 1 << 16, 1 << 12, int(_T().chain_ring)
    m_max = S.max_tiles(n, tile_bytes)
    pre_bytes(n, n // 3, 0, tile_bytes, 1, m_max, ring, 0)
    layout(n, n // 3, 0, tile_bytes, 1, m_max, ring, np.zeros(S.table_stride(m_max), np.int64), 0)


def _count_interpreted(layout, began: float) -> None:
    if layout is free_lanes.layout_free_lanes:
        _interpreted[0] += time.perf_counter() - began


def _ring_cost(n: int, k: int, tile_bytes: int, chain: int, lane_steps: int, ring: int, tuning) -> int:
    """What a chain candidate's ring round trips cost, in bytes of traffic (0 when nothing is copied
    straight: then every byte takes the ring, whichever the candidate). A third to all of a row went
    through the ring where pre-reads were counted alone (uint8, 256 MiB, one thread: ring share 0.96,
    1.66x copyto, against 0.00-0.02 and 0.98-1.09x for other random shifts)."""
    if not tuning.chain_direct or not tuning.chain_ring_byte_cost:
        return 0
    return tuning.chain_ring_byte_cost * free_lanes.free_ring_bytes(n, k, 0, tile_bytes, chain, lane_steps, ring,
                                                           max(1, int(tuning.chain_ring_samples)))


def _plan_chain(rows: int, n: int, k: int, budget: int, lanes: int):
    """The chain schedule for rows of ``n`` bytes rotated left by ``k`` bytes on ``lanes`` lanes, or None.

    Each row's chain positions are cut into ``lanes`` runs that share nothing
    (``rotate._schedules.free_lanes.layout_free_lanes``): the hooks class each reader as
    earlier in its lane's walk (``SELF``), at most ``chain_ring - 1`` items
    later in it (``RING``: read ahead), or ``PRE`` (another lane's, or further
    back in this one). Tries every tile of ``chain_tile_bytes`` with the chain
    steps ``q``, ``q + 1`` and ``chain_tries`` steps from short lattice
    vectors (``lattice_chains``), and takes the one of least cost: three
    times its pre-read bytes (read, written to scratch, read back) plus
    ``chain_item_bytes`` an item (ties: the larger tile), whose pre-reads and
    rings fit ``budget``. Returns ``(scratch_bytes, bytes_moved, runner)``.
    """
    tuning = _T()
    layout, pre_bytes = _chain_builders(n, tuning)
    chains = free_lanes.lattice_chains  # a few dozen lattice points: interpreted, never compiled
    ring = tuning.chain_ring
    began = time.perf_counter()
    best = None
    for tile_bytes in sorted({int(t) for t in tuning.chain_tile_bytes}, reverse=True):
        if tile_bytes < 16 or tile_bytes % 16 or tile_bytes >= n:
            continue
        m = S.tile_count(n, 0, tile_bytes)
        lane_steps = -(-m // max(1, min(lanes, m)))
        used = free_lanes.free_lane_count(m, lane_steps)
        rings = used * (ring * tile_bytes + _alias_slack(tile_bytes))
        steps = np.zeros(2 + max(0, int(tuning.chain_tries)), np.int64)
        count = chains(n, k, 0, tile_bytes, ring, steps)
        # The lattice's steps first (a random shift's best), then q and q + 1 (a structured shift's):
        # each count stops once it passes what the best so far allows, so beaten steps cost little.
        for chain in list(steps[2:count]) + list(steps[:min(2, count)]):
            ringed = _ring_cost(n, k, tile_bytes, int(chain), lane_steps, ring, tuning)
            limit = budget - 32 - rings
            if best is not None:
                limit = min(limit, (best[0][0] - m * tuning.chain_item_bytes - ringed) // 3)
            if limit < 0:
                continue
            pre = pre_bytes(n, k, 0, tile_bytes, int(chain), lane_steps, ring, limit)
            if pre > limit:
                continue
            key = (3 * pre + ringed + m * tuning.chain_item_bytes, -tile_bytes)
            if best is None or key < best[0]:
                best = (key, tile_bytes, int(chain), lane_steps, used)
    if best is None:
        _count_interpreted(layout, began)
        return None
    _, tile_bytes, chain, lane_steps, used = best
    m_max = S.max_tiles(n, tile_bytes)
    table = np.zeros(S.table_stride(m_max), np.int64)
    scratch_row = layout(n, k, 0, tile_bytes, chain, lane_steps, ring, table, 0)
    _count_interpreted(layout, began)
    if scratch_row < 0:
        return None
    scratch_row = S.align_up(scratch_row) + 16  # spans are over-copied to 16-byte multiples
    scratch = scratch_row + used * (ring * tile_bytes + _alias_slack(tile_bytes))
    if scratch > budget:
        return None
    moved = rows * (2 * n + 3 * (scratch_row - 16))  # each pre-read byte: read, written, read back
    # Straight copies row to row unless they would alias at 4 KiB (destination - source is -k, or n - k
    # where the source wraps; 1-31 bytes ahead): the ring, placed by _ring_offset, keeps both streams apart.
    direct = bool(tuning.chain_direct) and not (_aliasing(-k, 32) or _aliasing(n - k, 32))
    return scratch, moved, ("chain", used, tile_bytes, chain, table, scratch_row, lane_steps, direct)


def _plan_rows_lanes(rows: int, seg: int, k: int, itemsize: int, budget: int, max_lanes):
    total_bytes = rows * seg * itemsize
    tile = max(1, _T().tile_bytes // itemsize)
    if seg * itemsize <= _T().small_row_bytes:
        lanes = _lanes(total_bytes, rows, max_lanes)
        if seg * itemsize in (2, 4, 8):  # the row is one machine word: rotate it in a register
            return "small-rows-word-rotate", 0, 2 * rows * seg, ("word", lanes)
        if 3 <= seg * itemsize <= 64 and rows * seg * itemsize >= 8 and sys.byteorder == "little":
            # Rows of up to eight words: rotated in registers, no scratch (a row's copies through a scratch
            # row took 2.9-7.4x np.copyto for rows of 10-19 bytes, one thread).
            return "small-rows-registers", 0, 2 * rows * seg, ("registers", lanes)
        # Lanes' scratch rows 128 bytes apart: sharing a cache line between
        # threads made 2 lanes slower than 1 (false sharing).
        # Each lane's scratch row holds two copies of a row (read back as one window).
        # Rows 128 bytes past a multiple of 128: the scratch array itself is only
        # 16-byte aligned, and a row filling its 128 bytes exactly then shared a
        # cache line with the next lane's (false sharing: (10**6, 8) float64 took
        # 11 ms instead of 3, depending on where malloc put the scratch).
        # Rows of 16 bytes or more alternate two doubled rows, each rounded to 16 bytes (kernels._small_rows_vectors).
        need = 2 * seg * itemsize if seg * itemsize < 16 else 2 * ((2 * seg * itemsize + 15) // 16 * 16)
        lane_stride = -(-need // itemsize) if lanes == 1 else (-(-need // 128) + 1) * 128 // itemsize
        return "small-rows-copy", lanes * lane_stride, 5 * rows * seg, ("small", lanes, lane_stride)
    seg_bytes = seg * itemsize
    if rows > 1 and (rows >= 8 * _lanes(total_bytes, rows, max_lanes) or seg_bytes <= (1 << 20)):
        lanes = _lanes(total_bytes, rows, max_lanes)
        cap = max(1, budget // itemsize // lanes)
        tile = min(tile, cap)
        ops = _segment_schedule(seg, k, cap, 1)
        lane_scratch, moved = _schedule_cost(ops, tile, 1)
        runner = ("rows", lanes, lane_scratch, ops, tile)
        scratch = lanes * lane_scratch
    else:
        lanes = _lanes(seg_bytes, max(1, seg // 2), max_lanes)
        cap = max(1, budget // itemsize // lanes)
        tile = min(tile, cap)
        ops = _segment_schedule(seg, k, cap, lanes, tile)
        scratch, moved = _schedule_cost(ops, tile, lanes)
        runner = ("segment", lanes, scratch, ops, tile)
    kinds = {op[0] for op in ops}
    if kinds == {_SHIFT}:
        name = "buffered-shift"
    elif kinds == {_SWAP}:
        name = "block-swap"
    elif _SWAP_SHIFT in kinds:
        name = "block-swap+fused-shift"
    else:
        name = "block-swap+buffered-shift"
    return name, scratch, rows * moved, runner


# ---------------------------------------------------------------------------
# public wrappers
# ---------------------------------------------------------------------------


def plan_rows(rows: int, seg: int, k: int, itemsize: int, max_scratch_bytes=None) -> tuple[str, int, int]:
    """Describe what :func:`rotate_rows_inplace` will do, without doing it.

    Parameters
    ----------
    rows, seg, k : int
        As for :func:`rotate_rows_inplace`.
    itemsize : int
        1, 2, 4 or 8 -- the word size of the buffer.
    max_scratch_bytes : int, optional
        The caller's scratch bound (tightens ``scratch_bytes``).

    Returns
    -------
    algorithm : str
        ``"small-rows-copy"``, ``"buffered-shift"``, ``"block-swap"``,
        ``"block-swap+buffered-shift"``, ``"block-swap+fused-shift"``,
        ``"chain-serial"``, ``"chain-lanes"``, ``"chain-rows"`` or ``"reversal"`` (no scratch;
        only when the bound allows nothing else).
    scratch_bytes : int
        Scratch the call allocates (at most ``min(scratch_bytes, max_scratch_bytes)``).
    bytes_moved : int
        Bytes read plus bytes written, array and scratch; the ideal is
        ``2 * rows * seg * itemsize``.
    """
    name, scratch, moved, _ = _plan_rows(int(rows), int(seg), int(k), int(itemsize), max_scratch_bytes)
    return name, scratch * itemsize, moved * itemsize


@functools.lru_cache(maxsize=512)
def _ops_array(ops: tuple) -> np.ndarray:
    """The schedule as the (n, 5) int64 array the kernels read; cached: plans are reused."""
    return np.array(ops, dtype=np.int64).reshape(len(ops), 5)


def _word_layout(shape, strides, itemsize: int, axis: int):
    """Describe an array as a word grid: (word, n_rows, s, n_cols, t, outer_shape, outer_strides).

    Strides come back in words.  Columns are the smallest-|stride| non-axis
    direction (often the words inside one element); length-1 dims are dropped.
    """
    shape = [int(x) for x in shape]
    strides = [int(x) for x in strides]
    live = [i for i in range(len(shape)) if shape[i] != 1 or i == axis]
    word = 8
    while word > 1 and (itemsize % word or any(strides[i] % word for i in live)):
        word //= 2
    dims = [(shape[i], strides[i] // word) for i in live if i != axis]
    if itemsize > word:
        dims.append((itemsize // word, 1))
    if dims:
        col = min(range(len(dims)), key=lambda i: abs(dims[i][1]))
        n_cols, t = dims.pop(col)
    else:
        n_cols, t = 1, 0
    outer_shape = [dim[0] for dim in dims]
    outer_strides = [dim[1] for dim in dims]
    return word, shape[axis], strides[axis] // word, n_cols, t, outer_shape, outer_strides


def _line(shape, strides, axis):
    """axis=None rolls the C-order line: the shape and strides of that 1-D line, axis 0."""
    if axis is not None:
        return shape, strides, axis
    from ..._core.arrays import c_order_line

    line = c_order_line(shape, strides)
    if line is None:
        raise ValueError(f"internal error: C order of shape {shape}, strides {strides} is not one strided line")
    return (line[0],), (line[1],), 0


def _plan_strided(shape, strides, itemsize: int, shift: int, axis, max_scratch_bytes=None):
    shape, strides, axis = _line(shape, strides, axis)
    word, n_rows, s, n_cols, t, outer_shape, outer_strides = _word_layout(shape, strides, itemsize, axis)
    n_outer = math.prod(outer_shape)
    k = n_rows - shift  # numpy.roll right by shift == rotate rows left by n_rows - shift
    d = min(k, shift)
    total_words = n_rows * n_cols * n_outer
    lanes = _lanes(total_words * word, max(1, n_outer * n_cols))
    budget_words = _budget(max_scratch_bytes) // word
    if d <= budget_words:
        lanes = max(1, min(lanes, budget_words // d))  # every lane holds at least d words
    cap = budget_words // lanes
    if d <= cap:
        mode = _STRIDED_SHIFT
        batch = min(n_cols, cap // d)
        if n_outer < lanes:
            # Too few outer lines to feed every lane: cut the columns finer.
            batch = min(batch, max(1, -(-n_cols // -(-lanes // n_outer))))
        name = "strided-buffered-shift"
        moved = (2 * n_rows + 2 * d) * n_cols * n_outer
    else:
        mode = _STRIDED_REVERSAL
        batch = n_cols
        if n_outer < lanes:
            batch = max(1, -(-n_cols // -(-lanes // n_outer)))
        name = "strided-reversal"
        moved = 4 * (k // 2 + shift // 2 + n_rows // 2) * n_cols * n_outer
    units = n_outer * -(-n_cols // batch)
    lanes = max(1, min(lanes, units))
    lane_scratch = d * batch if mode == _STRIDED_SHIFT else 0
    layout = (word, n_rows, s, n_cols, t, outer_shape, outer_strides)
    return name, lanes * lane_scratch * word, moved * word, (layout, k, mode, batch, lanes, lane_scratch)


def plan_strided(shape, strides, itemsize, shift, axis, max_scratch_bytes=None) -> tuple[str, int, int]:
    """Describe what :func:`roll_strided` will do, without doing it (``axis=None``: the C-order line).

    Returns
    -------
    algorithm : str
        ``"strided-buffered-shift"`` or ``"strided-reversal"``.
    scratch_bytes : int
        Scratch the call allocates (at most ``scratch_bytes``).
    bytes_moved : int
        Bytes read plus written, array and scratch (ideal: twice the array's bytes).
    """
    axis = None if axis is None else int(axis)
    name, scratch, moved, _ = _plan_strided(shape, strides, int(itemsize), int(shift), axis, max_scratch_bytes)
    return name, scratch, moved


def planner_settings(nbytes=None) -> tuple:
    """Everything the planners read besides the layout: the plan cache keys on it.

    The thread count plans are made for, and the tuning policy itself (every
    field, so no list of names can fall behind). An array of ``nbytes`` under
    two lanes' work plans one lane whatever the machine does, so its key skips
    the load check (a small call's microsecond).
    """
    tuning = _T()
    threads = usable_threads() if nbytes is None or nbytes >= 2 * tuning.min_lane_bytes else num_threads()
    return (threads, tuning)


def plan_rows_params(rows: int, seg: int, k: int, itemsize: int, max_scratch_bytes=None):
    """Plan :func:`run_rows`: ``(algorithm, scratch_bytes, bytes_moved, params)``.

    ``params`` (for ``Step.params``), a :class:`RowsParams` subclass a
    runner, holds everything the runner reads.  When the bound holds no
    lane's scratch it is :class:`RowsReversalParams`: the rows as a (rows x
    seg) word grid, rolled by three in-place reversals.
    """
    rows, seg, k, itemsize = int(rows), int(seg), int(k), int(itemsize)
    name, scratch, moved, runner = _plan_rows(rows, seg, k, itemsize, max_scratch_bytes)
    bound = None if max_scratch_bytes is None else int(max_scratch_bytes)
    if runner[0] == "reversal":
        _, strided_scratch, _, strided = plan_strided_params(
            (rows, seg), (seg * itemsize, itemsize), itemsize, seg - k, 1, 0)
        if strided_scratch or strided.mode != _STRIDED_REVERSAL:
            raise AssertionError("internal error: the reversal fallback must need no scratch")
        params = RowsReversalParams(lanes=strided.lanes, scratch_words=0, tile=0, threads=strided.threads,
                                    max_scratch_bytes=bound, lane_scratch=0, ops=(), strided=strided)
        return name, 0, moved * itemsize, params
    lanes = runner[1]
    common: dict[str, Any] = dict(lanes=lanes, scratch_words=scratch, tile=max(1, _T().tile_bytes // itemsize),
                                  threads=usable_threads(), max_scratch_bytes=bound)
    params: RowsParams
    if runner[0] in ("chain", "chain-rows"):
        _, _, tile_bytes, chain, table, scratch_row, lane_steps, direct = runner
        if runner[0] == "chain-rows":
            kind: Any = ChainRowsParams
        else:
            kind = ChainLanesParams if lanes > 1 else ChainSerialParams
        name = dict(kind.CONSTANTS)["runner"]
        params = kind(**common, lane_scratch=scratch // lanes if runner[0] == "chain-rows" else scratch, ops=(),
                      tile_bytes=tile_bytes, chain_step=chain, lane_steps=lane_steps, direct=direct,
                      ring=_T().chain_ring, pre_read_bytes=scratch_row - 16, alias_slack=_alias_slack(tile_bytes),
                      table=table, scratch_row=scratch_row)
    elif runner[0] == "small":
        params = (SmallRowsParams if lanes > 1 else SmallRowsSerialParams)(**common, lane_scratch=runner[2], ops=())
    elif runner[0] == "registers":
        params = RegisterRowsParams(**common, lane_scratch=0, ops=(), row_bytes=seg * itemsize)
    elif runner[0] == "word":  # the buffer is re-viewed as one word of row_word bytes a row
        params = (WordRowsParams if lanes > 1 else WordRowsSerialParams)(**common, lane_scratch=0, ops=(),
                                                                          row_word=seg * itemsize)
    else:
        ops = tuple(tuple(int(v) for v in op) for op in runner[3])
        common["tile"] = runner[4]  # the tile shrinks to fit a tight scratch bound
        fused = any(op[0] == _SWAP_SHIFT for op in ops)
        if lanes == 1 and not fused:
            params = RowsSerialParams(**common, lane_scratch=scratch, ops=ops)
        elif runner[0] == "rows":
            params = RowsLanesParams(**common, lane_scratch=runner[2], ops=ops)
        else:
            params = SegmentLanesParams(**common, lane_scratch=scratch, ops=ops)
    return name, scratch * itemsize, moved * itemsize, params


def plan_strided_params(shape, strides, itemsize: int, shift: int, axis, max_scratch_bytes=None):
    """Plan :func:`run_strided`: ``(algorithm, scratch_bytes, bytes_moved, params)``.

    ``axis`` None plans the C-order line of a view whose C order is one
    strided line.  ``params``: a :class:`StridedParams`.
    """
    axis = None if axis is None else int(axis)
    name, scratch, moved, (layout, k, mode, batch, lanes, lane_scratch) = _plan_strided(
        shape, strides, int(itemsize), int(shift), axis, max_scratch_bytes)
    word, n_rows, s, n_cols, t, outer_shape, outer_strides = layout
    params = StridedParams(layout=(word, n_rows, s, n_cols, t, tuple(outer_shape), tuple(outer_strides)), k=k,
                           mode=mode, batch=batch, lanes=lanes, lane_scratch=lane_scratch, threads=usable_threads(),
                           max_scratch_bytes=None if max_scratch_bytes is None else int(max_scratch_bytes))
    return name, scratch, moved, params
