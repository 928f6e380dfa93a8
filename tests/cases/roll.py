"""One test body over every backend: shared roll cases and ``check_roll_case``.

The same cases run on the CPU (tests/backends/test_harness.py), under numba's CUDA
simulator (tests/cases/sim.py, in a subprocess) and on a GPU
(tests/backends/test_gpu.py). A *runner* puts a buffer where its backend works,
rolls a view of it and hands the whole buffer back; ``check_roll_case``
owns everything else:

* the array is random bytes (never zero) with poisoned guard bytes before
  and after it (``offset`` extra bytes before, to misalign it); afterwards
  the view must equal ``numpy.roll`` byte for byte and every guard byte must
  be untouched;
* the runner poisons its backend's scratch before the call, so a kernel
  that reads scratch it never wrote produces garbage, not a lucky pass;
* the plan ``rotate.plan`` reports is the one that ran (the runner reports
  the steps its backend executed) and moves at least the ideal bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import numpy as np
from hypothesis import note
from hypothesis import strategies as st
from rotate._backends.cuda import tuning as cuda_tuning

POISON = 0xA5
GUARD = 64  # bytes before and after the array; a multiple of 16 keeps ``offset`` the misalignment

STRUCT16 = np.dtype({"names": ["a", "b"], "formats": ["u1", "<f8"], "offsets": [0, 8], "itemsize": 16})
#: One dtype per item size 1, 2, 4, 8, 16 (plus a padded struct and an odd size on the CPU).
DTYPES = ["uint8", "int16", "float32", "float64", "complex128"]
#: Lengths the schedules care about: tiny, primes, just off powers of two.
LENGTHS = [1, 2, 3, 7, 13, 31, 32, 33, 97, 127, 128, 129, 251, 256, 257, 1021, 1024, 1025, 4093, 4097]


@dataclass(frozen=True)
class Case:
    """One roll: ``numpy.roll(a, shift, axis)`` on random bytes ``offset`` bytes past an aligned address.

    ``tunables`` are ``(name, value)`` pairs a runner applies for the call
    (GPU: tuning fields such as tile_bytes; CPU: tuning fields, rotate/_backends/cpu/tuning.py).
    """

    shape: tuple
    dtype: str
    shift: Any
    axis: Any = None
    offset: int = 0
    max_scratch: Optional[int] = None
    seed: int = 0
    tunables: tuple = ()

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * np.dtype(self.dtype).itemsize

    def array(self) -> np.ndarray:
        raw = np.random.default_rng(self.seed).integers(1, 256, self.nbytes, dtype=np.uint8)
        return raw.view(self.dtype).reshape(self.shape)

    def buffer(self) -> np.ndarray:
        """Guard bytes, ``offset`` more poison bytes, the array's bytes, guard bytes."""
        pre = np.full(GUARD + self.offset, POISON, np.uint8)
        post = np.full(GUARD, POISON ^ 0xFF, np.uint8)
        return np.concatenate([pre, self.array().view(np.uint8).reshape(-1), post])

    @property
    def start(self) -> int:
        return GUARD + self.offset

    def reproduce(self) -> str:
        return f"check_roll_case(runner, {self!r})"


def void(a: np.ndarray) -> np.ndarray:
    return a.view(np.dtype((np.void, a.dtype.itemsize)))


def expected_bytes(case: Case) -> bytes:
    """numpy.roll's bytes, except that bytes outside every field (struct padding) stay put.

    numpy cannot tell padding from another view's fields, so rotate never
    moves either (issue #10); here padding must keep its original bytes.
    """
    from rotate._core import arrays as _arrays

    a = case.array()
    rolled = void(np.roll(void(a).copy(), case.shift, axis=case.axis)).tobytes()
    dtype = np.dtype(case.dtype)
    if not _arrays.has_gaps(dtype):
        return rolled
    keep = np.zeros(dtype.itemsize, bool)
    for lo, hi in _arrays.field_byte_ranges(dtype):
        keep[lo:hi] = True
    out = np.frombuffer(rolled, np.uint8).reshape(-1, dtype.itemsize).copy()
    out[:, ~keep] = np.frombuffer(void(a).tobytes(), np.uint8).reshape(-1, dtype.itemsize)[:, ~keep]
    return out.tobytes()


def view_of(buffer, case: Case):
    """The case's array inside ``buffer`` (numpy or device array of bytes): slice, view, reshape."""
    view = buffer[case.start:case.start + case.nbytes].view(np.dtype(case.dtype))
    return view.reshape(case.shape) if len(case.shape) != 1 else view


def _note(text: str) -> None:
    try:
        note(text)
    except Exception:  # outside a hypothesis test: the failure message carries it
        pass


def check_roll_case(runner, case: Case):
    """Run ``case`` through ``runner``, check the result, the guards and the plan; return the plan."""
    _note(case.reproduce())
    try:
        return _check(runner, case)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n  reproduce: {case.reproduce()} with runner {type(runner).__name__}") from None


