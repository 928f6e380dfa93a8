"""roll_rows, multi-axis roll and fftshift on a real GPU: the shared case table, random cases, large shapes.

Skipped without a CUDA GPU (CI runs the same table under the simulator,
tests/sim_cases.py). Same body as the CPU tests: tests/rows_cases.py.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

cuda = pytest.importorskip("numba.cuda")
from numba.core import config  # noqa: E402

if config.ENABLE_CUDASIM or not cuda.is_available():
    pytest.skip("needs a CUDA GPU (the simulator runs tests/test_cuda_sim.py)", allow_module_level=True)

import rotate  # noqa: E402
from rows_cases import FIXED_ROWS_CASES, CudaRowsRunner, RowsCase, check_rows_case, rows_cases  # noqa: E402

pytestmark = pytest.mark.gpu

RUNNER = CudaRowsRunner()
SMALL_ROWS = CudaRowsRunner(constants={"MIN_CYCLE_ROW": 16})  # row-cycles on short rows too


@pytest.mark.parametrize("case", FIXED_ROWS_CASES, ids=repr)
def test_fixed_rows_cases(case):
    check_rows_case(RUNNER, case)
    check_rows_case(SMALL_ROWS, case)


@settings(deadline=None, max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(case=rows_cases(max_bytes=1 << 16))
def test_random_rows_cases(case):
    check_rows_case(SMALL_ROWS, case)


LARGE = [
    RowsCase("roll_rows", (3000, 1021), "float32", tuple(range(-1500, 1500)), -1, 4),
    RowsCase("roll_rows", (100, 40000), "uint8", tuple(range(-50, 50)), -1, 3),          # 40 KB lanes
    RowsCase("roll_rows", (7, 300001), "uint8", (1, -1, 0, 5, 150000, -299999, 7), -1, 0),  # lane-chains
    RowsCase("roll_rows", (100000, 3), "int16", 1, -1, 2),
    RowsCase("roll_rows", (4096, 16), "complex128", 5, -1, 0, device_shifts=True),
    RowsCase("fftshift", (1023, 1025), "complex64", None, None, 0),
    RowsCase("fftshift", (64, 48, 330), "float64", None, None, 8),
    RowsCase("ifftshift", (2048, 1536), "complex64", None, None, 0),
    RowsCase("roll", (5001, 700), "float32", (2500, -3), (0, 1), 4),
    RowsCase("roll", (257, 3, 4097), "uint8", (100, 1, 4000), (0, 1, 2), 5),
]


@pytest.mark.parametrize("case", LARGE, ids=repr)
def test_large_rows_cases(case):
    plan = check_rows_case(RUNNER, case)
    if case.function != "roll_rows":
        assert plan.algorithm == "row-cycles", plan


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
