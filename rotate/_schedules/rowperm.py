"""Row permutations of multi-axis rolls, and the half-swap schedule: index math every runner shares.

A C-ordered array is viewed as ``R`` rows of ``seg`` bytes: the row index is
a mixed-radix number over up to four leading radices ``n0..n3`` (``n3``
least significant), and numpy.roll over those axes makes destination row
``d`` equal to source row :func:`source_row` ``(d)``, itself rolled by the
last rolled axis's shift. The functions here are ``register_jitable``: the
CUDA kernels call them as device functions, ``numba.njit`` code (the
emulator below, the host planner's cycle tables) calls them compiled for
the CPU, so the schedule the CPU checks is the one the GPU runs.

Half-swaps (algorithm ``half-swaps``)
-------------------------------------
When every rolled axis moves by exactly half its length (``fftshift`` and
``ifftshift`` of even lengths, ``roll(a, n // 2)``), the permutation is its
own inverse: element ``x`` goes to ``partner(x)`` and ``partner(x)`` to
``x``. With ``half = seg / 2`` (the in-row shift in bytes) it is ``R``
disjoint swaps of two runs of ``half`` bytes::

    row d, bytes [0, half)  <->  row source_row(d), bytes [half, seg)

(row ``d``'s first half becomes the second half of its partner row and the
other way round; a row that is its own partner swaps its two halves). The
runs are cut into *items* (:func:`item_rows`): a chunk of at most ``chunk``
bytes of one row's first half, or, for halves shorter than a block moves at
once, the whole first halves of ``rows_per_item`` rows; each row's part is
swapped with its partner's (:func:`swap_runs`).
Every byte of the array lies in exactly one item, on exactly one side, so
items are independent: no flags, no tickets, no scratch, any order, any
number of resident blocks. Each byte is read once and written once (2N).
"""

from __future__ import annotations

import numpy as np
from numba import int64
from numba.core.extending import register_jitable

#: Leading (row-index) axes the row kernels walk at most.
MAX_LEAD = 4


@register_jitable
def source_row(d, n0, n1, n2, n3, s0, s1, s2, s3):
    """The source row of destination row ``d``: each digit ``i`` of ``d`` (radices ``n0..n3``, ``n3``
    least significant) becomes ``(i - s) mod n`` (numpy.roll moves element ``i - s`` to ``i``)."""
    src = int64(0)
    scale = int64(1)
    rest = d
    for axis in range(3, -1, -1):
        if axis == 3:
            n, s = n3, s3
        elif axis == 2:
            n, s = n2, s2
        elif axis == 1:
            n, s = n1, s1
        else:
            n, s = n0, s0
        i = rest % n
        rest = rest // n
        i -= s
        if i < 0:
            i += n
        src += i * scale
        scale *= n
    return src


@register_jitable
def item_rows(item, chunks_per_half, rows_per_item):
    """Item ``item``'s first row and chunk: items walk the rows in groups of ``rows_per_item``, each
    group's halves in ``chunks_per_half`` chunks (one of the two is 1)."""
    group = item // chunks_per_half
    return group * rows_per_item, item - group * chunks_per_half


@register_jitable
def swap_runs(d, c, chunk, seg, half, n0, n1, n2, n3, s0, s1, s2, s3):
    """Row ``d``'s ``c``-th chunk of bytes ``[0, half)`` and the same chunk of bytes ``[half, seg)`` of row
    ``source_row(d)`` (the shifts ``s0..s3`` each half their radix, or 0): ``(a, b, nbytes)``, byte
    offsets of the two runs from the array's start."""
    at = c * chunk
    partner = source_row(d, n0, n1, n2, n3, s0, s1, s2, s3)
    return d * seg + at, partner * seg + half + at, min(chunk, half - at)


