"""Where does a chain launch's time go, block by block: pre-reads, waits, the slowest lane's tail?

Backs: `cuda.co_resident_even_slack`, `PRE_GROUP_VECS`, `PRE_GROUP_MAX` (docs/tuning.md, "GPU: co-resident
chains", "GPU: pre-reads"), from docs/results/chain-trace-*.json.

Where a chain launch's time goes, block by block (GPU; a diagnostic, not a benchmark of record).

Runs the planner's chain plan for each shift twice: as the product runs it
(device time, CUDA events, median of ``--repeat``), then with
``chain_kernel(trace=address)``, where every block of the pipelined
kernel records its start, the end of its pre-reads and its end
(``%globaltimer``, one clock for all SMs), its SM, its lane, and how its
producer, decoder and first data thread spent their cycles (``%clock64``):
waiting for copies to land, for other lanes' readers, for the block's own
ring, for the writes, for the decoder (``_kernels.TRACE_FIELDS``).
The traced launch is checked against ``numpy.roll``.

    python benchmarks/probes/chain_trace.py --sizes 1G,4G --shifts rand0,rand1,n/3 --json trace.json

Per launch it prints the kernel's span, the pre-read phase, the spread of
the blocks' end times, the share of each producer's loop cycles spent in
each wait, and the blocks' mean end time grouped by how many blocks shared
their SM. ``--raw`` adds every block's record to the JSON.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys

import numpy as np
from rotate._tuning import cuda as cuda_tuning


def parse_size(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(float(text[:-1]) * units[text[-1]]) if text[-1] in units else int(text)


def summarise(records: np.ndarray, fields) -> dict:
    """Where the blocks' time went: the launch's span, the phases, and the producers' cycle shares."""
    f = {name: records[:, i].astype(np.float64) for i, name in enumerate(fields)}
    t0 = f["t_start"].min()
    end = f["t_end"] - t0
    walk_ns = f["t_end"] - f["t_pre_done"]
    cycles_per_ns = float(np.median(f["P_loop"] / np.maximum(walk_ns, 1)))
    loop = f["P_loop"].sum()
    waits = ("P_load_wait", "P_reader_wait", "P_ring_wait", "P_written_wait", "P_decoded_wait", "P_issue")
    shares = {name[2:]: round(float(f[name].sum() / loop), 4) for name in waits}
    shares["other"] = round(1 - sum(shares.values()), 4)
    per_sm = {}
    sms = f["sm"].astype(np.int64)
    counts = np.bincount(sms)
    for blocks_on_sm in sorted(set(counts[sms].tolist())):
        on = counts[sms] == blocks_on_sm
        per_sm[int(blocks_on_sm)] = {
            "blocks": int(on.sum()), "mean_end_us": round(float(end[on].mean()) / 1e3, 2),
            "load_wait_share": round(float(f["P_load_wait"][on].sum() / f["P_loop"][on].sum()), 4),
            "reader_wait_share": round(float(f["P_reader_wait"][on].sum() / f["P_loop"][on].sum()), 4)}
    slow = np.argsort(-end)[:5]
    written = f["W_wait"] + f["W_write"]
    return {
        "blocks": int(records.shape[0]),
        "span_us": round(float(end.max()) / 1e3, 2),
        "pre_phase_us": {"median": round(float(np.median(f["t_pre_done"] - t0)) / 1e3, 2),
                         "max": round(float((f["t_pre_done"] - t0).max()) / 1e3, 2)},
        "end_us": {q: round(float(np.quantile(end, p)) / 1e3, 2)
                   for q, p in (("min", 0), ("p10", .1), ("median", .5), ("p90", .9), ("max", 1))},
        "items": {"min": int(f["items"].min()), "max": int(f["items"].max())},
        "sm_cycles_per_ns": round(cycles_per_ns, 3),
        "producer_shares": shares,
        "producer_reader_wait_max_us": round(float(f["P_reader_wait_max"].max() / cycles_per_ns) / 1e3, 2),
        "writer_wait_share": round(float(f["W_wait"].sum() / written.sum()), 4),
        "decoder_shares": {"decode": round(float(f["Dec_decode"].sum() / loop), 4),
                           "free_wait": round(float(f["Dec_free_wait"].sum() / loop), 4)},
        "by_blocks_on_sm": per_sm,
        "slowest_blocks": [{"lane": int(f["lane"][b]), "sm": int(sms[b]), "end_us": round(float(end[b]) / 1e3, 2),
                            "items": int(f["items"][b]),
                            "load_wait": round(float(f["P_load_wait"][b] / f["P_loop"][b]), 3),
                            "reader_wait": round(float(f["P_reader_wait"][b] / f["P_loop"][b]), 3)}
                           for b in slow],
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1G")
    parser.add_argument("--shifts", default="rand0,rand1,n/3")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--set", action="append", default=[], metavar="KNOB=VALUE")
    parser.add_argument("--max-scratch", type=int, help="max_scratch_bytes of every call (default: the planner's)")
    parser.add_argument("--constant", action="append", default=[], metavar="NAME=VALUE",
                        help="set a planner module constant (part of the plan key), e.g. CO_RESIDENT_EVEN_SLACK=-1")
    parser.add_argument("--raw", action="store_true")
    parser.add_argument("--json")
    args = parser.parse_args(argv)

    import cupy
    from numba import cuda

    import rotate
    from rotate._cuda import _kernels
    from rotate._cuda import runtime as gpu_runtime
    from rotate._cuda.schedules import chain as gpu_chain
    from rotate._provenance import environment
    from rotate.bench import _events_timer, shift_elements

    constants = {}
    for item in args.constant:  # formerly planner module constants: tuning fields now (lower case)
        name, value = item.split("=", 1)
        constants[name.lower()] = json.loads(value)
    knobs = dict(constants)
    for item in args.set:
        key, value = item.split("=", 1)
        knobs[key] = json.loads(value) if value[:1] in "0123456789-[{tn" else value
    stream = cuda.default_stream()
    time_it = _events_timer(cuda, stream)
    fields = _kernels.TRACE_FIELDS
    trace = cupy.zeros((4096, len(fields)), np.int64)
    plain_kernel = _kernels.chain_kernel
    rows = []
    with cuda_tuning.override(**knobs):
        for size in (parse_size(s) for s in args.sizes.split(",")):
            copy_src = cupy.empty(size, np.uint8)
            copy_dst = cupy.empty(size, np.uint8)
            memcpy_ms = time_it(lambda: copy_dst.__setitem__(Ellipsis, copy_src), args.repeat)
            del copy_src, copy_dst
            x = cupy.random.randint(0, 256, size, dtype=cupy.uint8)
            for label in args.shifts.split(","):
                s = shift_elements(label, size, 1)
                p = rotate.plan(x, s, max_scratch_bytes=args.max_scratch)
                row = {"size_bytes": size, "shift_label": label, "shift": s, "algorithm": p.algorithm,
                       "co_resident": p._detail("co_resident"), "lanes": p._detail("lanes"),
                       "tile_bytes": p.tile_bytes, "grid": p.grid, "pre_read_bytes": p._detail("pre_read_bytes"),
                       "memcpy_ms": memcpy_ms}
                if p.algorithm != "chain":
                    print(f"{size >> 20} MiB {label}: {p.algorithm}, not traced", flush=True)
                    rows.append(row)
                    continue
                row["device_ms"] = time_it(lambda: rotate.roll(x, s, max_scratch_bytes=args.max_scratch), args.repeat)
                _kernels.chain_kernel = functools.partial(plain_kernel, trace=int(trace.data.ptr))
                gpu_chain._compiled_chain.cache_clear()
                gpu_runtime._prepared.clear()
                try:
                    rotate.roll(x, s, max_scratch_bytes=args.max_scratch)  # compiles the traced kernel
                    before = cupy.asnumpy(x)
                    trace[...] = 0
                    start, stop = cuda.event(), cuda.event()
                    start.record(stream)
                    rotate.roll(x, s, max_scratch_bytes=args.max_scratch)
                    stop.record(stream)
                    stop.synchronize()
                    row["traced_ms"] = cuda.event_elapsed_time(start, stop)
                    row["correct"] = bool(np.array_equal(cupy.asnumpy(x), np.roll(before, s)))
                    del before
                finally:
                    _kernels.chain_kernel = plain_kernel
                    gpu_chain._compiled_chain.cache_clear()
                    gpu_runtime._prepared.clear()
                records = cupy.asnumpy(trace[: p.grid])
                row["pct_memcpy"] = round(100 * memcpy_ms / row["device_ms"], 1)
                row["trace"] = summarise(records, fields)
                if args.raw:
                    row["records"] = records.tolist()
                t = row["trace"]
                print(f"{size >> 20} MiB {label}: lanes {row['lanes']} tile {row['tile_bytes']} "
                      f"{row['pct_memcpy']}% (traced {100 * memcpy_ms / row['traced_ms']:.1f}%) "
                      f"correct={row['correct']} span {t['span_us']} us pre {t['pre_phase_us']} "
                      f"end {t['end_us']}\n    producer {t['producer_shares']} max reader wait "
                      f"{t['producer_reader_wait_max_us']} us; writer waits {t['writer_wait_share']}; decoder "
                      f"{t['decoder_shares']}\n    by SM {t['by_blocks_on_sm']}\n"
                      f"    slowest {t['slowest_blocks'][:3]}", flush=True)
                rows.append(row)
            del x
    result = {"benchmark": "chain_trace", "environment": environment(gpu=True), "knobs": knobs, "constants": constants,
              "arguments": vars(args), "fields": list(fields), "rows": rows}
    if args.json:
        with open(args.json, "w") as out:
            json.dump(result, out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
