"""Distributed in-place roll on several GPUs (NCCL): correctness first, then time against its bound.

    NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 \\
        python3 -m torch.distributed.run --nproc_per_node=2 benchmarks/dist_bench.py --json out/dist.json

1. Correctness with NCCL: small even and uneven splits, shifts within and
   across shards, several dtypes, a DTensor; every result compared with
   torch.roll of the gathered tensor. Prints PASS or FAIL (and exits 1 on FAIL).
2. Timing (CUDA events, medians over ranks' maxima) for global arrays of 1, 8
   and 64 GiB, shifts within a shard and across shards, against the bound
   ``max(local in-place pass of one shard, NCCL exchange of the same bytes)``,
   both measured in the same run: the local pass is ``rotate.roll`` of the
   shard by the same local shift, the exchange one ``batch_isend_irecv`` of
   exactly the bytes the roll sends (and, to explain the gap, the same bytes
   in chunks of the roll's staging size).

NVLink multicast stays off (the three variables above are set here too,
before torch.distributed is imported); nothing here uses multicast.
"""

import os

for _var, _value in (("NCCL_NVLS_ENABLE", "0"), ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"),
                     ("NVSHMEM_DISABLE_NVLS", "1")):
    os.environ.setdefault(_var, _value)

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import rotate  # noqa: E402
import rotate.distributed as rd  # noqa: E402

GiB = 1 << 30
MiB = 1 << 20


def log(*args):
    if dist.get_rank() == 0:
        print(*args, flush=True)


def gather_bytes(local, lengths, like):
    """The global tensor from every rank's piece: zero-padded copies summed byte-wise (exact)."""
    rank = dist.get_rank()
    start = sum(lengths[:rank])
    whole = torch.zeros_like(like)
    whole[start:start + lengths[rank]] = local
    dist.all_reduce(whole.view(torch.uint8))
    return whole


def same(a, b):
    return a.shape == b.shape and torch.equal(a.contiguous().view(torch.uint8), b.contiguous().view(torch.uint8))


