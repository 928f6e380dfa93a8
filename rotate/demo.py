"""The main job: roll a large array in place, check it against numpy, time it.

Run ``python -m rotate.demo`` (``--size 1G``, ``--cpu``, ``--dtype float32``,
``--shift N``). On a machine with a CUDA GPU (and numba-cuda) it rolls a
device array with the GPU backend; otherwise a numpy array with the CPU
backend. It prints the plan, whether the result equals ``numpy.roll``, and
the time as a percentage of a plain copy of the same bytes (memcpy: the
speed of light of an in-place rotate, which reads and writes every byte
once). On the GPU the headline is the whole call as a user times it (host
work included, calls back to back); device time alone follows. The GPU run also prints CuPy's and PyTorch's out-of-place roll when
they are installed.
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


def run_cpu(n_bytes: int, dtype: np.dtype, shift: int, repeat: int) -> bool:
    n = n_bytes // dtype.itemsize
    rng = np.random.default_rng(0)
    a = rng.integers(0, 256, n * dtype.itemsize, dtype=np.uint8).view(dtype)
    expected = np.roll(a, shift)
    print(rotate.plan(a, shift))
    start = time.perf_counter()
    rotate.roll(a, shift)  # first call includes numba's compile (cached on disk afterwards)
    first = time.perf_counter() - start
    ok = bool(np.array_equal(a.view(np.uint8), expected.view(np.uint8)))
    print(f"result equals numpy.roll: {ok}  (first call, with compile: {first * 1e3:.1f} ms)")
    copy_target = np.empty_like(a)
    times, copies = [], []
    for _ in range(repeat):
        start = time.perf_counter()
        np.copyto(copy_target, a)
        copies.append(time.perf_counter() - start)
        start = time.perf_counter()
        rotate.roll(a, shift)
        times.append(time.perf_counter() - start)
    t, c = statistics.median(times), statistics.median(copies)
    print(f"CPU in-place roll of {n_bytes / 2**20:.0f} MiB {dtype}: {t * 1e3:.2f} ms, "
          f"{2 * n_bytes / t / 1e9:.1f} GB/s (read + write) = {100 * c / t:.0f}% of np.copyto ({c * 1e3:.2f} ms)")
    return ok


def run_gpu(n_bytes: int, dtype: np.dtype, shift: int, repeat: int) -> bool:
    from numba import cuda

    from .bench import _events_timer, _memcpy, _whole_call_timers

    n = n_bytes // dtype.itemsize
    rng = np.random.default_rng(0)
    host = rng.integers(0, 256, n * dtype.itemsize, dtype=np.uint8).view(dtype)
    dev = cuda.to_device(host)
    print(rotate.plan(dev, shift))
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
    ms = whole_call(lambda: rotate.roll(dev, shift), repeat)
    device_ms = device_time(lambda: rotate.roll(dev, shift), repeat)
    print(f"GPU in-place roll of {n_bytes / 2**20:.0f} MiB {dtype}: {ms:.3f} ms per call, "
          f"{2 * n_bytes / ms / 1e6:.0f} GB/s (read + write) = {100 * memcpy_ms / ms:.0f}% of a "
          f"device-to-device memcpy ({memcpy_ms:.3f} ms); device work alone {device_ms:.3f} ms "
          f"= {100 * memcpy_ms / device_ms:.0f}%")
    try:
        import cupy

        x = cupy.asarray(dev)
        cupy_ms = whole_call(lambda: cupy.roll(x, shift), repeat)
        print(f"  cupy.roll (out of place, allocates {n_bytes / 2**20:.0f} MiB): {cupy_ms:.3f} ms per call "
              f"= {100 * memcpy_ms / cupy_ms:.0f}% of memcpy")
    except Exception:
        pass
    try:
        import torch

        t = torch.as_tensor(dev, device="cuda")
        torch_ms = whole_call(lambda: torch.roll(t, shift), repeat)
        print(f"  torch.roll (out of place): {torch_ms:.3f} ms per call = {100 * memcpy_ms / torch_ms:.0f}% of memcpy")
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
    dtype = np.dtype(args.dtype)
    shift = 4097 if args.shift is None else args.shift
    on_gpu = gpu_available() and not args.cpu
    size = parse_size(args.size or ("1G" if on_gpu else "256M"))
    print(f"rotate {rotate.__version__}: in-place roll on the {'GPU' if on_gpu else 'CPU'}"
          + ("" if on_gpu or args.cpu else " (no CUDA GPU found)"))
    ok = (run_gpu if on_gpu else run_cpu)(size, dtype, shift, args.repeat)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
