"""Device microbenchmark for waveops.rotate.

1. ``waveops.rotate`` against a hand-written ``cuda.shfl_sync`` doing the
   same rotation: a long dependent chain of shuffles per thread, so the
   kernel is bound by shuffle latency.  Same source lanes, so the two
   outputs must match bit for bit (checked).  32- and 64-bit values; width
   32 with a fixed delta (index math hoisted) and a delta that changes every
   step (index math in the chain), and width 16.
2. The stencil example (``examples/wave_stencil.py``, neighbours through two
   rotates) against a shared-memory stencil and a plain global-memory one,
   on a large float64 array; GB/s counts one read and one write per point.

Timing: CUDA events around ``--inner`` back-to-back launches, ``--warmup``
untimed rounds first, median of ``--reps`` rounds.  Every kernel writes its
result to global memory, so nothing is dead code.

Usage::

    python benchmarks/wave_bench.py                 # prints a table
    python benchmarks/wave_bench.py --json out.json # and writes the rows
    python benchmarks/wave_bench.py --quick         # small sizes, a smoke test
"""

import argparse
import importlib.util
import json
import os
import platform
import statistics
import sys

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
try:
    import waveops
except ImportError:
    sys.path.insert(0, REPO)
    import waveops

from numba import cuda  # noqa: E402

FULL = 0xFFFFFFFF
WARP = 32


