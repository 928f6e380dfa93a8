"""Shared cases and test body for ``roll_rows``, multi-axis ``roll`` and ``fftshift`` on every backend.

The CPU tests (tests/api/test_rows.py), the CUDA simulator (tests/cases/sim.py)
and the GPU tests (tests/backends/test_gpu_rows.py) run the same ``check_rows_case``
over the same table: random bytes ``offset`` bytes past an aligned address,
poisoned guard bytes on both sides, compared byte for byte with numpy (a
Python loop of ``numpy.roll`` per lane; ``numpy.roll`` over several axes;
``numpy.fft.fftshift``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import numpy as np
from hypothesis import strategies as st

from cases.roll import GUARD, POISON, device_copy, poison_launch_scratch, void
from rotate._backends.cuda import tuning as cuda_tuning

FUNCTIONS = ("roll_rows", "roll", "fftshift", "ifftshift")
#: The flat passes a strip step may follow: schedules that move each byte once (plus pre-reads).
ONE_PASS = ("chain", "half-swaps", "row-panels")


@dataclass(frozen=True)
class RowsCase:
    """One call: ``function(a, shifts, axis)`` on random bytes ``offset`` bytes past an aligned address.

    ``shifts``: roll_rows' per-lane shifts (a nested tuple or an int), or
    roll's shift tuple; ``axis``: roll_rows' axis, roll's axes, fftshift's
    axes. ``device_shifts``: on a GPU, pass roll_rows' shifts as an int64
    device array. ``order``: "C" or "F".
    """

    function: str
    shape: tuple
    dtype: str
    shifts: Any = 0
    axis: Any = -1
    offset: int = 0
    seed: int = 0
    order: str = "C"
    device_shifts: bool = False

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * np.dtype(self.dtype).itemsize

    def array(self) -> np.ndarray:
        raw = np.random.default_rng(self.seed).integers(1, 256, self.nbytes, dtype=np.uint8)
        flat = raw.view(self.dtype)
        return flat.reshape(self.shape, order=self.order)

    def buffer(self) -> np.ndarray:
        pre = np.full(GUARD + self.offset, POISON, np.uint8)
        post = np.full(GUARD, POISON ^ 0xFF, np.uint8)
        return np.concatenate([pre, np.random.default_rng(self.seed).integers(1, 256, self.nbytes, dtype=np.uint8),
                               post])

    @property
    def start(self) -> int:
        return GUARD + self.offset

    def shift_array(self) -> np.ndarray:
        return np.asarray(self.shifts, dtype=np.int64)

    def expected(self) -> np.ndarray:
        """What numpy gives, as the array's bytes in memory order."""
        a = void(self.array())
        if self.function == "roll_rows":
            axis = self.axis % a.ndim
            moved = np.moveaxis(a, axis, -1)
            lanes = moved.reshape(-1, moved.shape[-1]) if moved.size else moved.reshape(0, max(1, moved.shape[-1]))
            shifts = np.broadcast_to(self.shift_array(), moved.shape[:-1]).reshape(-1)
            out = np.array([np.roll(lane, int(s)) for lane, s in zip(lanes, shifts)]).reshape(moved.shape)
            out = np.moveaxis(out, -1, axis)
        elif self.function == "roll":
            out = np.roll(a, self.shifts, self.axis)
        elif self.function == "fftshift":
            out = np.fft.fftshift(a, self.axis)
        else:
            out = np.fft.ifftshift(a, self.axis)
        return np.frombuffer(np.asarray(out).tobytes(order=self.order), np.uint8)

    def reproduce(self) -> str:
        return f"check_rows_case(runner, {self!r})"


