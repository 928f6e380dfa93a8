"""Snapshots that prove a refactor changed nothing: the plans the planners make and the PTX the kernels compile to.

Issue 31 ("Nothing lost: prove it") moves most files of the package. Before the move this tool dumps

* ``plans``: what the public planners (``rotate.plan``, ``rotate.plan_roll_rows``; fftshift/ifftshift and
  ``rotate(middle)`` through ``rotate.plan``) return for the shared case tables (tests/cases/roll.py,
  tests/cases/rows.py, under the settings the GPU tests run them with) and for a seeded random set of
  calls, on the CPU backend (numba threads pinned) and on the CUDA backend with the device stubbed
  (an H200: 132 SMs, 228 KiB shared memory an SM, compute capability 9.0, no cooperative launch), as
  canonical JSON (keys sorted, tuples as lists, numpy arrays as dtype, shape and sha256);
* ``ptx``: every distinct kernel build (factory and compile-time parameters) those GPU plans lead to,
  compiled for sm_90 without a GPU, the PTX normalised (comments, ``.file``/``.loc`` lines and numba's
  unused environment globals dropped, mangled names and shared-array names numbered by first use) and
  hashed;

and ``compare A.json B.json`` prints the differences (exit status 1 when cases differ; the headers'
commit and versions are reported but are not differences).

After the move, run the same commands and compare against the baseline in docs/results/::

    python tools/snapshot.py plans -o /tmp/plans.json
    python tools/snapshot.py compare docs/results/redesign-baseline-plans.json /tmp/plans.json
    python tools/snapshot.py ptx -o /tmp/ptx.json
    python tools/snapshot.py compare docs/results/redesign-baseline-ptx.json /tmp/ptx.json

Everything that reaches below the public API is in the ADAPTERS section: one function per private
entry point, each marked. A new layout re-points those functions and nothing else; their output (the
canonical records) must stay the same for the comparison to mean anything.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import hashlib
import json
import os
import platform
import random
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator, Optional

os.environ.setdefault("NUMBA_NUM_THREADS", "2")  # before numba is imported: set_num_threads(2) must be allowed
os.environ.pop("ROTATE_LINEINFO", None)  # the chain kernel with line info is a diagnostic build, not the product

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

FORMAT = 1
CPU_THREADS = 2
DEVICE_SHAPE = (132, 228 * 1024)  # H200: SMs, shared memory an SM (tests/robustness/test_robustness.py's gpu_planner)
CAPABILITY = (9, 0)
BASE_POINTER = 1 << 32  # fake device arrays start here (256-byte aligned, as cudaMalloc's memory), plus GUARD
SHIFTS_POINTER = 1 << 40  # fake device shift arrays, far from any array
GUARD = 64  # tests/cases/roll.py's guard bytes before an array: the case's offset is its misalignment
RANDOM_SEED = 31
RANDOM_CALLS = 2000


# =====================================================================================================
# ADAPTERS: the only code here that names private modules of the package. Re-point these after a move.
# =====================================================================================================

def adapter_case_tables():
    """ADAPTER (test layout): the shared case tables, imported from tests/cases/roll.py and tests/cases/rows.py.

    Returns ``(cases_module, rows_cases_module)``.
    """
    tests = str(ROOT / "tests")
    if tests not in sys.path:
        sys.path.insert(0, tests)
    from cases import roll as cases, rows as rows_cases

    return cases, rows_cases


def adapter_pin_cpu_threads(threads: int) -> None:
    """ADAPTER (CPU backend, rotate/_backends/cpu/): plans use ``threads`` threads whatever the machine's load.

    The CPU planner reads numba's thread count less the cores other processes keep busy
    (``cpu.threads.usable_threads``, from /proc/loadavg): a snapshot must not depend on the load.
    """
    import numba

    from rotate._backends.cpu import threads as cpu_threads

    from rotate._backends.cpu import planner as cpu_planner, tuning as cpu_tuning

    numba.set_num_threads(threads)
    # Where the name is read: the planner imported it by name, so patching threads.py alone missed it.
    cpu_threads.usable_threads = cpu_planner.usable_threads = lambda: threads
    cpu_tuning.override(adapt_to_load=False).__enter__()  # for the rest of the process


@contextlib.contextmanager
def adapter_cpu_tuning(pairs: tuple) -> Iterator[None]:
    """ADAPTER (CPU tuning): apply tests/cases/roll.py's ``tunables`` pairs. Records name them as the module
    constants of rotate/_backends/cpu/ they were at the baseline (SCRATCH_BYTES ...); since the tuning objects
    they are fields of rotate/_backends/cpu/tuning.py, the same names in lower case."""
    from rotate._backends.cpu import tuning as cpu_tuning

    with cpu_tuning.override(**{name.lower(): value for name, value in pairs}):
        yield


def adapter_legacy_cpu_names(pairs) -> tuple:
    """ADAPTER (CPU tuning): tests/cases/roll.py's tuning pairs under the baseline's names (upper case)."""
    return tuple((name.upper(), value) for name, value in pairs)


#: ADAPTER (CUDA tuning): tuning fields that were planner module constants at the baseline, which records
#: list apart from the settings, under their old names.
LEGACY_GPU_CONSTANTS = ("min_cycle_row", "max_lane_smem", "min_chain_lane_bytes", "min_row_threads")


def adapter_stub_gpu() -> None:
    """ADAPTER (CUDA backend): plan for a stubbed H200 without a GPU or driver.

    As tests/robustness/test_robustness.py's ``gpu_planner`` fixture: device shape (132, 228 KiB), device 0, no
    cooperative launch (classic chain plans); compute capability 9.0; device arrays are accepted
    (``_arrays._device_usable``) and a shift array's device is not asked of the driver
    (``lane_args._check_same_device``, as tests/robustness/test_shared_state.py stubs it).
    """
    from rotate._core import arrays as _arrays
    from rotate._backends.cuda import device, lane_args

    device.device_shape = lambda device_id=0: DEVICE_SHAPE
    device._device_id = lambda: 0
    device._cooperative_config = lambda: False
    device.device_capability = lambda device_id=0: CAPABILITY
    _arrays._device_usable = True
    lane_args._check_same_device = lambda *args: None


@contextlib.contextmanager
def adapter_gpu_tuning(settings: dict, constants: dict) -> Iterator[None]:
    """ADAPTER (CUDA tuning): the baseline's planner settings and planner module constants (upper case),
    since the tuning objects all fields of rotate/_backends/cuda/tuning.py, as tests/cases/rows.py's runners apply them."""
    from rotate._backends.cuda import tuning as cuda_tuning

    with cuda_tuning.override(**settings, **{name.lower(): value for name, value in constants.items()}):
        yield


