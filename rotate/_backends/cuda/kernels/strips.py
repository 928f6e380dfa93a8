"""CUDA kernels of the ``row-strips`` step (index math in rotate/_schedules/rowperm.py).

A multi-axis roll planned as a flat rotation and a strip step (``plan()``
shows ``chain`` then ``row-strips``): after the flat pass, one strip of
columns ``[lo, hi)`` of every row sits one row off. Two launches move it:

* ``strip_save_kernel`` copies each item's boundary row (the one source row
  outside the item's chunk) to scratch;
* ``strip_kernel`` gives each item (a chunk of one batch's rows) to one block,
  which walks the chunk's rows in the order the move allows, ``threads *
  vecs`` vectors at a time: every load of a batch, a block barrier, then
  every store. Vectors the strip only partly covers keep the destination's
  other bytes (``strip_take_mask``).

No block waits for another and no item reads a row another item writes, so
any order and any residency finishes. Rows must start on 16-byte boundaries
(the array's start and ``seg``), so a row's vector ``v`` and its source's
share the phase.
"""

from __future__ import annotations

import functools

from numba import cuda, int64, uint32

from ...._schedules.rowperm import strip_boundary_row, strip_chunk, strip_step, strip_take_mask
from .memops import SIMULATED, load16, store16

THREADS = 256
#: 16-byte vectors a thread holds between a batch's loads and its stores.
VECS = 4


@functools.lru_cache(maxsize=None)
def strip_save_kernel(threads: int = THREADS):
    """``kernel(data, scratch, items, chunks, chunk_rows, rows, seg, v_lo, nv, up)``: vector ``vi`` of
    item ``i``'s boundary-row strip to ``scratch[16 * (i * nv + vi):]``, grid-stride."""
    jit_options = {} if SIMULATED else {"launch_bounds": threads}

    @cuda.jit(**jit_options)
    def kernel(data, scratch, items, chunks, chunk_rows, rows, seg, v_lo, nv, up):
        e = int64(cuda.blockIdx.x) * threads + cuda.threadIdx.x
        while e < items * nv:
            item = e // nv
            batch, first, count = strip_chunk(item, chunks, chunk_rows, rows)
            row = strip_boundary_row(first, count, rows, up != 0)
            w = load16(data, (batch * rows + row) * seg + 16 * (v_lo + e - item * nv))
            store16(scratch, 16 * e, w[0], w[1], w[2], w[3])
            e += int64(cuda.gridDim.x) * threads

    return kernel


@functools.lru_cache(maxsize=None)
def strip_kernel(threads: int = THREADS, vecs: int = VECS):
    """``kernel(data, scratch, items, chunks, chunk_rows, rows, seg, v_lo, nv, lo, hi, up)``: the strips
    of every item's rows moved a row (see the module docstring); items grid-stride, a block an item."""
    if not 1 <= vecs <= 4:
        raise ValueError(f"vecs must be 1 to 4, got {vecs}")
    jit_options = {} if SIMULATED else {"launch_bounds": threads}

    @cuda.jit(device=True)
    def fetch(data, scratch, item, e, batch, first, count, rows, seg, v_lo, nv, lo, hi, up):
        """Vector ``e`` of the item (step ``e // nv``): its source, its destination's bytes where the
        strip covers only part of it, and the destination's byte offset."""
        j = e // nv
        vi = e - j * nv
        dest, src, saved = strip_step(first, count, j, rows, up)
        v = v_lo + vi
        if saved:
            source = load16(scratch, 16 * (item * nv + vi))
        else:
            source = load16(data, (batch * rows + src) * seg + 16 * v)
        at = (batch * rows + dest) * seg + 16 * v
        kept = (uint32(0), uint32(0), uint32(0), uint32(0))
        if 16 * v < lo or 16 * v + 16 > hi:
            kept = load16(data, at)
        return source, kept, at

    @cuda.jit(device=True)
    def merge(word, source, kept, v, lo, hi):
        take = uint32(strip_take_mask(v, word, lo, hi))
        return (source & take) | (kept & ~take)

    @cuda.jit(device=True)
    def store(data, at, source, kept, v, lo, hi):
        store16(data, at, merge(0, source[0], kept[0], v, lo, hi), merge(1, source[1], kept[1], v, lo, hi),
                merge(2, source[2], kept[2], v, lo, hi), merge(3, source[3], kept[3], v, lo, hi))

    @cuda.jit(**jit_options)
    def kernel(data, scratch, items, chunks, chunk_rows, rows, seg, v_lo, nv, lo, hi, up):
        tid = cuda.threadIdx.x
        zero = (uint32(0), uint32(0), uint32(0), uint32(0))
        going_up = up != 0
        item = int64(cuda.blockIdx.x)
        while item < items:
            batch, first, count = strip_chunk(item, chunks, chunk_rows, rows)
            total = count * nv
            base = int64(0)
            while base < total:
                e0 = base + tid
                e1 = e0 + threads
                e2 = e1 + threads
                e3 = e2 + threads
                s0 = k0 = s1 = k1 = s2 = k2 = s3 = k3 = zero
                a0 = a1 = a2 = a3 = int64(0)
                # Every load of the batch before the barrier, every store after it: a row's strip is
                # read (as the source of the step before) before the step that writes it.
                if e0 < total:
                    s0, k0, a0 = fetch(data, scratch, item, e0, batch, first, count, rows, seg, v_lo, nv, lo, hi,
                                       going_up)
                if vecs > 1 and e1 < total:
                    s1, k1, a1 = fetch(data, scratch, item, e1, batch, first, count, rows, seg, v_lo, nv, lo, hi,
                                       going_up)
                if vecs > 2 and e2 < total:
                    s2, k2, a2 = fetch(data, scratch, item, e2, batch, first, count, rows, seg, v_lo, nv, lo, hi,
                                       going_up)
                if vecs > 3 and e3 < total:
                    s3, k3, a3 = fetch(data, scratch, item, e3, batch, first, count, rows, seg, v_lo, nv, lo, hi,
                                       going_up)
                cuda.syncthreads()
                if e0 < total:
                    store(data, a0, s0, k0, v_lo + e0 % nv, lo, hi)
                if vecs > 1 and e1 < total:
                    store(data, a1, s1, k1, v_lo + e1 % nv, lo, hi)
                if vecs > 2 and e2 < total:
                    store(data, a2, s2, k2, v_lo + e2 % nv, lo, hi)
                if vecs > 3 and e3 < total:
                    store(data, a3, s3, k3, v_lo + e3 % nv, lo, hi)
                base += vecs * threads
            item += cuda.gridDim.x

    return kernel
