"""In-place 2-D fftshift of a large complex image with rotate.fftshift.

``numpy.fft.fftshift`` returns a new array (as large as the image); for an
image that barely fits in memory that second array is the problem.
``rotate.fftshift`` moves the zero-frequency term to the centre in place,
both axes in one pass over the data (``rotate.plan`` shows one
``multi-axis-cycles`` step), with scratch of a couple of image rows.

    python examples/fftshift_2d.py [--size 2048] [--odd]
"""

import argparse
import time
import tracemalloc

import numpy as np

import rotate


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
    parser.add_argument("--size", type=int, default=2048, help="image side (default 2048: 32 MiB of complex64)")
    parser.add_argument("--odd", action="store_true", help="odd sides (size + 1) x (size - 1)")
    args = parser.parse_args()
    shape = (args.size + 1, args.size - 1) if args.odd else (args.size, args.size)

    rng = np.random.default_rng(0)
    image = np.empty(shape, np.complex64)
    image.real = rng.standard_normal(shape, dtype=np.float32)
    image.imag = rng.standard_normal(shape, dtype=np.float32)
    rotate.fftshift(np.zeros((5, 7), np.complex64))  # compile once, outside the measurement

    expected, numpy_peak, numpy_s = peak_bytes(lambda: np.fft.fftshift(image))
    plan = rotate.plan(image, [n // 2 for n in shape], axis=(0, 1))
    shifted, ours_peak, ours_s = peak_bytes(lambda: rotate.fftshift(image))
    assert shifted is image and np.array_equal(image, expected), "rotate.fftshift differs from numpy.fft.fftshift"
    rotate.ifftshift(image)
    assert np.array_equal(image, np.fft.ifftshift(expected)), "rotate.ifftshift did not undo it"

    mib = 1 << 20
    print(f"{shape} complex64 image ({image.nbytes / mib:.1f} MiB): in-place fftshift equals numpy.fft.fftshift")
    print(f"  plan: {plan.algorithm}, {len(plan.steps)} step(s), scratch {plan.scratch_bytes} bytes, "
          f"bytes moved / ideal = {plan.bytes_moved / plan.ideal_bytes:.3f}")
    print(f"  numpy.fft.fftshift: peak {numpy_peak / mib:8.1f} MiB extra, {numpy_s * 1e3:6.1f} ms")
    print(f"  rotate.fftshift:    peak {ours_peak / mib:8.1f} MiB extra, {ours_s * 1e3:6.1f} ms")
    print(f"  memory saved: {(numpy_peak - ours_peak) / mib:.1f} MiB")


if __name__ == "__main__":
    main()
