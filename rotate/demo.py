"""The main job: roll a large array in place, check it against numpy, time it.

Run ``python -m rotate.demo`` (``--size 1G``, ``--cpu``, ``--dtype float32``,
``--shift N``). On a machine with a CUDA GPU (and numba-cuda) it rolls a
device array with the GPU backend; otherwise a numpy array with the CPU
backend. It prints the plan, whether the result equals ``numpy.roll`` after
every timed call, and the time as a percentage of a plain copy's time of the
same bytes (a copy is the speed of light of an in-place rotate, which reads
and writes every byte once), with the speed (GB/s, read + write) beside it.
On the CPU the threaded roll is compared with a copy on as many threads, and
a single-threaded roll with ``np.copyto`` (single-threaded). On the GPU the
headline is the whole call as a user times it (host work included, calls
back to back); device time alone follows. The GPU run also prints CuPy's and
PyTorch's out-of-place roll (whole calls too) when they are installed.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

import rotate


def parse_size(text: str) -> int:
    """'64M' -> 67108864; accepts K, M, G suffixes (powers of 1024)."""
    text = text.strip().upper()
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
    number = text[:-1] if text[-1:] in "KMG" else text
    return int(float(number) * scale)


def gpu_available() -> bool:
    try:
        from numba import cuda
        from numba.core import config

        return not config.ENABLE_CUDASIM and cuda.is_available()
    except Exception:
        return False


def _median_time(fn, repeat: int, check=None) -> float:
    """Median wall time of ``fn()``; ``check()`` runs after every call, outside the timing."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
        if check is not None:
            check()
    return statistics.median(times)


def _report(what: str, n_bytes: int, t: float, peer: str, peer_t: float) -> None:
    print(f"  {what}: time {t * 1e3:.2f} ms = {100 * t / peer_t:.0f}% of {peer}'s time "
          f"({peer_t * 1e3:.2f} ms); speed {2 * n_bytes / t / 1e9:.1f} GB/s read + write "
          f"= {peer_t / t:.2f}x {peer}'s speed")


def run_cpu(n_bytes: int, dtype: np.dtype, shift: int, repeat: int) -> bool:
    import numba

    n = n_bytes // dtype.itemsize
    n_bytes = n * dtype.itemsize
    rng = np.random.default_rng(0)
    a = rng.integers(0, 256, n_bytes, dtype=np.uint8).view(dtype)
    original = a.copy()
    plan = rotate.plan(a, shift)
    print(plan)
    if not plan.steps:
        rotate.roll(a, shift)
        ok = bool(np.array_equal(a.view(np.uint8), original.view(np.uint8)))
        print(f"shift {shift} moves nothing (plan: noop); result equals numpy.roll: {ok}; nothing to time")
        return ok
    calls = [0]  # rolls done so far: a must equal numpy.roll(original, calls * shift)
    failures = []

    def check():
        expected = np.roll(original, calls[0] * shift)
        if not np.array_equal(a.view(np.uint8), expected.view(np.uint8)):
            failures.append(calls[0])

    def roll():
        rotate.roll(a, shift)
        calls[0] += 1

    start = time.perf_counter()
    roll()  # first call includes numba's compile (cached on disk afterwards)
    first = time.perf_counter() - start
    check()
    threads = numba.get_num_threads()
    copy_target = np.empty_like(a)
    words_src, words_dst = a.view(np.uint8), copy_target.view(np.uint8)
    from .bench import parallel_copy_kernel

    parallel_copy = parallel_copy_kernel()
    parallel_copy(words_dst, words_src, threads)  # compile
    t_multi = _median_time(roll, repeat, check)
    c_multi = _median_time(lambda: parallel_copy(words_dst, words_src, threads), repeat)
    numba.set_num_threads(1)
    try:
        t_single = _median_time(roll, repeat, check)
    finally:
        numba.set_num_threads(threads)
    c_single = _median_time(lambda: np.copyto(copy_target, a), repeat)
    ok = not failures
    print(f"result equals numpy.roll after every call ({calls[0]} calls, first with compile: "
          f"{first * 1e3:.1f} ms): {ok}" + ("" if ok else f"; wrong after calls {failures}"))
    print(f"CPU in-place roll of {n_bytes / 2**20:.0f} MiB {dtype} by {shift} (median of {repeat}):")
    _report(f"{threads} threads", n_bytes, t_multi, f"a {threads}-thread copy", c_multi)
    _report("1 thread ", n_bytes, t_single, "np.copyto (1 thread)", c_single)
    return ok


