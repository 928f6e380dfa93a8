"""Choosing the GPU algorithm, tile and grid for one step, without launching.

Shared by ``rotate.plan`` (to report) and ``launch`` (to run): what plan()
says is what runs.
"""

from __future__ import annotations

import contextlib
import functools
from typing import Optional

from numba import cuda

from .. import _schedule as S
from .._plan import Step
from . import _kernels

#: Tunables; ``override`` changes them (tests use tiny tiles in the simulator).
settings = {
    "tile_bytes": _kernels.TILE_BYTES,
    "threads": _kernels.THREADS,
    "buffers": _kernels.BUFFERS,
    "min_blocks": 0,  # >0: ask ptxas to fit this many blocks per SM (caps registers)
    "grid": None,  # None: fill the GPU (blocks per SM x SMs)
}

#: Default scratch bound: the larger of this fraction of the array and MIN_SCRATCH.
SCRATCH_FRACTION = 100
MIN_SCRATCH = 16 << 20
#: Block-swap fallback limits: beyond these, three reversals are cheaper.
MAX_SWAP_PASSES = 16
MAX_SWAP_ROWS = 64


def short_fits(n: int, k: int, cap: int) -> bool:
    """Whether one row's seam and flags fit ``cap`` bytes of scratch (the short schedule)."""
    row_cost = S.align_up(S.max_seam_span(n, k)) + 4 * S.tickets_per_row(n, settings["tile_bytes"])
    return row_cost + 16 <= cap


def gries_mills(n: int, k: int, fits):
    """Block swaps that reduce "rotate n bytes left by k" until ``fits(n', k')``.

    Returns ``(swaps, (lo, sub_n, sub_k))``: swap ``[a, a + m)`` with
    ``[b, b + m)`` for each ``(a, b, m)`` in order, then rotate
    ``[lo, lo + sub_n)`` left by ``sub_k`` (``sub_k == 0``: done). Each swap
    puts one block in its final place (Gries and Mills, 1981).
    """
    swaps = []
    lo, sub_n, sub_k = 0, n, k
    while sub_k and not fits(sub_n, sub_k):
        if sub_k <= sub_n - sub_k:
            # [A B1 B2], |A| = |B2| = sub_k: swap A and B2; A is final at the end.
            swaps.append((lo, lo + sub_n - sub_k, sub_k))
            sub_n -= sub_k
        else:
            # [A1 A2 B], |A1| = |B| = m: swap A1 and B; B is final at the front.
            m = sub_n - sub_k
            swaps.append((lo, lo + sub_k, m))
            lo, sub_n, sub_k = lo + m, sub_n - m, sub_k - m
        if sub_k == sub_n:
            sub_k = 0
    return swaps, (lo, sub_n, sub_k)


@contextlib.contextmanager
def override(**values):
    """Temporarily change ``settings`` (tile_bytes, threads, buffers, grid)."""
    unknown = set(values) - set(settings)
    if unknown:
        raise KeyError(f"unknown GPU settings {sorted(unknown)}; known: {sorted(settings)}")
    saved = dict(settings)
    settings.update(values)
    try:
        yield
    finally:
        settings.clear()
        settings.update(saved)


@functools.lru_cache(maxsize=None)
def device_shape(device_id: int = 0):
    """(multiprocessors, shared memory per multiprocessor) of the current device."""
    dev = cuda.get_current_device()
    sms = getattr(dev, "MULTIPROCESSOR_COUNT", 2)
    smem = getattr(dev, "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR", 228 * 1024)
    return int(sms), int(smem)


