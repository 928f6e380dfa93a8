"""Microbenchmark for waveops.rotate: on a CUDA GPU, or the CPU software wave without one.

GPU (numba-cuda and a CUDA GPU):

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

CPU (no usable GPU, or ``--cpu``): the software wave, ``waveops.cpu.rotate``,
against numpy doing the same rotation (waves as rows of a 2-D view: a roll
along them, or a gather for per-lane deltas), checked bit for bit, at width
32 (the default, a CUDA warp) and at the host SIMD width; then the stencil
example's CPU twin against numpy's slices (equal bit for bit).  Wall clock
around ``--inner`` calls, median of ``--reps`` rounds.

A line on stderr gives the case, i of N, and an estimate of the time left.

Usage::

    python benchmarks/wave_bench.py                 # prints a table (GPU, or the CPU without one)
    python benchmarks/wave_bench.py --json out.json # and writes the rows
    python benchmarks/wave_bench.py --quick         # small sizes, a smoke test
    python benchmarks/wave_bench.py --cpu           # the CPU software wave on a GPU machine
    python benchmarks/wave_bench.py --plot out.png  # and a plot: each bench's rate, waveops beside the others
    python benchmarks/wave_bench.py --from docs/results/wave-bench-h200.json --plot out.png  # measure nothing
"""

import argparse
import importlib.util
import json
import os
import platform
import statistics
import sys
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
try:
    import waveops
except ImportError:
    sys.path.insert(0, REPO)
    import waveops

from rotate.bench import Progress  # noqa: E402

sys.path.insert(1, os.path.dirname(os.path.abspath(__file__)))  # _harness, also when run through runpy
from _harness import plots, provenance  # noqa: E402

try:
    from numba import cuda
except ImportError:  # no numba-cuda: the CPU software wave only
    cuda = None


def _jit(fn):
    """``cuda.jit`` (compiled at the first launch); without numba-cuda the kernel is never launched."""
    return cuda.jit(fn) if cuda is not None else fn


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


@_jit
def chain_raw_fixed(out, x, d, reps):
    i = cuda.grid(1)
    v = x[i]
    lane = cuda.laneid
    for r in range(reps):
        v = cuda.shfl_sync(FULL, v, (lane + d) & 31)
    out[i] = v


@_jit
def chain_wave_fixed(out, x, d, reps):
    i = cuda.grid(1)
    v = x[i]
    for r in range(reps):
        v = waveops.rotate(v, d)
    out[i] = v


@_jit
def chain_raw(out, x, d, reps):
    i = cuda.grid(1)
    v = x[i]
    lane = cuda.laneid
    for r in range(reps):
        v = cuda.shfl_sync(FULL, v, (lane + (d + r)) & 31)
    out[i] = v


@_jit
def chain_wave(out, x, d, reps):
    i = cuda.grid(1)
    v = x[i]
    for r in range(reps):
        v = waveops.rotate(v, d + r)
    out[i] = v


@_jit
def chain_raw_w16(out, x, d, reps):
    i = cuda.grid(1)
    v = x[i]
    lane = cuda.laneid
    for r in range(reps):
        v = cuda.shfl_sync(FULL, v, (lane & ~15) | ((lane + (d + r)) & 15))
    out[i] = v


@_jit
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


@_jit
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


@_jit
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


def bench_shuffles(args, rows, progress):
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
            progress.step(f"shuffle chain, {np.dtype(dtype).name} {label}")
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


def bench_stencil(args, rows, progress):
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
        progress.step(f"3-point stencil, {name}")
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


# --------------------------------------------------------------------------
# 3. The CPU software wave (no GPU)


def numpy_wave_rotate(x, delta, width):
    """numpy doing what waveops.cpu.rotate does: lane l of each wave reads lane (l + delta) mod width."""
    if np.ndim(delta) == 0:
        return np.roll(x.reshape(-1, width), -int(delta), axis=1).ravel()
    i = np.arange(x.size)
    return x[(i & ~(width - 1)) | ((i + delta) & (width - 1))]


def wall_ms(fn, reps, warmup, inner):
    """Median milliseconds of one call, from the wall clock around ``inner`` calls."""
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(reps):
        start = time.perf_counter()
        for _ in range(inner):
            fn()
        samples.append((time.perf_counter() - start) / inner * 1e3)
    return statistics.median(samples)


