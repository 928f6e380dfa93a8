"""Emulators of the row-permutation schedules (``rotate._schedules.rowperm``): the half-swap items and the
``row-strips`` step, run on the CPU on an array's bytes with their items in any order, as blocks may run.

They call the same ``register_jitable`` index math as the kernels (``item_rows``, ``swap_runs``,
``strip_chunk``, ``strip_boundary_row``, ``strip_step``, ``strip_take_mask``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..._schedules.rowperm import (item_rows, strip_boundary_row, strip_chunk, strip_step, strip_take_mask,
                                    swap_runs)


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


@njit(cache=True)
def emulate_row_strips(data, order, items, chunks, chunk_rows, rows, seg, v_lo, nv, lo, hi, up, batch_vecs):
    """The ``row-strips`` step on ``data`` (uint8, the array's bytes) as the kernels run it: the boundary
    rows saved first, then the items in ``order`` (any permutation: blocks run in any interleaving), each
    in batches of ``batch_vecs`` vectors whose loads all come before their stores. Returns how often each
    byte was written (strip bytes once, the others never)."""
    scratch = np.zeros(items * nv * 16, np.uint8)
    for item in range(items):
        batch, first, count = strip_chunk(item, chunks, chunk_rows, rows)
        row = strip_boundary_row(first, count, rows, up)
        at = (batch * rows + row) * seg + 16 * v_lo
        scratch[item * nv * 16:(item + 1) * nv * 16] = data[at:at + nv * 16]
    written = np.zeros(data.shape[0], np.int64)
    staged = np.zeros((batch_vecs, 16), np.uint8)
    for item in order:
        batch, first, count = strip_chunk(item, chunks, chunk_rows, rows)
        total = count * nv
        for base in range(0, total, batch_vecs):
            n = min(batch_vecs, total - base)
            for e in range(base, base + n):  # every load of the batch
                j = e // nv
                vi = e - j * nv
                dest, src, saved = strip_step(first, count, j, rows, up)
                if saved:
                    staged[e - base] = scratch[(item * nv + vi) * 16:(item * nv + vi + 1) * 16]
                else:
                    at = (batch * rows + src) * seg + 16 * (v_lo + vi)
                    staged[e - base] = data[at:at + 16]
            for e in range(base, base + n):  # then every store
                j = e // nv
                vi = e - j * nv
                dest, src, saved = strip_step(first, count, j, rows, up)
                at = (batch * rows + dest) * seg + 16 * (v_lo + vi)
                for word in range(4):
                    take = strip_take_mask(v_lo + vi, word, lo, hi)
                    for b in range(4):
                        if (take >> (8 * b)) & 0xFF:
                            x = at + 4 * word + b
                            written[x] += 1
                            data[x] = staged[e - base, 4 * word + b]
    return written
