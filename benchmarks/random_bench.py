"""A benchmark that cannot be overfitted: shapes and shifts drawn at random, a fresh seed each run (issue #33).

Every case is drawn from a seeded distribution that no planner threshold was tuned on:

* the op: ``roll`` of the flattened array (``axis=None``), ``roll`` over a tuple of axes
  ("roll-axes": a random subset of 1 to all axes of a 2-4-D array), ``roll_rows`` (a shift per lane, lanes
  along the last axis, lane lengths log-uniform from 16 bytes to 4 MiB), ``fftshift`` and ``ifftshift``
  (all axes, or a random subset);
* the item size: 1, 2, 4, 8 or 16 bytes (uint8; int16 or float16; float32; float64 or complex64;
  complex128), the data random bytes (NaN payloads included: results are compared byte for byte);
* 1-4 dimensions; the total bytes log-uniform in ``[--min-bytes, --max-bytes]``; sides log-uniform
  from 1 to 2**17, each then kept as drawn or snapped to a power of two, a prime near it or a power of two
  plus or minus one; one side, at a random axis, is then fixed to hit the total (it may exceed 2**17:
  a 1-D array of 1 GiB has 2**30 elements) and snapped the same way where the total stays in range;
* shifts uniform in ``[-n, n]`` per axis (``n`` the axis' length, or the size for a flat roll) and per
  lane for ``roll_rows``; a draw that would move nothing is drawn again.

Case ``i`` of seed ``S`` is drawn by ``numpy.random.default_rng([S, i])`` alone and ``roll_rows``' shifts
by ``default_rng([S, i, 1])``, so one case reproduces without the others (``--seed S --only i``, with the
run's ``--min-bytes``/``--max-bytes``, which its JSON records); the worst points are printed with a
line that makes the call.

GPU (``--gpu``; the default where numba-cuda finds a GPU): CuPy arrays (torch tensors without CuPy).
Each case is checked first against the out-of-place peer (byte for byte), then timed as users time it,
with rotate/bench.py's timers: (a) the whole call, 20 calls back to back between two CUDA events (host
work included; the headline), (b) one synchronised call at a time, (c) device time alone. Each is a
percentage of a device-to-device memcpy of the same bytes measured in the same case (device time: 100%
moves 2N bytes at the copy's speed). Peers are timed the same three ways: ``cupy.roll``/``torch.roll``,
``cupy.fft.fftshift``/``torch.fft.fftshift`` (and ``ifftshift``), ``cupy.take_along_axis``/``torch.gather``
with an index built before the timed region (left out where the index would not fit). A peer's call
is timed alone: its result is a second array, not the input rolled in place (a user comparing would
time it that way; copying it back would cost another memcpy). A missing or failing peer is recorded,
not fatal. ``--budget-seconds`` (default 420) stops drawing new cases once the next one would not fit.

CPU (``--cpu``; the default without a GPU): numpy arrays, the same draws. Each case is checked against
numpy, then timed with numba on one thread (``numba.set_num_threads(1)``) and on all threads, against
``np.copyto`` of the same bytes (one thread: the speed of light) and the peer made in place: ``np.roll``,
``np.fft.fftshift``/``ifftshift`` or ``np.take_along_axis`` (prebuilt index) plus a copy back. A buffer
of ``--flush-mib`` MiB is written before every timed call so that each starts out of cache.

Reported per op: the min, p10 and median of the headline (GPU: % of memcpy; CPU: shown as times
``np.copyto``'s time, worst, p10 = the 10% worst, median), the other timings' medians, the best peer at
the same points, the points where a peer is faster, and the worst five points with their reproduction.

Run::

    python benchmarks/random_bench.py [--gpu|--cpu] [--seed S] [--cases N] [--min-bytes 256M]
        [--max-bytes 8G] [--budget-seconds 420] [--json out.json] [--plot out.png] [--quick]
    python benchmarks/random_bench.py --from out.json ... [--summary-md] [--plot out.png]   # no GPU needed

Public API only: ``rotate.roll``, ``roll_rows``, ``fftshift``, ``ifftshift``, ``plan``, ``plan_roll_rows``
and rotate/bench.py's timers and progress line.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
for _path in (ROOT, ROOT / "benchmarks"):  # the checkout's rotate; _harness/ however this file is loaded
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from _harness.shapes import draw_shape, log_uniform, snap  # noqa: E402

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
OPS = ("roll", "roll-axes", "roll_rows", "fftshift", "ifftshift")
#: Item size -> the dtypes drawn for it (each item size is drawn with equal probability, then a dtype).
DTYPES = {1: ("uint8",), 2: ("int16", "float16"), 4: ("float32",), 8: ("float64", "complex64"),
          16: ("complex128",)}
LANE_BYTES = (16, 4 * MiB)  # roll_rows' lane lengths, log-uniform in bytes (at least 2 items)
GPU_BYTES = (256 * MiB, 8 * GiB)
CPU_BYTES = (16 * MiB, 256 * MiB)
GPU_QUICK_BYTES = (256 * MiB, 1 * GiB)
CPU_QUICK_BYTES = (4 * KiB, 256 * KiB)
#: The in-place ceiling measured on the H200: the copy kernel's 91-93% of memcpy (issue #33); the plot's line.
IN_PLACE_CEILING_PCT = 92.0
#: The headline key of each mode, on the case's "rotate" record and on each peer's.
HEADLINE = {"gpu": "pct_memcpy", "cpu": "pct_1thread"}
WORST = 5


# --- the draw (no timing) ------------------------------------------------------------------------------

def draw_case(seed: int, index: int, min_bytes: int, max_bytes: int) -> dict:
    """Case ``index`` of ``seed``: op, shape, dtype, axes and shifts (roll_rows: its lanes' shifts come from
    `lane_shifts`). Depends only on its arguments."""
    rng = np.random.default_rng([seed, index])
    op = OPS[int(rng.integers(len(OPS)))]
    itemsize = [1, 2, 4, 8, 16][int(rng.integers(5))]
    names = DTYPES[itemsize]
    dtype = names[int(rng.integers(len(names)))]
    nbytes = log_uniform(rng, min_bytes, max_bytes)
    lo_e, hi_e = -(-min_bytes // itemsize), max_bytes // itemsize
    elements = max(2, nbytes // itemsize)
    ndim = int(rng.integers(2 if op == "roll-axes" else 1, 5))
    case = {"index": index, "seed": seed, "op": op, "dtype": dtype, "itemsize": itemsize}
    if op == "roll_rows" and ndim > 1:
        lo_lane = max(LANE_BYTES[0] // itemsize, 2)
        hi_lane = max(lo_lane, min(LANE_BYTES[1] // itemsize, elements // 2))
        lane = snap(rng, log_uniform(rng, lo_lane, hi_lane), lo_lane, hi_lane)
        shape = draw_shape(rng, ndim, elements, lo_e, hi_e, last=lane)
    else:
        shape = draw_shape(rng, ndim, elements, lo_e, hi_e)
    case["shape"] = list(shape)
    case["nbytes"] = int(np.prod(shape)) * itemsize
    size = int(np.prod(shape))
    for _ in range(100):  # a draw that moves nothing is drawn again
        if op == "roll":
            case["axes"], case["shift"] = None, int(rng.integers(-size, size, endpoint=True))
            moves = size > 1 and case["shift"] % size != 0
        elif op == "roll-axes":
            count = int(rng.integers(1, ndim + 1))
            axes = sorted(int(a) for a in rng.choice(ndim, count, replace=False))
            case["axes"] = axes
            case["shift"] = [int(rng.integers(-shape[a], shape[a], endpoint=True)) for a in axes]
            moves = any(s % shape[a] for s, a in zip(case["shift"], axes))
        elif op == "roll_rows":
            case["axes"], case["shift"] = [ndim - 1], None
            case["lane_length"], case["lanes"] = shape[-1], size // shape[-1]
            case["shifts_seed"] = [seed, index, 1]
            moves = shape[-1] > 1
        else:
            if ndim == 1 or rng.random() < 0.5:
                axes = None
            else:
                count = int(rng.integers(1, ndim))
                axes = sorted(int(a) for a in rng.choice(ndim, count, replace=False))
            case["axes"], case["shift"] = axes, None
            moves = any(shape[a] > 1 for a in (range(ndim) if axes is None else axes))
        if moves:
            break
    return case


def draw_cases(seed: int, count: int, min_bytes: int, max_bytes: int) -> list:
    return [draw_case(seed, i, min_bytes, max_bytes) for i in range(count)]


def lane_shifts(case: dict) -> np.ndarray:
    """roll_rows' shifts of ``case``: int64, one per lane (shape ``shape[:-1]``), uniform in [-n, n]."""
    n = case["shape"][-1]
    return np.random.default_rng(case["shifts_seed"]).integers(-n, n, size=tuple(case["shape"][:-1]),
                                                               endpoint=True, dtype=np.int64)


