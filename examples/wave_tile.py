"""Rotating a wave-held tile: a cyclic permutation of per-lane registers.

A wave holds a W x K tile, lane l holding row l in K registers.  Rotating
register k by ``delta + k * skew`` lanes gives

    out[t, l, k] = tile[t, (l + delta + k * skew) mod W, k]

``skew = 0`` rolls the tile's rows (``np.roll(tile, -delta, axis=1)``);
``skew = 1`` is the diagonal skew that register-level transposes are built
from.  Everything stays in registers: one rotate per register, no shared
memory.  float64 values exercise the two-word shuffle, and the check is bit
for bit (NaNs and -0.0 included).

Runs on: the CPU software wave (``waveops.cpu``, always) and NVIDIA GPUs
(CUDA, numba-cuda).  The kernel is written for CUDA; the rotate itself also
exists for AMD (``waveops.amdgpu``, compiled, not run here) and Vulkan
(``waveops.spirv``; see ``examples/wave_vulkan.py``).

Run::

    python examples/wave_tile.py              # CPU twin; CUDA too if a GPU is present
    python examples/wave_tile.py --delta -3 --skew 1 --cpu-only
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


def reference(tile, delta, skew):
    """numpy: roll column k of every tile up by delta + k * skew rows."""
    out = np.empty_like(tile)
    for k in range(tile.shape[2]):
        out[:, :, k] = np.roll(tile[:, :, k], -(delta + k * skew), axis=1)
    return out


def cpu_twin(tile, delta, skew):
    """Software-wave twin: register k of all waves is one lanes array."""
    ntiles, width, nreg = tile.shape
    out = np.empty_like(tile)
    for k in range(nreg):
        lanes = np.ascontiguousarray(tile[:, :, k]).ravel()
        out[:, :, k] = waveops.cpu.rotate(lanes, delta + k * skew, width).reshape(
            ntiles, width
        )
    return out


def tile_kernel(out, tile, delta, skew):
    """CUDA: warp t rotates tile t; each lane keeps its row in registers."""
    t = cuda.grid(1) // WARP
    lane = waveops.lane_id()
    ntiles = tile.shape[0]
    tt = min(t, ntiles - 1)  # spare warps still join the rotates
    for k in range(tile.shape[2]):
        v = waveops.rotate(tile[tt, lane, k], delta + k * skew)
        if t < ntiles:
            out[tt, lane, k] = v


def cuda_run(tile, delta, skew):
    kernel = cuda.jit(tile_kernel)
    d_tile = cuda.to_device(tile)
    poison = np.full(tile.shape, 0x7FF0DEADBEEF0001, dtype=np.uint64)
    d_out = cuda.to_device(poison.view(tile.dtype))
    grid = -(-(tile.shape[0] * WARP) // BLOCK)
    kernel[grid, BLOCK](d_out, d_tile, delta, skew)
    return d_out.copy_to_host()


def make_tiles(ntiles, nreg, width, rng):
    """Random float64 tiles salted with NaN payloads, -0.0 and infinities."""
    tile = rng.standard_normal((ntiles, width, nreg))
    bits = tile.view(np.uint64)
    salt = rng.integers(0, tile.size, 8)
    special = np.array(
        [0x7FF8000000000001, 0xFFF0000000000001, 0x8000000000000000,
         0x7FF0000000000000, 0xFFF0000000000000, 0x0000000000000001,
         0x7FFFFFFFFFFFFFFF, 0x7FF4000000000000],
        dtype=np.uint64,
    )
    bits.ravel()[salt] = special
    return tile


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tiles", type=int, default=1000)
    p.add_argument("--registers", type=int, default=8, help="K, registers per lane")
    p.add_argument("--delta", type=int, default=5)
    p.add_argument("--skew", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--cpu-only", action="store_true", help="skip the CUDA kernel")
    args = p.parse_args(argv)

    rng = np.random.default_rng(args.seed)
    bits_equal = lambda a, b: np.array_equal(a.view(np.uint64), b.view(np.uint64))
    for width in sorted({WARP, waveops.cpu.width()}):
        tile = make_tiles(args.tiles, args.registers, width, rng)
        got = cpu_twin(tile, args.delta, args.skew)
        assert bits_equal(got, reference(tile, args.delta, args.skew))
        print(f"tile: software wave (width {width}) == numpy bit for bit, "
              f"{args.tiles} tiles of {width}x{args.registers}")
    if args.cpu_only or not waveops.cuda_available():
        print("tile: CUDA kernel skipped (no GPU or --cpu-only)")
        return 0
    tile = make_tiles(args.tiles, args.registers, WARP, rng)
    got = cuda_run(tile, args.delta, args.skew)
    assert bits_equal(got, reference(tile, args.delta, args.skew))
    assert bits_equal(got, cpu_twin(tile, args.delta, args.skew))
    print(f"tile: CUDA kernel (warp of {WARP}) == numpy == software wave, bit for bit")
    return 0


if __name__ == "__main__":
    sys.exit(main())
