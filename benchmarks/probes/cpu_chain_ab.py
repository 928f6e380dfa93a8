"""Does the CPU chain beat the block swaps it replaces, and with which tile and ring?

Backs: `cpu.chain_tile_bytes`, `cpu.chain_ring`, `cpu.chain_item_bytes` (docs/tuning.md, "CPU: the chain"),
from docs/results/cpu-chain-ab-1thread.log and cpu-chain-ab-2thread.log.

CPU: the chain (chain-serial on one lane, chain-lanes on several) against the block swaps it replaces,
alternating, against np.copyto on one thread (medians).

    python benchmarks/probes/cpu_chain_ab.py [threads] [--mib 256] [--repeats 5] [--shifts n/3,rand0] [--dtypes uint8]

Each repetition flushes 1 GiB, then times np.copyto on one thread and, for each dtype and shift (issue
#36's gate set by default: 1, 4097, n-1, n/3, n/2+3, n/4+3, 2n/5+1, rand0, rand1), the block-swap plan
(chain tiles switched off), the chain plan and the chain through its ring alone (``--variants``) on
``threads`` numba threads (plans made for that many
lanes: the load check is off), alternating so that the host's slow and fast phases hit all alike. Every
plan is checked against numpy.roll once. Prints the load average at start and end: on a shared machine
take ratios within one run.
"""

import argparse
import os
import time

import numba
import numpy as np

import rotate
from rotate._backends.cpu import tuning as cpu_tuning

SHIFTS = {"1": lambda n: 1, "4097": lambda n: 4097, "n-1": lambda n: n - 1, "n/3": lambda n: n // 3,
          "n/2+3": lambda n: n // 2 + 3, "n/4+3": lambda n: n // 4 + 3, "2n/5+1": lambda n: 2 * n // 5 + 1}


def shift_of(label, n):
    if label.startswith("rand"):
        return int(np.random.default_rng(int(label[4:])).integers(1, n))
    return SHIFTS[label](n)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("threads", nargs="?", type=int, default=1)
    parser.add_argument("--mib", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--shifts", default=",".join(list(SHIFTS) + ["rand0", "rand1"]))
    parser.add_argument("--dtypes", default="uint8,float64")
    parser.add_argument("--variants", default="swaps,chain",
                        help="of swaps (chain tiles off), chain (the default plan), ring (the chain with chain_direct "
                             "off), chain64 / chain32 / chain16 (the chain with 64, 32 or 16 KiB tiles only)")
    args = parser.parse_args()
    threads = args.threads
    n = args.mib << 20
    a = np.random.default_rng(0).integers(0, 255, n, dtype=np.uint8)
    b = np.empty_like(a)
    flush = np.ones(1 << 30, np.uint8)
    print(f"load average at start {os.getloadavg()}, {threads} threads, {args.mib} MiB", flush=True)

    def once(fn, team):
        numba.set_num_threads(team)
        np.add(flush, 1, out=flush)
        t = time.perf_counter()
        fn()
        return (time.perf_counter() - t) * 1e3

    known = {"swaps": {"chain_tile_bytes": ()}, "chain": {}, "ring": {"chain_direct": False},
             "chain64": {"chain_tile_bytes": (64 << 10,)}, "chain32": {"chain_tile_bytes": (32 << 10,)},
             "chain16": {"chain_tile_bytes": (16 << 10,)}}
    variants = [(name, known[name]) for name in args.variants.split(",")]
    cases = []
    for dtype in args.dtypes.split(","):
        x = a.view(dtype)
        for label in args.shifts.split(","):
            k = shift_of(label, x.size)
            for name, fields in variants:
                with cpu_tuning.override(adapt_to_load=False, **fields):
                    numba.set_num_threads(threads)
                    plan = rotate.plan(x, k)
                    expected = np.roll(x, k)
                    rotate.roll(x, k)
                    assert np.array_equal(x.view(np.uint8), expected.view(np.uint8)), (dtype, label, str(plan))
                    rotate.roll(x, -k)
                    del expected
                cases.append((dtype, label, name, fields, x, k, plan.steps[0]))
    res = {}
    for _ in range(args.repeats):
        for dtype, label, name, fields, x, k, step in cases:
            copy = once(lambda: np.copyto(b, a), 1)
            with cpu_tuning.override(adapt_to_load=False, **fields):
                ms = once(lambda: rotate.roll(x, k), threads)
            res.setdefault((dtype, label, name), []).append((ms, copy))
    numba.set_num_threads(threads)
    print(f"load average at end {os.getloadavg()}")
    for dtype, label, name, _, _, _, step in cases:
        pairs = res[(dtype, label, name)]
        ratios = [ms / copy for ms, copy in pairs]
        d = step.details
        print(f"{dtype:7s} {label:7s} {name:5s} {step.algorithm:26s} lanes={d.get('lanes')} tile={d.get('tile_bytes')} "
              f"pre={d.get('pre_read_bytes')} moved/2N={step.bytes_moved / (2 * n):.3f}: "
              f"median {np.median(ratios):.2f}x one-thread copyto (min {min(ratios):.2f}, max {max(ratios):.2f}; "
              f"copyto median {np.median([c for _, c in pairs]):.1f} ms)", flush=True)


if __name__ == "__main__":
    main()
