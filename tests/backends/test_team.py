"""rotate._backends.cpu.team: the CPU backend's threads run a kernel over contiguous runs of members."""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest

from rotate._backends.cpu import team as _team


@pytest.mark.parametrize("members, workers", [(0, 2), (1, 4), (5, 2), (7, 3), (2, 8), (64, 4)])
def test_every_member_runs_once_in_ordered_contiguous_runs(members, workers):
    seen, lock = [], threading.Lock()

    def kernel(tag, lo, hi):
        with lock:
            seen.append((lo, hi, threading.get_ident()))

    _team.run(kernel, members, workers, "tag")
    runs = sorted((lo, hi) for lo, hi, _ in seen)
    assert runs == _team.shares(members, workers) if members else seen == []
    assert [m for lo, hi in runs for m in range(lo, hi)] == list(range(members))
    assert len(seen) <= max(1, workers)
    if members:
        first = [ident for lo, _, ident in seen if lo == 0]
        assert first == [threading.get_ident()]  # the caller takes the first run


def test_runs_are_concurrent():
    """Every run has a thread of its own at once: runs that wait for each other all arrive."""
    barrier = threading.Barrier(4)

    def kernel(lo, hi):
        barrier.wait(timeout=10)  # a run queued behind another would never arrive: BrokenBarrierError

    for _ in range(3):  # and again with the pool's threads idle from the call before
        _team.run(kernel, 4, 4)


def test_an_error_is_raised_after_every_run_has_ended():
    ended = []
    release = threading.Event()

    def kernel(lo, hi):
        if lo == 0:
            raise ValueError("run 0")
        release.wait(5)
        ended.append(lo)

    threading.Timer(0.2, release.set).start()
    with pytest.raises(ValueError, match="run 0"):
        _team.run(kernel, 3, 3)
    assert sorted(ended) == [1, 2]  # no run was still writing when the error reached the caller


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_a_forked_child_gets_threads_of_its_own():
    """A pool's threads do not survive fork: the child must not queue work for them (it would hang)."""
    a = np.zeros(8, np.int64)

    def kernel(out, lo, hi):
        out[lo:hi] += 1

    _team.run(kernel, 8, 4, a)  # the parent's pool is up
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        b = np.zeros(8, np.int64)
        _team.run(kernel, 8, 4, b)
        os._exit(0 if b.tolist() == [1] * 8 else 3)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    assert a.tolist() == [1] * 8