def correctness(device):
    world, rank = dist.get_world_size(), dist.get_rank()
    failures = []
    cases = 0
    gen = torch.Generator(device=device).manual_seed(1)
    layouts = {"even": [4099] * world, "uneven": [4099 + 1000 * r for r in range(world)],
               "empty": [5000] * (world - 1) + [0]}
    for name, lengths in layouts.items():
        n = sum(lengths)
        for dtype in (torch.uint8, torch.float32, torch.float64, torch.bfloat16):
            for shift in (0, 1, 17, -5, 4098, 4099, 4100, n // 2 + 3, -n + 7, 3 * n + 11):
                for staging in (None, 3000):
                    cases += 1
                    full = torch.randint(1, 255, (n * torch.empty((), dtype=dtype).element_size(),),
                                         dtype=torch.uint8, device=device, generator=gen).view(dtype)
                    start = sum(lengths[:rank])
                    local = full[start:start + lengths[rank]].clone()
                    kwargs = {"staging_bytes": staging} if staging else {}
                    what = f"{name} {lengths[:3]} {dtype} shift {shift} staging {staging}"
                    try:
                        rd.roll(local, shift, **kwargs)
                        got = gather_bytes(local, lengths, full)
                        if not same(got, torch.roll(full, shift % n)):
                            failures.append(f"{what}: wrong result")
                    except Exception as exc:  # noqa: BLE001 - reported, then FAIL
                        failures.append(f"{what}: {type(exc).__name__}: {exc}")
    try:
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.tensor import Shard, distribute_tensor
        mesh = init_device_mesh(device.type, (world,))
        for shape, shift, axis in (((4 * world + 1, 33), 5, 0), ((4 * world + 1, 33), -40, 0),
                                   ((6, 8 * world), 9, 1), ((4 * world, 7), 3, 1)):
            cases += 1
            full = torch.randn(shape, device=device, generator=gen)
            dt = distribute_tensor(full.clone(), mesh, [Shard(0)] if axis == 0 or shape[1] == 7 else [Shard(1)])
            rotate.roll(dt, shift, axis)
            if not same(dt.full_tensor(), torch.roll(full, shift, axis)):
                failures.append(f"DTensor {shape} shift {shift} axis {axis}: wrong result")
    except Exception as exc:  # noqa: BLE001
        failures.append(f"DTensor: {type(exc).__name__}: {exc}")
    return cases, failures


def timed(fn, reps, device):
    """Median over reps of the slowest rank's CUDA-event time (ms)."""
    times = []
    cuda = device.type == "cuda"
    for _ in range(reps):
        if cuda:
            torch.cuda.synchronize(device)
        dist.barrier()
        if cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            ms = start.elapsed_time(end)
        else:  # --smoke-cpu: wall time
            t0 = time.perf_counter()
            fn()
            ms = (time.perf_counter() - t0) * 1e3
        t = torch.tensor([ms], device=device, dtype=torch.float64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        times.append(t.item())
    return statistics.median(times), times


def exchange(src, recv, peer_send, peer_recv, chunk=None):
    """batch_isend_irecv of src to peer_send and recv from peer_recv, whole or in chunks."""
    n = src.numel()
    step = n if chunk is None else max(1, chunk)
    for off in range(0, n, step):
        ops = [dist.P2POp(dist.isend, src[off:off + step], peer_send),
               dist.P2POp(dist.irecv, recv[off:off + step], peer_recv)]
        for w in dist.batch_isend_irecv(ops):
            w.wait()


def fill_pattern(x, start):
    """x[i] = (start + i) mod 251, in pieces (so a 32 GiB shard needs no 64-bit index array)."""
    piece = 1 << 26
    for off in range(0, x.numel(), piece):
        idx = torch.arange(start + off, start + min(x.numel(), off + piece), device=x.device, dtype=torch.int64)
        x[off:off + piece] = (idx % 251).to(x.dtype)


def check_pattern(x, start, n, total_shift, samples=4096):
    """new[g] = old[(g - shift) mod N] on sampled positions of this rank's shard."""
    if x.numel() == 0:
        return True
    pos = torch.randint(0, x.numel(), (samples,), device=x.device)
    want = (((pos + start - total_shift) % n) % 251).to(x.dtype)
    return bool(torch.equal(x[pos], want))


def bench_size(total_bytes, dtype, staging, reps, device):
    world, rank = dist.get_world_size(), dist.get_rank()
    itemsize = torch.empty((), dtype=dtype).element_size()
    n = total_bytes // itemsize
    lengths = [n // world + (r < n % world) for r in range(world)]
    length = lengths[rank]
    start = sum(lengths[:rank])
    shard = torch.empty(length, dtype=dtype, device=device)
    fill_pattern(shard, start)
    rows = []
    shifts = {"within (4097)": 4097, "within (L/3+1)": length // 3 + 1,
              "across (L+L/3+1)": lengths[0] + lengths[0] // 3 + 1, "across (L: halves swap)": lengths[0]}
    applied = 0
    for label, shift in shifts.items():
        p = rd.plan(shard, shift, staging_bytes=staging)
        sent = p.bytes_sent[rank]
        local_shift = shift % length if p.algorithm.startswith("even") else None
        t_roll, all_roll = timed(lambda: rd.roll(shard, shift, staging_bytes=staging), reps, device)
        applied += shift * reps
        ok = check_pattern(shard, start, n, applied)
        flag = torch.tensor([0 if ok else 1], device=device)
        dist.all_reduce(flag)
        # The two halves of the bound, same run.
        t_local = 0.0
        if local_shift:
            t_local, _ = timed(lambda: rotate.roll(shard, local_shift), reps, device)
            # Undo the local passes so the pattern check of the next shift stays simple.
            for _ in range(reps):
                rotate.roll(shard, -local_shift)
        t_nccl = t_chunked = 0.0
        if sent:
            recv = torch.empty(sent, dtype=torch.uint8, device=device)
            src = shard.view(torch.uint8)[:sent]
            peer_send, peer_recv = (rank + 1) % world, (rank - 1) % world
            t_nccl, _ = timed(lambda: exchange(src, recv, peer_send, peer_recv), reps, device)
            t_chunked, _ = timed(lambda: exchange(src, recv, peer_send, peer_recv, p.details["chunk_bytes"]),
                                 reps, device)
            del recv
            empty_cache(device)
        bound = max(t_local, t_nccl)
        row = {"global_bytes": total_bytes, "dtype": str(dtype).replace("torch.", ""), "shift": shift,
               "label": label, "algorithm": p.algorithm, "staging_bytes": staging,
               "plan_staging_bytes": p.staging_bytes, "plan_pack_bytes": p.pack_bytes,
               "local_scratch_bytes": p.local_scratch_bytes, "shard_bytes": length * itemsize,
               "bytes_sent_per_rank": list(p.bytes_sent), "rounds": p.rounds,
               "t_roll_ms": t_roll, "t_roll_all_ms": all_roll, "t_local_pass_ms": t_local,
               "t_nccl_exchange_ms": t_nccl, "t_nccl_chunked_ms": t_chunked, "bound_ms": bound,
               "bound_over_roll": bound / t_roll if t_roll else None,
               "roll_over_local": t_roll / t_local if t_local else None,
               "nccl_fraction": t_nccl / t_roll if t_nccl and t_roll else None,
               "nccl_gbps_both_dirs": 2 * sent / t_nccl / 1e6 if t_nccl else None,
               "correct": not flag.item()}
        rows.append(row)
        log(f"{total_bytes / GiB:7.3f} GiB {row['dtype']:>8} {label:<24} {p.algorithm:<20} "
            f"stg {staging // MiB:4d} MiB  roll {t_roll:9.3f} ms  local {t_local:8.3f}  nccl {t_nccl:8.3f} "
            f"(chunked {t_chunked:8.3f})  bound/roll {row['bound_over_roll'] or 0:5.2f}  "
            f"{'ok' if row['correct'] else 'WRONG'}")
    del shard
    empty_cache(device)
    return rows


def empty_cache(device):
    if device.type == "cuda":
        torch.cuda.empty_cache()


def free_bytes(device):
    if device.type == "cuda":
        return torch.cuda.mem_get_info(device)[0]
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES") // max(1, dist.get_world_size())


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", help="write results here")
    ap.add_argument("--sizes-gib", default="1,8,64", help="global sizes in GiB (comma-separated)")
    ap.add_argument("--dtype", default="float32", choices=["uint8", "float32"])
    ap.add_argument("--staging-mib", default="64,256", help="staging per rank (MiB, comma-separated)")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--skip-check", action="store_true", help="skip the correctness pass")
    ap.add_argument("--smoke-cpu", action="store_true",
                    help="exercise this script on CPU ranks with gloo (sizes then count MiB, not GiB)")
    args = ap.parse_args()

    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if args.smoke_cpu:
        device = torch.device("cpu")
        dist.init_process_group("gloo")
        unit = MiB
        gpu, nccl = "cpu (smoke)", "none"
    else:
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
        dist.init_process_group("nccl", device_id=device)
        unit = GiB
        version = torch.cuda.nccl.version()
        nccl = ".".join(map(str, version)) if isinstance(version, tuple) else str(version)
        gpu = torch.cuda.get_device_name(device)
    world = dist.get_world_size()
    log(f"{world} ranks, {gpu}; torch {torch.__version__}, NCCL {nccl}")

    result = {"versions": {}, "knobs": {}, "correctness": {}, "rows": []}
    import numpy
    import numba
    versions = {"torch": torch.__version__, "numpy": numpy.__version__, "numba": numba.__version__,
                "nccl": nccl, "python": platform.python_version(),
                "gpu": gpu, "world_size": world, "rotate": rotate.__version__}
    try:
        import importlib.metadata as md
        versions["numba-cuda"] = md.version("numba-cuda")
    except Exception:  # noqa: BLE001
        pass
    result["versions"] = versions
    result["knobs"] = {k: os.environ.get(k) for k in ("NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST",
                                                     "NVSHMEM_DISABLE_NVLS", "NCCL_ALGO", "NCCL_PROTO")}
    result["knobs"].update({"dtype": args.dtype, "reps": args.reps, "staging_mib": args.staging_mib,
                            "sizes_gib": args.sizes_gib, "default_staging_bytes": rd.DEFAULT_STAGING_BYTES})

    if not args.skip_check:
        t0 = time.perf_counter()
        cases, failures = correctness(device)
        gathered = [None] * world
        dist.all_gather_object(gathered, failures)
        failures = [f"rank {r}: {f}" for r, fs in enumerate(gathered) for f in fs]
        verdict = "PASS" if not failures else "FAIL"
        log(f"correctness with {dist.get_backend().upper()}: {verdict} ({cases} cases per rank, {time.perf_counter() - t0:.0f} s)")
        for f in failures[:20]:
            log("  ", f)
        result["correctness"] = {"verdict": verdict, "cases": cases, "failures": failures[:200]}
        if failures:
            if args.json and dist.get_rank() == 0:
                Path(args.json).parent.mkdir(parents=True, exist_ok=True)
                Path(args.json).write_text(json.dumps(result, indent=1))
            dist.destroy_process_group()
            sys.exit(1)

    dtype = getattr(torch, args.dtype)
    for size in [float(s) for s in args.sizes_gib.split(",") if s]:
        total_bytes = int(size * unit)
        need = 2 * total_bytes // world + 512 * MiB  # shard + exchange buffer of up to a shard
        free = free_bytes(device)
        fits = torch.tensor([1 if free >= need else 0], device=device)
        dist.all_reduce(fits, op=dist.ReduceOp.MIN)
        if not fits.item():
            log(f"{size:g} GiB: skipped, needs {need / GiB:.1f} GiB free per GPU")
            result["rows"].append({"global_bytes": total_bytes, "skipped": "memory"})
            continue
        for staging_mib in [int(s) for s in args.staging_mib.split(",") if s]:
            result["rows"].extend(bench_size(total_bytes, dtype, staging_mib * MiB, args.reps, device))
            if args.json and dist.get_rank() == 0:  # keep what we have if a later size dies
                Path(args.json).parent.mkdir(parents=True, exist_ok=True)
                Path(args.json).write_text(json.dumps(result, indent=1))

    if dist.get_rank() == 0:
        log("\nsize  label                    staging  roll ms   bound ms  bound/roll  roll/local  nccl share")
        for r in result["rows"]:
            if "skipped" in r:
                continue
            log(f"{r['global_bytes'] / GiB:7.3f}  {r['label']:<24} {r['staging_bytes'] // MiB:5d}  "
                f"{r['t_roll_ms']:8.3f}  {r['bound_ms']:8.3f}  {r['bound_over_roll'] or 0:9.2f}  "
                f"{r['roll_over_local'] or 0:9.2f}  {r['nccl_fraction'] or 0:9.2f}")
        if args.json:
            Path(args.json).parent.mkdir(parents=True, exist_ok=True)
            Path(args.json).write_text(json.dumps(result, indent=1))
            log(f"wrote {args.json}")
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