def view_of(buffer, case: RowsCase):
    flat = buffer[case.start:case.start + case.nbytes].view(np.dtype(case.dtype))
    if case.order == "F" and len(case.shape) > 1:
        if isinstance(flat, np.ndarray) or not hasattr(flat, "__cuda_array_interface__") or \
                hasattr(flat, "_ary"):  # numpy, or the simulator's arrays (numpy inside)
            return flat.reshape(case.shape[::-1]).T
        from numba import cuda  # numba's .T of a device array copies; build the F-ordered view instead

        dtype = np.dtype(case.dtype)
        strides, step = [], dtype.itemsize
        for n in case.shape:
            strides.append(step)
            step *= n
        cai = dict(flat.__cuda_array_interface__, shape=tuple(case.shape), strides=tuple(strides))
        return cuda.from_cuda_array_interface(cai, owner=flat, sync=False)
    return flat.reshape(case.shape) if len(case.shape) != 1 else flat


def call(case: RowsCase, a, shifts):
    import rotate

    if case.function == "roll_rows":
        return rotate.roll_rows(a, shifts, case.axis), rotate.plan_roll_rows(a, shifts, case.axis)
    if case.function == "roll":
        return rotate.roll(a, case.shifts, case.axis), rotate.plan(a, case.shifts, case.axis)
    axes = case.axis
    shape = case.shape
    ax = tuple(range(len(shape))) if axes is None else ((axes,) if isinstance(axes, int) else tuple(axes))
    sign = 1 if case.function == "fftshift" else -1
    plan = rotate.plan(a, [sign * (shape[i] // 2) for i in ax], ax)
    return getattr(rotate, case.function)(a, case.axis), plan


def check_rows_case(runner, case: RowsCase):
    """Run ``case`` through ``runner``; check the bytes, the guards and the plan. Returns the plan."""
    try:
        raw = case.buffer()
        got, plan = runner.run(raw, case)
        start, stop = case.start, case.start + case.nbytes
        assert plan.backend == runner.backend, (plan.backend, runner.backend)
        assert (got[:start] == raw[:start]).all(), "bytes before the array changed"
        assert (got[stop:] == raw[stop:]).all(), "bytes after the array changed"
        want = case.expected()
        wrong = np.flatnonzero(got[start:stop] != want)
        assert wrong.size == 0, (f"{wrong.size} of {case.nbytes} bytes differ from numpy; first at byte {wrong[0]}: "
                                 f"got {got[start + wrong[0]]:#x}, want {want[wrong[0]]:#x}; plan {plan}")
        assert plan.bytes_moved >= plan.ideal_bytes
        return plan
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n  reproduce: {case.reproduce()} with runner {type(runner).__name__}") from None


class CpuRowsRunner:
    backend = "cpu"

    def run(self, raw: np.ndarray, case: RowsCase):
        buf = raw.copy()
        view = view_of(buf, case)
        out, plan = call(case, view, case.shift_array() if case.function == "roll_rows" else None)
        assert out is view
        return buf, plan


class CudaRowsRunner:
    """Device arrays (a GPU or the simulator), scratch poisoned before each call; ``settings`` are GPU
    tuning fields (rotate/_backends/cuda/tuning.py) the calls run under."""

    backend = "cuda"

    def __init__(self, **settings):
        self.settings = settings

    def run(self, raw: np.ndarray, case: RowsCase):
        from numba import cuda

        buf = device_copy(raw)
        view = view_of(buf, case)
        shifts = None
        if case.function == "roll_rows":
            shifts = case.shift_array()
            if case.device_shifts:  # in the lanes' memory order, as the GPU reads them
                shifts = cuda.to_device(np.asfortranarray(shifts) if case.order == "F" else shifts)
        poison_launch_scratch()
        with cuda_tuning.override(**self.settings):
            out, plan = call(case, view, shifts)
        assert out is view
        cuda.synchronize()
        return buf.copy_to_host(), plan


def _fixed() -> list:
    out = []
    rng = np.random.default_rng(7)
    for dtype in ("uint8", "int16", "float32", "float64", "complex128", "V3"):
        for offset in (0, 1, 4, 8):
            for shape in ((5, 13), (3, 64), (1, 31), (7,), (2, 3, 11)):
                lanes = shape[:-1]
                shifts = rng.integers(-3 * shape[-1], 3 * shape[-1], size=lanes) if lanes else int(rng.integers(-40, 40))
                shifts = tuple(np.asarray(shifts).tolist()) if lanes and len(lanes) == 1 else (
                    np.asarray(shifts).tolist() if lanes else shifts)
                shifts = _freeze(shifts)
                out.append(RowsCase("roll_rows", shape, dtype, shifts, -1, offset, seed=len(out)))
                out.append(RowsCase("roll_rows", shape, dtype, shifts, -1, offset, seed=len(out), device_shifts=True))
        out.append(RowsCase("roll_rows", (6, 9), dtype, _freeze(list(range(-4, 5))), 0, 0, order="F", seed=len(out)))
        out.append(RowsCase("roll_rows", (4, 5), dtype, 3, -1, 0, seed=len(out)))
        for shape, shifts, axes in (((6, 10), (3, 5), (0, 1)), ((5, 7), (2, -3), (0, 1)), ((9, 40), (20, 7), (0, 1)),
                                    ((4, 3, 8), (1, 2, 3), (0, 1, 2)), ((3, 4, 5), (1, 2), (0, 1)),
                                    ((2, 5, 3, 6), (1, 2, 7), (0, 1, 3)), ((33, 16), (1, 3), (0, 1))):
            out.append(RowsCase("roll", shape, dtype, shifts, axes, 0 if dtype == "complex128" else 3, seed=len(out)))
        out.append(RowsCase("fftshift", (7, 9), dtype, None, None, 0, seed=len(out)))
        out.append(RowsCase("ifftshift", (5, 4, 3), dtype, None, None, 0, seed=len(out)))
        out.append(RowsCase("fftshift", (8, 6), dtype, None, None, 0, order="F", seed=len(out)))
        # Every rolled axis by half its length (half-swaps where the halves are 16-byte aligned, else the
        # other kernels): rows swapping across the array, an unrolled axis between, one axis, 1-D, F order.
        for function, shape, shifts, axes, order in (("fftshift", (4, 32), None, None, "C"),
                                                     ("ifftshift", (2, 3, 64), None, (0, 2), "C"),
                                                     ("roll", (3, 96), (48,), (1,), "C"),
                                                     ("roll", (6, 2, 32), (-3, 1, 16), (0, 1, 2), "C"),
                                                     ("fftshift", (128,), None, None, "C"),
                                                     ("ifftshift", (32, 8), None, None, "F")):
            for offset in (0, 8):
                out.append(RowsCase(function, shape, dtype, shifts, axes, offset, seed=len(out), order=order))
    return out


def _freeze(value):
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    return value


FIXED_ROWS_CASES = _fixed()


def _columns() -> list:
    """``roll_rows`` along an axis that is not contiguous in memory (GPU: ``column-panels``): axis 0 and a
    middle axis of C arrays, the last and a middle axis of F arrays, item sizes 1-16 (3: structured), bases
    0, 1, 3 and 8 bytes past an aligned address, shifts beyond the length and negative, host and device
    shifts, one shift for every lane."""
    out = []
    rng = np.random.default_rng(11)
    for dtype in ("uint8", "int16", "V3", "float32", "float64", "complex128"):
        for shape, axis, order, offset in (((9, 6), 0, "C", 0), ((9, 6), 0, "C", 3), ((4, 5, 3), 1, "C", 8),
                                           ((6, 4, 5), 1, "F", 1), ((5, 7), 1, "F", 0), ((3, 2, 17), 0, "C", 4)):
            lanes = shape[:axis] + shape[axis + 1:]
            n = shape[axis]
            shifts = _freeze(rng.integers(-3 * n, 3 * n, size=lanes).tolist())
            out.append(RowsCase("roll_rows", shape, dtype, shifts, axis, offset, seed=len(out), order=order,
                                device_shifts=len(out) % 3 == 1))
        out.append(RowsCase("roll_rows", (8, 5), dtype, -3, 0, 2, seed=len(out)))  # one shift for every lane
    return out


#: roll_rows along strided axes (the GPU's ``column-panels``), on every backend.
COLUMN_CASES = _columns()


@st.composite
def column_cases(draw, max_bytes=3000):
    """Random ``roll_rows`` along an axis that is not contiguous: C or F arrays of 2-3 axes, item sizes
    1-16 (odd ones structured), any base offset, shifts from -3n to 3n."""
    dtype = draw(st.sampled_from(["uint8", "int16", "V3", "float32", "V6", "float64", "V12", "complex128"]))
    item = np.dtype(dtype).itemsize
    ndim = draw(st.integers(2, 3))
    order = draw(st.sampled_from("CF"))
    budget = max(1, max_bytes // item)
    shape = []
    for _ in range(ndim):
        shape.append(draw(st.integers(1, max(1, min(40, budget)))))
        budget = max(1, budget // shape[-1])
    # Any axis but the one whose lanes are contiguous (the last of C, the first of F).
    axis = draw(st.integers(0, ndim - 2)) if order == "C" else draw(st.integers(1, ndim - 1))
    lanes = tuple(shape[:axis] + shape[axis + 1:])
    n = shape[axis]
    shifts = draw(st.lists(st.integers(-3 * n - 2, 3 * n + 2), min_size=int(np.prod(lanes)),
                           max_size=int(np.prod(lanes))))
    return RowsCase("roll_rows", tuple(shape), dtype, _freeze(np.asarray(shifts, np.int64).reshape(lanes).tolist()),
                    axis, draw(st.sampled_from([0, 1, 2, 3, 4, 8, 12])), draw(st.integers(0, 2**31)), order=order,
                    device_shifts=draw(st.booleans()))


#: Planner settings that send every lane to ``lane-swaps`` (``lane-panels``' shared memory limit
#: shrunk below one staging buffer), with 64-byte panels and a saved side of at most 40 bytes: the
#: long-lane path on lanes of a few hundred bytes, in the simulator and on a GPU alike.
LONG_LANE_SETTINGS = dict(max_lane_smem=32, swap_panel_bytes=64, swap_save_bytes=40,
                          long_lanes="swaps")
#: The same lanes through ``lane-walks``: tiles of 32-64 bytes (a lane of 300 bytes has 5-10), the swap
#: fallback's 64-byte panels and 40-byte saved side, a share of scratch a third of a lane.
WALK_SETTINGS = dict(max_lane_smem=32, swap_panel_bytes=64, swap_save_bytes=40, long_lanes="walks",
                     walk_tile_bytes=64, walk_max_tiles=512, walk_share_bytes=112)
#: No share and no pool: only lanes with nothing to pre-read walk, the rest take block swaps in the walk
#: kernel. A share of one vector and an ample pool: lanes that pre-read more take their bytes from the
#: pool (after the blocks' shares), back to back. No share and a tight pool: it runs short after a lane or two, and the
#: lanes it turns away take block swaps.
NO_SCRATCH_WALK_SETTINGS = {**WALK_SETTINGS, "walk_share_bytes": 0, "walk_pool_bytes": 0}
POOL_WALK_SETTINGS = {**WALK_SETTINGS, "walk_share_bytes": 16, "walk_pool_bytes": 1 << 16}
TIGHT_POOL_WALK_SETTINGS = {**WALK_SETTINGS, "walk_share_bytes": 0, "walk_pool_bytes": 160}
#: Tiles of 1-2 KiB: 65 sizes, so the choice's chunks hold two (the kernel finds a chunk's size from the
#: scores it keeps in shared memory); a share of one vector and an ample pool, whose exact fill shows
#: each lane's choice was the emulator's.
WIDE_CHOICE_WALK_SETTINGS = {**WALK_SETTINGS, "walk_tile_bytes": 2048, "walk_share_bytes": 16,
                             "walk_pool_bytes": 1 << 16}
WIDE_CHOICE_CASE = RowsCase("roll_rows", (3, 12007), "uint8", (1234, -2500, 4001), -1, 3)


def walk_pool_bytes(plan, case: RowsCase) -> Optional[int]:
    """The pool bytes a ``lane-walks`` call asks for (the spans of lanes over their block's share, the
    emulator's ``walk_plan`` lane by lane, the pool taken as ample), or None for cases whose lanes are not
    in memory order (only C-ordered cases rolled along the last axis are counted)."""
    from rotate._testing import emulator as E

    step = plan.steps[0]
    d = step.details
    if case.order != "C" or case.axis % len(case.shape) != len(case.shape) - 1:
        return None
    n = d["_n"]
    shifts = np.broadcast_to(case.shift_array(), case.shape[:-1]).reshape(-1)
    asked = 0
    for lane, s in enumerate(shifts):
        k = (n - int(s) % n) % n * step.word_bytes
        walk = E.walk_plan(step.seg_bytes, k, (d["head0"] + lane * step.seg_bytes) % 16, d["tile_bytes"][1],
                           d["max_tiles"], d["buffers"] - 1, d["share_bytes"], d["save_bytes"], 1 << 40)
        if walk[0] == "walk" and walk[5] > d["share_bytes"]:
            asked += walk[5]
    return asked


def launch_scratch_state(plan) -> tuple:
    """``(the pool's bytes, the counters)`` of the default stream's scratch after a ``lane-walks`` call:
    the pool (the bytes after the blocks' shares), POISON where the kernel did not write it, and the
    dispensers, which the last block out must leave at zero. Like ``poison_launch_scratch``, it reaches
    into today's launcher. Scratch a call grew was never poisoned: repeat the call to read the pool."""
    from rotate._backends.cuda import runtime as gpu_runtime

    d = plan.steps[0].details
    entry = gpu_runtime.scratch_for(0)
    if entry.pre is None:
        return np.zeros(0, np.uint8), np.zeros(4, np.uint64)
    pool0 = d["grid"] * d["share_bytes"]
    return entry.pre.copy_to_host()[pool0:pool0 + d["pool_bytes"]], entry.counters.copy_to_host()


def check_pool_filled(pool: np.ndarray, asked: int) -> None:
    """The pool holds ``asked`` bytes of pre-reads back to back from its start (an ample pool is never
    short): its last vector is written, nothing after it is."""
    assert (pool[asked - 16:asked] != POISON).any(), f"the pool's last vector (ending at {asked}) is not written"
    assert (pool[asked:] == POISON).all(), f"the pool is written beyond the {asked} bytes asked of it"


def _long_lanes() -> list:
    """``lane-swaps`` cases for LONG_LANE_SETTINGS: small sides just below, at and above the saved-side
    buffer (one block swap or many first), 0, negative and beyond-length shifts, halves, equal shifts,
    item sizes 1-16, bases 0, 1 and 8 bytes past a 16-byte boundary, host and device shifts."""
    out = []
    rng = np.random.default_rng(9)
    save = LONG_LANE_SETTINGS["swap_save_bytes"]
    for dtype in ("uint8", "int16", "float32", "float64", "complex128"):
        item = np.dtype(dtype).itemsize
        n = -(-301 // item) | 1  # about 300 bytes, an odd count
        c = save // item  # a shift of c items: small side exactly the buffer
        shifts = (0, 1, -1, c - 1, c, c + 1, -c, -c - 1, n - c, n + c + 1, -3 * n - c, n // 2, n // 2 + 1,
                  *rng.integers(-2 * n, 2 * n, 3).tolist())
        for offset in (0, 1, 8):
            out.append(RowsCase("roll_rows", (len(shifts), n), dtype, shifts, -1, offset, seed=len(out),
                                device_shifts=offset == 1))
    out.append(RowsCase("roll_rows", (5, 340), "uint8", 97, -1, 5, seed=len(out)))  # equal shifts
    out.append(RowsCase("roll_rows", (5, 80), "float32", -5, -1, 4, seed=len(out), device_shifts=True))  # one shift
    out.append(RowsCase("roll_rows", (2, 3, 150), "int16", ((1, 75, -21), (149, 0, 1000)), -1, 2, seed=len(out),
                        device_shifts=True))
    out.append(RowsCase("roll_rows", (40, 3), "float64", (6, -7, 20), 0, 8, order="F", seed=len(out)))
    return out


LONG_LANE_CASES = _long_lanes()


@st.composite
def long_lane_cases(draw, max_bytes=1200):
    """Random ``roll_rows`` cases for the long-lane path (lanes of 2 bytes up to ``max_bytes``)."""
    dtype = draw(st.sampled_from(["uint8", "int16", "float32", "float64", "complex128"]))
    item = np.dtype(dtype).itemsize
    n = draw(st.integers(2, max(2, max_bytes // item // 2)))
    rows = draw(st.integers(1, max(1, min(6, max_bytes // (n * item)))))
    shifts = tuple(draw(st.lists(st.integers(-3 * n, 3 * n), min_size=rows, max_size=rows)))
    return RowsCase("roll_rows", (rows, n), dtype, shifts, -1, draw(st.integers(0, 15)), draw(st.integers(0, 2**31)),
                    device_shifts=draw(st.booleans()))


def _chunked() -> list:
    """Multi-axis rolls and fftshifts for row-cycles' chunked variant, small: runners force that variant with
    chunks of 16-48 bytes (``CHUNKED_RUNS``), so rows of 30-200 bytes span many chunks, wrap inside one and
    start at every 16-byte phase. Item sizes 1 to 16 (and 3), even and odd lengths, shifts negative and
    beyond the length, misaligned bases."""
    out = []
    for dtype, offset in (("uint8", 5), ("int16", 2), ("float32", 12), ("float64", 8), ("complex128", 0),
                          ("V3", 1), ("uint8", 0), ("float32", 3)):
        for function, shape, shifts, axes, order in (
                ("fftshift", (6, 40), None, None, "C"),
                ("fftshift", (7, 41), None, None, "C"),
                ("ifftshift", (5, 4, 19), None, None, "C"),
                ("roll", (9, 50), (-13, 130), (0, 1), "C"),
                ("roll", (4, 3, 37), (5, -1, -80), (0, 1, 2), "C"),
                ("fftshift", (33, 6), None, None, "F")):
            out.append(RowsCase(function, shape, dtype, shifts, axes, offset, seed=len(out), order=order))
    return out


CHUNKED_ROWS_CASES = _chunked()

#: Planner settings the chunked cases run under, in turn: (variant, chunk bytes, ring depth).
CHUNKED_RUNS = (("chunked", 16, 2), ("chunked", 32, 3), ("chunked-scratch", 48, 4), ("chunked", 48, 2),
                ("chunked-scratch", 16, 3), ("chunked", 16, 4))


def _big_rows() -> list:
    """Rows too long for row-cycles' three-row kernel (above ~75 KiB) at their real size: the chunked variant
    by default on a GPU (first rows in shared memory up to ~200 KiB, in scratch beyond), or three rows on the
    bytes after the last rolled axis where those make rows of ``min_cycle_row`` or more."""
    return [
        RowsCase("fftshift", (64, 16384), "complex64", None, None, 0, seed=1),         # 128 KiB rows, even
        RowsCase("fftshift", (63, 16385), "complex64", None, None, 8, seed=2),         # odd, misaligned
        RowsCase("ifftshift", (5, 4, 20001), "float64", None, None, 8, seed=3),        # 3-D, 160 KB rows
        RowsCase("roll", (9, 3, 100003), "uint8", (-4, 7, -250000), (0, 1, 2), 5, seed=4),
        RowsCase("roll", (31, 70001), "int16", (45, -3), (0, 1), 2, seed=5),           # beyond the length
        RowsCase("roll", (12, 12000), "complex128", (5, 6001), (0, 1), 0, seed=6),     # 192 KB rows
        RowsCase("roll", (25000, 33), "float32", (12345, -40), (0, 1), 4, seed=7, order="F"),  # 100 KB rows
        RowsCase("roll", (7, 80001), "V3", (3, -2), (0, 1), 1, seed=8),                # 240 KB: first rows in scratch
        RowsCase("fftshift", (16, 3, 300000), "uint8", None, None, 13, seed=9),         # 300 KB, 3-D, scratch
        # 160 KiB rows from the last rolled axis on, 4 KiB after it: three-rows on the folded rows
        RowsCase("roll", (3, 5, 40, 512), "complex64", (2, -7, 61), (0, 1, 2), 8, seed=10),
        RowsCase("roll", (5, 41, 300, 3), "V3", (-1, 20, 0), (0, 1, 2), 1, seed=11),     # the last axis unrolled
    ]


BIG_ROWS_CASES = _big_rows()


@st.composite
def rows_cases(draw, max_bytes=4096, dtypes=("uint8", "int16", "float32", "float64", "complex128")):
    """Random roll_rows / multi-axis roll / fftshift cases of at most ``max_bytes`` bytes."""
    dtype = draw(st.sampled_from(dtypes))
    item = np.dtype(dtype).itemsize
    ndim = draw(st.integers(1, 3))
    budget = max(1, max_bytes // item)
    shape = []
    for _ in range(ndim):
        shape.append(draw(st.integers(1, max(1, min(40, budget)))))
        budget = max(1, budget // shape[-1])
    shape = tuple(shape)
    function = draw(st.sampled_from(FUNCTIONS))
    offset = draw(st.sampled_from([0, 0, 1, 2, 4, 8, 15]))
    seed = draw(st.integers(0, 2**31))
    if function == "roll_rows":
        lanes = shape[:-1]
        n = shape[-1]
        shifts = draw(st.lists(st.integers(-3 * n - 2, 3 * n + 2), min_size=int(np.prod(lanes)),
                               max_size=int(np.prod(lanes))))
        shifts = _freeze(np.asarray(shifts, np.int64).reshape(lanes).tolist()) if lanes else shifts[0]
        return RowsCase(function, shape, dtype, shifts, -1, offset, seed, device_shifts=draw(st.booleans()))
    if function == "roll":
        axes = tuple(sorted(set(draw(st.lists(st.integers(0, ndim - 1), min_size=1, max_size=ndim)))))
        shifts = tuple(draw(st.integers(-60, 60)) for _ in axes)
        return RowsCase(function, shape, dtype, shifts, axes, offset, seed, order=draw(st.sampled_from("CF")))
    return RowsCase(function, shape, dtype, None, None, offset, seed, order=draw(st.sampled_from("CF")))


# Item sizes of the short-lane kernels' question: numpy's 1-16 byte types and structured ones of odd sizes.
SHORT_ITEM_SIZES = (1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16)
# Lane lengths in bytes next to the kernels' boundaries: 8-byte windows, two words (16), the short-lane
# limit (256) and past it.
LANE_BYTES_NEAR_BOUNDARIES = (2, 3, 4, 5, 6, 7, 8, 9, 10, 14, 15, 16, 17, 18, 23, 24, 25, 31, 33, 63, 65, 127,
                              129, 250, 255, 256, 257, 300)


def _short_dtype(item: int) -> str:
    return {1: "uint8", 2: "int16", 4: "float32", 8: "float64", 16: "complex128"}.get(item, f"V{item}")


@st.composite
def short_lane_cases(draw, max_lane_bytes=300):
    """roll_rows on back-to-back lanes of 1..``max_lane_bytes`` bytes (most near a kernel boundary).

    Every item size in ``SHORT_ITEM_SIZES`` (structured ``V<k>`` for the
    sizes numpy has no number type of), shifts including 0, negative and
    beyond the lane, the array 0-15 bytes past an aligned address.
    """
    item = draw(st.sampled_from(SHORT_ITEM_SIZES))
    lane_bytes = draw(st.one_of(st.sampled_from(LANE_BYTES_NEAR_BOUNDARIES), st.integers(1, max_lane_bytes)))
    n = max(1, min(lane_bytes, max_lane_bytes) // item)
    outer = draw(st.sampled_from([(), (1,), (2,), (7,), (33,), (3, 5), (130,)]))
    count = int(np.prod(outer, dtype=np.int64))
    shifts = draw(st.lists(st.one_of(st.sampled_from([0, n, -n, 1, -1, n - 1, 1 - n, 3 * n + 2, -(2**63), 2**63 - 1]),
                                     st.integers(-3 * n - 2, 3 * n + 2)),
                           min_size=max(1, count), max_size=max(1, count)))
    if outer:
        shifts = _freeze(np.asarray(shifts, np.int64).reshape(outer).tolist())
    else:
        shifts = shifts[0]
    return RowsCase("roll_rows", outer + (n,), _short_dtype(item), shifts, -1, draw(st.sampled_from([0, 1, 3, 8, 15])),
                    draw(st.integers(0, 2**31)))


#: ``flat_strips`` cases (tests/cases/sim.py, tests/backends/test_gpu_rows.py): multi-axis rolls with one rolled
#: leading axis, rows on 16-byte boundaries; (function, shape, dtype, shifts, axes, order).
FLAT_STRIP_CASES = [
    ("roll", (40, 48), "uint8", (4, 5), (0, 1), "C"),  # strip [0, 5) up a row, several chunks
    ("roll", (40, 48), "uint8", (-4, 40), (0, 1), "C"),  # strip [40, 48) down a row
    ("roll", (3, 7, 32), "float32", (2, 3), (1, 2), "C"),  # three batches of 7 rows
    ("roll", (5, 4, 64), "int16", (3, 60), (0, 2), "C"),  # rows of 4 x 128 bytes rolled by 12 rows
    ("roll", (12, 16), "complex128", (1, 9), (0, 1), "C"),  # strip of 7 items, down
    ("fftshift", (7, 32), "uint8", None, (0, 1), "C"),  # odd axis, half row: strip [0, 16) up
    ("roll", (48, 9), "uint8", (5, 4), (0, 1), "F"),  # F-ordered: the transposed rows
]

#: Multi-axis rolls of small arrays with rows (from the last rolled axis on) shorter than ``min_cycle_row``:
#: one ``row-cycles`` launch up to ``short_row_cycles_max_rows`` rows (tests/backends/test_gpu_rows.py; the
#: simulator runs those that fit it).
SHORT_ROW_CYCLES_CASES = [
    RowsCase("roll", (32, 32), "float32", (3, 5), (0, 1), 0, seed=1),
    RowsCase("fftshift", (31, 33), "complex64", None, None, 8, seed=2),      # odd sides
    RowsCase("roll", (100, 7, 13), "uint8", (2, 0, 5), (0, 1, 2), 3, seed=3),  # 13-byte rows
    RowsCase("ifftshift", (5, 6, 7), "V3", None, None, 1, seed=4),
    RowsCase("roll", (2048, 3), "int16", (1, -1), (0, 1), 2, seed=5),         # 6-byte rows
    RowsCase("roll", (9, 10, 11, 12), "float64", (1, -2, 3, -4), (0, 1, 2, 3), 0, seed=6, order="F"),
    RowsCase("fftshift", (3, 700), "complex128", None, None, 8, seed=7, order="F"),
    RowsCase("roll", (12, 2), "uint8", (5, 1), (0, 1), 15, seed=8),             # 2-byte rows, 24 bytes
]
