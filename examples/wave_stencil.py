"""1-D stencil across lanes: the 3-point second difference with waveops.rotate.

    y[i] = (x[i] - 2 x[i+1] + x[i+2]) / h**2        for 0 <= i < n - 2

Each wave of W lanes loads W consecutive points; every lane then gets its
left and right neighbours with two rotates instead of two more loads (or a
shared-memory round trip).  The two edge lanes of a wave lack a neighbour
(theirs wrapped around), so waves overlap by two points and each produces
W - 2 outputs: wave ``w`` starts at point ``w * (W - 2)``.

The CUDA kernel runs one wave per warp (W = 32); its software-wave twin runs
the same steps over numpy arrays of whole waves with ``waveops.cpu.rotate``,
one array operation per lane instruction.  Both are checked against numpy.

Runs on: the CPU software wave (``waveops.cpu``, always) and NVIDIA GPUs
(CUDA, numba-cuda).  The kernel is written for CUDA; the rotate itself also
exists for AMD (``waveops.amdgpu``, compiled, not run here) and Vulkan
(``waveops.spirv``; see ``examples/wave_vulkan.py``).

Run::

    python examples/wave_stencil.py            # CPU twin; CUDA too if a GPU is present
    python examples/wave_stencil.py --n 1000000 --cpu-only
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
BLOCK = 128  # a multiple of 32, so warp w of the grid is threads 32w..32w+31


def reference(x, h):
    """numpy: the interior second difference, length n - 2."""
    inv_h2 = 1.0 / (h * h)
    return (x[:-2] - 2.0 * x[1:-1] + x[2:]) * inv_h2


def _wave_layout(n, w):
    """Point index held by each lane (clamped for the tail) and the wave count."""
    step = w - 2
    nwaves = -(-(n - 2) // step)
    g = (np.arange(nwaves)[:, None] * step + np.arange(w)).ravel()
    return g, nwaves


def cpu_twin(x, h, width=WARP):
    """Software-wave twin of `stencil_kernel`: same lanes, same rotates."""
    n = x.size
    inv_h2 = 1.0 / (h * h)
    g, _ = _wave_layout(n, width)
    c = x[np.minimum(g, n - 1)]  # every lane loads (clamped): all lanes stay in
    left = waveops.cpu.rotate(c, -1, width)  # lane l - 1
    right = waveops.cpu.rotate(c, 1, width)  # lane l + 1
    val = (left - 2.0 * c + right) * inv_h2
    lane = waveops.cpu.lane_ids(c.size, width)
    keep = (lane >= 1) & (lane <= width - 2) & (g <= n - 2)
    y = np.empty(n - 2, dtype=x.dtype)
    y[g[keep] - 1] = val[keep]
    return y


def stencil_kernel(y, x, inv_h2):
    """CUDA: one warp per wave of 32 points, 30 outputs per warp."""
    n = x.size
    i = cuda.grid(1)
    lane = waveops.lane_id()
    g = (i // WARP) * (WARP - 2) + lane
    # All 32 lanes must reach the rotates: clamp the load, guard the store.
    c = x[min(g, n - 1)]
    left = waveops.rotate(c, -1)
    right = waveops.rotate(c, 1)
    if lane >= 1 and lane <= WARP - 2 and g <= n - 2:
        y[g - 1] = (left - 2.0 * c + right) * inv_h2


def launch_shape(n):
    nwaves = -(-(n - 2) // (WARP - 2))
    return -(-(nwaves * WARP) // BLOCK), BLOCK


def cuda_run(x, h):
    """Run `stencil_kernel` on the GPU; returns y (length n - 2)."""
    kernel = cuda.jit(stencil_kernel)
    d_x = cuda.to_device(x)
    d_y = cuda.to_device(np.full(x.size - 2, np.nan, dtype=x.dtype))  # poison
    grid, block = launch_shape(x.size)
    kernel[grid, block](d_y, d_x, 1.0 / (h * h))
    return d_y.copy_to_host()


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=100_003, help="points (>= 3)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--cpu-only", action="store_true", help="skip the CUDA kernel")
    args = p.parse_args(argv)

    rng = np.random.default_rng(args.seed)
    x = np.cumsum(rng.standard_normal(args.n))
    h = 0.01
    ref = reference(x, h)
    for width in sorted({WARP, waveops.cpu.width()}):
        y = cpu_twin(x, h, width)
        # Same operations in the same order as numpy: equal bit for bit.
        np.testing.assert_array_equal(y, ref)
        print(f"stencil: software wave (width {width}) == numpy, n={args.n}")
    if args.cpu_only or not waveops.cuda_available():
        print("stencil: CUDA kernel skipped (no GPU or --cpu-only)")
        return 0
    y = cuda_run(x, h)
    # The GPU may contract a*b+c into one FMA: equal to rounding.
    np.testing.assert_allclose(y, ref, rtol=1e-12, atol=1e-12 * np.abs(ref).max())
    print(f"stencil: CUDA kernel (warp of {WARP}) == numpy to rounding")
    return 0


if __name__ == "__main__":
    sys.exit(main())