def fft_axes(case: dict) -> tuple:
    return tuple(range(len(case["shape"]))) if case["axes"] is None else tuple(case["axes"])


def roll_args(case: dict):
    """``(shift, axis)`` of the rotate.roll call (and rotate.plan) the case makes; fftshift's halves too."""
    op, shape = case["op"], case["shape"]
    if op == "roll":
        return case["shift"], None
    if op == "roll-axes":
        return tuple(case["shift"]), tuple(case["axes"])
    axes = fft_axes(case)
    sign = 1 if op == "fftshift" else -1
    return tuple(sign * (shape[a] // 2) for a in axes), axes


def describe(case: dict) -> str:
    shape = "(" + ", ".join(map(str, case["shape"])) + ("," if len(case["shape"]) == 1 else "") + ")"
    text = f"{case['op']} {shape} {case['dtype']}"
    if case["op"] in ("roll", "roll-axes"):
        text += f" shift {case['shift']} axis {case['axes']}"
    elif case["op"] == "roll_rows":
        text += f" ({case['lanes']} lanes of {case['lane_length'] * case['itemsize']} B)"
    else:
        text += f" axes {case['axes']}"
    return text


def reproduction(case: dict, mode: str = "cpu") -> str:
    """One line that makes the case's call (``x``: an array of its shape and dtype; on a GPU a CuPy array)."""
    shape = tuple(case["shape"])
    where = f"x: {shape} {case['dtype']}; seed {case['seed']} case {case['index']}"
    op = case["op"]
    if op in ("roll", "roll-axes"):
        shift, axis = roll_args(case)
        return f"rotate.roll(x, {shift!r}, {axis!r})  # {where}"
    if op == "roll_rows":
        n = shape[-1]
        xp = "int" if len(shape) == 1 else "cupy.asarray" if mode == "gpu" else ""
        shifts = (f"np.random.default_rng({case['shifts_seed']}).integers(-{n}, {n}, size={shape[:-1]!r}, "
                  f"endpoint=True)")
        return f"rotate.roll_rows(x, {f'{xp}({shifts})' if xp else shifts})  # {where}"
    return f"rotate.{op}(x, axes={case['axes'] if case['axes'] is None else tuple(case['axes'])!r})  # {where}"


# --- array libraries: what the checks and the peers call ---------------------------------------------

class ArrayLib:
    """numpy or CuPy (the same names): random arrays, byte-for-byte checks and the out-of-place peers."""

    def __init__(self, xp, name):
        self.xp, self.name = xp, name

    def random_bytes(self, nbytes: int, seed):
        if self.name == "numpy":
            return np.random.default_rng(seed).integers(1, 256, nbytes, dtype=np.uint8)  # never zero
        return self.xp.random.randint(0, 256, nbytes, dtype=self.xp.uint8)

    def shaped(self, raw, case):
        return raw[: case["nbytes"]].view(case["dtype"]).reshape(case["shape"])

    def same_bytes(self, a, b) -> bool:
        xp = self.xp
        return bool(xp.array_equal(a.reshape(-1).view(xp.uint8), b.reshape(-1).view(xp.uint8)))

    def int64(self, host):
        return self.xp.asarray(host)

    def roll(self, x, shift, axis):
        return self.xp.roll(x, shift, axis)

    def fftshift(self, x, axes, inverse=False):
        return (self.xp.fft.ifftshift if inverse else self.xp.fft.fftshift)(x, axes)

    def gather_last(self, x, idx):
        return self.xp.take_along_axis(x, idx, -1)

    def lane_index(self, n, shifts):
        """The gather's index, ``(arange(n) - shifts[..., None]) % n``, with one temporary of its size."""
        idx = self.xp.arange(n, dtype=self.xp.int64) - shifts[..., None]
        self.xp.remainder(idx, n, out=idx)
        return idx

    def free(self):
        if self.name == "cupy":
            self.xp.get_default_memory_pool().free_all_blocks()


class TorchLib(ArrayLib):
    """torch tensors on the GPU (where CuPy is missing)."""

    def __init__(self, torch):
        super().__init__(torch, "torch")

    def random_bytes(self, nbytes, seed):
        return self.xp.randint(0, 256, (nbytes,), dtype=self.xp.uint8, device="cuda")

    def shaped(self, raw, case):
        return raw[: case["nbytes"]].view(getattr(self.xp, case["dtype"])).reshape(case["shape"])

    def same_bytes(self, a, b):
        u8 = self.xp.uint8
        return bool(self.xp.equal(a.reshape(-1).view(u8), b.reshape(-1).view(u8)))

    def int64(self, host):
        return self.xp.as_tensor(host, device="cuda")

    def roll(self, x, shift, axis):
        return self.xp.roll(x, shift, axis)

    def fftshift(self, x, axes, inverse=False):
        return (self.xp.fft.ifftshift if inverse else self.xp.fft.fftshift)(x, axes)

    def gather_last(self, x, idx):
        return self.xp.gather(x, -1, idx)

    def lane_index(self, n, shifts):
        idx = self.xp.arange(n, dtype=self.xp.int64, device="cuda") - shifts[..., None]
        return idx.remainder_(n)

    def free(self):
        self.xp.cuda.empty_cache()


#: Elements of a lane index the check builds at a time (8 bytes each).
CHECK_CHUNK = 1 << 26


def expected(lib, case, x, shifts):
    """The case's result out of place (the peer's), computed from ``x`` before the call."""
    if case["op"] in ("roll", "roll-axes"):
        shift, axis = roll_args(case)
        return lib.roll(x, shift, axis)
    if case["op"] in ("fftshift", "ifftshift"):
        return lib.fftshift(x, fft_axes(case), inverse=case["op"] == "ifftshift")
    return None  # roll_rows: checked lane chunk by lane chunk (the whole index may not fit)


def rows_match(lib, case, before, after, shifts) -> bool:
    """roll_rows' result against the gather, a chunk of lanes at a time (lanes longer than a chunk: a roll
    each), so that the index never exceeds CHECK_CHUNK elements."""
    n = case["shape"][-1]
    b2, a2 = before.reshape(-1, n), after.reshape(-1, n)
    s = lib.int64(np.array([shifts], np.int64)) if isinstance(shifts, int) else shifts.reshape(-1)
    lanes = b2.shape[0]
    step = max(1, CHECK_CHUNK // n)
    for lo in range(0, lanes, step):
        hi = min(lanes, lo + step)
        if n > CHECK_CHUNK:
            got, want = a2[lo], lib.roll(b2[lo], int(s[lo]), 0)
        else:
            got, want = a2[lo:hi], lib.gather_last(b2[lo:hi], lib.lane_index(n, s[lo:hi]))
        if not lib.same_bytes(got, want):
            return False
    return True


def rotate_call(rotate, case, x, shifts):
    """The case's call on ``x`` (a closure) and its plan."""
    op = case["op"]
    if op in ("roll", "roll-axes"):
        shift, axis = roll_args(case)
        return (lambda: rotate.roll(x, shift, axis)), rotate.plan(x, shift, axis)
    if op == "roll_rows":
        return (lambda: rotate.roll_rows(x, shifts)), rotate.plan_roll_rows(x, shifts)
    fn = rotate.fftshift if op == "fftshift" else rotate.ifftshift
    axes = None if case["axes"] is None else tuple(case["axes"])
    shift, axis = roll_args(case)
    return (lambda: fn(x, axes)), rotate.plan(x, shift, axis)


def plan_record(plan) -> dict:
    return {"algorithm": plan.algorithm, "summary": str(plan).splitlines()[0],
            "traffic": plan.bytes_moved / plan.ideal_bytes if plan.ideal_bytes else None}


def verify(lib, rotate, case, x, shifts) -> bool:
    """The case's call on ``x`` equals the out-of-place result byte for byte (``x`` is left rolled)."""
    call, _ = rotate_call(rotate, case, x, shifts)
    if case["op"] == "roll_rows":
        before = x.clone() if lib.name == "torch" else x.copy()
        call()
        ok = rows_match(lib, case, before, x, shifts)
        del before
    else:
        want = expected(lib, case, x, shifts)
        call()
        ok = lib.same_bytes(x, want)
        del want
    lib.free()
    return ok


# --- provenance -------------------------------------------------------------------------------------------

def provenance(gpu: bool) -> dict:
    """Commit (``ROTATE_GIT_COMMIT`` where the tree has no git), versions, machine."""
    from importlib import metadata

    def version(*dists):
        for dist in dists:
            try:
                return metadata.version(dist)
            except Exception:
                pass
        return None

    commit, dirty = os.environ.get("ROTATE_GIT_COMMIT"), None
    if commit:
        dirty = commit.endswith("-dirty")
    else:
        try:
            commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                                    timeout=10, check=True).stdout.strip()
            dirty = bool(subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                                        capture_output=True, text=True, timeout=10).stdout.strip())
        except Exception:
            commit = "unknown"
    out = {"commit": commit, "dirty": dirty, "python": platform.python_version(), "platform": platform.platform(),
           "cpus": os.cpu_count(),
           "versions": {"python": platform.python_version(), "numpy": np.__version__,
                        "numba": version("numba"), "numba-cuda": version("numba-cuda"),
                        "cupy": version("cupy", "cupy-cuda13x", "cupy-cuda12x"), "torch": version("torch"),
                        "rotate": version("inplace-rotate")}}
    if gpu:
        try:
            from numba import cuda

            name = cuda.get_current_device().name
            out["gpu"] = name.decode() if isinstance(name, bytes) else str(name)
        except Exception as exc:
            out["gpu"] = f"unknown ({type(exc).__name__})"
    return out


def load_average():
    return list(os.getloadavg()) if hasattr(os, "getloadavg") else None


# --- the runs ------------------------------------------------------------------------------------------

class Budget:
    """Stops drawing new cases once the next one would not finish within ``seconds`` of the start: its
    estimate is the median seconds per unit of weight of the cases so far (the first left out once
    others finished: it compiles)."""

    def __init__(self, seconds, started):
        self.seconds, self.started, self.rates = seconds, started, []

    def record(self, seconds, weight):
        self.rates.append(seconds / weight)

    def allows(self, weight, now=None) -> bool:
        if not self.seconds:
            return True
        now = time.monotonic() if now is None else now
        if now - self.started >= self.seconds:
            return False
        if not self.rates:
            return True
        rates = self.rates[1:] if len(self.rates) > 2 else self.rates
        return now - self.started + float(np.median(rates)) * weight <= self.seconds


def _best_peer(record, key):
    best = None
    for name, peer in record["peers"].items():
        if key in peer and (best is None or peer[key] > record["peers"][best][key]):
            best = name
    record["best_peer"] = best
    record["best_peer_pct"] = record["peers"][best][key] if best else None


def run_cpu(cases, args, log, progress, budget, results, save):
    import numba

    import rotate
    from rotate import bench

    all_threads = numba.get_num_threads()
    lib = ArrayLib(np, "numpy")
    biggest = max(c["nbytes"] for c in cases)
    raw = lib.random_bytes(biggest, [args.seed, 2])
    other = np.empty_like(raw)
    flush = np.zeros(args.flush_mib * MiB, np.uint8) if args.flush_mib else None

    def median_ms(fn, count):
        return bench.flushed_median_ms(fn, count, flush)

    for case in cases:
        weight = case["nbytes"] + CPU_CASE_OVERHEAD
        if not budget.allows(weight):
            return True
        progress.step(describe(case))
        started = time.monotonic()
        record = dict(case)
        x = lib.shaped(raw, case)
        shifts = None
        if case["op"] == "roll_rows":
            host = lane_shifts(case)
            shifts = int(host) if host.ndim == 0 else host
        try:
            numba.set_num_threads(all_threads)
            call, plan = rotate_call(rotate, case, x, shifts)
            record["plan"] = plan_record(plan)
            record["noop"] = plan.algorithm == "noop"
            record["verified"] = verify(lib, rotate, case, x, shifts)
            nb = case["nbytes"]
            copyto_ms = median_ms(lambda: np.copyto(other[:nb], raw[:nb]), args.repeat)
            rot = {"ms_threads": median_ms(call, args.repeat), "threads": all_threads}
            numba.set_num_threads(1)
            call1, plan1 = rotate_call(rotate, case, x, shifts)
            record["plan_1thread"] = plan_record(plan1)
            rot["ms_1thread"] = median_ms(call1, args.repeat)
            numba.set_num_threads(all_threads)
            for key in ("1thread", "threads"):
                rot[f"pct_{key}"] = 100 * copyto_ms / rot[f"ms_{key}"]
                rot[f"x_copyto_{key}"] = rot[f"ms_{key}"] / copyto_ms
            record["copyto_ms"], record["rotate"] = copyto_ms, rot
            record["peers"] = {}
            for name, peer in cpu_peers(lib, case, x, shifts, nb).items():
                if isinstance(peer, str):
                    record["peers"][name] = {"skipped": peer}
                    continue
                try:
                    ms = median_ms(peer, args.repeat)
                    record["peers"][name] = {"ms": ms, "pct_1thread": 100 * copyto_ms / ms,
                                             "x_copyto": ms / copyto_ms}
                except Exception as exc:
                    record["peers"][name] = {"error": f"{type(exc).__name__}: {exc}"[:200]}
            _best_peer(record, "pct_1thread")
        except Exception as exc:  # one failing case must not lose the others' numbers
            record["error"] = f"{type(exc).__name__}: {exc}"[:300]
            record.setdefault("verified", False)
        finally:
            numba.set_num_threads(all_threads)
        record["seconds"] = time.monotonic() - started
        budget.record(record["seconds"], weight)
        results.append(record)
        log(format_case(record, "cpu"))
        save()
    return False


#: A case's fixed cost in the progress and budget estimates, as bytes of array.
CPU_CASE_OVERHEAD = 1 * MiB


def _available_host_bytes():
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 8 * GiB


def cpu_peers(lib, case, x, shifts, nbytes) -> dict:
    """The peers made in place: numpy's out-of-place call plus a copy back (a string: why one is left out)."""
    op = case["op"]
    if op in ("roll", "roll-axes"):
        shift, axis = roll_args(case)
        return {"np.roll + copy back": lambda: np.copyto(x, np.roll(x, shift, axis))}
    if op in ("fftshift", "ifftshift"):
        fn = np.fft.fftshift if op == "fftshift" else np.fft.ifftshift
        axes = fft_axes(case)
        return {f"np.fft.{op} + copy back": lambda: np.copyto(x, fn(x, axes))}
    name = "np.take_along_axis + copy back"
    index_bytes = 8 * nbytes // case["itemsize"]
    if index_bytes + 2 * nbytes > _available_host_bytes() // 2:
        return {name: f"the index ({index_bytes} bytes) does not fit in memory"}
    idx = lib.lane_index(case["shape"][-1], np.asarray(shifts, np.int64))
    return {name: lambda: np.copyto(x, np.take_along_axis(x, idx, -1))}


def gpu_libraries():
    """``(lib, cupy, torch)``: the arrays' library (CuPy, else torch) and the peers' (None where missing)."""
    torch = cupy = None
    try:
        import torch as _torch

        if _torch.cuda.is_available():
            torch = _torch
    except Exception:
        pass
    try:
        import cupy
    except Exception:
        cupy = None
    if cupy is not None:
        return ArrayLib(cupy, "cupy"), cupy, torch
    if torch is not None:
        return TorchLib(torch), None, torch
    return None, None, None


def run_gpu(cases, args, log, progress, budget, results, save):
    from numba import cuda

    from rotate import bench

    from _harness import timing

    lib, cupy, torch = gpu_libraries()
    stream = cuda.default_stream()  # the legacy default stream: CuPy's and torch's default too
    timers = (*timing.whole_call_timers(cuda, stream, args.calls), timing.events_timer(cuda, stream))

    def free():
        lib.free()
        if torch is not None:
            torch.cuda.empty_cache()

    for case in cases:
        weight = case["nbytes"] + bench.CASE_OVERHEAD_BYTES
        if not budget.allows(weight):
            return True
        progress.step(describe(case))
        started = time.monotonic()
        record = dict(case)
        try:
            gpu_case(record, args, lib, cupy, torch, cuda, stream, timers, free)
        except Exception as exc:  # one failing case must not lose the others' numbers
            record["error"] = f"{type(exc).__name__}: {exc}"[:300]
            record.setdefault("verified", False)
        free()  # the case's arrays died with gpu_case's frame
        record["seconds"] = time.monotonic() - started
        budget.record(record["seconds"], weight)
        results.append(record)
        log(format_case(record, "gpu"))
        save()
    return False


def gpu_case(record, args, lib, cupy, torch, cuda, stream, timers, free) -> None:
    """One case on the GPU: memcpy of its bytes, the check, rotate and the peers timed three ways (its
    arrays are this frame's locals, freed when it returns or raises)."""
    import rotate

    from _harness import timing

    b2b, _, device = timers
    nb = record["nbytes"]
    full_calls = 6 + max(3, args.repeat // 2) * args.calls + max(2 * args.repeat, 20) + args.repeat

    def timed(fn) -> dict:
        """rotate/bench.py's three timings, or, where one call is so slow that they would take more than
        --slow-seconds (a cliff: 0.1% of memcpy makes an 8 GiB call seconds long), one synchronised call
        after a warm-up, recorded as all three and marked."""
        fn()  # warm-up (a peer's first call may compile its kernel)
        cuda.synchronize()
        start, stop = cuda.event(), cuda.event()
        start.record(stream)
        fn()
        stop.record(stream)
        stop.synchronize()
        probe = cuda.event_elapsed_time(start, stop)
        if probe * full_calls / 1e3 > args.slow_seconds:
            return {"ms": probe, "sync_ms": probe, "device_ms": probe,
                    "reduced": f"one synchronised call: the full timing would take about "
                               f"{probe * full_calls / 1e3:.0f} s"}
        return timing.time_all_ways(fn, timers, args.repeat)

    copy, keep = timing.memcpy(cuda, nb, stream)
    record["memcpy_ms"] = device(copy, args.repeat)
    record["memcpy_call_ms"] = b2b(copy, args.repeat)
    del copy, keep
    free()
    raw = lib.random_bytes(nb, None)
    x = lib.shaped(raw, record)
    shifts = None
    if record["op"] == "roll_rows":
        host = lane_shifts(record)
        shifts = int(host) if host.ndim == 0 else lib.int64(host)
        del host
    call, plan = rotate_call(rotate, record, x, shifts)
    record["plan"] = plan_record(plan)
    record["noop"] = plan.algorithm == "noop"
    record["verified"] = verify(lib, rotate, record, x, shifts)
    record["rotate"] = with_pct(timed(call), record["memcpy_ms"])
    record["peers"] = {}
    peers = gpu_peers(lib, cupy, torch, record, x, shifts, nb)
    for name in list(peers):
        peer = peers.pop(name)
        if isinstance(peer, str):
            record["peers"][name] = {"error": peer[7:]} if peer.startswith("error: ") else {"skipped": peer}
            continue
        try:
            record["peers"][name] = with_pct(timed(peer), record["memcpy_ms"])
        except Exception as exc:  # e.g. out of memory, a dtype a library has no kernel for
            record["peers"][name] = {"error": f"{type(exc).__name__}: {exc}"[:200]}
        del peer
        free()
    _best_peer(record, "pct_memcpy")


def with_pct(times: dict, memcpy_ms: float) -> dict:
    """rotate/bench.py's percentages of memcpy, with a reduced timing's note kept."""
    from _harness import timing

    note = {k: v for k, v in times.items() if k == "reduced"}
    return {**timing.with_pct({k: v for k, v in times.items() if k != "reduced"}, memcpy_ms), **note}


def _device_free_bytes(lib) -> int:
    if lib.name == "numpy":  # the tests' stand-in for CuPy
        return _available_host_bytes()
    if lib.name == "cupy":
        return int(lib.xp.cuda.runtime.memGetInfo()[0])
    return int(lib.xp.cuda.mem_get_info()[0])


def gpu_peers(lib, cupy, torch, case, x, shifts, nbytes) -> dict:
    """The out-of-place peers of the case, each a closure over ``x`` (timed alone: its result is a second
    array); a string says why one is left out."""
    op = case["op"]
    t, peers = None, {}
    if torch is not None:
        try:
            t = x if lib.name == "torch" else torch.as_tensor(x, device="cuda")
        except Exception as exc:  # a dtype torch cannot take through __cuda_array_interface__
            peers["torch"] = f"error: {type(exc).__name__}: {exc}"[:200]
    if op in ("roll", "roll-axes"):
        shift, axis = roll_args(case)
        if cupy is not None:
            peers["cupy.roll"] = lambda: cupy.roll(x, shift, axis)
        if t is not None:
            peers["torch.roll"] = lambda: torch.roll(t, shift, axis)
    elif op in ("fftshift", "ifftshift"):
        axes = fft_axes(case)
        if cupy is not None:
            fn = getattr(cupy.fft, op)
            peers[f"cupy.fft.{op}"] = lambda: fn(x, axes)
        if t is not None:
            tfn = getattr(torch.fft, op)
            peers[f"torch.fft.{op}"] = lambda: tfn(t, axes)
    else:
        index_bytes = 8 * nbytes // case["itemsize"]
        names = (["cupy.take_along_axis"] if cupy is not None else []) + (["torch.gather"] if t is not None else [])
        if index_bytes + nbytes > 0.85 * _device_free_bytes(lib):
            return {name: f"its index ({index_bytes} bytes) and output do not fit in free memory" for name in names}
        n = case["shape"][-1]
        s = lib.int64(np.array(shifts, np.int64)) if isinstance(shifts, int) else shifts
        idx = lib.lane_index(n, s)  # built before the timed region, as a user would
        if cupy is not None:
            peers["cupy.take_along_axis"] = lambda: cupy.take_along_axis(x, idx, -1)
        if t is not None:
            tidx = idx if lib.name == "torch" else torch.as_tensor(idx, device="cuda")
            peers["torch.gather"] = lambda: torch.gather(t, -1, tidx)
    return peers


# --- reporting ---------------------------------------------------------------------------------------------

def format_case(r, mode) -> str:
    head = f"[{r['index']}] {describe(r)}"
    if "error" in r and "rotate" not in r:
        return f"{head}: ERROR {r['error']}"
    algorithm = r.get("plan", {}).get("algorithm")
    rot = r["rotate"]
    if mode == "gpu":
        text = (f"{head}: {algorithm} {rot['pct_memcpy']:.1f}% of memcpy back to back (one call "
                f"{rot['sync_pct_memcpy']:.1f}%, device {rot['device_pct_memcpy']:.1f}%)")
        if "reduced" in rot:
            text += " [slow: one call timed]"
        peers = ", ".join(f"{k} {v['pct_memcpy']:.1f}%" if "pct_memcpy" in v else f"{k} n/a"
                          for k, v in r["peers"].items())
    else:
        text = (f"{head}: {algorithm} {rot['x_copyto_1thread']:.2f}x np.copyto (1 thread), "
                f"{rot['x_copyto_threads']:.2f}x on {rot['threads']} threads")
        peers = ", ".join(f"{k} {v['x_copyto']:.2f}x" if "x_copyto" in v else f"{k} n/a"
                          for k, v in r["peers"].items())
    if peers:
        text += " | " + peers
    if not r.get("verified"):
        text += "  NOT VERIFIED (wrong result or error)"
    return text


def _stats(values):
    if not values:
        return None
    v = np.asarray(values, float)
    return {"min": float(v.min()), "p10": float(np.percentile(v, 10)), "median": float(np.median(v))}


def summarize(cases, mode) -> dict:
    """Per op: cases timed, min/p10/median of each timing (pct: higher is faster), the best peer's at the
    same points, the points where a peer is faster, and the worst points (headline) with their line."""
    key = HEADLINE[mode]
    others = (["sync_pct_memcpy", "device_pct_memcpy"] if mode == "gpu" else ["pct_threads"])
    out = {}
    for op in OPS:
        timed = [c for c in cases if c["op"] == op and "rotate" in c and not c.get("noop")]
        if not timed:
            continue
        entry = {"cases": len(timed), "verified": sum(bool(c.get("verified")) for c in timed),
                 "rotate": _stats([c["rotate"][key] for c in timed])}
        for other in others:
            entry[other] = _stats([c["rotate"][other] for c in timed])
        with_peer = [c for c in timed if c.get("best_peer_pct") is not None]
        entry["best_peer"] = _stats([c["best_peer_pct"] for c in with_peer])
        entry["peer_faster"] = [c["index"] for c in with_peer if c["best_peer_pct"] > c["rotate"][key]]
        worst = sorted(timed, key=lambda c: c["rotate"][key])[:WORST]
        entry["worst"] = [{"index": c["index"], "case": describe(c), "pct": c["rotate"][key],
                           "algorithm": c.get("plan", {}).get("algorithm"), "best_peer": c.get("best_peer"),
                           "best_peer_pct": c.get("best_peer_pct"), "reproduce": reproduction(c, mode)}
                          for c in worst]
        out[op] = entry
    return out


def _fmt(mode, value):
    """A pct as the table shows it: GPU % of memcpy; CPU times np.copyto's time (100 / pct)."""
    if value is None:
        return "-"
    return f"{value:.0f}%" if mode == "gpu" else f"{100 / value:.2f}x"


def _triple(mode, stats):
    if stats is None:
        return "-"
    return " / ".join(_fmt(mode, stats[k]) for k in ("min", "p10", "median"))


def summary_markdown(summary, mode, header=None) -> str:
    """The per-op table (and the worst points) for docs/performance.md."""
    lines = [header] if header else []
    if mode == "gpu":
        lines += ["| op | cases | rotate, back to back: min / p10 / median | one call: min / p10 / median "
                  "| device: median | best peer: min / p10 / median | peer faster at |",
                  "|---|---|---|---|---|---|---|"]
    else:
        lines += ["| op | cases | rotate, 1 thread: worst / p10 / median | all threads: worst / p10 / median "
                  "| best peer: worst / p10 / median | peer faster at |",
                  "|---|---|---|---|---|---|"]
    for op, e in summary.items():
        wins = f"{len(e['peer_faster'])} of {e['cases']}"
        if mode == "gpu":
            device = _fmt(mode, e["device_pct_memcpy"]["median"]) if e["device_pct_memcpy"] else "-"
            lines.append(f"| {op} | {e['cases']} | {_triple(mode, e['rotate'])} | "
                         f"{_triple(mode, e['sync_pct_memcpy'])} | {device} | {_triple(mode, e['best_peer'])} "
                         f"| {wins} |")
        else:
            lines.append(f"| {op} | {e['cases']} | {_triple(mode, e['rotate'])} | "
                         f"{_triple(mode, e['pct_threads'])} | {_triple(mode, e['best_peer'])} | {wins} |")
    total = sum(len(e["peer_faster"]) for e in summary.values())
    cases = sum(e["cases"] for e in summary.values())
    unit = "% of a device-to-device memcpy of the same bytes" if mode == "gpu" else "times np.copyto's time (one thread)"
    lines += ["", f"Values: {unit}; p10 is the 10% worst. A peer was faster at {total} of {cases} points.", "",
              "Worst points:", ""]
    for op, e in summary.items():
        for w in e["worst"]:
            peer = f", best peer {w['best_peer']} {_fmt(mode, w['best_peer_pct'])}" if w["best_peer"] else ""
            lines.append(f"* {op}: {_fmt(mode, w['pct'])} ({w['algorithm']}{peer}): `{w['reproduce']}`")
    return "\n".join(lines) + "\n"


def summary_text(summary, mode) -> str:
    return summary_markdown(summary, mode).replace("`", "")


def load(paths, for_docs=False):
    """``(cases, mode, sources)`` from result files of this benchmark; files of both modes are refused.

    ``for_docs`` (``--summary-md``): a CPU result marked unusable for the docs, or taken with the 1-minute
    load average over 0.5 per core (``rotate.bench_env.load_problem``), is refused too."""
    from rotate import bench_env

    cases, modes, sources = [], set(), []
    for path in paths:
        data = json.loads(Path(path).read_text())
        if data.get("benchmark") != "random_bench":
            raise ValueError(f"{path}: not a result of benchmarks/random_bench.py")
        problem = bench_env.load_problem(data) if bench_env.is_cpu_timing(data) else None
        if problem is not None and for_docs:
            raise ValueError(f"{path}: not for the docs: {problem}; re-measure on a quiet machine")
        if problem is not None:
            print(f"note: {path}: {problem} (--summary-md refuses it without --allow-busy)", file=sys.stderr)
        modes.add(data["mode"])
        cases += data["cases"]
        sources.append(f"{Path(path).name} (seed {data['seed']}, {data.get('device')}, commit "
                       f"{str(data['provenance']['commit'])[:12]}{'-dirty' if data['provenance']['dirty'] else ''})")
    if len(modes) > 1:
        raise ValueError("GPU and CPU results divide by different references: summarise them apart")
    return cases, modes.pop(), sources


def plot(cases, mode, path, sources=()) -> None:
    """A strip and box plot per op: rotate's headline (and GPU one call / CPU all threads) beside the best
    peer's, with reference lines (GPU: memcpy and the in-place ceiling; CPU: np.copyto and 1.5x)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    key = HEADLINE[mode]
    second = ("sync_pct_memcpy", "rotate, one call") if mode == "gpu" else ("pct_threads", "rotate, all threads")
    series = [(key, "rotate, back to back" if mode == "gpu" else "rotate, 1 thread", "tab:blue"),
              (second[0], second[1], "tab:cyan"), ("best_peer_pct", "best peer (out of place)", "tab:orange")]
    ops = [op for op in OPS if any(c["op"] == op and "rotate" in c and not c.get("noop") for c in cases)]
    fig, ax = plt.subplots(figsize=(max(7, 2.2 * len(ops)), 5.5))
    rng = np.random.default_rng(0)
    width = 0.8 / len(series)
    columns = {}
    for j, (name, label, colour) in enumerate(series):
        for i, op in enumerate(ops):
            timed = [c for c in cases if c["op"] == op and "rotate" in c and not c.get("noop")]
            values = [c["best_peer_pct"] if name == "best_peer_pct" else c["rotate"].get(name) for c in timed]
            columns[i, j] = [v for v in values if v is not None]
    every = [v for values in columns.values() for v in values]
    top = min(max(every + [100.0]), 200.0) * 1.06  # a few outliers (tiny arrays in cache) must not flatten the rest
    for (i, j), values in columns.items():
        if not values:
            continue
        name, label, colour = series[j]
        pos = i + (j - (len(series) - 1) / 2) * width
        ax.boxplot([values], positions=[pos], widths=width * 0.8, showfliers=False, manage_ticks=False,
                   medianprops={"color": colour}, boxprops={"color": colour}, whiskerprops={"color": colour},
                   capprops={"color": colour})
        jitter = pos + rng.uniform(-width / 3, width / 3, len(values))
        inside = np.asarray(values) <= top
        ax.scatter(jitter[inside], np.asarray(values)[inside], s=12, color=colour, alpha=0.7,
                   label=label if i == 0 else None, zorder=3)
        if (~inside).any():  # beyond the axis: a triangle at the top edge
            ax.scatter(jitter[~inside], [top * 0.985] * int((~inside).sum()), s=24, marker="^", color=colour,
                       zorder=3)
    if mode == "gpu":
        ax.axhline(100, color="k", linewidth=0.8, label="memcpy (100%)")
        ax.axhline(IN_PLACE_CEILING_PCT, color="k", linestyle="--", linewidth=0.8,
                   label=f"in-place ceiling (~{IN_PLACE_CEILING_PCT:.0f}%)")
        ax.set_ylabel("% of a device-to-device memcpy of the same bytes")
    else:
        ax.axhline(100, color="k", linewidth=0.8, label="np.copyto, 1 thread (100%)")
        ax.axhline(100 / 1.5, color="k", linestyle="--", linewidth=0.8, label="1.5x np.copyto's time")
        ax.set_ylabel("% of np.copyto's speed (one thread)")
    ax.set_xticks(range(len(ops)))
    ax.set_xticklabels([f"{op}\n({sum(c['op'] == op and 'rotate' in c for c in cases)} cases)" for op in ops])
    ax.set_ylim(0, top)
    ax.grid(True, axis="y", alpha=0.3)
    handles, labels = ax.get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=8, frameon=False)
    title = "Random shapes and shifts: rotate (in place) vs the best out-of-place peer"
    if sources:
        title += "\n" + "; ".join(sources)
    ax.set_title(title + "\n(boxes: quartiles and 1.5 IQR whiskers; triangles: points above the axis)", fontsize=9)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    fig.savefig(path, dpi=100)
    plt.close(fig)


# --- the command -------------------------------------------------------------------------------------------

def parse_bytes(text: str) -> int:
    """'256M', '8G', '64KiB', '4096' (bytes)."""
    t = text.strip().upper().removesuffix("IB").removesuffix("B")
    scale = {"K": KiB, "M": MiB, "G": GiB}.get(t[-1:], 1)
    return int(float(t[:-1] if scale > 1 else t) * scale)


def gpu_available() -> bool:
    from rotate import bench

    return bench.gpu_available()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python benchmarks/random_bench.py", description=__doc__.splitlines()[0])
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--gpu", action="store_true", help="benchmark the GPU; fail without one")
    where.add_argument("--cpu", action="store_true", help="benchmark the CPU backend (the default without a GPU)")
    parser.add_argument("--seed", type=int, help="the draw's seed (default: a fresh one, recorded)")
    parser.add_argument("--cases", type=int, help="cases to draw (default GPU 100, CPU 30; --quick 8)")
    parser.add_argument("--only", help="run only these case indices of the seed (comma separated)")
    parser.add_argument("--min-bytes", type=parse_bytes,
                        help="smallest total (K/M/G suffixes); default GPU 256M, CPU 16M (--quick: GPU 256M, CPU 4K)")
    parser.add_argument("--max-bytes", type=parse_bytes,
                        help="largest total; default GPU 8G (capped at 45%% of free device memory), CPU 256M "
                             "(--quick: GPU 1G, CPU 256K)")
    parser.add_argument("--budget-seconds", type=float,
                        help="stop drawing new cases when the next would end past this (default GPU 420, CPU none; "
                             "0: none)")
    parser.add_argument("--repeat", type=int, help="timed calls a median is taken of (default 5; CPU --quick 3)")
    parser.add_argument("--calls", type=int, default=20, help="GPU: calls back to back between two events")
    parser.add_argument("--slow-seconds", type=float, default=20,
                        help="GPU: a call whose three timings would take longer is timed once (marked 'reduced')")
    parser.add_argument("--flush-mib", type=int,
                        help="CPU: MiB written before every timed call (default 256; --quick 8; 0: off)")
    parser.add_argument("--quick", action="store_true", help="a short run: 8 cases, small sizes")
    parser.add_argument("--json", help="write every case, the summary and the provenance here (after every case)")
    parser.add_argument("--plot", help="a PNG: the distribution per op (needs matplotlib: the bench extra)")
    parser.add_argument("--no-progress", action="store_true", help="no progress line on stderr")
    parser.add_argument("--from", dest="sources", nargs="+", metavar="RESULT.json",
                        help="run nothing: summarise (and --plot) these results of earlier runs; no GPU needed")
    parser.add_argument("--summary-md", action="store_true", help="with --from: print the markdown table")
    from rotate import bench_env

    bench_env.add_arguments(parser.add_argument_group("CPU: the load check (rotate/bench_env.py)"))
    args = parser.parse_args(argv)
    if args.sources:
        cases, mode, sources = load(args.sources, for_docs=args.summary_md and not args.allow_busy)
        summary = summarize(cases, mode)
        header = "Results: " + "; ".join(sources) + "\n"
        print(summary_markdown(summary, mode, header) if args.summary_md else summary_text(summary, mode))
        if args.plot:
            plot(cases, mode, args.plot, sources)
            print(f"wrote {args.plot}")
        return 0
    if args.summary_md:
        parser.error("--summary-md goes with --from FILE.json")
    if args.gpu or (not args.cpu and gpu_available()):
        if not gpu_available():
            print("--gpu: no usable CUDA GPU here (numba-cuda missing, the simulator, or no device); run with "
                  "--cpu for the CPU benchmark", file=sys.stderr)
            return 1
        if gpu_libraries()[0] is None:
            print("--gpu: neither CuPy nor torch with CUDA is installed: the benchmark's arrays and peers come "
                  "from one of them (pip install cupy-cuda13x, or torch)", file=sys.stderr)
            return 1
        mode = "gpu"
    else:
        if not args.cpu:
            print("no usable CUDA GPU: benchmarking the CPU backend (--cpu)", file=sys.stderr)
        mode = "cpu"
    return run(args, mode)


def run(args, mode) -> int:
    gate = None
    if mode == "cpu":  # a busy machine: refused before anything is drawn (rotate/bench_env.py)
        from rotate import bench_env

        gate = bench_env.LoadGate.from_args(args, "benchmarks/random_bench.py --cpu")
    started_wall, started = time.time(), time.monotonic()
    load_start = load_average()
    seed = args.seed if args.seed is not None else int(np.random.SeedSequence().entropy % (1 << 32))
    args.seed = seed
    defaults = {("gpu", False): GPU_BYTES, ("gpu", True): GPU_QUICK_BYTES,
                ("cpu", False): CPU_BYTES, ("cpu", True): CPU_QUICK_BYTES}[mode, args.quick]
    min_bytes = args.min_bytes or defaults[0]
    max_bytes = args.max_bytes or defaults[1]
    count = args.cases or (8 if args.quick else 100 if mode == "gpu" else 30)
    budget_seconds = args.budget_seconds if args.budget_seconds is not None else (420 if mode == "gpu" else 0)
    args.repeat = args.repeat or (3 if args.quick and mode == "cpu" else 5)
    if args.flush_mib is None:
        args.flush_mib = 8 if args.quick else 256
    capped = None
    if mode == "gpu":
        free = _gpu_free_bytes()
        if free and max_bytes > 0.45 * free:
            capped = max_bytes = int(0.45 * free)
    if not 64 <= min_bytes <= max_bytes:
        print(f"--min-bytes {min_bytes} and --max-bytes {max_bytes}: need 64 <= min <= max", file=sys.stderr)
        return 2
    cases = draw_cases(seed, count, min_bytes, max_bytes)
    if args.only:
        wanted = [int(i) for i in args.only.split(",")]
        cases = [draw_case(seed, i, min_bytes, max_bytes) for i in wanted]
    from rotate import bench

    overhead = bench.CASE_OVERHEAD_BYTES if mode == "gpu" else CPU_CASE_OVERHEAD
    progress = bench.Progress([c["nbytes"] + overhead for c in cases], enabled=not args.no_progress)
    log = progress.log(print)
    budget = Budget(budget_seconds, started)
    results: list = []
    prov = provenance(gpu=mode == "gpu")
    reference = ("a device-to-device memcpy of the same bytes, device time (CUDA events), in the same case"
                 if mode == "gpu" else "np.copyto of the same bytes, one thread, in the same case")
    print(f"{mode.upper()}: seed {seed}, {len(cases)} cases of {min_bytes} to {max_bytes} bytes"
          f"{f' (capped by free memory)' if capped else ''}; reference: {reference}; budget "
          f"{f'{budget_seconds:.0f} s' if budget_seconds else 'none'}", flush=True)

    rerun = (f"python benchmarks/random_bench.py --{mode} --seed {seed} --min-bytes {min_bytes} "
             f"--max-bytes {max_bytes} --only INDEX")

    def document(stopped=False):
        summary = summarize(results, mode)
        doc = {"benchmark": "random_bench", "format": 1, "mode": mode, "seed": seed, "argv": sys.argv,
               "arguments": vars(args), "provenance": prov,
               "device": prov.get("gpu") if mode == "gpu" else f"CPU, {prov['cpus']} cpus",
               "load_average": {"start": load_start, "end": load_average()},
               "min_bytes": min_bytes, "max_bytes": max_bytes, "max_bytes_capped_by_free_memory": capped,
               "budget_seconds": budget_seconds, "cases_drawn": len(cases), "cases_run": len(results),
               "stopped_by_budget": stopped, "seconds": time.time() - started_wall,
               "reference": reference, "timing": TIMING[mode], "rerun": rerun, "summary": summary,
               "cases": results}
        return gate.finish(doc) if gate is not None else doc

    def save(stopped=False):
        if args.json:
            Path(args.json).write_text(json.dumps(document(stopped), indent=1, default=str))

    runner = run_gpu if mode == "gpu" else run_cpu
    stopped = runner(cases, args, log, progress, budget, results, save)
    progress.finish()
    save(stopped)
    if stopped:
        print(f"budget of {budget_seconds:.0f} s reached: {len(results)} of {len(cases)} cases ran")
    summary = summarize(results, mode)
    print(summary_text(summary, mode))
    print(f"Rerun a case with its timings: {rerun}")
    if args.json:
        print(f"wrote {args.json}")
    if args.plot:
        plot(results, mode, args.plot, [f"this run (seed {seed}, {document()['device']})"])
        print(f"wrote {args.plot}")
    wrong = [c["index"] for c in results if not c.get("verified")]
    if wrong:
        print(f"cases {wrong}: wrong results or errors")
        return 2
    return gate.status() if gate is not None else 0


def _gpu_free_bytes():
    try:
        import cupy

        return int(cupy.cuda.runtime.memGetInfo()[0])
    except Exception:
        pass
    try:
        import torch

        return int(torch.cuda.mem_get_info()[0])
    except Exception:
        return None


TIMING = {
    "gpu": {"memcpy_ms": "device-to-device memcpy of the case's bytes, device time (CUDA events)",
            "memcpy_call_ms": "the same memcpy, back to back between two events",
            "ms": "whole call: CUDA events around back-to-back Python calls (host work included), per call",
            "sync_ms": "whole call, one synchronised call at a time",
            "device_ms": "device work only (a spin kernel keeps the host ahead)",
            "pct_memcpy / sync_pct_memcpy / device_pct_memcpy": "100 * memcpy_ms / that time",
            "peers": "out-of-place calls timed alone the same three ways (their result is a second array)"},
    "cpu": {"copyto_ms": "np.copyto of the case's bytes, one thread, median",
            "ms_1thread / ms_threads": "rotate's call with numba.set_num_threads(1) / all threads, median",
            "pct_1thread / pct_threads": "100 * copyto_ms / that time",
            "x_copyto_*": "that time / copyto_ms",
            "peers": "numpy's out-of-place call plus np.copyto back into the array, median"},
}


if __name__ == "__main__":
    sys.exit(main())
