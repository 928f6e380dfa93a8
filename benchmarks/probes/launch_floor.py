"""What does launching the chain kernel cost the host, by launch method?

Backs: the cached `cuda.core` Stream of every launch (docs/tuning.md, "GPU: host path"), from
docs/results/launch-floor-h200.json.

The host cost of launching the chain kernel, by launch method (issue #8's launch floor).

``cuda.core.launch`` with a foreign stream object (the ``__cuda_stream__``
protocol) measured 8.2 us a call with prepared arguments, more than
``torch.roll``'s whole call. This times the same launch of the same kernel
and arguments four ways, so the call path can use the cheapest one that
works:

    python benchmarks/probes/launch_floor.py [--json out.json]
"""

from __future__ import annotations

import argparse
import ctypes
import json
import pathlib
import sys

import numpy as np


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    from cuda.bindings import driver
    from cuda.core import launch
    from numba import cuda

    import rotate
    from rotate import _api
    from rotate._backends.cuda import device as gpu_device, runtime as gpu_runtime
    from rotate._backends.cuda.schedules import chain as gpu_chain

    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))  # the sibling probe host_path.py
    from host_path import per_call_us

    a = cuda.to_device(np.arange(1024, dtype=np.float32))
    rotate.roll(a, 3)
    prepared = _api._prepare(a, 3, None, None, None, None)
    info, step, handle = prepared[2], prepared[3].steps[0], prepared[4]
    entry = gpu_runtime.scratch_for(handle)
    gpu_chain.run_chain(info.pointer, prepared[1], step, handle)
    _, _, ref, config, kernel, table_address, head_args, tail_args = gpu_runtime._prepared[(id(step), gpu_device._device_id(), handle)]
    epochs = iter(range(next(entry._epochs) + 1, 0xFFFFFFF0))
    pointer = info.pointer

    def values():
        return (pointer, *entry.addresses, table_address, *head_args, pointer % 16, *tail_args, next(epochs))

    results = {}

    def record(name, fn):
        try:
            fn()
            cuda.synchronize()
            results[name] = per_call_us(fn, cuda.synchronize)
        except Exception as exc:  # a method this driver/binding does not take: say so, keep going
            results[name] = f"{type(exc).__name__}: {exc}"[:300]
        print(f"{name:>60}: {results[name]}")

    record("cuda.core launch, __cuda_stream__ object", lambda: launch(ref, config, kernel, *values()))
    try:
        from cuda.core import Stream

        core_stream = Stream.from_handle(handle)
        record("cuda.core launch, cuda.core Stream", lambda: launch(core_stream, config, kernel, *values()))
    except Exception as exc:
        results["cuda.core Stream"] = f"{type(exc).__name__}: {exc}"[:300]
        print(results["cuda.core Stream"])

    count = len(values())
    cells = (ctypes.c_int64 * count)()
    pointers = (ctypes.c_void_p * count)(*[ctypes.addressof(cells) + 8 * i for i in range(count)])
    params = ctypes.addressof(pointers)
    function = driver.CUfunction(int(kernel.handle))
    stream = driver.CUstream(handle)
    grid, block = step.details["grid"], step.details["block"]

    def raw():
        cells[:] = values()
        err, = driver.cuLaunchKernel(function, grid, 1, 1, block, 1, 1, 0, stream, params, 0)
        if err != driver.CUresult.CUDA_SUCCESS:
            raise RuntimeError(str(err))

    record("cuda.bindings cuLaunchKernel, packed params", raw)

    def raw_only_changes():
        cells[0] = pointer
        cells[count - 1] = next(epochs)
        err, = driver.cuLaunchKernel(function, grid, 1, 1, block, 1, 1, 0, stream, params, 0)
        if err != driver.CUresult.CUDA_SUCCESS:
            raise RuntimeError(str(err))

    cells[:] = values()
    record("cuda.bindings cuLaunchKernel, 2 cells updated", raw_only_changes)
    entry._epochs = iter(range(next(epochs) + 1, 0xFFFFFFF0))
    b = np.arange(1024, dtype=np.float32)
    a.copy_to_host(b)
    rotate.roll(a, 3)
    print("still correct after raw launches:", bool(np.array_equal(a.copy_to_host(), np.roll(b, 3))))
    if args.json:
        from rotate import _provenance

        with open(args.json, "w") as fh:
            json.dump({"benchmark": "launch_floor", "environment": _provenance.environment(gpu=True),
                       "us_per_call": results}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
