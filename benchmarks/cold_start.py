"""Where a cold first call's time goes (issue #32): the numba functions each first call compiles, and how long.

Each scenario runs in a fresh process with an empty numba cache (``NUMBA_CACHE_DIR`` a new temporary
folder), listening to numba's compile events (``numba.core.event``, "numba:compile": fired on a cache
miss only), then again in a fresh process on the cache the first one filled (the warm first call:
numba's own start-up and loading the kernels from disk). Compile times are the events' durations, which
vary less than wall times on a shared machine; nested compiles (a kernel's callees) are inside their
caller's time.

    .venv/bin/python benchmarks/cold_start.py                      # every scenario, top-level compiles
    .venv/bin/python benchmarks/cold_start.py --only small,rows --nested --json out.json
    .venv/bin/python benchmarks/cold_start.py --warmup float32     # rotate.warmup's compiles instead
    .venv/bin/python benchmarks/cold_start.py --only small --plot out.png   # and a plot against the 2 s bound
    .venv/bin/python benchmarks/cold_start.py --from docs/results/cold-start-cpu.json --plot out.png

A busy machine is refused (``rotate/bench_env.py``: exit status 3 when the 1-minute load average is over
0.5 per core; ``--allow-busy`` runs and marks the result unusable for the docs). A line on stderr gives the
scenario, i of N, and the time left (``--no-progress``: none).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from rotate import bench_env  # noqa: E402  (a busy machine is refused: compile times are CPU timings)
from rotate.bench import Progress  # noqa: E402  (the progress line every benchmark shows)
from _harness.provenance import environment  # noqa: E402  (the commit, versions and load, as every result records)
from _harness import plots  # noqa: E402  (--plot, --from: the drawing every benchmark shares)

SCENARIOS = {
    "small": "rotate.roll(np.arange(10), 3)",
    "f32-1M": "rotate.roll(np.arange(1 << 20, dtype=np.float32), 12345)",
    "rows": "rotate.roll_rows(np.arange(8).reshape(2, 4), [1, -1])",
    "rows-1000x1000-f32": "rotate.roll_rows(np.zeros((1000, 1000), np.float32), np.arange(1000))",
    "rows-bytes": "rotate.roll_rows(np.zeros((1000, 3), np.uint8), np.arange(1000))",
    "fftshift-3x4": "rotate.fftshift(np.arange(12).reshape(3, 4))",
    "fftshift-1024x1024-c64": "rotate.fftshift(np.zeros((1024, 1024), np.complex64))",
    "strided": "rotate.roll(np.arange(100)[::2], 3)",
    "chain-1thread": "numba.set_num_threads(1); rotate.roll(np.zeros(1 << 25, np.uint8), (1 << 25) // 3)",
    "demo-16M": "from rotate import demo; demo.run_cpu(1 << 24, np.dtype(np.uint8), 4097, 1)",
}

CHILD = r"""
import json, sys, time
start = time.perf_counter()
import numba, numpy as np
from numba.core import event
records, stack = [], []


class Listener(event.Listener):
    def on_start(self, ev):
        py = ev.data["dispatcher"].py_func
        stack.append((time.perf_counter(), f"{py.__module__}.{py.__qualname__}", str(ev.data["args"])))

    def on_end(self, ev):
        began, name, args = stack.pop()
        records.append({"name": name, "args": args, "seconds": time.perf_counter() - began, "depth": len(stack),
                        "start": began - start})


event.register("numba:compile", Listener())
imported = time.perf_counter()
import rotate
rotate_imported = time.perf_counter()
code = sys.argv[1]
began = time.perf_counter()
exec(code)
print(json.dumps({"import_numba": imported - start, "import_rotate": rotate_imported - imported,
                  "first_call": time.perf_counter() - began, "compiles": records}))
