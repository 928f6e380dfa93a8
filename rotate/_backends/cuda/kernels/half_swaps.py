"""CUDA kernel of the half-swap schedule (algorithm ``half-swaps``; index math in rotate/_schedules/rowperm.py).

Every rolled axis moves by half its length (``fftshift``/``ifftshift`` of
even lengths, ``roll(a, n // 2)``): the array is disjoint swaps of two equal
runs, cut into items by :func:`rotate._schedules.rowperm.item_rows` and
:func:`rotate._schedules.rowperm.swap_runs`. A block takes items grid-stride; its
threads split into ``rows_per_item`` groups of ``group`` threads, one row of
the item each (one group of the whole block when a half is long); each
thread loads ``vecs`` 16-byte vectors of both runs (all loads in flight
before the first store), then stores each where the other was. No shared memory, no flags, no scratch: no block ever waits for
another, so any residency finishes. The planner offers it where both runs
are 16-byte aligned (the array's start, the row and the half row).
"""

from __future__ import annotations

import functools

from numba import cuda, int64, uint32

from ...._schedules.rowperm import item_rows, swap_runs
from .memops import SIMULATED, load16, store16

THREADS = 256
#: 16-byte vectors of each run a thread holds at once (2 x 4 loads in flight a thread).
VECS = 4
#: Bytes of a run one item swaps: one pass of a block.
CHUNK_BYTES = THREADS * VECS * 16


@functools.lru_cache(maxsize=None)
def half_swap_kernel(threads: int = THREADS, vecs: int = VECS, group: int = THREADS):
    """``kernel(data, items, rows, chunk, chunks_per_half, seg, half, n0, n1, n2, n3, s0, s1, s2, s3)``.

    Swaps item ``i``'s runs for every ``i < items``: ``threads // group``
    rows an item (``group`` a power of two dividing ``threads``), a group of
    ``group`` threads a row, ``vecs`` (1 to 4) vectors of each run a thread
    at a time. Launch with no dynamic shared memory.
    """
    if not 1 <= vecs <= 4:
        raise ValueError(f"vecs must be 1 to 4, got {vecs}")
    if group & (group - 1) or threads % group:
        raise ValueError(f"group must be a power of two dividing threads, got {group} of {threads}")
    rows_per_item = threads // group
    group_bits = group.bit_length() - 1
    step = 16 * group
    jit_options = {} if SIMULATED else {"launch_bounds": threads}

    @cuda.jit(**jit_options)
    def kernel(data, items, rows, chunk, chunks_per_half, seg, half, n0, n1, n2, n3, s0, s1, s2, s3):
        tid = cuda.threadIdx.x
        lane = tid & (group - 1)
        zero = (uint32(0), uint32(0), uint32(0), uint32(0))
        item = int64(cuda.blockIdx.x)
        while item < items:
            first, c = item_rows(item, chunks_per_half, rows_per_item)
            d = first + (tid >> group_bits)
            if d < rows:
                a, b, nbytes = swap_runs(d, c, chunk, seg, half, n0, n1, n2, n3, s0, s1, s2, s3)
                base = int64(0)
                while base < nbytes:
                    o0 = base + 16 * lane
                    o1 = o0 + step
                    o2 = o1 + step
                    o3 = o2 + step
                    x0 = y0 = x1 = y1 = x2 = y2 = x3 = y3 = zero
                    # Every load of both runs before any store: eight 16-byte loads in flight a thread.
                    if o0 < nbytes:
                        x0 = load16(data, a + o0)
                        y0 = load16(data, b + o0)
                    if vecs > 1 and o1 < nbytes:
                        x1 = load16(data, a + o1)
                        y1 = load16(data, b + o1)
                    if vecs > 2 and o2 < nbytes:
                        x2 = load16(data, a + o2)
                        y2 = load16(data, b + o2)
                    if vecs > 3 and o3 < nbytes:
                        x3 = load16(data, a + o3)
                        y3 = load16(data, b + o3)
                    if o0 < nbytes:
                        store16(data, a + o0, y0[0], y0[1], y0[2], y0[3])
                        store16(data, b + o0, x0[0], x0[1], x0[2], x0[3])
                    if vecs > 1 and o1 < nbytes:
                        store16(data, a + o1, y1[0], y1[1], y1[2], y1[3])
                        store16(data, b + o1, x1[0], x1[1], x1[2], x1[3])
                    if vecs > 2 and o2 < nbytes:
                        store16(data, a + o2, y2[0], y2[1], y2[2], y2[3])
                        store16(data, b + o2, x2[0], x2[1], x2[2], x2[3])
                    if vecs > 3 and o3 < nbytes:
                        store16(data, a + o3, y3[0], y3[1], y3[2], y3[3])
                        store16(data, b + o3, x3[0], x3[1], x3[2], x3[3])
                    base += vecs * step
            item += cuda.gridDim.x

    return kernel