def _check(runner, case: Case) -> None:
    raw = case.buffer()
    got, plan, executed = runner.roll(raw, case)
    _note(str(plan))
    assert plan.backend == runner.backend, (plan.backend, runner.backend)
    assert got.shape == raw.shape and got.dtype == np.uint8
    start, stop = case.start, case.start + case.nbytes
    assert (got[:start] == raw[:start]).all(), f"bytes before the array changed: {np.flatnonzero(got[:start] != raw[:start])[:8]}"
    assert (got[stop:] == raw[stop:]).all(), f"bytes after the array changed: {np.flatnonzero(got[stop:] != raw[stop:])[:8]}"
    want = np.frombuffer(expected_bytes(case), np.uint8)
    wrong = np.flatnonzero(got[start:stop] != want)
    assert wrong.size == 0, (f"{wrong.size} of {case.nbytes} bytes differ from numpy.roll; first at byte "
                             f"{wrong[0]}: got {got[start + wrong[0]]:#x}, want {want[wrong[0]]:#x}")
    if executed is not None:
        assert tuple(executed) == plan.steps, "the steps that ran are not the plan rotate.plan reported"
    assert plan.bytes_moved >= plan.ideal_bytes
    return plan


# --- runners -------------------------------------------------------------------


def device_copy(raw: np.ndarray):
    """``raw`` on the device, starting on a 256-byte boundary as ``cudaMalloc``'s memory does.

    Under the CUDA simulator a device array is a numpy copy, which malloc
    aligns to 16 bytes only; the kernels' sector and line phases (and the
    tests that check them) would then depend on where the host allocator
    happened to put the copy, so here it goes where a GPU would put it.
    """
    from numba import cuda

    from rotate._backends.cuda.kernels import memops

    if not memops.SIMULATED:
        return cuda.to_device(raw)
    backing = np.empty(raw.nbytes + 256, np.uint8)
    skip = -backing.__array_interface__["data"][0] % 256
    aligned = backing[skip:skip + raw.nbytes].view(raw.dtype).reshape(raw.shape)
    aligned[...] = raw
    from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray

    return FakeCUDAArray(aligned)


class CpuRunner:
    """numpy arrays through the CPU backend; scratch poisoned and counted, executed steps recorded."""

    backend = "cpu"

    def roll(self, raw: np.ndarray, case: Case):
        import rotate
        from rotate._backends.cpu import runners
        from rotate._backends.cpu import tuning as cpu_tuning

        buf = raw.copy()
        view = view_of(buf, case)
        executed, allocated = [], []
        saved = {name: getattr(runners, name) for name in ("run_rows", "run_strided", "scratch_array")}

        def scratch_array(words, dtype):
            allocated.append(words * np.dtype(dtype).itemsize)
            return np.full(words * np.dtype(dtype).itemsize, POISON, np.uint8).view(dtype)

        def recording(run):
            def wrapper(target, step):
                executed.append(step)
                return run(target, step)
            return wrapper

        with cpu_tuning.override(**dict(case.tunables)):
            try:
                runners.run_rows = recording(saved["run_rows"])
                runners.run_strided = recording(saved["run_strided"])
                runners.scratch_array = scratch_array
                plan = rotate.plan(view, case.shift, case.axis, max_scratch_bytes=case.max_scratch)
                out = rotate.roll(view, case.shift, case.axis, max_scratch_bytes=case.max_scratch)
            finally:
                for name, value in saved.items():
                    setattr(runners, name, value)
        assert out is view
        assert allocated == [s.scratch_bytes for s in plan.steps], (allocated, plan)
        return buf, plan, executed


def poison_launch_scratch() -> None:
    """Fill the launcher's cached scratch for the default stream with POISON (before a call, so a kernel
    that reads scratch it never wrote gets garbage). It reaches into today's launcher
    (``rotate._backends.cuda.runtime.scratch_for``): when the launcher changes, change it here, never drop it."""
    from rotate._backends.cuda import runtime as gpu_runtime

    entry = gpu_runtime.scratch_for(0)  # the default stream's handle
    if entry.pre is not None:
        entry.pre.copy_to_device(np.full(entry.pre.size, POISON, np.uint8))


class CudaRunner:
    """Device arrays (real GPU or the simulator) through the CUDA backend.

    ``poison_scratch`` fills the launcher's cached scratch with POISON before
    each call; it reaches into today's launcher (``rotate._backends.cuda.runtime.scratch_for``):
    when the launcher changes, change it here, never drop it.
    """

    backend = "cuda"

    def __init__(self, **defaults):
        from numba import cuda

        self.cuda = cuda
        self.defaults = defaults  # planner settings applied to every case (e.g. tiny tiles in the simulator)

    def poison_scratch(self) -> None:
        poison_launch_scratch()

    def roll(self, raw: np.ndarray, case: Case):
        import rotate

        buf = device_copy(raw)
        view = view_of(buf, case)
        self.poison_scratch()
        settings = dict(self.defaults, **dict(case.tunables))
        with cuda_tuning.override(**settings):
            plan = rotate.plan(view, case.shift, case.axis, max_scratch_bytes=case.max_scratch)
            out = rotate.roll(view, case.shift, case.axis, max_scratch_bytes=case.max_scratch)
        assert out is view
        self.cuda.synchronize()
        return buf.copy_to_host(), plan, None


