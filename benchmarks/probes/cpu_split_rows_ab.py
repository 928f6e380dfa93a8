"""Up to which row length should a CPU multi-axis roll give its innermost axis a pass of its own?

Backs: `cpu.split_inner_row_bytes` (docs/tuning.md, "CPU: multi-axis rolls"), from
docs/results/cpu-split-rows.json.

The one-pass ``multi-axis-cycles`` schedule moves each row of the innermost rolled axis as two pieces
(the row's own rotation): rows of a few tens of bytes become copies of a few bytes, and the random CPU
run had such rolls at 3-15x ``np.copyto``. The alternative is a pass of ``small-rows-registers``
(rows of 3-64 bytes rotated in registers) or ``small-rows-copy`` for the inner axis, then the other axes.
This times, alternated in one process, whole ``rotate.roll`` calls (all of numba's threads, plans made
once before timing) with ``split_inner_row_bytes`` at several values, as multiples of a one-thread
``np.copyto`` of the same bytes: the random CPU run's multi-axis cases (seed 3315205479) and 2- and 3-axis
rolls of rows of 17 B to 2 KiB; each result checked against ``np.roll`` once, byte for byte.

    python benchmarks/probes/cpu_split_rows_ab.py --json out.json [--mib 128] [--splits 16,32,64,128,256]
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))


def cases(mib: int) -> list:
    out = [("random 25", (511, 65, 128, 19), "uint8", (4, 9, -90, -5), (0, 1, 2, 3)),
           ("random 19", (2048, 15, 631, 1), "uint8", (-12, -340, 1), (1, 2, 3)),
           ("random 10", (20287, 627), "float32", (10190, 40), (0, 1)),
           ("random 3", (2011, 546), "complex128", (1562, 65), (0, 1)),
           ("random 8", (1023, 32, 255), "complex128", (-511, -16, -127), (0, 1, 2))]
    for row in (17, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 1024, 2048):
        rows = (mib << 20) // row
        out.append((f"2 axes, {row} B rows", (rows, row), "uint8", (rows // 3 + 1, row // 3 + 1), (0, 1)))
    for n in (6, 12, 24, 64, 160):
        rows = (mib << 20) // (4 * n)
        out.append((f"2 axes, {4 * n} B rows", (rows, n), "float32", (rows // 3 + 1, n // 3 + 1), (0, 1)))
    for row in (20, 40, 80, 160, 320, 640):
        lead = (mib << 20) // (37 * row)
        out.append((f"3 axes, {row} B rows", (lead, 37, row), "uint8", (lead // 3 + 1, 11, row // 3 + 1), (0, 1, 2)))
    return out


def median_seconds(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def main(argv=None) -> int:
    from rotate import bench_env

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json")
    parser.add_argument("--mib", type=int, default=128)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--splits", default="16,32,64,128,256")
    bench_env.add_arguments(parser)
    args = parser.parse_args(argv)
    gate = bench_env.LoadGate.from_args(args, "cpu_split_rows_ab")

    import rotate
    from _harness.provenance import environment
    from rotate._backends.cpu import tuning as cpu

    splits = [int(s) for s in args.splits.split(",")]
    rows = []
    for name, shape, dtype, shifts, axes in cases(args.mib):
        nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
        a = np.random.default_rng(0).integers(0, 256, nbytes, dtype=np.uint8).view(dtype).reshape(shape)
        other = np.empty_like(a)
        copyto = median_seconds(lambda: np.copyto(other, a), args.repeat)  # numpy's copy: one thread
        del other
        want = np.roll(a, shifts, axes)
        row = {"case": name, "shape": list(shape), "dtype": dtype, "shifts": list(shifts), "axes": list(axes),
               "nbytes": nbytes, "copyto_ms": 1e3 * copyto}
        for split in splits:
            with cpu.override(split_inner_row_bytes=split):
                check = a.copy()
                plan = rotate.plan(check, shifts, axes)
                rotate.roll(check, shifts, axes)
                row[str(split)] = {"algorithm": plan.algorithm, "steps": len(plan.steps),
                                   "correct": check.tobytes() == want.tobytes(), "seconds": []}
        del check, want
        for _ in range(args.repeat):  # the values alternated, a call each a round
            for split in splits:
                with cpu.override(split_inner_row_bytes=split):
                    start = time.perf_counter()
                    rotate.roll(a, shifts, axes)
                    row[str(split)]["seconds"].append(time.perf_counter() - start)
        for split in splits:
            entry = row[str(split)]
            entry["x_copyto"] = float(np.median(entry.pop("seconds"))) / copyto
        print(f"{name:20} {dtype:10} " + " | ".join(
            f"{s}: {row[str(s)]['x_copyto']:.2f}x {row[str(s)]['algorithm']}" for s in splits), flush=True)
        rows.append(row)
    ok = all(row[str(s)]["correct"] for row in rows for s in splits)
    result = gate.finish({"benchmark": "cpu_split_rows_ab", "environment": environment(), "mib": args.mib,
                          "repeat": args.repeat, "reference": "np.copyto, one thread", "cases": rows})
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(result, indent=1, default=str))
    return gate.status() if ok else 1


if __name__ == "__main__":
    sys.exit(main())
