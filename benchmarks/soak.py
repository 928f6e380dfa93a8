"""Soak test: thousands of random calls of every public op, every byte checked, hangs detected.

``python benchmarks/soak.py --cases 12000 --json soak.json`` on a GPU (numba, CuPy and torch arrays), or
``python benchmarks/soak.py --cpu --cases 500`` for the CPU backend (numpy arrays, torch CPU tensors).

Case ``i`` of seed ``S`` is drawn by ``numpy.random.default_rng([S, i])`` alone, so ``--seed S --only i``
reruns it without the others:

* the op: ``roll`` of the flattened array or along one axis; ``roll`` over several axes (an axis may come
  twice, axes may be negative); ``roll_rows`` along any axis with one shift per lane, a single shift,
  shifts that broadcast, or (GPU) an int64 device array; ``fftshift`` and ``ifftshift`` over all axes,
  one, or a subset; ``rotate`` (std::rotate's ``middle``, 0 to the size);
* the dtype: item sizes 1, 2, 4, 8 and 16 bytes, and a 3-byte struct;
* the shape: 1-4 dimensions, 1 byte to ``--max-bytes`` in all (3% of cases up to 16 times that), sides
  drawn as random_bench.py draws them (log-uniform, snapped to powers of two, primes near them and powers
  of two plus or minus one); a 2-D array is a transposed view a quarter of the time (F-ordered lanes;
  never for the flattened roll and ``rotate``, which refuse one);
* the library: numba, CuPy or torch device arrays (numba where the others lack the dtype; a transposed
  numba array is a strided view made through the CUDA Array Interface, since numba's ``.T`` launches a
  kernel into a copy), or numpy arrays and torch CPU tensors; the array starts 0-15 bytes into a buffer
  (torch: aligned to its items) with 64 random guard bytes on each side;
* shifts from structured families: 0, +-1, +-n, n/p plus or minus a little, near multiples of the 16 and
  32 KiB tiles, up to 10 n either way, uniform.

The buffer holds random bytes (NaN payloads included); after the call the whole buffer, guards
included, must equal numpy's result (``numpy.roll``, ``numpy.fft.fftshift``, a gather for
``roll_rows``) byte for byte. A watchdog thread reports a case that runs longer than ``--hang-s`` and
stops the run; a call that raises is recorded with its case (a CUDA error, which may leave the context
unusable, stops the run: rerun from the next case with ``--first``). Exit status 1 on a wrong byte, an
exception or a hang.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
for _path in (ROOT, ROOT / "benchmarks"):  # the checkout's rotate; _harness/ however this file is loaded
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from _harness.shapes import draw_shape, log_uniform  # noqa: E402

OPS = ("roll", "roll-axes", "roll_rows", "fftshift", "ifftshift", "rotate")
OP_WEIGHTS = (0.3, 0.15, 0.2, 0.1, 0.1, 0.15)
DTYPES = ("uint8", "uint16", "float32", "float64", "complex128", "struct3")
STRUCT3 = np.dtype([("a", "u1"), ("b", "<u2")])
GUARD = 64
TILES = (32 * 1024, 16 * 1024)  # the GPU chain's tile sizes: shifts near their multiples
GPU_LIBS, CPU_LIBS = ("numba", "cupy", "torch"), ("numpy", "torch-cpu")
TORCH_DTYPES = ("uint8", "float32", "float64", "complex128")


def dtype_of(name: str) -> np.dtype:
    return STRUCT3 if name == "struct3" else np.dtype(name)


# --- the draw ------------------------------------------------------------------------------------------

def draw_shift(rng, n: int, itemsize: int) -> int:
    """A shift for an axis of length ``n`` from one of the structured families."""
    family = int(rng.integers(6))
    if family == 0:
        return int(rng.choice([0, 1, -1, n, -n, n + 1, 3 * n - 2]))
    if family == 1:
        return n // int(rng.integers(2, 9)) + int(rng.integers(-40, 41))
    if family == 2:
        return TILES[int(rng.integers(2))] // itemsize * int(rng.integers(1, 40)) + int(rng.integers(-3, 4))
    if family == 3:
        return int(rng.integers(-10 * n - 5, 10 * n + 5))
    return int(rng.integers(-n, n + 1))


def _library(rng, libs: tuple, dtype: str) -> str:
    lib = libs[int(rng.integers(len(libs)))]
    if lib.startswith("torch") and dtype not in TORCH_DTYPES:
        return "numba" if lib == "torch" else "numpy"
    if lib == "cupy" and dtype == "struct3":
        return "numba"
    return lib


def draw_case(seed: int, index: int, libs: tuple, max_bytes: int) -> dict:
    """Case ``index`` of ``seed`` (a dict of plain values). Depends only on its arguments."""
    rng = np.random.default_rng([seed, index])
    op = OPS[int(rng.choice(len(OPS), p=OP_WEIGHTS))]
    dtype = DTYPES[int(rng.integers(len(DTYPES)))]
    itemsize = dtype_of(dtype).itemsize
    top = max_bytes * 16 if rng.random() < 0.03 else max_bytes
    elements = max(1, log_uniform(rng, 1, top) // itemsize)
    ndim = int(rng.integers(2 if op == "roll-axes" else 1, 5))
    shape = draw_shape(rng, ndim, elements, 1, max(1, top // itemsize))
    lib = _library(rng, libs, dtype)
    offset = int(rng.integers(0, 16))
    if lib.startswith("torch"):  # torch views bytes as wider items only at aligned storage offsets
        offset -= offset % itemsize
    case = {"index": index, "seed": seed, "op": op, "dtype": dtype, "shape": list(shape),
            "transposed": bool(ndim == 2 and rng.random() < 0.25), "lib": lib, "offset": offset}
    if op == "rotate":  # the flattened order of a transposed view is not its memory order: refused, no copy
        case["transposed"] = False
    view = shape[::-1] if case["transposed"] else shape
    size = int(np.prod(shape))
    if op == "roll":
        axis = None if rng.random() < 0.4 and not case["transposed"] else int(rng.integers(-ndim, ndim))
        case["axis"] = axis
        case["shift"] = draw_shift(rng, size if axis is None else view[axis], itemsize)
    elif op == "roll-axes":
        axes = [int(rng.integers(-ndim, ndim)) for _ in range(int(rng.integers(2, ndim + 2)))]
        case["axis"], case["shift"] = axes, [draw_shift(rng, view[a], itemsize) for a in axes]
    elif op == "roll_rows":
        case.update(_draw_lane_shifts(rng, seed, index, view, itemsize, lib))
    elif op in ("fftshift", "ifftshift"):
        r = rng.random()
        case["axes"] = (None if r < 0.5 else int(rng.integers(-ndim, ndim)) if r < 0.7 else
                        sorted(int(a) for a in rng.choice(ndim, int(rng.integers(1, ndim + 1)), replace=False)))
    else:
        case["middle"] = int(rng.integers(0, size + 1))
    return case


def _draw_lane_shifts(rng, seed: int, index: int, view: tuple, itemsize: int, lib: str) -> dict:
    ndim = len(view)
    axis = int(rng.integers(-ndim, ndim))
    n = view[axis]
    lanes = [s for i, s in enumerate(view) if i != axis % ndim]
    kind = str(rng.choice(["single", "lanes", "broadcast", "device"], p=[0.15, 0.55, 0.15, 0.15]))
    if kind == "device" and lib in CPU_LIBS:
        kind = "lanes"
    out = {"axis": axis, "shifts_kind": kind}
    if kind == "single":
        out["shift"] = draw_shift(rng, n, itemsize)
    else:
        out["shifts_shape"] = [1 if kind == "broadcast" and rng.random() < 0.5 else s for s in lanes]
        out["shifts_seed"] = [seed, index, 1]
    return out


def lane_shifts(case: dict):
    """roll_rows' shifts as numpy makes them: an int, or an int64 array (uniform in [-3n, 3n], a third of
    them from 0, +-1, +-n and n/2)."""
    if case["shifts_kind"] == "single":
        return case["shift"]
    n = view_shape(case)[case["axis"]]
    rng = np.random.default_rng(case["shifts_seed"])
    shape = tuple(case["shifts_shape"])
    values = rng.integers(-3 * n, 3 * n, size=shape, endpoint=True, dtype=np.int64)
    special = np.array([0, 1, -1, n, -n, n // 2], np.int64)[rng.integers(0, 6, size=shape)]
    return np.where(rng.random(shape) < 1 / 3, special, values)


def view_shape(case: dict) -> tuple:
    return tuple(case["shape"][::-1] if case["transposed"] else case["shape"])


def buffer_bytes(case: dict) -> int:
    return int(np.prod(case["shape"])) * dtype_of(case["dtype"]).itemsize + 2 * GUARD + 16


def describe(case: dict) -> str:
    args = {k: case[k] for k in ("axis", "axes", "shift", "middle", "shifts_kind", "shifts_shape") if k in case}
    layout = " transposed" if case["transposed"] else ""
    return (f"case {case['index']} (seed {case['seed']}): {case['op']} {tuple(case['shape'])}{layout} "
            f"{case['dtype']} {case['lib']} +{case['offset']} {args}")


# --- numpy's answer ------------------------------------------------------------------------------------

def host_view(buf: np.ndarray, case: dict) -> np.ndarray:
    """The case's array inside a host copy of the buffer."""
    start = GUARD + case["offset"]
    dtype = dtype_of(case["dtype"])
    v = buf[start:start + int(np.prod(case["shape"])) * dtype.itemsize].view(dtype).reshape(tuple(case["shape"]))
    return v.T if case["transposed"] else v


