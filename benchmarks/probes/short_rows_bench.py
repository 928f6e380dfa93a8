"""Do many short rows of a one-axis roll run faster as row-panels than through the chain?

Backs: the row-panels rule (docs/tuning.md, "GPU: lane-panels", the paragraph on short rows), from
docs/results/small-rows-32a60ab-h200.json.

Rolls of the last axis of many short rows (1 GiB), against cupy.roll, checked byte for byte (GPU).

    python benchmarks/probes/short_rows_bench.py out.json

Device time, % of a memcpy of the same bytes in the same run. Result:
docs/results/small-rows-32a60ab-h200.json.
"""
import json
import sys

import cupy

import rotate
from rotate import bench
size = 1 << 30
time_it, memcpy_ms, keep = bench.memcpy_baseline(size)
pool = cupy.random.randint(0, 256, size, dtype=cupy.uint8)
rows = []
for shape, dtype, shift in (((1 << 20, 1000), "uint8", 333), ((1 << 17, 8192), "uint8", 3), ((1 << 18, 1024), "float32", -5),
                            ((1 << 15, 32768), "uint8", 1000), ((1 << 24, 16), "float32", 7)):
    nbytes = shape[0] * shape[1] * cupy.dtype(dtype).itemsize
    x = pool[:nbytes].view(dtype).reshape(shape)
    p = rotate.plan(x, shift, axis=1)
    ok = bench.roll_matches_cupy(x, shift, axis=1)
    ms = time_it(lambda: rotate.roll(x, shift, axis=1), 10)
    peer = time_it(lambda: cupy.roll(x, shift, axis=1), 10)
    row = dict(shape=shape, dtype=dtype, shift=shift, algorithm=p.algorithm, ok=ok, pct=round(100 * memcpy_ms * nbytes / size / ms, 1),
               cupy_roll_pct=round(100 * memcpy_ms * nbytes / size / peer, 1))
    rows.append(row)
    print(row, flush=True)
json.dump(dict(memcpy_ms=memcpy_ms, rows=rows), open(sys.argv[1], "w"), indent=1)
