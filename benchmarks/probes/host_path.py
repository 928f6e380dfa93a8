"""Where does a small GPU roll spend its host time, stage by stage (issue #8's 20 us a call)?

Backs: docs/performance.md's host work per call (the tuning objects left it unchanged), from
docs/results/host-path-tuning-h200.json.

Where a small GPU roll spends its host time: each stage of the call path timed on its own.

Issue #8 asks for <= 20 us of host work per call. ``python -m rotate.bench
--profile`` gives cProfile's shares (which inflate cheap calls); this times
each stage of ``rotate.roll`` the way the call runs it, without a profiler,
for numba, CuPy and torch arrays of 4 KiB, and a bare ``cuda.core`` launch of
the same kernel as the floor:

    python benchmarks/probes/host_path.py [--json out.json]

Every number is the median over rounds of the mean of ``number`` calls, in
microseconds of host time: the device is synchronised after each round,
outside the timed loop.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import numpy as np


def per_call_us(fn, sync, number: int = 250, rounds: int = 25) -> float:
    """Host microseconds per call: the loop is timed, the synchronisation after it is not.

    ``number`` stays well below the driver's launch queue (about 1000
    launches), so a launch never waits for the device.
    """
    for _ in range(50):
        fn()
    sync()
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        samples.append((time.perf_counter() - start) / number * 1e6)
        sync()
    return statistics.median(samples)


def stages(a, sync) -> dict:
    """Per-call microseconds of each stage of ``rotate.roll(a, 3)``."""
    import rotate
    from rotate import _api, _backends
    from rotate._core import arrays as _arrays
    from rotate._backends.cuda import device as gpu_device, runtime as gpu_runtime
    from rotate._backends.cuda.schedules import chain as gpu_chain

    rotate.roll(a, 3)
    backend = _backends.backend_for(a)
    target, info = backend.describe(a)
    prepared = _api._prepare(a, 3, None, None, None, None)
    step = prepared[3].steps[0]
    timings = {
        "is_dtensor": lambda: _arrays.is_dtensor(a),
        "torch_host_view": lambda: _arrays.torch_host_view(a),
        "backend_for": lambda: _backends.backend_for(a),
        "__cuda_array_interface__": lambda: target.__cuda_array_interface__,
        "describe": lambda: backend.describe(a),
        "device_id": gpu_device._device_id,
        "plan_key": lambda: backend.plan_key(info, None),
        "resolve_stream": lambda: backend.resolve_stream(target, None),
        "_prepare (all of the above)": lambda: _api._prepare(a, 3, None, None, None, None),
        "execute (launch path)": lambda: _api._execute([prepared]),
        "rotate.roll (whole call)": lambda: rotate.roll(a, 3),
    }
    out = {name: per_call_us(fn, sync) for name, fn in timings.items()}
    # The floor: the prepared cuda.core launch with its arguments built once.
    handle = prepared[4]
    entry = gpu_runtime.scratch_for(handle)
    flags, pre, counters, epoch = entry.reserve(2 * step.rows * step.details["_m_max"],
                                                step.rows * step.details["_scratch_row"])
    gpu_chain.run_chain(info.pointer, target, step, handle)
    prep = gpu_runtime._prepared[(id(step), gpu_device._device_id(), handle)]
    _, launch_fn, ref, config, kernel, table_address, head_args, tail_args = prep
    pointer = info.pointer
    epochs = iter(range(epoch + 1, epoch + 10 ** 7))

    def bare():
        launch_fn(ref, config, kernel, pointer, *entry.addresses, table_address, *head_args, pointer % 16,
                  *tail_args, next(epochs))

    out["cuda.core launch (prepared args, floor)"] = per_call_us(bare, sync)
    entry._epochs = iter(range(next(epochs) + 1, 0xFFFFFFF0))  # keep epochs increasing for later calls
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json")
    parser.add_argument("--bytes", type=int, default=4096)
    args = parser.parse_args(argv)
    from numba import cuda

    host = np.arange(args.bytes // 4, dtype=np.float32)
    cases = {"numba": lambda: (cuda.to_device(host), cuda.synchronize)}
    try:
        import cupy

        cases["cupy"] = lambda: (cupy.asarray(host), cupy.cuda.runtime.deviceSynchronize)
    except ImportError:
        pass
    try:
        import torch

        if torch.cuda.is_available():
            cases["torch"] = lambda: (torch.from_numpy(host.copy()).cuda(), torch.cuda.synchronize)
    except ImportError:
        pass
    results = {}
    for name, make in cases.items():
        a, sync = make()
        results[name] = stages(a, sync)
        print(f"{name}:")
        for stage, us in results[name].items():
            print(f"  {stage:>42}: {us:6.2f} us")
    if "torch" in cases:
        import torch

        t = torch.from_numpy(host.copy()).cuda()
        results["peers"] = {"torch.roll": per_call_us(lambda: torch.roll(t, 3), torch.cuda.synchronize),
                            "torch add_": per_call_us(lambda: t.add_(1), torch.cuda.synchronize)}
        print(results["peers"])
    if args.json:
        from rotate import _provenance

        with open(args.json, "w") as fh:
            json.dump({"benchmark": "host_path", "environment": _provenance.environment(gpu=True),
                       "bytes": args.bytes, "us_per_call": results}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