def expected(raw: np.ndarray, case: dict) -> np.ndarray:
    """The buffer after the case's call, computed out of place with numpy."""
    out = raw.copy()
    v = host_view(out, case)
    op = case["op"]
    if op in ("roll", "roll-axes"):
        axis = case["axis"]
        v[...] = np.roll(v, tuple(case["shift"]) if op == "roll-axes" else case["shift"],
                         tuple(axis) if op == "roll-axes" else axis)
    elif op == "roll_rows":
        lanes = np.moveaxis(v, case["axis"], -1)
        n = lanes.shape[-1]
        s = np.broadcast_to(np.asarray(lane_shifts(case), np.int64), lanes.shape[:-1])
        lanes[...] = np.take_along_axis(lanes, (np.arange(n) - s[..., None]) % n, -1)
    elif op in ("fftshift", "ifftshift"):
        v[...] = (np.fft.fftshift if op == "fftshift" else np.fft.ifftshift)(v, _axes(case))
    else:
        v[...] = np.roll(v, -case["middle"], None)
    return out


def _axes(case: dict):
    return tuple(case["axes"]) if isinstance(case["axes"], list) else case["axes"]


# --- the libraries -------------------------------------------------------------------------------------

class Libraries:
    """Buffers and views in each array library: ``array(name, raw, case)`` -> (buffer, the case's view),
    ``host(name, buffer)`` -> the buffer's bytes, ``shifts(name, host_shifts)`` -> a device copy."""

    def __init__(self, gpu: bool):
        self.gpu = gpu
        self.cuda = self.cupy = self.torch = None
        names = []
        if gpu:
            from numba import cuda
            self.cuda = cuda
            names.append("numba")
            try:
                import cupy
                self.cupy = cupy
                names.append("cupy")
            except Exception:
                pass
        else:
            names.append("numpy")
        try:
            import torch
            if not gpu or torch.cuda.is_available():
                self.torch = torch
                names.append("torch" if gpu else "torch-cpu")
        except Exception:
            pass
        self.names = tuple(names)

    def array(self, name: str, raw: np.ndarray, case: dict):
        start = GUARD + case["offset"]
        dtype = dtype_of(case["dtype"])
        stop = start + int(np.prod(case["shape"])) * dtype.itemsize
        if name == "numpy":
            buf = raw.copy()
            return buf, host_view(buf, case)
        if name.startswith("torch"):
            buf = self.torch.from_numpy(raw.copy())
            buf = buf.cuda() if name == "torch" else buf
            view = buf[start:stop].view(getattr(self.torch, str(dtype))).reshape(tuple(case["shape"]))
        elif name == "cupy":
            buf = self.cupy.asarray(raw)
            view = buf[start:stop].view(dtype).reshape(tuple(case["shape"]))
        else:
            buf = self.cuda.to_device(raw)
            view = buf[start:stop].view(dtype).reshape(tuple(case["shape"]))
            if case["transposed"]:  # numba's .T launches a transpose kernel into a new array: a view instead
                return buf, self._transposed_view(view, buf)
        return buf, (view.T if case["transposed"] else view)

    def _transposed_view(self, view, owner):
        """A C-ordered 2-D numba device array's transpose as a view of the same memory (F-ordered)."""
        cai = getattr(view, "__cuda_array_interface__", None)
        if cai is None:  # numba's CUDA simulator: its .T is numpy's, a view
            return view.T
        rows, cols = cai["shape"]
        itemsize = view.dtype.itemsize
        desc = dict(cai, shape=(cols, rows), strides=(itemsize, cols * itemsize))
        return self.cuda.from_cuda_array_interface(desc, owner=owner, sync=False)

    def host(self, name: str, buf) -> np.ndarray:
        if name == "numpy":
            return buf
        if name.startswith("torch"):
            return buf.cpu().numpy()
        if name == "cupy":
            return self.cupy.asnumpy(buf)
        return buf.copy_to_host()

    def shifts(self, name: str, shifts: np.ndarray):
        """int64 shifts on the device, C-ordered in the lanes' shape (a single lane's: shape ())."""
        shifts = np.array(shifts, np.int64, order="C")  # np.ascontiguousarray makes shape () into (1,)
        if name == "torch":
            return self.torch.from_numpy(shifts).cuda()
        if name == "cupy":
            return self.cupy.asarray(shifts)
        return self.cuda.to_device(shifts)

    def synchronize(self) -> None:
        if self.gpu:
            self.cuda.synchronize()
            if self.torch is not None:
                self.torch.cuda.synchronize()


