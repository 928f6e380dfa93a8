"""The distributed roll's schedule: pure index math, no torch, no communication.

A 1-D global array of ``N = sum(lengths)`` elements is split over the ranks
of a group in rank order (rank ``r`` holds global indices
``[O_r, O_r + lengths[r])``, ``O_r`` the prefix sum). Rolling it by ``k``
(numpy.roll: ``new[g] = old[(g - k) mod N]``) is a list of *stages*; each
stage is

1. a local in-place roll of every rank's shard (``local_shifts[r]``), then
2. an exchange of contiguous *moves*: ``Move(src, src_off, dst, dst_off, length)``
   sends ``length`` elements from rank ``src`` at local offset ``src_off`` to
   rank ``dst`` at local offset ``dst_off``.

The schedule is built so that on every rank the ranges it receives into are
exactly the ranges it sends from (same offsets, same lengths), and each
incoming move is paired with the outgoing move of the same range. Both are
cut into the same chunks in the same order, so round ``t`` of the exchange
sends chunk ``t`` of a range and receives chunk ``t`` of the same range into
staging, and copies it in only after the send is complete: no byte is
overwritten before it has been sent, every rank needs only one round of
staging, and round ``t`` on one rank is matched by round ``t`` on its peers
(no deadlock with NCCL's grouped point-to-point). ``check_stage`` verifies
that property for every stage that :func:`build` returns.

Even splits (all non-empty shards of length ``L``), ``k = m L + s``: after a
local roll by ``s``, position ``j`` of rank ``r`` holds exactly what position
``j`` of rank ``r + m`` (``j >= s``) or ``r + m + 1`` (``j < s``) needs. One
stage; each rank sends ``L - s`` and/or ``s`` elements, none when the
destination is itself: ``k`` elements for a shift within a shard
(``m = 0``), ``N - k`` for ``m = P - 1``.

Uneven splits: a shift ``d <= min(lengths)`` has the same property (after a
local roll by ``d``, positions ``[0, d)`` go to the same positions of the
next rank; to the left, positions ``[L_r - d, L_r)`` go to the last ``d``
positions of the previous rank), so the roll is ``ceil(min(k, N - k) / Lmin)``
such stages in the shorter direction. One stage when the shift is within
the shortest shard; for larger shifts each stage costs a local pass, so
badly unbalanced splits (one tiny shard) are slow but still in place and
bounded, and more than ``MAX_STAGES`` stages are refused with a
``ValueError`` (before anything moves). Empty shards take no part.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence


MAX_STAGES = 64  # uneven splits: beyond this many local passes, refuse rather than crawl


def _short(lengths) -> str:
    return str(list(lengths)) if len(lengths) <= 16 else f"[{lengths[0]}, {lengths[1]}, ... ({len(lengths)} ranks)]"


@dataclass(frozen=True)
class Move:
    src: int
    src_off: int
    dst: int
    dst_off: int
    length: int


@dataclass(frozen=True)
class Stage:
    local_shifts: tuple[int, ...]  # numpy.roll shift of each rank's shard, applied before the moves
    moves: tuple[Move, ...]


def build(lengths: Sequence[int], shift: int) -> tuple[str, tuple[Stage, ...]]:
    """The algorithm's name and its stages for rolling the split array by ``shift``."""
    lengths = tuple(int(x) for x in lengths)
    if any(x < 0 for x in lengths):
        raise ValueError(f"lengths must be >= 0, got {list(lengths)}")
    n = sum(lengths)
    p = len(lengths)
    if n == 0 or shift % n == 0:
        return "none", ()
    k = shift % n
    ranks = [r for r in range(p) if lengths[r] > 0]
    q = len(ranks)
    zero = [0] * p
    if q == 1:
        shifts = list(zero)
        shifts[ranks[0]] = k
        return "local", (Stage(tuple(shifts), ()),)
    lens = {lengths[r] for r in ranks}
    if len(lens) == 1:
        length = lens.pop()
        m, s = divmod(k, length)
        shifts = list(zero)
        moves = []
        for i, r in enumerate(ranks):
            shifts[r] = s
            far, near = ranks[(i + m) % q], ranks[(i + m + 1) % q]
            if far != r and length - s > 0:
                moves.append(Move(r, s, far, s, length - s))
            if near != r and s > 0:
                moves.append(Move(r, 0, near, 0, s))
        stage = Stage(tuple(shifts), tuple(moves))
        check_stage(lengths, stage)
        return ("even-within-shard" if m == 0 else "even-across-shards"), (stage,)
    shortest = min(lengths[r] for r in ranks)
    right = k <= n - k
    left_over = k if right else n - k
    count = -(-left_over // shortest)
    if count > MAX_STAGES:
        raise ValueError(
            f"shard lengths {_short(lengths)} are too uneven to roll by {shift} in place: the shortest "
            f"non-empty shard ({shortest}) bounds each stage, so this roll would take {count} local "
            f"passes (at most {MAX_STAGES}). Rebalance the shards (equal lengths take one stage for "
            f"any shift), or roll by a shift of at most {shortest * MAX_STAGES} positions either way"
        )
    stages = []
    while left_over:
        d = min(shortest, left_over)
        left_over -= d
        shifts = list(zero)
        moves = []
        for i, r in enumerate(ranks):
            if right:
                shifts[r] = d
                moves.append(Move(r, 0, ranks[(i + 1) % q], 0, d))
            else:
                shifts[r] = -d
                prev = ranks[(i - 1) % q]
                moves.append(Move(r, lengths[r] - d, prev, lengths[prev] - d, d))
        stage = Stage(tuple(shifts), tuple(moves))
        check_stage(lengths, stage)
        stages.append(stage)
    name = "uneven-within-shard" if len(stages) == 1 else "uneven-steps"
    return name, tuple(stages)


def check_stage(lengths: Sequence[int], stage: Stage) -> None:
    """Each rank receives into exactly the ranges it sends from, one move per range."""
    for r in range(len(lengths)):
        out = sorted((m.src_off, m.length) for m in stage.moves if m.src == r)
        inc = sorted((m.dst_off, m.length) for m in stage.moves if m.dst == r)
        if out != inc or len(set(out)) != len(out):
            raise AssertionError(f"internal error: rank {r} sends {out} but receives {inc}")
        for off, length in out:
            if not (0 <= off and off + length <= lengths[r] and length > 0):
                raise AssertionError(f"internal error: range {(off, length)} outside rank {r}'s shard")


def chunks(rows: int, first: int, stop: int, chunk_bytes: int) -> list[tuple[int, int, int, int]]:
    """Cut columns ``[first, stop)`` of a ``rows``-row byte matrix into blocks of at most ``chunk_bytes``.

    Returns ``(row0, row1, col0, col1)`` blocks in a fixed order; sender and
    receiver of a move cut the same range the same way.
    """
    width = min(stop - first, max(1, chunk_bytes))
    group = max(1, chunk_bytes // width)
    out = []
    for c0 in range(first, stop, width):
        c1 = min(stop, c0 + width)
        for r0 in range(0, rows, group):
            out.append((r0, min(rows, r0 + group), c0, c1))
    return out


def simulate(shards: list, shift: int) -> list:
    """Run the schedule on numpy 1-D shards in one process (tests and docs): the rolled shards."""
    import numpy as np

    lengths = [len(x) for x in shards]
    _, stages = build(lengths, shift)
    shards = [np.array(x) for x in shards]
    for stage in stages:
        for r, s in enumerate(stage.local_shifts):
            if lengths[r]:
                shards[r] = np.roll(shards[r], s)
        sent = [(m, shards[m.src][m.src_off:m.src_off + m.length].copy()) for m in stage.moves]
        for m, data in sent:
            shards[m.dst][m.dst_off:m.dst_off + m.length] = data
    return shards
