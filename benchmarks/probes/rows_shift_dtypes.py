"""Do narrower shift dtypes speed CPU roll_rows of short lanes?

Backs: shift arrays taken in any integer dtype as given (docs/tuning.md, "CPU: `roll_rows` lanes"), from
docs/results/cpu-rows-shift-dtypes.json.

roll_rows on the CPU with shifts of different integer dtypes: int64 against int32 and int16.

The CPU kernels take int32 shifts as given (narrower ones widened to int32),
so for lanes of a few bytes, where an int64 shift per lane outweighs the lane,
narrower shifts cut the bytes read and the conversion copy. Same arrays and
shift values in every row of the table; times are medians of ``--repeats``
runs, each after writing ``--flush-mib`` MiB (as benchmarks/rows_bench.py),
and ``np.copyto`` of the same bytes is timed alongside.

Run: ``python benchmarks/probes/rows_shift_dtypes.py [--mib 256] [--json docs/results/cpu-rows-shift-dtypes.json]``
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import rows_bench  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--flush-mib", type=int, default=1024)
    parser.add_argument("--json")
    from rotate import bench_env

    bench_env.add_arguments(parser)  # a busy machine is refused (exit status 3), or marked with --allow-busy
    args = parser.parse_args(argv)
    load = bench_env.LoadGate.from_args(args, "benchmarks/probes/rows_shift_dtypes.py")

    import rotate
    from rotate import _provenance

    rows_bench._flush_buffer = np.zeros(args.flush_mib << 17, np.float64)
    nbytes = args.mib << 20
    rows = []
    for n, dtype in ((3, np.uint8), (5, np.uint16), (4, np.uint8), (8, np.float32)):
        dtype = np.dtype(dtype)
        shape = (nbytes // (n * dtype.itemsize), n)
        rng = np.random.default_rng(0)
        a = np.empty(shape, dtype)
        a.view(np.uint8).reshape(-1)[:] = rng.integers(1, 255, a.nbytes, dtype=np.uint8)
        src, dst = a.copy(), np.empty_like(a)
        base = rng.integers(-n, n, shape[0])
        copyto_ms = rows_bench.median_ms(lambda: np.copyto(dst, src), args.repeats)
        for shift_dtype in (np.int64, np.int32, np.int16):
            shifts = base.astype(shift_dtype)
            expected = np.take_along_axis(a, (np.arange(n) - base[:, None]) % n, axis=1)
            rotate.roll_rows(a, shifts)
            assert rows_bench.same(a, expected), (n, dtype, shift_dtype)
            del expected
            ms = rows_bench.median_ms(lambda: rotate.roll_rows(a, shifts), args.repeats)
            row = {"shape": list(shape), "dtype": dtype.name, "lane_bytes": n * dtype.itemsize,
                   "shift_dtype": np.dtype(shift_dtype).name, "algorithm": rotate.plan_roll_rows(a, shifts).algorithm,
                   "ms": ms, "copyto_ms": copyto_ms, "vs_copyto": ms / copyto_ms,
                   "shift_bytes_over_array": shifts.nbytes / a.nbytes}
            rows.append(row)
            print(f"{row['lane_bytes']:3d} B lanes {dtype.name:8s} shifts {row['shift_dtype']:6s}: "
                  f"{ms:7.1f} ms = {row['vs_copyto']:.2f}x copyto ({copyto_ms:.1f} ms)  {row['algorithm']}", flush=True)
    result = load.finish({"benchmark": "rows_shift_dtypes", "environment": _provenance.environment(),
                          "mib": args.mib, "repeats": args.repeats, "flush_mib": args.flush_mib, "rows": rows})
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(result, handle, indent=1)
    return load.status()


if __name__ == "__main__":
    sys.exit(main())
