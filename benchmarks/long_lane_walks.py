"""Long lanes in one pass: what a block walking its own lane in chain order would pre-read (no GPU needed).

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
its lane into sub-lanes walked in ``(step, sub-lane)`` order, and the
traffic of ``lane-swaps`` for the same shifts (``swap_traffic`` at the
default saved side, 80 KiB on an H200), all over the ideal 2N.

    python benchmarks/long_lane_walks.py --json docs/results/long-lane-walks-probe.json
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
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


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lanes", default="256K,1M,4M,16M")
    parser.add_argument("--shifts", type=int, default=16, help="random shifts a lane length")
    parser.add_argument("--tile-step", type=int, default=256)
    parser.add_argument("--save", type=int, default=80 * 1024, help="lane-swaps' saved side (bytes)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json")
    args = parser.parse_args(argv)

    from rotate import _provenance
    from rotate import _schedule as S

    scan = S.compiled_table_builders()[2]
    units = {"K": 1 << 10, "M": 1 << 20}
    tiles = range(8192, 32768 + 1, args.tile_step)
    rng = np.random.default_rng(args.seed)
    rows = []
    for label in args.lanes.split(","):
        seg = int(label[:-1]) * units[label[-1]]
        walks, interleaved, swaps = [], [], []
        for _ in range(args.shifts):
            left = int(rng.integers(1, seg))
            pre, tile, chain, pre_interleaved = walk_pre_bytes(scan, S, seg, left, tiles)
            walks.append(1 + pre / seg)
            interleaved.append(1 + pre_interleaved / seg)
            swaps.append(max(2 * seg, S.swap_traffic(seg, left, args.save)) / (2 * seg))
            rows.append({"lane_bytes": seg, "left_bytes": left, "pre_bytes": pre, "tile_bytes": tile,
                         "chain_step": chain, "walk_traffic_over_2n": round(1 + pre / seg, 5),
                         "interleaved_pre_bytes": pre_interleaved,
                         "interleaved_traffic_over_2n": round(1 + pre_interleaved / seg, 5),
                         "swaps_traffic_over_2n": round(swaps[-1], 5)})
        print(f"{label:>5} lanes: walk traffic / 2N median {np.median(walks):.4f}, p90 "
              f"{np.percentile(walks, 90):.4f}, max {max(walks):.4f}; sub-lanes median "
              f"{np.median(interleaved):.4f}, max {max(interleaved):.4f}; lane-swaps median "
              f"{np.median(swaps):.3f}, max {max(swaps):.3f}")
    if args.json:
        record = {"benchmark": "long_lane_walks", "environment": _provenance.environment(),
                  "arguments": vars(args), "rows": rows}
        pathlib.Path(args.json).write_text(json.dumps(record, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
