"""Benchmark roll_rows, fftshift and one-pass multi-axis rolls on the GPU, as users time them.

Each case: the whole call (20 back-to-back calls between two CUDA events,
host work included), one synchronised call at a time, and the device time
alone, each as % of a device-to-device memcpy of the same bytes timed in the
same run (rotate/bench.py's timers). Peers timed the same way, out of place:

* ``roll_rows``: the gather people write today, ``torch.gather(x, 1, idx)``
  and ``cupy.take_along_axis(x, idx, 1)`` with ``idx = (arange(n) - shift) %
  n`` built beforehand (not timed; 8 index bytes per element);
* ``fftshift``: ``torch.fft.fftshift``, ``cupy.fft.fftshift``;
* multi-axis ``roll``: ``torch.roll``, ``cupy.roll`` over the same axes.

Every rotate result is checked against the peer's once. Writes JSON with the
commit, versions and knobs (``--json``) and a plot (``--plot out.png``: % of memcpy, rotate beside the
peers, a panel per function); ``--from RUN.json --plot out.png`` draws an earlier run's file on any
machine, no GPU needed. Without a usable GPU (and torch with CUDA) a run exits with status 1 and says why.
A line on stderr gives the case, i of N, and the time left (``--no-progress``: none).

Run (GPU): ``python benchmarks/rows_gpu_bench.py --json docs/results/gpu-rows-h200.json``; ``--only 15,16,17``
runs issue #9's long rows; ``--cycle-variant chunked --only 8,9,10`` measures the chunked row-cycles kernel
on rows the three-row kernel takes by default (``--cycle-chunk``, ``--cycle-ring`` pin its configuration).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _harness import plots  # noqa: E402  (--plot, --from: the drawing every benchmark shares)

GIB = 1 << 30

# (function, shape, dtype, extra): sizes of 1 and 4 GiB and the 8192 x 8192 complex64 image.
CASES = [
    ("roll_rows", (262144, 1024), "float32", None),     # lanes of 4 KiB, 1 GiB
    ("roll_rows", (65536, 4096), "float32", None),      # lanes of 16 KiB
    ("roll_rows", (16384, 16384), "float32", None),     # lanes of 64 KiB
    ("roll_rows", (1 << 20, 256), "float32", None),     # lanes of 1 KiB
    ("roll_rows", (1 << 24, 16), "float32", None),      # lanes of 64 B
    ("roll_rows", (262144, 4096), "float32", None),     # lanes of 16 KiB, 4 GiB
    ("roll_rows", (8192, 131072), "uint8", None),       # lanes of 128 KiB: one panel buffer a block
    ("roll_rows", (256, 1 << 22), "uint8", None),       # lanes of 4 MiB: beyond a block (lane-walks)
    ("fftshift", (8192, 8192), "complex64", None),      # 512 MiB
    ("fftshift", (16384, 8192), "complex64", None),     # 1 GiB
    ("fftshift", (65536, 8192), "complex64", None),     # 4 GiB
    ("fftshift", (8191, 8193), "complex64", None),      # odd sides
    ("fftshift", (512, 512, 512), "complex64", None),   # 3-D, 1 GiB
    ("roll", (16384, 8192), "complex64", ((1001, 77), (0, 1))),
    ("roll", (32768, 8192), "float32", ((5, -3), (0, 1))),
    # Issue #9's long rows, beyond the three-row kernel (~75 KiB): row-cycles' chunked variant.
    ("fftshift", (16384, 16384), "complex64", None),   # 2 GiB, 128 KiB rows: the first row in shared memory
    ("roll", (8192, 20000), "float64", ((1001, 77), (0, 1))),  # 1.2 GiB, 160 KB rows, one cut cycle
    ("roll", (2048, 262144), "uint8", ((1, 1000), (0, 1))),  # 512 MiB, 256 KiB rows: first rows in scratch
    ("fftshift", (1 << 27,), "complex64", None),       # 1-D, 1 GiB
    ("roll", (65536, 4096), "float32", ((2048,), (1,))),  # one axis by half the row, 1 GiB
    ("roll_rows", (1 << 20, 1024), "float32", None),    # lanes of 4 KiB, 4 GiB
    ("roll_rows", (65536, 16384), "float32", None),     # lanes of 64 KiB, 4 GiB
    # Issue #9's "every size from 16 MiB": smaller arrays, where host work is a larger share of the call.
    ("roll_rows", (4096, 1024), "float32", None),       # lanes of 4 KiB, 16 MiB
    ("roll_rows", (4096, 4096), "float32", None),       # lanes of 16 KiB, 64 MiB
    ("roll_rows", (1024, 65536), "float32", None),      # lanes of 256 KiB, 256 MiB (lane-walks)
    ("roll_rows", (16384, 4096), "float32", None),      # lanes of 16 KiB, 256 MiB
    ("fftshift", (2048, 2048), "complex64", None),      # 32 MiB
    # Around lane-panels' warps variant (2-4 KiB lanes by default): its shortest default lane, and the next
    # length up, which the panel kernel keeps.
    ("roll_rows", (524288, 512), "float32", None),      # lanes of 2 KiB, 1 GiB
    ("roll_rows", (131072, 2048), "float32", None),     # lanes of 8 KiB, 1 GiB
    ("roll", (262144, 1024), "float32", ((5,), (1,))),  # one shift for every 4 KiB row: row-panels
    # Short lanes, for the warps variant's lane groups (half and quarter warps a lane).
    ("roll_rows", (1 << 21, 128), "float32", None),     # lanes of 512 B, 1 GiB
    ("roll_rows", (1 << 22, 64), "float32", None),      # lanes of 256 B, 1 GiB
    # Lanes beyond a block's shared memory (lane-walks) at the gate's other size and a shorter length.
    ("roll_rows", (1024, 1 << 20), "float32", None),    # lanes of 4 MiB, 4 GiB
    ("roll_rows", (1024, 1 << 18), "float32", None),    # lanes of 1 MiB, 1 GiB (lane-swaps since af6e334)
    ("roll_rows", (512, 1 << 19), "float32", None),     # lanes of 2 MiB, 1 GiB
    ("roll_rows", (2048, 1 << 17), "float32", None),    # lanes of 512 KiB, 1 GiB
    # Lanes along a strided axis (extra: the axis): columns of C arrays, column-panels.
    ("roll_rows", (1024, 262144), "float32", 0),        # columns of 1024 items, 1 GiB
    ("roll_rows", (4096, 65536), "float32", 0),         # columns of 4096 items, 1 GiB
    ("roll_rows", (65536, 4096), "float32", 0),         # columns of 65536 items, 1 GiB (staged in scratch)
    ("roll_rows", (512, 512, 1024), "float32", 1),      # a middle axis, 1 GiB
    ("roll_rows", (8191, 32771), "uint8", 0),           # odd sides, 1-byte items, 256 MiB
    ("roll_rows", (2000, 65536), "complex64", 0),       # 8-byte items, 1 GB
]


#: A case's fixed cost in the progress estimate, as bytes of array (compiles, calls, the check; as rotate.bench's).
CASE_OVERHEAD_BYTES = 64 << 20


def case_bytes(index: int) -> int:
    _, shape, dtype, _ = CASES[index]
    return int(np.prod(shape)) * np.dtype(dtype).itemsize


def weights(chosen) -> list:
    """The progress line's expected cost of each chosen case: its array's bytes plus a fixed part (rotate and
    each peer timed three ways, every one on the same bytes)."""
    return [case_bytes(index) + CASE_OVERHEAD_BYTES for index in chosen]


def chosen_cases(only: str) -> list:
    """The case indices ``--only`` names (every case when it is empty); ValueError for one that is not a case."""
    chosen = [int(i) for i in only.split(",") if i] or list(range(len(CASES)))
    bad = [i for i in chosen if not 0 <= i < len(CASES)]
    if bad:
        raise ValueError(f"no case {bad[0]}: the cases are 0 to {len(CASES) - 1}")
    return chosen


def _label(case: dict) -> str:
    """A case on the plot's x axis: its lanes (roll_rows) or shape (and shifts), then its size and dtype."""
    shape = tuple(case["shape"])
    size = f"{plots.size_label(case['nbytes'])} {case['dtype']}"
    if case["function"] == "roll_rows":
        axis = case["args"][0] if case.get("args") else len(shape) - 1
        along = "" if axis == len(shape) - 1 else f" (axis {axis})"
        return f"{plots.size_label(shape[axis] * np.dtype(case['dtype']).itemsize)}{along}\n{size}"
    shifts = f" by {tuple(case['args'][0])}" if case.get("args") else ""
    return f"{shape}{shifts}\n{size}"


