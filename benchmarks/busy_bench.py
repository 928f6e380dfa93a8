"""Does a busy machine make a CPU roll much slower than one thread? (issue #30)

Times the whole call ``rotate.roll(a, shift)`` (float32, 16 MiB and 256 MiB,
shifts 3, n/3 and n/2 + 5) with numba's default threads and with one thread,
first on the machine as it is, then with ``--load`` (default: one a core)
CPU-bound background processes running. The gate: under that load the
default call takes at most 1.5x the one-thread call, and the quiet default
is no slower than before (the planner reads the cores other processes leave
free: rotate/_backends/cpu/, ``usable_threads``). Every call is checked against
numpy once. The load averages at start and end are recorded; a quiet phase
taken at a load average above 0.5 a core is marked ``quiet_ok: false``.

Run: ``python benchmarks/busy_bench.py [--load N] [--repeats 31] [--json out.json]``
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import pathlib
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import numba  # noqa: E402

import rotate  # noqa: E402
from _harness import provenance  # noqa: E402


def _spin(stop) -> None:
    x = 0
    while not stop.is_set():
        for _ in range(100_000):
            x += 1


def _call_ms(a: np.ndarray, shift: int, threads: int) -> float:
    numba.set_num_threads(threads)
    t0 = time.perf_counter()
    rotate.roll(a, shift)
    return (time.perf_counter() - t0) * 1e3


def _phase(cases, repeats: int, threads: int) -> list:
    """Per case: calls with numba's threads and with one thread alternating (the same moment of the
    machine's load for both), medians of each and of the per-pair ratios."""
    rows = []
    for a, shift in cases:
        for t in (threads, 1):  # warm: compiled, plans cached for both thread counts
            _call_ms(a, shift, t)
        pairs = [(_call_ms(a, shift, threads), _call_ms(a, shift, 1)) for _ in range(repeats)]
        numba.set_num_threads(threads)
        row = {"mib": a.nbytes >> 20, "shift": shift,
               "default_ms": round(float(np.median([d for d, _ in pairs])), 3),
               "one_thread_ms": round(float(np.median([o for _, o in pairs])), 3),
               "default_over_one": round(float(np.median([d / o for d, o in pairs])), 3)}
        rows.append(row)
        print(f"  {row['mib']:4d} MiB shift {shift:>10d}: default {row['default_ms']:8.2f} ms, one thread "
              f"{row['one_thread_ms']:8.2f} ms, ratio {row['default_over_one']:.2f}", flush=True)
    return rows


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--load", type=int, default=os.cpu_count() or 1, help="background busy processes")
    parser.add_argument("--repeats", type=int, default=31)
    parser.add_argument("--mib", type=int, nargs="+", default=[16, 256])
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args(argv)
    threads = numba.get_num_threads()
    cases = []
    for mib in args.mib:
        a = np.random.default_rng(mib).random((mib << 20) // 4, dtype=np.float32)
        n = a.size
        for shift in (3, n // 3, n // 2 + 5):
            want = np.roll(a, shift)
            rotate.roll(a, shift)
            assert a.tobytes() == want.tobytes(), (mib, shift)
            cases.append((a, shift))
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    start_load = os.getloadavg()
    print(f"quiet (load average {start_load[0]:.2f}, {threads} threads)", flush=True)
    quiet = _phase(cases, args.repeats, threads)
    stop = mp.Event()
    procs = [mp.Process(target=_spin, args=(stop,), daemon=True) for _ in range(args.load)]
    for p in procs:
        p.start()
    time.sleep(2)
    print(f"with {args.load} busy background processes", flush=True)
    try:
        busy = _phase(cases, args.repeats, threads)
    finally:
        stop.set()
        for p in procs:
            p.join(5)
    worst = max(r["default_over_one"] for r in busy)
    result = {"benchmark": "busy_bench", "environment": provenance.environment(), "threads": threads,
              "cores": cores, "background_processes": args.load, "load_average_start": start_load,
              "load_average_end": os.getloadavg(), "quiet_ok": start_load[0] <= 0.5 * cores,
              "quiet": quiet, "busy": busy, "worst_busy_default_over_one": worst, "gate": 1.5,
              "gate_met": worst <= 1.5}
    print(f"worst default / one-thread under load: {worst:.2f} (gate 1.5: "
          f"{'met' if worst <= 1.5 else 'MISSED'})")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
