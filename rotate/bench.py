"""GPU benchmark suite: in-place roll against a device-to-device memcpy and the peers.

Run ``python -m rotate.bench`` (``--quick`` for a short run, ``--help`` for
options). For each size, dtype and shift it reports milliseconds, GB/s
(bytes read + written, 2N), the percentage of a device-to-device memcpy of
the same N bytes measured in the same run, and ``cupy.roll`` /
``torch.roll`` (out of place) when installed. Every configuration is checked
against ``cupy.roll`` (or numpy for small sizes) before it is timed. Writes
JSON (``--json``) and a PNG plot (``--plot``, needs matplotlib).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from typing import Callable

import numpy as np

MiB = 1 << 20
GiB = 1 << 30
DTYPES = ["uint8", "uint16", "float32", "float64", "complex128"]
SHIFTS = ["1", "3", "4097", "1MiB+5", "n/4+3", "n/3", "n/2+1", "n-7"]


def shift_elements(label: str, n: int, itemsize: int) -> int:
    """The shift (in elements) a label names for an array of n elements."""
    if label == "1MiB+5":
        return (MiB + 5) // itemsize if itemsize > 1 else MiB + 5
    if label == "n/4+3":
        return n // 4 + 3
    if label == "n/3":
        return n // 3
    if label == "n/2+1":
        return n // 2 + 1
    if label == "n-7":
        return n - 7
    return int(label)


def _events_timer(cuda, stream):
    """Median device time of ``fn`` with CUDA events, host overhead excluded.

    A short spin kernel is queued before the start event so the host runs
    ahead of the GPU: the events then bracket only the device work of
    ``fn``. Host overhead is measured separately (``host_overhead``).
    """
    from numba import uint64

    @cuda.jit
    def spin(nanoseconds):
        if cuda.threadIdx.x == 0:
            waited = uint64(0)
            while waited < nanoseconds:
                cuda.nanosleep(1000)
                waited += uint64(1000)

    def time_it(fn: Callable[[], None], repeat: int, warmup: int = 2) -> float:
        for _ in range(warmup):
            fn()
        samples = []
        for _ in range(repeat):
            start, stop = cuda.event(), cuda.event()
            spin[1, 32, stream](uint64(300_000))
            start.record(stream)
            fn()
            stop.record(stream)
            stop.synchronize()
            samples.append(cuda.event_elapsed_time(start, stop))
        return statistics.median(samples)

    return time_it


def _memcpy(cuda, size, stream):
    """A device-to-device copy of ``size`` bytes: the speed of light of an in-place rotate.

    torch's ``copy_`` when available (what gpu-notes measured), else CuPy's,
    else numba's cuMemcpyDtoD.
    """
    try:
        import torch

        if torch.cuda.is_available():
            a = torch.empty(size, dtype=torch.uint8, device="cuda")
            b = torch.empty_like(a)
            return lambda: b.copy_(a), (a, b)
    except ImportError:
        pass
    try:
        import cupy

        a = cupy.empty(size, cupy.uint8)
        b = cupy.empty_like(a)
        return lambda: b.__setitem__(Ellipsis, a), (a, b)
    except ImportError:
        pass
    a = cuda.device_array(size, np.uint8)
    b = cuda.device_array(size, np.uint8)
    return lambda: b.copy_to_device(a, stream=stream), (a, b)


def run(sizes, dtypes, shifts, repeat, check=True, log=print):
    from numba import cuda

    import rotate

    try:
        import cupy
    except Exception:
        cupy = None
    try:
        import torch

        if not torch.cuda.is_available():
            torch = None
    except Exception:
        torch = None

    stream = cuda.default_stream()
    time_it = _events_timer(cuda, stream)
    rows = []
    rng = np.random.default_rng(1)
    for size in sizes:
        copy, buffers = _memcpy(cuda, size, stream)
        memcpy_ms = time_it(copy, repeat)
        log(f"size {size / MiB:.0f} MiB: memcpy {memcpy_ms:.3f} ms = {2 * size / memcpy_ms / 1e6:.0f} GB/s")
        if cupy is not None:
            pool_x = cupy.empty(size, cupy.uint8)
            pool_x[...] = cupy.random.randint(0, 256, size, dtype=cupy.uint8)
        else:
            host = rng.integers(0, 256, size, dtype=np.uint8)
        for dtype_name in dtypes:
            dtype = np.dtype(dtype_name)
            n = size // dtype.itemsize
            if cupy is not None:
                x = pool_x[: n * dtype.itemsize].view(dtype_name)
                dev = cuda.as_cuda_array(x)
            else:
                dev = cuda.to_device(host[: n * dtype.itemsize].view(dtype))
            for label in shifts:
                s = shift_elements(label, n, dtype.itemsize)
                p = rotate.plan(dev, s)
                ok = None
                if check:
                    ok = _check(rotate, dev, s, cupy)
                ms = time_it(lambda: rotate.roll(dev, s), repeat)
                row = {
                    "size_bytes": size, "dtype": dtype_name, "shift_label": label, "shift": s,
                    "algorithm": p.algorithm, "tile_bytes": p.tile_bytes, "grid": p.grid,
                    "block": p.block, "buffers": p._detail("buffers"),
                    "scratch_bytes": p.scratch_bytes, "ms": ms, "memcpy_ms": memcpy_ms,
                    "GBps": 2 * size / ms / 1e6, "pct_memcpy": 100 * memcpy_ms / ms, "correct": ok,
                }
                if cupy is not None:
                    cx = x
                    _peer(row, "cupy", lambda: time_it(lambda: cupy.roll(cx, s), repeat), memcpy_ms, log)
                if torch is not None:
                    def torch_time():
                        tx = torch.as_tensor(x, device="cuda") if cupy is not None else torch.empty(
                            n, dtype=_torch_dtype(torch, dtype_name), device="cuda")
                        return time_it(lambda: torch.roll(tx, s), repeat)
                    _peer(row, "torch", torch_time, memcpy_ms, log)
                rows.append(row)
                log(_format_row(row))
        del buffers
    return rows


def _peer(row, name, timer, memcpy_ms, log):
    """Time a peer library's roll; a dtype it does not support is recorded, not fatal."""
    try:
        row[f"{name}_ms"] = timer()
        row[f"{name}_pct"] = 100 * memcpy_ms / row[f"{name}_ms"]
    except Exception as exc:  # e.g. torch.roll has no CUDA kernel for uint16
        row[f"{name}_error"] = f"{type(exc).__name__}: {exc}"[:200]


