"""Do roll_rows' byte-window lanes of 17-64 bytes run faster built in registers than doubled through scratch?

Backs: `cpu.register_lane_bytes` (docs/tuning.md, "CPU: `roll_rows` lanes"), from
docs/results/cpu-lane-registers.json.

Lanes whose bytes (or pitch) are not a multiple of 4 move as 8-byte windows at byte offsets
(``per-lane-byte-window``). Lanes of 9-16 bytes are two words built in registers; longer ones were copied
twice into the thread's scratch and their rotated window copied back. With ``register_lane_bytes`` at 64,
lanes of 17-64 bytes are four (17-32) or five to eight (33-64) words built from loads of the lane, each
word one or two loads and no branch. This times ``rotate.roll_rows`` (a random shift a lane, plans made
before timing) with the field at 16 (doubled through scratch) and at 64, alternated, on one thread and on
all, as multiples of a one-thread ``np.copyto`` of the same bytes; each checked against numpy once.

    python benchmarks/probes/cpu_lane_registers_ab.py --json out.json [--mib 128]
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

#: (lane bytes, dtype): lanes whose bytes are not a multiple of 4 (the byte-window path).
CASES = [(17, "uint8"), (19, "uint8"), (21, "uint8"), (25, "uint8"), (31, "uint8"), (33, "uint8"), (39, "uint8"),
         (45, "uint8"), (57, "uint8"), (63, "uint8"), (34, "uint16"), (50, "uint16"), (62, "uint16")]
VALUES = (16, 64)


def main(argv=None) -> int:
    from rotate import bench_env

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json")
    parser.add_argument("--mib", type=int, default=128)
    parser.add_argument("--repeat", type=int, default=5)
    bench_env.add_arguments(parser)
    args = parser.parse_args(argv)
    gate = bench_env.LoadGate.from_args(args, "cpu_lane_registers_ab")

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
                with cpu.override(register_lane_bytes=value, **fields):
                    got = check.copy()
                    rotate.roll_rows(got, shifts[:4096])
                    ok &= got.tobytes() == want.tobytes()
                    entry[str(value)] = {"algorithm": rotate.plan_roll_rows(a, shifts).algorithm,
                                         "registers": rotate.plan_roll_rows(a, shifts).steps[0].details.get("registers"),
                                         "seconds": []}
            for _ in range(args.repeat):
                for value in VALUES:
                    with cpu.override(register_lane_bytes=value, **fields):
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
    result = gate.finish({"benchmark": "cpu_lane_registers_ab", "environment": environment(), "mib": args.mib,
                          "repeat": args.repeat, "reference": "np.copyto, one thread", "correct": ok, "cases": rows})
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(result, indent=1, default=str))
    return gate.status() if ok else 1


if __name__ == "__main__":
    sys.exit(main())
