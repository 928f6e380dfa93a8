"""Below which block size does a CPU multi-axis roll run faster a pass an axis than as ``multi-axis-cycles``?

Backs: `cpu.cycle_min_block_bytes` (docs/tuning.md, "CPU: multi-axis rolls"), from
docs/results/cpu-cycle-blocks.json.

``multi-axis-cycles`` walks the cycles of the first rolled axis a *block* (everything after that axis) at
a time; consecutive blocks of a cycle lie ``shift`` blocks apart, so each block is a random access. The
random CPU run (seed 4184323330) had two-axis rolls of 128-byte blocks at 5.6-6.5x a one-thread
``np.copyto``. This times, alternated in one process, whole ``rotate.roll`` calls with
``cycle_min_block_bytes`` at 0 (always one pass) and at 2**40 (always a pass an axis), as multiples of a
one-thread ``np.copyto`` of the same bytes: 2- and 3-axis rolls of about 64 MB whose blocks are 128 B to
4 KiB, and the random run's two cases; each result checked against ``np.roll`` once, byte for byte.

    NUMBA_NUM_THREADS=1 python benchmarks/probes/cpu_cycle_blocks.py --json out.json [--mb 64] [--repeat 5]

(one thread, as issue #33's CPU gate; the environment block records the threads).
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


def cases(mb: int) -> list:
    total = mb * 1000 * 1000
    out = [("random 24", (226267, 8), "complex128", (160257, 6), (0, 1)),
           ("random 14", (15173, 106, 16), "float64", (51, 12), (1, 2))]
    for k in (8, 16, 32, 64, 128, 256):  # blocks of 16 k bytes, one row each
        n0 = total // (16 * k)
        out.append((f"block {16 * k} B", (n0, k), "complex128", (n0 // 3 + 7, 5), (0, 1)))
    for k in (8, 16, 32, 64):  # blocks of three rows of 8 k bytes
        n0 = total // (24 * k)
        out.append((f"block {24 * k} B, 3 rows", (n0, 3, k), "float64", (n0 // 3 + 7, 1, 3), (0, 1, 2)))
    return out


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json")
    parser.add_argument("--mb", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)

    import rotate
    from rotate._backends.cpu import tuning as cpu_tuning
    from _harness.provenance import environment

    rows, ok = [], True
    for label, shape, dtype, shifts, axes in cases(args.mb):
        nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
        x = np.random.default_rng(0).integers(0, 256, nbytes, dtype=np.uint8).view(dtype).reshape(shape)
        other = np.empty_like(x)
        want = np.roll(x, shifts, axes)
        copyto = best(lambda: np.copyto(other, x), args.repeat)
        row = {"case": label, "shape": list(shape), "dtype": dtype, "shifts": shifts, "axes": axes,
               "nbytes": nbytes, "copyto_s": copyto}
        for name, bound in (("one_pass", 0), ("per_axis", 1 << 40)):
            with cpu_tuning.override(cycle_min_block_bytes=bound):
                y = x.copy()
                rotate.roll(y, shifts, axes)
                correct = y.tobytes() == want.tobytes()
                ok = ok and correct
                plan = rotate.plan(y, shifts, axes)
                seconds = best(lambda: rotate.roll(y, shifts, axes), args.repeat)
            row[name] = {"algorithm": plan.algorithm, "block_bytes": plan.steps[0].seg_bytes, "correct": correct,
                         "seconds": seconds, "x_copyto": seconds / copyto}
        print(json.dumps({"case": label, "one_pass": round(row["one_pass"]["x_copyto"], 2),
                          "per_axis": round(row["per_axis"]["x_copyto"], 2)}), flush=True)
        rows.append(row)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(
            {"benchmark": "cpu_cycle_blocks", "environment": environment(gpu=False), "repeat": args.repeat,
             "cases": rows}, indent=1, default=str))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
