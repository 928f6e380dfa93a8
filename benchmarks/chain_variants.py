"""Chain kernel variants side by side (1 GiB), checked against cupy.roll byte for byte (GPU).

    python benchmarks/chain_variants.py uint8,float64 3,n-7,1MiB+5,n/4+3,n/3,n/2+1 out.json

Device time of ``rotate.roll`` with ``settings["chain_variant"]`` "single",
"control-warp" and "pipeline", % of a memcpy in the same run, then two multi-row shapes.
Result: docs/results/chain-variants-h200.json.
"""
import json
import sys

import cupy

import rotate
from rotate import bench
from rotate._cuda import planner
from rotate._tuning import cuda as cuda_tuning
size = 1 << 30
time_it, memcpy_ms, keep = bench.memcpy_baseline(size)
pool = cupy.random.randint(0, 256, size, dtype=cupy.uint8)
rows = []
cases = [(dt, label) for dt in sys.argv[1].split(",") for label in sys.argv[2].split(",")]
for dtype, label in cases:
    x = pool.view(dtype)
    s = bench.shift_elements(label, x.size, x.itemsize)
    for variant in ("single", "control-warp", "pipeline"):
        with cuda_tuning.override(chain_variant=variant):
            p = rotate.plan(x, s)
            ok = bench.roll_matches_cupy(x, s)
            ms = time_it(lambda: rotate.roll(x, s), 10)
        d = p.steps[0].details
        row = dict(dtype=dtype, shift=label, variant=variant, pct=round(100 * memcpy_ms / ms, 1), ok=ok, algorithm=p.algorithm,
                   **{k: d.get(k) for k in ("tile_bytes", "buffers", "block", "lane_steps", "chain_step", "pre_read_bytes")})
        rows.append(row)
        print(row, flush=True)
# multi-row: 2-D rolls along the last axis (rows of 64 KiB and of 1000 bytes + offset)
for shape, shift in (((16384, 65536), 12345), ((1 << 20, 1000), 333)):
    x = pool[: shape[0] * shape[1]].reshape(shape)
    for variant in ("single", "control-warp", "pipeline"):
        with cuda_tuning.override(chain_variant=variant):
            p = rotate.plan(x, shift, axis=1)
            ok = bench.roll_matches_cupy(x, shift, axis=1)
            ms = time_it(lambda: rotate.roll(x, shift, axis=1), 10)
        row = dict(shape=shape, shift=shift, variant=variant, pct=round(100 * memcpy_ms * x.nbytes / size / ms, 1), ok=ok, algorithm=p.algorithm)
        rows.append(row)
        print(row, flush=True)
json.dump(dict(memcpy_ms=memcpy_ms, rows=rows), open(sys.argv[3], "w"), indent=1)
