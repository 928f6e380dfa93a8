"""Align many signals by their per-row lag, in place, with rotate.roll_rows.

Each row of ``signals`` is a copy of one pulse delayed by its own lag (plus
noise). The lag of every row is estimated from its cross-correlation peak
with the reference, and ``rotate.roll_rows(signals, -lags)`` rolls every row
back by its own amount -- in place, rows in parallel, no second array.

The usual way is a gather with an index array::

    idx = (np.arange(n) + lags[:, None]) % n        # 8 bytes per element
    aligned = np.take_along_axis(signals, idx, axis=1)  # and a second array

which allocates an index array (8 bytes per element, twice the float32
data) plus the output. The script measures both with tracemalloc (numpy
reports its allocations there) and checks they agree.

On a machine with a CUDA GPU it then aligns the same signals on the GPU,
lags passed as a device array (``--cpu-only`` skips that).

    python examples/align_signals.py [--rows 2000] [--length 4096] [--cpu-only]
"""

import argparse
import time
import tracemalloc

import numpy as np

import rotate


def make_signals(rows: int, length: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    t = np.arange(length)
    reference = (np.exp(-0.5 * ((t - length // 4) / 6.0) ** 2) * np.cos(0.3 * t)).astype(np.float32)
    lags = rng.integers(-length // 3, length // 3, rows)
    signals = np.empty((rows, length), np.float32)
    signals[:] = reference
    rotate.roll_rows(signals, lags)  # delay row i by lags[i]
    signals += rng.normal(0, 0.05, signals.shape).astype(np.float32)
    return reference, signals, lags


def estimate_lags(reference: np.ndarray, signals: np.ndarray) -> np.ndarray:
    """The lag of every row: the peak of its circular cross-correlation with the reference."""
    corr = np.fft.irfft(np.fft.rfft(signals, axis=1) * np.conj(np.fft.rfft(reference)), n=signals.shape[1], axis=1)
    lags = np.argmax(corr, axis=1)
    return np.where(lags > signals.shape[1] // 2, lags - signals.shape[1], lags)


def peak_bytes(fn):
    tracemalloc.start()
    tracemalloc.reset_peak()
    start = time.perf_counter()
    result = fn()
    seconds = time.perf_counter() - start
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return result, peak, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument("--length", type=int, default=4096)
    parser.add_argument("--cpu-only", action="store_true", help="skip the GPU part")
    args = parser.parse_args()

    reference, signals, true_lags = make_signals(args.rows, args.length)
    lags = estimate_lags(reference, signals)
    assert np.array_equal(lags, true_lags), "lag estimates should be exact at this noise level"

    n = signals.shape[1]
    gathered, gather_peak, gather_s = peak_bytes(
        lambda: np.take_along_axis(signals, (np.arange(n) + lags[:, None]) % n, axis=1))
    rotate.roll_rows(signals.copy(), -lags)  # compile once, outside the measurement
    aligned, inplace_peak, inplace_s = peak_bytes(lambda: rotate.roll_rows(signals, -lags))
    assert aligned is signals and np.array_equal(aligned, gathered), "roll_rows differs from the gather"

    mib = 1 << 20
    print(f"{args.rows} signals x {args.length} float32 ({signals.nbytes / mib:.1f} MiB), lags "
          f"{lags.min()}..{lags.max()}: every row aligned to the reference")
    print(f"  np.take_along_axis + index array: peak {gather_peak / mib:8.1f} MiB extra, {gather_s * 1e3:6.1f} ms")
    print(f"  rotate.roll_rows (in place):      peak {inplace_peak / mib:8.1f} MiB extra, {inplace_s * 1e3:6.1f} ms")
    print(f"  memory saved: {(gather_peak - inplace_peak) / mib:.1f} MiB "
          f"({gather_peak / max(inplace_peak, 1):.0f}x less)")
    if not args.cpu_only:
        align_on_gpu(reference, gathered, true_lags, args.rows, args.length)


def align_on_gpu(reference, expected, lags, rows, length) -> None:
    """The same alignment on a GPU, lags on the device too (read there: no host round trip)."""
    try:
        from numba import cuda
        from numba.core import config

        if config.ENABLE_CUDASIM or not cuda.is_available():
            print("no CUDA GPU: skipped the GPU part")
            return
    except ImportError:
        print("numba-cuda not installed: skipped the GPU part")
        return
    _, signals, _ = make_signals(rows, length)  # the same signals, rebuilt on the host
    device = cuda.to_device(signals)
    device_lags = cuda.to_device(np.ascontiguousarray(-lags, dtype=np.int64))
    free_before = cuda.current_context().get_memory_info()[0]
    rotate.roll_rows(device, device_lags)
    cuda.synchronize()
    free_after = cuda.current_context().get_memory_info()[0]
    assert np.array_equal(device.copy_to_host(), expected), "GPU roll_rows differs from the gather"
    gather_bytes = signals.size * 8 + signals.nbytes  # an int64 index per element and the output
    print(f"GPU: {rotate.plan_roll_rows(device, device_lags).algorithm}, rows aligned in place; device memory "
          f"taken by the call: {max(free_before - free_after, 0) / (1 << 20):.1f} MiB (a gather would take "
          f"{gather_bytes / (1 << 20):.1f} MiB)")


if __name__ == "__main__":
    main()
