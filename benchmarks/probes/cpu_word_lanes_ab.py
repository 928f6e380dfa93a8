"""Do roll_rows' lanes of whole 4- and 8-byte words run faster as byte windows than as a funnel-shift word loop?

Backs: `cpu.window_min_words` (docs/tuning.md, "CPU: `roll_rows` lanes"), from
docs/results/cpu-word-lanes.json.

Lanes whose bytes and pitch are multiples of 4 (or 8) move as words (``per-lane-small-copy``: the lane
copied twice into the thread's scratch, each word rebuilt from two by a funnel shift). The byte windows
(``per-lane-byte-window``) double a lane through scratch in 16-byte copies and copy its rotated window back.
This times ``rotate.roll_rows`` (a random shift a lane) with ``window_min_words`` at 0 (words) and at
4 (windows from four words), alternated, on one thread and on all, as multiples of a one-thread
``np.copyto`` of the same bytes; each checked against numpy once.

    python benchmarks/probes/cpu_word_lanes_ab.py --json out.json [--mib 64]
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

#: (lane bytes, dtype): lanes of whole 4- or 8-byte words of 20-256 bytes.
CASES = [(12, "uint8"), (16, "uint8"), (20, "uint8"), (24, "uint8"), (28, "uint8"), (32, "uint8"), (40, "uint8"), (44, "uint8"), (48, "uint8"),
         (64, "uint8"), (100, "uint8"), (128, "uint8"), (200, "uint8"), (256, "uint8"),
         (24, "float32"), (32, "float32"), (48, "float32"), (96, "float32"), (256, "float32"),
         (24, "float64"), (40, "float64"), (64, "float64"), (128, "float64"), (48, "complex128")]
VALUES = (0, 4)


def main(argv=None) -> int:
    from rotate import bench_env

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json")
    parser.add_argument("--mib", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=5)
    bench_env.add_arguments(parser)
    args = parser.parse_args(argv)
    gate = bench_env.LoadGate.from_args(args, "cpu_word_lanes_ab")

    import rotate
    from _harness.provenance import environment
    from rotate._backends.cpu import tuning as cpu

    rows, ok = [], True
    for lane_bytes, dtype in CASES:
        n = lane_bytes // np.dtype(dtype).itemsize
        lanes = (args.mib << 20) // lane_bytes
        a = np.random.default_rng(0).integers(0, 256, lanes * lane_bytes, dtype=np.uint8).view(dtype).reshape(lanes, n)
        shifts = np.random.default_rng(1).integers(-n, n + 1, lanes)
        other = np.empty_like(a)
        times = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            np.copyto(other, a)
            times.append(time.perf_counter() - start)
        copyto = float(np.median(times))
        del other
        row = {"lane_bytes": lane_bytes, "dtype": dtype, "lanes": lanes, "copyto_ms": 1e3 * copyto}
        check = a[:4096].copy()
        want = np.array([np.roll(lane, s) for lane, s in zip(check, shifts[:4096])])
        for threads in (1, None):
            label = "one_thread" if threads == 1 else "all_threads"
            fields = {"lanes": threads} if threads else {}
            entry = {}
            for value in VALUES:
                with cpu.override(window_min_words=value, **fields):
                    got = check.copy()
                    rotate.roll_rows(got, shifts[:4096])
                    ok &= got.tobytes() == want.tobytes()
                    entry[str(value)] = {"algorithm": rotate.plan_roll_rows(a, shifts).algorithm,
                                         "seconds": []}
            for _ in range(args.repeat):
                for value in VALUES:
                    with cpu.override(window_min_words=value, **fields):
                        start = time.perf_counter()
                        rotate.roll_rows(a, shifts)
                        entry[str(value)]["seconds"].append(time.perf_counter() - start)
            for value in VALUES:
                entry[str(value)]["x_copyto"] = float(np.median(entry[str(value)].pop("seconds"))) / copyto
            row[label] = entry
        print(f"{lane_bytes:3} B {dtype:7} " + " | ".join(
            f"{label}: " + " / ".join(f"{v}: {row[label][str(v)]['x_copyto']:.2f}x" for v in VALUES)
            for label in ("one_thread", "all_threads")), flush=True)
        rows.append(row)
    result = gate.finish({"benchmark": "cpu_word_lanes_ab", "environment": environment(), "mib": args.mib,
                          "repeat": args.repeat, "reference": "np.copyto, one thread", "correct": ok, "cases": rows})
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(result, indent=1, default=str))
    return gate.status() if ok else 1


if __name__ == "__main__":
    sys.exit(main())
