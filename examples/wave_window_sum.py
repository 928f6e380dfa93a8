"""Sliding-window sum across lanes with waveops.rotate.

    s[i] = x[i] + x[i+1] + ... + x[i+K-1]        for 0 <= i <= n - K

Each wave of W lanes loads W consecutive values; lane l adds the values of
lanes l+1 .. l+K-1, each fetched by one rotate (a K-point window costs K-1
rotates and no shared memory).  Lanes l > W - K would read values that
wrapped around, so waves overlap by K - 1 points and produce W - K + 1 sums:
wave ``w`` starts at point ``w * (W - K + 1)``.

int64 values make every version exact, so the CUDA kernel, its software-wave
twin and numpy agree bit for bit.

Runs on: the CPU software wave (``waveops.cpu``, always) and NVIDIA GPUs
(CUDA, numba-cuda).  The kernel is written for CUDA; the rotate itself also
exists for AMD (``waveops.amdgpu``, compiled, not run here) and Vulkan
(``waveops.spirv``; see ``examples/wave_vulkan.py``).

Run::

    python examples/wave_window_sum.py            # CPU twin; CUDA too if a GPU is present
    python examples/wave_window_sum.py --k 9 --cpu-only
"""

import argparse
import pathlib
import sys

import numpy as np

try:
    import waveops
except ImportError:  # run from a checkout without installing
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
    import waveops

try:
    from numba import cuda
except ImportError:  # the CPU twin needs no numba-cuda
    cuda = None

WARP = 32
BLOCK = 128


def reference(x, k):
    """numpy: the sums of all length-k windows, length n - k + 1."""
    return np.lib.stride_tricks.sliding_window_view(x, k).sum(axis=1)


def cpu_twin(x, k, width=WARP):
    """Software-wave twin of `window_sum_kernel`."""
    n = x.size
    step = width - k + 1
    nwaves = -(-(n - k + 1) // step)
    g = (np.arange(nwaves)[:, None] * step + np.arange(width)).ravel()
    v = x[np.minimum(g, n - 1)]
    acc = v.copy()
    for j in range(1, k):
        acc += waveops.cpu.rotate(v, j, width)  # lane l + j
    lane = waveops.cpu.lane_ids(v.size, width)
    keep = (lane <= width - k) & (g <= n - k)
    s = np.empty(n - k + 1, dtype=x.dtype)
    s[g[keep]] = acc[keep]
    return s


def window_sum_kernel(s, x, k):
    """CUDA: one warp per wave, 33 - k sums per warp (k <= 32)."""
    n = x.size
    i = cuda.grid(1)
    lane = waveops.lane_id()
    g = (i // WARP) * (WARP - k + 1) + lane
    v = x[min(g, n - 1)]  # clamped: every lane must take part in the rotates
    acc = v
    for j in range(1, k):
        acc += waveops.rotate(v, j)
    if lane <= WARP - k and g <= n - k:
        s[g] = acc


def launch_shape(n, k):
    nwaves = -(-(n - k + 1) // (WARP - k + 1))
    return -(-(nwaves * WARP) // BLOCK), BLOCK


def cuda_run(x, k):
    kernel = cuda.jit(window_sum_kernel)
    d_x = cuda.to_device(x)
    d_s = cuda.to_device(np.full(x.size - k + 1, -0x5A5A5A5A, dtype=x.dtype))
    grid, block = launch_shape(x.size, k)
    kernel[grid, block](d_s, d_x, k)
    return d_s.copy_to_host()


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=100_003, help="values (>= k)")
    p.add_argument("--k", type=int, default=5, help="window, 1..32")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--cpu-only", action="store_true", help="skip the CUDA kernel")
    args = p.parse_args(argv)
    if not 1 <= args.k <= WARP or args.n < args.k:
        p.error(f"need 1 <= k <= {WARP} and n >= k, got k={args.k} n={args.n}")

    rng = np.random.default_rng(args.seed)
    x = rng.integers(-(2**40), 2**40, args.n, dtype=np.int64)
    ref = reference(x, args.k)
    for width in sorted({WARP, waveops.cpu.width()}):
        if width < args.k:
            continue  # a window must fit in one wave
        np.testing.assert_array_equal(cpu_twin(x, args.k, width), ref)
        print(f"window sum: software wave (width {width}) == numpy, "
              f"n={args.n} k={args.k}")
    if args.cpu_only or not waveops.cuda_available():
        print("window sum: CUDA kernel skipped (no GPU or --cpu-only)")
        return 0
    np.testing.assert_array_equal(cuda_run(x, args.k), ref)
    print(f"window sum: CUDA kernel (warp of {WARP}) == numpy")
    return 0


if __name__ == "__main__":
    sys.exit(main())
