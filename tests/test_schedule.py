"""The GPU short schedule, run by the CPU emulator under hostile interleavings.

The emulator executes the same ``rotate._schedule`` functions the CUDA
kernel calls. These tests check the invariant that makes the kernel
deadlock-free with any number of resident blocks (every wait is on an
earlier ticket), that it indeed finishes with 1..6 blocks under every
scheduling policy, and that the result equals numpy.roll.
"""

import numpy as np
import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st

from rotate import _schedule as S
from rotate._emulator import POLICIES, Deadlock, ScheduleError, emulate


def expected(data, rows, n, k):
    return np.roll(data.reshape(rows, n), -k, axis=1).reshape(-1)


@settings(deadline=None, max_examples=300)
@given(
    n=st.integers(2, 300),
    data=st.data(),
    head0=st.integers(0, 15),
    tile_bytes=st.sampled_from([16, 32, 48, 64, 128]),
    rows=st.integers(1, 3),
    blocks=st.integers(1, 6),
    buffers=st.integers(2, 5),
    policy=st.sampled_from(POLICIES),
    seed=st.integers(0, 2**16),
)
def test_emulated_schedule_matches_numpy_and_never_deadlocks(n, data, head0, tile_bytes, rows, blocks, buffers,
                                                             policy, seed):
    k = data.draw(st.integers(1, n - 1), label="k")
    buf = np.random.default_rng(seed).integers(0, 256, rows * n, dtype=np.uint8)
    note(f"reproduce: emulate(buf, rows={rows}, n={n}, k={k}, head0={head0}, tile_bytes={tile_bytes}, "
         f"blocks={blocks}, policy={policy!r}, seed={seed}, buffers={buffers}) with "
         f"buf = np.random.default_rng({seed}).integers(0, 256, {rows * n}, dtype=np.uint8)")
    out = emulate(buf, rows, n, k, head0, tile_bytes, blocks, policy, seed, buffers)
    np.testing.assert_array_equal(out, expected(buf, rows, n, k))


@pytest.mark.parametrize("n,k", [(1000, 1), (1000, 999), (1000, 500), (1000, 501), (997, 333), (4096, 17)])
@pytest.mark.parametrize("blocks", [1, 2, 7])
@pytest.mark.parametrize("policy", POLICIES)
def test_boundary_shifts(n, k, blocks, policy):
    buf = np.random.default_rng(n + k).integers(0, 256, n, dtype=np.uint8)
    out = emulate(buf, 1, n, k, 5, 64, blocks, policy, seed=blocks)
    np.testing.assert_array_equal(out, expected(buf, 1, n, k))


@settings(deadline=None, max_examples=500)
@given(n=st.integers(2, 5000), data=st.data(), head=st.integers(0, 15),
       tile_bytes=st.sampled_from([16, 64, 1024, 32768]))
def test_every_wait_is_on_an_earlier_ticket(n, data, head, tile_bytes):
    """The invariant itself, checked exhaustively over the tiles of one row."""
    k = data.draw(st.integers(1, n - 1))
    ntiles = S.tile_count(n, head, tile_bytes)
    assert ntiles <= S.tickets_per_row(n, tile_bytes)
    covered = np.zeros(n, np.int32)
    for j in range(ntiles):
        own = S.tile_ticket(n, k, head, tile_bytes, j)
        assert S.decode_ticket(n, k, head, tile_bytes, own) == j
        x0, x1 = S.tile_dest(n, head, tile_bytes, j)
        covered[x0:x1] += 1
        lo, hi = S.waits_before_write(n, k, head, tile_bytes, j)
        assert lo > hi or hi < own
    assert (covered == 1).all(), "tiles must cover every destination byte exactly once"


def test_a_wrong_schedule_is_caught(monkeypatch):
    """The emulator is not vacuous: dropping the write waits corrupts or is flagged."""
    monkeypatch.setattr(S, "waits_before_write", lambda *a: (1, 0))
    buf = np.random.default_rng(0).integers(0, 256, 500, dtype=np.uint8)
    outcomes = set()
    for seed in range(20):
        out = emulate(buf, 1, 500, 37, 0, 32, 4, "random", seed)
        outcomes.add(bool(np.array_equal(out, expected(buf, 1, 500, 37))))
    assert False in outcomes


def test_backward_wait_is_reported(monkeypatch):
    real = S.waits_before_write
    monkeypatch.setattr(S, "waits_before_write", lambda n, k, h, t, j: (j + 1, j + 1)
                        if j + 1 < S.tile_count(n, h, t) else real(n, k, h, t, j))
    buf = np.arange(300, dtype=np.uint8)
    with pytest.raises(ScheduleError):
        emulate(buf, 1, 300, 7, 0, 32, 3, "lowest", 0)


def test_deadlock_is_detected(monkeypatch):
    # Every tile waits for the last ticket: with too few blocks that ticket is never drawn.
    monkeypatch.setattr(S, "waits_before_write", lambda n, k, h, t, j: (0, 0) if j else (1, 0))
    monkeypatch.setattr(S, "decode_ticket", lambda n, k, h, t, local: (local + 1) % S.tile_count(n, h, t))
    with pytest.raises((Deadlock, ScheduleError)):
        emulate(np.arange(200, dtype=np.uint8), 1, 200, 3, 0, 16, 1, "lowest", 0, buffers=2)


@settings(deadline=None, max_examples=300)
@given(n=st.integers(2, 2000), data=st.data(), fits=st.integers(0, 2000))
def test_gries_mills_swaps_then_rotation_equal_numpy(n, data, fits):
    """The GPU block-swap fallback's plan: the swaps, then the final rotation, equal numpy.roll."""
    planner = pytest.importorskip("rotate._cuda.planner")
    k = data.draw(st.integers(1, n - 1))
    a = np.arange(n)
    swaps, (lo, sub_n, sub_k) = planner.gries_mills(n, k, lambda nn, kk: min(kk, nn - kk) <= fits)
    for x, y, m in swaps:
        assert 0 <= x and x + m <= y and y + m <= n, "swapped blocks must be disjoint and inside"
        a[x:x + m], a[y:y + m] = a[y:y + m].copy(), a[x:x + m].copy()
    assert sub_k == 0 or min(sub_k, sub_n - sub_k) <= fits
    a[lo:lo + sub_n] = np.roll(a[lo:lo + sub_n], -sub_k)
    np.testing.assert_array_equal(a, np.roll(np.arange(n), -k))