def half_swap_shape(lead: tuple, lead_shifts: tuple, seg: int, row_shift: int):
    """``(dims, halves)`` padded to MAX_LEAD when the roll is a half-swap, else None.

    ``lead``/``lead_shifts``: the leading radices and their shifts in
    ``[0, n)``; ``seg``: a row's bytes; ``row_shift``: the in-row shift in
    bytes. A half-swap needs every shift to be 0 or half its radix, and the
    in-row shift to be half the row.
    """
    if len(lead) > MAX_LEAD or seg <= 0 or 2 * row_shift != seg:
        return None
    if any(s not in (0, n // 2) or (s and n % 2) for n, s in zip(lead, lead_shifts)):
        return None
    pad = MAX_LEAD - len(lead)
    return (1,) * pad + tuple(int(n) for n in lead), (0,) * pad + tuple(int(s) for s in lead_shifts)


# --- flat pass and row strips (algorithm ``row-strips``) ---------------------
#
# A roll of ``rows`` rows of ``seg`` bytes by ``S`` rows and ``r`` bytes within
# the row (0 < r < seg) sends source row ``i``'s bytes ``[0, seg - r)`` (part A)
# to row ``i + S`` at ``r``, and its bytes ``[seg - r, seg)`` (part B) to row
# ``i + S`` at 0. A flat rotation of all ``rows * seg`` bytes right by
# ``S * seg + r`` puts every A part in place and every B part one row too far
# (row ``i + S + 1``); right by ``(S - 1) * seg + r`` instead, every B part in
# place and every A part one row too early. Either way one *strip* of columns
# is then off by one row: ``[0, r)``, to be moved up a row (row ``d`` takes the
# strip of row ``d + 1``), or ``[r, seg)``, to be moved down a row. The planner
# takes the narrower strip, so the two steps move ``2N (1 + w / seg)`` bytes
# with ``w <= seg / 2`` (docs/design.md, "Flat pass and row strips").
#
# The strip step cuts each batch's rows into chunks of ``chunk_rows``; item
# ``(batch, q)`` moves the strips of chunk ``q``'s rows, walking them in the
# order the move allows (upward moves from the chunk's first row, downward from
# its last), so each row's strip is read, as the next step's source, before it
# is written. The one source row outside the chunk (its *boundary row*, the
# next chunk's first row or the previous chunk's last) is copied to scratch by
# a launch before: no item reads a row another item writes, so items need no
# flags and finish in any order with any number of resident blocks.


def flat_strip_shape(lead: tuple, lead_shifts: tuple, seg: int, row_shift: int):
    """``(batches, rows, flat, lo, hi, up)`` for a roll with one rolled leading radix, else None.

    ``lead``/``lead_shifts``: the leading radices and their shifts in ``[0, n)``
    (exactly one nonzero); ``row_shift``: the in-row shift in bytes, in
    ``(0, seg)``. The radices before the rolled one are ``batches`` (each a
    segment of ``rows`` rows rolled on its own), the rolled one and those after
    it ``rows``; ``flat``: the right rotation in bytes of each segment; the
    strip ``[lo, hi)`` then moves up a row (``up``) or down.
    """
    rolled = [i for i, s in enumerate(lead_shifts) if s]
    if len(rolled) != 1 or not 0 < row_shift < seg:
        return None
    i = rolled[0]
    batches = int(np.prod(lead[:i], dtype=np.int64))
    rows = int(np.prod(lead[i:], dtype=np.int64))
    step = int(lead_shifts[i]) * int(np.prod(lead[i + 1:], dtype=np.int64))  # the roll in rows, in (0, rows)
    if 2 * row_shift <= seg:
        return batches, rows, step * seg + row_shift, 0, row_shift, True
    return batches, rows, (step - 1) * seg + row_shift, row_shift, seg, False


@register_jitable
def strip_chunk(item, chunks, chunk_rows, rows):
    """Item ``item``'s ``(batch, first row, row count)``: ``chunks`` chunks of ``chunk_rows`` rows a batch."""
    batch = item // chunks
    first = (item - batch * chunks) * chunk_rows
    return batch, first, min(chunk_rows, rows - first)


@register_jitable
def strip_boundary_row(first, count, rows, up):
    """The one source row of chunk ``[first, first + count)`` outside it (read from scratch)."""
    if up:
        row = first + count
        return 0 if row == rows else row
    return rows - 1 if first == 0 else first - 1


@register_jitable
def strip_step(first, count, j, rows, up):
    """Step ``j`` of a chunk: ``(destination row, source row, source is the boundary row in scratch)``.
    Upward moves walk the chunk from its first row, downward ones from its last, so a row's strip is
    read (as the source of the step before) before the step that writes it."""
    if up:
        dest = first + j
        src = dest + 1
        if src == rows:
            src = 0
    else:
        dest = first + count - 1 - j
        src = dest - 1
        if src < 0:
            src = rows - 1
    return dest, src, j == count - 1


@register_jitable
def strip_take_mask(v, word, lo, hi):
    """The bits of word ``word`` (0-3) of 16-byte vector ``v`` of a row whose bytes lie in ``[lo, hi)``:
    the bytes a strip move replaces (the others keep the destination's value)."""
    at = 16 * v + 4 * word
    first = max(lo - at, 0)
    last = min(hi - at, 4)
    if last <= first:
        return int64(0)
    return ((int64(1) << (8 * (last - first))) - 1) << (8 * first)
