"""GPU benchmark suite: in-place roll as users time it, against memcpy and the peers.

Run ``python -m rotate.bench`` (``--quick`` for a short run, ``--full`` for
4 KiB-16 GiB and every dtype and shift, ``--help`` for options). For each
size, dtype and shift the headline is the *whole call* -- CUDA events around
the Python call, 20 calls back to back, host work included -- as a
percentage of a device-to-device memcpy of the same N bytes measured in the
same run; then one synchronised call at a time, then device work only.
``cupy.roll`` and ``torch.roll`` (out of place), and rotate.roll through a
CuPy array and a torch tensor, are timed the same three ways when installed
(a missing or failing peer is recorded, not fatal). A small-array table
gives per-call microseconds. Every configuration is checked against
``cupy.roll`` (or numpy) before it is timed. Writes JSON (``--json``: rows,
the commit, versions, driver, GPU and every knob) and a PNG plot (``--plot``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from typing import Callable

import numpy as np
from rotate._tuning import cuda as cuda_tuning

MiB = 1 << 20
GiB = 1 << 30
DTYPES = ["uint8", "uint16", "float32", "float64", "complex128"]
SHIFTS = ["1", "3", "4097", "1MiB+5", "n/4+3", "n/3", "n/2+1", "n-7"]


def shift_elements(label: str, n: int, itemsize: int) -> int:
    """The shift (in elements) a label names for an array of n elements.

    ``randS``: a shift drawn uniformly from ``[1, n)`` by a generator seeded
    with ``S`` (the same shift on every run): what a user's shift looks like,
    where the others are structured.
    """
    if label.startswith("rand"):
        return int(np.random.default_rng(int(label[4:])).integers(1, n))
    if label == "1MiB+5":
        return (MiB + 5) // itemsize if itemsize > 1 else MiB + 5
    if label == "n/4+3":
        return n // 4 + 3
    if label == "n/3":
        return n // 3
    if label == "n/2+1":
        return n // 2 + 1
    if label.startswith("n-"):  # a right roll by n - c: a left rotation by c elements
        return n - int(label[2:])
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


def memcpy_baseline(size: int, repeat: int = 10):
    """A GPU probe's reference: ``(time_it, memcpy_ms, keep)``.

    ``time_it`` is the events timer on numba's default stream
    (``_events_timer``), ``memcpy_ms`` a device-to-device copy of ``size``
    bytes timed with it, ``keep`` that copy's buffers (hold them until the
    run ends, so later allocations do not reuse the memory mid-run).
    """
    from numba import cuda

    stream = cuda.default_stream()
    time_it = _events_timer(cuda, stream)
    copy, keep = _memcpy(cuda, size, stream)
    return time_it, time_it(copy, repeat), keep


def forced_chain(tile_bytes: int, buffers: int):
    """A context for GPU probes: the planner's chain layouts other than ``(tile_bytes, buffers)`` are
    refused (with ``planner.override`` of those knobs, the chain plans only that configuration)."""
    import contextlib

    from rotate._cuda import planner

    @contextlib.contextmanager
    def forced():
        real = planner.chain_layout

        def only(n, k, heads, tile, chain, lane_steps, ring, co_resident=False):
            if tile != tile_bytes or ring != buffers:
                return None, 0
            return real(n, k, heads, tile, chain, lane_steps, ring, co_resident)

        planner.chain_layout = only
        try:
            with cuda_tuning.override(tile_bytes=tile_bytes, buffers=buffers):
                yield
        finally:
            planner.chain_layout = real

    return forced()


def roll_matches_cupy(x, shift, axis=None) -> bool:
    """Roll the CuPy array ``x`` in place with rotate; whether it equals ``cupy.roll`` of its old
    contents byte for byte (NaN payloads included)."""
    import cupy

    import rotate

    expected = cupy.roll(x, shift, axis=axis)
    rotate.roll(x, shift, axis=axis)
    return bool(cupy.array_equal(x.view(cupy.uint8), expected.view(cupy.uint8)))


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


def _whole_call_timers(cuda, stream, calls: int = 20):
    """Time the whole call as a user does: CUDA events around the Python call, host work included.

    ``back_to_back``: ``calls`` calls between two events, per call (the host
    may run ahead of the device, as in a loop). ``one_at_a_time``: events
    around a single call on an idle device, then synchronise (what a user
    timing one call sees). Both return median milliseconds per call.
    """

    def back_to_back(fn: Callable[[], None], repeat: int, warmup: int = 2) -> float:
        for _ in range(warmup):
            fn()
        stream.synchronize()
        samples = []
        for _ in range(max(3, repeat // 2)):  # each sample is already `calls` calls
            start, stop = cuda.event(), cuda.event()
            start.record(stream)
            for _ in range(calls):
                fn()
            stop.record(stream)
            stop.synchronize()
            samples.append(cuda.event_elapsed_time(start, stop) / calls)
        return statistics.median(samples)

    def one_at_a_time(fn: Callable[[], None], repeat: int, warmup: int = 2) -> float:
        for _ in range(warmup):
            fn()
        samples = []
        for _ in range(max(2 * repeat, 20)):  # single calls vary more than batches of 20: more samples
            cuda.synchronize()
            start, stop = cuda.event(), cuda.event()
            start.record(stream)
            fn()
            stop.record(stream)
            stop.synchronize()
            samples.append(cuda.event_elapsed_time(start, stop))
        return statistics.median(samples)

    return back_to_back, one_at_a_time


def _time_all_ways(fn, timers, repeat):
    """{"ms": whole call back to back, "sync_ms": one call at a time, "device_ms": device work only}."""
    back_to_back, one_at_a_time, device = timers
    return {"ms": back_to_back(fn, repeat), "sync_ms": one_at_a_time(fn, repeat), "device_ms": device(fn, repeat)}


_PCT_KEYS = {"ms": "pct_memcpy", "sync_ms": "sync_pct_memcpy", "device_ms": "device_pct_memcpy"}


def _with_pct(times: dict, memcpy_ms: float) -> dict:
    out = dict(times)
    for key, value in times.items():
        out[_PCT_KEYS[key]] = 100 * memcpy_ms / value
    return out


def run(sizes, dtypes, shifts, repeat, check=True, log=print, calls=20):
    """Every (size, dtype, shift): rotate.roll and the peers, timed three ways, memcpy in the same run."""
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

    stream = cuda.default_stream()  # the legacy default stream: torch's and CuPy's default too
    timers = (*_whole_call_timers(cuda, stream, calls), _events_timer(cuda, stream))
    rows = []
    rng = np.random.default_rng(1)
    for size in sizes:
        copy, buffers = _memcpy(cuda, size, stream)
        memcpy_ms = timers[2](copy, repeat)
        memcpy_ms_call = timers[0](copy, repeat)
        del copy, buffers  # free before the array and the peers' outputs (16 GiB runs)
        log(f"size {_size_label(size)}: memcpy {memcpy_ms:.4f} ms device = {2 * size / memcpy_ms / 1e6:.0f} GB/s; "
            f"{memcpy_ms_call:.4f} ms per call back to back")
        if cupy is not None:
            pool_x = cupy.empty(size, cupy.uint8)
            pool_x[...] = cupy.random.randint(0, 256, size, dtype=cupy.uint8)
        else:
            host = rng.integers(0, 256, size, dtype=np.uint8)
        for dtype_name in dtypes:
            dtype = np.dtype(dtype_name)
            n = size // dtype.itemsize
            if n < 2:
                continue
            if cupy is not None:
                x = pool_x[: n * dtype.itemsize].view(dtype_name)
                dev = cuda.as_cuda_array(x)
            else:
                x = None
                dev = cuda.to_device(host[: n * dtype.itemsize].view(dtype))
            for label in shifts:
                s = shift_elements(label, n, dtype.itemsize)
                p = rotate.plan(dev, s)
                ok = _check(rotate, dev, s, cupy) if check else None
                row = {
                    "size_bytes": size, "dtype": dtype_name, "shift_label": label, "shift": s,
                    "algorithm": p.algorithm, "tile_bytes": p.tile_bytes, "grid": p.grid,
                    "block": p.block, "buffers": p._detail("buffers"), "co_resident": p._detail("co_resident"),
                    "pre_read_bytes": p._detail("pre_read_bytes"), "lanes": p._detail("lanes"),
                    "scratch_bytes": p.scratch_bytes, "memcpy_ms": memcpy_ms,
                    "memcpy_call_ms": memcpy_ms_call, "correct": ok, "calls_back_to_back": calls,
                }
                row.update(_with_pct(_time_all_ways(lambda: rotate.roll(dev, s), timers, repeat), memcpy_ms))
                row["GBps"] = 2 * size / row["ms"] / 1e6
                row["device_GBps"] = 2 * size / row["device_ms"] / 1e6
                # The two memcpy timings can disagree (4 GiB: 2.24 ms with events around one copy, 2.00 ms
                # back to back in the same runs); the faster is the honest reference.
                row["pct_fastest_memcpy"] = 100 * min(memcpy_ms, memcpy_ms_call) / row["ms"]
                # The same array through the other libraries' front doors, when present.
                if x is not None:
                    _peer(row, "rotate_cupy", lambda: _time_all_ways(lambda: rotate.roll(x, s), timers, repeat),
                          memcpy_ms, log)
                    _peer(row, "cupy", lambda: _time_all_ways(lambda: cupy.roll(x, s), timers, repeat), memcpy_ms, log)
                if torch is not None:
                    def torch_tensor():
                        if x is not None:
                            return torch.as_tensor(x, device="cuda")
                        return torch.as_tensor(dev, device="cuda")

                    _peer(row, "torch", lambda: _time_all_ways(
                        lambda t=torch_tensor(): torch.roll(t, s), timers, repeat), memcpy_ms, log)
                    _peer(row, "rotate_torch", lambda: _time_all_ways(
                        lambda t=torch_tensor(): rotate.roll(t, s), timers, repeat), memcpy_ms, log)
                rows.append(row)
                log(_format_row(row))
        if cupy is not None:
            del pool_x
            cupy.get_default_memory_pool().free_all_blocks()
        if torch is not None:
            torch.cuda.empty_cache()
    return rows


def _size_label(size: int) -> str:
    for unit, scale in (("GiB", GiB), ("MiB", MiB), ("KiB", 1024)):
        if size >= scale and size % scale == 0:
            return f"{size // scale} {unit}"
    return f"{size} B"


def _peer(row, name, timer, memcpy_ms, log):
    """Time a peer (or rotate through another library); a missing or failing one is recorded, not fatal."""
    try:
        times = timer()
        for key, value in times.items():
            suffix = "" if key == "ms" else "_" + key[:-3]
            row[f"{name}{suffix}_ms"] = value
            row[f"{name}{suffix}_pct"] = 100 * memcpy_ms / value
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
    text = (f"  {r['dtype']:>10} shift {r['shift_label']:>7}: {r['algorithm']:>10} "
            f"whole call {r['ms']:8.4f} ms = {r['pct_memcpy']:5.1f}% of memcpy "
            f"(one at a time {r['sync_pct_memcpy']:5.1f}%, device {r['device_pct_memcpy']:5.1f}%)")
    for name in ("cupy", "torch"):
        if f"{name}_pct" in r:
            text += f" | {name}.roll {r[f'{name}_pct']:5.1f}% (device {r[f'{name}_device_pct']:5.1f}%)"
        elif f"{name}_error" in r:
            text += f" | {name}.roll n/a"
    if r.get("correct") is False:
        text += "  WRONG RESULT"
    return text


def small_arrays(nbytes: int = 4096, number: int = 300, repeat: int = 15, log=print) -> list:
    """Per-call microseconds on a small array: rotate on numba, CuPy and torch arrays, torch.roll, cupy.roll.

    Wall clock over ``number`` back-to-back calls and one synchronisation;
    at this size the device keeps up, so this is the host's cost per call.
    A missing or failing library is a row with an error, not a crash.
    """
    from numba import cuda

    import rotate

    host = np.arange(nbytes // 4, dtype=np.float32)
    rows = []

    def per_call_us(fn, sync):
        for _ in range(20):
            fn()
        sync()
        samples = []
        for _ in range(repeat):
            start = time.perf_counter()
            for _ in range(number):
                fn()
            sync()
            samples.append((time.perf_counter() - start) / number * 1e6)
        return statistics.median(samples)

    def record(name, make):
        try:
            fn, sync = make()
            rows.append({"case": name, "bytes": nbytes, "us_per_call": per_call_us(fn, sync)})
            log(f"  {name:>28}: {rows[-1]['us_per_call']:7.1f} us per call ({nbytes} bytes)")
        except Exception as exc:
            rows.append({"case": name, "bytes": nbytes, "error": f"{type(exc).__name__}: {exc}"[:300]})
            log(f"  {name:>28}: {rows[-1]['error']}")

    def numba_case():
        d = cuda.to_device(host)
        return (lambda: rotate.roll(d, 3)), cuda.synchronize

    def torch_case(peer):
        import torch

        if not torch.cuda.is_available():
            raise RuntimeError("torch has no CUDA")
        t = torch.from_numpy(host.copy()).cuda()
        return ((lambda: torch.roll(t, 3)) if peer else (lambda: rotate.roll(t, 3))), torch.cuda.synchronize

    def torch_add():
        import torch

        t = torch.from_numpy(host.copy()).cuda()
        return (lambda: t.add_(1)), torch.cuda.synchronize

    def cupy_case(peer):
        import cupy

        c = cupy.asarray(host)
        return ((lambda: cupy.roll(c, 3)) if peer else (lambda: rotate.roll(c, 3))), cuda.synchronize

    record("rotate.roll (numba array)", numba_case)
    record("rotate.roll (torch tensor)", lambda: torch_case(False))
    record("rotate.roll (cupy array)", lambda: cupy_case(False))
    record("torch.roll", lambda: torch_case(True))
    record("cupy.roll", lambda: cupy_case(True))
    record("torch x.add_(1) (a launch floor)", torch_add)
    return rows


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

    labels = sorted({r["shift_label"] for r in rows},
                    key=lambda label: (SHIFTS.index(label) if label in SHIFTS else len(SHIFTS), label))
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
    axes[0][0].set_ylabel("% of memcpy (whole call, back to back)")
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def parse_sizes(text: str) -> list:
    """'4K,1M,16G' -> bytes; a bare number is MiB (the old --sizes 1024 still means 1 GiB)."""
    out = []
    for item in text.split(","):
        item = item.strip().upper().removesuffix("IB").removesuffix("B")
        scale = {"K": 1 << 10, "M": MiB, "G": GiB}.get(item[-1:], MiB)
        number = item[:-1] if item[-1:] in "KMG" else item
        out.append(int(float(number) * scale))
    return out


DEFAULT_SIZES = "4K,64K,1M,16M,64M,256M,1G,4G"
FULL_SIZES = "4K,64K,1M,16M,64M,256M,1G,4G,16G"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rotate.bench", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="64 MiB and 1 GiB, uint8 and float32, shifts 3 and n-7")
    parser.add_argument("--full", action="store_true", help=f"sizes {FULL_SIZES}, every dtype and shift")
    parser.add_argument("--sizes", default=DEFAULT_SIZES,
                        help=f"sizes with K/M/G suffixes (bare numbers: MiB), comma separated; default {DEFAULT_SIZES}")
    parser.add_argument("--dtypes", default="uint8,float32")
    parser.add_argument("--shifts", default="3,n-7,n/3")
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--calls", type=int, default=20, help="calls between two events, back to back")
    parser.add_argument("--no-check", action="store_true")
    parser.add_argument("--no-small", action="store_true", help="skip the small-array per-call table")
    parser.add_argument("--tiles", help="sweep tile_bytes:threads[:buffers[:min_blocks]], e.g. 32768:256:2,24576:256:2:4")
    parser.add_argument("--profile", action="store_true", help="cProfile the host overhead of small rolls")
    parser.add_argument("--set", action="append", default=[], metavar="KNOB=VALUE",
                        help="a GPU planner setting for the whole run (a field of rotate/_tuning/cuda.py), e.g. "
                             "co_resident=False")
    parser.add_argument("--json", help="write results here")
    parser.add_argument("--plot", help="write a PNG plot here")
    args = parser.parse_args(argv)

    from numba import cuda

    if not cuda.is_available():
        print("no CUDA GPU: the GPU benchmark needs one (the CPU benchmark is benchmarks/cpu_bench.py)")
        return 1
    if args.quick:
        args.sizes, args.dtypes, args.shifts = "64M,1G", "uint8,float32", "3,n-7"
    if args.full:
        args.sizes, args.dtypes, args.shifts = FULL_SIZES, ",".join(DTYPES), ",".join(SHIFTS)
    sizes = parse_sizes(args.sizes)
    dtypes, shifts = args.dtypes.split(","), args.shifts.split(",")
    started = time.time()
    print("headline: the whole call as a user times it (CUDA events around the Python call, "
          f"{args.calls} calls back to back); then one call at a time, then device work only")
    import ast
    import contextlib

    from rotate._cuda import planner

    knobs = {key: ast.literal_eval(value) for key, _, value in (item.partition("=") for item in args.set)}
    with cuda_tuning.override(**knobs) if knobs else contextlib.nullcontext():
        rows = _runs(args, sizes, dtypes, shifts)
    small = []
    if not args.no_small:
        print("small arrays, per call:")
        small = small_arrays()
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
        from . import _provenance

        env = _provenance.environment(gpu=True)
        with open(args.json, "w") as fh:
            json.dump({"benchmark": "rotate.bench", "format": 2, "environment": env,
                       "device": env.get("gpu_knobs", {}).get("gpu"),
                       "arguments": vars(args), "knobs": knobs, "seconds": time.time() - started,
                       "timing": {"ms": f"whole call, CUDA events around {args.calls} back-to-back Python calls",
                                  "sync_ms": "whole call, one synchronised call at a time",
                                  "device_ms": "device work only (a spin kernel keeps the host ahead)",
                                  "pct": "100 * memcpy device time / time"},
                       "rows": rows, "small_arrays": small, "host_overhead_us": overhead}, fh, indent=1)
    if args.plot:
        plot(rows, args.plot)
    print(f"{time.time() - started:.0f} s")
    wrong = [r for r in rows if r["correct"] is False]
    if wrong:
        print(f"{len(wrong)} configurations gave WRONG results")
        return 2
    return 0


def _runs(args, sizes, dtypes, shifts) -> list:
    """``run`` once, or once per ``--tiles`` configuration."""
    if args.tiles:
        from rotate._cuda import planner

        rows = []
        for config in args.tiles.split(","):
            values = [int(v) for v in config.split(":")]
            tile, threads = values[:2]
            buffers = values[2] if len(values) > 2 else planner._t().buffers
            min_blocks = values[3] if len(values) > 3 else 0
            print(f"== tile_bytes={tile} threads={threads} buffers={buffers} min_blocks={min_blocks}")
            with cuda_tuning.override(tile_bytes=tile, threads=threads, buffers=buffers, min_blocks=min_blocks):
                rows += run(sizes, dtypes, shifts, args.repeat, check=not args.no_check, calls=args.calls)
        return rows
    return run(sizes, dtypes, shifts, args.repeat, check=not args.no_check, calls=args.calls)


if __name__ == "__main__":
    sys.exit(main())
