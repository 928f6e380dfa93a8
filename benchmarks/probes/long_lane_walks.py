"""How many bytes must a block walking a whole long lane pre-read, for random shifts?

Backs: lane-walks' sizing (docs/tuning.md, "GPU: lane-walks"), from docs/results/long-lane-walks-probe.json.

Long lanes in one pass: what a block walking its own lane in chain order would pre-read (no GPU needed).

``roll_rows`` of lanes longer than a block's shared memory (about 226 KiB)
takes ``lane-swaps``: a block per lane, Gries-Mills block swaps until the
small side fits the saved side, then one streamed pass, so random shifts
move about 1.8-1.9x the bytes of one pass. A one-pass alternative that needs
no host plan: the block that owns a lane walks that lane's tiles in chain
order (the chain schedule's ``tile_at``, one lane of all ``m`` tiles), with
a tile size it picks for its lane's shift. In one block, program order keeps
every reader that comes before its writer safe; a piece whose reader comes
after its writer (``classify`` with a ring of one: the walk's look-ahead
copies may then never race a write) is pre-read into scratch before the
walk starts. So the whole cost over one pass is the pre-read bytes, moved
twice more.

This records, for seeded random shifts of lanes of 256 KiB to 16 MiB, the
fewest pre-read bytes over tile sizes of 8-32 KiB (``--tile-step`` apart)
and both chain steps (the schedule's ``PRE`` count, as
``compiled_table_builders()[2]`` scans it), the fewest when the block cuts
its lane into sub-lanes walked in ``(step, sub-lane)`` order, the fewest
over every 16-byte tile size of 8-32 KiB by the closed form
(``walks.walk_pre_bytes``; ``--grid-lanes`` random 4 MiB lanes too,
for the largest pre-read one launch's lanes would need), and the traffic of
``lane-swaps`` for the same shifts (``swap_traffic`` at the
default saved side, 80 KiB on an H200), all over the ideal 2N.

    python benchmarks/probes/long_lane_walks.py --json docs/results/long-lane-walks-probe.json
"""

from __future__ import annotations

import argparse
import functools
import json
import pathlib
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def walk_pre_bytes(scan, S, seg: int, left: int, tiles) -> tuple:
    """``(pre_bytes, tile_bytes, chain_step, interleaved_pre_bytes)``: the cheapest single-lane walk over
    ``tiles`` and both chain steps, and the fewest pre-read bytes when the block instead walks its lane
    cut into sub-lanes of any length, taken in ``(step, sub-lane)`` order (the schedule's co-resident
    order, which one block keeps by itself: ``pre_bytes_by_lane_steps`` with co-residence and a ring of
    one; a sub-lane of all ``m`` tiles is the single-lane walk)."""
    best = interleaved = None
    for tile in tiles:
        m = S.max_tiles(seg, tile)
        q = left // tile
        for chain in sorted({max(1, q), q + 1}):
            lengths = np.arange(1, m + 1, dtype=np.int64)
            pre = np.empty(m, np.int64)
            scan(seg, left, 0, tile, chain, 1, 1, lengths, pre)
            if best is None or pre[-1] < best[0]:
                best = (int(pre[-1]), int(tile), int(chain))
            interleaved = int(pre.min()) if interleaved is None else min(interleaved, int(pre.min()))
    return (*best, interleaved)


def closed_form_best(walks, seg: int, left: int, lo: int, hi: int, step: int):
    """The fewest single-lane pre-read bytes over tile sizes ``lo..hi`` every ``step`` bytes and both chain
    steps, by ``walks.walk_pre_bytes`` (the closed form, compiled here)."""
    return int(_compiled_best(walks)(seg, left, lo, hi, step))


