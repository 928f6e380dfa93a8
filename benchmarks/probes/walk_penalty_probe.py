"""How many lanes does lane-walks' pool turn away, and would a softer penalty over the share choose better?

Backs: `cuda.walk_pool` (docs/tuning.md, "GPU: lane-walks"), from docs/results/walk-penalty-probe.json and
walk-penalty-probe-share-sixth.json.

How ``lane-walks``' choice would change with a softer penalty for pre-reads over a block's share (CPU only).

The kernel's choice (``rotate._schedules.walks.walk_pick_cost``) adds the lane's
length to a candidate whose estimated pre-reads exceed the block's share,
so a lane whose large tiles all pre-read more than the share walks small
tiles instead (on an H200, the slowest lane of a 1 GiB launch: 301 tiles,
archive/perf-notes-2026-12-02.md, "Lane walks: tickets and a pool"). Since the launch has
a pool for such lanes, a softer rule is possible: count the bytes over the
share twice, and add the lane's length only past share and pool together.
This replays both rules (with the planner's share, or ``--share``) for seeded random shifts, the pool asked in lane
order as ``rotate._backends.cuda.schedules.lane_walks.walk_traffic`` does, and reports the tiles a lane walks,
its pre-reads, and the lanes the pool turns away (block swaps).

    python benchmarks/probes/walk_penalty_probe.py --json docs/results/walk-penalty-probe.json
    python benchmarks/probes/walk_penalty_probe.py --share 0.1667 --json docs/results/walk-penalty-probe-share-sixth.json
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

# (lane bytes, item size, lanes): the H200 runs' shapes.
CASES = ((4 << 20, 1, 256), (4 << 20, 4, 1024), (2 << 20, 4, 512), (1 << 20, 4, 1024))


def _compiled():
    import numba

    from rotate._schedules import chain as S
    from rotate._schedules import walks

    @numba.njit
    def pick_cost(n, k, tile_hi, sizes, pick, reach, share, pool, soft):
        size = walks.walk_chunk_size(n, k, 0, tile_hi, sizes, pick // walks.WALK_CHAINS)
        if size < 0:
            return -1, -1
        index = size * walks.WALK_CHAINS + pick % walks.WALK_CHAINS
        tile_bytes, chain = walks.walk_candidate(n, k, 0, tile_hi, index)
        if chain <= 0:
            return -1, -1
        estimate = walks.walk_estimate(n, k, 0, tile_bytes, chain, reach)
        cost = estimate + S.tile_count(n, 0, tile_bytes) * walks.WALK_ITEM_BYTES
        if not soft:
            if estimate > share:  # the kernel's rule
                cost += n
        else:
            if estimate > share:
                cost += estimate - share
            if estimate > share + pool:
                cost += n
        return cost, index

    @numba.njit
    def replay(ks, n, tile_max, max_tiles, reach, share, pool, soft):
        tile_lo, tile_hi = walks.walk_tile_range(n, tile_max, max_tiles)
        sizes = walks.walk_sizes(tile_lo, tile_hi)
        out = np.zeros((ks.shape[0], 3), np.int64)  # tiles, pre-read bytes, walked (0: pool turned it away)
        used = 0
        for lane in range(ks.shape[0]):
            k = ks[lane]
            best = -1
            best_index = -1
            for pick in range(walks.walk_picks(tile_lo, tile_hi)):
                cost, index = pick_cost(n, k, tile_hi, sizes, pick, reach, share, pool, soft)
                if index >= 0 and (best_index < 0 or cost < best or (cost == best and index < best_index)):
                    best = cost
                    best_index = index
            tile_bytes, chain = walks.walk_candidate(n, k, 0, tile_hi, best_index)
            m = S.tile_count(n, 0, tile_bytes)
            g, length, inv = S.chain_shape(m, S.chain_step(m, chain))
            total = 0
            for w in range(m):
                lo, hi = walks.walk_span(n, k, 0, tile_bytes, m, g, length, inv, reach, w)
                if lo < hi:
                    total += hi - lo
            walked = 1
            if total > share:
                walked = 1 if used + total <= pool else 0
                used += total
            out[lane, 0] = m
            out[lane, 1] = total
            out[lane, 2] = walked
        return out

    return replay


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--share", type=float, help="a block's share as a fraction of a lane (default: the "
                                                     "planner's WALK_SHARE)")
    args = parser.parse_args(argv)
    from rotate._backends.cuda import device as gpu_device
    from rotate._backends.cuda.schedules import lane_walks as gpu_lane_walks
    from rotate._provenance import environment

    replay = _compiled()
    rng = np.random.default_rng(args.seed)
    rows = []
    for seg, item, lanes in CASES:
        n = seg // item
        ks = ((n - rng.integers(1, n, lanes)) * item).astype(np.int64)
        share = int(seg * (args.share or gpu_device.policy().walk_share)) // 16 * 16
        pool = int(lanes * seg * gpu_device.policy().walk_pool) // 16 * 16
        tile, max_tiles, buffers = gpu_lane_walks._walk_limits(seg)  # the default tiles for this lane length
        for rule, soft in (("kernel", False), ("soft", True)):
            out = replay(ks, seg, tile, max_tiles, buffers - 1, share, pool, soft)
            walked = out[:, 2] == 1
            rows.append({"lane_bytes": seg, "itemsize": item, "lanes": lanes, "rule": rule,
                         "tile_bytes": tile, "max_tiles": max_tiles,
                         "tiles_mean": float(out[:, 0].mean()), "tiles_max": int(out[:, 0].max()),
                         "pre_read_mean_pct": float(100 * out[:, 1].mean() / seg),
                         "pre_read_max_pct": float(100 * out[:, 1].max() / seg),
                         "lanes_over_share": int((out[:, 1] > share).sum()),
                         "lanes_turned_away": int((~walked).sum())})
            print(json.dumps(rows[-1]), flush=True)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps({"benchmark": "walk_penalty_probe", "seed": args.seed,
                                                        "share_fraction": args.share or gpu_device.policy().walk_share,
                                                        "environment": environment(gpu=False), "cases": rows},
                                                       indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