def cpu_cases(args):
    widths = sorted({waveops.cpu.DEFAULT_WIDTH, waveops.cpu.width()})
    return [(dtype, width, per_lane) for dtype in (np.float32, np.float64) for width in widths
            for per_lane in (False, True)]


def bench_cpu_wave(args, rows, progress):
    n = (1 << 18) if args.quick else (1 << 24)  # lanes, whole waves at every width
    rng = np.random.default_rng(0)
    for dtype, width, per_lane in cpu_cases(args):
        what = "per-lane delta" if per_lane else "delta 3"
        label = f"{np.dtype(dtype).name} w{width} {what}" + (" (default)" if width == 32 else " (SIMD)")
        progress.step(f"software wave, {label}")
        x = rng.standard_normal(n).astype(dtype)
        delta = rng.integers(-100, 100, n) if per_lane else 3
        impls = {"waveops.cpu.rotate": lambda: waveops.cpu.rotate(x, delta, width),
                 "numpy (2-D view)": lambda: numpy_wave_rotate(x, delta, width)}
        word = np.uint32 if np.dtype(dtype).itemsize == 4 else np.uint64
        same = bool(np.array_equal(impls["waveops.cpu.rotate"]().view(word), impls["numpy (2-D view)"]().view(word)))
        times = {name: wall_ms(fn, args.reps, args.warmup, args.inner) for name, fn in impls.items()}
        for name, ms in times.items():
            rows.append({
                "bench": "software wave",
                "case": label,
                "impl": name,
                "ms": ms,
                "Glanes_per_s": n / (ms * 1e-3) / 1e9,
                "vs_numpy": ms / times["numpy (2-D view)"],
                "bit_identical_to_numpy": same,
            })
        if not same:
            print(f"ERROR: waveops.cpu.rotate and numpy disagree ({label})")


def bench_cpu_stencil(args, rows, progress):
    ex = _load_stencil_example()
    n = (1 << 18) if args.quick else (1 << 22)
    h = 0.01
    x = np.cumsum(np.random.default_rng(1).standard_normal(n))
    ref = ex.reference(x, h)
    impls = {"waveops stencil (CPU twin, w32)": lambda: ex.cpu_twin(x, h),
             "numpy slices": lambda: ex.reference(x, h)}
    base = None
    for name, fn in impls.items():
        progress.step(f"3-point stencil, {name}")
        ok = bool(np.array_equal(fn(), ref))  # the same operations in the same order: equal bit for bit
        ms = wall_ms(fn, args.reps, args.warmup, args.inner)
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


# --------------------------------------------------------------------------


def print_table(rows):
    print(f"{'bench':<16} {'case':<34} {'impl':<32} {'ms':>9} {'rate':>16} {'ratio':>7}  check")
    for r in rows:
        if "Gshfl_per_s" in r:
            rate = f"{r['Gshfl_per_s']:.1f} Gshfl/s"
            ratio, check = r["vs_raw"], r["bit_identical_to_raw"]
        elif "Glanes_per_s" in r:
            rate = f"{r['Glanes_per_s']:.2f} Glanes/s"
            ratio, check = r["vs_numpy"], r["bit_identical_to_numpy"]
        else:
            rate = f"{r['GB_per_s']:.1f} GB/s"
            ratio, check = r["vs_waveops"], r["matches_numpy"]
        print(f"{r['bench']:<16} {r['case']:<34} {r['impl']:<32} {r['ms']:9.4f} "
              f"{rate:>16} {ratio:7.3f}  {'ok' if check else 'MISMATCH'}")


#: Each bench's rate: (row key, axis label).
RATES = {"shuffle chain": ("Gshfl_per_s", "G shuffles/s (higher is better)"),
         "3-point stencil": ("GB_per_s", "GB/s, a read and a write a point (higher is better)"),
         "software wave": ("Glanes_per_s", "G lanes/s (higher is better)")}