@functools.lru_cache(maxsize=None)
def _compiled_best(walks):
    from numba import njit

    walk = njit(walks.walk_pre_bytes)

    @njit
    def best(n, k, lo, hi, step):
        least = -1
        for tile in range(lo, hi + 1, step):
            q = k // tile
            for chain in (max(1, q), q + 1):
                pre = walk(n, k, 0, tile, chain)
                if least < 0 or pre < least:
                    least = pre
        return least

    return best


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lanes", default="256K,1M,4M,16M")
    parser.add_argument("--shifts", type=int, default=16, help="random shifts a lane length")
    parser.add_argument("--tile-step", type=int, default=256)
    parser.add_argument("--save", type=int, default=80 * 1024, help="lane-swaps' saved side (bytes)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--grid-lanes", type=int, default=256,
                        help="random shifts of 4 MiB lanes for the closed form's largest pre-read (one launch's lanes)")
    parser.add_argument("--json")
    args = parser.parse_args(argv)

    from rotate import _provenance
    from rotate._schedules import chain as S
    from rotate._schedules import gries_mills
    from rotate._schedules import walks as SW

    scan = S.compiled_table_builders()[2]
    units = {"K": 1 << 10, "M": 1 << 20}
    tiles = range(8192, 32768 + 1, args.tile_step)
    rng = np.random.default_rng(args.seed)
    rows = []
    for label in args.lanes.split(","):
        seg = int(label[:-1]) * units[label[-1]]
        walks, interleaved, fine, swaps = [], [], [], []
        for _ in range(args.shifts):
            left = int(rng.integers(1, seg))
            pre, tile, chain, pre_interleaved = walk_pre_bytes(scan, S, seg, left, tiles)
            every16 = closed_form_best(SW, seg, left, 8192, 32768, 16)
            walks.append(1 + pre / seg)
            interleaved.append(1 + pre_interleaved / seg)
            fine.append(1 + every16 / seg)
            swaps.append(max(2 * seg, gries_mills.swap_traffic(seg, left, args.save)) / (2 * seg))
            rows.append({"lane_bytes": seg, "left_bytes": left, "pre_bytes": pre, "tile_bytes": tile,
                         "chain_step": chain, "walk_traffic_over_2n": round(1 + pre / seg, 5),
                         "interleaved_pre_bytes": pre_interleaved,
                         "interleaved_traffic_over_2n": round(1 + pre_interleaved / seg, 5),
                         "every16_pre_bytes": every16, "every16_traffic_over_2n": round(1 + every16 / seg, 5),
                         "swaps_traffic_over_2n": round(swaps[-1], 5)})
        print(f"{label:>5} lanes: walk traffic / 2N median {np.median(walks):.4f}, p90 "
              f"{np.percentile(walks, 90):.4f}, max {max(walks):.4f}; sub-lanes median "
              f"{np.median(interleaved):.4f}, max {max(interleaved):.4f}; every 16-byte size median "
              f"{np.median(fine):.4f}, max {max(fine):.4f}; lane-swaps median {np.median(swaps):.3f}, "
              f"max {max(swaps):.3f}")
    grid, grid_rows = [], []
    if args.grid_lanes:
        seg = 4 << 20
        for left in rng.integers(1, seg, args.grid_lanes):
            pre = closed_form_best(SW, seg, int(left), 8192, 32768, 16)
            swaps = max(2 * seg, gries_mills.swap_traffic(seg, int(left), args.save)) / (2 * seg)
            grid.append(pre / seg)
            grid_rows.append({"left_bytes": int(left), "pre_bytes": pre, "swaps_traffic_over_2n": round(swaps, 5)})
        cheaper = [min(1 + pre, row["swaps_traffic_over_2n"]) for pre, row in zip(grid, grid_rows)]
        walked = [pre for pre, row in zip(grid, grid_rows) if 1 + pre <= row["swaps_traffic_over_2n"]]
        print(f"{args.grid_lanes} lanes of 4 MiB, every 16-byte tile size: pre-reads / lane median "
              f"{np.median(grid):.4f}, p90 {np.percentile(grid, 90):.4f}, max {max(grid):.4f}; the cheaper of walk "
              f"and swaps a lane: traffic / 2N median {np.median(cheaper):.4f}, p90 {np.percentile(cheaper, 90):.4f}, "
              f"max {max(cheaper):.4f}, walks {len(walked)} of {len(grid)} (their pre-reads max {max(walked):.4f})")
    # The cost of ranking candidates on this CPU, 4 MiB lanes: the tile-by-tile count against the closed form.
    import time

    seg, left = 4 << 20, int(rng.integers(1, 4 << 20))
    count_kinds = S.compiled_table_builders()[1]
    closed_form_best(SW, seg, left, 8192, 8192, 16)  # compiled
    start = time.perf_counter()
    tiles_timed = list(range(8192, 32768 + 1, 256))
    for tile in tiles_timed:
        count_kinds(seg, left, 0, tile, max(1, left // tile), S.tile_count(seg, 0, tile), 1, 0)
    by_tile = (time.perf_counter() - start) / len(tiles_timed)
    start = time.perf_counter()
    closed_form_best(SW, seg, left, 8192, 32768, 16)
    closed = (time.perf_counter() - start) / (2 * len(range(8192, 32768 + 1, 16)))
    print(f"a candidate, 4 MiB lane: tile by tile {by_tile * 1e6:.1f} us, closed form {closed * 1e6:.2f} us")
    if args.json:
        record = {"benchmark": "long_lane_walks", "environment": _provenance.environment(),
                  "arguments": vars(args), "rows": rows,
                  "grid_4mib": grid_rows,
                  "seconds_per_candidate_4mib": {"count_kinds": by_tile, "walk_pre_bytes": closed}}
        pathlib.Path(args.json).write_text(json.dumps(record, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
