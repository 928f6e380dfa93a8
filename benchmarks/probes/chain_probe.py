"""Which chain configuration (tile, ring, lane length) runs fastest, and what does a small call cost the host?

Backs: `rotate._backends.cuda.kernels.chain.ENTRY_BATCH` and the lanes of a chain step (docs/tuning.md, "GPU: the chain
kernel"), from docs/results/chain-probe-5-b342780.json and chain-probe-7-describe-ahead.json.

Chain kernel probe on a GPU: configurations (tile, ring, lane length) and per-call host time.

``python benchmarks/probes/chain_probe.py --json out.json``. Device time of
``rotate.roll`` for the gate's shifts with each configuration forced through
``rotate._backends.cuda.tuning.override``, as % of a device-to-device memcpy in the
same run; then host microseconds per call on 4 KiB arrays (rotate on numba,
CuPy and torch arrays; torch.roll, cupy.roll). Every configuration is checked
against cupy.roll before it is timed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np

from rotate import bench
from rotate._backends.cuda import tuning as cuda_tuning


def device_sweep(sizes_mib, dtypes, shifts, configs, repeat, log=print):
    import cupy
    from numba import cuda

    import rotate

    stream = cuda.default_stream()
    time_it = bench._events_timer(cuda, stream)
    rows = []
    for size_mib in sizes_mib:
        size = size_mib << 20
        copy, keep = bench._memcpy(cuda, size, stream)
        memcpy_ms = time_it(copy, repeat)
        pool = cupy.random.randint(0, 256, size, dtype=cupy.uint8)
        for dtype in dtypes:
            x = pool.view(dtype)
            n = x.size
            for label in shifts:
                s = bench.shift_elements(label, n, np.dtype(dtype).itemsize)
                for config in configs:
                    with cuda_tuning.override(**config):
                        p = rotate.plan(x, s)
                        expected = cupy.roll(x, s).view(cupy.uint8).copy()
                        rotate.roll(x, s)
                        ok = bool(cupy.array_equal(x.view(cupy.uint8), expected))
                        rotate.roll(x, -s)
                        ms = time_it(lambda: rotate.roll(x, s), repeat)
                    step = p.steps[0] if p.steps else None
                    row = dict(size_mib=size_mib, dtype=dtype, shift=label, config=config, ok=ok,
                               algorithm=p.algorithm, ms=ms, memcpy_ms=memcpy_ms, pct=100 * memcpy_ms / ms,
                               scratch=p.scratch_bytes,
                               details={k: v for k, v in (step.details.items() if step else [])
                                        if not k.startswith("_") and isinstance(v, (int, float, str, bool))})
                    rows.append(row)
                    log(f"{size_mib:>6} MiB {dtype:>8} {label:>7} {str(config):>52}: {p.algorithm:>10} "
                        f"{'ok' if ok else 'WRONG'} {ms:.3f} ms {row['pct']:5.1f}% scratch {p.scratch_bytes >> 20} MiB "
                        f"{row['details']}")
        del keep, pool
    return rows


def host_per_call(calls=2000, log=print):
    import cupy
    import torch
    from numba import cuda

    import rotate

    out = {}
    host = np.arange(4096, dtype=np.uint8)
    cases = {
        "rotate(numba)": (cuda.to_device(host), lambda a: rotate.roll(a, 3)),
        "rotate(cupy)": (cupy.asarray(host), lambda a: rotate.roll(a, 3)),
        "rotate(torch)": (torch.from_numpy(host.copy()).cuda(), lambda a: rotate.roll(a, 3)),
        "torch.roll": (torch.from_numpy(host.copy()).cuda(), lambda a: torch.roll(a, 3)),
        "cupy.roll": (cupy.asarray(host), lambda a: cupy.roll(a, 3)),
        "torch add_": (torch.from_numpy(host.copy()).cuda(), lambda a: a.add_(1)),
    }
    for name, (array, fn) in cases.items():
        for _ in range(50):
            fn(array)
        cuda.synchronize()
        samples = []
        for _ in range(5):
            t0 = time.perf_counter()
            for _ in range(calls):
                fn(array)
            samples.append((time.perf_counter() - t0) / calls * 1e6)
            cuda.synchronize()
        out[name] = statistics.median(samples)
        log(f"host per call {name:>14}: {out[name]:7.1f} us")
    return out


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1024,4096")
    parser.add_argument("--dtypes", default="uint8,float32")
    parser.add_argument("--shifts", default=",".join(bench.SHIFTS))
    parser.add_argument("--configs", default="32768:2,16384:2,16384:3",
                        help="tile_bytes:buffers[:min_blocks[:lane_steps]] list (0: default)")
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    configs = []
    for text in args.configs.split(","):
        parts = [int(v) for v in text.split(":")]
        config = {"tile_bytes": parts[0], "buffers": parts[1]}
        if len(parts) > 2 and parts[2]:
            config["min_blocks"] = parts[2]
        if len(parts) > 3:
            config["lane_steps"] = parts[3]
        configs.append(config)
    result = {"host_us": host_per_call()}
    result["device"] = device_sweep([int(v) for v in args.sizes.split(",")], args.dtypes.split(","),
                                    args.shifts.split(","), configs, args.repeat)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(result, fh, indent=1, default=str)


if __name__ == "__main__":
    main()
