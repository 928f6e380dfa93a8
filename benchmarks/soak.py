"""Soak test of the GPU roll: many random cases, every byte checked, hangs detected.

``python benchmarks/soak.py --cases 10000 --json soak.json`` (on a GPU).
Sizes from 1 byte to a few MiB (some larger), every dtype item size
(1, 2, 4, 8, 16 and a 3-byte structured type), CuPy, torch and numba
arrays, base offsets 0-15 bytes, shifts from structured families (0, ±1,
n/p ± small, near tile multiples, beyond ±n) and multi-row axis rolls. Each
case poisons its guard bytes and compares with numpy.roll on the host.
A watchdog thread reports a hang (a case that takes more than --hang-s).
"""

from __future__ import annotations

import argparse
import json
import threading
import time

import numpy as np


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--hang-s", type=float, default=30.0)
    parser.add_argument("--json")
    args = parser.parse_args(argv)

    from numba import cuda

    import rotate
    from _harness.provenance import environment

    libs = ["numba"]
    try:
        import cupy
        libs.append("cupy")
    except Exception:
        cupy = None
    try:
        import torch
        if torch.cuda.is_available():
            libs.append("torch")
        else:
            torch = None
    except Exception:
        torch = None

    rng = np.random.default_rng(args.seed)
    dtypes = [np.uint8, np.uint16, np.float32, np.float64, np.complex128, np.dtype([("a", "u1"), ("b", "<u2")])]
    tiles = [32 * 1024, 16 * 1024]
    state = {"case": None, "started": time.time(), "done": 0}
    hung = []

    def watchdog():
        while state["done"] < args.cases and not hung:
            time.sleep(1.0)
            if time.time() - state["started"] > args.hang_s:
                hung.append(state["case"])
                print(f"HANG: {state['case']}", flush=True)

    threading.Thread(target=watchdog, daemon=True).start()
    wrong = []
    by_algorithm: dict = {}
    t0 = time.time()
    for index in range(args.cases):
        dtype = dtypes[rng.integers(len(dtypes))]
        itemsize = np.dtype(dtype).itemsize
        if rng.random() < 0.03:
            nbytes = int(rng.integers(1 << 22, 1 << 26))
        else:
            nbytes = int(np.exp(rng.uniform(0, np.log(1 << 22))))
        n = max(1, nbytes // itemsize)
        rows = 1 if rng.random() < 0.7 else int(rng.integers(1, 9))
        seg = max(1, n // rows)
        family = rng.integers(6)
        if family == 0:
            shift = int(rng.choice([0, 1, -1, seg, -seg, seg + 1, 3 * seg - 2]))
        elif family == 1:
            p = int(rng.integers(2, 9))
            shift = seg // p + int(rng.integers(-40, 41))
        elif family == 2:
            tile = tiles[rng.integers(2)] // itemsize
            shift = tile * int(rng.integers(1, 40)) + int(rng.integers(-3, 4))
        elif family == 3:
            shift = int(rng.integers(-10 * seg - 5, 10 * seg + 5))
        else:
            shift = int(rng.integers(-seg, seg + 1))
        lib = libs[rng.integers(len(libs))]
        offset = int(rng.integers(0, 16))
        if lib == "torch":  # torch views bytes as wider elements only at aligned storage offsets
            offset -= offset % itemsize
        host = rng.integers(0, 256, rows * seg * itemsize + 2 * 64, dtype=np.uint8)
        body = slice(64 + offset, 64 + offset + rows * seg * itemsize)
        raw = host.copy()
        view_host = raw[body].view(dtype).reshape(rows, seg) if rows > 1 else raw[body].view(dtype)
        axis = 1 if rows > 1 else None
        expected = raw.copy()
        expected[body] = np.roll(view_host, shift, axis=axis).view(np.uint8).reshape(-1)
        state.update(case=dict(index=index, lib=lib, dtype=str(np.dtype(dtype)), rows=rows, seg=seg, shift=shift,
                               offset=offset), started=time.time())
        if lib == "cupy" and np.dtype(dtype).kind != "V":
            buf = cupy.asarray(raw)
            dev = buf[body].view(dtype)
            dev = dev.reshape(rows, seg) if rows > 1 else dev
            plan = rotate.plan(dev, shift, axis)
            rotate.roll(dev, shift, axis)
            got = cupy.asnumpy(buf)
        elif lib == "torch" and np.dtype(dtype) in (np.uint8, np.float32, np.float64, np.complex128):
            buf = torch.from_numpy(raw.copy()).cuda()
            dev = buf[body].view({np.dtype(np.uint8): torch.uint8, np.dtype(np.float32): torch.float32,
                                  np.dtype(np.float64): torch.float64,
                                  np.dtype(np.complex128): torch.complex128}[np.dtype(dtype)])
            dev = dev.reshape(rows, seg) if rows > 1 else dev
            plan = rotate.plan(dev, shift, axis)
            rotate.roll(dev, shift, axis)
            got = buf.cpu().numpy()
        else:
            buf = cuda.to_device(raw)
            dev = buf[body.start:body.stop].view(dtype)
            dev = dev.reshape(rows, seg) if rows > 1 else dev
            plan = rotate.plan(dev, shift, axis)
            rotate.roll(dev, shift, axis)
            got = buf.copy_to_host()
        cuda.synchronize()
        by_algorithm[plan.algorithm] = by_algorithm.get(plan.algorithm, 0) + 1
        if not np.array_equal(got, expected):
            bad = np.flatnonzero(got != expected)
            wrong.append(dict(state["case"], wrong_bytes=int(bad.size), first=int(bad[0])))
            print("WRONG", wrong[-1], flush=True)
        state["done"] = index + 1
        if args.json and state["done"] % 500 == 0:  # a run cut short still leaves its count
            with open(args.json, "w") as fh:
                json.dump(dict(cases=state["done"], wrong_cases=len(wrong), wrong=wrong[:50], partial=True,
                               seconds=time.time() - t0, algorithms=by_algorithm), fh, indent=1)
        if hung:
            break
    result = dict(cases=state["done"], wrong_cases=len(wrong), wrong=wrong[:50], hangs=hung,
                  seconds=time.time() - t0, algorithms=by_algorithm, libraries=libs,
                  knobs={"seed": args.seed, "cases": args.cases, "hang_s": args.hang_s},
                  environment=environment(gpu=True))
    print(f"soak: {result['cases']} cases, {len(wrong)} wrong, {len(hung)} hangs, "
          f"{result['seconds']:.0f} s, algorithms {by_algorithm}", flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(result, fh, indent=1, default=str)
    return 1 if wrong or hung else 0


if __name__ == "__main__":
    raise SystemExit(main())
