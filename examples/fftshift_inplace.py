"""In-place fftshift / ifftshift of an N-D array with rotate.fftshift / rotate.ifftshift.

numpy.fft.fftshift(x) is numpy.roll(x, [n // 2 for n in x.shape], axes):
the zero-frequency term moves to the centre. rotate.fftshift does it in
place, without a second array, on the CPU (numpy; every axis in one pass)
or the GPU (CuPy, PyTorch or numba device arrays; one pass where a row
fits a block, else one per axis: the plan says). ``--cpu-only`` skips the
GPU part.

    python examples/fftshift_inplace.py [--cpu-only]
"""

import sys

import numpy as np

import rotate


def main(cpu_only: bool) -> None:
    rng = np.random.default_rng(0)
    spectrum = np.fft.fft2(rng.standard_normal((513, 1024)))
    expected = np.fft.fftshift(spectrum)
    shifted = spectrum.copy()
    rotate.fftshift(shifted)
    assert np.array_equal(shifted, expected), "rotate.fftshift differs from numpy.fft.fftshift"
    rotate.ifftshift(shifted)
    assert np.array_equal(shifted, spectrum), "rotate.ifftshift did not undo rotate.fftshift"
    print(f"CPU: in-place fftshift of a {spectrum.shape} complex128 spectrum equals numpy.fft.fftshift")

    if cpu_only:
        return
    try:
        from numba import cuda
        from numba.core import config

        if config.ENABLE_CUDASIM or not cuda.is_available():
            print("no CUDA GPU: skipped the GPU part")
            return
    except ImportError:
        print("numba-cuda not installed: skipped the GPU part")
        return
    device = cuda.to_device(spectrum)
    plan = rotate.plan(device, [n // 2 for n in spectrum.shape], (0, 1))
    rotate.fftshift(device)
    assert np.array_equal(device.copy_to_host(), expected)
    print(f"GPU: in-place fftshift of the same spectrum equals numpy.fft.fftshift ({plan.algorithm}, "
          f"{len(plan.steps)} pass{'es' if len(plan.steps) > 1 else ''})")


if __name__ == "__main__":
    main("--cpu-only" in sys.argv[1:])
