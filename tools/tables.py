"""Regenerate the numbers in docs/performance.md and README.md from the committed JSON in docs/results/.

Each generated block sits between marker comments::

    <!-- table:NAME -->
    ...generated, never edited by hand...
    <!-- /table -->

(``<!-- numbers:NAME -->`` ... ``<!-- /numbers -->`` in README.md). Run
``python tools/tables.py`` after committing a result file; ``--check``
exits 1 when a document is out of date (tests/project/test_tables.py runs it).
docs/results/MANIFEST.md lists every result file, the commit it measured,
the question it answers and the document citing it (tests/project/test_docs.py).

Sources (the constants below name the runs)
-------------------------------------------
* ``CHAIN_GATE_RUN``, ``CHAIN_GATE_16G_RUN`` -- ``python -m rotate.bench --json``
  (format 2) at issue #7's gate points: tables ``gpu-chain``, ``gpu-chain-peers``.
* ``QUICK_RUN`` -- host work per call on 4 KiB arrays (``gpu-small``).
* ``FUNCTIONS_RUN`` -- ``benchmarks/call_overhead.py --json`` on the GPU: every public function's
  host work per call beside its torch peer (``gpu-functions``).
* ``PLAN_COVERAGE_RUN``, ``RANDOM_RUN`` -- random 1-D shifts (``gpu-random``).
* ``ROWS_RUN`` -- ``benchmarks/rows_gpu_bench.py`` (``gpu-rows``, ``gpu-rows-summary``).
* ``COLUMNS_RUN`` -- ``benchmarks/rows_gpu_bench.py --only 36,37,38,39,40,41``: roll_rows along
  strided axes (``gpu-rows-columns``).
* ``dist-h200x2.json`` -- ``benchmarks/dist_bench.py`` (``dist``).
* ``cpu-bench.json`` -- ``benchmarks/cpu_bench.py --json`` (``cpu-bench``).
* ``cpu-call-overhead.json`` -- ``benchmarks/call_overhead.py --json``
  (``cpu-call-overhead``).

CPU results are quoted only when they pass the load check (``rotate/bench_env.py``,
``load_quiet``): a file marked ``"usable_for_docs": false``, or taken with the 1-minute
load average over 0.5 per core, gives a sentence naming why instead of its numbers.

Plots (``--plots``; needs matplotlib, the ``bench`` extra; no GPU): ``CHAIN_GATE_PLOT``
draws ``CHAIN_GATE_RUN`` and ``CHAIN_GATE_16G_RUN`` with ``rotate.bench``'s plot (what
``python -m rotate.bench --from FILE.json ... --plot OUT.png`` draws). ``--check`` checks
that each plot exists; its pixels depend on the matplotlib version, so they are not compared.
"""

from __future__ import annotations

import argparse
import json
import math
import pathlib
import re
import sys
from typing import Optional

ROOT = pathlib.Path(__file__).resolve().parents[1]
RESULTS = ROOT / "docs" / "results"
MiB = 1 << 20
GiB = 1 << 30


def load(name: str):
    path = RESULTS / name
    return json.loads(path.read_text()) if path.exists() else None


#: CPU result files that were measured on a busy machine: {name: why}; filled by `load_quiet`.
NOT_QUOTED: dict = {}


def load_quiet(name: str):
    """A CPU result file, or None when it must not be quoted: marked unusable for the docs, or taken with
    the 1-minute load average over 0.5 per core (``rotate.bench_env.load_problem``; the reason goes to
    ``NOT_QUOTED`` and into the generated text)."""
    data = load(name)
    if data is None:
        return None
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from rotate import bench_env

    problem = bench_env.load_problem(data)
    if problem is None:
        NOT_QUOTED.pop(name, None)
        return data
    NOT_QUOTED[name] = problem
    return None


def not_quoted(name: str, command: str) -> str:
    return (f"`docs/results/{name}` is not quoted: {NOT_QUOTED[name]}. Re-measure on a quiet machine: "
            f"`{command}`, then `python tools/tables.py`.")


def _num(value, fmt: str, missing: str = "n/a") -> str:
    return missing if value is None else format(value, fmt)


def size_label(size: int) -> str:
    for unit, scale in (("GiB", GiB), ("MiB", MiB), ("KiB", 1024)):
        if size >= scale and size % scale == 0:
            return f"{size // scale} {unit}"
    return f"{size} B"


# --- GPU, the whole call (rotate.bench format 2) --------------------------------------

E2E_MISSING = ("No end-to-end GPU run is committed yet. On the GPU machine: "
               "`python -m rotate.bench --json docs/results/gpu-e2e-<commit>-h200.json`, then "
               "`python tools/tables.py`.")


def gpu_small_table(data, source: str = "gpu-e2e-quick-h200.json") -> str:
    if data is None:
        return E2E_MISSING
    rows = data.get("small_arrays") or []
    if not rows:
        return "The committed run has no small-array table (`--no-small`)."
    commit = str(data.get("environment", {}).get("git_commit", "?"))[:12]
    lines = [f"Source: `docs/results/{source}` (commit `{commit}`).", "",
             "| call (4 KiB array) | us per call |", "|---|---|"]
    for r in rows:
        lines.append(f"| {r['case']} | {_num(r.get('us_per_call'), '.1f', 'n/a: ' + r.get('error', '')[:60])} |")
    return "\n".join(lines)


