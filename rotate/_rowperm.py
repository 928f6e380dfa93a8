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
from numba import int64, njit
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


@njit(cache=True)
def emulate_half_swaps(data, order, rows, rows_per_item, chunk, chunks_per_half, seg, half, n0, n1, n2, n3,
                       s0, s1, s2, s3):
    """Run the half-swap items of ``data`` (uint8, the array's bytes) in the given ``order`` (a permutation
    of the item indices), as the kernel's blocks would in any interleaving; returns how often each byte
    was touched (every count must be 1)."""
    touched = np.zeros(data.shape[0], np.int64)
    for item in order:
        first, c = item_rows(item, chunks_per_half, rows_per_item)
        for d in range(first, min(rows, first + rows_per_item)):
            a, b, nbytes = swap_runs(d, c, chunk, seg, half, n0, n1, n2, n3, s0, s1, s2, s3)
            for x in range(nbytes):
                value = data[a + x]
                data[a + x] = data[b + x]
                data[b + x] = value
                touched[a + x] += 1
                touched[b + x] += 1
    return touched