def adapter_step_record(step) -> dict:
    """ADAPTER (plan objects): one step as the canonical record: the public Step fields and ``details``.

    A step's parameters are a typed params object (issue 31, rule 2); ``Step.details`` turns it back into
    the dict the baseline recorded (same keys, same values), so plans compare byte for byte.
    """
    return {
        "axis": step.axis, "shift": step.shift, "rows": step.rows, "seg_bytes": step.seg_bytes,
        "left_bytes": step.left_bytes, "word_bytes": step.word_bytes, "algorithm": step.algorithm,
        "scratch_bytes": step.scratch_bytes, "bytes_moved": step.bytes_moved, "strided": step.strided,
        "details": step.details,
    }


def adapter_kernel_builds(step, pointer: int, host_shifts) -> list:
    """ADAPTER (GPU runners, rotate/_backends/cuda/schedules/): the kernel builds running ``step`` launches.

    Mirrors each schedule module's runner (``RUNS``, ``LANE_RUNS``): which factory it calls with which
    compile-time arguments, and the argument types the kernel is compiled for. Returns a list of
    ``(family, args, signature)``: ``family`` a name of ``adapter_kernel_factory``, ``args`` the
    factory's positional arguments, ``signature`` a tuple of type names (see ``_numba_type``).
    ``lane-chains`` plans hold every run's chain step (``details["runs"]``).
    """
    from rotate._backends.cuda.schedules import chain

    d = step.details
    i64 = ("int64",)
    algorithm = step.algorithm
    if algorithm == "chain":
        return [("chain", list(chain._chain_config(step.params)), i64 * 15)]
    if algorithm == "block-swap":
        out = [("block_swap", [d["tile_bytes"], d["block"]], ("uint8[::1]",) + i64 * 6)]
        for _, sub in sorted((d.get("_final_steps") or {}).items()):
            out += adapter_kernel_builds(sub, 0, None)
        return out
    if algorithm == "reversal":
        word = step.word_bytes
        return [("reversal", [word], (f"uint{8 * word}[::1]",) + i64 * 4)]
    if algorithm == "row-cycles":
        if d.get("variant") == "chunked":
            return [("cycle_stream", [d["block"], d["ring"]], i64 * 23)]
        return [("cycle", [d["unit_bytes"], d["block"], d.get("writer") == "runs"], i64 * 21)]
    if algorithm in ("lane-panels", "row-panels"):
        if d.get("variant") == "warps":
            return [("lane_warps", [d["block"], d["slots"], d["min_blocks"], d["lane_threads"]], i64 * 9)]
        return [("lane_panel", [d["unit_bytes"], d["block"], d.get("row_threads", 0)], i64 * 11)]
    if algorithm == "lane-swaps":
        return [("lane_swap", [d["block"], d["panel_bytes"]], i64 * 9)]
    if algorithm == "lane-walks":
        return [("lane_walk", [d["block"], d["buffers"], d["tile_bytes"][1], d["max_tiles"], d["panel_bytes"],
                               d["min_blocks"]], i64 * 13)]
    if algorithm == "half-swaps":
        return [("half_swap", [d["block"], d["vecs"], d["group"]], i64 * 15)]
    if algorithm == "row-strips":
        return [("strip_save", [d["block"]], i64 * 10), ("strip", [d["block"], d["vecs"]], i64 * 12)]
    if algorithm == "lane-chains":  # its plan holds every run's chain step
        out = []
        for lane, _, sub in d["runs"]:
            out += adapter_kernel_builds(sub, pointer + lane * step.seg_bytes, None)
        return out
    return [("unmapped", [algorithm], ())]


def adapter_kernel_factory(family: str):
    """ADAPTER (GPU kernels): the factory of each kernel family ``adapter_kernel_builds`` names."""
    from rotate._backends.cuda.kernels import block_swaps, chain, cycles, half_swaps, lane_swaps, panels, strips, walks

    return {
        "chain": chain.chain_kernel,
        "block_swap": block_swaps.swap_kernel,
        "reversal": block_swaps.reverse_kernel,
        "cycle": cycles.cycle_kernel,
        "cycle_stream": cycles.cycle_stream_kernel,
        "lane_panel": panels.panel_kernel,
        "lane_warps": panels.warp_lane_kernel,
        "lane_swap": lane_swaps.swap_kernel,
        "lane_walk": walks.walk_kernel,
        "half_swap": half_swaps.half_swap_kernel,
        "strip_save": strips.strip_save_kernel,
        "strip": strips.strip_kernel,
    }[family]


def adapter_stub_compiler() -> None:
    """ADAPTER (numba-cuda): compile for an H200 without a GPU, as tests/codegen/test_codegen.py does (the device
    functions a kernel calls ask numba-cuda for the current device)."""
    import numba.cuda.dispatcher as dispatcher

    class _H200:
        compute_capability = CAPABILITY
        id = 0

    dispatcher.get_current_device = lambda: _H200()


# =====================================================================================================
# Public API only from here on.
# =====================================================================================================

