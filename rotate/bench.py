"""Benchmark suite: in-place roll as users time it, against a copy and the peers (GPU or CPU).

Run ``python -m rotate.bench`` (``--quick`` for a short run, ``--full`` for
every dtype and shift at more sizes, ``--help`` for options). It benchmarks
the GPU when numba-cuda finds one, otherwise the CPU (``--cpu`` asks for the
CPU on a GPU machine). A line on stderr gives the case, i of N, and an
estimate of the time left. ``--from FILE.json ... --plot out.png`` draws the
results of earlier runs (``docs/results/*.json``) without running anything,
so no GPU is needed to plot the committed GPU results.

GPU: for each size, dtype and shift the headline is the *whole call* -- CUDA events around
the Python call, 20 calls back to back, host work included -- as a
percentage of a device-to-device memcpy of the same N bytes measured in the
same run; then one synchronised call at a time, then device work only.
``cupy.roll`` and ``torch.roll`` (out of place), and rotate.roll through a
CuPy array and a torch tensor, are timed the same three ways when installed
(a missing or failing peer is recorded, not fatal). A small-array table
gives per-call microseconds. Every configuration is checked against
``cupy.roll`` (or numpy) before it is timed.

CPU: numpy arrays through the public API (``rotate.roll``, ``rotate.plan``)
on numba's threads, against a copy of the same bytes, ``np.copyto`` (one
thread) and a copy on as many threads as the roll: the faster of the two is
the speed of light the headline percentage divides by (on a busy machine a
threaded copy can lose a scheduler slice a call). The peer is ``np.roll``
plus a copy back (numpy's roll made in place). A buffer (``--flush-mib``) is written before every timed
call so that each starts with the array out of cache. Every configuration is
checked against ``numpy.roll`` first. A machine whose 1-minute load average is
over 0.5 per core is refused (exit status 3; ``--allow-busy`` runs anyway and
marks the result ``"usable_for_docs": false``, ``--max-load`` changes the
threshold); the load at the end is checked too (``rotate/bench_env.py``).

Both write JSON (``--json``: rows, the commit, versions, machine and every
knob) and a PNG plot (``--plot``: a grid of panels, one a shift, percentage
against size, one colour a dtype, the peers dashed beside rotate).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from typing import Callable, Optional

import numpy as np

MiB = 1 << 20
GiB = 1 << 30
DTYPES = ["uint8", "uint16", "float32", "float64", "complex128"]
SHIFTS = ["1", "3", "4097", "1MiB+5", "n/4+3", "n/3", "n/2+1", "n-7"]


def shift_elements(label: str, n: int, itemsize: int) -> int:
    """The shift (in elements) a label names for an array of n elements.

    ``randS``: a shift drawn uniformly from ``[1, n)`` by a generator seeded
    with ``S`` (the same shift on every run): what a user's shift looks like,
    where the others are structured.
    """
    if label.startswith("rand"):
        return int(np.random.default_rng(int(label[4:])).integers(1, n))
    if label == "1MiB+5":
        return (MiB + 5) // itemsize if itemsize > 1 else MiB + 5
    if label == "n/4+3":
        return n // 4 + 3
    if label == "n/3":
        return n // 3
    if label == "n/2+1":
        return n // 2 + 1
    if label.startswith("n-"):  # a right roll by n - c: a left rotation by c elements
        return n - int(label[2:])
    return int(label)


def _events_timer(cuda, stream):
    """Median device time of ``fn`` with CUDA events, host overhead excluded.

    A short spin kernel is queued before the start event so the host runs
    ahead of the GPU: the events then bracket only the device work of
    ``fn``. Host overhead is measured separately (``host_overhead``).
    """
    from numba import uint64

    @cuda.jit
    def spin(nanoseconds):
        if cuda.threadIdx.x == 0:
            waited = uint64(0)
            while waited < nanoseconds:
                cuda.nanosleep(1000)
                waited += uint64(1000)

    def time_it(fn: Callable[[], None], repeat: int, warmup: int = 2) -> float:
        for _ in range(warmup):
            fn()
        samples = []
        for _ in range(repeat):
            start, stop = cuda.event(), cuda.event()
            spin[1, 32, stream](uint64(300_000))
            start.record(stream)
            fn()
            stop.record(stream)
            stop.synchronize()
            samples.append(cuda.event_elapsed_time(start, stop))
        return statistics.median(samples)

    return time_it


def memcpy_baseline(size: int, repeat: int = 10):
    """A GPU probe's reference: ``(time_it, memcpy_ms, keep)``.

    ``time_it`` is the events timer on numba's default stream
    (``_events_timer``), ``memcpy_ms`` a device-to-device copy of ``size``
    bytes timed with it, ``keep`` that copy's buffers (hold them until the
    run ends, so later allocations do not reuse the memory mid-run).
    """
    from numba import cuda

    stream = cuda.default_stream()
    time_it = _events_timer(cuda, stream)
    copy, keep = _memcpy(cuda, size, stream)
    return time_it, time_it(copy, repeat), keep


def roll_matches_cupy(x, shift, axis=None) -> bool:
    """Roll the CuPy array ``x`` in place with rotate; whether it equals ``cupy.roll`` of its old
    contents byte for byte (NaN payloads included)."""
    import cupy

    import rotate

    expected = cupy.roll(x, shift, axis=axis)
    rotate.roll(x, shift, axis=axis)
    return bool(cupy.array_equal(x.view(cupy.uint8), expected.view(cupy.uint8)))


def _memcpy(cuda, size, stream):
    """A device-to-device copy of ``size`` bytes: the speed of light of an in-place rotate.

    torch's ``copy_`` when available (what docs/performance.md's ceilings use), else CuPy's,
    else numba's cuMemcpyDtoD.
    """
    try:
        import torch

        if torch.cuda.is_available():
            a = torch.empty(size, dtype=torch.uint8, device="cuda")
            b = torch.empty_like(a)
            return lambda: b.copy_(a), (a, b)
    except ImportError:
        pass
    try:
        import cupy

        a = cupy.empty(size, cupy.uint8)
        b = cupy.empty_like(a)
        return lambda: b.__setitem__(Ellipsis, a), (a, b)
    except ImportError:
        pass
    a = cuda.device_array(size, np.uint8)
    b = cuda.device_array(size, np.uint8)
    return lambda: b.copy_to_device(a, stream=stream), (a, b)


def _whole_call_timers(cuda, stream, calls: int = 20):
    """Time the whole call as a user does: CUDA events around the Python call, host work included.

    ``back_to_back``: ``calls`` calls between two events, per call (the host
    may run ahead of the device, as in a loop). ``one_at_a_time``: events
    around a single call on an idle device, then synchronise (what a user
    timing one call sees). Both return median milliseconds per call.
    """

    def back_to_back(fn: Callable[[], None], repeat: int, warmup: int = 2) -> float:
        for _ in range(warmup):
            fn()
        stream.synchronize()
        samples = []
        for _ in range(max(3, repeat // 2)):  # each sample is already `calls` calls
            start, stop = cuda.event(), cuda.event()
            start.record(stream)
            for _ in range(calls):
                fn()
            stop.record(stream)
            stop.synchronize()
            samples.append(cuda.event_elapsed_time(start, stop) / calls)
        return statistics.median(samples)

    def one_at_a_time(fn: Callable[[], None], repeat: int, warmup: int = 2) -> float:
        for _ in range(warmup):
            fn()
        samples = []
        for _ in range(max(2 * repeat, 20)):  # single calls vary more than batches of 20: more samples
            cuda.synchronize()
            start, stop = cuda.event(), cuda.event()
            start.record(stream)
            fn()
            stop.record(stream)
            stop.synchronize()
            samples.append(cuda.event_elapsed_time(start, stop))
        return statistics.median(samples)

    return back_to_back, one_at_a_time


def _time_all_ways(fn, timers, repeat):
    """{"ms": whole call back to back, "sync_ms": one call at a time, "device_ms": device work only}."""
    back_to_back, one_at_a_time, device = timers
    return {"ms": back_to_back(fn, repeat), "sync_ms": one_at_a_time(fn, repeat), "device_ms": device(fn, repeat)}


_PCT_KEYS = {"ms": "pct_memcpy", "sync_ms": "sync_pct_memcpy", "device_ms": "device_pct_memcpy"}


def _with_pct(times: dict, memcpy_ms: float) -> dict:
    out = dict(times)
    for key, value in times.items():
        out[_PCT_KEYS[key]] = 100 * memcpy_ms / value
    return out


def run(sizes, dtypes, shifts, repeat, check=True, log=print, calls=20, progress=None):
    """Every (size, dtype, shift): rotate.roll and the peers, timed three ways, memcpy in the same run.

    ``progress``: a `Progress` over `cases` of the same arguments; its ``step`` is called before each case.
    """
    from numba import cuda

    import rotate

    try:
        import cupy
    except Exception:
        cupy = None
    try:
        import torch

        if not torch.cuda.is_available():
            torch = None
    except Exception:
        torch = None

    stream = cuda.default_stream()  # the legacy default stream: torch's and CuPy's default too
    timers = (*_whole_call_timers(cuda, stream, calls), _events_timer(cuda, stream))
    rows = []
    rng = np.random.default_rng(1)
    for size in sizes:
        copy, buffers = _memcpy(cuda, size, stream)
        memcpy_ms = timers[2](copy, repeat)
        memcpy_ms_call = timers[0](copy, repeat)
        del copy, buffers  # free before the array and the peers' outputs (16 GiB runs)
        log(f"size {_size_label(size)}: memcpy {memcpy_ms:.4f} ms device = {2 * size / memcpy_ms / 1e6:.0f} GB/s; "
            f"{memcpy_ms_call:.4f} ms per call back to back")
        if cupy is not None:
            pool_x = cupy.empty(size, cupy.uint8)
            pool_x[...] = cupy.random.randint(0, 256, size, dtype=cupy.uint8)
        else:
            host = rng.integers(0, 256, size, dtype=np.uint8)
        for dtype_name in dtypes:
            dtype = np.dtype(dtype_name)
            n = size // dtype.itemsize
            if n < 2:
                continue
            if cupy is not None:
                x = pool_x[: n * dtype.itemsize].view(dtype_name)
                dev = cuda.as_cuda_array(x)
            else:
                x = None
                dev = cuda.to_device(host[: n * dtype.itemsize].view(dtype))
            for label in shifts:
                if progress is not None:
                    progress.step(f"{_size_label(size)} {dtype_name} shift {label}")
                s = shift_elements(label, n, dtype.itemsize)
                p = rotate.plan(dev, s)
                ok = _check(rotate, dev, s, cupy) if check else None
                row = {
                    "size_bytes": size, "dtype": dtype_name, "shift_label": label, "shift": s,
                    "algorithm": p.algorithm, "tile_bytes": p.tile_bytes, "grid": p.grid,
                    "block": p.block, "buffers": p._detail("buffers"), "co_resident": p._detail("co_resident"),
                    "pre_read_bytes": p._detail("pre_read_bytes"), "lanes": p._detail("lanes"),
                    "scratch_bytes": p.scratch_bytes, "memcpy_ms": memcpy_ms,
                    "memcpy_call_ms": memcpy_ms_call, "correct": ok, "calls_back_to_back": calls,
                }
                row.update(_with_pct(_time_all_ways(lambda: rotate.roll(dev, s), timers, repeat), memcpy_ms))
                row["GBps"] = 2 * size / row["ms"] / 1e6
                row["device_GBps"] = 2 * size / row["device_ms"] / 1e6
                # The two memcpy timings can disagree (4 GiB: 2.24 ms with events around one copy, 2.00 ms
                # back to back in the same runs); the faster is the honest reference.
                row["pct_fastest_memcpy"] = 100 * min(memcpy_ms, memcpy_ms_call) / row["ms"]
                # The same array through the other libraries' front doors, when present.
                if x is not None:
                    _peer(row, "rotate_cupy", lambda: _time_all_ways(lambda: rotate.roll(x, s), timers, repeat),
                          memcpy_ms, log)
                    _peer(row, "cupy", lambda: _time_all_ways(lambda: cupy.roll(x, s), timers, repeat), memcpy_ms, log)
                if torch is not None:
                    def torch_tensor():
                        if x is not None:
                            return torch.as_tensor(x, device="cuda")
                        return torch.as_tensor(dev, device="cuda")

                    _peer(row, "torch", lambda: _time_all_ways(
                        lambda t=torch_tensor(): torch.roll(t, s), timers, repeat), memcpy_ms, log)
                    _peer(row, "rotate_torch", lambda: _time_all_ways(
                        lambda t=torch_tensor(): rotate.roll(t, s), timers, repeat), memcpy_ms, log)
                rows.append(row)
                log(_format_row(row))
        if cupy is not None:
            del pool_x
            cupy.get_default_memory_pool().free_all_blocks()
        if torch is not None:
            torch.cuda.empty_cache()
    return rows


def _size_label(size: int) -> str:
    for unit, scale in (("GiB", GiB), ("MiB", MiB), ("KiB", 1024)):
        if size >= scale and size % scale == 0:
            return f"{size // scale} {unit}"
    return f"{size} B"


def _peer(row, name, timer, memcpy_ms, log):
    """Time a peer (or rotate through another library); a missing or failing one is recorded, not fatal."""
    try:
        times = timer()
        for key, value in times.items():
            suffix = "" if key == "ms" else "_" + key[:-3]
            row[f"{name}{suffix}_ms"] = value
            row[f"{name}{suffix}_pct"] = 100 * memcpy_ms / value
    except Exception as exc:  # e.g. torch.roll has no CUDA kernel for uint16
        row[f"{name}_error"] = f"{type(exc).__name__}: {exc}"[:200]


def _torch_dtype(torch, name):
    return {"uint8": torch.uint8, "uint16": torch.uint16, "float32": torch.float32,
            "float64": torch.float64, "complex128": torch.complex128}[name]


def _check(rotate, dev, s, cupy) -> bool:
    if cupy is not None:
        # Compare bytes: random bit patterns include NaNs, which never compare equal.
        x = cupy.asarray(dev)
        expected = cupy.roll(x, s).view(cupy.uint8)
        rotate.roll(dev, s)
        ok = bool(cupy.array_equal(x.view(cupy.uint8), expected))
        rotate.roll(dev, -s)
        return ok and bool(cupy.array_equal(cupy.roll(x, s).view(cupy.uint8), expected))
    before = dev.copy_to_host()
    rotate.roll(dev, s)
    return bool(np.array_equal(dev.copy_to_host(), np.roll(before, s)))


def _format_row(r) -> str:
    text = (f"  {r['dtype']:>10} shift {r['shift_label']:>7}: {r['algorithm']:>10} "
            f"whole call {r['ms']:8.4f} ms = {r['pct_memcpy']:5.1f}% of memcpy "
            f"(one at a time {r['sync_pct_memcpy']:5.1f}%, device {r['device_pct_memcpy']:5.1f}%)")
    for name in ("cupy", "torch"):
        if f"{name}_pct" in r:
            text += f" | {name}.roll {r[f'{name}_pct']:5.1f}% (device {r[f'{name}_device_pct']:5.1f}%)"
        elif f"{name}_error" in r:
            text += f" | {name}.roll n/a"
    if r.get("correct") is False:
        text += "  WRONG RESULT"
    return text


def small_arrays(nbytes: int = 4096, number: int = 300, repeat: int = 15, log=print) -> list:
    """Per-call microseconds on a small array: rotate on numba, CuPy and torch arrays, torch.roll, cupy.roll.

    Wall clock over ``number`` back-to-back calls and one synchronisation;
    at this size the device keeps up, so this is the host's cost per call.
    A missing or failing library is a row with an error, not a crash.
    """
    from numba import cuda

    import rotate

    host = np.arange(nbytes // 4, dtype=np.float32)
    rows = []

    def per_call_us(fn, sync):
        for _ in range(20):
            fn()
        sync()
        samples = []
        for _ in range(repeat):
            start = time.perf_counter()
            for _ in range(number):
                fn()
            sync()
            samples.append((time.perf_counter() - start) / number * 1e6)
        return statistics.median(samples)

    def record(name, make):
        try:
            fn, sync = make()
            rows.append({"case": name, "bytes": nbytes, "us_per_call": per_call_us(fn, sync)})
            log(f"  {name:>28}: {rows[-1]['us_per_call']:7.1f} us per call ({nbytes} bytes)")
        except Exception as exc:
            rows.append({"case": name, "bytes": nbytes, "error": f"{type(exc).__name__}: {exc}"[:300]})
            log(f"  {name:>28}: {rows[-1]['error']}")

    def numba_case():
        d = cuda.to_device(host)
        return (lambda: rotate.roll(d, 3)), cuda.synchronize

    def torch_case(peer):
        import torch

        if not torch.cuda.is_available():
            raise RuntimeError("torch has no CUDA")
        t = torch.from_numpy(host.copy()).cuda()
        return ((lambda: torch.roll(t, 3)) if peer else (lambda: rotate.roll(t, 3))), torch.cuda.synchronize

    def torch_add():
        import torch

        t = torch.from_numpy(host.copy()).cuda()
        return (lambda: t.add_(1)), torch.cuda.synchronize

    def cupy_case(peer):
        import cupy

        c = cupy.asarray(host)
        return ((lambda: cupy.roll(c, 3)) if peer else (lambda: rotate.roll(c, 3))), cuda.synchronize

    record("rotate.roll (numba array)", numba_case)
    record("rotate.roll (torch tensor)", lambda: torch_case(False))
    record("rotate.roll (cupy array)", lambda: cupy_case(False))
    record("torch.roll", lambda: torch_case(True))
    record("cupy.roll", lambda: cupy_case(True))
    record("torch x.add_(1) (a launch floor)", torch_add)
    for name, make in every_function_cases(host):
        record(name, make)
    return rows


#: ``small_arrays``' rows for every public function on a torch tensor beside its torch peer:
#: (function, rotate's row, the peer's row), on a square 2-D tensor of the same bytes.
FUNCTION_ROWS = (("rotate", "rotate.rotate (torch tensor)", "torch.roll (2-D, flat)"),
                 ("roll, two axes", "rotate.roll two axes (torch tensor)", "torch.roll two axes"),
                 ("roll_rows", "rotate.roll_rows (torch tensor)", "torch.gather (prebuilt index)"),
                 ("fftshift", "rotate.fftshift (torch tensor)", "torch.fft.fftshift"),
                 ("ifftshift", "rotate.ifftshift (torch tensor)", "torch.fft.ifftshift"))


def every_function_cases(host: np.ndarray) -> list:
    """(row name, make) for ``FUNCTION_ROWS``: ``make()`` returns (call, synchronise) on a torch tensor
    of ``host``'s bytes (square where the bytes allow, else one row), shifts and indices built before."""
    import rotate

    def make(name):
        def build():
            import torch

            if not torch.cuda.is_available():
                raise RuntimeError("torch has no CUDA")
            side = int(np.sqrt(host.size))
            shape = (side, side) if side * side == host.size else (1, host.size)
            t = torch.from_numpy(host.copy()).cuda().reshape(shape)
            rows, n = shape
            shifts = torch.arange(rows, device="cuda") * 3 - rows
            index = (torch.arange(n, device="cuda")[None, :] - shifts[:, None]) % n
            calls = {"rotate.rotate (torch tensor)": lambda: rotate.rotate(t, 3),
                     "torch.roll (2-D, flat)": lambda: torch.roll(t, -3),
                     "rotate.roll two axes (torch tensor)": lambda: rotate.roll(t, (3, 5), (0, 1)),
                     "torch.roll two axes": lambda: torch.roll(t, (3, 5), (0, 1)),
                     "rotate.roll_rows (torch tensor)": lambda: rotate.roll_rows(t, shifts),
                     "torch.gather (prebuilt index)": lambda: torch.gather(t, 1, index),
                     "rotate.fftshift (torch tensor)": lambda: rotate.fftshift(t),
                     "torch.fft.fftshift": lambda: torch.fft.fftshift(t),
                     "rotate.ifftshift (torch tensor)": lambda: rotate.ifftshift(t),
                     "torch.fft.ifftshift": lambda: torch.fft.ifftshift(t)}
            return calls[name], torch.cuda.synchronize
        return build

    return [(name, make(name)) for _, ours, peer in FUNCTION_ROWS for name in (ours, peer)]


