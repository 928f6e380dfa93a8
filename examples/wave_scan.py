"""Inclusive scan within each wave, built from waveops.rotate and an operator.

Hillis-Steele in log2(W) steps: at step d = 1, 2, 4, ... every lane fetches
the partial result of the lane d places *behind* it, ``rotate(v, -d)``, and
combines it with its own.  Lanes l < d fetched a value that wrapped around
from the end of the wave, so they keep their own value: the mask is
``lane >= d``.  Every lane still executes the rotate (it is a collective);
only the combine is masked.

    out[w*W + l] = x[w*W] op x[w*W + 1] op ... op x[w*W + l]

Shown with two operators: ``+`` on int64 (exact, wraps like numpy) and
``max`` on float32.  The operator is applied as ``op(earlier, later)``, so a
non-commutative (but associative) operator works too.  ``--width`` scans
groups of fewer lanes (a power of two up to 32 on the GPU).

Runs on: the CPU software wave (``waveops.cpu``, always) and NVIDIA GPUs
(CUDA, numba-cuda).  The kernel is written for CUDA; the rotate itself also
exists for AMD (``waveops.amdgpu``, compiled, not run here) and Vulkan
(``waveops.spirv``; see ``examples/wave_vulkan.py``).

Run::

    python examples/wave_scan.py              # CPU twin; CUDA too if a GPU is present
    python examples/wave_scan.py --width 8 --cpu-only
"""

import argparse
import functools
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

OPS = {
    # name: (dtype, numpy accumulate, elementwise op for the twin)
    "add": (np.int64, np.add.accumulate, np.add),
    "max": (np.float32, np.maximum.accumulate, np.maximum),
}


def reference(x, op, width):
    """numpy: an inclusive scan of each group of `width` values."""
    return OPS[op][1](x.reshape(-1, width), axis=1).ravel()


def cpu_twin(x, op, width):
    """Software-wave twin of the scan kernel."""
    combine = OPS[op][2]
    lane = waveops.cpu.lane_ids(x.size, width)
    v = x.copy()
    d = 1
    while d < width:
        t = waveops.cpu.rotate(v, -d, width)  # lane l - d, wrapped for l < d
        v = np.where(lane >= d, combine(t, v), v)
        d *= 2
    return v


def _add(a, b):
    return a + b


def _max(a, b):
    return max(a, b)  # inputs hold no NaN; see np.maximum for NaN rules


def make_scan_kernel(op):
    """Plain-Python CUDA kernel scanning with ``op`` ("add" or "max").

    Returned uncompiled so that it can be ``cuda.jit``-ed or inspected with
    ``cuda.compile_ptx``; `scan_kernel` caches the compiled one.
    """
    combine = cuda.jit(device=True)({"add": _add, "max": _max}[op])

    def scan(out, x, width):
        i = cuda.grid(1)
        n = x.size
        lane = waveops.lane_id() & (width - 1)  # lane within its group
        v = x[min(i, n - 1)]  # clamped: every lane takes part in the rotates
        d = 1
        while d < width:
            t = waveops.rotate(v, -d, width)
            if lane >= d:  # lanes < d received a value that wrapped around
                v = combine(t, v)
            d *= 2
        if i < n:
            out[i] = v

    return scan


@functools.lru_cache(maxsize=None)
def scan_kernel(op):
    """The compiled CUDA kernel scanning with ``op``."""
    return cuda.jit(make_scan_kernel(op))


def cuda_run(x, op, width):
    d_x = cuda.to_device(x)
    poison = np.full_like(x, 0x7FC0DEAD if x.dtype.kind == "i" else np.nan)
    d_out = cuda.to_device(poison)
    grid = -(-x.size // BLOCK)
    scan_kernel(op)[grid, BLOCK](d_out, d_x, width)
    return d_out.copy_to_host()


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=1 << 17, help="values (multiple of 32)")
    p.add_argument("--width", type=int, default=WARP, help="scan group, 1..32")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--cpu-only", action="store_true", help="skip the CUDA kernel")
    args = p.parse_args(argv)
    w = args.width
    if w < 1 or w > WARP or w & (w - 1) or args.n % WARP:
        p.error(f"need width a power of two in 1..32 and n a multiple of 32, "
                f"got width={w} n={args.n}")

    rng = np.random.default_rng(args.seed)
    data = {
        "add": rng.integers(-(2**62), 2**62, args.n, dtype=np.int64),
        "max": rng.standard_normal(args.n).astype(np.float32),
    }
    gpu = not args.cpu_only and waveops.cuda_available()
    for op, x in data.items():
        ref = reference(x, op, w)
        np.testing.assert_array_equal(cpu_twin(x, op, w), ref)
        print(f"scan {op}: software wave (width {w}) == numpy, n={args.n}")
        if gpu:
            np.testing.assert_array_equal(cuda_run(x, op, w), ref)
            print(f"scan {op}: CUDA kernel (groups of {w} lanes) == numpy")
    if not gpu:
        print("scan: CUDA kernel skipped (no GPU or --cpu-only)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
