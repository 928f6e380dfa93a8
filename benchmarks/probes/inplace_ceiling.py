"""How fast can any kernel stream through memory in place, against a copy?

Backs: docs/performance.md's in-place ceiling, from docs/results/inplace-ceiling-h200.log.

How fast can any kernel stream through memory in place? (needs CuPy and a GPU)

Times, with CUDA events (medians), at the sizes given in MiB:
  memcpy        torch/cupy device-to-device copy (the project's reference)
  copy kernel   dst[i] = src[i], 16-byte loads/stores, grid-stride
  in place      p[i] = p[i] + 0 (a kernel argument), 16-byte, grid-stride
  shifted       p[i] = p[i + d], d = 64 vectors (a racy memmove, for timing only)
and prints each as % of memcpy, to tell the memcpy ceiling from the
in-place one.

    python benchmarks/probes/inplace_ceiling.py [1024 4096]
"""

import statistics
import sys

import cupy

SOURCE = r"""
extern "C" __global__ void copy16(const uint4* __restrict__ src, uint4* __restrict__ dst, long long n) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
        dst[i] = src[i];
}
extern "C" __global__ void inplace16(uint4* p, long long n, unsigned add) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
        uint4 v = p[i]; v.x += add; v.y += add; v.z += add; v.w += add; p[i] = v;
    }
}
extern "C" __global__ void shifted16(uint4* p, long long n, long long d) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i + d < n; i += (long long)gridDim.x * blockDim.x)
        p[i] = p[i + d];
}
"""


def median_ms(fn, repeat=15):
    for _ in range(3):
        fn()
    times = []
    for _ in range(repeat):
        start, stop = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, stop))
    return statistics.median(times)


def main(sizes):
    module = cupy.RawModule(code=SOURCE)
    copy16, inplace16, shifted16 = (module.get_function(f) for f in ("copy16", "inplace16", "shifted16"))
    sms = cupy.cuda.Device().attributes["MultiProcessorCount"]
    for mib in sizes:
        nbytes = mib << 20
        a = cupy.random.randint(0, 2**31, nbytes // 4, dtype=cupy.uint32)
        b = cupy.empty_like(a)
        n = cupy.int64(nbytes // 16)
        memcpy = median_ms(lambda: b.__setitem__(Ellipsis, a))
        results = {"memcpy": memcpy}
        for blocks_per_sm in (4, 8, 16):
            grid = (sms * blocks_per_sm,)
            results[f"copy kernel {blocks_per_sm}/SM"] = median_ms(lambda: copy16(grid, (256,), (a, b, n)))
            results[f"in place {blocks_per_sm}/SM"] = median_ms(lambda: inplace16(grid, (256,), (a, n, cupy.uint32(0))))
            results[f"shifted {blocks_per_sm}/SM"] = median_ms(lambda: shifted16(grid, (256,), (a, n, cupy.int64(64))))
        print(f"{mib} MiB:")
        for name, ms in results.items():
            print(f"  {name:>20}: {ms:7.3f} ms {2 * nbytes / ms / 1e6:6.0f} GB/s {100 * memcpy / ms:5.1f}% of memcpy")


if __name__ == "__main__":
    main([int(s) for s in sys.argv[1:]] or [1024, 4096])
