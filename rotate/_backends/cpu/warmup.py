"""The CPU backend's part of ``rotate.warmup``: representative calls whose plans reach every runner.

The calls are the public functions, handed in by ``rotate.warmup`` (``calls``: name -> function), so
this layer imports nothing above it; each is planned as it will be, so the kernels compiled are exactly
those such calls compile.
"""

from __future__ import annotations

from typing import Callable, Mapping

import numpy as np

from . import planner, tuning

#: Lane and row lengths the calls take: every word width a short row or lane moves in (8, 4, 2 bytes, one word
#: a row, byte windows) for items of 1-16 bytes.
_SHORT = (2, 3, 4, 5, 6, 7, 8, 9, 12, 15, 16, 17, 32, 33)


def warmup_calls(name: str, dtype: np.dtype, calls: Mapping[str, Callable]) -> None:
    """``name``'s representative calls, with the plans of numba's thread count, then of one thread.

    Planned as on an idle machine: on a busy one the planner gives calls fewer threads (down to one), and
    the multi-threaded plans' kernels would be left for a later call to compile.
    """
    import numba

    threads = numba.get_num_threads()
    with tuning.override(adapt_to_load=False):
        for count in (threads, 1) if threads > 1 else (1,):
            numba.set_num_threads(count)  # this thread's count only
            try:
                _CPU[name](dtype, calls)
            finally:
                numba.set_num_threads(threads)


def _big(dtype: np.dtype) -> int:
    """Elements of an array that plans several threads' lanes (each lane needs ``min_lane_bytes``)."""
    return max(64, 4 * tuning.current().min_lane_bytes // dtype.itemsize)


def _cpu_roll(dtype: np.dtype, calls: Mapping[str, Callable]) -> None:
    roll = calls["roll"]
    n = _big(dtype)
    for length in _SHORT:  # one short row (one lane), then many (each lane a share of them)
        roll(np.zeros(length, dtype), 1)
        roll(np.zeros((max(1, n // length), length), dtype), 1, axis=1)
    budget = max(1 << 20, n * dtype.itemsize // 4)  # block swaps need rotations larger than the scratch bound
    # Each op of a schedule is a kernel of its own, compiled per word width: lengths n + 1, 2, 4 (and
    # halves of them) move items narrower than 8 bytes as narrower words.
    for m in (n, n + 1, n + 2, n + 4) if dtype.itemsize < 8 else (n,):
        a = np.zeros(m, dtype)
        roll(a, 3)  # a buffered shift
        roll(a, m // 3, max_scratch_bytes=budget)  # block swaps, or the chain schedule on one lane
        roll(a, m // 2 - 1, max_scratch_bytes=budget)  # a swap fused with the shift after it
        roll(a, m // 2, max_scratch_bytes=budget)  # one swap
    planner.compile_chain_builders()  # the chain above was planned interpreted; long rows plan compiled
    a = np.zeros(n, dtype)
    roll(np.zeros((64, max(2, n // 64)), dtype), 3, axis=1)  # rows spread over lanes
    roll(a[::2], 3)  # strided
    roll(np.zeros((64, max(2, n // 64)), dtype)[:, ::2], 3, axis=1)
    roll(np.zeros(16, dtype), 3, max_scratch_bytes=0)  # no scratch: reversals


def _cpu_fftshift(dtype: np.dtype, calls: Mapping[str, Callable]) -> None:
    roll, fftshift = calls["roll"], calls["fftshift"]
    n = _big(dtype)
    fftshift(np.zeros(n, dtype))
    for shape in ((6, 8), (4, 6, 5), (64, max(2, n // 64)), (max(2, n // 8), 8)):
        fftshift(np.zeros(shape, dtype))
    # Innermost rows of at most split_inner_row_bytes take a pass of their own (small-rows kernels: a word,
    # up to 8 bytes, 9-16, 17-32 and 33-64 bytes in registers), few rows and many.
    split = tuning.current().split_inner_row_bytes
    for row_bytes in (2, 3, 4, 8, 12, 24, 40):
        length = row_bytes // dtype.itemsize
        if row_bytes % dtype.itemsize or length < 2 or row_bytes > split:
            continue
        for rows in (6, max(6, n // length)):
            fftshift(np.zeros((rows, length), dtype))
    # Rolls over several axes where fewer cycles than threads are walked: each cycle cut into pieces (rows
    # longer than split_inner_row_bytes and blocks of cycle_min_block_bytes, which stay in the one pass).
    policy = tuning.current()
    length = max(8, max(2 * policy.split_inner_row_bytes, policy.cycle_min_block_bytes) // dtype.itemsize)
    roll(np.zeros((max(2, n // length), length), dtype), (1, 3), axis=(0, 1))


def _cpu_roll_rows(dtype: np.dtype, calls: Mapping[str, Callable]) -> None:
    roll_rows = calls["roll_rows"]
    n = _big(dtype)
    for length in _SHORT + (1024,):  # short lanes (words, one word a lane, byte windows), then long ones
        for rows in (4, max(4, n // length)):
            a = np.zeros((rows, length), dtype)
            roll_rows(a, np.arange(rows) - rows // 2)  # a shift a lane
            roll_rows(a, 1)  # one shift broadcast to every lane: a strided shifts array, its own kernels
    for columns in (64, max(64, n // 64)):  # strided lanes
        a = np.zeros((64, columns), dtype)
        roll_rows(a, np.arange(columns), axis=0)
        roll_rows(a, 1, axis=0)


_CPU = {"roll": _cpu_roll, "roll_rows": _cpu_roll_rows, "fftshift": _cpu_fftshift}
