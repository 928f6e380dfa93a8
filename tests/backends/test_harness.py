"""The shared roll cases (tests/cases/roll.py) on the CPU backend.

The same cases and the same ``check_roll_case`` body run under the CUDA
simulator (tests/cases/sim.py) and on a GPU (tests/backends/test_gpu.py).
"""

import pytest
from hypothesis import given

from cases.roll import CPU_DTYPES, CPU_TINY_BUDGETS, FIXED_CASES, CpuRunner, cases, check_roll_case

RUNNER = CpuRunner()


@pytest.mark.parametrize("case", FIXED_CASES, ids=repr)
def test_fixed_cases_cpu(case):
    check_roll_case(RUNNER, case)


@given(case=cases(dtypes=CPU_DTYPES, tunables=CPU_TINY_BUDGETS))
def test_random_cases_cpu(case):
    check_roll_case(RUNNER, case)


def test_the_harness_catches_a_wrong_roll(monkeypatch):
    """check_roll_case is not vacuous: a backend that rolls by one too many fails it."""
    from rotate._backends.cpu import runners
    from cases.roll import Case

    run_rows = runners.run_rows

    def off_by_one(buf, step):
        run_rows(buf, step)
        buf[:] = buf[1:].tolist() + buf[:1].tolist()

    monkeypatch.setattr(runners, "run_rows", off_by_one)
    with pytest.raises(AssertionError, match="differ from numpy.roll"):
        check_roll_case(RUNNER, Case((97,), "uint8", 5))


def test_the_harness_catches_writes_outside_the_view(monkeypatch):
    import numpy as np

    from rotate._backends.cpu import runners
    from cases.roll import Case

    run_rows = runners.run_rows

    def spills(buf, step):
        run_rows(buf, step)
        base = buf.base
        while base is not None and not (isinstance(base, np.ndarray) and base.base is None):
            base = base.base
        base[-1] ^= 0xFF  # the last guard byte

    monkeypatch.setattr(runners, "run_rows", spills)
    with pytest.raises(AssertionError, match="bytes after the array changed"):
        check_roll_case(RUNNER, Case((97,), "uint8", 5))
