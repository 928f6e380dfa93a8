"""Per-call cost of rotate.roll on small arrays, against the peers' roll; on the GPU every public function.

CPU (always): rotate.roll vs np.roll on 10 and 4096 float64 elements and a
100x100 float64 roll along axis 1 -- the issue #36 gate is rotate <= 1.2x
np.roll's call (issue #8's was 1.5x). GPU (when numba-cuda finds a device): rotate.roll on 4 KiB
torch, CuPy and numba arrays vs torch.roll and cupy.roll, wall clock per
call over back-to-back calls with one synchronisation at the end (what the
host spends per call; the device keeps up at this size); and every public
function (rotate, a two-axis roll, roll_rows, fftshift, ifftshift) on a 32x32
float32 torch tensor beside its torch peer (torch.roll, torch.gather with a
prebuilt index, torch.fft.fftshift/ifftshift): issue #33's gate is 10 us.

Each number is the median over ``--repeats`` rounds of the mean of
``--number`` calls, in microseconds; on the CPU, rounds of rotate.roll and
np.roll alternate and the ratio is the median of the per-round ratios. Writes JSON (``--json``) with the
commit, versions, knobs and the load check (``rotate/bench_env.py``: a machine
whose 1-minute load average is over 0.5 per core at the start is refused, exit
status 3, unless ``--allow-busy``, which marks the result unusable for the docs).
Exit status 1 when the CPU gate is missed and ``--gate`` is given. A line on stderr gives the case, i of
N, and the time left (``--no-progress``: none).

Run: ``python benchmarks/call_overhead.py [--json docs/results/cpu-call-overhead.json] [--gate] [--plot out.png]``;
``--from RUN.json --plot out.png`` draws an earlier run's file (microseconds a call, rotate beside the
peers) without measuring anything.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import statistics
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

import rotate  # noqa: E402
from rotate import bench_env  # noqa: E402
from rotate.bench import FUNCTION_ROWS, Progress  # noqa: E402
from _harness import plots, provenance  # noqa: E402

GATE = 1.2
CPU_CASES = [
    ("10 float64", (10,), 3, None),
    ("4096 float64", (4096,), 3, None),
    ("100x100 float64, axis 1", (100, 100), 3, 1),
]


#: The GPU rows' array (bytes) and how many cases rotate.bench.small_arrays times on it.
GPU_BYTES, GPU_CASES = 4096, 16
#: A call's fixed cost in the progress estimate, as bytes of array (Python and dispatch; a launch on the GPU).
CALL_BYTES, GPU_CALL_BYTES = 16 << 10, 64 << 10


def gpu_number(number: int) -> int:
    """Calls per round on the GPU (each costs more than a CPU call: a launch)."""
    return max(200, number // 4)


def weights(number: int, repeats: int, gpu: bool) -> list:
    """The progress line's cases and their expected cost: each CPU case's calls (rotate.roll and np.roll,
    warm-ups included) times its array's bytes plus a call's fixed part; then, with ``gpu``, one case for
    the GPU rows together (``GPU_CASES`` of them), the same way."""
    out = []
    for _, shape, _, _ in CPU_CASES:
        nbytes = 8 * int(np.prod(shape))
        out.append(2 * repeats * (number + max(10, number // 10)) * (nbytes + CALL_BYTES))
    if gpu:
        out.append(GPU_CASES * (20 + repeats * gpu_number(number)) * (GPU_BYTES + GPU_CALL_BYTES))
    return out


def per_call_us(fn, number: int, repeats: int, sync=None) -> float:
    for _ in range(max(10, number // 10)):  # warm-up: compile, caches
        fn()
    if sync:
        sync()
    rounds = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        if sync:
            sync()
        rounds.append((time.perf_counter() - start) / number * 1e6)
    return statistics.median(rounds)


def cpu_rows(number: int, repeats: int, log=print, progress=None) -> list:
    rows = []
    for label, shape, shift, axis in CPU_CASES:
        if progress is not None:
            progress.step(label)
        a = np.random.default_rng(0).random(shape)
        b = a.copy()
        rotate.roll(a, shift, axis=axis)
        assert np.array_equal(a, np.roll(b, shift, axis=axis)), label
        # Rounds alternate between the two, so load from other processes
        # hits both alike; the ratio is the median of the per-round ratios.
        pairs = [(per_call_us(lambda: rotate.roll(a, shift, axis=axis), number, 1),
                  per_call_us(lambda: np.roll(a, shift, axis=axis), number, 1)) for _ in range(repeats)]
        ours = statistics.median(p[0] for p in pairs)
        theirs = statistics.median(p[1] for p in pairs)
        row = {"case": label, "shape": list(shape), "shift": shift, "axis": axis,
               "rotate_us": ours, "np_roll_us": theirs,
               "ratio": statistics.median(p[0] / p[1] for p in pairs),
               "rotate_us_min": min(p[0] for p in pairs), "np_roll_us_min": min(p[1] for p in pairs),
               "algorithm": rotate.plan(a, shift, axis).algorithm, "gate": GATE}
        rows.append(row)
        log(f"{label:>26}: rotate.roll {ours:6.2f} us, np.roll {theirs:6.2f} us, "
            f"ratio {row['ratio']:.2f} (gate <= {GATE})")
    return rows


def gpu_usable() -> bool:
    """Whether numba-cuda finds a device (not the simulator): the GPU rows run only then."""
    try:
        from numba import cuda
        from numba.core import config

        return not config.ENABLE_CUDASIM and cuda.is_available()
    except Exception:
        return False


def gpu_rows(number: int, repeats: int, nbytes: int = GPU_BYTES, log=print) -> list:
    """rotate.roll on numba, CuPy and torch arrays vs torch.roll / cupy.roll (rotate.bench.small_arrays)."""
    if not gpu_usable():
        return []
    from rotate.bench import small_arrays

    return small_arrays(nbytes, number, repeats, log)


#: GPU rows (rotate.bench.small_arrays' cases) as (array kind, contender): rotate.roll and the library's roll.
GPU_PAIRS = {"rotate.roll (numba array)": ("numba array", "rotate.roll"),
             "rotate.roll (torch tensor)": ("torch tensor", "rotate.roll"),
             "rotate.roll (cupy array)": ("CuPy array", "rotate.roll"),
             "torch.roll": ("torch tensor", "the array library's roll"),
             "cupy.roll": ("CuPy array", "the array library's roll")}
LAUNCH_FLOOR = "torch x.add_(1) (a launch floor)"


def plot(result: dict, path, source="this run") -> dict:
    """Microseconds a call: rotate.roll beside np.roll per CPU case, and on the GPU (where the file has
    GPU rows) beside torch.roll / cupy.roll per array kind, torch's add_ as the launch floor's line."""
    cpu = result.get("cpu") or []
    panels = [plots.Panel("CPU (numpy arrays)", [r["case"].replace(", ", "\n") for r in cpu],
                          {"rotate.roll": [r["rotate_us"] for r in cpu], "np.roll": [r["np_roll_us"] for r in cpu]},
                          "microseconds a call (median)")]
    gpu = [r for r in result.get("gpu") or [] if r["case"] in GPU_PAIRS]
    if gpu:
        kinds = list(dict.fromkeys(GPU_PAIRS[r["case"]][0] for r in gpu))
        series = {"rotate.roll": [None] * len(kinds), "the array library's roll": [None] * len(kinds)}
        for r in gpu:
            kind, who = GPU_PAIRS[r["case"]]
            series[who][kinds.index(kind)] = r.get("us_per_call")  # None where it failed (an error row)
        floor = [r["us_per_call"] for r in result["gpu"] if r["case"] == LAUNCH_FLOOR and "us_per_call" in r]
        panels.append(plots.Panel(f"GPU ({plots.size_label(gpu[0]['bytes'])} arrays)", kinds, series,
                                  "microseconds a call (host, back to back)",
                                  [(floor[0], "torch x.add_(1): a kernel launch")] if floor else []))
    by_case = {r["case"]: r.get("us_per_call") for r in result.get("gpu") or []}
    functions = [row for row in FUNCTION_ROWS if row[1] in by_case]
    if functions:
        panels.append(plots.Panel("GPU, every public function (torch tensors)", [f for f, _, _ in functions],
                                  {"rotate": [by_case[ours] for _, ours, _ in functions],
                                   "the torch peer": [by_case.get(peer) for _, _, peer in functions]},
                                  "microseconds a call (host, back to back)"))
    return plots.bars(panels, path, sources=[plots.source(source, result)],
                      title=f"benchmarks/call_overhead.py: the cost of a call on a small array (median of "
                            f"{result.get('repeats')} rounds of {result.get('number')} calls; lower is better)")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--number", type=int, default=2000, help="calls per round")
    parser.add_argument("--repeats", type=int, default=15, help="rounds (the median is reported)")
    parser.add_argument("--no-gpu", action="store_true")
    parser.add_argument("--json", help="write results here")
    parser.add_argument("--gate", action="store_true", help="exit 1 when a CPU case exceeds the gate")
    parser.add_argument("--no-progress", action="store_true", help="no progress line on stderr")
    plots.add_arguments(parser)
    bench_env.add_arguments(parser)
    args = parser.parse_args(argv)
    replotted = plots.replot(args, parser, plot, "call_overhead")
    if replotted is not None:
        return replotted
    load = bench_env.LoadGate.from_args(args, "benchmarks/call_overhead.py")
    on_gpu = not args.no_gpu and gpu_usable()
    progress = Progress(weights(args.number, args.repeats, on_gpu), enabled=not args.no_progress)
    log = progress.log(print)
    cpu = cpu_rows(args.number, args.repeats, log, progress)
    gpu = []
    if on_gpu:
        progress.step(f"GPU, {GPU_CASES} cases on {GPU_BYTES} bytes")
        gpu = gpu_rows(gpu_number(args.number), args.repeats, log=log)
    progress.finish()
    result = {"benchmark": "call_overhead", "environment": provenance.environment(gpu=bool(gpu)),
              "number": args.number, "repeats": args.repeats, "cpu": cpu, "gpu": gpu}
    load.finish(result)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(result, indent=1) + "\n")
    plots.write(args, plot, result)
    missed = [r["case"] for r in cpu if r["ratio"] > GATE]
    print(f"CPU gate (<= {GATE}x np.roll): " + ("met" if not missed else f"MISSED for {missed}"))
    return load.status() or (1 if (missed and args.gate) else 0)


if __name__ == "__main__":
    sys.exit(main())