def call(rotate, case: dict, x, shifts) -> str:
    """Make the case's call on ``x``; return its plan's algorithm."""
    op = case["op"]
    if op == "roll_rows":
        algorithm = rotate.plan_roll_rows(x, shifts, case["axis"]).algorithm
        rotate.roll_rows(x, shifts, case["axis"])
        return algorithm
    if op == "rotate":
        algorithm = rotate.plan(x, middle=case["middle"]).algorithm
        rotate.rotate(x, case["middle"])
        return algorithm
    if op in ("fftshift", "ifftshift"):
        axes = _axes(case)
        # axes made non-negative: the CUDA simulator's shapes take no negative index
        given = range(x.ndim) if axes is None else [axes] if isinstance(axes, int) else axes
        named = [a % x.ndim for a in given]
        sign = 1 if op == "fftshift" else -1
        algorithm = rotate.plan(x, [sign * (x.shape[a] // 2) for a in named], named).algorithm
        (rotate.fftshift if op == "fftshift" else rotate.ifftshift)(x, axes)
        return algorithm
    shift, axis = case["shift"], case["axis"]
    if op == "roll-axes":
        shift, axis = tuple(shift), tuple(axis)
    algorithm = rotate.plan(x, shift, axis).algorithm
    rotate.roll(x, shift, axis)
    return algorithm


def run_case(rotate, libs: Libraries, case: dict):
    """``(algorithm, wrong byte indices)`` of one case."""
    raw = np.random.default_rng([case["seed"], case["index"], 2]).integers(0, 256, buffer_bytes(case), np.uint8)
    want = expected(raw, case)
    buf, x = libs.array(case["lib"], raw, case)
    shifts = lane_shifts(case) if case["op"] == "roll_rows" else None
    if case.get("shifts_kind") == "device":
        shifts = libs.shifts(case["lib"], np.broadcast_to(shifts, tuple(case["shifts_shape"])))
    algorithm = call(rotate, case, x, shifts)
    libs.synchronize()
    return algorithm, np.flatnonzero(libs.host(case["lib"], buf) != want)


# --- the run -------------------------------------------------------------------------------------------

def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--first", type=int, default=0, help="the first case's index (a run in parts)")
    parser.add_argument("--only", default="", help="comma-separated case indices (of --seed) to run alone")
    parser.add_argument("--cpu", action="store_true", help="the CPU backend (numpy arrays, torch CPU tensors)")
    parser.add_argument("--max-bytes", type=int, default=4 << 20, help="most cases' largest array (3%%: 16x)")
    parser.add_argument("--hang-s", type=float, default=30.0)
    parser.add_argument("--json")
    args = parser.parse_args(argv)

    import rotate
    from _harness.provenance import environment

    libs = Libraries(gpu=not args.cpu)
    indices = [int(i) for i in args.only.split(",") if i] or range(args.first, args.first + args.cases)
    state = {"case": None, "started": time.time(), "running": True}
    hung: list = []

    def watchdog():
        while state["running"] and not hung:
            time.sleep(1.0)
            if state["running"] and time.time() - state["started"] > args.hang_s:
                hung.append(state["case"])
                print(f"HANG: {state['case']}", flush=True)

    threading.Thread(target=watchdog, daemon=True).start()
    wrong, errors, ops, algorithms, done = [], [], {}, {}, 0
    t0 = time.time()
    for index in indices:
        case = draw_case(args.seed, index, libs.names, args.max_bytes)
        state.update(case=describe(case), started=time.time())
        try:
            algorithm, bad = run_case(rotate, libs, case)
        except Exception as exc:  # a valid call that raises is a failure; on the GPU it may end the context
            errors.append(dict(case, error=f"{type(exc).__name__}: {exc}"[:2000]))
            print("ERROR", describe(case), errors[-1]["error"][:500], flush=True)
            done += 1
            if "cuda" in type(exc).__module__.lower() or "Cuda" in type(exc).__name__:
                break
            continue
        done += 1
        ops[case["op"]] = ops.get(case["op"], 0) + 1
        key = f"{case['op']}: {algorithm}"
        algorithms[key] = algorithms.get(key, 0) + 1
        if bad.size:
            wrong.append(dict(case, wrong_bytes=int(bad.size), first=int(bad[0])))
            print("WRONG", describe(case), f"{bad.size} bytes, the first at {bad[0]}", flush=True)
        if args.json and done % 500 == 0:  # a run cut short still leaves its count
            _write(args.json, dict(cases=done, wrong_cases=len(wrong), wrong=wrong[:50], errors=errors[:50],
                                   partial=True,
                                   seconds=time.time() - t0, ops=ops, algorithms=algorithms))
        if hung:
            break
    state["running"] = False
    result = dict(benchmark="soak", cases=done, wrong_cases=len(wrong), wrong=wrong[:50], errors=errors[:50],
                  error_cases=len(errors), hangs=hung,
                  seconds=time.time() - t0, ops=ops, algorithms=dict(sorted(algorithms.items())),
                  libraries=list(libs.names),
                  knobs={"seed": args.seed, "cases": args.cases, "first": args.first, "only": args.only,
                         "cpu": args.cpu, "max_bytes": args.max_bytes, "hang_s": args.hang_s},
                  environment=environment(gpu=not args.cpu))
    print(f"soak ({'CPU' if args.cpu else 'GPU'}, seed {args.seed}): {done} cases, {len(wrong)} wrong, "
          f"{len(errors)} raised, {len(hung)} hangs, {result['seconds']:.0f} s; cases by op {ops}", flush=True)
    if args.json:
        _write(args.json, result)
    return 1 if wrong or errors or hung else 0


def _write(path: str, data: dict) -> None:
    with open(path, "w") as fh:
        json.dump(data, fh, indent=1, default=str)


if __name__ == "__main__":
    raise SystemExit(main())
