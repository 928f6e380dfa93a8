"""The flat fallbacks' kernels: the block-swap (Gries-Mills) pass and the reversal pass.

``swap_kernel`` swaps two equal byte ranges of every row through shared
memory (tiles are disjoint: no flags); ``reverse_kernel`` reverses a word
range of every row. Schedules ``block-swap`` and ``reversal``
(rotate/_backends/cuda/schedules/) plan the passes.
"""

from __future__ import annotations

import functools

from numba import cuda, uint32

from ...._schedules import chain as S
from .chain import THREADS, TILE_BYTES
from .common import _write_moved, wait_all
from .memops import SIMULATED, commit_copies, copy16_async

@functools.lru_cache(maxsize=None)
def swap_kernel(tile_bytes: int = TILE_BYTES, threads: int = THREADS):
    """Swap two equal, disjoint byte ranges of every row, in place, at any alignment.

    ``kernel(data, rows, row_bytes, a, b, m, head0)`` swaps positions
    ``[a, a + m)`` and ``[b, b + m)`` (``a + m <= b``) of each row of
    ``row_bytes`` bytes. Tiles cut the A range on its 16-byte grid; a block
    over-copies both source ranges into shared memory, then writes each side
    from the other as whole aligned vectors, realigned in registers (the
    chain kernel's write path). Tiles touch disjoint bytes, so no flags: this
    is the pass of the block-swap (Gries-Mills) fallback for distances whose
    seam does not fit the scratch.
    """
    tile_vecs = tile_bytes // 16
    region_vecs = tile_vecs + 2
    smem_words = 4 * 2 * region_vecs
    read_iters = -(-(2 * region_vecs) // threads)
    write_iters = -(-(tile_vecs + 1) // threads)
    T = tile_bytes
    jit_options = {} if SIMULATED else {"launch_bounds": threads}

    write_moved = _write_moved(threads, write_iters)

    @cuda.jit(**jit_options)
    def kernel(data, rows, row_bytes, a, b, m, head0):
        if SIMULATED:
            smem = cuda.shared.array(smem_words, uint32)
        else:
            smem = cuda.shared.array(smem_words, uint32, alignment=16)
        tid = cuda.threadIdx.x
        tiles_per_row = (m + 15 + T - 1) // T  # an upper bound over heads
        for t in range(cuda.blockIdx.x, rows * tiles_per_row, cuda.gridDim.x):
            row = 0 if t < tiles_per_row else t // tiles_per_row
            j = t - row * tiles_per_row
            head = S.row_head(head0, row, row_bytes)
            row_pos = row * row_bytes
            x0, x1 = S.tile_dest(m, (head + a) % 16, T, j)  # on the A range's 16-byte grid
            if x0 < x1:
                a_al = S.align_down(head + a + x0) - head
                a_vecs = (S.align_up(head + a + x1) - S.align_down(head + a + x0)) // 16
                b_al = S.align_down(head + b + x0) - head
                b_vecs = (S.align_up(head + b + x1) - S.align_down(head + b + x0)) // 16
                for it in range(read_iters):
                    slot = tid + it * threads
                    if slot < a_vecs:
                        copy16_async(smem, 4 * slot, data, row_pos + a_al + 16 * slot)
                    elif slot >= region_vecs and slot - region_vecs < b_vecs:
                        copy16_async(smem, 4 * slot, data, row_pos + b_al + 16 * (slot - region_vecs))
                commit_copies()
                wait_all()
                cuda.syncthreads()
                write_moved(smem, region_vecs, b_al, data, row_pos, head, a + x0, a + x1, b - a, tid)
                write_moved(smem, 0, a_al, data, row_pos, head, b + x0, b + x1, a - b, tid)
            cuda.syncthreads()  # smem is reused by the next tile

    return kernel


@functools.lru_cache(maxsize=None)
def reverse_kernel(word_bytes: int):
    """Reverse ``words[r*seg + lo : r*seg + hi]`` of every row, in place (grid-stride).

    One dispatcher per word width, so each has exactly one compiled overload
    and can be launched without numba's per-call typing.
    """

    @cuda.jit
    def kernel(words, rows, seg, lo, hi):
        half = (hi - lo) // 2
        total = rows * half
        start = cuda.grid(1)
        stride = cuda.gridsize(1)
        for i in range(start, total, stride):
            row = i // half
            j = i - row * half
            a = row * seg + lo + j
            b = row * seg + hi - 1 - j
            wa = words[a]
            words[a] = words[b]
            words[b] = wa

    return kernel
