"""Under which scratch bound does the GPU planner take random shifts in one chain pass?

Backs: `cuda.scratch_fraction` (docs/tuning.md, "GPU: scratch bound") and the flat pass's reach
(`cuda.flat_strip_fraction`), from docs/results/plan-coverage-h200-shape.json,
plan-coverage-223199e-h200-shape.json and plan-probes-h200-shape.json; README.md's random-shift numbers
(tools/tables.py).

Which GPU schedule the planner picks for random shifts, and how many bytes it moves (no GPU needed).

The GPU benchmarks time structured shifts (1, 3, 4097, 1 MiB + 5, n/4 + 3,
n/3, n/2 + 1, n - 7). This plans seeded random shifts of 1-D arrays as well,
for an H200's shape (132 SMs, 228 KiB of shared memory an SM: stated in the
result file, since the planner only reads those two numbers), under the
default scratch bound and under larger ones, and records each plan's
schedule, bytes moved against the ideal 2N and scratch, with the smallest
bound under which the chain takes the shift in one pass. The CPU's plans
for 256 MiB arrays (``cpu_rows``: this machine's thread count) come after.

    python benchmarks/probes/plan_coverage.py --json docs/results/plan-coverage-h200-shape.json
    python benchmarks/probes/plan_coverage.py --probes --json docs/results/plan-probes-h200-shape.json

``--probes`` records instead what archive/perf-notes-2026-12-02.md quotes about the
levers: ``flat_strips``' plans for the multi-axis cases of
``rows_gpu_bench.py`` at three scratch bounds, and, for random 1 GiB uint8
shifts, the fewest chain pre-read bytes over tile sizes of 8-64 KiB (1 KiB
steps) and over lane lengths of half to twice the planner's.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
from unittest import mock

import numpy as np
from rotate._backends.cuda import tuning as cuda_tuning

GiB = 1 << 30
H200_SHAPE = (132, 228 * 1024)
STRUCTURED = {"1": lambda n: 1, "3": lambda n: 3, "4097": lambda n: 4097, "1MiB+5": lambda n: (1 << 20) + 5,
              "n/4+3": lambda n: n // 4 + 3, "n/3": lambda n: n // 3, "n/2+1": lambda n: n // 2 + 1,
              "n-7": lambda n: n - 7}


def plan_one(n_bytes: int, itemsize: int, shift_items: int, cap):
    from rotate._backends.cuda import registry as gpu_registry

    n = n_bytes // itemsize
    left = (n - shift_items % n) % n * itemsize
    step = gpu_registry.plan_step(None, shift_items, 1, n_bytes, left, itemsize, 0, cap)
    return {"algorithm": step.algorithm, "bytes_vs_ideal": round(step.bytes_moved / (2 * n_bytes), 4),
            "scratch_bytes": int(step.scratch_bytes)}


def probes(seed: int) -> dict:
    """The ``--probes`` records (see the module docstring)."""
    from rotate._backends.cuda.schedules import chain as gpu_chain, multi_axis as gpu_multi_axis

    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # benchmarks/: the product benchmark's cases
    from rows_gpu_bench import CASES

    flat = []
    for index, (function, shape, dtype, extra) in enumerate(CASES):
        if function != "roll" or len(extra[1]) < 2:
            continue
        itemsize = np.dtype(dtype).itemsize
        c_shifts = {ax: s % shape[ax] for s, ax in zip(*extra)}
        for cap in (None, 64 << 20, 256 << 20):
            with cuda_tuning.override(flat_strips=True):
                steps = gpu_multi_axis.plan_multi_axis(shape, itemsize, c_shifts, 0, cap)
            nbytes = int(np.prod(shape)) * itemsize
            flat.append({"case": index, "shape": list(shape), "dtype": dtype, "shifts": list(extra[0]),
                         "max_scratch_bytes": cap,
                         "steps": [{"algorithm": st.algorithm, "scratch_bytes": int(st.scratch_bytes),
                                    "bytes_vs_ideal": round(st.bytes_moved / (2 * nbytes), 5)} for st in steps]})
    rng = np.random.default_rng(seed)
    scans = []
    for k in rng.integers(1, GiB, 6):
        left = GiB - int(k)
        by_tile = {}
        for tile in range(8192, 65537, 1024):
            with cuda_tuning.override(tile_bytes=tile):
                cfg = gpu_chain.plan_chain(1, GiB, left, 0, 1 << 40)
            if cfg is not None:
                by_tile[tile] = int(cfg["scratch_row"])
        base = gpu_chain.plan_chain(1, GiB, left, 0, 1 << 40)
        by_lane = {}
        for lane in range(max(8, base["lane_steps"] // 2), 2 * base["lane_steps"], 4):
            with cuda_tuning.override(lane_steps=lane):
                cfg = gpu_chain.plan_chain(1, GiB, left, 0, 1 << 40)
            if cfg is not None:
                by_lane[lane] = int(cfg["scratch_row"])
        best_tile = min(by_tile, key=by_tile.get)
        best_lane = min(by_lane, key=by_lane.get)
        scans.append({"shift": int(k), "default_pre_read_bytes": int(base["scratch_row"]),
                      "best_tile": best_tile, "best_tile_pre_read_bytes": by_tile[best_tile],
                      "tiles_tried": len(by_tile), "best_lane_steps": best_lane,
                      "best_lane_pre_read_bytes": by_lane[best_lane], "lane_lengths_tried": len(by_lane)})
        print(scans[-1], flush=True)
    return {"flat_strips": flat, "random_shift_scans": scans}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json")
    parser.add_argument("--random", type=int, default=12, help="random shifts a (size, dtype)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--probes", action="store_true", help="the levers' records instead (module docstring)")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))
    from rotate._backends.cuda import device as gpu_device
    from rotate._provenance import environment

    if args.probes:
        with mock.patch.object(gpu_device, "device_shape", lambda device_id=0: H200_SHAPE), \
                mock.patch.object(gpu_device, "_cooperative_config", lambda: True), \
                mock.patch.object(gpu_device, "_device_id", lambda: 0):
            result = {"benchmark": "plan_coverage --probes", "environment": environment(),
                      "device_shape_assumed": list(H200_SHAPE), "seed": args.seed, **probes(args.seed)}
        if args.json:
            pathlib.Path(args.json).write_text(json.dumps(result, indent=1))
        return 0
    rng = np.random.default_rng(args.seed)
    rows = []
    with mock.patch.object(gpu_device, "device_shape", lambda device_id=0: H200_SHAPE), \
            mock.patch.object(gpu_device, "_cooperative_config", lambda: True), \
            mock.patch.object(gpu_device, "_device_id", lambda: 0):
        for n_bytes in (GiB, 4 * GiB):
            for dtype in ("uint8", "float32"):
                itemsize = np.dtype(dtype).itemsize
                n = n_bytes // itemsize
                shifts = [(label, f(n)) for label, f in STRUCTURED.items()]
                shifts += [("random", int(s)) for s in rng.integers(1, n, args.random)]
                for label, shift in shifts:
                    row = {"size_bytes": n_bytes, "dtype": dtype, "shift_label": label, "shift": shift,
                           "default_cap_bytes": gpu_device.default_cap(1, n_bytes)}
                    row["default"] = plan_one(n_bytes, itemsize, shift, None)
                    row["chain_from_cap_bytes"] = row["default_cap_bytes"] if row["default"]["algorithm"] == "chain" \
                        else None
                    for fraction in (2, 4, 8, 16, 25):  # percent of the array (1%: the default)
                        cap = max(n_bytes * fraction // 100, gpu_device.policy().min_scratch)
                        if row["chain_from_cap_bytes"] is not None:
                            break
                        if plan_one(n_bytes, itemsize, shift, cap)["algorithm"] == "chain":
                            row["chain_from_cap_bytes"] = cap
                            break
                    rows.append(row)
                    cap = row["chain_from_cap_bytes"]
                    print(f"{n_bytes >> 30} GiB {dtype:8} {label:7} {shift:>11} {row['default']['algorithm']:11}"
                          f" {row['default']['bytes_vs_ideal']:.3f}x  chain from "
                          + ("never (25% tried)" if cap is None else f"{cap / n_bytes:.1%}"), flush=True)
    cpu_rows = []
    import rotate

    for dtype in ("uint8", "float64"):  # the CPU benchmark's size and dtypes, this machine's thread count
        a = np.empty((256 << 20) // np.dtype(dtype).itemsize, dtype)
        shifts = [(label, f(a.size)) for label, f in STRUCTURED.items()]
        shifts += [("random", int(s)) for s in rng.integers(1, a.size, args.random)]
        for label, shift in shifts:
            plan = rotate.plan(a, shift)
            cpu_rows.append({"size_bytes": a.nbytes, "dtype": dtype, "shift_label": label, "shift": shift,
                             "algorithm": plan.algorithm,
                             "bytes_vs_ideal": round(plan.bytes_moved / (2 * a.nbytes), 4)})
    result = {"benchmark": "plan_coverage", "environment": environment(), "device_shape_assumed": list(H200_SHAPE),
              "seed": args.seed, "random_per_case": args.random, "rows": rows, "cpu_rows": cpu_rows}
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