def plot(data: dict, path, source="this run") -> dict:
    """The whole call as % of memcpy, rotate beside its out-of-place peers, a panel per function (roll_rows'
    many cases over several); memcpy's line at 100% and the in-place ceiling's where the file records one."""
    cases = [c for c in data["cases"] if "error" not in c]
    panels = []
    for function in dict.fromkeys(c["function"] for c in cases):
        mine = [c for c in cases if c["function"] == function]
        series = {"rotate (in place)": [c["pct_memcpy"] for c in mine]}
        for peer in dict.fromkeys(name for c in mine for name in c.get("peers", {})):
            series[f"{peer} (out of place)"] = [c.get("peers", {}).get(peer, {}).get("pct_memcpy") for c in mine]
        panels += plots.split(function, [_label(c) for c in mine], series,
                              "% of a device-to-device memcpy\n(whole call, back to back)", most=6,
                              xlabel="lane length, array size, dtype" if function == "roll_rows"
                              else "shape (shifts), array size, dtype")
    ceiling = data.get("in_place_ceiling_pct")
    references = [(100.0, "memcpy (100%)" if ceiling else "memcpy (100%); no in-place ceiling recorded in this file")]
    if ceiling:
        references.append((float(ceiling), f"in-place ceiling ({float(ceiling):.0f}%)"))
    return plots.bars(panels, path, references=references, sources=[plots.source(source, data)],
                      title="benchmarks/rows_gpu_bench.py: roll_rows, fftshift and multi-axis rolls on the GPU, as % "
                            f"of memcpy's speed (higher is better; median of {data.get('repeat')})")