# --- case tables and strategies --------------------------------------------------

def _fixed_cases() -> list:
    out = []
    for i, dtype in enumerate(DTYPES):
        for n in (1, 2, 97, 1024, 4097):
            for shift in (0, 1, -1, n, -n, 3 * n + 1, n // 2 + 1, n - 1, 10**20 + 3):
                out.append(Case((n,), dtype, shift, None, offset=(i * 5 + n) % 16, seed=n + i))
    out += [
        Case((7, 129), "float32", (3, -5), (1, 0), offset=3),
        Case((16, 17, 3), "int16", 4, 1, offset=7),
        Case((5, 8), "complex128", (1, 2, 3), -1),
        Case((33, 40), "uint8", 11, 0, offset=1),
        Case((4, 5, 6), "float64", -2, (0, 2), offset=8),
        Case((300,), "uint8", 150, None, max_scratch=0),   # no scratch: exact halves swap
        Case((300,), "uint8", 101, None, max_scratch=0),   # no scratch: reversal (GPU)
        Case((900,), "uint8", 333, None, offset=9, max_scratch=64),  # block swaps, then the chain schedule
    ]
    return out


#: CPU-only extras: an odd item size, fixed-width strings, bool.
CPU_DTYPES = DTYPES + ["V9", "S3", "bool"]
#: CPU tuning fields shrunk so small arrays take the block-swap, many-lane and fused paths.
CPU_TINY_BUDGETS = [
    (),
    (("scratch_bytes", 64), ("tile_bytes", 32), ("min_lane_bytes", 1), ("lanes", 2), ("small_row_bytes", 0)),
    (("scratch_bytes", 256), ("tile_bytes", 16), ("min_lane_bytes", 1), ("lanes", 3), ("small_row_bytes", 8)),
]

#: Every backend runs these; they are small enough for the simulator.
FIXED_CASES = _fixed_cases()


@st.composite
def cases(draw, max_elements=4097, dtypes=DTYPES, max_ndim=3, max_dim=12, max_scratch=(None,), tunables=((),)):
    """Random cases: lengths near the edges, shifts far beyond +-n, any misalignment, 1-3 dims."""
    dtype = draw(st.sampled_from(dtypes))
    ndim = draw(st.integers(1, max_ndim))
    if ndim == 1:
        shape = (draw(st.one_of(st.sampled_from([n for n in LENGTHS if n <= max_elements]),
                                st.integers(1, max_elements))),)
    else:
        shape = tuple(draw(st.lists(st.integers(1, max_dim), min_size=ndim, max_size=ndim)))
    size = int(np.prod(shape))
    axis = draw(st.one_of(st.none(), st.integers(-ndim, ndim - 1)))
    n = size if axis is None else shape[axis]
    shift = draw(st.one_of(st.sampled_from([0, 1, -1, n, -n, n - 1, n // 2 + 1, 10**20 + 7]),
                           st.integers(-3 * n - 2, 3 * n + 2)))
    return Case(shape, dtype, shift, axis, offset=draw(st.integers(0, 15)),
                max_scratch=draw(st.sampled_from(list(max_scratch))), seed=draw(st.integers(0, 2**32 - 1)),
                tunables=draw(st.sampled_from(list(tunables))))


#: Issue #35: argument shapes numpy.roll takes that no other case passes: lists and tuples of 0-d arrays
#: as ``shift`` and ``axis`` (0-d arrays of several integer dtypes, bools, mixed with ints). Every backend.
RARE_ARGUMENT_CASES = [
    Case((7, 33), "float32", [np.array(3), np.array(-5)], [np.array(1), np.array(0)], offset=3, seed=1),
    Case((5, 8), "int16", (np.array(2, np.uint8), np.array(1, np.int16)), (np.array(0), np.array(0)), seed=2),
    Case((300,), "uint8", [np.array(101)], None, offset=5, seed=3),
    Case((9, 40), "uint8", [np.array(4), 7], [np.array(-1), np.array(0, np.int8)], offset=9, seed=4),
    Case((6, 6), "complex128", [np.array(True), np.array(2)], np.array(1), offset=8, seed=5),
    Case((4, 5, 6), "float64", np.array(-2), [np.array(0), np.array(2)], offset=1, seed=6),
    Case((200,), "int16", [np.array(3), np.array(4), np.array(-1)], None, seed=7),  # summed
]
