"""The CUDA backend's part of ``rotate.warmup``: calls on device arrays at the sizes whose plans differ.

The calls are the public functions, handed in by ``rotate.warmup`` (``calls``: name -> function), so
this layer imports nothing above it. GPU kernels are compiled per process (numba-cuda caches none on disk).
"""

from __future__ import annotations

from typing import Callable, Mapping

import numpy as np


def warmup_calls(name: str, dtype: np.dtype, calls: Mapping[str, Callable]) -> None:
    from numba import cuda

    roll, roll_rows, fftshift = calls["roll"], calls["roll_rows"], calls["fftshift"]

    def zeros(shape):
        return cuda.device_array(shape, dtype)

    item = dtype.itemsize
    if name == "roll":
        for nbytes in (4 << 10, 1 << 20, 16 << 20, 64 << 20, 256 << 20):  # the planner's tile and grid follow size
            n = max(2, nbytes // item)
            a = zeros(n)
            for shift in (1, 3, 4097, n // 3, n // 2 - 1, n // 2, n // 2 + 1, (n * 5) // 7, n - 7):
                roll(a, shift)
            del a
    elif name == "fftshift":
        for shape in ((512, 512), (1024, 1024), (1023, 1025), (2048, 4096), (64, 64, 64), (4096, 8), (3, 5),
                      (4096, 4096 // item), (8, (1 << 20) // item)):
            fftshift(zeros(shape))
    else:
        for shape in ((4096, 16), (4096, 15), (1 << 16, 64), (1024, 1024), (1024, 1024 // item * 4), (256, 65536),
                      (64, (1 << 20) // item), (16, 1 << 20), (4, 1 << 22)):
            rows = shape[0]
            shifts = cuda.to_device(np.arange(rows, dtype=np.int64) * 7 - rows)
            roll_rows(zeros(shape), shifts)
    cuda.synchronize()
