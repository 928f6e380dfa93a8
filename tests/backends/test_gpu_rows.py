"""roll_rows, multi-axis roll and fftshift on a real GPU: the shared case table, random cases, large shapes.

Skipped without a CUDA GPU (CI runs the same table under the simulator,
tests/cases/sim.py). Same body as the CPU tests: tests/cases/rows.py.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

cuda = pytest.importorskip("numba.cuda")
from numba.core import config  # noqa: E402

if config.ENABLE_CUDASIM or not cuda.is_available():
    pytest.skip("needs a CUDA GPU (the simulator runs tests/backends/test_cuda_sim.py)", allow_module_level=True)

import numpy as np  # noqa: E402

import rotate  # noqa: E402
from cases.rows import (BIG_ROWS_CASES, CHUNKED_ROWS_CASES, CHUNKED_RUNS, COLUMN_CASES, FIXED_ROWS_CASES,  # noqa: E402
                        FLAT_STRIP_CASES, SHORT_ROW_CYCLES_CASES, LONG_LANE_CASES, ONE_PASS, LONG_LANE_SETTINGS, NO_SCRATCH_WALK_SETTINGS,
                        POOL_WALK_SETTINGS, TIGHT_POOL_WALK_SETTINGS, WALK_SETTINGS, CudaRowsRunner, RowsCase,
                        check_pool_filled, check_rows_case, column_cases, launch_scratch_state, long_lane_cases,
                        rows_cases,
                        walk_pool_bytes)
from rotate._backends.cuda import tuning as cuda_tuning  # noqa: E402

pytestmark = pytest.mark.gpu

RUNNER = CudaRowsRunner()
SMALL_ROWS = CudaRowsRunner(min_cycle_row=16)  # row-cycles on short rows too
# Even fftshifts and narrow-strip rolls through row-cycles, as before half-swaps and flat_strips.
# row-cycles whatever its walks (cycle_min_walk_share 0): these cases check the kernels, not the choice.
NO_HALF_SWAPS = CudaRowsRunner(half_swaps=False, flat_strips=False, cycle_min_walk_share=0.0)
# lane-panels' panel kernel with its run writer on every lane (the warps variant takes 1-8 KiB by default).
RUN_WRITER = CudaRowsRunner(lane_writer="runs", lane_warps=False)
# lane-panels' warps variant (default for 1-8 KiB lanes) on every lane it fits: two slots a warp, and 5;
# a lane a half warp (three slots), a quarter and an eighth of a warp.
WARPS = (CudaRowsRunner(lane_warps=True), CudaRowsRunner(lane_warps=True, warp_slots=5, lane_threads=64, grid=3),
         CudaRowsRunner(lane_warps=True, warp_lane_threads=16, warp_slots=3),
         CudaRowsRunner(lane_warps=True, warp_lane_threads=8, lane_threads=64, grid=5),
         CudaRowsRunner(lane_warps=True, warp_lane_threads=4, lane_threads=128))
LONG_LANES = CudaRowsRunner(**LONG_LANE_SETTINGS)  # lane-swaps on lanes of a few hundred bytes
ONE_BLOCK_LONG_LANES = CudaRowsRunner(grid=1, **LONG_LANE_SETTINGS)
# lane-walks on the same lanes: four, three and two tile buffers (look-ahead of 3, 2 and 1 items), one block
# and three; a share of scratch no lane fits (every lane by block swaps in the walk kernel).
WALKS = (CudaRowsRunner(**WALK_SETTINGS), CudaRowsRunner(grid=1, walk_buffers=3, **WALK_SETTINGS),
         CudaRowsRunner(grid=3, walk_buffers=2, lane_threads=64, **WALK_SETTINGS))
NO_SCRATCH_WALKS = CudaRowsRunner(grid=2, **NO_SCRATCH_WALK_SETTINGS)
POOL_WALKS = (CudaRowsRunner(grid=4, **POOL_WALK_SETTINGS), CudaRowsRunner(grid=3, **TIGHT_POOL_WALK_SETTINGS))


@pytest.mark.parametrize("case", FIXED_ROWS_CASES, ids=repr)
def test_fixed_rows_cases(case):
    check_rows_case(RUNNER, case)
    check_rows_case(SMALL_ROWS, case)
    if case.function == "roll_rows":
        assert check_rows_case(RUN_WRITER, case).steps[0].details.get("writer") in ("runs", None)
        for runner in WARPS:
            plan = check_rows_case(runner, case)
            assert plan.steps[0].seg_bytes < 16 or plan.steps[0].details.get("variant") in ("warps", None), plan


# column-panels with its strips staged in scratch (shared memory too small for a strip's rows).
STAGED_COLUMNS = CudaRowsRunner(column_smem_bytes=1)


@pytest.mark.parametrize("case", COLUMN_CASES, ids=repr)
def test_column_cases(case):
    """roll_rows along strided axes: column-panels, strips in shared memory and staged in scratch."""
    for runner, staged in ((RUNNER, False), (STAGED_COLUMNS, True)):
        plan = check_rows_case(runner, case)
        assert plan.algorithm == "column-panels" and plan.steps[0].details["staged"] == staged, plan


@settings(deadline=None, max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(case=column_cases(max_bytes=1 << 16), staged=st.booleans())
def test_random_column_cases(case, staged):
    check_rows_case(STAGED_COLUMNS if staged else RUNNER, case)


@pytest.mark.parametrize("shape,dtype,axis,order", [
    ((4096, 8192), "float32", 0, "C"),      # 4 KiB lanes of 32 KiB rows: strips in shared memory
    ((3001, 2, 4099), "uint8", 0, "C"),     # odd sides, 1-byte items
    ((100003, 48), "float64", 0, "C"),      # lanes of 800 KB: staged in scratch
    ((64, 4097, 33), "complex128", 1, "C"),  # a middle axis, 16-byte items
    ((8192, 1000), "float32", 1, "F"),      # the last axis of an F array
])
def test_large_column_cases(shape, dtype, axis, order):
    lanes = shape[:axis] + shape[axis + 1:]
    shifts = np.random.default_rng(5).integers(-2 * shape[axis], 2 * shape[axis], size=lanes)
    case = RowsCase("roll_rows", shape, dtype, 0, axis, 8, order=order)  # its array(); the shifts are these
    check_column_case_fast(case, shifts)


def check_column_case_fast(case, shifts):
    """A large column case checked against numpy's take_along_axis (the per-lane loop of the shared body
    is too slow for millions of lanes)."""
    a_host = case.array()
    d = cuda.to_device(a_host)
    rotate.roll_rows(d, shifts, case.axis)
    n = case.shape[case.axis]
    index = (np.expand_dims(np.arange(n), tuple(i for i in range(len(case.shape)) if i != case.axis))
             - np.expand_dims(shifts, case.axis)) % n
    want = np.take_along_axis(a_host.view(f"V{a_host.dtype.itemsize}"), index, case.axis)
    got = d.copy_to_host()
    assert got.view(want.dtype).tobytes() == want.tobytes(), rotate.plan_roll_rows(d, shifts, case.axis)


@settings(deadline=None, max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(case=rows_cases(max_bytes=1 << 16).filter(lambda c: c.function == "roll_rows"))
def test_random_rows_cases_run_writer(case):
    check_rows_case(RUN_WRITER, case)


@settings(deadline=None, max_examples=100, suppress_health_check=[HealthCheck.too_slow])
@given(case=rows_cases(max_bytes=1 << 16).filter(lambda c: c.function == "roll_rows"))
def test_random_rows_cases_lane_warps(case):
    for runner in WARPS:
        check_rows_case(runner, case)


@settings(deadline=None, max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(case=rows_cases(max_bytes=1 << 16))
def test_random_rows_cases(case):
    check_rows_case(SMALL_ROWS, case)


@pytest.mark.parametrize("case", LONG_LANE_CASES, ids=repr)
def test_long_lane_rows_cases(case):
    for runner in (LONG_LANES, ONE_BLOCK_LONG_LANES):
        assert check_rows_case(runner, case).algorithm == "lane-swaps"


@settings(deadline=None, max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(case=long_lane_cases(max_bytes=1 << 14))
def test_random_long_lane_rows_cases(case):
    assert check_rows_case(LONG_LANES, case).algorithm == "lane-swaps"


@pytest.mark.parametrize("case", LONG_LANE_CASES, ids=repr)
def test_walk_rows_cases(case):
    for runner in WALKS + (NO_SCRATCH_WALKS,) + POOL_WALKS:
        plan = check_rows_case(runner, case)
        assert plan.algorithm == "lane-walks", plan
        if runner is NO_SCRATCH_WALKS:  # only lanes with nothing to pre-read walk
            assert plan.steps[0].scratch_bytes == 0, plan
        counters = launch_scratch_state(plan)[1]
        assert not counters.any(), counters  # the last block out rewound the dispensers
        if runner is POOL_WALKS[0] and walk_pool_bytes(plan, case):
            check_rows_case(runner, case)  # scratch poisoned before it: the first call may have grown it
            check_pool_filled(launch_scratch_state(plan)[0], walk_pool_bytes(plan, case))


@pytest.mark.parametrize("seg", [(1 << 20) + 48, 2 << 20])
def test_walks_at_default_tile_sizes(seg):
    """At default sizes the kernel chooses among 769 (12-24 KiB) or 1025 (16-32 KiB) tile sizes in chunks
    of 13 or 17, from scores it keeps in shared memory; the tests above use tiles of 32-64 bytes, one
    size a chunk. (That each lane's choice is ``walks.walk_decision``'s was checked through the
    kernel's trace until 4c66c23; the trace left the product kernels.)"""
    rows = 24
    rng = np.random.default_rng(seg)
    host = rng.integers(0, 256, (rows, seg), dtype=np.uint8)
    shifts = rng.integers(-seg, seg, rows)
    shifts[0] = 0
    x = cuda.to_device(host)
    step = rotate.plan_roll_rows(x, shifts).steps[0]
    d = step.details
    assert step.algorithm == "lane-walks" and d["tile_bytes"][1] == (32768 if seg >= 2 << 20 else 24576), d
    rotate.roll_rows(x, shifts)
    assert np.array_equal(x.copy_to_host(), np.stack([np.roll(r, int(s)) for r, s in zip(host, shifts)]))


@settings(deadline=None, max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(case=long_lane_cases(max_bytes=1 << 14), which=st.integers(0, 2))
def test_random_walk_rows_cases(case, which):
    assert check_rows_case(WALKS[which], case).algorithm == "lane-walks"


def _random_shifts(rows, n, seed):
    return tuple(np.random.default_rng(seed).integers(-2 * n, 2 * n, rows).tolist())


LARGE = [
    RowsCase("roll_rows", (3000, 1021), "float32", tuple(range(-1500, 1500)), -1, 4),
    RowsCase("roll_rows", (20000, 1024), "float32", _random_shifts(20000, 1024, 4), -1, 0),  # 4 KiB: warps
    RowsCase("roll_rows", (5000, 4096), "uint8", _random_shifts(5000, 4096, 5), -1, 7, device_shifts=True),
    RowsCase("roll_rows", (3001, 700), "complex64", _random_shifts(3001, 700, 6), -1, 8),  # 5.6 KB: panels
    RowsCase("roll_rows", (100, 40000), "uint8", tuple(range(-50, 50)), -1, 3),          # 40 KB lanes
    RowsCase("roll_rows", (7, 300001), "uint8", (1, -1, 0, 5, 150000, -299999, 7), -1, 0),  # lane-swaps
    RowsCase("roll_rows", (9, 1 << 21), "uint8", (1, -1, 0, 5, 1 << 20, 3 - (1 << 21), 7, 40000, 12345), -1, 3),
    RowsCase("roll_rows", (40, (1 << 18) + 3), "float32", _random_shifts(40, (1 << 18) + 3, 11), -1, 8,
             device_shifts=True),  # just over 1 MiB: lane-walks' shortest default lanes
    RowsCase("roll_rows", (24, (1 << 18) - 5), "float32", _random_shifts(24, (1 << 18) - 5, 12), -1, 4),  # swaps
    RowsCase("roll_rows", (64, 1 << 22), "uint8", _random_shifts(64, 1 << 22, 1), -1, 0, device_shifts=True),
    RowsCase("roll_rows", (300, 65537), "float32", _random_shifts(300, 65537, 2), -1, 4),   # 256 KiB lanes
    RowsCase("roll_rows", (40, 50001), "complex128", _random_shifts(40, 50001, 3), -1, 8, device_shifts=True),
    RowsCase("roll_rows", (2, 1 << 26), "uint8", (12345679, -3), -1, 1),                # lane-chains: 2 x 64 MiB
    RowsCase("roll_rows", (100000, 3), "int16", 1, -1, 2),
    RowsCase("roll_rows", (4096, 16), "complex128", 5, -1, 0, device_shifts=True),
    RowsCase("fftshift", (1023, 1025), "complex64", None, None, 0),
    RowsCase("fftshift", (64, 48, 330), "float64", None, None, 8),
    RowsCase("ifftshift", (2048, 1536), "complex64", None, None, 0),                    # half-swaps
    RowsCase("fftshift", (64, 96, 130), "complex128", None, None, 0),                    # half-swaps, 3-D
    RowsCase("fftshift", (1 << 22,), "float32", None, None, 0),                          # half-swaps, 1-D
    RowsCase("roll", (300, 4096), "uint16", (0, 2048), (0, 1), 0),                       # half-swaps, one axis
    RowsCase("fftshift", (2048, 1536), "complex64", None, None, 8),                     # misaligned: row-cycles
    RowsCase("roll", (5001, 700), "float32", (2500, -3), (0, 1), 4),
    RowsCase("roll", (257, 3, 4097), "uint8", (100, 1, 4000), (0, 1, 2), 5),
]


@pytest.mark.parametrize("case", LARGE, ids=repr)
def test_large_rows_cases(case):
    plan = check_rows_case(RUNNER, case)
    if case.function != "roll_rows":
        axes = case.axis if case.function == "roll" else range(len(case.shape))
        half = case.function != "roll" or all(2 * s % case.shape[ax] == 0 for s, ax in zip(case.shifts, case.axis))
        even = all(n % 2 == 0 for n in case.shape) or case.function == "roll"
        row = int(np.prod(case.shape[max(axes):])) * np.dtype(case.dtype).itemsize  # from the last rolled axis on
        aligned = case.offset % 16 == 0 and row % 32 == 0
        assert plan.algorithm == ("half-swaps" if half and even and aligned else "row-cycles"), plan
    elif 2048 <= case.nbytes // case.shape[0] <= 8192:
        assert plan.steps[0].details["variant"] == "warps", plan
    elif case.nbytes // case.shape[0] > 226 * 1024:  # beyond lane-panels
        few_huge = case.shape[0] <= 8 and case.nbytes // case.shape[0] >= 64 << 20 and not case.device_shifts
        walks = case.nbytes // case.shape[0] >= 1 << 20  # the tuning's walk_min_lane_bytes
        assert plan.algorithm == ("lane-chains" if few_huge else "lane-walks" if walks else "lane-swaps"), plan


@pytest.mark.parametrize("shape,dtype,shift,offset", [((20000, 1024), "float32", 5, 0), ((3000, 3001), "uint8", -1000, 3)])
def test_one_shift_rolls_of_4_kib_rows_run_the_warps_kernel(shape, dtype, shift, offset):
    """rotate.roll along the last axis of many 2-8 KiB rows: row-panels, through lane-panels' warps variant."""
    plan = check_rows_case(RUNNER, RowsCase("roll", shape, dtype, (shift,), (1,), offset))
    assert plan.algorithm == "row-panels" and plan.steps[0].details["variant"] == "warps", plan


@pytest.mark.parametrize("library", ["torch", "cupy", "numba"])
def test_long_lanes_with_device_shifts_from_each_library(library):
    """Lanes of 2.2 MB, shifts an int64 device array of torch, CuPy or numba: lane-walks, one launch,
    on the library's current stream (torch: a side stream)."""
    rows, n = 6, 2200009
    rng = np.random.default_rng(5)
    host = rng.integers(0, 256, (rows, n), dtype=np.uint8)
    host_shifts = np.array([0, -1, 40000, n + 7, -(n // 2), 1100001], np.int64)
    want = np.stack([np.roll(r, int(s)) for r, s in zip(host, host_shifts)])
    if library == "torch":
        torch = pytest.importorskip("torch")
        x = torch.from_numpy(host).cuda()
        shifts = torch.from_numpy(host_shifts).cuda()
        assert rotate.plan_roll_rows(x, shifts).algorithm == "lane-walks"
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            rotate.roll_rows(x, shifts)
        side.synchronize()
        got = x.cpu().numpy()
    elif library == "cupy":
        cupy = pytest.importorskip("cupy")
        x, shifts = cupy.asarray(host), cupy.asarray(host_shifts)
        assert rotate.plan_roll_rows(x, shifts).algorithm == "lane-walks"
        rotate.roll_rows(x, shifts)
        got = cupy.asnumpy(x)
    else:
        x, shifts = cuda.to_device(host), cuda.to_device(host_shifts)
        assert rotate.plan_roll_rows(x, shifts).algorithm == "lane-walks"
        rotate.roll_rows(x, shifts)
        got = x.copy_to_host()
    assert np.array_equal(got, want)


@pytest.mark.parametrize("case", BIG_ROWS_CASES, ids=repr)
def test_big_rows_run_chunked_row_cycles_in_one_pass(case):
    """Rows beyond the three-row kernel (~75 KiB): the chunked variant, first rows in shared memory up to
    ~200 KiB, pre-read into scratch beyond (the even fftshift is half-swaps by default: both run); or,
    where the bytes after the last rolled axis make rows of ``min_cycle_row``, three rows on those."""
    plan = check_rows_case(RUNNER, case)
    if plan.algorithm != "row-cycles":  # half-swaps, or a flat pass and a strip: both run, then row-cycles
        plan = check_rows_case(NO_HALF_SWAPS, case)
    assert plan.algorithm == "row-cycles", plan
    details = plan.steps[0].details
    if details["variant"] == "three-rows":  # folded: rows after the last rolled axis, no in-row shift
        assert details["row_shift_bytes"] == 0 and plan.steps[0].seg_bytes < 75 * 1024, plan
        check_rows_case(CudaRowsRunner(cycle_fold=False), case)  # and unfolded, chunked
        return
    assert details["variant"] == "chunked", details
    want = "shared memory" if plan.steps[0].seg_bytes <= 200 * 1024 else "scratch"
    assert details["first_rows"] == want, details


@pytest.mark.parametrize("index", range(len(CHUNKED_ROWS_CASES)))
def test_chunked_variant_forced_on_small_rows(index):
    """The simulator's chunked cases (chunks of 16-48 bytes, rings of 2-4) on the GPU, every one, and with
    the planner's own chunk and ring."""
    case = CHUNKED_ROWS_CASES[index]
    variant, chunk, ring = CHUNKED_RUNS[index % len(CHUNKED_RUNS)]
    for settings_ in (dict(cycle_variant=variant, cycle_chunk_bytes=chunk, cycle_ring=ring, lane_threads=32),
                      dict(cycle_variant=variant)):
        plan = check_rows_case(CudaRowsRunner(min_cycle_row=16, **settings_), case)
        assert plan.steps[0].details["variant"] == "chunked", plan


@pytest.mark.parametrize("variant", ["three-rows", "chunked", "chunked-scratch"])
def test_mid_rows_under_every_variant(variant):
    """A 64 KiB-row fftshift and a 3-axis roll run by each variant (the lead's measurement compares them)."""
    runner = CudaRowsRunner(cycle_variant=variant)
    for case in (RowsCase("fftshift", (129, 8192), "complex64", None, None, 0),
                 RowsCase("roll", (6, 7, 30001), "int16", (-2, 9, 12345), (0, 1, 2), 6)):
        plan = check_rows_case(runner, case)
        want = "three-rows" if variant == "three-rows" else "chunked"
        assert plan.algorithm == "row-cycles" and plan.steps[0].details["variant"] == want, plan


def test_roll_rows_on_the_callers_stream_and_library_arrays():
    torch = pytest.importorskip("torch")
    x = torch.arange(4 * 1000, dtype=torch.float32, device="cuda").reshape(4, 1000)
    shifts = torch.tensor([1, -2, 3000, 0], device="cuda")
    want = torch.stack([torch.roll(r, int(s)) for r, s in zip(x, shifts)])
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        rotate.roll_rows(x, shifts)
    s.synchronize()
    assert torch.equal(x, want)
    y = torch.zeros(4, 1000, device="cuda")
    with pytest.raises(TypeError, match="int64"):
        rotate.roll_rows(y, shifts.to(torch.int32))
    with pytest.raises(ValueError, match="broadcast"):
        rotate.roll_rows(y, torch.zeros(3, dtype=torch.int64, device="cuda"))
    assert torch.count_nonzero(y) == 0


@pytest.mark.parametrize("library", ["torch", "cupy"])
def test_repeated_roll_rows_take_the_quick_path_and_stay_correct(library, monkeypatch):
    """A call repeated on the same arrays (device shifts) skips describing, checking and planning; the
    shifts are still read on the device every call, and a changed setting plans again."""
    from rotate import rows as R

    rng = np.random.default_rng(3)
    host = rng.integers(0, 1 << 20, (64, 1024)).astype(np.float32)
    host_shifts = rng.integers(-3000, 3000, 64)
    if library == "torch":
        torch = pytest.importorskip("torch")
        x, s = torch.from_numpy(host).cuda(), torch.from_numpy(host_shifts).cuda()
        read, bump = (lambda t: t.cpu().numpy()), (lambda t: t.add_(13))
    else:
        cupy = pytest.importorskip("cupy")
        x, s = cupy.asarray(host), cupy.asarray(host_shifts)
        read, bump = cupy.asnumpy, (lambda t: t.__iadd__(13))
    want = host.copy()
    R._quick_lanes.clear()
    rotate.roll_rows(x, s)  # the full path, remembered
    want = np.stack([np.roll(r, int(k)) for r, k in zip(want, read(s))])
    assert np.array_equal(read(x), want) and len(R._quick_lanes) == 1

    def no_full_path(*args, **kwargs):
        raise AssertionError("the quick path was not taken")

    with monkeypatch.context() as patch:
        patch.setattr(R, "_prepare_lanes", no_full_path)
        for _ in range(2):
            bump(s)  # new shift values in the same array
            rotate.roll_rows(x, s)
            want = np.stack([np.roll(r, int(k)) for r, k in zip(want, read(s))])
            assert np.array_equal(read(x), want)
    with cuda_tuning.override(lane_writer="gather"):  # the plan key changed: the full path plans again
        rotate.roll_rows(x, s)
    want = np.stack([np.roll(r, int(k)) for r, k in zip(want, read(s))])
    assert np.array_equal(read(x), want)


@pytest.mark.parametrize("case", SHORT_ROW_CYCLES_CASES, ids=repr)
def test_small_multi_axis_rolls_take_one_row_cycles_launch_whatever_their_rows(case):
    """Up to ``short_row_cycles_max_rows`` rows a multi-axis roll is one ``row-cycles`` launch, rows of 2
    bytes and up, C and F, offsets 0-15; with the limit at 0 the same rolls take a pass an axis or more."""
    plan = check_rows_case(RUNNER, case)
    assert [step.algorithm for step in plan.steps] == ["row-cycles"], plan
    plan = check_rows_case(CudaRowsRunner(short_row_cycles_max_rows=0), case)
    assert len(plan.steps) >= 2 or plan.algorithm != "row-cycles", plan


@pytest.mark.parametrize("rows,want", [(2048, ["row-cycles"]), (2049, None)])
def test_short_row_cycles_end_at_their_row_limit(rows, want):
    """A two-axis roll of 32-byte rows: one row-cycles launch at 2048 rows, a pass an axis one row beyond."""
    plan = check_rows_case(RUNNER, RowsCase("roll", (rows, 8), "float32", (5, -3), (0, 1), 0, seed=rows))
    algorithms = [step.algorithm for step in plan.steps]
    assert algorithms == (want or ["chain", "row-panels"]), plan


@pytest.mark.parametrize("index", range(len(FLAT_STRIP_CASES)))
def test_flat_strips_small(index):
    """``flat_strips``: the simulator's cases (a flat one-pass rotation, then row-strips), with the
    default block and with one warp."""

    function, shape, dtype, shifts, axes, order = FLAT_STRIP_CASES[index]
    case = RowsCase(function, shape, dtype, shifts if shifts is not None else 0, axes, 0, seed=index, order=order)
    for settings_ in ({}, {"lane_threads": 32}):
        plan = check_rows_case(CudaRowsRunner(flat_strips=True, **settings_), case)
        assert plan.steps[0].algorithm in ONE_PASS and plan.steps[1].algorithm == "row-strips", plan


@pytest.mark.parametrize("case", [
    RowsCase("roll", (4096, 2048), "float32", (101, 7), (0, 1), 0, seed=1),  # strip of 28 bytes, up
    RowsCase("roll", (2048, 1000), "float64", (-3, 997), (0, 1), 0, seed=2),  # the last 3 items, down
    RowsCase("roll", (3, 600, 4096), "uint8", (77, 1500), (1, 2), 0, seed=3),  # three batches, 1500-byte strip
    RowsCase("roll", (1000, 8192), "complex64", (500, 77), (0, 1), 0, seed=4),  # a 616-byte strip, up
], ids=repr)
def test_flat_strips_large(case):
    """``flat_strips`` on MiB arrays with a bound the flat chain fits: many chunks, every strip width."""
    plan = check_rows_case(CudaRowsRunner(flat_strips=True), case)
    assert [step.algorithm for step in plan.steps][1:] == ["row-strips"], plan
    assert plan.steps[1].details["items"] > 1, plan


# --- issue #30 on the device: shared memory, scalar shifts, autograd ---------------------------

def test_gpu_device_shifts_inside_the_array_are_refused_and_nothing_moves():
    a = cuda.to_device(np.arange(64 * 64, dtype=np.int64).reshape(64, 64))
    before = a.copy_to_host()
    with pytest.raises(ValueError, match="shifts shares memory with a"):
        rotate.roll_rows(a, a[0])
    assert np.array_equal(a.copy_to_host(), before)
    shifts = cuda.to_device(before[0].copy())
    rotate.roll_rows(a, shifts)  # a copy beside it rolls
    assert np.array_equal(a.copy_to_host(), np.stack([np.roll(before[i], before[0][i]) for i in range(64)]))


@pytest.mark.parametrize("rows, n, dtype", [(1000, 37, np.float32), (300, 4096, np.uint8), (5, (2 << 20) + 3, np.uint8),
                                            (3, 3 << 20, np.float32)])
def test_gpu_scalar_host_shift_is_uploaded_once(rows, n, dtype):
    host = np.random.default_rng(rows).integers(0, 255, (rows, n)).astype(dtype)
    for shift in (1, -7, n // 3, 2 ** 70):
        a = cuda.to_device(host)
        rotate.roll_rows(a, shift)
        assert a.copy_to_host().tobytes() == np.roll(host, shift % n, axis=1).tobytes(), shift


def test_gpu_torch_tensor_saved_for_backward_makes_backward_raise():
    torch = pytest.importorskip("torch")
    w = torch.ones(8, 16, device="cuda", requires_grad=True)
    x = torch.arange(128, dtype=torch.float32, device="cuda").reshape(8, 16)
    y = (w * x).sum()
    for call in (lambda: rotate.roll(x, 3), lambda: rotate.roll_rows(x, 1), lambda: rotate.fftshift(x)):
        version = x._version
        call()
        assert x._version == version + 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()