def _load_stencil_example():
    path = os.path.join(REPO, "examples", "wave_stencil.py")
    spec = importlib.util.spec_from_file_location("wave_stencil", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# --------------------------------------------------------------------------
# 1. Shuffle chains


# The "step" kernels vary the delta every iteration, and the raw version is
# written with the same association as rotate's ``lane + delta`` so that both
# do the same index arithmetic; the "fixed" kernels use one delta, whose
# source-lane computation the compiler hoists out of the loop in both.


@cuda.jit
def chain_raw_fixed(out, x, d, reps):
    i = cuda.grid(1)
    v = x[i]
    lane = cuda.laneid
    for r in range(reps):
        v = cuda.shfl_sync(FULL, v, (lane + d) & 31)
    out[i] = v


@cuda.jit
def chain_wave_fixed(out, x, d, reps):
    i = cuda.grid(1)
    v = x[i]
    for r in range(reps):
        v = waveops.rotate(v, d)
    out[i] = v


@cuda.jit
def chain_raw(out, x, d, reps):
    i = cuda.grid(1)
    v = x[i]
    lane = cuda.laneid
    for r in range(reps):
        v = cuda.shfl_sync(FULL, v, (lane + (d + r)) & 31)
    out[i] = v


@cuda.jit
def chain_wave(out, x, d, reps):
    i = cuda.grid(1)
    v = x[i]
    for r in range(reps):
        v = waveops.rotate(v, d + r)
    out[i] = v


@cuda.jit
def chain_raw_w16(out, x, d, reps):
    i = cuda.grid(1)
    v = x[i]
    lane = cuda.laneid
    for r in range(reps):
        v = cuda.shfl_sync(FULL, v, (lane & ~15) | ((lane + (d + r)) & 15))
    out[i] = v


@cuda.jit
def chain_wave_w16(out, x, d, reps):
    i = cuda.grid(1)
    v = x[i]
    for r in range(reps):
        v = waveops.rotate(v, d + r, 16)
    out[i] = v


# --------------------------------------------------------------------------
# 2. Stencils (float64, to run the example's kernel unchanged)

SMEM_BLOCK = 256
SMEM_SIZE = SMEM_BLOCK + 2  # the tile plus its two-point halo


@cuda.jit
def stencil_shared(y, x, inv_h2):
    s = cuda.shared.array(SMEM_SIZE, dtype=np.float64)
    n = x.size
    t = cuda.threadIdx.x
    base = cuda.blockIdx.x * SMEM_BLOCK
    j = base + t
    if j < n:
        s[t] = x[j]
    if t < 2 and j + SMEM_BLOCK < n:
        s[SMEM_BLOCK + t] = x[j + SMEM_BLOCK]
    cuda.syncthreads()
    if j < n - 2:
        y[j] = (s[t] - 2.0 * s[t + 1] + s[t + 2]) * inv_h2


@cuda.jit
def stencil_global(y, x, inv_h2):
    j = cuda.grid(1)
    if j < x.size - 2:
        y[j] = (x[j] - 2.0 * x[j + 1] + x[j + 2]) * inv_h2


# --------------------------------------------------------------------------


def time_ms(launch, reps, warmup, inner):
    """Median milliseconds of one launch, from CUDA events."""
    for _ in range(warmup):
        launch()
    cuda.synchronize()
    samples = []
    for _ in range(reps):
        start, stop = cuda.event(), cuda.event()
        start.record()
        for _ in range(inner):
            launch()
        stop.record()
        stop.synchronize()
        samples.append(cuda.event_elapsed_time(start, stop) / inner)
    return statistics.median(samples)


def bench_shuffles(args, rows):
    sm = cuda.get_current_device().MULTIPROCESSOR_COUNT
    block = 256
    threads = sm * 2048 * (1 if args.quick else 4)
    grid = threads // block
    chain = 64 if args.quick else 1024
    rng = np.random.default_rng(0)
    for dtype in (np.float32, np.float64):
        x = rng.standard_normal(threads).astype(dtype)
        d_x = cuda.to_device(x)
        pairs = [
            ("w32 fixed delta", chain_raw_fixed, chain_wave_fixed),
            ("w32 delta per step", chain_raw, chain_wave),
            ("w16 delta per step", chain_raw_w16, chain_wave_w16),
        ]
        for label, raw, wave in pairs:
            outs, times = {}, {}
            for name, k in (("raw shfl_sync", raw), ("waveops.rotate", wave)):
                d_out = cuda.device_array_like(d_x)
                launch = lambda k=k, d_out=d_out: k[grid, block](d_out, d_x, 3, chain)
                times[name] = time_ms(launch, args.reps, args.warmup, args.inner)
                outs[name] = d_out.copy_to_host().view(np.uint32 if dtype == np.float32 else np.uint64)
            same = bool(np.array_equal(outs["raw shfl_sync"], outs["waveops.rotate"]))
            shuffles = threads * chain * (1 if dtype == np.float32 else 2)
            for name, ms in times.items():
                rows.append({
                    "bench": "shuffle chain",
                    "case": f"{np.dtype(dtype).name} {label}",
                    "impl": name,
                    "ms": ms,
                    "Gshfl_per_s": shuffles / (ms * 1e-3) / 1e9,
                    "vs_raw": ms / times["raw shfl_sync"],
                    "bit_identical_to_raw": same,
                })
            if not same:
                print(f"ERROR: waveops.rotate and shfl_sync disagree ({label}, {dtype})")


def bench_stencil(args, rows):
    ex = _load_stencil_example()
    wave_kernel = cuda.jit(ex.stencil_kernel)
    n = (1 << 20) if args.quick else (1 << 26)
    h = 0.01
    inv_h2 = 1.0 / (h * h)
    x = np.cumsum(np.random.default_rng(1).standard_normal(n))
    d_x = cuda.to_device(x)
    ref = ex.reference(x, h)
    wgrid, wblock = ex.launch_shape(n)
    impls = {
        "waveops stencil (example)": lambda y: wave_kernel[wgrid, wblock](y, d_x, inv_h2),
        "shared-memory stencil": lambda y: stencil_shared[-(-n // SMEM_BLOCK), SMEM_BLOCK](y, d_x, inv_h2),
        "global-memory stencil": lambda y: stencil_global[-(-n // 256), 256](y, d_x, inv_h2),
    }
    base = None
    for name, run in impls.items():
        d_y = cuda.to_device(np.full(n - 2, np.nan))
        run(d_y)
        got = d_y.copy_to_host()
        ok = bool(np.allclose(got, ref, rtol=1e-12, atol=1e-12 * np.abs(ref).max()))
        ms = time_ms(lambda: run(d_y), args.reps, args.warmup, args.inner)
        base = base or ms
        rows.append({
            "bench": "3-point stencil",
            "case": f"float64 n=2^{n.bit_length() - 1}",
            "impl": name,
            "ms": ms,
            "GB_per_s": 2 * 8 * n / (ms * 1e-3) / 1e9,
            "vs_waveops": ms / base,
            "matches_numpy": ok,
        })
        if not ok:
            print(f"ERROR: {name} does not match numpy")


def print_table(rows):
    print(f"{'bench':<16} {'case':<26} {'impl':<28} {'ms':>9} {'rate':>16} {'ratio':>7}  check")
    for r in rows:
        if "Gshfl_per_s" in r:
            rate = f"{r['Gshfl_per_s']:.1f} Gshfl/s"
            ratio, check = r["vs_raw"], r["bit_identical_to_raw"]
        else:
            rate = f"{r['GB_per_s']:.0f} GB/s"
            ratio, check = r["vs_waveops"], r["matches_numpy"]
        print(f"{r['bench']:<16} {r['case']:<26} {r['impl']:<28} {r['ms']:9.4f} "
              f"{rate:>16} {ratio:7.3f}  {'ok' if check else 'MISMATCH'}")


def main(argv=None):
    p = argparse.ArgumentParser(description="waveops.rotate microbenchmarks")
    p.add_argument("--json", metavar="PATH", help="also write the rows as JSON")
    p.add_argument("--reps", type=int, default=15)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--inner", type=int, default=5, help="launches per timed round")
    p.add_argument("--quick", action="store_true", help="small sizes (smoke test)")
    args = p.parse_args(argv)
    if not waveops.cuda_available():
        print("wave_bench: needs numba-cuda and a CUDA GPU", file=sys.stderr)
        return 2

    rows = []
    bench_shuffles(args, rows)
    bench_stencil(args, rows)
    dev = cuda.get_current_device()
    print(f"device: {dev.name.decode() if isinstance(dev.name, bytes) else dev.name}, "
          f"cc {dev.compute_capability}, {dev.MULTIPROCESSOR_COUNT} SMs")
    print("ratio: time / time of the raw shfl_sync (shuffle rows) or of the waveops stencil")
    print_table(rows)
    if args.json:
        import numba
        meta = {
            "device": str(dev.name.decode() if isinstance(dev.name, bytes) else dev.name),
            "compute_capability": list(dev.compute_capability),
            "numba": numba.__version__,
            "numpy": np.__version__,
            "python": platform.python_version(),
            "reps": args.reps, "warmup": args.warmup, "inner": args.inner,
            "quick": args.quick,
        }
        with open(args.json, "w") as f:
            json.dump({"meta": meta, "rows": rows}, f, indent=2)
        print(f"wrote {args.json}")
    bad = [r for r in rows if not r.get("bit_identical_to_raw", True) or not r.get("matches_numpy", True)]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