def host_overhead(log=print):
    """Wall-clock microseconds per call for small arrays (launch overhead dominates)."""
    from numba import cuda

    import rotate

    out = {}
    for size in (1024, 64 * 1024, MiB):
        dev = cuda.to_device(np.arange(size, dtype=np.uint8))
        rotate.roll(dev, 3)
        cuda.synchronize()
        count = 200
        start = time.perf_counter()
        for _ in range(count):
            rotate.roll(dev, 3)
        cuda.synchronize()
        out[size] = (time.perf_counter() - start) / count * 1e6
        log(f"host overhead, {size} bytes: {out[size]:.1f} us per call")
    return out


# --- progress ---------------------------------------------------------------------------------------


def cases(sizes, dtypes, shifts) -> list:
    """The (size, dtype, shift label) cases `run` and `run_cpu` time, in their order (dtypes too wide
    for a size, fewer than two elements, are skipped as those functions skip them)."""
    return [(size, dtype, label) for size in sizes for dtype in dtypes
            if size // np.dtype(dtype).itemsize >= 2 for label in shifts]


def _duration(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


class Progress:
    """A progress line on stderr: case i of N, the time so far and an estimate of the time left.

    ``weights`` holds each case's expected cost in any unit (the benchmarks use the array's bytes plus a
    fixed part for the calls' own cost): the estimate is the time per unit of the cases finished, times the
    units left. The first case's time (compiling, warming up: 16 s of a 26 s GPU --quick run) counts only
    until a second case has finished; from then on the rate is that of the cases after it. On a
    terminal the line is redrawn in place, and cleared around what `log` prints; elsewhere (a pipe, a
    file) it is one line a case, so a log shows how far a run got.
    """

    def __init__(self, weights, stream=None, enabled: bool = True, clock=time.monotonic):
        self.weights = [float(w) for w in weights]
        self.total = len(self.weights)
        self.stream = sys.stderr if stream is None else stream
        self.enabled = enabled and self.total > 0
        self.clock = clock
        self.started = clock()
        self.index = 0  # cases started
        self._starts = []  # the clock when each case started
        isatty = getattr(self.stream, "isatty", None)
        self.tty = bool(isatty()) if callable(isatty) else False
        self._line = ""

    def seconds_left(self):
        """Estimated seconds left, the current case included (None before a case has finished)."""
        finished = self.index - 1
        if finished < 1:
            return None
        if finished >= 2:  # leave out the first case: it paid for compiling
            since, done = self._starts[1], sum(self.weights[1:finished])
        else:
            since, done = self.started, self.weights[0]
        if done <= 0:
            return None
        return (self.clock() - since) / done * sum(self.weights[finished:])

    def step(self, what: str) -> None:
        """Case ``what`` starts."""
        self.index += 1
        self._starts.append(self.clock())
        if not self.enabled:
            return
        left = self.seconds_left()
        self._line = (f"[{self.index}/{self.total}] {what}: {_duration(self.clock() - self.started)} so far, "
                      + ("time left unknown until a case has finished" if left is None
                         else f"about {_duration(left)} left"))
        self._draw()

    def _draw(self) -> None:
        if self.tty:
            self.stream.write("\r\x1b[K" + self._line)
        else:
            self.stream.write(self._line + "\n")
        self.stream.flush()

    def _clear(self) -> None:
        if self.enabled and self.tty and self._line:
            self.stream.write("\r\x1b[K")
            self.stream.flush()

    def log(self, print_fn=print):
        """``print_fn`` that keeps the progress line below what it prints (on a terminal)."""
        def logged(*args, **kwargs):
            self._clear()
            print_fn(*args, **kwargs)
            if self.enabled and self.tty and self._line:
                sys.stdout.flush()
                self._draw()
        return logged

    def finish(self) -> None:
        if not self.enabled:
            return
        self._clear()
        self._line = ""
        self.stream.write(f"[{self.index}/{self.total}] done in {_duration(self.clock() - self.started)}\n")
        self.stream.flush()


#: A case's fixed cost in the progress estimate, as bytes of array (calls, checks and peers at any size).
CASE_OVERHEAD_BYTES = 64 * MiB


def _progress(case_list, enabled: bool) -> Progress:
    return Progress([size + CASE_OVERHEAD_BYTES for size, _, _ in case_list], enabled=enabled)


# --- CPU ----------------------------------------------------------------------------------------------


def parallel_copy_kernel():
    """A multi-threaded copy (numba prange over chunks): the like-for-like peer of the threaded roll."""
    import numba

    @numba.njit(parallel=True, cache=True)
    def copy(dst, src, chunks):
        n = src.shape[0]
        for c in numba.prange(chunks):
            lo = c * n // chunks
            hi = (c + 1) * n // chunks
            dst[lo:hi] = src[lo:hi]

    return copy


def flushed_median_ms(fn: Callable[[], None], count: int, flush: Optional[np.ndarray] = None) -> float:
    """Median milliseconds of ``count`` calls of ``fn`` after one warm-up call (compiling, page faults), with
    ``flush`` (a buffer larger than the last-level cache, or None) written before each so every call starts
    with its arrays out of cache."""
    fn()
    samples = []
    for _ in range(count):
        if flush is not None:
            np.add(flush, 1, out=flush)
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return 1e3 * statistics.median(samples)


def run_cpu(sizes, dtypes, shifts, repeat, check=True, log=print, progress=None, flush_bytes=512 * MiB):
    """Every (size, dtype, shift) on the CPU backend, through the public API: ``rotate.roll`` of a numpy
    array on numba's threads, against copies of the same bytes, ``np.copyto`` (one thread) and a copy on
    as many threads (``pct_memcpy`` divides by the faster: the speed of light on this machine now), and
    ``np.copyto(a, np.roll(a, shift))`` (numpy's roll made in place: the peer, ``numpy_pct``). Medians of ``repeat`` calls (the peer: of
    ``max(3, repeat // 2)``), each after writing ``flush_bytes`` to evict the array from cache (0: off)."""
    import numba

    import rotate


    threads = numba.get_num_threads()
    parallel_copy = parallel_copy_kernel()
    flush = np.zeros(flush_bytes, np.uint8) if flush_bytes else None

    def median_ms(fn, count):
        return flushed_median_ms(fn, count, flush)

    rows = []
    rng = np.random.default_rng(1)
    for size in sizes:
        raw = rng.integers(1, 256, size, dtype=np.uint8)  # never zero
        other = np.empty_like(raw)
        copyto_ms = median_ms(lambda: np.copyto(other, raw), repeat)
        threaded_ms = median_ms(lambda: parallel_copy(other, raw, threads), repeat)
        copy_ms = min(copyto_ms, threaded_ms)
        log(f"size {_size_label(size)}: np.copyto {copyto_ms:.3f} ms = {2 * size / copyto_ms / 1e6:.1f} GB/s "
            f"(1 thread); copy on {threads} threads {threaded_ms:.3f} ms = {2 * size / threaded_ms / 1e6:.1f} GB/s")
        for dtype_name in dtypes:
            dtype = np.dtype(dtype_name)
            n = size // dtype.itemsize
            if n < 2:
                continue
            a = raw[: n * dtype.itemsize].view(dtype)
            for label in shifts:
                if progress is not None:
                    progress.step(f"{_size_label(size)} {dtype_name} shift {label}")
                s = shift_elements(label, n, dtype.itemsize)
                p = rotate.plan(a, s)
                ok = None
                if check:
                    expected = np.roll(a, s)
                    rotate.roll(a, s)
                    ok = bool(np.array_equal(a.view(np.uint8), expected.view(np.uint8)))
                    del expected
                ms = median_ms(lambda: rotate.roll(a, s), repeat)
                numpy_ms = median_ms(lambda: np.copyto(a, np.roll(a, s)), max(3, repeat // 2))
                row = {
                    "size_bytes": n * dtype.itemsize, "dtype": dtype_name, "shift_label": label, "shift": s,
                    "algorithm": p.algorithm, "scratch_bytes": p.scratch_bytes,
                    "traffic": p.bytes_moved / p.ideal_bytes if p.ideal_bytes else None, "threads": threads,
                    "correct": ok, "ms": ms, "memcpy_ms": copy_ms, "copyto_ms": copyto_ms,
                    "threaded_copy_ms": threaded_ms, "numpy_ms": numpy_ms,
                    "pct_memcpy": 100 * copy_ms / ms, "vs_copyto": ms / copyto_ms,
                    "numpy_pct": 100 * copy_ms / numpy_ms, "GBps": 2 * n * dtype.itemsize / ms / 1e6,
                }
                rows.append(row)
                log(_format_cpu_row(row))
    return rows


def _format_cpu_row(r) -> str:
    text = (f"  {r['dtype']:>10} shift {r['shift_label']:>7}: {r['algorithm']:>14} {r['ms']:9.3f} ms = "
            f"{r['pct_memcpy']:5.1f}% of the faster copy's speed ({r['GBps']:.1f} GB/s), "
            f"{r['vs_copyto']:.2f}x np.copyto's time | np.roll + copy back {r['numpy_pct']:5.1f}%")
    if r.get("correct") is False:
        text += "  WRONG RESULT"
    return text


# --- results files and the plot -----------------------------------------------------------------------

#: Each mode's reference (what 100% is) and its peers, as the plot names them: (row key prefix, label).
MODES = {
    "gpu": ("% of a device-to-device memcpy\n(whole call, back to back)",
            [("cupy", "cupy.roll (out of place)"), ("torch", "torch.roll (out of place)")]),
    "cpu": ("% of the faster copy's speed\n(np.copyto or a threaded copy)",
            [("numpy", "np.roll + copy back")]),
}


def load_results(paths) -> tuple:
    """``(rows, mode, sources)`` from result files of earlier runs: this module's JSON (``--json``,
    GPU or CPU) or benchmarks/cpu_bench.py's (its rows against ``np.copyto`` on one thread). Files of
    different modes are refused: their percentages divide by different references."""
    rows, modes, sources = [], set(), []
    for path in paths:
        with open(path) as fh:
            data = json.load(fh)
        env = data.get("environment", {})
        commit = str(env.get("git_commit") or "?")[:12]
        if data.get("benchmark") == "cpu_bench":
            mode = "cpu-copyto"
            for dtype, block in data["dtypes"].items():
                n = block["n"]
                for r in block["rows"]:
                    rows.append({"size_bytes": data["nbytes"], "dtype": dtype, "algorithm": r["algorithm"],
                                 "shift_label": _cpu_bench_label(r["shift"], n), "shift": r["shift"],
                                 "pct_memcpy": 100 * r["copy"] / r["ours"], "numpy_pct": 100 * r["copy"] / r["roll"]})
        elif data.get("benchmark") == "rotate.bench" and data.get("format") == 2:
            mode = data.get("mode", "gpu")
            rows += data["rows"]
        else:
            raise ValueError(f"{path}: not a result of python -m rotate.bench (format 2) or "
                             f"benchmarks/cpu_bench.py; got benchmark={data.get('benchmark')!r}")
        modes.add(mode)
        device = data.get("device") or env.get("platform") or ""
        shown = str(path)
        shown = shown[shown.index("docs/results/"):] if "docs/results/" in shown else shown
        sources.append(f"{shown} ({device}, commit {commit})" if device else f"{shown} (commit {commit})")
    if len(modes) > 1:
        raise ValueError(f"these files measure against different references ({sorted(modes)}); plot them apart")
    return rows, (modes.pop() if modes else "gpu"), sources


def _cpu_bench_label(shift: int, n: int) -> str:
    for label, value in (("n/3", n // 3), ("n/2+3", n // 2 + 3), ("n-1", n - 1)):
        if shift == value:
            return label
    return str(shift)


def _shift_order(label: str):
    return (SHIFTS.index(label) if label in SHIFTS else len(SHIFTS), len(label), label)


def plot(rows, path, mode: str = "gpu", sources=(), title=None) -> dict:
    """A PNG of ``rows`` (`run` or `run_cpu` rows, or `load_results`): one panel a shift label in a grid
    of up to four columns, the percentage (``pct_memcpy``) against the array size, one colour a dtype;
    each peer present in the rows (``{peer}_pct``) dashed or dotted in the dtype's colour beside it.
    Returns what it drew: grid, panels, dtypes, sizes, peers and the size in pixels."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    reference, peers = MODES["cpu" if mode.startswith("cpu") else "gpu"]
    if mode == "cpu-copyto":
        reference = "% of np.copyto's speed (1 thread)"
    rows = [r for r in rows if r.get("algorithm") != "noop" and "pct_memcpy" in r]
    if not rows:
        raise ValueError("nothing to plot: no timed rows")
    labels = sorted({r["shift_label"] for r in rows}, key=_shift_order)
    dtypes = [d for d in DTYPES if any(r["dtype"] == d for r in rows)]
    dtypes += sorted({r["dtype"] for r in rows} - set(dtypes))
    peers = [(key, name) for key, name in peers if any(f"{key}_pct" in r for r in rows)]
    sizes = sorted({r["size_bytes"] for r in rows})
    colours = {d: plt.get_cmap("tab10")(i % 10) for i, d in enumerate(dtypes)}
    markers = {d: "osDv^P*X"[i % 8] for i, d in enumerate(dtypes)}  # overlapping dtypes stay visible
    styles = ["--", ":", "-."]
    nrows = -(-len(labels) // 4)  # at most four columns, the rows as evenly filled as they can be
    ncols = -(-len(labels) // nrows)
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.9 * ncols, 3.3 * nrows + 1.4), sharex=True, sharey=True,
                             squeeze=False)
    top = max([100.0] + [r[k] for r in rows for k in ["pct_memcpy"] + [f"{p}_pct" for p, _ in peers] if k in r])
    for index, ax in enumerate(axes.flat):
        if index >= len(labels):
            ax.set_visible(False)
            continue
        label = labels[index]
        for dtype in dtypes:
            mine = sorted((r for r in rows if r["shift_label"] == label and r["dtype"] == dtype),
                          key=lambda r: r["size_bytes"])
            if not mine:
                continue
            ax.plot([r["size_bytes"] for r in mine], [r["pct_memcpy"] for r in mine], marker=markers[dtype],
                    markersize=5, linewidth=2, color=colours[dtype], zorder=3)
            for (key, _), linestyle in zip(peers, styles):
                pts = [(r["size_bytes"], r[f"{key}_pct"]) for r in mine if f"{key}_pct" in r]
                if pts:
                    ax.plot(*zip(*pts), linestyle=linestyle, marker=markers[dtype], markersize=4,
                            markerfacecolor="none", linewidth=1, alpha=0.8, color=colours[dtype], zorder=2)
        ax.axhline(100, color="k", linestyle="-", linewidth=0.6)
        ax.set_xscale("log", base=2)
        ax.set_xticks(sizes)
        ax.set_xticklabels([_size_label(v).replace(" ", "") for v in sizes], fontsize=8)
        ax.minorticks_off()
        ax.set_ylim(0, top * 1.06)
        ax.grid(True, alpha=0.3)
        ax.set_title(f"shift {label}", fontsize=10)
        if index % ncols == 0:
            ax.set_ylabel(reference, fontsize=8)
        if index // ncols == nrows - 1 or index + ncols >= len(labels):
            ax.set_xlabel("array size", fontsize=8)
            ax.xaxis.set_tick_params(labelbottom=True)
    handles = [Line2D([], [], color=colours[d], marker=markers[d], linewidth=2, label=d) for d in dtypes]
    handles.append(Line2D([], [], color="grey", linewidth=2, label="rotate.roll (in place)"))
    handles += [Line2D([], [], color="grey", linestyle=ls, linewidth=1, label=name)
                for (_, name), ls in zip(peers, styles)]
    fig.legend(handles=handles, loc="lower center", ncol=min(len(handles), 8), fontsize=8, frameon=False)
    heading = title or ("rotate.roll, whole call, against memcpy and out-of-place peers" if mode == "gpu"
                        else "rotate.roll on the CPU, against a copy and numpy's roll")
    if sources:
        heading += "\n" + "; ".join(sources)
    fig.suptitle(heading, fontsize=9)
    fig.tight_layout(rect=(0, 0.07 if nrows > 1 else 0.12, 1, 1))
    fig.savefig(path, dpi=100)
    width, height = (fig.get_size_inches() * 100).round().astype(int)
    plt.close(fig)
    return {"grid": (nrows, ncols), "panels": labels, "dtypes": dtypes, "sizes": sizes,
            "peers": [name for _, name in peers], "size_px": (int(width), int(height))}


# --- the command --------------------------------------------------------------------------------------


def parse_sizes(text: str) -> list:
    """'4K,1M,16G' -> bytes; a bare number is MiB (the old --sizes 1024 still means 1 GiB)."""
    out = []
    for item in text.split(","):
        item = item.strip().upper().removesuffix("IB").removesuffix("B")
        scale = {"K": 1 << 10, "M": MiB, "G": GiB}.get(item[-1:], MiB)
        number = item[:-1] if item[-1:] in "KMG" else item
        out.append(int(float(number) * scale))
    return out


DEFAULT_SIZES = "4K,64K,1M,16M,64M,256M,1G,4G"
FULL_SIZES = "4K,64K,1M,16M,64M,256M,1G,4G,16G"
QUICK_SIZES = "64M,1G"
CPU_DEFAULT_SIZES = "1M,16M,256M"
CPU_FULL_SIZES = "1M,16M,256M,1G"
CPU_QUICK_SIZES = "64M"


def gpu_available() -> bool:
    """Whether numba-cuda is installed (not the simulator) and finds a usable GPU."""
    try:
        from numba import cuda
        from numba.cuda.core import config
    except ImportError:
        return False
    try:
        return not config.ENABLE_CUDASIM and bool(cuda.is_available())
    except Exception:  # a broken driver counts as no GPU
        return False


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rotate.bench", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help=f"a short run: GPU {QUICK_SIZES}, CPU {CPU_QUICK_SIZES}; uint8 and float32, shifts 3 "
                             f"and n-7")
    parser.add_argument("--full", action="store_true",
                        help=f"every dtype and shift; sizes GPU {FULL_SIZES}, CPU {CPU_FULL_SIZES}")
    parser.add_argument("--cpu", action="store_true", help="benchmark the CPU backend (the default without a GPU)")
    parser.add_argument("--gpu", action="store_true", help="benchmark the GPU; fail without one")
    parser.add_argument("--sizes", default=None,
                        help=f"sizes with K/M/G suffixes (bare numbers: MiB), comma separated; default GPU "
                             f"{DEFAULT_SIZES}, CPU {CPU_DEFAULT_SIZES}")
    parser.add_argument("--dtypes", default="uint8,float32")
    parser.add_argument("--shifts", default="3,n-7,n/3", help=f"labels: integers, {', '.join(SHIFTS[3:])}, randS")
    parser.add_argument("--repeat", type=int, default=None, help="timed calls a median is taken of (default 10; "
                                                                    "a CPU --quick run: 5)")
    parser.add_argument("--no-check", action="store_true")
    parser.add_argument("--no-progress", action="store_true", help="no progress line on stderr")
    parser.add_argument("--json", help="write results here")
    parser.add_argument("--plot", help="write a PNG plot here (needs matplotlib: the bench extra)")
    parser.add_argument("--from", dest="sources", nargs="+", metavar="RESULT.json",
                        help="run nothing: read these results of earlier runs (e.g. docs/results/*.json) and "
                             "print or --plot them; no GPU needed")
    parser.add_argument("--title", help="the plot's title (default: what and against what)")
    gpu_only = parser.add_argument_group("GPU only")
    gpu_only.add_argument("--calls", type=int, default=20, help="calls between two events, back to back")
    gpu_only.add_argument("--no-small", action="store_true", help="skip the small-array per-call table")
    gpu_only.add_argument("--tiles",
                          help="sweep tile_bytes:threads[:buffers[:min_blocks]], e.g. 32768:256:2,24576:256:2:4")
    gpu_only.add_argument("--profile", action="store_true", help="cProfile the host overhead of small rolls")
    gpu_only.add_argument("--set", action="append", default=[], metavar="KNOB=VALUE",
                          help="a GPU planner setting for the whole run (a field of rotate/_backends/cuda/tuning.py), e.g. "
                               "co_resident=False")
    cpu_only = parser.add_argument_group("CPU only")
    cpu_only.add_argument("--flush-mib", type=int, default=512,
                          help="MiB written before every timed call to evict the array from cache (0: off)")
    cpu_only.add_argument("--threads", type=int, help="numba threads (default: numba's, all cores)")
    from . import bench_env

    bench_env.add_arguments(cpu_only)
    args = parser.parse_args(argv)

    if args.sources:
        return _from_files(args)
    if args.cpu and args.gpu:
        parser.error("--cpu and --gpu exclude each other")
    if args.gpu or (not args.cpu and gpu_available()):
        if not gpu_available():
            print("--gpu: no usable CUDA GPU here (numba-cuda missing, the simulator, or no device); "
                  "run without --gpu for the CPU benchmark", file=sys.stderr)
            return 1
        if args.threads or args.max_load is not None or args.allow_busy:
            parser.error("--threads, --max-load and --allow-busy are for the CPU benchmark (--cpu)")
        return _main_gpu(args)
    if not args.cpu:
        print("no usable CUDA GPU: benchmarking the CPU backend (--cpu; on a GPU machine install a CUDA "
              "extra, e.g. pip install -e '.[cu12]')", file=sys.stderr)
    used = [flag for flag, on in (("--tiles", args.tiles), ("--set", args.set), ("--profile", args.profile),
                                  ("--no-small", args.no_small), ("--calls", args.calls != 20)) if on]
    if used:
        parser.error(f"{', '.join(used)}: GPU only (this run benchmarks the CPU)")
    return _main_cpu(args)


def _choose(args, default: str, full: str, quick: str, quick_repeat: int = 10):
    if args.quick:
        args.dtypes, args.shifts = "uint8,float32", "3,n-7"
    if args.full:
        args.dtypes, args.shifts = ",".join(DTYPES), ",".join(SHIFTS)
    sizes = args.sizes or (quick if args.quick else full if args.full else default)
    args.sizes = sizes
    if args.repeat is None:
        args.repeat = quick_repeat if args.quick else 10
    return parse_sizes(sizes), args.dtypes.split(","), args.shifts.split(",")


def _finish(args, rows, started, mode, extra=None, knobs=None, load=None) -> int:
    """Write the results (``--json``, ``--plot``); ``load``: the CPU run's ``bench_env.LoadGate``."""
    from . import _provenance

    env = _provenance.environment(gpu=mode == "gpu")
    device = env.get("gpu_knobs", {}).get("gpu") if mode == "gpu" else f"CPU, {env.get('cpus')} cpus"
    out = {"benchmark": "rotate.bench", "format": 2, "mode": mode, "environment": env, "device": device,
           "arguments": vars(args), "knobs": knobs or {}, "seconds": time.time() - started, "rows": rows}
    out.update(extra or {})
    if load is not None:
        load.finish(out)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=1)
        print(f"wrote {args.json}")
    if args.plot:
        plot(rows, args.plot, mode, [f"this run ({device}, commit {str(env.get('git_commit') or '?')[:12]})"],
             args.title)
        print(f"wrote {args.plot}")
    print(f"{time.time() - started:.0f} s")
    wrong = [r for r in rows if r.get("correct") is False]
    if wrong:
        print(f"{len(wrong)} configurations gave WRONG results")
        return 2
    return load.status() if load is not None else 0


def _main_cpu(args) -> int:
    import numba

    from . import bench_env

    load = bench_env.LoadGate.from_args(args, "python -m rotate.bench --cpu")
    if args.threads:
        numba.set_num_threads(args.threads)
    sizes, dtypes, shifts = _choose(args, CPU_DEFAULT_SIZES, CPU_FULL_SIZES, CPU_QUICK_SIZES, quick_repeat=5)
    started = time.time()
    print(f"CPU: rotate.roll of numpy arrays on {numba.get_num_threads()} numba threads (threading layer "
          f"{numba.config.THREADING_LAYER}); headline: % of the faster copy of the same bytes (np.copyto, or on as many threads); "
          f"median of {args.repeat}, {args.flush_mib} MiB written before each timed call")
    progress = _progress(cases(sizes, dtypes, shifts), not args.no_progress)
    rows = run_cpu(sizes, dtypes, shifts, args.repeat, check=not args.no_check, log=progress.log(print),
                   progress=progress, flush_bytes=args.flush_mib * MiB)
    progress.finish()
    return _finish(args, rows, started, "cpu", {"threading_layer": numba.threading_layer(),
                                                "timing": {"ms": "median wall time of one rotate.roll call",
                                                           "pct_memcpy": "100 * memcpy_ms / time; memcpy_ms: "
                                                                         "the faster of np.copyto and a threaded copy",
                                                           "vs_copyto": "time / np.copyto time (1 thread)",
                                                           "numpy_pct": "100 * memcpy_ms / time of "
                                                                        "np.copyto(a, np.roll(a, shift))"}},
                   load=load)


def _from_files(args) -> int:
    rows, mode, sources = load_results(args.sources)
    for source in sources:
        print(f"from {source}")
    for r in sorted(rows, key=lambda r: (r["size_bytes"], r["dtype"], _shift_order(r["shift_label"]))):
        peers = ", ".join(f"{name.split(' ')[0]} {r[f'{key}_pct']:.0f}%" for key, name in
                          MODES["cpu" if mode.startswith("cpu") else "gpu"][1] if f"{key}_pct" in r)
        print(f"  {_size_label(r['size_bytes']):>7} {r['dtype']:>10} shift {r['shift_label']:>7}: "
              f"{r['algorithm']:>14} {r['pct_memcpy']:5.1f}%" + (f" | {peers}" if peers else ""))
    if args.plot:
        plot(rows, args.plot, mode, sources, args.title)
        print(f"wrote {args.plot}")
    return 0


def _main_gpu(args) -> int:
    import ast
    import contextlib

    from numba import cuda

    from ._backends.cuda import tuning as cuda_tuning  # GPU only: the CPU benchmark never imports the CUDA side

    sizes, dtypes, shifts = _choose(args, DEFAULT_SIZES, FULL_SIZES, QUICK_SIZES)
    started = time.time()
    print("headline: the whole call as a user times it (CUDA events around the Python call, "
          f"{args.calls} calls back to back); then one call at a time, then device work only")
    knobs = {key: ast.literal_eval(value) for key, _, value in (item.partition("=") for item in args.set)}
    configs = len(args.tiles.split(",")) if args.tiles else 1
    progress = _progress(cases(sizes, dtypes, shifts) * configs, not args.no_progress)
    with cuda_tuning.override(**knobs) if knobs else contextlib.nullcontext():
        rows = _runs(args, sizes, dtypes, shifts, progress)
    progress.finish()
    small = []
    if not args.no_small:
        print("small arrays, per call:")
        small = small_arrays()
    overhead = host_overhead()
    if args.profile:
        import cProfile
        import pstats

        import rotate

        dev = cuda.to_device(np.arange(4096, dtype=np.uint8))
        rotate.roll(dev, 3)
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(300):
            rotate.roll(dev, 3)
        profiler.disable()
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(18)
    extra = {"timing": {"ms": f"whole call, CUDA events around {args.calls} back-to-back Python calls",
                        "sync_ms": "whole call, one synchronised call at a time",
                        "device_ms": "device work only (a spin kernel keeps the host ahead)",
                        "pct": "100 * memcpy device time / time"},
             "small_arrays": small, "host_overhead_us": overhead}
    return _finish(args, rows, started, "gpu", extra, knobs=knobs)


def _runs(args, sizes, dtypes, shifts, progress=None) -> list:
    """``run`` once, or once per ``--tiles`` configuration."""
    log = progress.log(print) if progress is not None else print
    if args.tiles:
        from ._backends.cuda import device as gpu
        from ._backends.cuda import tuning as cuda_tuning

        rows = []
        for config in args.tiles.split(","):
            values = [int(v) for v in config.split(":")]
            tile, threads = values[:2]
            buffers = values[2] if len(values) > 2 else gpu.policy().buffers
            min_blocks = values[3] if len(values) > 3 else 0
            log(f"== tile_bytes={tile} threads={threads} buffers={buffers} min_blocks={min_blocks}")
            with cuda_tuning.override(tile_bytes=tile, threads=threads, buffers=buffers, min_blocks=min_blocks):
                rows += run(sizes, dtypes, shifts, args.repeat, check=not args.no_check, log=log, calls=args.calls,
                            progress=progress)
        return rows
    return run(sizes, dtypes, shifts, args.repeat, check=not args.no_check, log=log, calls=args.calls,
               progress=progress)


if __name__ == "__main__":
    sys.exit(main())
