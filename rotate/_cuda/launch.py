"""Running a plan on the GPU: byte views, the caller's stream, cached scratch."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
from numba import cuda

from .. import _schedule as S
from . import _kernels, planner
from ._memops import SIMULATED


def execute(target: Any, info, plan, stream: Any = None) -> None:
    """Run every step of ``plan`` on ``target`` (an object with __cuda_array_interface__)."""
    cu_stream = resolve_stream(target, stream)
    for step in plan.steps:
        if step.algorithm == "short":
            _run_short(target, info, step, cu_stream)
        elif step.algorithm == "block-swap":
            _run_block_swap(target, info, step, cu_stream)
        elif step.algorithm == "reversal":
            _run_reversal(target, info, step, cu_stream)
        else:  # pragma: no cover - planner and launcher disagree
            raise AssertionError(f"no GPU runner for algorithm {step.algorithm!r}")


# --- streams ---------------------------------------------------------------

def resolve_stream(target: Any, stream: Any):
    """The numba stream to launch on: the caller's, or the array library's current one."""
    if stream is not None:
        return _as_numba_stream(stream)
    if SIMULATED:
        return cuda.default_stream()
    module = type(target).__module__.split(".")[0]
    if module == "torch":
        import torch

        return cuda.external_stream(torch.cuda.current_stream(target.device).cuda_stream)
    if module == "cupy":
        import cupy

        return cuda.external_stream(cupy.cuda.get_current_stream().ptr)
    own = getattr(target, "stream", None)  # numba device arrays carry theirs
    if own is not None and not isinstance(own, int):
        return own
    handle = target.__cuda_array_interface__.get("stream")
    if handle:  # CAI v3: 1 is the legacy default stream, 2 per-thread default
        return cuda.external_stream(handle) if handle > 2 else cuda.default_stream()
    return cuda.default_stream()


def _as_numba_stream(stream: Any):
    if isinstance(stream, int):
        return cuda.external_stream(stream) if stream else cuda.default_stream()
    for attribute in ("cuda_stream", "ptr"):  # torch.cuda.Stream, cupy.cuda.Stream
        handle = getattr(stream, attribute, None)
        if isinstance(handle, int):
            return cuda.external_stream(handle) if handle else cuda.default_stream()
    if hasattr(stream, "handle"):  # already a numba stream
        return stream
    raise TypeError(
        f"stream must be a numba stream, a CuPy or PyTorch stream, or an int handle, "
        f"got {type(stream).__name__}"
    )


def _stream_key(cu_stream) -> int:
    handle = getattr(cu_stream, "handle", 0)
    value = getattr(handle, "value", handle)
    try:
        return int(value or 0)
    except TypeError:
        return id(cu_stream)


# --- scratch ---------------------------------------------------------------

class Scratch:
    """Flags, ticket counters and seam buffer of one stream, reused across calls.

    Flags hold the epoch of the launch that set them, so a new launch (new
    epoch) starts with every flag "not done" without a memset. The counters
    are rewound to zero by the last block of each launch.
    """

    def __init__(self):
        self.flags = None
        self.seam = None
        self.counters = None
        self.epoch = 0

    def reserve(self, flag_count: int, seam_bytes: int, cu_stream):
        if self.counters is None:
            self.counters = cuda.to_device(np.zeros(2, np.uint64), stream=cu_stream)
        if self.flags is None or self.flags.size < flag_count:
            self.flags = cuda.to_device(np.zeros(max(flag_count, 1024), np.uint32), stream=cu_stream)
            self.epoch = 0
        if self.seam is None or self.seam.size < seam_bytes:
            self.seam = cuda.device_array(max(seam_bytes, 16), np.uint8, stream=cu_stream)
        self.epoch += 1
        if self.epoch >= 0xFFFFFFFF:  # wrapped: old flags could alias new epochs
            self.flags = cuda.to_device(np.zeros(self.flags.size, np.uint32), stream=cu_stream)
            self.epoch = 1
        return self.flags, self.seam, self.counters, np.uint32(self.epoch)


_scratch_lock = threading.Lock()
_scratch: dict = {}


def scratch_for(cu_stream) -> Scratch:
    key = (planner._device_id(), _stream_key(cu_stream))
    with _scratch_lock:
        entry = _scratch.get(key)
        if entry is None:
            entry = _scratch[key] = Scratch()
        return entry


# --- runners ---------------------------------------------------------------

_views: dict = {}


def _byte_view(target, info, offset: int, nbytes: int, typestr: str = "|u1", itemsize: int = 1):
    """A 1-D device view of ``nbytes`` bytes of the array from ``offset``, as ``typestr`` words.

    Views own nothing (the caller's array does), so they are cached by
    address: building one costs driver calls that would dominate small rolls.
    """
    if SIMULATED:
        from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray

        host = target._ary.reshape(-1, order="A").view(np.uint8)[offset:offset + nbytes]
        return FakeCUDAArray(host.view(np.dtype(typestr)))
    desc = {
        "shape": (nbytes // itemsize,),
        "typestr": typestr,
        "data": (info.pointer + offset, False),
        "version": 3,
        "strides": None,
    }
    key = (info.pointer + offset, nbytes, typestr)
    view = _views.get(key)
    if view is None:
        if len(_views) > 256:
            _views.clear()
        view = _views[key] = cuda.from_cuda_array_interface(desc, owner=None, sync=False)
    return view


def _launch(kernel, grid, block, cu_stream, args):
    """Launch the compiled kernel directly, skipping numba's per-call argument typing."""
    if not SIMULATED and kernel.overloads:
        compiled = next(iter(kernel.overloads.values()))
        compiled.launch(args, (grid, 1, 1), (block, 1, 1), cu_stream, 0)
    else:
        kernel[grid, block, cu_stream](*args)


def _run_short(target, info, step, cu_stream, offset: int = 0) -> None:
    """Run a "short" step on ``step.rows`` rows starting ``offset`` bytes into the array."""
    d = step.details
    n, k = step.seg_bytes, step.left_bytes
    tile_bytes, threads, buffers = d["tile_bytes"], d["block"], d["buffers"]
    kernel = _kernels.short_kernel(tile_bytes, threads, buffers, d.get("min_blocks", 0))
    seam_kernel = _kernels.seam_kernel()
    per_row = d["tickets_per_row"]
    scratch_row = d["seam_row_bytes"]
    entry = scratch_for(cu_stream)
    with _scratch_lock:  # one launch at a time per stream's scratch
        for first in range(0, step.rows, d["rows_per_launch"]):
            rows = min(d["rows_per_launch"], step.rows - first)
            start = offset + first * n
            data = _byte_view(target, info, start, rows * n)
            total = rows * per_row
            flags, seam, counters, epoch = entry.reserve(total, rows * scratch_row, cu_stream)
            head0 = np.int64((info.pointer + start) % 16)
            seam_vecs = rows * scratch_row // 16
            _launch(seam_kernel, max(1, min(S.ceil_div(seam_vecs, 256), 4096)), 256, cu_stream, (
                data, seam, np.int64(rows), np.int64(n), np.int64(k), head0, np.int64(scratch_row)))
            grid = min(d["grid"], total)
            _launch(kernel, grid, threads, cu_stream, (
                data, seam, flags, counters,
                np.int64(rows), np.int64(n), np.int64(k), head0,
                np.int64(per_row), np.int64(total), epoch, np.int64(scratch_row),
            ))


def _run_block_swap(target, info, step, cu_stream) -> None:
    d = step.details
    kernel = _kernels.swap_kernel(d["tile_bytes"], d["block"])
    lo, sub_n, sub_k = d["final"]
    for row in range(step.rows):
        offset = row * step.seg_bytes
        data = _byte_view(target, info, offset, step.seg_bytes)
        head0 = np.int64((info.pointer + offset) % 16)
        for a, b, m in d["swaps"]:
            tiles = S.ceil_div(m + 15, d["tile_bytes"])
            _launch(kernel, max(1, min(tiles, d["grid"])), d["block"], cu_stream, (
                data, np.int64(1), np.int64(step.seg_bytes), np.int64(a), np.int64(b), np.int64(m), head0))
        if sub_k:
            _run_short(target, info, d["final_step"], cu_stream, offset=offset + lo)


def _run_reversal(target, info, step, cu_stream) -> None:
    word = step.word_bytes
    words = _byte_view(target, info, 0, step.rows * step.seg_bytes, f"<u{word}", word)
    n, k = step.seg_bytes // word, step.left_bytes // word
    kernel = _kernels.reverse_kernel(word)
    grid, block = step.details["grid"], step.details["block"]
    for lo, hi in ((0, k), (k, n), (0, n)):
        if hi - lo > 1:
            _launch(kernel, grid, block, cu_stream,
                    (words, np.int64(step.rows), np.int64(n), np.int64(lo), np.int64(hi)))
