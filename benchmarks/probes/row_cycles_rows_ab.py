"""Do many short rows move faster in one ``row-cycles`` pass than in a pass an axis?

Backs: `cuda.min_cycle_row`, `cuda.max_segments` and `cuda.many_segments_min_row` (docs/tuning.md, "GPU:
`fftshift` and multi-axis rolls"), from docs/results/row-cycles-rows-ab-h100.json (16 of the 20 cases).

At 69ad228 both bounds were reasoned, not measured: rows (the bytes from the last rolled axis on) under
2 KiB, or cycle tables over 2^17 segments, took a pass an axis, two to four launches (the result's
"default"; since then rows from 3 KiB keep row-cycles whatever the segments). The cases are the random
benchmark's multi-axis draws (seeds 1-3 and 2425486292, 256 MiB-8 GiB) that either bound sends to a
pass an axis: rows of 56 B-4.2 KiB, 0.4-21 million of them. Each is planned as by default and with
both bounds off (``min_cycle_row`` 16, ``max_segments`` 2^24: row-cycles wherever it can), alternated
in one process: the whole call back to back (20 calls) and device time, as % of a device-to-device
memcpy of the same bytes timed in the same run, and the first plan's host time (the cycle table is
built on the host); each result checked against torch once, byte for byte.

    python benchmarks/probes/row_cycles_rows_ab.py --json out.json [--repeat 3] [--only 0,3]
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

#: (shape, dtype, shifts, axes): random_bench.py draws (op, seed and case noted), long and short rows alternating
#: (a run cut short still spans both).
CASES = (
    ((1442254, 2165), "int16", (721127, 1082), (0, 1)),  # fftshift, seed 2 case 74
    ((4096, 4096, 71), "float32", (2048, 2048, 35), (0, 1, 2)),  # fftshift, seed 2425486292 case 26
    ((16, 3, 18684, 947), "float32", (8, 1, 9342, 473), (0, 1, 2, 3)),  # fftshift, seed 2425486292 case 27
    ((5, 128, 25950, 7), "float64", (2, 64, 12975, 3), (0, 1, 2, 3)),  # fftshift, seed 1 case 76
    ((2, 807072, 1025, 2), "uint8", (1, 512), (0, 2)),  # fftshift, seed 3 case 45
    ((175, 119083, 64, 2), "int16", (87, 32), (0, 2)),  # fftshift, seed 1 case 4
    ((131072, 8, 1023), "int16", (-65536, -4, -511), (0, 1, 2)),  # ifftshift, seed 2 case 3
    ((14, 17, 16305, 64), "float16", (-7, -8, -8152, -32), (0, 1, 2, 3)),  # ifftshift, seed 2425486292 case 2
    ((40492, 21, 409), "float32", (10, 204), (1, 2)),  # fftshift, seed 3 case 51
    ((549, 10521, 53), "float32", (-274, -5260, -26), (0, 1, 2)),  # ifftshift, seed 2 case 79
    ((38839, 11, 256), "float32", (-19419, -5, -128), (0, 1, 2)),  # ifftshift, seed 1 case 85
    ((1316, 3191, 9), "complex128", (-658, -1595, -4), (0, 1, 2)),  # ifftshift, seed 3 case 49
    ((9, 255, 1025, 256), "float32", (-154, -90), (1, 3)),  # roll, seed 3 case 67
    ((513, 5721, 2, 168), "uint8", (-340, -1, -8), (0, 2, 3)),  # roll, seed 2425486292 case 65
    ((765, 3, 686, 395), "int16", (474, -3, -302, -285), (0, 1, 2, 3)),  # roll, seed 2425486292 case 7
    ((3881, 227, 105), "float32", (-1940, -113, -52), (0, 1, 2)),  # ifftshift, seed 2425486292 case 17
    ((8, 690449, 48), "complex128", (-7, -7), (0, 2)),  # roll, seed 2425486292 case 29
    ((1048576, 64), "float64", (958757, -11), (0, 1)),  # roll, seed 2425486292 case 70
    ((29, 25603, 357), "float16", (-4641, -129), (1, 2)),  # roll, seed 3 case 84
    ((14578, 32, 10, 333), "int16", (22, 250), (1, 3)),  # roll, seed 2 case 20
)

SETTINGS = {"default": {}, "cycles": {"min_cycle_row": 16, "max_segments": 1 << 24}}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", help="case indices, comma separated")
    args = parser.parse_args(argv)

    import torch
    from numba import cuda

    import rotate
    from _harness import ab, timing
    from _harness.provenance import environment

    stream = cuda.default_stream()
    timers = (*timing.whole_call_timers(cuda, stream), timing.events_timer(cuda, stream))
    only = None if not args.only else {int(i) for i in args.only.split(",")}
    rows = []
    for index, (shape, dtype, shifts, axes) in enumerate(CASES):
        if only is not None and index not in only:
            continue
        nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
        x = torch.randint(0, 256, (nbytes,), dtype=torch.uint8, device="cuda").view(getattr(torch, dtype))
        x = x.view(shape)
        copy, _keep = timing.memcpy(cuda, nbytes, stream)
        memcpy_ms = timers[2](copy, args.repeat)
        row = {"case": index, "shape": list(shape), "dtype": dtype, "nbytes": nbytes, "shifts": list(shifts),
               "axes": list(axes), "memcpy_ms": memcpy_ms,
               **ab.time_settings(torch, rotate, x, shifts, axes, SETTINGS, timers, memcpy_ms, args.repeat)}
        print(json.dumps(row), flush=True)
        rows.append(row)
        del x, copy, _keep
        torch.cuda.empty_cache()
        if args.json:  # after every case: a run cut short keeps what it timed
            pathlib.Path(args.json).write_text(json.dumps(
                {"benchmark": "row_cycles_rows_ab", "environment": environment(gpu=True), "repeat": args.repeat,
                 "settings": SETTINGS, "cases": rows}, indent=1, default=str))
    return 0 if all(r[k]["correct"] for r in rows for k in SETTINGS) else 1


if __name__ == "__main__":
    sys.exit(main())
