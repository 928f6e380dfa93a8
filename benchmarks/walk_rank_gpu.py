"""How long a block takes to rank a long lane's tile sizes on the GPU, by the closed form (GPU).

The one-pass walk of a long ``roll_rows`` lane (docs/perf-notes.md, "Long
lanes in one pass") needs each block to choose its lane's tile size from the
lane's shift, which lives on the device. ``_schedule.walk_pre_bytes`` counts
a candidate's pre-read bytes in O(log m); here it runs as a device function:
one block a lane, each thread a share of the candidates (tile sizes from
``--lo`` to ``--hi`` every ``--step`` bytes, both chain steps), then the
block's least. The launch is timed with CUDA events, and every lane's least
is checked against the CPU's (``benchmarks/long_lane_walks.py``'s
``closed_form_best``).

    python benchmarks/walk_rank_gpu.py --json docs/results/walk-rank-gpu-h200.json
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys

import numpy as np
from numba import cuda, int64

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

THREADS = 256


def rank_kernel(threads: int = THREADS):
    """``kernel(lefts, n, lo, step, count, out_pre, out_tile)``: block ``b`` ranks tile sizes ``lo + step *
    i`` (``i < count``) and both chain steps for a lane of ``n`` bytes rolled left by ``lefts[b]``, and
    writes the fewest pre-read bytes and the tile size that gives them."""
    from rotate import _schedule as S

    @cuda.jit
    def kernel(lefts, n, lo, step, count, out_pre, out_tile):
        least = cuda.shared.array(threads, int64)
        tiles = cuda.shared.array(threads, int64)
        tid = cuda.threadIdx.x
        k = lefts[cuda.blockIdx.x]
        best = int64(-1)
        best_tile = int64(0)
        i = tid
        while i < count:
            tile = lo + step * i
            q = k // tile
            for chain in (max(int64(1), q), q + 1):
                pre = S.walk_pre_bytes(n, k, int64(0), tile, chain)
                if best < 0 or pre < best:
                    best = pre
                    best_tile = tile
            i += threads
        least[tid] = best
        tiles[tid] = best_tile
        cuda.syncthreads()
        if tid == 0:
            result = int64(-1)
            result_tile = int64(0)
            for t in range(threads):
                if least[t] >= 0 and (result < 0 or least[t] < result):
                    result = least[t]
                    result_tile = tiles[t]
            out_pre[cuda.blockIdx.x] = result
            out_tile[cuda.blockIdx.x] = result_tile

    return kernel


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lanes", type=int, default=256)
    parser.add_argument("--lane-bytes", type=int, default=4 << 20)
    parser.add_argument("--lo", type=int, default=8192)
    parser.add_argument("--hi", type=int, default=32768)
    parser.add_argument("--steps", default="16,64,256", help="tile size steps to time, bytes")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json")
    args = parser.parse_args(argv)

    from long_lane_walks import closed_form_best
    from rotate import _provenance
    from rotate import _schedule as S

    n = args.lane_bytes
    lefts = np.random.default_rng(args.seed).integers(1, n, args.lanes).astype(np.int64)
    d_lefts = cuda.to_device(lefts)
    kernel = rank_kernel()
    rows = []
    for step in (int(s) for s in args.steps.split(",")):
        count = (args.hi - args.lo) // step + 1
        out_pre = cuda.device_array(args.lanes, np.int64)
        out_tile = cuda.device_array(args.lanes, np.int64)
        kernel[args.lanes, THREADS](d_lefts, n, args.lo, step, count, out_pre, out_tile)  # compile, warm
        cuda.synchronize()
        start, end = cuda.event(), cuda.event()
        times = []
        for _ in range(5):
            start.record()
            kernel[args.lanes, THREADS](d_lefts, n, args.lo, step, count, out_pre, out_tile)
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
        got = out_pre.copy_to_host()
        expected = np.array([closed_form_best(S, n, int(k), args.lo, args.hi, step) for k in lefts])
        ms = float(np.median(times))
        rows.append({"tile_step": step, "candidates": 2 * count, "launch_ms": ms, "matches_cpu": bool(
            np.array_equal(got, expected)), "median_pre_over_lane": float(np.median(got) / n),
            "max_pre_over_lane": float(got.max() / n)})
        print(f"step {step:4d} B: {2 * count} candidates a lane, {args.lanes} lanes of {n >> 10} KiB: {ms:.3f} ms "
              f"a launch (one block a lane, {THREADS} threads); matches the CPU: {rows[-1]['matches_cpu']}; "
              f"pre-reads / lane median {rows[-1]['median_pre_over_lane']:.4f}")
    if args.json:
        record = {"benchmark": "walk_rank_gpu", "environment": _provenance.environment(gpu=True),
                  "arguments": vars(args), "rows": rows}
        pathlib.Path(args.json).write_text(json.dumps(record, indent=1) + "\n")
    return 0 if all(r["matches_cpu"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