"""


def run(code: str, cache: str) -> dict:
    env = dict(os.environ, NUMBA_CACHE_DIR=cache,
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    result = subprocess.run([sys.executable, "-c", CHILD, code], env=env, capture_output=True, text=True,
                            timeout=3600, cwd=ROOT)
    if result.returncode:
        raise SystemExit(f"{code}: exit {result.returncode}\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


#: Issue #32's bound on a cold first call.
BOUND_SECONDS = 2.0


def plot(record: dict, path, source="this run") -> dict:
    """Seconds of each scenario's first call, cold (empty cache) beside cached, and issue #32's 2 s line."""
    names = list(record["scenarios"])
    series = {"first call, empty numba cache (compiles)": [record["scenarios"][n]["cold"]["first_call"]
                                                          for n in names],
              "first call, cache filled (loads from disk)": [record["scenarios"][n]["warm"]["first_call"]
                                                             for n in names]}
    panels = plots.split("first calls", names, series, "seconds (wall clock, fresh process)", most=6,
                         xlabel="scenario (benchmarks/cold_start.py)")
    return plots.bars(panels, path, references=[(BOUND_SECONDS, f"issue #32 bound ({BOUND_SECONDS:g} s)")],
                      title="benchmarks/cold_start.py: the first call's time in a fresh process (import "
                            "not included)", sources=[plots.source(source, record)])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="comma-separated scenario names (default: all): " + ", ".join(SCENARIOS))
    parser.add_argument("--warmup", help="instead: rotate.warmup(dtypes=THESE) cold, e.g. float32,float64")
    parser.add_argument("--nested", action="store_true", help="also list the compiles inside a compile")
    parser.add_argument("--json", help="write every record here")
    parser.add_argument("--no-progress", action="store_true", help="no progress line on stderr")
    plots.add_arguments(parser)
    bench_env.add_arguments(parser)
    args = parser.parse_args(argv)
    replotted = plots.replot(args, parser, plot, "cold_start")
    if replotted is not None:
        return replotted
    load = bench_env.LoadGate.from_args(args, "benchmarks/cold_start.py")
    if args.warmup:
        chosen = {f"warmup-{args.warmup}": f"rotate.warmup(dtypes={args.warmup.split(',')!r}, gpu=False)"}
    else:
        names = args.only.split(",") if args.only else list(SCENARIOS)
        unknown = sorted(set(names) - set(SCENARIOS))
        if unknown:
            parser.error(f"unknown scenarios {unknown}; known: {', '.join(SCENARIOS)}")
        chosen = {name: SCENARIOS[name] for name in names}
    out = {}
    start_env = environment()
    # A case is a scenario's two fresh processes (cold, then warm); the scenarios cost about the same (numba
    # compiling, starting up), so each weighs 1.
    progress = Progress([1] * len(chosen), enabled=not args.no_progress)
    log = progress.log(print)
    for name, code in chosen.items():
        progress.step(f"{name}, cold and warm")
        with tempfile.TemporaryDirectory(prefix="numba-cache-") as cache:
            cold, warm = run(code, cache), run(code, cache)
        out[name] = {"code": code, "cold": cold, "warm": warm}
        top = [r for r in cold["compiles"] if r["depth"] == 0]
        log(f"{name}: first call {cold['first_call']:.2f} s cold ({sum(r['seconds'] for r in top):.2f} s "
            f"compiling, {len(top)} top-level compiles of {len(cold['compiles'])}), {warm['first_call']:.2f} s "
            f"with the cache filled ({len(warm['compiles'])} compiles); import rotate {cold['import_rotate']:.2f} s",
            flush=True)
        for r in sorted(cold["compiles"], key=lambda r: r["start"]):  # callers before their callees
            if r["depth"] == 0 or args.nested:
                log(f"  {'  ' * r['depth']}{r['seconds']:6.2f} s  {r['name']}  {r['args'][:100]}", flush=True)
    progress.finish()
    end_load = list(os.getloadavg()) if hasattr(os, "getloadavg") else None
    record = load.finish({"benchmark": "cold_start", "environment": start_env, "load_average_end": end_load,
                          "argv": sys.argv[1:], "scenarios": out})
    if args.json:
        Path(args.json).write_text(json.dumps(record, indent=1))
    plots.write(args, plot, record)
    return load.status()


if __name__ == "__main__":
    sys.exit(main())