def gpu_functions_table(data, source: str) -> str:
    """Host work per call of every public function on a 4 KiB torch tensor beside its torch peer
    (benchmarks/call_overhead.py's GPU rows, ``rotate.bench.FUNCTION_ROWS``), and the launch floor."""
    if data is None:
        return f"(no every-function run is committed: run benchmarks/call_overhead.py --json docs/results/{source})"
    from rotate.bench import FUNCTION_ROWS

    by_case = {r["case"]: r.get("us_per_call") for r in data.get("gpu") or []}
    env = data.get("environment", {})
    commit = str(env.get("git_commit") or env.get("commit") or "?")[:7]
    gpu = (env.get("gpu_knobs") or {}).get("gpu") or "GPU not recorded"
    lines = [f"Source: `docs/results/{source}` ({gpu}, commit `{commit}`; median of {data.get('repeats')} rounds of "
             f"{data.get('number')} calls, back to back; plot: `docs/results/{source[:-5]}.png`).", "",
             "| function (4 KiB torch tensor) | rotate, us a call | torch peer | peer, us a call |", "|---|---|---|---|"]
    rows = [("roll", "rotate.roll (torch tensor)", "torch.roll")] + list(FUNCTION_ROWS)
    for name, ours, peer in rows:
        lines.append(f"| {name} | {_num(by_case.get(ours), '.1f')} | {peer} | {_num(by_case.get(peer), '.1f')} |")
    floor = by_case.get("torch x.add_(1) (a launch floor)")
    lines.append(f"| (a kernel launch: torch `x.add_(1)`) | | | {_num(floor, '.1f')} |")
    return "\n".join(lines)


def _pct(entry, key="pct_memcpy") -> str:
    if not entry or key not in entry:
        return "n/a" if not entry or "error" not in entry else "failed"
    return f"{entry[key]:.0f}%"