def canonical(value: Any) -> Any:
    """JSON-ready, deterministic: tuples as lists, dict keys as sorted strings, arrays by content hash."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return {"float": repr(float(value))}
    if isinstance(value, (list, tuple)):
        return [canonical(v) for v in value]
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            key = str(k) if not isinstance(k, str) else k
            if key in out:
                raise TypeError(f"dict keys collide as strings: {k!r}")
            out[key] = canonical(v)
        return dict(sorted(out.items()))
    if isinstance(value, np.ndarray):
        data = np.ascontiguousarray(value)
        record = {"ndarray": data.dtype.str, "shape": list(data.shape),
                  "sha256": hashlib.sha256(data.tobytes()).hexdigest()}
        if data.size <= 16:
            record["values"] = canonical(data.tolist())
        return record
    if isinstance(value, np.dtype):
        return dtype_name(value)
    if hasattr(value, "as_details") and hasattr(value, "CONSTANTS"):  # params inside params: as the dict they were
        return canonical(value.as_details())
    if hasattr(value, "algorithm") and hasattr(value, "details"):  # a Step (block-swap's final chain steps)
        return {"step": canonical(adapter_step_record(value))}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {"dataclass": type(value).__name__,
                "fields": canonical({f.name: getattr(value, f.name) for f in dataclasses.fields(value)})}
    raise TypeError(f"no canonical form for {type(value).__name__}: add one to tools/snapshot.py")


def dtype_name(dtype: np.dtype) -> Any:
    return dtype.str if dtype.names is None else canonical(dtype.descr)


def plan_record(plan) -> dict:
    return {"backend": plan.backend, "shape": canonical(plan.shape), "dtype": dtype_name(np.dtype(plan.dtype)),
            "algorithm": plan.algorithm, "steps": [canonical(adapter_step_record(s)) for s in plan.steps]}


class FakeDeviceArray:
    """A CUDA Array Interface exporter at a made-up address: planning never touches its memory."""

    def __init__(self, shape: tuple, dtype: np.dtype, pointer: int, strides: Optional[tuple] = None):
        dtype = np.dtype(dtype)
        self.shape, self.dtype = tuple(shape), dtype
        self.__cuda_array_interface__ = {"shape": tuple(shape), "typestr": dtype.str, "data": (pointer, False),
                                         "strides": strides, "version": 3}
        if dtype.names is not None:
            self.__cuda_array_interface__["descr"] = dtype.descr


def f_strides(shape: tuple, itemsize: int) -> tuple:
    strides, step = [], itemsize
    for n in shape:
        strides.append(step)
        step *= n
    return tuple(strides)


def host_array(shape: tuple, dtype, offset: int, order: str = "C", view: Optional[str] = None) -> np.ndarray:
    """A numpy array ``offset`` bytes past a 64-byte boundary (zeros: planning reads no data), in ``order``,
    or a strided ``view`` of a larger one."""
    dtype = np.dtype(dtype)
    shape = tuple(shape)
    if view == "step2":  # every other element of a larger array, on every axis
        return host_array(tuple(2 * n for n in shape), dtype, offset)[tuple(slice(1, None, 2) for _ in shape)]
    if view == "reversed":  # negative strides
        return host_array(shape, dtype, offset)[tuple(slice(None, None, -1) for _ in shape)]
    if view == "transposed":  # axes reversed, rows padded by one element
        base = host_array(tuple(shape[::-1][:-1]) + (shape[0] + 1,), dtype, offset)
        return base[..., :shape[0]].T
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    raw = np.zeros(nbytes + 64 + 16, np.uint8)
    start = -raw.__array_interface__["data"][0] % 64 + offset
    flat = raw[start:start + nbytes].view(dtype)
    return flat.reshape(shape[::-1]).T if order == "F" and len(shape) > 1 else flat.reshape(shape)


def device_array(shape: tuple, dtype, offset: int, order: str = "C") -> FakeDeviceArray:
    dtype = np.dtype(dtype)
    strides = f_strides(shape, dtype.itemsize) if order == "F" and len(shape) > 1 else None
    return FakeDeviceArray(shape, dtype, BASE_POINTER + GUARD + offset, strides)


# --- calls ---------------------------------------------------------------------------------------------

@dataclasses.dataclass
class Call:
    """One public planning call, on one backend, under tuning. ``kind``: roll, rotate, roll_rows, fftshift,
    ifftshift. ``shift``: roll's shift, rotate's middle, roll_rows' shifts (nested tuples or an int)."""

    id: str
    backend: str
    kind: str
    shape: tuple
    dtype: str
    shift: Any = 0
    axis: Any = None
    offset: int = 0
    order: str = "C"
    view: Optional[str] = None  # CPU only: a strided view (step2, reversed, transposed)
    max_scratch: Optional[int] = None
    device_shifts: bool = False
    cpu_tunables: tuple = ()
    gpu_settings: tuple = ()  # sorted (name, value) pairs
    gpu_constants: tuple = ()

    def describe(self) -> dict:
        shift = self.shift
        if isinstance(shift, tuple) and np.asarray(shift).size > 16:  # long per-lane shifts: by content
            values = np.asarray(shift, np.int64)
            shift = {"int64": list(values.shape), "sha256": hashlib.sha256(values.tobytes()).hexdigest()}
        out = {"backend": self.backend, "kind": self.kind, "shape": self.shape, "dtype": self.dtype,
               "shift": shift, "axis": self.axis, "offset": self.offset, "order": self.order}
        for name in ("view", "max_scratch"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        if self.device_shifts:
            out["device_shifts"] = True
        if self.cpu_tunables:
            out["cpu_tunables"] = self.cpu_tunables
        if self.gpu_settings:
            out["gpu_settings"] = dict(self.gpu_settings)
        if self.gpu_constants:
            out["gpu_constants"] = dict(self.gpu_constants)
        return canonical(out)


def fft_shifts(kind: str, shape: tuple, axes) -> tuple:
    """What rotate.fftshift/ifftshift hand to rotate.roll (tests/cases/rows.py's ``call``)."""
    ax = tuple(range(len(shape))) if axes is None else ((axes,) if isinstance(axes, int) else tuple(axes))
    ax = tuple(a % len(shape) for a in ax)
    sign = 1 if kind == "fftshift" else -1
    return tuple(sign * (shape[a] // 2) for a in ax), ax


def run_call(call: Call):
    """Plan ``call`` through the public API: ``(plan, host shifts or None)``."""
    import rotate

    if call.backend == "cpu":
        a = host_array(call.shape, call.dtype, call.offset, call.order, call.view)
    else:
        a = device_array(call.shape, call.dtype, call.offset, call.order)
    kwargs = {} if call.max_scratch is None else {"max_scratch_bytes": call.max_scratch}
    if call.kind == "roll":
        return rotate.plan(a, call.shift, call.axis, **kwargs), None
    if call.kind == "rotate":
        return rotate.plan(a, middle=call.shift, **kwargs), None
    if call.kind in ("fftshift", "ifftshift"):
        shifts, axes = fft_shifts(call.kind, call.shape, call.axis)
        return rotate.plan(a, shifts, axes, **kwargs), None
    shifts = np.asarray(call.shift, dtype=np.int64)
    passed = shifts
    if call.device_shifts:
        passed = FakeDeviceArray(shifts.shape, np.int64, SHIFTS_POINTER)
    return rotate.plan_roll_rows(a, passed, call.axis, **kwargs), (None if call.device_shifts else shifts)


def tuned(call: Call):
    if call.backend == "cpu":
        return adapter_cpu_tuning(call.cpu_tunables)
    return adapter_gpu_tuning(dict(call.gpu_settings), dict(call.gpu_constants))


def _settings(d: dict) -> tuple:
    return tuple(sorted(d.items()))


def table_calls(limit: Optional[int] = None) -> list:
    """The shared case tables, on both backends, under the tuning the tests run them with."""
    cases, rc = adapter_case_tables()
    out = []

    def add(prefix, backend, kind, shape, dtype, shift, axis, offset=0, order="C", **extra):
        out.append(Call(f"{prefix}/{backend}/{len(out)}", backend, kind, tuple(shape), str(dtype), shift, axis,
                        offset, order, **extra))

    # tests/cases/roll.py: FIXED_CASES on the CPU (tests/backends/test_harness.py, plus the tiny budgets its random cases
    # take) and on the GPU (tests/backends/test_gpu.py: default settings, and the tile sizes its random cases take).
    for i, budgets in enumerate(cases.CPU_TINY_BUDGETS):
        for c in cases.FIXED_CASES:
            add(f"roll-fixed-budgets{i}", "cpu", "roll", c.shape, c.dtype, c.shift, c.axis, c.offset,
                max_scratch=c.max_scratch, cpu_tunables=adapter_legacy_cpu_names(tuple(budgets) + tuple(c.tunables)))
    for tile in (None, 64, 256, 4096):
        settings = {} if tile is None else {"tile_bytes": tile}
        for c in cases.FIXED_CASES:
            add(f"roll-fixed-tile{tile}", "cuda", "roll", c.shape, c.dtype, c.shift, c.axis, c.offset,
                max_scratch=c.max_scratch, gpu_settings=_settings({**settings, **dict(c.tunables)}))

    def rows(prefix, table, runners, cpu=True):
        for case in table:
            kind = case.function
            shift, axis = case.shifts, case.axis
            if cpu:
                add(f"{prefix}", "cpu", kind, case.shape, case.dtype, shift, axis, case.offset, case.order)
            for name, constants, settings in runners:
                add(f"{prefix}-{name}", "cuda", kind, case.shape, case.dtype, shift, axis, case.offset, case.order,
                    device_shifts=case.device_shifts, gpu_settings=_settings(settings),
                    gpu_constants=_settings(constants))

    def runner(name, constants=None, **settings):
        return (name, constants or {}, settings)

    def split(settings: dict):
        settings = dict(settings)
        return {name.upper(): settings.pop(name) for name in LEGACY_GPU_CONSTANTS if name in settings}, settings

    # tests/backends/test_gpu_rows.py's runners.
    fixed_runners = [runner("default"), runner("small-rows", {"MIN_CYCLE_ROW": 16}),
                     runner("no-half-swaps", half_swaps=False, flat_strips=False),
                     runner("run-writer", lane_writer="runs", lane_warps=False),
                     runner("warps", lane_warps=True),
                     runner("warps-5-64-3", lane_warps=True, warp_slots=5, lane_threads=64, grid=3),
                     runner("warps-16-3", lane_warps=True, warp_lane_threads=16, warp_slots=3),
                     runner("warps-8-64-5", lane_warps=True, warp_lane_threads=8, lane_threads=64, grid=5),
                     runner("warps-4-128", lane_warps=True, warp_lane_threads=4, lane_threads=128)]
    rows("rows-fixed", rc.FIXED_ROWS_CASES, fixed_runners)
    long_constants, long_settings = split(rc.LONG_LANE_SETTINGS)
    walk_constants, walk_settings = split(rc.WALK_SETTINGS)
    long_runners = [runner("long", long_constants, **long_settings),
                    runner("long-grid1", long_constants, grid=1, **long_settings),
                    runner("walks", walk_constants, **walk_settings),
                    runner("walks-grid1-b3", walk_constants, grid=1, walk_buffers=3, **walk_settings),
                    runner("walks-grid3-b2-64", walk_constants, grid=3, walk_buffers=2, lane_threads=64,
                           **walk_settings)]
    for name, table_settings, grid in (("no-scratch-walks", rc.NO_SCRATCH_WALK_SETTINGS, 2),
                                       ("pool-walks", rc.POOL_WALK_SETTINGS, 4),
                                       ("tight-pool-walks", rc.TIGHT_POOL_WALK_SETTINGS, 3)):
        constants, settings = split(table_settings)
        long_runners.append(runner(name, constants, grid=grid, **settings))
    rows("rows-long", rc.LONG_LANE_CASES, long_runners)
    wide_constants, wide_settings = split(rc.WIDE_CHOICE_WALK_SETTINGS)
    rows("rows-wide-choice", [rc.WIDE_CHOICE_CASE], [runner("wide", wide_constants, grid=2, **wide_settings)])
    rows("rows-chunked", rc.CHUNKED_ROWS_CASES,
         [runner(f"{variant}-{chunk}-{ring}", {"MIN_CYCLE_ROW": 16}, cycle_variant=variant,
                 cycle_chunk_bytes=chunk, cycle_ring=ring) for variant, chunk, ring in rc.CHUNKED_RUNS])
    rows("rows-big", rc.BIG_ROWS_CASES, [runner("default")] +
         [runner(v, cycle_variant=v) for v in ("three-rows", "chunked", "chunked-scratch")])
    strip_cases = [rc.RowsCase(f, shape, dtype, shifts, axes, 0, order=order)
                   for f, shape, dtype, shifts, axes, order in rc.FLAT_STRIP_CASES]
    rows("rows-flat-strips", strip_cases, [runner("flat-strips", flat_strips=True), runner("default")])
    # GPU only (fake device arrays cost nothing): sizes the host tables do not reach, as the GPU benchmarks
    # roll them: 256 MiB-1 GiB flat rolls, a few huge lanes with host shifts (lane-chains), 4 MiB lanes
    # (lane-walks), big fftshifts and multi-axis rolls, scratch bounds.
    for n, dtype in ((1 << 28, "uint8"), ((1 << 30) + 7, "uint8"), (1 << 28, "float32"), (1 << 26, "complex128")):
        for shift in (1, 3, -5, 4097, 12345, 1 << 20, n // 2, n // 3, n - 1, 10**20 + 3):
            for max_scratch in (None, 0, 1 << 20):
                add("gpu-large-roll", "cuda", "roll", (n,), dtype, shift, None, 0, max_scratch=max_scratch)
    for shape, dtype, shifts in (((4, 1 << 24), "float32", (1, -7, 12345, 1 << 22)), ((3, 1 << 26), "uint8", (5, 5, 0)),
                                 ((8, 1 << 23), "float64", (3, 3, 3, 9, 9, 1, 0, -1)),
                                 ((256, 1 << 20), "float32", 12345), ((1024, 1 << 18), "float32", 777),
                                 ((2048, 1 << 19), "uint8", 3), ((16, 3 << 20), "int16", 1000)):
        for device_shifts in (False, True):
            add("gpu-large-rows", "cuda", "roll_rows", shape, dtype, shifts, -1, 0, device_shifts=device_shifts)
    for kind, shape, dtype, shift, axis in (("fftshift", (8192, 8192), "complex64", None, None),
                                            ("fftshift", (8191, 8193), "complex64", None, None),
                                            ("ifftshift", (64, 512, 512), "float32", None, None),
                                            ("fftshift", (1 << 15, 1 << 15), "uint8", None, None),
                                            ("roll", (4096, 65536), "float32", (3, 5), (0, 1)),
                                            ("roll", (64, 4096, 1024), "float32", (1, -2, 3), (0, 1, 2)),
                                            ("roll", (32768, 8192), "float32", (12345, 100), (0, 1)),
                                            ("roll", (1 << 20, 256), "uint8", 1, 0),
                                            ("roll", (256, 1 << 20), "uint8", 1, 1)):
        for offset in (0, 8):
            add("gpu-large-multi", "cuda", kind, shape, dtype, shift, axis, offset)
    return out[:limit] if limit is not None else out


# --- the seeded random set ----------------------------------------------------------------------------

RANDOM_DTYPES = ["uint8", "int16", "V3", "float32", "V5", "V6", "V7", "float64", "V10", "V12", "complex128"]
CPU_ONLY_DTYPES = ["S3", "bool", "V9"]
LENGTHS = [1, 2, 3, 5, 7, 13, 31, 32, 33, 97, 127, 128, 129, 251, 256, 257, 1021, 1024, 1025, 4093, 4096, 4097,
           65521, 65535, 65536, 65537, 1 << 18, (1 << 18) + 3, 1_000_003, (1 << 20) - 1, 1 << 20, (1 << 20) + 1]
TILES = (16, 64, 1024, 4096, 8192, 16384, 32768, 65536)  # bytes: CPU and GPU tile sizes, chain items


def _length(rng: random.Random, cap: int) -> int:
    pick = rng.random()
    if pick < 0.5:
        choices = [n for n in LENGTHS if n <= cap]
        return rng.choice(choices)
    if pick < 0.8:
        return rng.randint(1, min(cap, 5000))
    return rng.randint(1, cap)


def _shift(rng: random.Random, n: int, itemsize: int) -> int:
    pick = rng.randrange(10)
    if pick == 0:
        return rng.choice([0, n, -n, 2 * n, -3 * n])
    if pick == 1:
        return rng.choice([1, -1, n - 1, 1 - n, n + 1, 3 * n + 1])
    if pick == 2:
        return rng.choice([n // 2, n // 2 + 1, -(n // 2), 10**20 + 3, -(10**20) - 7, 2**63 + 5])
    if pick in (3, 4):  # near a tile edge: the left part (or the shift) a multiple of a tile, give or take
        edge = max(1, rng.choice(TILES) // max(1, itemsize)) * rng.randint(1, 4) + rng.choice([-1, 0, 1])
        return rng.choice([edge, n - edge, -edge])
    return rng.randint(-3 * n - 2, 3 * n + 2)


def _max_scratch(rng: random.Random) -> Optional[int]:
    pick = rng.random()
    if pick < 0.8:
        return None
    return rng.choice([0, 16, 64, 4096, 1 << 16, 1 << 20, rng.randint(0, 1 << 22)])


def random_calls(count: int = RANDOM_CALLS, seed: int = RANDOM_SEED) -> list:
    """``count`` seeded random calls, each planned on the CPU and on the GPU (device arrays: C or F order;
    host arrays also strided views)."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        kind = rng.choices(["roll", "rotate", "roll_rows", "fftshift", "ifftshift", "multi"],
                           [30, 8, 30, 8, 6, 18])[0]
        dtype = rng.choice(RANDOM_DTYPES + CPU_ONLY_DTYPES if rng.random() < 0.1 else RANDOM_DTYPES)
        item = np.dtype(dtype).itemsize
        offset = rng.choice([0, 0, 0, 1, 2, 3, 4, 7, 8, 12, 15])
        order = "C"
        view = None
        max_scratch = _max_scratch(rng)
        budget = max(1, (1 << rng.choice([12, 16, 20, 24])) // item)  # elements
        if kind in ("roll", "rotate"):
            ndim = rng.choice([1, 1, 1, 2, 3])
        else:
            ndim = rng.choice([1, 2, 2, 2, 3, 3, 4]) if kind != "roll_rows" else rng.choice([1, 2, 2, 2, 3])
        shape = []
        for d in range(ndim):
            left = max(1, budget // max(1, int(np.prod(shape, dtype=np.int64))))
            if d == ndim - 1:
                shape.append(_length(rng, left))
            else:
                shape.append(min(left, rng.choice([1, 2, 3, 4, 5, 7, 8, 16, 31, 33, 64, 100, rng.randint(1, 300)])))
        shape = tuple(shape)
        size = int(np.prod(shape, dtype=np.int64))
        if ndim > 1 and rng.random() < 0.3:
            order = "F"
        if size * item <= (1 << 20) and rng.random() < 0.12:
            view = rng.choice(["step2", "reversed", "transposed"]) if ndim > 1 else rng.choice(["step2", "reversed"])
        axis: Any = None
        device_shifts = False
        if kind == "roll":
            if ndim == 1 or rng.random() < 0.3:
                axis = None
                shift = _shift(rng, size, item)
            else:
                axis = rng.randrange(-ndim, ndim)
                shift = _shift(rng, shape[axis], item)
        elif kind == "rotate":
            shift = rng.choice([0, size, 1, size - 1, size // 2, rng.randint(0, size)])
            order = "C" if view is None else order
        elif kind == "multi":
            kind = "roll"
            axes = tuple(sorted(rng.sample(range(ndim), rng.randint(1, ndim))))
            axis = axes
            shift = tuple(_shift(rng, shape[a], item) for a in axes)
        elif kind in ("fftshift", "ifftshift"):
            axis = None if rng.random() < 0.6 else tuple(sorted(rng.sample(range(ndim), rng.randint(1, ndim))))
            shift = None
        else:  # roll_rows
            axis = -1 if rng.random() < 0.8 else rng.randrange(-ndim, ndim)
            if order == "F" and ndim > 1 and rng.random() < 0.7:
                axis = 0  # the lanes of an F-ordered array that a GPU takes
            n = shape[axis]
            lanes = shape[:axis % ndim] + shape[axis % ndim + 1:]
            count = int(np.prod(lanes, dtype=np.int64))
            if rng.random() < 0.2 or count > 4096:
                shift = _shift(rng, n, item) % (1 << 62)
            else:
                flat = [_shift(rng, n, item) % (1 << 62) * rng.choice([1, -1]) for _ in range(count)]
                shift = _nest(flat, lanes)
            device_shifts = rng.random() < 0.3 and count > 0
        for backend in ("cpu", "cuda"):
            out.append(Call(f"random/{backend}/{i}", backend, kind, shape, dtype, shift, axis, offset, order,
                            view if backend == "cpu" else None, max_scratch,
                            device_shifts and backend == "cuda"))
    return out


def _nest(flat: list, shape: tuple):
    if not shape:
        return flat[0]
    if len(shape) == 1:
        return tuple(flat)
    step = len(flat) // shape[0] if shape[0] else 0
    return tuple(_nest(flat[i * step:(i + 1) * step], shape[1:]) for i in range(shape[0]))


# --- running ----------------------------------------------------------------------------------------------

def setup() -> None:
    import rotate  # noqa: F401  (installs the numba cache first)

    adapter_pin_cpu_threads(CPU_THREADS)
    adapter_stub_gpu()


def all_calls(subset: Optional[int] = None, random_count: int = RANDOM_CALLS) -> list:
    calls = table_calls() + random_calls(random_count)
    if subset is not None:  # every k-th call, deterministic
        step = max(1, len(calls) // subset)
        calls = calls[::step][:subset]
    return calls


def plan_calls(calls: list) -> Iterator[tuple]:
    """Yield ``(call, record, plan or None, host shifts)`` for each call."""
    for call in calls:
        plan, shifts = None, None
        try:
            with tuned(call):
                plan, shifts = run_call(call)
                record = plan_record(plan)
        except Exception as exc:  # a refusal is behaviour too: recorded, compared
            if isinstance(exc, TypeError) and "canonical form" in str(exc):
                raise
            record = {"error": type(exc).__name__, "message": str(exc)}
        yield call, record, plan, shifts


def git_commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
    except Exception:
        return "unknown"


def git_dirty() -> bool:
    try:
        out = subprocess.run(["git", "status", "--porcelain", "--", "rotate"], cwd=ROOT, capture_output=True,
                             text=True, check=True).stdout
        return bool(out.strip())
    except Exception:
        return True


def header(kind: str, count: int, **extra) -> dict:
    import numba

    versions = {"python": platform.python_version(), "numpy": np.__version__, "numba": numba.__version__}
    try:
        from importlib.metadata import version

        versions["numba-cuda"] = version("numba-cuda")
    except Exception:
        pass
    return {"format": FORMAT, "kind": kind, "commit": git_commit(), "rotate_dirty": git_dirty(),
            "versions": versions, "count": count, "cpu_threads": CPU_THREADS,
            "gpu_stub": {"device_shape": list(DEVICE_SHAPE), "capability": list(CAPABILITY),
                         "cooperative": False},
            "random": {"seed": RANDOM_SEED, "calls": RANDOM_CALLS}, **extra}


def dump(path: Optional[str], document: dict) -> str:
    """Canonical JSON: keys sorted, compact, one line for the header and one for each case (line diffs)."""
    (section, entries), = [(k, v) for k, v in document.items() if k != "header"]

    def one(value):
        return json.dumps(value, sort_keys=True, separators=(",", ":"))

    lines = [f'{{"header":{one(document["header"])},', f'"{section}":{{']
    items = sorted(entries.items())
    lines += [f"{one(key)}:{one(value)}" + ("," if i + 1 < len(items) else "") for i, (key, value) in enumerate(items)]
    lines.append("}}")
    text = "\n".join(lines) + "\n"
    assert json.loads(text) == json.loads(one(document))
    if path and path != "-":
        Path(path).write_text(text)
    else:
        sys.stdout.write(text)
    return text


def cmd_plans(args) -> None:
    setup()
    calls = all_calls(args.subset, args.random)
    entries = {}
    for call, record, _, _ in plan_calls(calls):
        entries[call.id] = {"call": call.describe(), "plan": record}
    hashed = "all" if args.hash_plans else "none" if args.full else "random"
    for key, value in entries.items():
        if hashed == "all" or (hashed == "random" and key.startswith("random/")):
            plan = value.pop("plan")
            value["plan_sha256"] = _sha(plan)
            value["algorithm"] = plan.get("algorithm") or plan.get("error")
    note = {"all": "every plan as the sha256 of its canonical JSON",
            "random": "the case tables' plans in full; the random calls' plans as the sha256 of their canonical "
                      "JSON (run with --full on both sides to see how a random plan differs)",
            "none": "every plan in full"}[hashed]
    dump(args.output, {"header": header("plans", len(entries), subset=args.subset, plans=note), "cases": entries})


def _sha(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


# --- PTX --------------------------------------------------------------------------------------------------

def _numba_type(name: str):
    from numba import types

    if name.endswith("[::1]"):
        return types.Array(getattr(types, name[:-5]), 1, "C")
    return getattr(types, name)


_COMMENT = re.compile(r"\s*//.*$")
_MANGLED = re.compile(r"_Z\w+")
_SMEM = re.compile(r"_cudapy_smem_\d+")
_PARAM = re.compile(r"^(.*?)(_param_\d+)$")


def normalise_ptx(text: str) -> str:
    """PTX up to symbol names: comments, ``.file``/``.loc`` lines and numba's environment globals (unused
    ``.common .global`` NumbaEnv pointers) dropped; mangled names (``_Z...``, parameters keep their
    ``_param_N``) and shared arrays (``_cudapy_smem_N``) renamed F0, F1, ... and S0, S1, ... in order of
    first appearance; blank lines dropped."""
    names: dict = {}
    smem: dict = {}

    def mangled(m):
        name = m.group(0)
        suffix = ""
        p = _PARAM.match(name)
        if p:
            name, suffix = p.group(1), p.group(2)
        return names.setdefault(name, f"F{len(names)}") + suffix

    lines = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("//") or stripped.startswith(".file") or stripped.startswith(".loc"):
            continue
        if stripped.startswith(".common .global") and "NumbaEnv" in stripped:
            continue
        line = _COMMENT.sub("", line).rstrip()
        if not line.strip():
            continue
        line = _MANGLED.sub(mangled, line)
        line = _SMEM.sub(lambda m: smem.setdefault(m.group(0), f"S{len(smem)}"), line)
        lines.append(line)
    return "\n".join(lines) + "\n"


def build_key(family: str, args: list, signature: tuple) -> str:
    return json.dumps([family, canonical(args), list(signature)], separators=(",", ":"))


def collect_builds(calls: list) -> dict:
    """The distinct kernel builds the GPU plans of ``calls`` lead to: ``{key: {family, args, signature,
    used_by: [first few call ids], uses}}``."""
    builds: dict = {}
    for call, record, plan, shifts in plan_calls([c for c in calls if c.backend == "cuda"]):
        if plan is None:
            continue
        pointer = BASE_POINTER + GUARD + call.offset
        with tuned(call):  # lane-chains plans its launches under the call's settings
            for step in plan.steps:
                for family, args, signature in adapter_kernel_builds(step, pointer, shifts):
                    key = build_key(family, args, signature)
                    entry = builds.setdefault(key, {"family": family, "args": canonical(args),
                                                    "signature": list(signature), "uses": 0, "used_by": []})
                    entry["uses"] += 1
                    if len(entry["used_by"]) < 3:
                        entry["used_by"].append(call.id)
    return dict(sorted(builds.items()))


def compile_build(entry: dict) -> str:
    from numba import cuda

    factory = adapter_kernel_factory(entry["family"])
    kernel = factory(*entry["args"])
    options = kernel.targetoptions
    ptx, _ = cuda.compile_ptx(kernel.py_func, tuple(_numba_type(t) for t in entry["signature"]), cc=CAPABILITY,
                              debug=options.get("debug") or None, lineinfo=bool(options.get("lineinfo")),
                              fastmath=bool(options.get("fastmath")), opt=options.get("opt"),
                              launch_bounds=options.get("launch_bounds"))
    return ptx


def cmd_ptx(args) -> None:
    setup()
    adapter_stub_compiler()
    started = time.time()
    calls = all_calls(args.subset, args.random)
    builds = collect_builds(calls)
    collected = time.time() - started
    keys = [k for k in builds if builds[k]["family"] != "unmapped"]
    chosen = keys if args.limit is None else keys[:: max(1, len(keys) // args.limit)][:args.limit]
    keep = Path(args.keep_ptx) if args.keep_ptx else None
    if keep:
        keep.mkdir(parents=True, exist_ok=True)
    for n, key in enumerate(chosen):
        entry = builds[key]
        t = time.time()
        text = normalise_ptx(compile_build(entry))
        entry["ptx_sha256"] = hashlib.sha256(text.encode()).hexdigest()
        entry["ptx_lines"] = text.count("\n")
        if keep:
            (keep / f"{hashlib.sha256(key.encode()).hexdigest()[:16]}.ptx").write_text(text)
        print(f"[{n + 1}/{len(chosen)}] {entry['family']} {entry['args']} {time.time() - t:.1f}s", file=sys.stderr)
    compiled = len(chosen)
    note = ("every distinct build compiled" if compiled == len(keys) else
            f"a deterministic subset: every {max(1, len(keys) // args.limit)}-th of the {len(keys)} builds "
            f"in key order, {compiled} compiled (--limit {args.limit}); the others have no ptx_sha256")
    dump(args.output, {"header": header("ptx", len(builds), compiled=compiled, subset=args.subset, coverage=note,
                                        calls=len([c for c in calls if c.backend == 'cuda']),
                                        compile="cuda.compile_ptx(kernel.py_func, signature, cc=(9, 0)) with the "
                                                "kernel's own debug/lineinfo/fastmath/opt/launch_bounds options",
                                        normalised="comments, .file/.loc lines and numba's unused NumbaEnv "
                                                   "globals dropped; mangled names (_Z...) renamed F0, F1, ... and "
                                                   "shared arrays (_cudapy_smem_N) S0, S1, ... by first appearance; "
                                                   "blank lines dropped. Function bodies keep their order: a move "
                                                   "that reorders non-inlined device functions in the PTX shows as "
                                                   "a difference (diff the --keep-ptx files)"),
                      "builds": builds})
    print(f"{len(builds)} builds ({compiled} compiled) in {time.time() - started:.0f}s "
          f"(collecting {collected:.0f}s)", file=sys.stderr)


# --- compare ------------------------------------------------------------------------------------------

def _diff(a: Any, b: Any, path: str, out: list, limit: int = 12) -> None:
    if len(out) >= limit:
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            if key not in a:
                out.append(f"{path}.{key}: added {json.dumps(b[key])[:200]}")
            elif key not in b:
                out.append(f"{path}.{key}: removed (was {json.dumps(a[key])[:200]})")
            else:
                _diff(a[key], b[key], f"{path}.{key}", out, limit)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            _diff(x, y, f"{path}[{i}]", out, limit)
    elif a != b:
        out.append(f"{path}: {json.dumps(a)[:200]} -> {json.dumps(b)[:200]}")


def compare(a: dict, b: dict, stream=None, max_cases: int = 50) -> int:
    """Print the differences of two snapshots; return how many cases (plans or builds) differ."""
    stream = sys.stdout if stream is None else stream
    notes: list = []
    ha, hb = a.get("header", {}), b.get("header", {})
    for key in sorted(set(ha) | set(hb)):
        if ha.get(key) != hb.get(key):
            notes.append(f"header.{key}: {json.dumps(ha.get(key))} -> {json.dumps(hb.get(key))}")
    for line in notes:
        print(f"note: {line}", file=stream)
    section = "cases" if "cases" in a or "cases" in b else "builds"
    ca, cb = a.get(section, {}), b.get(section, {})
    differing = 0
    shown = 0
    for key in sorted(set(ca) | set(cb)):
        if key not in cb:
            differing += 1
            lines = ["missing in B"]
        elif key not in ca:
            differing += 1
            lines = ["new in B"]
        else:
            left, right = ca[key], cb[key]
            if section == "cases" and ("plan" in left) != ("plan" in right):  # one side hashed: hash the other
                left, right = (_hashed(left), right) if "plan" in left else (left, _hashed(right))
            if section == "builds":  # where each build was first used is not part of the build
                left = {k: v for k, v in left.items() if k not in ("uses", "used_by")}
                right = {k: v for k, v in right.items() if k not in ("uses", "used_by")}
            if left == right:
                continue
            differing += 1
            lines = []
            _diff(left, right, "", lines)
        if shown < max_cases:
            shown += 1
            print(f"{section} {key}:", file=stream)
            for line in lines:
                print(f"    {line}", file=stream)
    if shown < differing:
        print(f"... and {differing - shown} more", file=stream)
    print(f"{differing} of {len(set(ca) | set(cb))} {section} differ", file=stream)
    return differing


def _hashed(entry: dict) -> dict:
    out = {k: v for k, v in entry.items() if k != "plan"}
    out["plan_sha256"] = _sha(entry["plan"])
    out["algorithm"] = entry["plan"].get("algorithm") or entry["plan"].get("error")
    return out


def cmd_compare(args) -> int:
    a = json.loads(Path(args.a).read_text())
    b = json.loads(Path(args.b).read_text())
    return 1 if compare(a, b, max_cases=args.max_cases) else 0


def main(argv: Optional[list] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("plans", help="dump the plans of the case tables and the random set")
    p.add_argument("-o", "--output", default="-")
    p.add_argument("--subset", type=int, help="only about this many calls (every k-th): tests")
    p.add_argument("--random", type=int, default=RANDOM_CALLS, help="random calls (each on both backends)")
    p.add_argument("--hash-plans", action="store_true", help="a sha256 per plan instead of the plan, for all")
    p.add_argument("--full", action="store_true", help="the random calls' plans in full too (default: sha256)")
    p.set_defaults(run=cmd_plans)
    p = sub.add_parser("ptx", help="compile every kernel build the GPU plans lead to; sha256 of normalised PTX")
    p.add_argument("-o", "--output", default="-")
    p.add_argument("--subset", type=int, help="plan only about this many calls (every k-th)")
    p.add_argument("--random", type=int, default=RANDOM_CALLS)
    p.add_argument("--limit", type=int, help="compile only about this many builds (every k-th, in key order)")
    p.add_argument("--keep-ptx", help="also write each normalised PTX to this folder (for diffing)")
    p.set_defaults(run=cmd_ptx)
    p = sub.add_parser("compare", help="print the differences of two snapshots (exit 1 if cases differ)")
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--max-cases", type=int, default=50)
    p.set_defaults(run=cmd_compare)
    args = parser.parse_args(argv)
    return args.run(args) or 0


if __name__ == "__main__":
    sys.exit(main())