def gpu_missing():
    """Why this machine cannot run the benchmark (no usable CUDA GPU, or no torch with CUDA), or None."""
    from rotate import bench

    if not bench.gpu_available():
        return "no usable CUDA GPU here (numba-cuda missing, the simulator, or no device)"
    try:
        import torch
    except ImportError:
        return "torch is not installed: the benchmark's arrays and peers are torch's (pip install torch)"
    if not torch.cuda.is_available():
        return "torch has no CUDA here (a CPU build?): the benchmark's arrays and peers are torch's"
    return None


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--only", default="", help="comma-separated case indices")
    parser.add_argument("--cycle-variant", choices=["three-rows", "chunked", "chunked-scratch"],
                        help="force a row-cycles variant (default: the planner's pick)")
    parser.add_argument("--cycle-chunk", type=int, help="the chunked variant's chunk bytes (a multiple of 16)")
    parser.add_argument("--cycle-ring", type=int, choices=[2, 3, 4], help="the chunked variant's ring depth")
    parser.add_argument("--set", action="append", default=[], metavar="KNOB=VALUE",
                        help="a planner setting, e.g. half_swaps=False (a Python literal; repeatable)")
    parser.add_argument("--no-peers", action="store_true", help="time rotate only (knob sweeps)")
    parser.add_argument("--max-scratch", type=int, default=None,
                        help="max_scratch_bytes for the multi-axis roll cases (default: the library's bound)")
    parser.add_argument("--no-progress", action="store_true", help="no progress line on stderr")
    plots.add_arguments(parser)
    args = parser.parse_args(argv)
    replotted = plots.replot(args, parser, plot, "rows_gpu_bench")
    if replotted is not None:
        return replotted
    try:
        args.chosen = chosen_cases(args.only)
    except ValueError as exc:
        parser.error(f"--only: {exc}")
    missing = gpu_missing()
    if missing:
        print(f"rows_gpu_bench.py times the GPU only: {missing}. On any machine, --from RUN.json --plot out.png "
              f"draws an earlier run (e.g. docs/results/gpu-rows-65d666e-h200.json)", file=sys.stderr)
        return 1
    from _harness import knobs

    forced = {k: v for k, v in (("cycle_variant", args.cycle_variant), ("cycle_chunk_bytes", args.cycle_chunk),
                                ("cycle_ring", args.cycle_ring)) if v is not None}
    forced.update(knobs.parse_settings(args.set))
    with knobs.gpu_override(**forced):
        return _run(args)