def persistent_grid(tile_bytes: int, threads: int, buffers: int) -> int:
    """Blocks that fit on the GPU at once: the persistent grid.

    An estimate from shared memory and threads (the kernel needs about 80
    registers a thread, which allow 6 blocks of 128 threads per SM); blocks
    beyond what fits only wait for a free SM, they never deadlock.
    """
    if settings["grid"]:
        return int(settings["grid"])
    sms, smem_per_sm = device_shape(_device_id())

    per_block = _kernels.smem_bytes(tile_bytes, buffers) + 1024  # 1 KiB the driver reserves per block
    registers = 80 if not settings["min_blocks"] else 65536 // (threads * settings["min_blocks"])
    blocks_per_sm = max(1, min(2048 // threads, 65536 // (registers * threads), smem_per_sm // per_block, 32))
    return sms * blocks_per_sm


def _device_id() -> int:
    try:
        return int(cuda.get_current_device().id)
    except Exception:
        return 0


def plan_step(axis, shift, rows, seg, left, word, pointer, max_scratch_bytes: Optional[int]) -> Step:
    """Plan rotating ``rows`` segments of ``seg`` bytes left by ``left`` bytes."""
    tile_bytes = settings["tile_bytes"]
    threads = settings["threads"]
    buffers = settings["buffers"]
    cap = max_scratch_bytes
    if cap is None:
        cap = max(rows * seg // SCRATCH_FRACTION, MIN_SCRATCH)
    seam_row = S.align_up(S.max_seam_span(seg, left))
    per_row = S.tickets_per_row(seg, tile_bytes)
    row_cost = seam_row + 4 * per_row  # seam bytes + one flag per ticket
    if short_fits(seg, left, cap):
        rows_per_launch = min(rows, (cap - 16) // row_cost)
        launches = S.ceil_div(rows, rows_per_launch)
        total = rows_per_launch * per_row
        grid = min(total, persistent_grid(tile_bytes, threads, buffers))
        seam_bytes = rows * min(left, seg - left)  # copied into scratch first, read back once
        return Step(
            axis, shift, rows, seg, left, word,
            algorithm="short",
            scratch_bytes=rows_per_launch * row_cost + 16,
            bytes_moved=2 * rows * seg + 2 * seam_bytes,
            details={
                "schedule": "left" if S.is_left(seg, left) else "right",
                "tile_bytes": tile_bytes,
                "block": threads,
                "buffers": buffers,
                "min_blocks": settings["min_blocks"],
                "grid": grid,
                "rows_per_launch": rows_per_launch,
                "launches": launches,
                "tickets_per_row": per_row,
                "seam_row_bytes": seam_row,
            },
        )
    # The seam does not fit the scratch bound. Block swaps (Gries-Mills) shrink
    # the problem until it does, then the short schedule finishes it; when
    # that takes too many passes (or rows), three reversals: no scratch, 4N.
    if rows <= MAX_SWAP_ROWS:
        swaps, (lo, sub_n, sub_k) = gries_mills(seg, left, lambda n, k: short_fits(n, k, cap))
        if len(swaps) <= MAX_SWAP_PASSES:
            final = None
            moved = sum(4 * m for _, _, m in swaps)
            scratch = 0
            if sub_k:
                final = plan_step(axis, shift, 1, sub_n, sub_k, word, pointer, cap)
                assert final.algorithm == "short", final
                moved += final.bytes_moved
                scratch = final.scratch_bytes
            sms, _ = device_shape(_device_id())
            return Step(
                axis, shift, rows, seg, left, word,
                algorithm="block-swap",
                scratch_bytes=scratch,
                bytes_moved=rows * moved,
                details={
                    "tile_bytes": tile_bytes,
                    "block": threads,
                    "grid": sms * 3,
                    "swaps": tuple(swaps),
                    "final": (lo, sub_n, sub_k),
                    "final_step": final,
                    "reason": f"seam of {seam_row} bytes per row exceeds max_scratch_bytes={cap}",
                },
            )
    # The seam does not fit the scratch bound: three reversals, no scratch,
    # 4N traffic. The long (cycle-based) schedule will replace this.
    k = left // word
    n = seg // word
    half_pairs = rows * (k // 2 + (n - k) // 2 + n // 2)
    return Step(
        axis, shift, rows, seg, left, word,
        algorithm="reversal",
        scratch_bytes=0,
        bytes_moved=4 * rows * seg,
        details={
            "block": 256,
            "grid": max(1, min(S.ceil_div(half_pairs, 256), device_shape(_device_id())[0] * 8)),
            "reason": f"seam of {seam_row} bytes per row exceeds max_scratch_bytes={cap}",
        },
    )
