"""Benchmark the CPU backend's row kernel against memcpy, numpy.roll and std::rotate.

For 256 MiB of uint8 and of float64 and numpy.roll shifts
{1, 3, 4097, n//3, n//2 + 3, n - 1} (n in elements), plus ``--random-shifts`` uniform ones
(``--seed``, recorded in the JSON's arguments), it times, as medians of
``--repeats`` runs, printed as markdown tables:

* ``rotate``     -- the row kernel ``rotate.roll`` runs, on the array's words
                    (``_harness/cpu_kernel.py``: planned once, timed without the call's dispatch)
                    (float64 travels as uint64, as the API layer sends it);
* ``copyto``     -- ``np.copyto`` of the same bytes into another array, the
                    single-threaded memcpy "speed of light";
* ``np.roll``    -- ``np.copyto(a, np.roll(a, shift))``, numpy's roll made in place;
* ``std::rotate``-- benchmarks/_harness/std_rotate.cpp built with ``g++ -O3`` (measured
                    once per run of this script; ``--no-cxx`` skips it).

GB/s counts read + write bytes (2 x the array).  Also times two many-rows
cases.  Before every timed run ``--flush-mib`` (default 1024) MiB are written
to evict the array from the last-level cache, for all contenders alike.

Run: ``.venv/bin/python benchmarks/cpu_bench.py [--threads N] [--mib 256] [--flush-mib 1024]
[--json out.json] [--plot out.png]`` (docs/results/cpu-bench.json is this script's ``--json`` output;
``tools/tables.py`` builds the docs' CPU tables from it). ``--plot`` draws the times as ratios of
np.copyto's, a panel per dtype; ``--from RUN.json --plot out.png`` draws an earlier run's file without
measuring anything. A line on stderr gives the case, i of N, and the time left. A machine whose
1-minute load average is over 0.5 per core at the start is refused (exit status 3; ``--allow-busy``
runs anyway and marks the result unusable for the docs, ``--max-load`` changes the threshold), and the
load at the end is checked too (``rotate/bench_env.py``).

This script is the docs' (it times the private row kernel and needs a checkout for std_rotate.cpp).
Users of the installed package run ``python -m rotate.bench``, which benchmarks the CPU backend
through the public API on a machine without a GPU (``--cpu`` on one with).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import numba  # noqa: E402

from rotate import bench_env  # noqa: E402
from rotate.bench import Progress  # noqa: E402
from _harness import cpu_kernel, plots, provenance  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent


# Written before every timed run so that each starts with the array out of
# cache.  This machine's last-level cache (300 MiB, shared with other guests)
# can hold most of a 256 MiB array, which made back-to-back in-place runs
# bimodal (10 ms or 30 ms) depending on what the neighbours were doing.
_flush_buffer = None


def flush_caches() -> None:
    if _flush_buffer is not None:
        np.add(_flush_buffer, 1, out=_flush_buffer)


def median_seconds(fn, repeats: int) -> float:
    fn()  # warm-up: JIT, page faults
    times = []
    for _ in range(repeats):
        flush_caches()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def build_std_rotate() -> pathlib.Path:
    """Compile std_rotate.cpp (g++ -O3) into a temporary directory; return the binary."""
    out = pathlib.Path(tempfile.mkdtemp(prefix="std_rotate_")) / "std_rotate"
    subprocess.run(["g++", "-O3", "-o", str(out), str(HERE / "_harness" / "std_rotate.cpp")], check=True)
    return out


def std_rotate_seconds(binary: pathlib.Path, kind: str, n: int, shifts, repeats: int) -> dict[int, float]:
    flush_mib = 0 if _flush_buffer is None else _flush_buffer.nbytes >> 20
    proc = subprocess.run([str(binary), kind, str(n), str(repeats), str(flush_mib), *map(str, shifts)],
                          check=True, capture_output=True, text=True)
    result = {}
    for line in proc.stdout.splitlines():
        shift, seconds, _ = line.split()
        result[int(shift)] = float(seconds)
    return result


def shifts_for(n: int, random_shifts: int = 0, seed: int = 0) -> list:
    """The fixed shifts, then ``random_shifts`` drawn uniformly from [1, n) with ``seed``."""
    drawn = np.random.default_rng(seed).integers(1, n, random_shifts).tolist() if random_shifts else []
    return [1, 3, 4097, n // 3, n // 2 + 3, n - 1] + [int(s) for s in drawn]


def bench_dtype(dtype, nbytes: int, repeats: int, cxx_binary, check: bool, progress, random_shifts=0, seed=0):
    n = nbytes // np.dtype(dtype).itemsize
    shifts = shifts_for(n, random_shifts, seed)
    rng = np.random.default_rng(1)
    a = rng.integers(1, 250, n, dtype=np.uint8).astype(dtype)  # never zero
    other = np.empty_like(a)
    words = a.view(np.dtype("u%d" % a.itemsize))
    copy_s = median_seconds(lambda: np.copyto(other, a), repeats)
    cxx = {}
    if cxx_binary is not None:
        cxx = std_rotate_seconds(cxx_binary, "u8" if a.itemsize == 1 else "f64", n, shifts, repeats)
    rows = []
    for shift in shifts:
        progress.step(f"{np.dtype(dtype).name} shift {shift}")
        k = n - shift  # roll right by shift == rotate left by n - shift
        if check:
            expected = np.roll(a, shift)
            cpu_kernel.rotate_rows_inplace(words, 1, n, k)
            assert np.array_equal(a, expected), f"wrong result at shift {shift}"
            del expected
        ours = median_seconds(cpu_kernel.planned(words, 1, n, k), repeats)
        roll = median_seconds(lambda: np.copyto(a, np.roll(a, shift)), max(3, repeats // 2))
        algorithm, scratch, moved = cpu_kernel.plan_rows(1, n, k, words.itemsize)
        rows.append(dict(shift=shift, algorithm=algorithm, scratch=scratch, traffic=moved / (2 * nbytes),
                         ours=ours, copy=copy_s, roll=roll, cxx=cxx.get(shift)))
    return n, rows


MANY_ROWS = [((10**6, 8), np.float64, 3), ((4096, 65536), np.uint8, 1000), ((64, 1 << 19), np.float64, 1 << 17)]


def bench_many_rows(repeats: int, progress):
    out = []
    for shape, dtype, shift in MANY_ROWS:
        progress.step(f"many rows {shape} {np.dtype(dtype).name}")
        rng = np.random.default_rng(2)
        a = rng.integers(1, 250, shape, dtype=np.uint8).astype(dtype)
        other = np.empty_like(a)
        rows, seg = shape
        words = a.reshape(-1).view(np.dtype("u%d" % a.itemsize))
        k = seg - shift
        expected = np.roll(a, shift, axis=1)
        cpu_kernel.rotate_rows_inplace(words, rows, seg, k)
        assert np.array_equal(a, expected)
        ours = median_seconds(lambda: cpu_kernel.rotate_rows_inplace(words, rows, seg, k), repeats)
        copy_s = median_seconds(lambda: np.copyto(other, a), repeats)
        roll = median_seconds(lambda: np.copyto(a, np.roll(a, shift, axis=1)), max(3, repeats // 2))
        algorithm, _, _ = cpu_kernel.plan_rows(rows, seg, k, words.itemsize)
        out.append(dict(case=f"{shape} {np.dtype(dtype).name}, axis 1, shift {shift}", algorithm=algorithm,
                        ours=ours, copy=copy_s, roll=roll, nbytes=a.nbytes))
    return out


def gbps(nbytes: int, seconds: float) -> float:
    return 2 * nbytes / seconds / 1e9


#: The fixed shifts' labels, in shifts_for's order; the shifts after them are random.
SHIFT_LABELS = ["1", "3", "4097", "n/3", "n/2+3", "n-1"]


def plot(raw: dict, path, source="this run") -> dict:
    """Time as a ratio of np.copyto's (lower is better), rotate beside np.roll and std::rotate: a panel per
    dtype (its random shifts in a second one) and one of the many-rows cases; np.copyto's line at 1."""
    panels = []
    for dtype, block in raw["dtypes"].items():
        rows = block["rows"]
        labels = [SHIFT_LABELS[i] if i < len(SHIFT_LABELS) else f"random {i - len(SHIFT_LABELS) + 1}"
                  for i in range(len(rows))]
        series = {"rotate (in place)": [r["ours"] / r["copy"] for r in rows],
                  "np.roll + copy back": [r["roll"] / r["copy"] for r in rows]}
        if any(r.get("cxx") for r in rows):
            series["std::rotate (g++ -O3)"] = [r["cxx"] / r["copy"] if r.get("cxx") else None for r in rows]
        fixed = min(len(rows), len(SHIFT_LABELS))
        for title, part in ((f"{dtype}, n = {block['n']}", slice(0, fixed)),
                            (f"{dtype}, random shifts", slice(fixed, None))):
            panels.append(plots.Panel(title, labels[part], {k: v[part] for k, v in series.items()},
                                      "time / np.copyto's time (lower is better)", xlabel="shift (elements)"))
    many = raw.get("many_rows") or []
    panels.append(plots.Panel(
        "many rows (axis 1)", [r["case"].replace(", axis 1, ", "\n") for r in many],
        {"rotate (in place)": [r["ours"] / r["copy"] for r in many],
         "np.roll + copy back": [r["roll"] / r["copy"] for r in many]}, "time / np.copyto's time (lower is better)",
        xlabel="shape, dtype, shift"))
    arguments = raw.get("arguments", {})
    threads, flush = arguments.get("threads"), arguments.get("flush_mib")
    return plots.bars(panels, path, log=True, references=[(1.0, "np.copyto (memcpy), one thread")],
                      title=f"benchmarks/cpu_bench.py: {plots.size_label(raw['nbytes'])} arrays, "
                            f"{f'{threads} numba threads' if threads else 'all numba threads'}; time against "
                            f"np.copyto's (median of {arguments.get('repeats')}, "
                            f"{f'{flush} MiB written before each run' if flush else 'no cache flush'})",
                      sources=[plots.source(source, raw)])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=256, help="array size in MiB (default 256)")
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--threads", type=int, default=None, help="numba threads (default: all)")
    parser.add_argument("--no-cxx", action="store_true", help="skip the std::rotate reference")
    parser.add_argument("--no-check", action="store_true", help="skip the correctness check")
    parser.add_argument("--flush-mib", type=int, default=1024,
                        help="MiB written between timed runs to evict the array from cache (0: off)")
    parser.add_argument("--json", help="write the raw results (and commit, versions, knobs) here")
    parser.add_argument("--no-progress", action="store_true", help="no progress line on stderr")
    parser.add_argument("--random-shifts", type=int, default=0, help="also this many uniform random shifts")
    parser.add_argument("--seed", type=int, default=None, help="their seed (default: a fresh one, recorded)")
    plots.add_arguments(parser)
    bench_env.add_arguments(parser)
    args = parser.parse_args(argv)
    replotted = plots.replot(args, parser, plot, "cpu_bench")
    if replotted is not None:
        return replotted
    load = bench_env.LoadGate.from_args(args, "benchmarks/cpu_bench.py")
    global _flush_buffer
    if args.flush_mib:
        _flush_buffer = np.zeros(args.flush_mib << 20, dtype=np.uint8)
    if args.threads:
        numba.set_num_threads(args.threads)
    nbytes = args.mib << 20
    if args.seed is None:
        args.seed = int(np.random.SeedSequence().entropy % (1 << 32))
    cxx_binary = None if args.no_cxx else build_std_rotate()

    print(f"numba {numba.__version__}, numpy {np.__version__}, threading layer "
          f"{numba.config.THREADING_LAYER}, numba threads {numba.get_num_threads()}, "
          f"{os.cpu_count()} cpus, {args.mib} MiB, median of {args.repeats}")
    gate_ok = True
    # A many-rows case moves 64 MiB; the 1-D cases the whole array.
    progress = Progress([nbytes] * 2 * len(shifts_for(1 << 20, args.random_shifts)) + [64 << 20] * len(MANY_ROWS),
                        enabled=not args.no_progress)
    log = progress.log(print)
    raw = {"benchmark": "cpu_bench", "environment": provenance.environment(), "arguments": vars(args),
           "nbytes": nbytes, "dtypes": {}, "many_rows": []}
    for dtype in (np.uint8, np.float64):
        n, rows = bench_dtype(dtype, nbytes, args.repeats, cxx_binary, not args.no_check, progress,
                              args.random_shifts, args.seed)
        raw["dtypes"][np.dtype(dtype).name] = {"n": n, "rows": rows}
        log(f"\n## {np.dtype(dtype).name}, n = {n}\n")
        log("| shift | algorithm | traffic / 2N | ms | GB/s | vs copyto | vs np.roll | vs std::rotate | gate |")
        log("|---|---|---|---|---|---|---|---|---|")
        for r in rows:
            d = min(r["shift"], n - r["shift"])
            limit = 1.3 if d < n / 100 else 2.0
            vs_copy = r["ours"] / r["copy"]
            vs_roll = r["ours"] / r["roll"]
            vs_cxx = r["ours"] / r["cxx"] if r["cxx"] else None
            ok = vs_copy <= limit and vs_roll <= 1.1 and (vs_cxx is None or vs_cxx <= 1.1)
            gate_ok &= ok
            log(f"| {r['shift']} | {r['algorithm']} | {r['traffic']:.2f} | {r['ours'] * 1e3:.1f} | "
                f"{gbps(nbytes, r['ours']):.1f} | {vs_copy:.2f} (<= {limit}) | {vs_roll:.2f} | "
                + (f"{vs_cxx:.2f}" if vs_cxx else "-") + f" | {'ok' if ok else 'MISS'} |")
        r0 = rows[0]
        log(f"\nreferences: np.copyto {r0['copy'] * 1e3:.1f} ms ({gbps(nbytes, r0['copy']):.1f} GB/s); "
            + "np.roll+copy back " + ", ".join(f"{r['roll'] * 1e3:.0f}" for r in rows) + " ms; "
            + "std::rotate " + ", ".join(f"{r['cxx'] * 1e3:.0f}" if r["cxx"] else "-" for r in rows) + " ms")
    log("\n## many rows (rotate_rows_inplace, rows spread over threads)\n")
    log("| case | algorithm | ms | GB/s | vs copyto | vs np.roll |")
    log("|---|---|---|---|---|---|")
    raw["many_rows"] = bench_many_rows(args.repeats, progress)
    progress.finish()
    for r in raw["many_rows"]:
        log(f"| {r['case']} | {r['algorithm']} | {r['ours'] * 1e3:.2f} | {gbps(r['nbytes'], r['ours']):.1f} | "
            f"{r['ours'] / r['copy']:.2f} | {r['ours'] / r['roll']:.2f} |")
    log(f"\nthreading layer used: {numba.threading_layer()}; gate {'met' if gate_ok else 'MISSED'}")
    raw["gate_met"] = bool(gate_ok)
    raw["threading_layer"] = numba.threading_layer()
    load.finish(raw)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(raw, indent=1) + "\n")
    plots.write(args, plot, raw)
    return load.status()


if __name__ == "__main__":
    sys.exit(main())
