"""Where does a lane-walks block's time go, phase by phase?

Backs: `cuda.walk_share_one_lane`, `cuda.walk_pool`, `WALK_CHUNKS`, `WALK_BUFFERS`, `WALK_ITEM_BYTES`
(docs/tuning.md, "GPU: lane-walks"), from docs/results/walk-trace-*.json.

Where a ``lane-walks`` block's time goes, phase by phase (H200; needs torch).

``rotate._cuda._lanes.walk_kernel(trace=address)`` has thread 0 of every
block add up the nanoseconds of each phase of each lane it takes (choosing
the tile size, laying out the walk, pre-reading, walking; lanes by block
swaps apart), the tiles walked, the lanes walked from the launch's pool and
the bytes pre-read, the items that waited for a look-ahead reader. This runs ``roll_rows`` with random int64 device shifts
on lanes of 4 MiB (1 GiB of uint8, 4 GiB of float32), timed without the
trace first (3 calls between CUDA events), then once with it, and writes
per walked lane means and the blocks' totals (mean, 90th percentile, max).

    python benchmarks/probes/walk_trace.py --json docs/results/walk-trace-<commit>-h200.json [--set walk_pool_bytes=0]
    python benchmarks/probes/walk_trace.py --case 2048,131072,float32 --set long_lanes="'walks'"   # other lanes
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import pathlib
import sys

import numpy as np
from rotate._tuning import cuda as cuda_tuning

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

CASES = (((256, 1 << 22), "uint8"), ((1024, 1 << 20), "float32"))


def run(shape, dtype, knobs, torch, rotate, L):
    n = shape[-1]
    gen = torch.Generator(device="cuda").manual_seed(7)
    if dtype == "uint8":
        x = torch.randint(0, 256, shape, dtype=torch.uint8, device="cuda", generator=gen)
    else:
        x = torch.rand(shape, device="cuda", generator=gen)
    shifts = torch.randint(-n, n, shape[:-1], device="cuda", dtype=torch.int64, generator=gen)
    fields = len(L.WALK_TRACE_FIELDS)
    with cuda_tuning.override(**knobs):
        grid = rotate.plan_roll_rows(x, shifts).steps[0].details["grid"]
        rotate.roll_rows(x, shifts)  # compiled and warm
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(3):
            rotate.roll_rows(x, shifts)
        end.record()
        torch.cuda.synchronize()
        ms = start.elapsed_time(end) / 3
    trace = torch.zeros(grid * fields, dtype=torch.int64, device="cuda")
    with cuda_tuning.override(walk_trace=trace.data_ptr(), **knobs):
        rotate.roll_rows(x, shifts)
        torch.cuda.synchronize()
    t = trace.cpu().numpy().reshape(grid, fields)
    lanes = int(t[:, 0].sum())
    column = {f: i for i, f in enumerate(L.WALK_TRACE_FIELDS)}
    per_lane = {f: float(t[:, i].sum() / max(lanes, 1) / 1000) for f, i in column.items() if f.endswith("_ns")}
    block_us = t[:, column["choose_ns"]:column["swap_ns"] + 1].sum(axis=1) / 1000
    seg = n * x.element_size()
    return {"shape": list(shape), "dtype": dtype, "knobs": knobs, "ms": ms, "grid": grid, "lanes_walked": lanes,
            "lanes_pooled": int(t[:, column["pooled"]].sum()),
            "per_walked_lane_us": {k[:-3] + "_us": v for k, v in per_lane.items()},
            "tiles_per_walked_lane": float(t[:, column["tiles"]].sum() / max(lanes, 1)),
            "pre_read_per_walked_lane_pct": float(100 * t[:, column["pre_bytes"]].sum() / max(lanes, 1) / seg),
            "ring_waits_per_walked_lane": float(t[:, column["ring_waits"]].sum() / max(lanes, 1)),
            "block_total_us_max": float(block_us.max()),
            "block_total_us_p90": float(np.quantile(block_us, 0.9)),
            "block_total_us_mean": float(block_us.mean()),
            "slowest_blocks": [dict(zip(L.WALK_TRACE_FIELDS, map(int, t[b]))) for b in np.argsort(block_us)[-4:]]}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a planner setting for every case (a Python literal), e.g. walk_pool_bytes=0")
    parser.add_argument("--case", action="append", default=[], metavar="ROWS,N,DTYPE",
                        help="lanes to trace instead of the default two (uint8 or float32; repeatable)")
    args = parser.parse_args(argv)
    knobs = {key: ast.literal_eval(value) for key, value in (item.split("=", 1) for item in args.set)}
    import torch

    import rotate
    from rotate._cuda import _lanes as L
    from rotate._provenance import environment

    rows = []
    cases = CASES
    if args.case:
        cases = [((int(r), int(n)), dtype) for r, n, dtype in (c.split(",") for c in args.case)]
    for shape, dtype in cases:
        rows.append(run(shape, dtype, knobs, torch, rotate, L))
        print(json.dumps(rows[-1]), flush=True)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps({"benchmark": "walk_trace", "environment": environment(gpu=True),
                                                        "cases": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
