"""``reversal``: three reversals, no scratch, 4N; takes every problem (the last schedule).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...._schedules import chain as S
from ...._core.plan import Params, Step
from ..kernels import block_swaps
from .. import device as D
from .. import runtime as R


@dataclass(frozen=True, eq=False)
class ReversalParams(Params):
    """``reversal``: three in-place reversals (``kernels.block_swaps.reverse_kernel``), no scratch, 4N."""

    block: int
    grid: int
    reason: str


def plan(axis, shift, rows, seg, left, word, pointer, cap) -> Step:
    # Three reversals: no scratch, 4N; takes every problem.
    k = left // word
    n = seg // word
    half_pairs = rows * (k // 2 + (n - k) // 2 + n // 2)
    return Step(
        axis, shift, rows, seg, left, word,
        algorithm="reversal",
        scratch_bytes=0,
        bytes_moved=4 * rows * seg,
        params=ReversalParams(
            block=256,
            grid=max(1, min(S.ceil_div(half_pairs, 256), D.device_shape(D._device_id())[0] * 8)),
            reason=f"the chain schedule's pre-reads exceed max_scratch_bytes={cap}",
        ),
    )


def run(target, info, step, handle) -> None:
    word = step.word_bytes
    words = R._byte_view(target, info, 0, step.rows * step.seg_bytes, f"<u{word}", word)
    n, k = step.seg_bytes // word, step.left_bytes // word
    kernel = block_swaps.reverse_kernel(word)
    grid, block = step.params.grid, step.params.block
    for lo, hi in ((0, k), (k, n), (0, n)):
        if hi - lo > 1:
            R._launch(kernel, grid, block, handle,
                    (words, np.int64(step.rows), np.int64(n), np.int64(lo), np.int64(hi)))


RUNS = {ReversalParams: run}