def _torch_dtype(torch, name):
    return {"uint8": torch.uint8, "uint16": torch.uint16, "float32": torch.float32,
            "float64": torch.float64, "complex128": torch.complex128}[name]


def _check(rotate, dev, s, cupy) -> bool:
    if cupy is not None:
        # Compare bytes: random bit patterns include NaNs, which never compare equal.
        x = cupy.asarray(dev)
        expected = cupy.roll(x, s).view(cupy.uint8)
        rotate.roll(dev, s)
        ok = bool(cupy.array_equal(x.view(cupy.uint8), expected))
        rotate.roll(dev, -s)
        return ok and bool(cupy.array_equal(cupy.roll(x, s).view(cupy.uint8), expected))
    before = dev.copy_to_host()
    rotate.roll(dev, s)
    return bool(np.array_equal(dev.copy_to_host(), np.roll(before, s)))


def _format_row(r) -> str:
    text = (f"  {r['dtype']:>10} shift {r['shift_label']:>7}: {r['algorithm']:>8} "
            f"{r['ms']:8.3f} ms {r['GBps']:6.0f} GB/s {r['pct_memcpy']:5.1f}% of memcpy")
    if "cupy_pct" in r:
        text += f" | cupy.roll {r['cupy_pct']:5.1f}%"
    if "torch_pct" in r:
        text += f" | torch.roll {r['torch_pct']:5.1f}%"
    if r.get("correct") is False:
        text += "  WRONG RESULT"
    return text


