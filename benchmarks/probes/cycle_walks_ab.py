"""Below how many walks a SM does ``row-cycles`` lose to one pass per axis (``cuda.cycle_min_walk_share``)?

Backs: `cuda.cycle_min_walk_share` (docs/tuning.md, "GPU: row-cycles"), from docs/results/cycle-walks-h200.json.

The random-shape run (seed 2526602803) put multi-axis rolls and ifftshifts of long rows on ``row-cycles``
at 1-29% of memcpy: with first rows pre-read a row a walk under the 1% scratch bound, those plans had
1-42 walks (one block each) for 132 SMs. This times each ``row-cycles`` case of that run with the share
at 0 (row-cycles whatever its walks) and at the default (fewer walks: the plan without it), alternated in
one process: the whole call back to back (20 calls) and device time, as % of a device-to-device memcpy
of the same bytes timed in the same run, each result checked against torch once, byte for byte.

    python benchmarks/probes/cycle_walks_ab.py --json out.json [--repeat 7]
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

#: (op, shape, dtype, shifts, axes): the row-cycles cases of the random run, seed 2526602803.
CASES = [
    ("roll", (1, 128, 4194304), "float32", (51, 2676132), (1, 2)),
    ("roll", (1009, 1048576), "float32", (617, 730026), (0, 1)),
    ("ifftshift", (2047, 1, 1, 114221), "complex64", None, None),
    ("ifftshift", (29, 2, 31, 46399), "float64", None, None),
    ("roll", (2620, 3, 4096, 4), "float64", (-2106, 1), (0, 1)),
    ("roll", (12, 2915, 2393, 4), "uint8", (-9, 2644, 618, 4), (0, 1, 2, 3)),
    ("ifftshift", (10200, 3, 2, 6623), "uint8", None, (0, 1, 3)),
    ("ifftshift", (4648, 11, 17, 2048), "int16", None, None),
    ("roll", (4861, 9, 38, 129), "complex128", (2933, -4, -29, 0), (0, 1, 2, 3)),
    ("ifftshift", (13825, 4096), "complex128", None, None),
    ("fftshift", (65535, 409, 15), "complex64", None, (0, 1)),
]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json")
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args(argv)

    import torch
    from numba import cuda

    import rotate
    from _harness import knobs, timing
    from _harness.provenance import environment

    stream = cuda.default_stream()
    timers = (*timing.whole_call_timers(cuda, stream), timing.events_timer(cuda, stream))
    rows = []
    for index, (op, shape, dtype, shifts, axes) in enumerate(CASES):
        nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
        x = torch.randint(0, 256, (nbytes,), dtype=torch.uint8, device="cuda").view(getattr(torch, dtype))
        x = x.view(shape)
        if op == "roll":
            call, peer = (lambda: rotate.roll(x, shifts, axes)), (lambda y: torch.roll(y, shifts, axes))
            plan_of = lambda: rotate.plan(x, shifts, axes)  # noqa: E731
        else:
            fn, tfn = getattr(rotate, op), getattr(torch.fft, op)
            dims = tuple(range(len(shape))) if axes is None else axes
            call, peer = (lambda: fn(x, axes=dims)), (lambda y: tfn(y, dim=dims))
            sign = 1 if op == "fftshift" else -1
            plan_of = lambda: rotate.plan(x, [sign * (shape[a] // 2) for a in dims], dims)  # noqa: E731
        copy, _keep = timing.memcpy(cuda, nbytes, stream)
        memcpy_ms = timers[2](copy, args.repeat)
        row = {"case": index, "op": op, "shape": list(shape), "dtype": dtype, "nbytes": nbytes,
               "shifts": shifts, "axes": axes, "memcpy_ms": memcpy_ms}
        for label, fields in (("cycles_always", {"cycle_min_walk_share": 0.0}), ("default", {})):
            with knobs.gpu_override(**fields):
                plan = plan_of()
                want = peer(x)
                call()
                torch.cuda.synchronize()
                correct = bool(torch.equal(x.view(torch.uint8), want.view(torch.uint8)))
                x.copy_(want)
                del want
                torch.cuda.empty_cache()
                times = timing.with_pct(timing.time_all_ways(call, timers, args.repeat), memcpy_ms)
            row[label] = {"algorithm": plan.algorithm, "scratch_bytes": plan.scratch_bytes,
                          "traffic": plan.bytes_moved / (2 * nbytes), "correct": correct,
                          "segments": plan.steps[0].details.get("segments"), **times}
        print(json.dumps(row), flush=True)
        rows.append(row)
        del x
        torch.cuda.empty_cache()
        if args.json:
            pathlib.Path(args.json).write_text(json.dumps(
                {"benchmark": "cycle_walks_ab", "environment": environment(gpu=True), "repeat": args.repeat,
                 "cases": rows}, indent=1, default=str))
    return 0 if all(r[k]["correct"] for r in rows for k in ("cycles_always", "default")) else 1


if __name__ == "__main__":
    sys.exit(main())
