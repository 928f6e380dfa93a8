"""How far must the co-resident lane-length scan go for random shifts to fit the scratch bound in one pass?

Backs: `cuda.co_resident_scan`, `cuda.co_resident_near` (docs/tuning.md, "GPU: co-resident chains"), from
docs/results/co-resident-scan-1g-h200.log.

Co-resident chain plans on random shifts: the lane-length scan's reach against speed (GPU).

A co-resident plan (docs/design.md, "Co-resident lanes") gives every lane a
block of its own. The planner scans lane lengths from the shortest that fits
the resident blocks up to the tuning's ``co_resident_scan`` times it: a wider scan
finds lengths that pre-read less (more random shifts fit the scratch bound
and take one pass), at the price of fewer, longer lanes (fewer busy blocks).
This times each scan width on seeded random shifts (``rotate.bench``'s
``randS`` labels), as users time a call (``rotate.bench``'s timers: 20 calls
back to back, one at a time, device only), against a memcpy in the same run,
and checks every result against ``cupy.roll`` once.

Run (GPU): ``python benchmarks/probes/co_resident_scan.py --json docs/results/co-resident-scan-h200.json``
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1G,4G")
    parser.add_argument("--dtypes", default="uint8,float32")
    parser.add_argument("--shifts", default="rand0,rand1,rand2,rand3,rand4,rand5")
    parser.add_argument("--scans", default="1.25,2.0", help="CO_RESIDENT_SCAN values")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json")
    args = parser.parse_args(argv)

    import cupy
    from numba import cuda

    import rotate
    from rotate import _provenance
    from rotate import bench as B
    from rotate._backends.cuda import tuning as cuda_tuning

    stream = cuda.default_stream()
    timers = (*B._whole_call_timers(cuda, stream), B._events_timer(cuda, stream))
    rows = []
    for size in B.parse_sizes(args.sizes):
        copy, buffers = B._memcpy(cuda, size, stream)
        memcpy_ms = timers[2](copy, args.repeat)
        del copy, buffers
        print(f"size {size >> 20} MiB: memcpy {memcpy_ms:.4f} ms", flush=True)
        pool = cupy.random.randint(0, 256, size, dtype=cupy.uint8)
        for dtype in args.dtypes.split(","):
            n = size // np.dtype(dtype).itemsize
            x = pool[:n * np.dtype(dtype).itemsize].view(dtype)
            for label in args.shifts.split(","):
                shift = B.shift_elements(label, n, np.dtype(dtype).itemsize)
                original = x.copy()
                # Bytes, not values: random bytes as float32 hold NaNs, which never compare equal.
                want = cupy.roll(x, shift).view(cupy.uint8)
                for scan in (float(s) for s in args.scans.split(",")):
                    with cuda_tuning.override(co_resident_scan=scan):
                        x[...] = original  # the timed calls of the scan before rolled it
                        plan = rotate.plan(x, shift)
                        rotate.roll(x, shift)
                        correct = bool(cupy.array_equal(x.view(cupy.uint8), want))
                        times = B._with_pct(B._time_all_ways(lambda: rotate.roll(x, shift), timers, args.repeat),
                                            memcpy_ms)
                    row = {"size_bytes": size, "dtype": dtype, "shift_label": label, "shift": int(shift),
                           "co_resident_scan": scan, "algorithm": plan.algorithm, "correct": correct,
                           "co_resident": plan._detail("co_resident"), "lanes": plan._detail("lanes"),
                           "tile_bytes": plan._detail("tile_bytes"), "pre_read_bytes": plan._detail("pre_read_bytes"),
                           "bytes_moved": plan.bytes_moved, "memcpy_ms": memcpy_ms, **times}
                    rows.append(row)
                    print(f"  {dtype:8} {label:6} scan {scan:4}: {plan.algorithm:10} lanes {row['lanes']} "
                          f"pre {row['pre_read_bytes']} whole {row['pct_memcpy']:5.1f}% "
                          f"device {row['device_pct_memcpy']:5.1f}% correct={correct}", flush=True)
                del want, original
        del pool
        cupy.get_default_memory_pool().free_all_blocks()
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(
            {"benchmark": "co_resident_scan", "environment": _provenance.environment(gpu=True),
             "arguments": vars(args), "rows": rows}, indent=1))
    return 0 if all(r["correct"] for r in rows) else 2


if __name__ == "__main__":
    sys.exit(main())