def run_gpu(n_bytes: int, dtype: np.dtype, shift: int, repeat: int) -> bool:
    from numba import cuda

    from .bench import _events_timer, _memcpy, _whole_call_timers

    n = n_bytes // dtype.itemsize
    n_bytes = n * dtype.itemsize
    rng = np.random.default_rng(0)
    host = rng.integers(0, 256, n * dtype.itemsize, dtype=np.uint8).view(dtype)
    dev = cuda.to_device(host)
    plan = rotate.plan(dev, shift)
    print(plan)
    if not plan.steps:
        print(f"shift {shift} moves nothing (plan: noop); nothing to time")
        return True
    rotate.roll(dev, shift)
    ok = bool(np.array_equal(dev.copy_to_host().view(np.uint8), np.roll(host, shift).view(np.uint8)))
    print(f"result equals numpy.roll: {ok}")
    stream = cuda.default_stream()
    device_time = _events_timer(cuda, stream)
    # The headline is the whole call as a user times it: CUDA events around
    # 20 back-to-back Python calls, host work included. Device time second.
    whole_call, _one_at_a_time = _whole_call_timers(cuda, stream)
    copy, _buffers = _memcpy(cuda, n_bytes, stream)
    memcpy_ms = device_time(copy, repeat)
    calls = [1]

    def roll():
        rotate.roll(dev, shift)
        calls[0] += 1

    ms = whole_call(roll, repeat)
    device_ms = device_time(roll, repeat)
    # Every timed call rolled the same array: it must now equal numpy.roll by calls * shift.
    ok_all = bool(np.array_equal(dev.copy_to_host().view(np.uint8),
                                 np.roll(host, calls[0] * shift).view(np.uint8)))
    print(f"result equals numpy.roll after all {calls[0]} calls: {ok_all}")
    ok = ok and ok_all
    print(f"GPU in-place roll of {n_bytes / 2**20:.0f} MiB {dtype}: time {ms:.3f} ms per call (whole call, "
          f"host work included) = {100 * ms / memcpy_ms:.0f}% of a device-to-device memcpy's time "
          f"({memcpy_ms:.3f} ms); speed {2 * n_bytes / ms / 1e6:.0f} GB/s read + write = "
          f"{memcpy_ms / ms:.2f}x memcpy's speed; device work alone {device_ms:.3f} ms = "
          f"{100 * device_ms / memcpy_ms:.0f}% of memcpy's time")
    try:
        import cupy

        x = cupy.asarray(dev)
        cupy_ms = whole_call(lambda: cupy.roll(x, shift), repeat)
        print(f"  cupy.roll (out of place, allocates {n_bytes / 2**20:.0f} MiB): time {cupy_ms:.3f} ms per "
              f"call = {100 * cupy_ms / memcpy_ms:.0f}% of memcpy's")
    except Exception:
        pass
    try:
        import torch

        t = torch.as_tensor(dev, device="cuda")
        torch_ms = whole_call(lambda: torch.roll(t, shift), repeat)
        print(f"  torch.roll (out of place): time {torch_ms:.3f} ms per call = "
              f"{100 * torch_ms / memcpy_ms:.0f}% of memcpy's")
    except Exception:
        pass
    return ok


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rotate.demo", description=__doc__.splitlines()[0])
    parser.add_argument("--size", default=None, help="array size, e.g. 64M or 1G (default: 1G GPU, 256M CPU)")
    parser.add_argument("--dtype", default="uint8")
    parser.add_argument("--shift", type=int, default=None, help="default: 4097 elements")
    parser.add_argument("--cpu", action="store_true", help="use the CPU backend even if a GPU is present")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    try:
        dtype = np.dtype(args.dtype)
        rotate.plan(np.zeros(2, dtype), 1)  # the library's own checks (object dtypes, itemsize 0)
    except (TypeError, ValueError) as exc:
        print(f"python -m rotate.demo: --dtype {args.dtype}: {exc}", file=sys.stderr)
        return 2
    shift = 4097 if args.shift is None else args.shift
    on_gpu = gpu_available() and not args.cpu
    size = parse_size(args.size or ("1G" if on_gpu else "256M"))
    if size < dtype.itemsize:
        print(f"python -m rotate.demo: --size {args.size} holds no {dtype} element", file=sys.stderr)
        return 2
    print(f"rotate {rotate.__version__}: in-place roll on the {'GPU' if on_gpu else 'CPU'}"
          + ("" if on_gpu or args.cpu else " (no CUDA GPU found)"))
    ok = (run_gpu if on_gpu else run_cpu)(size, dtype, shift, args.repeat)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
