"""Does 4 KiB aliasing between the ring and the row (or a swap's copies) slow the CPU chain and block swaps?

Backs: `cpu.alias_slack` (docs/tuning.md, "CPU: the chain"), from docs/results/cpu-aliasing.json.

4 KiB aliasing on this CPU: the measurements behind chain-serial's ring placement and the
block-swap rule (``rotate._backends.cpu.kernels._ring_offset``, ``_ops_alias``; archive/perf-notes-2026-12-02.md).

    .venv/bin/python benchmarks/probes/cpu_aliasing.py --json docs/results/cpu-aliasing.json

1. ``copy``: a 16 KiB copy (in cache) with its destination ``d`` bytes after its source
   modulo 4096, ns a byte (best of 20 x 200 copies).
2. ``ring``: chain-serial on float64 rolled by n/2 + 3 (256 MiB, one thread) with its ring
   started at offsets of a page relative to the row (no slack: ``slack=0``), then placed.
3. ``rolls``: float64 rolls of 256 MiB on two threads (``rotate_rows_inplace``, so the
   planner runs each call) at n/2 + 1, n/4 + 1, n/2 + 3 with the
   planner as it is and with the aliasing rule switched off, against ``np.copyto``; each
   checked against ``np.roll``.

Times are minima of 5 runs (rolls: the roll only, not the roll back).
"""
import argparse
import json
import sys
import time

import numba
import numpy as np

import rotate
from rotate._backends.cpu import kernels, planner as cpu_planner, runners
from rotate._provenance import environment


def best(fn, repeat=5):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def copy_sweep():
    buf = np.zeros(64 << 20, np.uint8)
    size = 16 << 10
    src0 = (8 << 20) - buf.ctypes.data % 4096
    rows = []
    for d in list(range(0, 17)) + [24, 40, 64, 2048, 4088, 4095]:
        dst0 = (32 << 20) - buf.ctypes.data % 4096 + d
        s, t = buf[src0:src0 + size], buf[dst0:dst0 + size]
        for _ in range(100):
            np.copyto(t, s)
        seconds = best(lambda: [np.copyto(t, s) for _ in range(200)], 20) / 200
        rows.append(dict(distance=d, ns_per_byte=round(seconds * 1e9 / size, 4)))
        print("copy", rows[-1], flush=True)
    return rows


def ring_sweep():
    numba.set_num_threads(1)
    a = np.random.default_rng(0).random(32 << 20)
    shift = a.size // 2 + 3
    d = rotate.plan(a, shift).steps[0].details
    assert d["runner"] == "chain-serial", d["runner"]
    k = (a.size - shift) * a.itemsize
    buf = a.view(np.uint8)
    big = np.empty(d["_scratch_row"] + d["ring"] * d["tile_bytes"] + 8192, np.uint8)
    out = np.empty_like(a)
    copy_ms = best(lambda: np.copyto(out, a)) * 1e3
    rows = []
    for target in [None] + list(range(0, 4096, 256)) + [16, 32, 48, 64, 4064, 4080]:
        place = target is None
        scratch = big if place else big[(target - big.ctypes.data - d["_scratch_row"]) % 4096:]
        ms = best(lambda: kernels._chain_rows_serial(buf, 1, a.nbytes, k, d["tile_bytes"], d["ring"], d["_table"],
                                                   scratch, d["_scratch_row"], 4096 if place else 0)) * 1e3
        ring = scratch.ctypes.data + d["_scratch_row"]
        rows.append(dict(ring="placed" if place else target, row_minus_ring=None if place else
                         (buf.ctypes.data - ring) % 4096, ms=round(ms, 2), x_copyto=round(ms / copy_ms, 3)))
        print("ring", rows[-1], flush=True)
    return dict(copyto_ms=round(copy_ms, 2), rows=rows)


def rolls():
    numba.set_num_threads(2)
    a = np.random.default_rng(1).random(32 << 20)
    out = np.empty_like(a)
    copy_ms = best(lambda: np.copyto(out, a)) * 1e3
    rule = cpu_planner._ops_alias
    rows = []
    for label, shift in (("n/2+1", a.size // 2 + 1), ("n/4+1", a.size // 4 + 1), ("n/2+3", a.size // 2 + 3)):
        left = a.size - shift
        words = a.view(np.uint64)
        for planner in ("as it is", "aliasing rule off"):
            cpu_planner._ops_alias = rule if planner == "as it is" else (lambda ops, itemsize: False)
            algorithm = cpu_planner.plan_rows(1, a.size, left, 8)[0]
            before = a.copy()
            runners.rotate_rows_inplace(words, 1, a.size, left)
            ok = bool(np.array_equal(a.view(np.uint8), np.roll(before, shift).view(np.uint8)))
            times = []
            for _ in range(5):  # the roll timed, the way back not (its plan differs)
                t = time.perf_counter()
                runners.rotate_rows_inplace(words, 1, a.size, left)
                times.append(time.perf_counter() - t)
                runners.rotate_rows_inplace(words, 1, a.size, shift)
            ms = min(times) * 1e3
            rows.append(dict(shift=label, planner=planner, algorithm=algorithm, ok=ok, ms=round(ms, 2),
                             x_copyto=round(ms / copy_ms, 3)))
            print("roll", rows[-1], flush=True)
    cpu_planner._ops_alias = rule
    return dict(copyto_ms=round(copy_ms, 2), rows=rows)


def main():
    from rotate import bench_env

    parser = argparse.ArgumentParser()
    parser.add_argument("--json", default="docs/results/cpu-aliasing.json")
    bench_env.add_arguments(parser)  # a busy machine is refused (exit status 3), or marked with --allow-busy
    args = parser.parse_args()
    load = bench_env.LoadGate.from_args(args, "benchmarks/probes/cpu_aliasing.py")
    result = dict(benchmark="cpu_aliasing", environment=environment(), copy=copy_sweep(), ring=ring_sweep(),
                  rolls=rolls())
    with open(args.json, "w") as handle:
        json.dump(load.finish(result), handle, indent=1)
    return load.status()


if __name__ == "__main__":
    sys.exit(main())