def _run(args) -> int:

    import torch
    from numba import cuda

    import rotate
    from rotate.bench import Progress
    from _harness import timing
    from _harness.provenance import environment

    try:
        import cupy
    except ImportError:
        cupy = None
    stream = cuda.default_stream()
    timers = (*timing.whole_call_timers(cuda, stream), timing.events_timer(cuda, stream))
    rows = []

    def document():
        return {"benchmark": "rows_gpu_bench", "environment": environment(gpu=True), "repeat": args.repeat,
                "cases": rows}

    progress = Progress(weights(args.chosen), enabled=not args.no_progress)
    log = progress.log(print)
    for index in args.chosen:
        function, shape, dtype, _ = CASES[index]
        progress.step(f"case {index}, {function} {shape} {dtype}")
        try:
            rows.append(_case(index, args, torch, cuda, cupy, rotate, timing, timers, stream, log))
        except Exception as exc:  # one failing case must not lose the others' numbers
            log(f"[{index}] {CASES[index]}: {type(exc).__name__}: {exc}", flush=True)
            rows.append({"case": index, "error": f"{type(exc).__name__}: {exc}"})
        torch.cuda.empty_cache()
        if args.json:
            pathlib.Path(args.json).write_text(json.dumps(document(), indent=1, default=str))
    progress.finish()
    plots.write(args, plot, document())
    return 0 if all(r.get("correct") for r in rows) else 1