def gpu_rows_table(data, name="gpu-rows-h200.json") -> str:
    """roll_rows, fftshift and multi-axis roll on the GPU (benchmarks/rows_gpu_bench.py), with peers."""
    if data is None:
        return "(no result yet: run benchmarks/rows_gpu_bench.py on a GPU)"
    env = data.get("environment", {})
    versions = env.get("versions", {})
    commit = str(env.get("git_commit", "?"))
    # A run from an uncommitted tree names it (ROTATE_GIT_COMMIT), not a hash: say so, in full.
    where = f"commit `{commit[:12]}`" if re.fullmatch(r"[0-9a-f]{7,40}(-dirty)?", commit) else \
        f"working tree `{commit}`"
    lines = [f"Source: `docs/results/{name}` ({where}, "
             f"numba-cuda {versions.get('numba-cuda')}, torch {versions.get('torch')}, cupy "
             f"{versions.get('cupy')}). % of a device-to-device memcpy of the same bytes in the same run; "
             f"*whole call* = 20 calls back to back between CUDA events, host work included. Peers are out of "
             f"place (a second array; the gathers also an int64 index per element). *traffic / 2N*: the plan's "
             f"bytes over 2N; where the plan has only a bound, the exact count for the same shifts, replayed "
             f"on the host (marked *exact*).", "",
             "| call | shape | dtype | size | algorithm | traffic / 2N | whole call | one at a time | device | "
             "device vs the run's fastest memcpy | peers (whole call) | faster |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    fastest = _fastest_memcpy(data["cases"])
    for r in data["cases"]:
        if "error" in r:
            lines.append(f"| case {r.get('case')} | | | | failed: {r['error'][:60]} | | | | | | |")
            continue
        if r["function"] == "roll_rows":  # args: the axis, where it is not the last
            call = "roll_rows" + (f", axis {r['args'][0]}" if r.get("args") else "")
        else:
            call = r["function"] + (f" {tuple(r['args'][0])}, axes {tuple(r['args'][1])}" if r.get("args") else "")
        peers = {k: v for k, v in r["peers"].items() if "ms" in v}
        peer_text = ", ".join(f"{k} {_pct(v)}" for k, v in r["peers"].items())
        best = min(peers, key=lambda k: peers[k]["ms"]) if peers else None
        verdict = "n/a" if best is None else (
            f"rotate, {peers[best]['ms'] / r['ms']:.2f}x" if r["ms"] <= peers[best]["ms"]
            else f"{best}, {r['ms'] / peers[best]['ms']:.2f}x")
        algorithm = r["algorithm"] + (" (chunked)" if r.get("details", {}).get("variant") == "chunked" else "")
        lines.append(f"| {call} | {tuple(r['shape'])} | {r['dtype']} | {size_label(r['nbytes'])} | {algorithm} | "
                     f"{_traffic(r)} | {_pct(r)} | {_pct(r, 'sync_pct_memcpy')} | "
                     f"{_pct(r, 'device_pct_memcpy')} | {_vs_fastest(r, fastest)} | {peer_text} | {verdict} |")
    return "\n".join(lines)


def _traffic(r) -> str:
    if "traffic_exact_over_2n" in r:
        return f"{r['traffic_exact_over_2n']:.3f} (exact)"
    return f"{r['traffic_over_2n']:.3f}"


def _fastest_memcpy(cases) -> dict:
    """Bytes -> the fastest memcpy of that size in the run (it varied by case: 0.506-0.566 ms for 1 GiB)."""
    fastest = {}
    for r in cases:
        if "memcpy_ms" in r:
            fastest[r["nbytes"]] = min(fastest.get(r["nbytes"], r["memcpy_ms"]), r["memcpy_ms"])
    return fastest


def _vs_fastest(r, fastest) -> str:
    """Device time as % of the fastest memcpy of the same size in the run (the conservative reading)."""
    if "device_ms" not in r or r["nbytes"] not in fastest:
        return "n/a"
    return f"{100 * fastest[r['nbytes']] / r['device_ms']:.0f}%"


def small_arrays_sentence(data, source: str) -> str:
    """The host cost of a call on a 4 KiB array, with the peers' from the same run."""
    small = {r["case"]: r.get("us_per_call") for r in data.get("small_arrays") or []}
    ours = [us for case, us in small.items() if case.startswith("rotate") and us]
    if not ours:
        return ""
    commit = str(data.get("environment", {}).get("git_commit", "?"))[:12]
    peers = ", ".join(f"`{name}` {small[name]:.1f} us" for name in ("torch.roll", "cupy.roll") if small.get(name))
    return (f"A call on a 4 KiB array (numba, CuPy or torch) costs {min(ours):.1f}-{max(ours):.1f} us of "
            f"host work (docs/results/{source}, commit `{commit}`; the goal is 20 us)"
            + (f"; in the same run {peers} a call." if peers else "."))


#: The smallest array of the GPU rows gates (issue #9: 1 and 4 GiB; the 8192 x 8192 complex64 fftshift, 512 MiB,
#: and its odd-sided twin, 8191 x 8193, 8 bytes short of it).
GATE_MIN_BYTES = 500 << 20
#: The gather-based per-row rolls rows_gpu_bench.py times as peers of roll_rows.
GATHERS = ("torch.gather", "cupy.take_along_axis")


def readme_rows(data, quick, name="gpu-rows-h200.json") -> str:
    """README's GPU paragraph for roll_rows / fftshift / multi-axis rolls, from gpu-rows-h200.json."""
    if data is None:
        return "(no GPU result for roll_rows and fftshift yet)"
    ok = [r for r in data["cases"] if "error" not in r]
    # The run's memcpy of one size varied by case (0.506-0.566 ms for 1 GiB): every percentage here is
    # against the fastest memcpy of that size in the run, the conservative reading.
    fastest = _fastest_memcpy(ok)
    ok = [dict(r, pct_memcpy=100 * fastest[r["nbytes"]] / r["ms"],
               device_pct_memcpy=100 * fastest[r["nbytes"]] / r["device_ms"],
               peers={k: dict(v, pct_memcpy=100 * fastest[r["nbytes"]] / v["ms"]) if "ms" in v else v
                      for k, v in r["peers"].items()}) for r in ok]

    def span(rows, key="pct_memcpy"):
        values = [r[key] for r in rows if key in r]
        if not values:
            return "n/a"
        fmt = ".1f" if min(values) < 1 else ".0f"
        low, high = format(min(values), fmt), format(max(values), fmt)
        return f"{low}%" if low == high else f"{low}-{high}%"

    def peer_span(rows, name):
        values = [r["peers"][name]["pct_memcpy"] for r in rows if "pct_memcpy" in r["peers"].get(name, {})]
        return f"{min(values):.0f}-{max(values):.0f}%" if values else "n/a"

    def label(r):
        call = r["function"] + (f" {tuple(r['args'][0])}" if r.get("args") else "")
        return f"`{call}` of {tuple(r['shape'])} {r['dtype']}"

    def lane_bytes(r):
        return r["nbytes"] * r["shape"][-1] // math.prod(r["shape"])

    def lane_range(rows):
        sizes = sorted({lane_bytes(r) for r in rows})
        if not sizes:
            return "n/a"
        return size_label(sizes[0]) if len(sizes) == 1 else f"{size_label(sizes[0])} to {size_label(sizes[-1])}"

    # Issue #9's gates are set at 1 and 4 GiB (512 MiB for the 8192^2 fftshift); smaller arrays, where host
    # work and the L2 weigh in, get a sentence of their own.
    small = [r for r in ok if r["nbytes"] < GATE_MIN_BYTES]
    ok = [r for r in ok if r["nbytes"] >= GATE_MIN_BYTES]
    lanes = [r for r in ok if r["algorithm"] == "lane-panels"]
    long_lanes = [r for r in lanes if lane_bytes(r) >= 4096]
    short_lanes = [r for r in lanes if lane_bytes(r) < 4096]
    swaps = [r for r in ok if r["algorithm"] == "lane-swaps"]
    walks = [r for r in ok if r["algorithm"] == "lane-walks"]
    beyond = [f"lanes of {lane_range(walks)} walk their tiles in chain order in one pass (`lane-walks`, "
              f"{min(r['traffic_exact_over_2n'] for r in walks):.3f}-"
              f"{max(r['traffic_exact_over_2n'] for r in walks):.3f}x the bytes of one pass for these random "
              f"shifts) at {span(walks)}" if walks and all("traffic_exact_over_2n" in r for r in walks) else "",
              f"lanes of {lane_range(swaps)} take block swaps (`lane-swaps`) at {span(swaps)}" if swaps else ""]
    beyond = ("beyond a block's shared memory, in one launch, " + " and ".join(b for b in beyond if b)
              if any(beyond) else "lanes beyond a block's shared memory were not measured")
    halves = [r for r in ok if r["algorithm"] == "half-swaps"]
    cycles = [r for r in ok if r["algorithm"] in ("row-cycles", "chain+row-strips")]
    kinds = sorted({r["algorithm"] for r in cycles}, key=["chain+row-strips", "row-cycles"].index)
    others = " or ".join({"chain+row-strips": "a flat chain pass and row strips (`chain+row-strips`)",
                          "row-cycles": "row cycles (`row-cycles`)"}[k] for k in kinds) or "none measured"
    ratios = [r["peers"]["cupy.take_along_axis"]["ms"] / r["ms"] for r in lanes
              if "ms" in r["peers"].get("cupy.take_along_axis", {})]
    commit = str(data.get("environment", {}).get("git_commit", "?"))[:12]
    text = (f"On the same GPU (docs/results/{name}, commit `{commit}`, whole call, % of the run's fastest "
            f"memcpy of each size), `roll_rows` "
            f"moves lanes of {lane_range(long_lanes)} in one pass at **{span(long_lanes)} of memcpy** and lanes "
            f"of {lane_range(short_lanes)} at {span(short_lanes)}, {min(ratios):.1f}-{max(ratios):.1f}x faster than the "
            f"`cupy.take_along_axis` gather ({peer_span(lanes, 'cupy.take_along_axis')}, plus 8 index bytes per "
            f"element); {beyond}. `fftshift` and multi-axis `roll` run in one pass: where every axis moves by "
            f"half its length (even `fftshift`), as disjoint swaps (`half-swaps`) at **{span(halves)}**; "
            f"other shifts through {others} at {span(cycles)}"
            + (f" (moving {min(r['traffic_over_2n'] for r in cycles):.3f}-"
               f"{max(r['traffic_over_2n'] for r in cycles):.3f}x the bytes of one pass)" if cycles else "")
            + ". ")
    beaten = []
    for r in halves + cycles:
        peers = {k: v for k, v in r["peers"].items() if "ms" in v}
        best = min(peers, key=lambda k: peers[k]["ms"]) if peers else None
        if best is not None and peers[best]["ms"] < r["ms"]:
            beaten.append(f"{label(r)} (`{best}` {_pct(peers[best])})")
    text += (f"Out-of-place peers (`cupy.fft.fftshift` {peer_span(halves + cycles, 'cupy.fft.fftshift')}, "
             f"`torch.fft.fftshift` {peer_span(halves + cycles, 'torch.fft.fftshift')}, `cupy.roll` "
             f"{peer_span(halves + cycles, 'cupy.roll')}) are faster for "
             + (", ".join(beaten) if beaten else "none of them") + ". ")
    met = [r for r in ok if r.get("device_pct_memcpy", 0) >= 85]
    missed = [r for r in ok if r.get("device_pct_memcpy", 0) < 85]
    text += (f"The 85% goal (device time) is met at {len(met)} of {len(ok)} points of about 512 MiB and more; missed for "
             + (", ".join(f"{label(r)} ({_pct(r, 'device_pct_memcpy')})" for r in missed) if missed else "none")
             + ".")
    if small:
        gathers = [(r, min((v for k, v in r["peers"].items() if "ms" in v and k in GATHERS), key=lambda v: v["ms"],
                           default=None)) for r in small if r["function"] == "roll_rows"]
        slower = [label(r) for r, best in gathers if best is not None and best["ms"] < r["ms"]]
        sizes = sorted({r["nbytes"] for r in small})
        text += (f" Arrays of {size_label(sizes[0])} to {size_label(sizes[-1])}, where host work is a larger share "
                 f"of the call: whole call {span(small)} of memcpy (a call in place touches half the bytes a copy "
                 f"does, which the H200's 50 MB L2 can hold at 32 MiB); `roll_rows` is "
                 + ("faster than the best gather at each of them" if not slower
                    else "slower than the best gather for " + ", ".join(slower))
                 + ".")
    return "\n".join(_wrap(text))


# --- CPU ----------------------------------------------------------------------------

def _cpu_shift_label(shift: int, n: int) -> str:
    for label, value in (("n/3", n // 3), ("n/2+3", n // 2 + 3), ("n-1", n - 1)):
        if shift == value:
            return label
    return str(shift)


def cpu_bench_table(data) -> str:
    if data is None and "cpu-bench.json" in NOT_QUOTED:
        return not_quoted("cpu-bench.json", "python benchmarks/cpu_bench.py --json docs/results/cpu-bench.json")
    if data is None:
        return "No CPU run is committed yet: `python benchmarks/cpu_bench.py --json docs/results/cpu-bench.json`."
    env = data["environment"]
    knobs = env["cpu_knobs"]
    load = env.get("load_average")
    lines = [f"Source: `docs/results/cpu-bench.json` ({data['nbytes'] >> 20} MiB, {knobs['numba_threads']} "
             f"threads ({data.get('threading_layer', knobs['numba_threading_layer'])}), {env['cpus']} CPUs"
             + (f" shared with other jobs (load average {load[0]:.1f} at the start)" if load else "") + ", "
             f"medians of {data['arguments']['repeats']} with a {data['arguments']['flush_mib']} MiB cache flush "
             f"before each run"
             + (f", {data['arguments']['random_shifts']} random shifts (seed {data['arguments']['seed']})"
                if data['arguments'].get('random_shifts') else "")
             + f", commit `{str(env['git_commit'])[:12]}`); ratios are times (lower is better).", "",
             "| dtype | shift | algorithm | ms | vs np.copyto | vs np.roll (+copy back) | vs std::rotate |",
             "|---|---|---|---|---|---|---|"]
    for dtype, block in data["dtypes"].items():
        for i, r in enumerate(block["rows"]):
            cxx = f"{r['ours'] / r['cxx']:.2f}" if r.get("cxx") else "n/a"
            shift = _cpu_shift_label(r['shift'], block['n']) if i < 6 else f"random {r['shift']}"
            lines.append(f"| {dtype} | {shift} | {r['algorithm']} | "
                         f"{r['ours'] * 1e3:.1f} | {r['ours'] / r['copy']:.2f} | {r['ours'] / r['roll']:.2f} | {cxx} |")
    if "gate_met" in data:
        lines += ["", f"Issue #2's gate in this run: {'met' if data['gate_met'] else 'missed'}."]
    lines += ["", "| many rows | algorithm | ms | vs np.copyto | vs np.roll |", "|---|---|---|---|---|"]
    for r in data["many_rows"]:
        lines.append(f"| {r['case']} | {r['algorithm']} | {r['ours'] * 1e3:.2f} | {r['ours'] / r['copy']:.2f} | "
                     f"{r['ours'] / r['roll']:.2f} |")
    return "\n".join(lines)


def cpu_call_overhead_table(data, before=None) -> str:
    if data is None and "cpu-call-overhead.json" in NOT_QUOTED:
        return not_quoted("cpu-call-overhead.json",
                          "python benchmarks/call_overhead.py --json docs/results/cpu-call-overhead.json")
    if data is None:
        return "No call-overhead run is committed yet: `python benchmarks/call_overhead.py --json docs/results/cpu-call-overhead.json`."
    env = data["environment"]
    load = env.get("load_average")
    lines = [f"Source: `docs/results/cpu-call-overhead.json` (commit `{str(env['git_commit'])[:12]}`, "
             f"{env['cpus']} CPUs, load average {load[0]:.1f} while measured; medians of {data['repeats']} rounds "
             f"of {data['number']} calls, rounds alternating)." if load else
             f"Source: `docs/results/cpu-call-overhead.json` (commit `{str(env['git_commit'])[:12]}`).", "",
             f"| case | algorithm | rotate.roll (us) | np.roll (us) | ratio (gate <= {data['cpu'][0].get('gate', 1.5)}) |" + (
                 " before (75de099) |" if before else ""),
             "|---|---|---|---|---|" + ("---|" if before else "")]
    old = {r["case"]: r for r in (before or {}).get("cpu", [])}
    for r in data["cpu"]:
        row = (f"| {r['case']} | {r['algorithm']} | {r['rotate_us']:.2f} | {r['np_roll_us']:.2f} | "
               f"{r['ratio']:.2f} |")
        if before:
            o = old.get(r["case"])
            row += f" {o['ratio']:.2f} ({o['rotate_us']:.0f} us) |" if o else " n/a |"
        lines.append(row)
    return "\n".join(lines)


# --- README ---------------------------------------------------------------------------

def plan_coverage_sentence(data, source: str = "plan-coverage-h200-shape.json") -> str:
    """What the planner does with random 1-D shifts (no timing: the schedules and bytes they move)."""
    rows = [r for r in data["rows"] if r["shift_label"] == "random"]
    if not rows:
        return ""
    chain = [r for r in rows if r["default"]["algorithm"] == "chain"]
    other = sorted(r["default"]["bytes_vs_ideal"] for r in rows if r["default"]["algorithm"] != "chain")
    dtypes = sorted({r["dtype"] for r in rows})
    sizes = sorted({r["size_bytes"] for r in rows})
    commit = str(data.get("environment", {}).get("git_commit", "?"))[:12]
    text = (f"Those are structured shifts. For random ones, planned for the H200's shape under the default "
            f"scratch bound (docs/results/{source}, commit `{commit}`, {len(rows)} seeded random shifts of "
            f"{' and '.join(size_label(b) for b in sizes)} {' and '.join(dtypes)} arrays; planned, not timed), "
            f"{len(chain)} of {len(rows)} take the chain's one pass")
    if other:
        text += (f"; the others take block swaps or reversals, which move {other[0]:.2f}-{other[-1]:.2f}x the "
                 f"bytes of one pass")
    caps = sorted(r["chain_from_cap_bytes"] / r["size_bytes"] for r in rows
                  if r["chain_from_cap_bytes"] is not None and r["default"]["algorithm"] != "chain")
    never = sum(r["chain_from_cap_bytes"] is None for r in rows)
    if caps:
        span = f"{caps[0]:.0%}" if f"{caps[0]:.0%}" == f"{caps[-1]:.0%}" else f"{caps[0]:.0%}-{caps[-1]:.0%}"
        text += (f" (a larger `max_scratch_bytes` lets the chain take them: {span} of the "
                 f"array" + (f"; {never} not even at 25%" if never else "") + ")")
    return text + "."


def random_shift_sentence(data, source: str, pointer: bool = True) -> str:
    """Random shifts as users time them (``rotate.bench`` rows labelled ``randS``), peers beside, as % of the
    run's faster memcpy timing (its events-timed 4 GiB copy ran 11% slower than its back-to-back one)."""
    rows = [r for r in data["rows"] if r["shift_label"].startswith("rand")]
    if not rows:
        return ""

    def fastest(r):
        return min(r["memcpy_ms"], r.get("memcpy_call_ms", r["memcpy_ms"]))

    commit = str(data.get("environment", {}).get("git_commit", "?"))[:24]
    parts = []
    for size in sorted({r["size_bytes"] for r in rows}):
        chain = [100 * fastest(r) / r["ms"] for r in rows if r["size_bytes"] == size and r["algorithm"] == "chain"]
        rest = [100 * fastest(r) / r["ms"] for r in rows if r["size_bytes"] == size and r["algorithm"] != "chain"]
        part = (f"{size_label(size)}: {len(chain)} of {len(chain) + len(rest)} in one pass at "
                f"{min(chain):.0f}-{max(chain):.0f}%" if chain else f"{size_label(size)}: none in one pass")
        if rest:
            part += f", the others through block swaps at {min(rest):.0f}-{max(rest):.0f}%"
        parts.append(part)
    cupy = [100 * fastest(r) / r["cupy_ms"] for r in rows if "cupy_ms" in r]
    cupy_wins = sum(1 for r in rows if "cupy_ms" in r and r["cupy_ms"] < r["ms"])
    text = (f" Timed on the H200 (docs/results/{source}, commit `{commit}`, {len(rows)} rows, whole call as % of "
            f"the run's faster memcpy timing): " + "; ".join(parts) + ".")
    if cupy:
        text += (f" `cupy.roll` ran the same shifts at {min(cupy):.0f}-{max(cupy):.0f}% out of place, faster "
                 f"for {cupy_wins} of the {len(cupy)}.")
    return text + (" docs/performance.md (\"Known gaps\") says what is still slow." if pointer else "")


def readme_how_fast(bench, longdist, e2e, cpu, overhead, quick=None, e2e_source="gpu-e2e-chain-h200.json",
                    coverage=None, random_run=None) -> str:
    parts = []
    if e2e is not None:
        rows = [r for r in e2e["rows"] if r["algorithm"] == "chain"]
        big = [r for r in rows if r["size_bytes"] >= GiB]
        if big:
            lo, hi = min(r["pct_memcpy"] for r in big), max(r["pct_memcpy"] for r in big)
            labels = sorted({r["shift_label"] for r in big})
            dtypes = sorted({r["dtype"] for r in big}, key=lambda d: [r["dtype"] for r in big].index(d))
            short = [r["pct_memcpy"] for r in big if r["shift_label"] in ("1", "3", "4097", "n-7")]
            commit = str(e2e.get("environment", {}).get("git_commit", "?"))[:12]
            parts.append(f"Measured on an {e2e.get('device') or 'NVIDIA GPU'} (docs/performance.md, "
                         f"docs/results/{e2e_source}, commit `{commit}`, {', '.join(dtypes)}), "
                         f"timing the whole call as you would (host work "
                         f"included, calls back to back), every shift ({', '.join(labels)}) takes one "
                         f"chain-ordered pass at **{lo:.0f}-{hi:.0f}% of a device-to-device memcpy** at 1 GiB "
                         f"and above" + (f" ({min(short):.0f}-{max(short):.0f}% for shifts shorter than a tile "
                                         f"or the array's length less a few elements)" if short else "")
                         + "; the goal is 90%, and docs/performance.md says where it is missed.")
            if coverage is not None:
                parts.append(plan_coverage_sentence(coverage)
                             + (random_shift_sentence(*random_run) if random_run else ""))
        ours = [r for r in rows]
        wins = [r for r in ours if all(f"{p}_ms" not in r or r[f"{p}_ms"] >= r["ms"] for p in ("cupy", "torch"))]
        if wins:
            # Grouped by dtype: the shifts it wins at every size measured, then those it wins at some sizes.
            groups = []
            for dtype in sorted({r["dtype"] for r in wins}):
                sizes = {r["size_bytes"] for r in rows if r["dtype"] == dtype}

                def won_at(shift, dtype=dtype):
                    return sorted(r["size_bytes"] for r in wins if r["dtype"] == dtype and r["shift_label"] == shift)

                shifts = sorted({r["shift_label"] for r in wins if r["dtype"] == dtype})
                everywhere = [sh for sh in shifts if set(won_at(sh)) == sizes and len(sizes) > 1]
                some = [f"{sh} at {', '.join(size_label(b) for b in won_at(sh))}" for sh in shifts
                        if sh not in everywhere]
                text = f"{dtype} shift{'s' if len(shifts) > 1 else ''} "
                if everywhere:
                    text += f"{', '.join(everywhere)} (every size measured)" + (", " if some else "")
                groups.append(text + ", ".join(some))
            parts.append("It beats every peer that takes the dtype (`cupy.roll`, and `torch.roll` but for uint16; "
                         "out of place, timed the same way) for " + "; ".join(groups) + ".")
        slower = sorted({(size_label(r["size_bytes"]), r["dtype"]) for r in rows
                         if any(f"{p}_ms" in r and r[f"{p}_ms"] < r["ms"] for p in ("cupy", "torch"))},
                        key=lambda t: (t[1], t[0]))
        if slower:
            parts.append("A peer's out-of-place roll is faster for some shifts of: "
                         + ", ".join(f"{d} at {s}" for s, d in slower[:12])
                         + (" and more" if len(slower) > 12 else "")
                         + " (`cupy.roll` runs float32 at 98% of memcpy; it also allocates a second array).")
        parts.append(small_arrays_sentence(quick if quick is not None and quick.get("small_arrays") else e2e,
                                           "gpu-e2e-quick-h200.json" if quick is not None else e2e_source))
    if cpu is not None:
        rows = [r for block in cpu["dtypes"].values() for r in block["rows"]]
        copy = sorted(r["ours"] / r["copy"] for r in rows)
        roll = sorted(r["ours"] / r["roll"] for r in rows)
        size = cpu["nbytes"] >> 20
        load = cpu["environment"].get("load_average")
        busy = f", load average {load[0]:.1f}" if load else ""
        parts.append(f"The CPU backend (docs/results/cpu-bench.json: {size} MiB, {cpu['environment']['cpus']} "
                     f"shared cores{busy}, {len(rows) // 2} shifts, uint8 and float64) takes {copy[0]:.2f}-{copy[-1]:.2f}x the time of a "
                     f"single-threaded `np.copyto` (median {copy[len(copy) // 2]:.2f}x) and "
                     f"{roll[0]:.2f}-{roll[-1]:.2f}x the time of `np.roll` plus a copy back (median "
                     f"{roll[len(roll) // 2]:.2f}x).")
    busy = [name for name in ("cpu-bench.json", "cpu-call-overhead.json") if name in NOT_QUOTED]
    if busy:
        parts.append("CPU results measured on a busy machine are not quoted ("
                     + ", ".join(f"docs/results/{name}" for name in busy) + ").")
    if overhead is not None:
        ratios = [r["ratio"] for r in overhead["cpu"]]
        parts.append(f"On small arrays a call costs {min(ratios):.1f}-{max(ratios):.1f}x `np.roll`'s "
                     f"(docs/results/cpu-call-overhead.json).")
    return "\n".join(_wrap(" ".join(parts)))


def _wrap(text: str, width: int = 78) -> list:
    lines, line = [], ""
    for word in text.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return lines + ([line] if line else [])


# --- plumbing -------------------------------------------------------------------------

#: The newest end-to-end run of issue #7's gate points (python -m rotate.bench, 1 and 4 GiB, every gate
#: dtype and shift): the README's chain sentence and performance.md's gpu-chain tables.
CHAIN_GATE_RUN = "gpu-e2e-chain-eee3343-h200.json"
#: The same gate points at 16 GiB (3 repeats of 5 calls: torch.roll of 16 GiB uint8 takes 0.15 s a call).
CHAIN_GATE_16G_RUN = "gpu-e2e-chain-16g-eee3343-h200.json"
#: Both gate runs drawn, peers beside (performance.md shows it under the gpu-chain tables). Rename it with
#: the runs it draws.
CHAIN_GATE_PLOT = "gpu-e2e-chain-eee3343-h200.png"
#: Host work per call on 4 KiB arrays, peers beside (rotate.bench --quick, after the quick path).
QUICK_RUN = "gpu-e2e-quick-h200.json"
FUNCTIONS_RUN = "call-overhead-functions-h100.json"
#: The newest run of benchmarks/rows_gpu_bench.py (roll_rows, fftshift, multi-axis rolls): performance.md's
#: gpu-rows table and the README's rows sentence.
ROWS_RUN = "gpu-rows-65d666e-h200.json"
#: roll_rows along strided axes (column-panels): rows_gpu_bench.py --only 36,37,38,39,40,41.
COLUMNS_RUN = "gpu-rows-columns-h200.json"
#: Random 1-D shifts planned for the H200's shape (benchmarks/probes/plan_coverage.py; no timing).
PLAN_COVERAGE_RUN = "plan-coverage-h200-shape.json"
#: Random 1-D shifts timed as users time them (rotate.bench --shifts randS), peers beside.
RANDOM_RUN = "random-shifts-8e6fe2a-h200.json"
#: The dtypes and shifts of issue #7's gate, in the order the tables give them.
GATE_DTYPES = ("uint8", "uint16", "float32", "float64", "complex128")
GATE_SHIFTS = ("1", "3", "4097", "1MiB+5", "n/4+3", "n/3", "n/2+1", "n-7")


def _gate_rows(runs) -> list:
    return [r for data in runs if data is not None for r in data["rows"] if r["algorithm"] == "chain"]


def gpu_chain_matrix(runs, sources) -> str:
    """Issue #7's gate points: whole call, back to back, as % of memcpy, one cell a dtype and shift, the sizes
    side by side; device time where it is lower than the gate (90%) and differs."""
    rows = _gate_rows(runs)
    if not rows:
        return "(no end-to-end run of the gate points is committed)"
    sizes = sorted({r["size_bytes"] for r in rows})
    envs = [data.get("environment", {}) for data in runs if data is not None]
    commits = sorted({str(env.get("git_commit", "?"))[:12] for env in envs})
    lines = [f"Sources: {', '.join(f'`docs/results/{s}`' for s in sources)} (NVIDIA H200, commit "
             f"{', '.join(f'`{c}`' for c in commits)}). Whole call, back to back (host work included), as % of a "
             f"device-to-device memcpy of the same bytes in the same run; each cell gives "
             f"{' / '.join(size_label(s) for s in sizes)}.", "",
             "| shift | " + " | ".join(GATE_DTYPES) + " |", "|---|" + "---|" * len(GATE_DTYPES)]
    for shift in GATE_SHIFTS:
        cells = []
        for dtype in GATE_DTYPES:
            got = {r["size_bytes"]: r["pct_memcpy"] for r in rows if r["dtype"] == dtype and r["shift_label"] == shift}
            cells.append(" / ".join(f"{got[s]:.1f}" if s in got else "-" for s in sizes))
        lines.append(f"| {shift} | " + " | ".join(cells) + " |")
    device = [r["device_pct_memcpy"] for r in rows]
    memcpy = []
    for size in sizes:
        ms = sorted(r["memcpy_ms"] for r in rows if r["size_bytes"] == size)
        span = f"{ms[0]:.3f}" if f"{ms[0]:.3f}" == f"{ms[-1]:.3f}" else f"{ms[0]:.3f}-{ms[-1]:.3f}"
        memcpy.append(f"{size_label(size)} {span} ms ({2 * size / ms[-1] / 1e12:.2f} TB/s read plus write)")
    lines += ["", f"The memcpy these percentages divide by: {'; '.join(memcpy)}.",
              "", f"Device time alone: {min(device):.1f}-{max(device):.1f}% over the same {len(rows)} points; "
                  f"at least 90% at {sum(d >= 90 for d in device)} of them."]
    return "\n".join(lines)


def gpu_chain_peers(runs) -> str:
    """The out-of-place peers at the gate points, same runs, timed the same way: who is faster where."""
    rows = _gate_rows(runs)
    if not rows:
        return "(no end-to-end run of the gate points is committed)"
    lines = ["| dtype | rotate (whole call) | cupy.roll | torch.roll | rotate faster than both | a peer faster |",
             "|---|---|---|---|---|---|"]

    def span(values, fmt=".0f", unit="%"):
        if not values:
            return "n/a"
        low, high = format(min(values), fmt), format(max(values), fmt)
        return f"{low}{unit}" if low == high else f"{low}-{high}{unit}"

    for dtype in GATE_DTYPES:
        mine = [r for r in rows if r["dtype"] == dtype]
        if not mine:
            continue
        wins = [r for r in mine if all(f"{p}_ms" not in r or r[f"{p}_ms"] >= r["ms"] for p in ("cupy", "torch"))]
        lost = [r for r in mine if r not in wins]
        faster = sorted({p for r in lost for p in ("cupy", "torch") if f"{p}_ms" in r and r[f"{p}_ms"] < r["ms"]})
        lines.append(f"| {dtype} | {span([r['pct_memcpy'] for r in mine])} | "
                     f"{span([r['cupy_pct'] for r in mine if 'cupy_pct' in r])} | "
                     f"{span([r['torch_pct'] for r in mine if 'torch_pct' in r])} | "
                     f"{len(wins)} of {len(mine)} | "
                     + (f"{', '.join(f'{p}.roll' for p in faster)}: {len(lost)} of {len(mine)} "
                        f"(by {span([r['ms'] / min(r[f'{p}_ms'] for p in faster if f'{p}_ms' in r) for r in lost], '.2f', 'x')})"
                        if lost else "none") + " |")
    return "\n".join(lines)


def random_shifts_text(coverage, random_run, source) -> str:
    text = (plan_coverage_sentence(coverage) if coverage is not None else "") + \
        (random_shift_sentence(random_run, source, pointer=False) if random_run is not None else "")
    return "\n".join(_wrap(text)) if text else "(no random-shift run is committed)"


def dist_table(data) -> str:
    """The distributed roll on two GPUs (benchmarks/dist_bench.py): time against its bound, same run."""
    if data is None:
        return "(no result yet: run benchmarks/dist_bench.py on the 2-GPU machine)"
    versions = data.get("versions", {})
    lines = [f"Source: `docs/results/dist-h200x2.json` ({versions.get('gpu', '2 GPUs')}, torch "
             f"{versions.get('torch', '?')}, NCCL {versions.get('nccl', '?')}; correctness pass: "
             f"{data.get('correctness', {}).get('verdict')}, {data.get('correctness', {}).get('cases')} cases a rank). Times are medians; the bound "
             f"is max(local in-place pass of one shard, NCCL exchange of the same bytes), both measured in the "
             f"same run.", "",
             "| global size | shift | algorithm | staging | roll ms | local pass ms | NCCL exchange ms | "
             "bound / roll | roll / local pass | correct |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in data["rows"]:
        lines.append(f"| {size_label(r['global_bytes'])} | {r['label']} | {r['algorithm']} | "
                     f"{r['staging_bytes'] >> 20} MiB | {r['t_roll_ms']:.3f} | {r['t_local_pass_ms']:.3f} | "
                     f"{r['t_nccl_exchange_ms']:.3f} | {r['bound_over_roll']:.2f} | "
                     f"{_num(r.get('roll_over_local') or None, '.2f')} | {r.get('correct')} |")
    return "\n".join(lines)


RANDOM_SHAPES_RUN = "random-gpu-h100.json"
RANDOM_SHAPES_PLOT = "random-gpu-h100.png"
RANDOM_SHAPES_CPU_RUN = "random-cpu.json"


def random_shapes_table(name: str = RANDOM_SHAPES_RUN, plot: Optional[str] = RANDOM_SHAPES_PLOT) -> str:
    """Issue #33's benchmark of random shapes and shifts (benchmarks/random_bench.py): the distribution per op."""
    path = ROOT / "docs" / "results" / name
    if not path.exists():
        return "(no random-shape run is committed: run benchmarks/random_bench.py)"
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import random_bench

    cases, mode, sources = random_bench.load([path], for_docs=True)
    data = json.loads(path.read_text())
    low, high = data["min_bytes"], data["max_bytes"]
    sizes = f"{low >> 20} MiB-{high / 2**30:g} GiB" if high >= 1 << 30 else f"{low >> 20}-{high >> 20} MiB"
    header = (f"Source: `docs/results/{name}` ({data.get('device')}, seed {data['seed']}, "
              f"{data.get('cases_run', len(cases))} cases timed (of {data.get('cases_drawn', len(cases))} drawn), "
              f"{sizes}; commit `{str(data['provenance']['commit'])[:7]}`)"
              + (f". Plot: `docs/results/{plot}`.\n" if plot else ".\n"))
    return random_bench.summary_markdown(random_bench.summarize(cases, mode), mode, header).rstrip("\n")


def blocks() -> dict:
    cpu = load_quiet("cpu-bench.json")
    overhead = load_quiet("cpu-call-overhead.json")
    quick = load(QUICK_RUN)
    gate = [load(CHAIN_GATE_RUN), load(CHAIN_GATE_16G_RUN)]
    doc = "docs/performance.md"
    return {
        ("README.md", "numbers", "readme-how-fast"): readme_how_fast(None, None, gate[0], cpu, overhead, quick,
                                                                     CHAIN_GATE_RUN, load(PLAN_COVERAGE_RUN),
                                                                     (load(RANDOM_RUN), RANDOM_RUN)),
        ("README.md", "numbers", "readme-rows"): readme_rows(load(ROWS_RUN), quick, ROWS_RUN),
        (doc, "table", "gpu-chain"): gpu_chain_matrix(gate, [CHAIN_GATE_RUN, CHAIN_GATE_16G_RUN]),
        (doc, "table", "gpu-chain-peers"): gpu_chain_peers(gate),
        (doc, "table", "gpu-random"): random_shifts_text(load(PLAN_COVERAGE_RUN), load(RANDOM_RUN), RANDOM_RUN),
        (doc, "table", "gpu-small"): gpu_small_table(quick, QUICK_RUN),
        (doc, "table", "gpu-functions"): gpu_functions_table(load(FUNCTIONS_RUN), FUNCTIONS_RUN),
        (doc, "table", "gpu-rows"): gpu_rows_table(load(ROWS_RUN), ROWS_RUN),
        (doc, "table", "gpu-rows-columns"): gpu_rows_table(load(COLUMNS_RUN), COLUMNS_RUN),
        (doc, "table", "dist"): dist_table(load("dist-h200x2.json")),
        (doc, "table", "gpu-random-shapes"): random_shapes_table(),
        (doc, "table", "cpu-random-shapes"): random_shapes_table(RANDOM_SHAPES_CPU_RUN, None),
        (doc, "table", "cpu-bench"): cpu_bench_table(cpu),
        (doc, "table", "cpu-call-overhead"): cpu_call_overhead_table(overhead),
    }


def plots() -> dict:
    """{PNG in docs/results: the result files it draws}."""
    return {CHAIN_GATE_PLOT: [CHAIN_GATE_RUN, CHAIN_GATE_16G_RUN]}


def draw_plot(name: str, out: pathlib.Path) -> dict:
    """Draw plot ``name`` of `plots` into ``out`` with rotate.bench's plot (this tree's rotate)."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from rotate import bench

    rows, mode, sources = bench.load_results([RESULTS / source for source in plots()[name]])
    return bench.plot(rows, out, mode, sources)


def render(text: str, kind: str, name: str, body: str) -> str:
    # The closing marker is matched at the start of a line, so an empty block
    # (opening marker directly followed by the closing one) cannot swallow
    # the text up to the next block's end.
    pattern = re.compile(rf"(<!-- {kind}:{re.escape(name)} -->\n)(?:.*?\n)??(<!-- /{kind} -->)", re.S)
    if not pattern.search(text):
        raise KeyError(f"marker <!-- {kind}:{name} --> ... <!-- /{kind} --> not found")
    return pattern.sub(lambda m: m.group(1) + body + "\n" + m.group(2), text, count=1)


def regenerate() -> dict:
    """{path: new text} for every document with generated blocks."""
    texts: dict = {}
    for (path, kind, name), body in blocks().items():
        if path not in texts:
            texts[path] = (ROOT / path).read_text()
        texts[path] = render(texts[path], kind, name, body)
    return texts


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a document differs from its data")
    parser.add_argument("--plots", action="store_true",
                        help="also redraw the plots in docs/results from their JSON (needs matplotlib)")
    args = parser.parse_args(argv)
    missing = [name for name in plots() if not (RESULTS / name).exists()]
    if args.plots and not args.check:
        for name in plots():
            draw_plot(name, RESULTS / name)
            print(f"drew docs/results/{name}")
        missing = []
    stale = []
    for path, text in regenerate().items():
        if (ROOT / path).read_text() != text:
            stale.append(path)
            if not args.check:
                (ROOT / path).write_text(text)
    if args.check:
        if stale or missing:
            if stale:
                print(f"out of date (run python tools/tables.py): {', '.join(stale)}")
            if missing:
                print(f"plots missing (run python tools/tables.py --plots): {', '.join(missing)}")
            return 1
        print("documents match docs/results/")
    else:
        print("updated: " + (", ".join(stale) if stale else "nothing (already up to date)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
