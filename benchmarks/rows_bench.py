"""Benchmark rotate.roll_rows, rotate.fftshift and one-pass multi-axis rolls on the CPU.

256 MiB arrays (``--mib``), medians of ``--repeats`` runs, each run preceded by
writing ``--flush-mib`` MiB so the array starts out of cache (as in
benchmarks/cpu_bench.py). Every case is timed against ``np.copyto`` of the
same bytes, measured in the same run next to it (the issue's gate:
``roll_rows`` and ``fftshift`` within 2.0x of copyto), and against the
out-of-place way people do it today:

* ``roll_rows``: ``np.take_along_axis(a, idx, axis=1)`` with a prebuilt int64
  index array (the gather; index build not timed) -- 8 index bytes per element
  and a second array;
* ``fftshift``: ``np.fft.fftshift(a)`` (a second array);
* multi-axis ``roll``: two one-axis ``rotate.roll`` passes (what ran before
  the one-pass plan).

Every result is checked against numpy once. ``--json`` writes the raw
results (default ``docs/results/cpu-rows-bench.json``); only when they go to
that default file is the generated section of docs/perf-cpu.md rewritten
from them (a run written elsewhere never touches the tracked docs);
``--docs-only`` only regenerates that section from the committed JSON
(tests/api/test_rows.py checks the committed doc equals what this script
generates). A result taken on a busy machine is not quoted there
(``rotate/bench_env.py``): a run refuses to start when the 1-minute load
average is over 0.5 per core (exit status 3; ``--allow-busy`` runs and marks
the result unusable, ``--max-load`` changes the threshold), and the load at
the end is checked too.

A line on stderr gives the case, i of N, and the time left (``--no-progress``: none).

``--plot out.png`` draws the run (or, with ``--docs-only``, the ``--json`` file) as ratios of np.copyto's
time; ``--from RUN.json --plot out.png`` draws an earlier run's file and neither measures nor touches
the docs.

Run: ``python benchmarks/rows_bench.py [--mib 256] [--repeats 7] [--threads N] [--plot out.png]``
(``--mib 1 --repeats 1 --flush-mib 0 --json out.json`` for a short run that leaves the docs alone; ``--only 0,19,20``
times some of the cases, by their index in ``cases()``, and needs ``--json`` elsewhere than the docs' file).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import re
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(1, str(ROOT / "benchmarks"))  # _harness, also where this file is loaded by path (tests/api/test_rows.py)

from _harness import plots  # noqa: E402  (--plot, --from: the drawing every benchmark shares)

DEFAULT_JSON = ROOT / "docs" / "results" / "cpu-rows-bench.json"
DOC = ROOT / "docs" / "perf-cpu.md"
MARKER = "cpu-rows"
GATE = 2.0

_flush_buffer = None


def flush_caches() -> None:
    if _flush_buffer is not None:
        np.add(_flush_buffer, 1, out=_flush_buffer)


def median_ms(fn, repeats: int, setup=None) -> float:
    if setup:
        setup()
    fn()  # warm-up: JIT, page faults
    times = []
    for _ in range(repeats):
        if setup:
            setup()
        flush_caches()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times)) * 1e3


def cases(nbytes: int):
    """(function, shape, dtype, description). Shapes hold ``nbytes`` (or a little less for odd sides), except
    that a ``roll_rows`` case has at least one row: below 4 MiB its 4 MiB rows make one row of 4 MiB."""
    f32, c64 = np.dtype(np.float32), np.dtype(np.complex64)
    out = []
    # Short rows: every item size of the gate's question (1, 2, 4, 8, 16 bytes), rows of 4 B to 256 B,
    # and an odd row length (3 float32: 12 B rows); then rows whose bytes are not a multiple of 4
    # (per-lane-byte-window): odd and 2 mod 4, short (3-7 B), two words (9-15 B), through scratch (33 B).
    for n, dtype in ((4, np.uint8), (4, np.uint16), (4, np.uint32), (3, np.float32), (8, np.float32),
                     (2, np.complex128), (8, np.float64), (8, np.complex128), (64, np.float32),
                     (3, np.uint8), (7, np.uint8), (3, np.uint16), (9, np.uint8), (5, np.uint16), (7, np.uint16),
                     (3, "V5"), (33, np.uint8)):
        dtype = np.dtype(dtype)
        row_bytes = n * dtype.itemsize
        what = f" ({n} x {dtype.itemsize}-byte structs)" if dtype.kind == "V" else ""
        out.append(("roll_rows", (max(1, nbytes // row_bytes), n), dtype, f"rows of {row_bytes} B{what}"))
    for row_bytes in (4096, 32768, 4 << 20):
        out.append(("roll_rows", (max(1, nbytes // row_bytes), row_bytes // 4), f32, f"rows of {row_bytes} B"))
    side = int((nbytes // 8 // 2) ** 0.5)
    out.append(("fftshift", (2 * side, side), c64, "2-D, even sides"))
    out.append(("fftshift", (2 * side - 1, side + 1), c64, "2-D, odd sides"))
    cube = round((nbytes // 8 // 4) ** (1 / 3))
    out.append(("fftshift", (4 * cube, cube, cube), c64, "3-D"))
    out.append(("roll", (2 * side, side), c64, "2 axes, shifts (1001, 77)"))
    return out


#: A case's fixed cost in the progress estimate, as bytes of array (calls, the check, numba's dispatch).
CASE_OVERHEAD_BYTES = 1 << 20


def weights(case_list, flush_mib: int) -> list:
    """The progress line's expected cost of each case: its array's bytes, the ``--flush-mib`` buffer written
    before each of its timed runs, and a fixed part."""
    return [int(np.prod(shape)) * np.dtype(dtype).itemsize + (flush_mib << 20) + CASE_OVERHEAD_BYTES
            for _, shape, dtype, _ in case_list]


def same(a, b) -> bool:
    """Byte-equal (the data are random bytes: NaNs included)."""
    return a.shape == b.shape and np.array_equal(a.view(np.uint8), b.view(np.uint8))


def run_case(function, shape, dtype, repeats):
    import rotate

    rng = np.random.default_rng(0)
    a = np.empty(shape, dtype)
    a.view(np.uint8).reshape(-1)[:] = rng.integers(1, 255, a.nbytes, dtype=np.uint8)
    copy_src = np.empty_like(a)
    copy_src[...] = a
    copy_dst = np.empty_like(a)
    row = {"function": function, "shape": list(shape), "dtype": dtype.name, "nbytes": a.nbytes}
    if function == "roll_rows":
        shifts = rng.integers(-shape[1], shape[1], shape[0])
        expected = np.take_along_axis(a, (np.arange(shape[1]) - shifts[:, None]) % shape[1], axis=1)
        rotate.roll_rows(a, shifts)
        assert same(a, expected), "roll_rows differs from the gather"
        plan = rotate.plan_roll_rows(a, shifts)
        ours = lambda: rotate.roll_rows(a, shifts)  # noqa: E731
        idx = (np.arange(shape[1]) - shifts[:, None]) % shape[1]
        peer_name = "np.take_along_axis"
        peer = lambda: np.take_along_axis(a, idx, axis=1)  # noqa: E731
    elif function == "fftshift":
        expected = np.fft.fftshift(a)
        rotate.fftshift(a)
        assert same(a, expected), "fftshift differs from numpy.fft.fftshift"
        plan = rotate.plan(a, [n // 2 for n in shape], tuple(range(a.ndim)))
        ours = lambda: rotate.fftshift(a)  # noqa: E731
        peer_name = "np.fft.fftshift"
        peer = lambda: np.fft.fftshift(a)  # noqa: E731
    else:
        shifts, axes = (1001, 77), (0, 1)
        expected = np.roll(a, shifts, axes)
        rotate.roll(a, shifts, axes)
        assert same(a, expected), "multi-axis roll differs from numpy.roll"
        plan = rotate.plan(a, shifts, axes)
        ours = lambda: rotate.roll(a, shifts, axes)  # noqa: E731
        peer_name = "two one-axis rotate.roll passes"
        peer = lambda: (rotate.roll(a, shifts[0], 0), rotate.roll(a, shifts[1], 1))  # noqa: E731
    row["algorithm"] = plan.algorithm
    row["steps"] = len(plan.steps)
    row["scratch_bytes"] = plan.scratch_bytes
    row["traffic_over_2n"] = plan.bytes_moved / plan.ideal_bytes
    row["copyto_ms"] = median_ms(lambda: np.copyto(copy_dst, copy_src), repeats)
    row["ms"] = median_ms(ours, repeats)
    row["peer"] = peer_name
    row["peer_ms"] = median_ms(peer, repeats)
    row["vs_copyto"] = row["ms"] / row["copyto_ms"]
    row["gate_met"] = function == "roll" or row["vs_copyto"] <= GATE
    return row


def table(data) -> str:
    from rotate import bench_env

    problem = bench_env.load_problem(data)
    if problem is not None:
        return (f"`docs/results/cpu-rows-bench.json` is not quoted: {problem}. Re-measure on a quiet machine: "
                f"`python benchmarks/rows_bench.py`.")
    env = data.get("environment", {})
    lines = [f"Source: `docs/results/cpu-rows-bench.json` (commit `{str(env.get('git_commit', '?'))[:12]}`, "
             f"numba threads {data['threads']}, {data['mib']} MiB, median of {data['repeats']}, "
             f"{data['flush_mib']} MiB written before every timed run). Gate: within {GATE}x of `np.copyto` "
             f"for `roll_rows` and `fftshift`; copyto measured next to each case.", "",
             "| function | shape | dtype | case | algorithm | steps | traffic / 2N | ms | vs copyto | gate "
             "| peer | peer ms | ours vs peer |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in data["rows"]:
        gate = "n/a" if r["function"] == "roll" else ("ok" if r["gate_met"] else "MISS")
        lines.append(f"| {r['function']} | {tuple(r['shape'])} | {r['dtype']} | {r['case']} | {r['algorithm']} | "
                     f"{r['steps']} | {r['traffic_over_2n']:.2f} | {r['ms']:.1f} | {r['vs_copyto']:.2f} | {gate} | "
                     f"{r['peer']} | {r['peer_ms']:.1f} | {r['ms'] / r['peer_ms']:.2f} |")
    gated = [r for r in data["rows"] if r["function"] != "roll"]
    missed = [f"{r['function']} {r['case']} ({r['vs_copyto']:.2f}x)" for r in gated if not r["gate_met"]]
    lines += ["", f"Gate met at {len(gated) - len(missed)} of {len(gated)} `roll_rows`/`fftshift` points"
              + (f"; missed: {', '.join(missed)}." if missed else ".")]
    return "\n".join(lines)


def render_docs(text: str, data) -> str:
    pattern = re.compile(rf"(<!-- table:{MARKER} -->\n).*?(\n<!-- /table -->)", re.S)
    if not pattern.search(text):
        raise KeyError(f"marker <!-- table:{MARKER} --> ... <!-- /table --> not found in docs/perf-cpu.md")
    return pattern.sub(lambda m: m.group(1) + table(data) + m.group(2), text, count=1)


def plot(data: dict, path, source="this run") -> dict:
    """Time as a ratio of np.copyto's (lower is better), rotate beside its out-of-place peer, a panel per
    function (roll_rows' many cases over several); np.copyto's line at 1 and the gate's at 2."""
    panels = []
    for function in dict.fromkeys(r["function"] for r in data["rows"]):
        rows = [r for r in data["rows"] if r["function"] == function]
        labels = [r["case"].replace("rows of ", "").replace("-byte", " B").replace(" (", "\n(") + "\n" + r["dtype"]
                  for r in rows]
        series = {"rotate (in place)": [r["ms"] / r["copyto_ms"] for r in rows]}
        for peer in dict.fromkeys(r["peer"] for r in rows):
            series[peer] = [r["peer_ms"] / r["copyto_ms"] if r["peer"] == peer else None for r in rows]
        for panel in plots.split(function, labels, series, "time / np.copyto's time (lower is better)", most=7,
                                 xlabel="row length, dtype" if function == "roll_rows" else "case, dtype"):
            if function != "roll":  # the gate is roll_rows' and fftshift's
                panel.references.append((GATE, f"the gate: {GATE:g}x np.copyto's time"))
            panels.append(panel)
    return plots.bars(panels, path, log=True, references=[(1.0, "np.copyto (memcpy), same bytes")],
                      title=f"benchmarks/rows_bench.py: {data.get('mib')} MiB arrays, {data.get('threads')} numba "
                            f"threads; time against np.copyto's (median of {data.get('repeats')}, cache flushed)",
                      sources=[plots.source(source, data)])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=256, help="array size in MiB (default 256; at least 1)")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--flush-mib", type=int, default=1024)
    parser.add_argument("--json", default=str(DEFAULT_JSON))
    parser.add_argument("--only", default="", help="comma-separated case indices (default: every case); "
                                                   "needs --json elsewhere than the docs' file")
    parser.add_argument("--no-progress", action="store_true", help="no progress line on stderr")
    parser.add_argument("--docs-only", action="store_true", help="regenerate docs/perf-cpu.md from --json only "
                                                                   "(and --plot it)")
    plots.add_arguments(parser)
    from rotate import bench_env

    bench_env.add_arguments(parser)
    args = parser.parse_args(argv)
    replotted = plots.replot(args, parser, plot, "rows_bench")  # --from: neither measures nor touches the docs
    if replotted is not None:
        return replotted
    if args.mib < 1:
        parser.error("--mib: at least 1")
    every = cases(args.mib << 20)
    try:
        chosen = [every[int(i)] for i in args.only.split(",") if i] or every
    except (ValueError, IndexError):
        parser.error(f"--only: comma-separated case indices from 0 to {len(every) - 1}")
    if args.only and not args.docs_only and pathlib.Path(args.json).resolve() == DEFAULT_JSON.resolve():
        parser.error("--only times some of the cases: give --json elsewhere than the docs' file")
    status = 0
    if not args.docs_only:
        import numba

        from _harness import provenance

        load = bench_env.LoadGate.from_args(args, "benchmarks/rows_bench.py")

        global _flush_buffer
        if args.flush_mib:
            _flush_buffer = np.zeros(args.flush_mib << 20, np.uint8)
        if args.threads:
            numba.set_num_threads(args.threads)
        data = {"benchmark": "rows_bench", "environment": provenance.environment(), "mib": args.mib,
                "repeats": args.repeats, "flush_mib": args.flush_mib, "threads": numba.get_num_threads(),
                "rows": []}
        from rotate.bench import Progress

        progress = Progress(weights(chosen, args.flush_mib), enabled=not args.no_progress)
        log = progress.log(print)
        for function, shape, dtype, case in chosen:
            progress.step(f"{function} {case}, {dtype.name if dtype.kind != 'V' else f'V{dtype.itemsize}'}")
            row = run_case(function, shape, dtype, args.repeats)
            row["case"] = case
            data["rows"].append(row)
            log(f"{function:9s} {str(shape):22s} {case:26s} {row['algorithm']:24s} {row['ms']:7.1f} ms "
                f"{row['vs_copyto']:5.2f}x copyto  {row['peer']} {row['peer_ms']:.1f} ms", flush=True)
        progress.finish()
        load.finish(data)
        status = load.status()
        pathlib.Path(args.json).write_text(json.dumps(data, indent=1) + "\n")
    data = json.loads(pathlib.Path(args.json).read_text())
    if pathlib.Path(args.json).resolve() == DEFAULT_JSON.resolve():  # the docs cite the committed file only
        DOC.write_text(render_docs(DOC.read_text(), data))
    else:
        print(f"docs/perf-cpu.md left as it is: the results went to {args.json}, not {DEFAULT_JSON}")
    print(table(data))
    plots.write(args, plot, data)
    return status


if __name__ == "__main__":
    sys.exit(main())
