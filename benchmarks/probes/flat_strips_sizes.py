"""Below which size does a narrow-strip multi-axis roll run faster without the flat pass and strip step?

The flat pass and strip step are three launches (a flat chain pass, the ``row-strips`` save and move).

Backs: `cuda.flat_strips_min_bytes` (docs/tuning.md, "GPU: multi-axis"), from
docs/results/flat-strips-sizes-h200.json.

benchmarks/call_overhead.py put a two-axis roll of a 4 KiB tensor at 40.5 us a call against torch.roll's
18.4: its plan is a flat chain pass and a row-strips step (a save kernel and a move kernel), where a
launch costs the host 5-10 us. This times two-axis rolls whose strip is narrow (the flat+strips rule
takes them) from 4 KiB to 256 MiB, with ``flat_strips`` off (row-cycles) and at the default, alternated
in one process: the whole call back to back (20 calls) and device time, as % of a device-to-device
memcpy of the same bytes timed in the same run, and microseconds a call; each result checked against
torch once, byte for byte.

    python benchmarks/probes/flat_strips_sizes.py --json out.json [--repeat 7]
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

#: (shape, dtype, shifts): two-axis rolls of square arrays with a narrow last-axis shift.
CASES = ([((side, side), "float32", (3, 5)) for side in (32, 64, 128, 256, 512, 1024, 2048, 4096, 8192)]
         + [((side, side), "complex64", (-2, 9)) for side in (32, 128, 512, 2048, 4096)]
         + [((16, side, side), "uint8", (1, 3, 17)) for side in (16, 64, 256, 1024, 2048)])


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
    for index, (shape, dtype, shifts) in enumerate(CASES):
        axes = tuple(range(len(shape)))
        nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
        x = torch.randint(0, 256, (nbytes,), dtype=torch.uint8, device="cuda").view(getattr(torch, dtype))
        x = x.view(shape)
        copy, _keep = timing.memcpy(cuda, nbytes, stream)
        memcpy_ms = timers[2](copy, args.repeat)
        row = {"case": index, "shape": list(shape), "dtype": dtype, "nbytes": nbytes, "shifts": shifts,
               "memcpy_ms": memcpy_ms}
        for label, fields in (("cycles", {"flat_strips": False}), ("default", {})):
            with knobs.gpu_override(**fields):
                plan = rotate.plan(x, shifts, axes)
                want = torch.roll(x, shifts, axes)
                rotate.roll(x, shifts, axes)
                torch.cuda.synchronize()
                correct = bool(torch.equal(x.view(torch.uint8), want.view(torch.uint8)))
                x.copy_(want)
                del want
                times = timing.with_pct(timing.time_all_ways(lambda: rotate.roll(x, shifts, axes), timers,
                                                             args.repeat), memcpy_ms)
            row[label] = {"algorithm": plan.algorithm, "steps": len(plan.steps), "correct": correct, **times}
        print(json.dumps(row), flush=True)
        rows.append(row)
        del x
        torch.cuda.empty_cache()
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(
            {"benchmark": "flat_strips_sizes", "environment": environment(gpu=True), "repeat": args.repeat,
             "cases": rows}, indent=1, default=str))
    return 0 if all(r[k]["correct"] for r in rows for k in ("cycles", "default")) else 1


if __name__ == "__main__":
    sys.exit(main())