def plot(data: dict, path, source="this run") -> dict:
    """Each bench's rate (shuffles, bytes or lanes a second), waveops beside the hand-written or numpy way
    doing the same work, a panel per bench; waveops first (blue), as rotate is in every plot."""
    rows, panels = data["rows"], []
    for bench in dict.fromkeys(r["bench"] for r in rows):
        mine = [r for r in rows if r["bench"] == bench]
        key, label = RATES.get(bench, ("ms", "ms a call (lower is better)"))
        cases = list(dict.fromkeys(r["case"] for r in mine))
        impls = sorted(dict.fromkeys(r["impl"] for r in mine), key=lambda name: not name.startswith("waveops"))
        rate = {(r["case"], r["impl"]): r.get(key) for r in mine}
        series = {impl: [rate.get((case, impl)) for case in cases] for impl in impls}
        panels += plots.split(bench, [c.replace(" (", "\n(") for c in cases], series, label, most=8)
    meta = data.get("meta", {})
    what = "the CPU software wave" if meta.get("mode") == "cpu" else "GPU"
    return plots.bars(panels, path, sources=[plots.source(source, data)],
                      title=f"benchmarks/wave_bench.py: waveops.rotate ({what}) against the same work done another "
                            f"way; median of {meta.get('reps')} rounds of {meta.get('inner')} calls")


def main(argv=None):
    p = argparse.ArgumentParser(description="waveops.rotate microbenchmarks (GPU, or the CPU software wave)")
    p.add_argument("--json", metavar="PATH", help="also write the rows as JSON")
    p.add_argument("--reps", type=int, default=15)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--inner", type=int, default=5, help="launches (calls) per timed round")
    p.add_argument("--quick", action="store_true", help="small sizes (smoke test)")
    p.add_argument("--cpu", action="store_true", help="the CPU software wave, even where a GPU is present")
    p.add_argument("--no-progress", action="store_true", help="no progress line on stderr")
    plots.add_arguments(p)
    args = p.parse_args(argv)
    replotted = plots.replot(args, p, plot, "wave_bench")
    if replotted is not None:
        return replotted
    gpu = not args.cpu and waveops.cuda_available()
    if not gpu and not args.cpu:
        print("wave_bench: no usable CUDA GPU (numba-cuda and a GPU needed for waveops.rotate): timing the "
              "CPU software wave, waveops.cpu.rotate, instead", file=sys.stderr)

    rows = []
    if gpu:
        progress = Progress([1] * 9, enabled=not args.no_progress)  # 2 dtypes x 3 shuffle pairs, 3 stencils
        bench_shuffles(args, rows, progress)
        bench_stencil(args, rows, progress)
        dev = cuda.get_current_device()
        name = dev.name.decode() if isinstance(dev.name, bytes) else dev.name
        device = {"device": str(name), "compute_capability": list(dev.compute_capability)}
        heading = (f"device: {name}, cc {dev.compute_capability}, {dev.MULTIPROCESSOR_COUNT} SMs\n"
                   "ratio: time / time of the raw shfl_sync (shuffle rows) or of the waveops stencil")
    else:
        import numba

        progress = Progress([1] * (len(cpu_cases(args)) + 2), enabled=not args.no_progress)
        bench_cpu_wave(args, rows, progress)
        bench_cpu_stencil(args, rows, progress)
        device = {"device": f"CPU ({platform.machine()}, {os.cpu_count()} cpus)",
                  "simd_width": waveops.cpu.width(), "numba_threads": numba.get_num_threads()}
        heading = (f"device: CPU software wave (waveops.cpu), host SIMD width {waveops.cpu.width()}, "
                   f"{numba.get_num_threads()} numba threads\n"
                   "ratio: time / time of numpy (software-wave rows) or of the waveops stencil")
    progress.finish()
    print(heading)
    print_table(rows)
    import numba

    meta = {
        **device,
        "mode": "gpu" if gpu else "cpu",
        "numba": numba.__version__,
        "numpy": np.__version__,
        "python": platform.python_version(),
        "reps": args.reps, "warmup": args.warmup, "inner": args.inner,
        "quick": args.quick,
    }
    doc = {"meta": meta, "environment": provenance.environment(gpu=gpu), "rows": rows}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=2)
        print(f"wrote {args.json}")
    plots.write(args, plot, doc)
    bad = [r for r in rows if not r.get("bit_identical_to_raw", True) or not r.get("matches_numpy", True)
           or not r.get("bit_identical_to_numpy", True)]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
