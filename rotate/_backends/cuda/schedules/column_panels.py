"""``column-panels``: ``roll_rows`` along an axis that is not contiguous (columns of C-ordered blocks of
rows), a strip of every lane's rows a block.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np
from numba import cuda

from ...._core import compile_notice as _compile_notice
from ...._core.plan import Params, Step, internal
from .. import device as D
from .. import runtime as R
from ..kernels.memops import SIMULATED


@dataclass(frozen=True, eq=False)
class ColumnPanelsParams(Params):
    """``column-panels`` (``kernels.columns``): ``roll_rows`` along an axis that is not contiguous, a strip of every
    lane's rows a block (in shared memory, or ``staged`` in the block's slot of scratch)."""

    CONSTANTS = (("schedule", "column-panels"), ("co_resident", False))  # strips are disjoint: no block waits
    block: int
    grid: int
    staged: bool
    outer: int  # blocks of rows (the axes before the rolled one)
    pitch: int  # bytes from one item of a lane to the next
    strip_bytes: int  # the widest strip of a row a block takes
    word_bytes: int  # rows are read and written in these
    unit_bytes: int  # a lane's bytes are moved in these
    unroll: int  # words a thread loads before it stores them
    smem_bytes: int
    reason: str
    tile_rows: int  # staged: rows of the strip a tile in shared memory holds
    lanes_per_row: int = internal()


def plan_column_panels(axis: int, outer: int, n: int, inner: int, itemsize: int, pointer: int,
                       max_scratch_bytes: Optional[int] = None) -> Step:
    """``roll_rows`` along an axis that is not contiguous: ``outer`` blocks of ``n`` rows of ``inner`` items
    (C order), lane ``(o, i)`` column ``i`` of block ``o``. One launch, every byte read and written once: a
    block takes a strip of a block's rows whole, in shared memory where ``n`` rows of a strip of at least
    ``column_min_strip_bytes`` fit ``column_smem_bytes``, else staged lane by lane in its slot of scratch."""
    from ..kernels import columns

    T = D.policy()
    pitch = inner * itemsize
    unit = D.pow2_dividing(itemsize | pointer)  # what items and the address are made of
    word = D.pow2_dividing(pitch | pointer)  # what rows and the address are made of (a multiple of unit)
    pitch_w = pitch // word
    threads = T.column_threads
    if threads < 32 or threads % 32 or threads > 1024 or T.column_unroll < 1:
        raise ValueError(f"GPU settings column_threads must be a multiple of 32 up to 1024 and column_unroll at "
                         f"least 1; got {threads!r} and {T.column_unroll!r}")
    # A strip is at most a block's threads wide in words (a thread keeps one word position of it).
    widest = max(1, min(pitch // word, T.column_strip_bytes // word, columns.MAX_STRIP_UNITS * unit // word, threads))
    narrowest = min(widest, -(-T.column_min_strip_bytes // word))
    fit = T.column_smem_bytes // (n * word)
    sms, _ = D.device_shape(D._device_id())
    staged = fit < narrowest
    strip_w = min(widest, T.column_staged_strip_bytes // word if staged else fit)
    strip_w = max(narrowest if not staged else 1, strip_w)
    sector_w = max(1, T.column_min_strip_bytes // word)
    if strip_w > sector_w:  # whole sectors: a strip that ends inside one shares it with the next strip
        strip_w -= strip_w % sector_w
    # Narrower strips (down to the narrowest) where there would be fewer than two a block of a full GPU.
    while strip_w > narrowest and outer * columns.strip_count(pitch_w, strip_w) < 2 * sms:
        half = strip_w // 2
        strip_w = max(narrowest, half - half % sector_w if half > sector_w else half)
    lanes = outer * inner
    total = lanes * n * itemsize
    if staged:
        # Each strip needs its whole lanes staged: the default bound grows to ``column_staged_share`` of the
        # array where the 1% bound would leave fewer slots than a block an SM, and to one slot of the
        # narrowest strip (a word) where even that holds none; a bound the caller gave is kept, the strip
        # narrowed to fit it.
        cap = max_scratch_bytes
        if cap is None:
            cap = max(D.default_cap(lanes, n * itemsize), min(int(total * T.column_staged_share),
                                                             sms * n * strip_w * word), n * word)
        if cap < n * word:
            raise ValueError(
                f"roll_rows along axis {axis} on the GPU stages whole lanes ({n} rows of at least a {word}-byte "
                f"word: {n * word} bytes) in scratch, but max_scratch_bytes={max_scratch_bytes}; allow at least "
                f"{n * word} bytes, or leave max_scratch_bytes=None")
        strip_w = max(1, min(strip_w, cap // (n * word)))
    strips = outer * columns.strip_count(pitch_w, strip_w)
    slot_bytes = n * strip_w * word
    if staged:
        grid = max(1, min(strips, cap // slot_bytes, sms * (2048 // threads)))
        tile_rows = columns.staged_tile_rows(threads, strip_w, T.column_unroll)
        smem = columns.staged_smem_bytes(threads, strip_w, word, unit, T.column_unroll)
        reason = (f"lanes of {n} items along a strided axis: {n} rows of a strip do not fit a block's "
                  f"{T.column_smem_bytes} bytes of shared memory, so each block stages its strips in scratch")
    else:
        smem, tile_rows = slot_bytes, 0
        # Wider blocks where big panels leave an SM few: its loads in flight are threads x UNROLL words.
        while threads < 1024 and threads * D.blocks_for_smem(smem + 8 * columns.MAX_STRIP_UNITS, threads) < \
                T.column_sm_threads:
            threads *= 2
        grid = max(1, min(strips, sms * D.blocks_for_smem(smem + 8 * columns.MAX_STRIP_UNITS, threads)))
        reason = f"lanes along a strided axis: a strip of {n} rows a block, in shared memory"
    if T.grid:  # a forced grid (tests run one block through many strips)
        grid = max(1, min(grid, T.grid))
    params = ColumnPanelsParams(
        block=threads, grid=grid, staged=staged, outer=outer, pitch=pitch, strip_bytes=strip_w * word,
        word_bytes=word, unit_bytes=unit, unroll=T.column_unroll, smem_bytes=smem, reason=reason,
        tile_rows=tile_rows, lanes_per_row=inner)
    return Step(axis, 0, lanes, n * itemsize, 0, itemsize, algorithm="column-panels",
                scratch_bytes=grid * slot_bytes if staged else 0, bytes_moved=(4 if staged else 2) * total,
                params=params)


def run_column_panels(target: Any, info, step, handle: int, shifts: Any, shift_stride: int) -> None:
    """Launch one ``column-panels`` step: lane ``(o, i)`` (column ``i`` of block ``o``) rolled by
    ``shifts[(o * lanes_per_row + i) * shift_stride]`` (int64, on the device)."""
    p = step.params
    word = p.word_bytes
    total = step.rows * step.seg_bytes
    n = step.seg_bytes // step.word_bytes
    words = R._byte_view(target, info, 0, total, f"<u{word}", word)
    flat = _flat_shifts(shifts, step.rows if shift_stride else 1)
    scalars = tuple(np.int64(v) for v in (shift_stride, p.outer, n, p.pitch // word, p.strip_bytes // word,
                                          p.lanes_per_row, step.word_bytes))
    device = D._device_id()
    kernel = _compiled_columns(p.staged, word, p.unit_bytes, p.block, p.unroll, device)
    if p.staged:  # the slots hold units, lane by lane
        _, pre, _, _ = R.scratch_for(handle, device).reserve(0, step.scratch_bytes)
        args = (words, _typed(pre, step.scratch_bytes, p.unit_bytes), flat) + scalars + (np.int64(p.tile_rows),)
    else:
        args = (words, flat) + scalars
    kernel[p.grid, p.block, 0 if SIMULATED else R._numba_stream(handle), p.smem_bytes](*args)


@functools.lru_cache(maxsize=None)
def _compiled_columns(staged: bool, word: int, unit: int, threads: int, unroll: int, device: int):
    """A ``kernels.columns`` kernel compiled for its arguments' types (so the first launch does not compile) and
    allowed the most dynamic shared memory a block can have on ``device``."""
    from ..kernels import columns

    kernel = (columns.staged_kernel if staged else columns.panel_kernel)(word, unit, threads, unroll)
    if not SIMULATED:
        words, units = f"uint{8 * word}[::1]", f"uint{8 * unit}[::1]"
        signature = (f"void({words}, {units}, int64[::1], {', '.join(['int64'] * 8)})" if staged else
                     f"void({words}, int64[::1], {', '.join(['int64'] * 7)})")
        with _compile_notice.gpu_compiling(kernel):
            R._set_dynamic_smem(kernel.compile(signature)._codelibrary.get_cufunc())
    return kernel


def _flat_shifts(shifts: Any, count: int):
    """The ``count`` shifts as the 1-D device array the kernel indexes, in memory order (F-ordered ones
    too; the quick path passes their address)."""
    if SIMULATED:
        return getattr(shifts, "_ary", shifts).reshape(-1, order="A")
    # Always a view of our own (sync=False): numba's dispatcher would import a CuPy array with sync=True and
    # wait on its stream, and device shifts are read on the device so the host never waits for them.
    key = (R._address(shifts), count, "shifts")
    view = R._views.get(key)
    if view is None:
        if len(R._views) > 256:
            R._views.clear()
        desc = {"shape": (count,), "typestr": "<i8", "data": (key[0], False), "version": 3, "strides": None}
        view = R._views[key] = cuda.from_cuda_array_interface(desc, owner=None, sync=False)
    return view


def _typed(buffer, nbytes: int, word: int):
    """The first ``nbytes`` of a uint8 device buffer as ``word``-byte unsigned words."""
    dtype = np.dtype(f"<u{word}")
    if SIMULATED:
        from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray

        return FakeCUDAArray(buffer._ary[:nbytes].view(dtype))
    return buffer[:nbytes].view(dtype)


LANE_RUNS = {ColumnPanelsParams: run_column_panels}
