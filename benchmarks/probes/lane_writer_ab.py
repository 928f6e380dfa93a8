"""Does the window writer beat the per-unit gather for lanes shorter than 2 KiB (``cuda.max_window_unit``)?

Backs: `cuda.max_window_unit` (docs/tuning.md, "GPU: `lane-panels`"), from docs/results/lane-writer-h200.json.

The random-shape run (seed 2526602803) put ``roll_rows`` of short byte lanes (44-437 uint8) at 14-16% of
memcpy and multi-axis rolls whose innermost rows go through ``row-panels`` at 10-25%: lane-panels' gather
writer looks up each destination unit's source (16 lookups a vector for bytes). The window writer builds a
vector from the one to four source runs it covers. This times, in one process and alternated, lane-panels
with the gather writer, with the window writer (both without the warps variant) and at the defaults, for
lanes of 4 bytes to 2 KiB of 1-16-byte items (1 GiB, a random shift a lane, on the device) and for the
random run's row-panels cases: the whole call back to back and device time as % of a device-to-device
memcpy of the same bytes in the same run, each result checked against torch once, byte for byte.

    python benchmarks/probes/lane_writer_ab.py --json out.json [--repeat 7] [--mib 1024]
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

LANE_BYTES = (4, 5, 8, 14, 16, 25, 44, 62, 64, 140, 206, 256, 437, 444, 512, 666, 1000, 1024, 1500, 2040)
DTYPES = ("uint8", "float16", "float32", "float64", "complex128")
#: (op, shape, dtype, shifts, axes): the random run's cases with a row-panels step (seed 2526602803).
MULTI = [
    ("fftshift", (4194304, 64, 7), "float16", None, None),
    ("fftshift", (128, 524288, 5), "uint8", None, None),
    ("ifftshift", (513, 3343, 666), "uint8", None, None),
    ("ifftshift", (900, 16385, 222), "float16", None, None),
    ("ifftshift", (520287051, 4), "uint8", None, (1,)),
    ("roll", (1153, 150112, 25), "uint8", (548, 11721, 15), (0, 1, 2)),
    ("ifftshift", (85827, 65, 31), "int16", None, (0, 2)),
    ("roll", (16777216, 103), "float16", (7960965, -39), (0, 1)),
]
VARIANTS = (("gather", {"lane_writer": "gather", "lane_warps": False}),
            ("windows", {"lane_writer": "windows", "lane_warps": False}), ("default", {}))


def lane_cases(mib: int):
    for lane in LANE_BYTES:
        for dtype in DTYPES:
            item = np.dtype(dtype).itemsize
            if lane % item == 0 and lane // item >= 2:
                yield ("roll_rows", ((mib << 20) // lane, lane // item), dtype, None, None)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--mib", type=int, default=1024, help="size of the roll_rows arrays")
    args = parser.parse_args(argv)

    import torch
    from numba import cuda

    import rotate
    from _harness import knobs, timing
    from _harness.provenance import environment

    stream = cuda.default_stream()
    timers = (*timing.whole_call_timers(cuda, stream), timing.events_timer(cuda, stream))
    rows, ok = [], True
    for index, (op, shape, dtype, shifts, axes) in enumerate([*lane_cases(args.mib), *MULTI]):
        nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
        x = torch.randint(0, 256, (nbytes,), dtype=torch.uint8, device="cuda").view(getattr(torch, dtype))
        x = x.view(shape)
        if op == "roll_rows":
            n = shape[-1]
            lane_shifts = torch.randint(-n, n + 1, shape[:-1], dtype=torch.int64, device="cuda")
            check = min(shape[0], max(1, (8 << 20) // (n * x.element_size())))  # the first 8 MiB of lanes
            index_ = (torch.arange(n, device="cuda")[None, :] - lane_shifts[:check, None]) % n
            call = lambda: rotate.roll_rows(x, lane_shifts)  # noqa: E731
            peer = lambda y: torch.gather(y[:check], 1, index_)  # noqa: E731
            got = lambda y: y[:check]  # noqa: E731
            plan_of = lambda: rotate.plan_roll_rows(x, lane_shifts)  # noqa: E731
        elif op == "roll":
            call, peer = (lambda: rotate.roll(x, shifts, axes)), (lambda y: torch.roll(y, shifts, axes))
            got = lambda y: y  # noqa: E731
            plan_of = lambda: rotate.plan(x, shifts, axes)  # noqa: E731
        else:
            fn, tfn = getattr(rotate, op), getattr(torch.fft, op)
            dims = tuple(range(len(shape))) if axes is None else axes
            call, peer, got = (lambda: fn(x, axes=dims)), (lambda y: tfn(y, dim=dims)), (lambda y: y)
            sign = 1 if op == "fftshift" else -1
            plan_of = lambda: rotate.plan(x, [sign * (shape[a] // 2) for a in dims], dims)  # noqa: E731
        copy, _keep = timing.memcpy(cuda, nbytes, stream)
        memcpy_ms = timers[2](copy, args.repeat)
        row = {"case": index, "op": op, "shape": list(shape), "dtype": dtype, "nbytes": nbytes,
               "lane_bytes": shape[-1] * np.dtype(dtype).itemsize, "shifts": shifts, "axes": axes,
               "memcpy_ms": memcpy_ms}
        for label, fields in VARIANTS:
            with knobs.gpu_override(**fields):
                plan = plan_of()
                want = peer(x)
                call()
                torch.cuda.synchronize()
                correct = bool(torch.equal(got(x).reshape(-1).view(torch.uint8), want.reshape(-1).view(torch.uint8)))
                ok &= correct
                del want
                torch.cuda.empty_cache()
                times = timing.with_pct(timing.time_all_ways(call, timers, args.repeat), memcpy_ms)
            row[label] = {"algorithm": plan.algorithm, "writers": [s.details.get("writer") for s in plan.steps],
                          "variants": [s.details.get("variant") for s in plan.steps], "correct": correct, **times}
        print(json.dumps(row), flush=True)
        rows.append(row)
        del x
        torch.cuda.empty_cache()
        if args.json:
            pathlib.Path(args.json).write_text(json.dumps(
                {"benchmark": "lane_writer_ab", "environment": environment(gpu=True), "repeat": args.repeat,
                 "mib": args.mib, "cases": rows}, indent=1, default=str))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
