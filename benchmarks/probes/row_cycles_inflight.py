"""Does ``row-cycles`` on rows of 2-20 KiB run slow for want of bytes in flight an SM?

A ``three-rows`` block stages one row while it writes the one before, so an SM has about
(blocks an SM) x (row bytes) in flight; with the run writer's registers (``cuda.run_registers``) a
128-thread block leaves four blocks an SM, 8-14 KiB for rows of 2-3.6 KiB, where Little's law asks
about 36 KiB. This times the multi-axis rolls of issue #33's random run that took ``row-cycles``
(docs/results/random-gpu-h200.json, 27-55% of memcpy) and two that ran well, under tuning overrides
that change blocks an SM or bytes staged ahead (``--config NAME:field=value,...``, repeatable; the
default set below): the whole call back to back (20 calls) and device time as % of a
device-to-device memcpy of the same bytes in the same run, each result checked against torch.roll
once, byte for byte.

Backs: the row-cycles block choice (docs/tuning.md, "row-cycles"), from the JSON it writes.

    python benchmarks/probes/row_cycles_inflight.py --json out.json [--repeat 5] [--only 0,3]
"""

from __future__ import annotations

import argparse
import ast
import json
import pathlib
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

#: (shape, dtype, shifts, axes): the random run's row-cycles cases (its index in a comment), then two
#: that ran at 81-87% there.
CASES = [
    ((18085, 8193), "int16", (15911, 1587), (0, 1)),              # 0: 53%
    ((28963, 19999), "complex64", (-14481, -9999), (0, 1)),       # 13: ifftshift, 52%
    ((39132, 32768, 1), "float32", (-15981, 17443, -1), (0, 1, 2)),  # 17: 55%
    ((65, 11310, 9484), "uint8", (-18, 6094), (0, 2)),            # 19: 32%
    ((32768, 41113), "float32", (-16384, -20556), (0, 1)),        # 44: ifftshift, 55%
    ((15, 8428, 907), "float32", (-2, -7994, -73), (0, 1, 2)),    # 57: 27%
    ((93658, 6, 1191, 1), "float32", (-5, 752, 0), (1, 2, 3)),    # 66: 29%
    ((59, 7, 127, 5588), "float16", (36, -2, 296), (0, 1, 3)),    # 73: 45%
    ((1, 149749, 1, 4094), "int16", (0, -74874, 0, -2047), (0, 1, 2, 3)),  # 87: ifftshift, 47%
    ((2048, 23, 8191), "uint8", (11, 4095), (1, 2)),              # 93: fftshift, 52%
    ((502, 2, 31, 4513), "float16", (251, 1, 15, 2256), (0, 1, 2, 3)),  # 98: fftshift, 31%
    ((22625, 46261), "uint8", (11312, 23130), (0, 1)),            # 7: fftshift, 81%
    ((2, 8192, 16384), "int16", (1, 5054, 2566), (0, 1, 2)),      # 81: 82%
    ((8191, 8193), "complex64", (4095, 4096), (0, 1)),            # rows_gpu_bench's odd fftshift: 85%
    ((7, 32, 1023, 512), "complex128", (3, -30, 278), (0, 1, 2)),  # 16: 22% as block-swap+row-walks
]

CONFIGS = {
    "default": {},
    "gather": {"lane_writer": "gather"},
    "runs64": {"lane_threads": 64},
    "gather64": {"lane_writer": "gather", "lane_threads": 64},
    "chunked": {"cycle_variant": "chunked"},
    "scratch": {"cycle_variant": "chunked-scratch"},
    "nofold": {"cycle_fold": False},
}


def parse_config(text: str) -> tuple:
    name, _, rest = text.partition(":")
    fields = {}
    for item in filter(None, rest.split(",")):
        key, _, value = item.partition("=")
        fields[key] = ast.literal_eval(value)
    return name, fields


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--only", default="")
    parser.add_argument("--config", action="append", default=[])
    args = parser.parse_args(argv)

    import torch
    from numba import cuda

    import rotate
    from _harness import knobs, timing
    from _harness.provenance import environment

    configs = dict(parse_config(c) for c in args.config) if args.config else CONFIGS
    chosen = [int(i) for i in args.only.split(",") if i] or range(len(CASES))
    stream = cuda.default_stream()
    timers = (*timing.whole_call_timers(cuda, stream), timing.events_timer(cuda, stream))
    rows, ok = [], True
    for index in chosen:
        shape, dtype, shifts, axes = CASES[index]
        nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
        x = torch.randint(0, 256, (nbytes,), dtype=torch.uint8, device="cuda").view(getattr(torch, dtype))
        x = x.view(shape)
        original = x.clone()
        want = torch.roll(original, shifts, axes)
        copy, _keep = timing.memcpy(cuda, nbytes, stream)
        memcpy_ms = timers[2](copy, args.repeat)
        row = {"case": index, "shape": list(shape), "dtype": dtype, "nbytes": nbytes, "shifts": shifts,
               "axes": axes, "memcpy_ms": memcpy_ms}
        for label, fields in configs.items():
            with knobs.gpu_override(**fields):
                plan = rotate.plan(x, shifts, axes)
                x.copy_(original)
                rotate.roll(x, shifts, axes)
                torch.cuda.synchronize()
                correct = bool(torch.equal(x.view(torch.uint8), want.view(torch.uint8)))
                ok = ok and correct
                times = timing.with_pct(timing.time_all_ways(lambda x=x: rotate.roll(x, shifts, axes), timers,
                                                             args.repeat), memcpy_ms)
            step = plan.steps[0]
            p = step.params
            row[label] = {"algorithm": plan.algorithm, "correct": correct,
                          "block": getattr(p, "block", None), "blocks_per_sm": getattr(p, "blocks_per_sm", None),
                          "segments": getattr(p, "segments", None), "seg_bytes": step.seg_bytes, **times}
        print(json.dumps({k: (v if not isinstance(v, dict) else
                              {kk: (round(vv, 1) if isinstance(vv, float) else vv) for kk, vv in v.items()
                               if kk in ("algorithm", "correct", "block", "blocks_per_sm", "pct_memcpy",
                                         "device_pct_memcpy")})
                          for k, v in row.items()}), flush=True)
        rows.append(row)
        del x, original, want
        torch.cuda.empty_cache()
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(
            {"benchmark": "row_cycles_inflight", "environment": environment(gpu=True), "repeat": args.repeat,
             "configs": configs, "cases": rows}, indent=1, default=str))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
