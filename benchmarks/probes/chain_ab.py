"""Which chain kernel knobs (variant, decode, tile, ring, pre-read tickets, sector phase) win in an A/B run?

Backs: `cuda.default_chain_variant`, `cuda.pipeline_threads`, `cuda.chain_decode`, `cuda.tile_bytes`,
`cuda.buffers`, `SECTOR_BYTES`, `PRE_SMALL_VECS`, `PRE_TICKET_ENTRIES` (docs/tuning.md, "GPU: the chain
kernel", "GPU: pre-reads"), from docs/results/chain-ab-*.jsonl.

Time chain rolls of one rotate tree, for A/B runs of two trees in one device session (GPU).

    PYTHONPATH=<tree> python benchmarks/probes/chain_ab.py LABEL uint8:3,uint8:1MiB+5,float64:n/3 [size] \\
        [--force T:B,...] [--variant single|control-warp|pipeline|auto] [--decode runs|direct]
        [--set knob=value,...] > out.jsonl

Each point is checked against ``cupy.roll`` byte for byte, then timed
(device time, 10 calls, median) against a device-to-device memcpy of the
same bytes measured in the same process. ``--force T:B`` filters the
planner's chain layouts to one tile size and ring depth per line (as
``chain_tiles.py``); ``--variant`` sets the chain kernel variant (the
planner's ``chain_variant`` setting) for every point, ``--decode`` the chain
kernel's item decoding (``chain_decode``), ``--set`` any other planner setting
(integers: ``threads=192``). Prints one JSON line per point, with the plan's
configuration and its pre-read ticket count.
"""
import contextlib
import json
import pathlib
import sys

import cupy

import rotate
from rotate import bench

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # benchmarks/: the shared _harness
from _harness.knobs import forced_chain  # noqa: E402
from rotate._backends.cuda.schedules import chain as gpu_chain  # noqa: E402
from rotate._backends.cuda import tuning as cuda_tuning  # noqa: E402

label, points = sys.argv[1], [p.split(":", 1) for p in sys.argv[2].split(",")]
size = int(sys.argv[3]) if len(sys.argv) > 3 and not sys.argv[3].startswith("--") else 1 << 30
forced = [None]
if "--force" in sys.argv:
    forced = [tuple(map(int, c.split(":"))) for c in sys.argv[sys.argv.index("--force") + 1].split(",")]
variant = sys.argv[sys.argv.index("--variant") + 1] if "--variant" in sys.argv else None
decode = sys.argv[sys.argv.index("--decode") + 1] if "--decode" in sys.argv else None
knobs = {key: value for key, value in (("chain_variant", variant), ("chain_decode", decode)) if value}
if "--set" in sys.argv:
    for pair in sys.argv[sys.argv.index("--set") + 1].split(","):
        key, value = pair.split("=", 1)
        knobs[key] = int(value) if value.lstrip("-").isdigit() else value
time_it, memcpy_ms, keep = bench.memcpy_baseline(size)
arrays = {}
for dtype, shift_label in points:
    if dtype not in arrays:
        arrays.clear()
        arrays[dtype] = cupy.random.randint(0, 256, size, dtype=cupy.uint8).view(dtype)
    x = arrays[dtype]
    s = bench.shift_elements(shift_label, x.size, x.itemsize)
    for force in forced:
        with forced_chain(*force) if force else contextlib.nullcontext(), \
                cuda_tuning.override(**knobs):
            p = rotate.plan(x, s)
            d = p.steps[0].details
            ok = bench.roll_matches_cupy(x, s)
            ms = time_it(lambda: rotate.roll(x, s), 10)
        row = dict(label=label, dtype=dtype, shift=shift_label, force=force, variant=variant, decode=d.get("decode"),
                   knobs=knobs, pct=round(100 * memcpy_ms / ms, 1), ok=ok, block=d.get("block"),
                   algorithm=p.algorithm, **{key: d.get(key) for key in (
                       "tile_bytes", "buffers", "min_blocks", "control_warp", "chain_step", "lane_steps",
                       "pre_read_bytes")})
        if p.algorithm == "chain":
            listed = gpu_chain.pre_tickets_per_row(d["_table"], x.nbytes, d["tile_bytes"])
            row["pre_tickets"] = listed
        print(json.dumps(row), flush=True)