def host_overhead(log=print):
    """Wall-clock microseconds per call for small arrays (launch overhead dominates)."""
    from numba import cuda

    import rotate

    out = {}
    for size in (1024, 64 * 1024, MiB):
        dev = cuda.to_device(np.arange(size, dtype=np.uint8))
        rotate.roll(dev, 3)
        cuda.synchronize()
        count = 200
        start = time.perf_counter()
        for _ in range(count):
            rotate.roll(dev, 3)
        cuda.synchronize()
        out[size] = (time.perf_counter() - start) / count * 1e6
        log(f"host overhead, {size} bytes: {out[size]:.1f} us per call")
    return out


def plot(rows, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = sorted({r["shift_label"] for r in rows}, key=SHIFTS.index)
    fig, axes = plt.subplots(1, len(labels), figsize=(4 * len(labels), 3.6), sharey=True, squeeze=False)
    for ax, label in zip(axes[0], labels):
        for dtype in DTYPES:
            pts = sorted((r["size_bytes"], r["pct_memcpy"]) for r in rows
                         if r["shift_label"] == label and r["dtype"] == dtype and r["algorithm"] != "noop")
            if pts:
                ax.plot([p[0] / MiB for p in pts], [p[1] for p in pts], marker="o", label=dtype)
        ax.axhline(100, color="k", linestyle="--", linewidth=1, label="memcpy")
        ax.set_xscale("log", base=2)
        ax.set_title(f"shift {label}")
        ax.set_xlabel("array size (MiB)")
    axes[0][0].set_ylabel("% of device-to-device memcpy")
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rotate.bench", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="64 MiB and 1 GiB, uint8 and float32")
    parser.add_argument("--sizes", default="1,16,256,1024,4096,8192", help="sizes in MiB, comma separated")
    parser.add_argument("--dtypes", default=",".join(DTYPES))
    parser.add_argument("--shifts", default=",".join(SHIFTS))
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--no-check", action="store_true")
    parser.add_argument("--tiles", help="sweep tile_bytes:threads[:buffers[:min_blocks]], e.g. 32768:256:2,24576:256:2:4")
    parser.add_argument("--profile", action="store_true", help="cProfile the host overhead of small rolls")
    parser.add_argument("--json", help="write results here")
    parser.add_argument("--plot", help="write a PNG plot here")
    args = parser.parse_args(argv)

    from numba import cuda

    if not cuda.is_available():
        print("no CUDA GPU: the GPU benchmark needs one (the CPU benchmark is benchmarks/cpu_bench.py)")
        return 1
    if args.quick:
        args.sizes, args.dtypes = "64,1024", "uint8,float32"
    sizes = [int(float(s) * MiB) for s in args.sizes.split(",")]
    if args.tiles:
        from rotate._cuda import planner

        rows = []
        for config in args.tiles.split(","):
            values = [int(v) for v in config.split(":")]
            tile, threads = values[:2]
            buffers = values[2] if len(values) > 2 else planner.settings["buffers"]
            min_blocks = values[3] if len(values) > 3 else 0
            print(f"== tile_bytes={tile} threads={threads} buffers={buffers} min_blocks={min_blocks}")
            with planner.override(tile_bytes=tile, threads=threads, buffers=buffers, min_blocks=min_blocks):
                rows += run(sizes, args.dtypes.split(","), args.shifts.split(","), args.repeat,
                            check=not args.no_check)
    else:
        rows = run(sizes, args.dtypes.split(","), args.shifts.split(","), args.repeat, check=not args.no_check)
    overhead = host_overhead()
    if args.profile:
        import cProfile
        import pstats

        import rotate

        dev = cuda.to_device(np.arange(4096, dtype=np.uint8))
        rotate.roll(dev, 3)
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(300):
            rotate.roll(dev, 3)
        profiler.disable()
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(18)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"device": cuda.get_current_device().name.decode()
                       if isinstance(cuda.get_current_device().name, bytes)
                       else str(cuda.get_current_device().name),
                       "rows": rows, "host_overhead_us": overhead}, fh, indent=1)
    if args.plot:
        plot(rows, args.plot)
    wrong = [r for r in rows if r["correct"] is False]
    if wrong:
        print(f"{len(wrong)} configurations gave WRONG results")
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
