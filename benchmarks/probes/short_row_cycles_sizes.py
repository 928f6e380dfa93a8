"""Up to how many rows does one ``row-cycles`` launch beat a launch an axis, however short the rows?

Backs: `cuda.short_row_cycles_max_rows` (docs/tuning.md, "GPU: multi-axis"), from
docs/results/short-row-cycles-sizes-h100.json (run at 311c8dc, where the limit was in bytes,
``short_row_cycles_max_bytes``: the same two plans).

Rows (the bytes from the last rolled axis on) shorter than ``min_cycle_row`` (2 KiB) move slower
through row-cycles than through a pass an axis in large arrays, so those take a pass an axis: two
launches or more. With few rows the launches cost the call more than the short rows lose. This
times multi-axis rolls and fftshifts with rows of 2 B-1 KiB from 4 KiB to 16 MiB, planned both ways
(``short_row_cycles_max_rows`` 0: a pass an axis; 2^40: row-cycles) and alternated in one process:
the whole call back to back (20 calls) and device time, as % of a device-to-device memcpy of the same
bytes timed in the same run, and microseconds a call; each result checked against torch once, byte
for byte. Each case records the row-cycles step's rows and row length.

    python benchmarks/probes/short_row_cycles_sizes.py --json out.json [--repeat 7]
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

#: (function, rows' shape, tail, dtype, shifts or None for fftshift): the leading side grows with the size.
SHAPES = (("roll", (32,), "float32", (3, 5)),               # 128 B rows
          ("roll", (255,), "float32", (-7, 100)),           # 1020 B rows
          ("roll", (7, 13), "uint8", (2, 0, 5)),            # 91 B rows, three axes
          ("fftshift", (31,), "complex64", None),           # odd sides, 248 B rows
          ("roll", (3, 100), "float16", (1, 1, -33)),       # 600 B rows
          ("roll", (2,), "uint8", (5, 1)))                  # 2 B rows: the most rows a byte
SIZES = tuple(1 << k for k in range(12, 25, 2))  # 4 KiB .. 16 MiB


def cases():
    for function, tail, dtype, shifts in SHAPES:
        row = int(np.prod(tail)) * np.dtype(dtype).itemsize
        for size in SIZES:
            lead = max(3, size // row)
            yield function, (lead, *tail), dtype, shifts


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
    for index, (function, shape, dtype, shifts) in enumerate(cases()):
        axes = tuple(range(len(shape)))
        nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
        x = torch.randint(0, 256, (nbytes,), dtype=torch.uint8, device="cuda").view(getattr(torch, dtype))
        x = x.view(shape)
        if function == "fftshift":
            shifts = tuple(n // 2 for n in shape)
        copy, _keep = timing.memcpy(cuda, nbytes, stream)
        memcpy_ms = timers[2](copy, args.repeat)
        row = {"case": index, "function": function, "shape": list(shape), "dtype": dtype, "nbytes": nbytes,
               "shifts": shifts, "memcpy_ms": memcpy_ms}
        for label, limit in (("axes", 0), ("cycles", 1 << 40)):
            with knobs.gpu_override(short_row_cycles_max_rows=limit):
                plan = rotate.plan(x, shifts, axes)
                want = torch.roll(x, shifts, axes)
                rotate.roll(x, shifts, axes)
                torch.cuda.synchronize()
                correct = bool(torch.equal(x.view(torch.uint8), want.view(torch.uint8)))
                x.copy_(want)
                del want
                times = timing.with_pct(timing.time_all_ways(lambda: rotate.roll(x, shifts, axes), timers,
                                                             args.repeat), memcpy_ms)
            first = plan.steps[0]
            row[label] = {"algorithm": plan.algorithm, "steps": len(plan.steps), "rows": first.rows,
                          "seg_bytes": first.seg_bytes, "correct": correct, **times}
        print(json.dumps(row), flush=True)
        rows.append(row)
        del x
        torch.cuda.empty_cache()
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(
            {"benchmark": "short_row_cycles_sizes", "environment": environment(gpu=True), "repeat": args.repeat,
             "cases": rows}, indent=1, default=str))
    return 0 if all(r[k]["correct"] for r in rows for k in ("axes", "cycles")) else 1


if __name__ == "__main__":
    sys.exit(main())
