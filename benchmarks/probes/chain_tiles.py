"""Which chain tile size and ring wins for each gate shift, and what does an item cost beyond its bytes?

Backs: `cuda.item_cost_bytes` (docs/tuning.md, "GPU: the chain kernel"), from
docs/results/chain-tiles-describe-ahead-h200.json.

Force one chain tile size and ring: which wins for each gate shift (1 GiB uint8, GPU).

    python benchmarks/probes/chain_tiles.py 3,n-7,1MiB+5,n/4+3,n/3,n/2+1 out.json

The planner's layout is filtered to one (tile, buffers) at a time; each
configuration is checked against cupy.roll before it is timed. Result:
docs/results/chain-tiles-describe-ahead-h200.json (the measurement behind
``planner._t().item_cost_bytes``).
"""
import json
import pathlib
import sys

import cupy

import rotate
from rotate import bench

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # benchmarks/: the shared _harness
from _harness import knobs  # noqa: E402

size = 1 << 30
time_it, memcpy_ms, keep = bench.memcpy_baseline(size)
x = cupy.random.randint(0, 256, size, dtype=cupy.uint8)
rows = []
for label in sys.argv[1].split(","):
    s = bench.shift_elements(label, size, 1)
    for T, B in ((32768, 2), (32768, 3), (16384, 2), (16384, 3), (16384, 4)):
        with knobs.forced_chain(T, B):
            p = rotate.plan(x, s)
            if p.algorithm != "chain":
                print(label, T, B, p.algorithm, flush=True)
                continue
            ok = bench.roll_matches_cupy(x, s)
            ms = time_it(lambda: rotate.roll(x, s), 10)
        d = p.steps[0].details
        row = dict(shift=label, T=T, B=B, pct=100 * memcpy_ms / ms, ok=ok, lane_steps=d["lane_steps"], chain=d["chain_step"], pre=d["pre_read_bytes"], min_blocks=d["min_blocks"])
        rows.append(row)
        print(row, flush=True)
json.dump(rows, open(sys.argv[2], "w"), indent=1)
