"""``block-swap``: Gries-Mills block swaps until the chain's pre-reads fit the scratch bound, then a chain
step a row.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from ...._schedules import chain as S
from ...._schedules import gries_mills as GM
from ...._core.plan import Params, Step, internal
from ..kernels import block_swaps
from .. import device as D
from .. import runtime as R
from ..kernels.memops import SIMULATED
from . import chain


@dataclass(frozen=True, eq=False)
class BlockSwapParams(Params):
    """``block-swap``: Gries-Mills swaps (``kernels.block_swaps.swap_kernel``) until the chain's pre-reads fit, then a
    chain step a row (one planned per 16-byte offset a row can start at)."""

    tile_bytes: int
    block: int
    grid: int
    swaps: tuple
    final: tuple  # (lo, sub_n, sub_k): the sub-problem the final chain step rotates
    final_steps: dict = internal()  # row start % 16 -> the chain Step
    reason: str


def gries_mills(n: int, k: int, fits, max_swaps: Optional[int] = None):
    """Block swaps that reduce "rotate n bytes left by k" until ``fits(n', k')``.

    Stops after ``max_swaps + 1`` swaps when ``max_swaps`` is given (the
    caller gives up past ``max_swaps``): a shift of 1 byte would otherwise
    take ``n`` swaps, each asking ``fits``, on the host.

    Returns ``(swaps, (lo, sub_n, sub_k))``: swap ``[a, a + m)`` with
    ``[b, b + m)`` for each ``(a, b, m)`` in order, then rotate
    ``[lo, lo + sub_n)`` left by ``sub_k`` (``sub_k == 0``: done). Each swap
    puts one block in its final place (Gries and Mills, 1981).
    """
    swaps = []
    lo, sub_n, sub_k = 0, n, k
    while sub_k and not fits(sub_n, sub_k):
        if max_swaps is not None and len(swaps) > max_swaps:
            break
        a, b, m, lo, sub_n, sub_k = GM.swap_step(lo, sub_n, sub_k)  # the lane-swaps kernel's step too
        swaps.append((a, b, m))
    return swaps, (lo, sub_n, sub_k)


def plan(axis, shift, rows, seg, left, word, pointer, cap) -> Optional[Step]:
    # The pre-reads do not fit the scratch bound. Block swaps (Gries-Mills)
    # shrink the problem until they do, then the chain schedule finishes it;
    # when that takes too many passes (or rows), three reversals: no scratch, 4N.
    if rows <= D.policy().max_swap_rows:
        swaps, (lo, sub_n, sub_k) = gries_mills(seg, left, lambda n, k: chain.plan_chain(1, n, k, 0, cap) is not None,
                                                D.policy().max_swap_passes)
        if len(swaps) <= D.policy().max_swap_passes:
            # Every row runs its own final chain step: rows whose start sits at
            # another offset from a 16-byte boundary need a plan for that offset.
            finals = {}
            if sub_k:
                for row in range(min(rows, 16)):
                    head = (pointer + row * seg + lo) % 16
                    if head not in finals:
                        finals[head] = chain.chain_step(axis, shift, 1, sub_n, sub_k, word, head, cap)
                        if finals[head] is None:
                            return None
            moved = sum(4 * m for _, _, m in swaps) + max((f.bytes_moved for f in finals.values()), default=0)
            sms, _ = D.device_shape(D._device_id())
            return Step(
                axis, shift, rows, seg, left, word,
                algorithm="block-swap",
                scratch_bytes=max((f.scratch_bytes for f in finals.values()), default=0),
                bytes_moved=rows * moved,
                params=BlockSwapParams(
                    tile_bytes=D.policy().tile_bytes,
                    block=D.policy().threads or D.policy().default_threads,
                    grid=sms * 3,
                    swaps=tuple(swaps),
                    final=(lo, sub_n, sub_k),
                    final_steps=finals,
                    reason=f"the chain schedule's pre-reads exceed max_scratch_bytes={cap}",
                ),
            )
    return None


def run(target, info, step, handle) -> None:
    p = step.params
    kernel = block_swaps.swap_kernel(p.tile_bytes, p.block)
    lo, sub_n, sub_k = p.final
    for row in range(step.rows):
        offset = row * step.seg_bytes
        data = R._byte_view(target, info, offset, step.seg_bytes)
        head0 = np.int64((info.pointer + offset) % 16)
        for a, b, m in p.swaps:
            tiles = S.ceil_div(m + 15, p.tile_bytes)
            R._launch(kernel, max(1, min(tiles, p.grid)), p.block, handle, (
                data, np.int64(1), np.int64(step.seg_bytes), np.int64(a), np.int64(b), np.int64(m), head0))
        if sub_k:
            start = info.pointer + offset + lo
            final = p.final_steps[start % 16]
            chain.run_chain(start, R._SimSlice(target, offset + lo, sub_n) if SIMULATED else None, final, handle)


RUNS = {BlockSwapParams: run}
