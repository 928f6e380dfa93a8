"""A busy machine: the CPU backend plans no more threads than other processes leave cores (issue #30)."""

from __future__ import annotations

import time

import numba
import numpy as np
import pytest

import rotate
from rotate._backends.cpu import threads


@pytest.fixture
def two_threads(monkeypatch, tune):
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("numba runs one thread here")
    saved = numba.get_num_threads()
    numba.set_num_threads(2)
    tune.cpu(adapt_to_load=True, min_lane_bytes=1)
    monkeypatch.setattr(threads, "_CORES", 2)
    yield
    numba.set_num_threads(saved)


def _others(monkeypatch, count: int) -> None:
    monkeypatch.setattr(threads, "_busy", [time.monotonic() + 3600, count])  # a reading that stays fresh


def test_two_busy_processes_leave_one_thread(two_threads, monkeypatch):
    a = np.random.default_rng(0).random(1 << 16)
    want = np.roll(a, 3)
    _others(monkeypatch, 2)
    assert threads.usable_threads() == 1
    plan = rotate.plan(a, 3)
    assert plan.steps[0].details["lanes"] == 1
    rotate.roll(a, 3)
    assert a.tobytes() == want.tobytes()
    _others(monkeypatch, 0)  # quiet again: the plan cache keys on the threads, so it plans again
    assert threads.usable_threads() == 2
    assert rotate.plan(a, 3).steps[0].details["lanes"] == 2


def test_runnable_count_read_from_loadavg(two_threads, monkeypatch, tmp_path):
    loadavg = tmp_path / "loadavg"
    monkeypatch.setattr(threads, "_LOADAVG", str(loadavg))
    for line, others in (("0.10 0.20 0.30 1/100 42", 0), ("3.9 3.0 2.0 4/120 42", 2), ("1.0 1.0 1.0 3/90 7", 1)):
        loadavg.write_text(line + "\n")
        monkeypatch.setattr(threads, "_busy", [-1.0, 0])  # stale: read again
        assert threads._others_running(2) == others, line
    monkeypatch.setattr(threads, "_LOADAVG", str(tmp_path / "missing"))
    monkeypatch.setattr(threads, "_busy", [-1.0, 0])
    assert threads._others_running(2) == 0  # no such file (not Linux): numba's threads