def _case(index, args, torch, cuda, cupy, rotate, timing, timers, stream, log=print):
    function, shape, dtype, extra = CASES[index]
    tdtype = getattr(torch, dtype)
    nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
    gen = torch.Generator(device="cuda").manual_seed(index)
    if dtype == "uint8":
        x = torch.randint(0, 256, shape, dtype=torch.uint8, device="cuda", generator=gen)
    else:
        x = torch.rand(shape, dtype=tdtype, device="cuda", generator=gen)
    original = x.clone()
    copy, _keep = timing.memcpy(cuda, nbytes, stream)
    memcpy_ms = timers[2](copy, args.repeat)
    peers = {}
    if function == "roll_rows":
        axis = len(shape) - 1 if extra is None else extra
        n = shape[axis]
        shifts = torch.randint(-n, n, shape[:axis] + shape[axis + 1:], device="cuda", dtype=torch.int64,
                               generator=gen)
        along = [1] * len(shape)
        along[axis] = n
        idx = (torch.arange(n, device="cuda").reshape(along) - shifts.unsqueeze(axis)) % n
        call = lambda: rotate.roll_rows(x, shifts, axis)  # noqa: E731
        plan = rotate.plan_roll_rows(x, shifts, axis)
        peers["torch.gather"] = lambda: torch.gather(x, axis, idx)
        want = torch.gather(original, axis, idx)
        if cupy is not None:
            cx, cidx = cupy.asarray(x), cupy.asarray(idx)
            peers["cupy.take_along_axis"] = lambda: cupy.take_along_axis(cx, cidx, axis)
    elif function == "fftshift":
        call = lambda: rotate.fftshift(x)  # noqa: E731
        plan = rotate.plan(x, [s // 2 for s in shape], tuple(range(len(shape))))
        want = torch.fft.fftshift(original)
        peers["torch.fft.fftshift"] = lambda: torch.fft.fftshift(x)
        if cupy is not None:
            cx = cupy.asarray(x)
            peers["cupy.fft.fftshift"] = lambda: cupy.fft.fftshift(cx)
    else:
        shift, axes = extra
        call = lambda: rotate.roll(x, shift, axes, max_scratch_bytes=args.max_scratch)  # noqa: E731
        plan = rotate.plan(x, shift, axes, max_scratch_bytes=args.max_scratch)
        want = torch.roll(original, shift, axes)
        peers["torch.roll"] = lambda: torch.roll(x, shift, axes)
        if cupy is not None:
            cx = cupy.asarray(x)
            peers["cupy.roll"] = lambda: cupy.roll(cx, shift, axes)
    call()
    torch.cuda.synchronize()
    correct = bool(torch.equal(x, want))
    del want
    x.copy_(original)
    del original
    plan_traffic = {}
    if function == "roll_rows" and plan.steps and plan.steps[0].details.get("bytes_moved_is_bound"):
        # The plan's traffic is a bound; the exact count replays the kernel's decisions on the host.
        from _harness import knobs

        host = shifts.cpu().numpy()
        if plan.algorithm == "lane-walks":
            moved, walked = knobs.walk_traffic(plan.steps[0], host)
            plan_traffic = {"traffic_exact_over_2n": moved / (2 * nbytes), "lanes_walked": walked}
        else:
            exact = rotate.plan_roll_rows(x, host, axis)
            if exact.algorithm == plan.algorithm:
                plan_traffic = {"traffic_exact_over_2n": exact.bytes_moved / (2 * nbytes)}
    result = {"function": function, "shape": list(shape), "dtype": dtype, "nbytes": nbytes,
              "args": None if extra is None else [extra] if function == "roll_rows" else [list(extra[0]),
                                                                                         list(extra[1])],
              "algorithm": plan.algorithm, "scratch_bytes": plan.scratch_bytes,
              "traffic_over_2n": plan.bytes_moved / (2 * nbytes), "correct": correct,
              "memcpy_ms": memcpy_ms, **plan_traffic,
              "details": {k: v for k, v in plan.steps[0].details.items() if not k.startswith("_")
                          and isinstance(v, (int, float, str, bool))} if plan.steps else {}}
    # Rolling back and forth keeps the data meaningful; every call moves every byte either way.
    result.update(timing.with_pct(timing.time_all_ways(call, timers, args.repeat), memcpy_ms))
    result["peers"] = {}
    result["knobs"] = {k: v for k, v in (x.partition("=")[::2] for x in args.set)}
    if args.max_scratch is not None:
        result["knobs"]["max_scratch_bytes"] = str(args.max_scratch)
    for name, peer in ({} if args.no_peers else peers).items():
        try:
            result["peers"][name] = timing.with_pct(timing.time_all_ways(peer, timers, args.repeat), memcpy_ms)
        except Exception as exc:  # out of memory for the gather's index or output
            result["peers"][name] = {"error": f"{type(exc).__name__}: {str(exc)[:120]}"}
        torch.cuda.empty_cache()
        if cupy is not None:
            cupy.get_default_memory_pool().free_all_blocks()
    peer_text = ", ".join(f"{k} {v.get('pct_memcpy', float('nan')):.0f}%" for k, v in result["peers"].items())
    variant = plan.steps[0].details.get("variant") if plan.steps else None
    log(f"[{index}] {function} {shape} {dtype}: {plan.algorithm}{f' ({variant})' if variant else ''} "
        f"correct={correct} whole "
        f"{result['pct_memcpy']:.1f}% (sync {result['sync_pct_memcpy']:.1f}%) device "
        f"{result['device_pct_memcpy']:.1f}% of memcpy ({memcpy_ms:.3f} ms); peers: {peer_text}", flush=True)
    return result  # the arrays go with this frame; the caller empties the cache


if __name__ == "__main__":
    sys.exit(main())
