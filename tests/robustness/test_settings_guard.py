"""Every CPU planner setting changed, one at a time: scratch stays inside what the plan sized.

A compiled kernel must take every size-affecting value from the plan, never
from a module constant frozen when numba compiled it: the planner sizes
scratch with today's value, a cached kernel would run with the old one and
write past its buffer (issue #30: ``alias_slack = 0`` overran the
chain's scratch by up to 3,412 bytes; ``two_words_max = 24`` did the
same for 17-31-byte lanes). Here every scratch buffer gets poisoned guard
bytes on both sides, checked after each call, and every result is compared
with numpy byte for byte.
"""

from __future__ import annotations

import contextlib
import dataclasses

import numpy as np
import pytest

import rotate
from rotate._backends.cpu import runners
from rotate._backends.cpu import tuning as cpu_tuning

GUARD = 4096
POISON = 0xA5

# (tuning field, values other than the default). Each value runs every call in CALLS. Every field of the
# CPU policy is here (test_every_field_is_guarded).
SETTINGS = [
    ("alias_slack", [0, 64, 4095, 4096, 8192]),
    ("chain_ring", [2, 3, 6]),
    ("chain_tile_bytes", [(16 << 10,), (4096,), (128 << 10, 32 << 10)]),
    ("chain_tries", [0, 1, 24]),
    ("chain_item_bytes", [0, 1 << 20]),
    ("chain_ring_byte_cost", [0, 64]),
    ("chain_ring_samples", [1, 4096]),
    ("chain_direct", [False]),
    ("tile_bytes", [64, 4096, 1 << 20]),
    ("small_row_bytes", [0, 16, 4096]),
    ("min_lane_bytes", [1, 1 << 30]),
    ("lanes", [1, 2, 3]),
    ("scratch_bytes", [0, 4096, 1 << 16]),
    ("adapt_to_load", [True]),
    ("two_words_max", [0, 8, 12, 24, 32]),
    ("window_min_words", [0, 2, 3, 64]),
    ("shift_block", [1, 3, 1024]),
    ("copy_lane_bytes", [0, 64, 1 << 20]),
    ("small_lane_bytes", [0, 8, 4096]),
    ("split_inner_row_bytes", [0, 16, 1 << 20]),
    ("split_min_bytes", [0, 1 << 30]),
    ("cycle_min_block_bytes", [0, 1 << 40]),
    ("multiaxis_default_share", [0.0, 0.5, 1.0]),
]


def _calls():
    """(name, array maker, the call, numpy's answer): the paths the settings above steer."""
    rng = np.random.default_rng(30)
    out = []
    n = 1_000_003  # chain-serial under a tight bound (n/3, n/2 + 5), block swaps, buffered shifts
    for k, bound in ((n // 3, 300_000), (n // 2 + 5, 200_000), (n // 4 + 3, 100_000), (7, None)):
        data = rng.integers(0, 256, n, dtype=np.uint8)
        out.append((f"flat uint8 n={n} k={k} bound={bound}", data,
                    lambda a, k=k, bound=bound: rotate.roll(a, k, max_scratch_bytes=bound),
                    np.roll(data, k)))
    rows = rng.random((300, 1001))
    out.append(("rows float64 axis 1", rows, lambda a: rotate.roll(a, 333, axis=1), np.roll(rows, 333, axis=1)))
    out.append(("multi-axis float64", rows, lambda a: rotate.roll(a, (7, -250), axis=(0, 1)),
                np.roll(rows, (7, -250), axis=(0, 1))))
    short = rng.integers(0, 256, (30000, 7, 5), dtype=np.uint8)  # inner rows of 5 and 35 bytes, over 1 MiB
    out.append(("multi-axis uint8 short rows", short, lambda a: rotate.roll(a, (3, 2, 1), axis=(0, 1, 2)),
                np.roll(short, (3, 2, 1), axis=(0, 1, 2))))
    for lane_bytes in (2, 3, 5, 8, 9, 12, 16, 17, 24, 31, 40, 200, 3000):
        lanes = rng.integers(0, 256, (257, lane_bytes), dtype=np.uint8)
        shifts = rng.integers(-1000, 1000, 257)
        want = np.stack([np.roll(lanes[i], shifts[i]) for i in range(257)])
        out.append((f"roll_rows {lane_bytes}-byte lanes", lanes,
                    lambda a, shifts=shifts: rotate.roll_rows(a, shifts), want))
    return out


CALLS = _calls()


@contextlib.contextmanager
def _guarded_scratch(buffers: list):
    """``cpu.runners.scratch_array`` returning views with ``GUARD`` poisoned bytes before and after."""
    saved = runners.scratch_array

    def scratch_array(words, dtype):
        nbytes = words * np.dtype(dtype).itemsize
        raw = np.full(nbytes + 2 * GUARD + 64, POISON, np.uint8)
        start = GUARD + (-(raw.ctypes.data + GUARD) % 64)  # the kernels' alignment, as np.empty gives
        buffers.append((raw, start, nbytes))
        return raw[start:start + nbytes].view(dtype)

    runners.scratch_array = scratch_array
    try:
        yield
    finally:
        runners.scratch_array = saved


def _check_guards(buffers: list, what: str) -> None:
    for raw, start, nbytes in buffers:
        before = np.flatnonzero(raw[:start] != POISON)
        after = np.flatnonzero(raw[start + nbytes:] != POISON)
        assert before.size == 0, f"{what}: {before.size} bytes written before a {nbytes}-byte scratch"
        assert after.size == 0, (f"{what}: {after.size} bytes written past a {nbytes}-byte scratch "
                                 f"(up to {after.max() + 1} bytes past its end)")


def test_every_field_is_guarded():
    assert sorted(name for name, _ in SETTINGS) == sorted(f.name for f in dataclasses.fields(cpu_tuning.CpuTuning))


@pytest.mark.slow  # 1 MB rolls under every setting: minutes on 2 cores (.ci/run runs -m slow)
@pytest.mark.parametrize("name, values", SETTINGS, ids=[n for n, _ in SETTINGS])
def test_each_setting_keeps_scratch_in_bounds(name, values):
    for value in values:
        with cpu_tuning.override(**{name: value}):
            for what, data, call, want in CALLS:
                a = data.copy()
                buffers: list = []
                with _guarded_scratch(buffers):
                    call(a)
                label = f"{name} = {value!r}, {what}"
                _check_guards(buffers, label)
                assert a.tobytes() == want.tobytes(), f"{label}: wrong result"


def test_settings_are_in_the_plan_key():
    """A changed setting plans again: the CPU plan cache's key holds the tuning policy."""
    from rotate import _backends
    backend = _backends.backend_named("cpu")
    info = backend.describe(np.zeros(10))[1]
    for name, values in SETTINGS:
        before = backend.plan_key(info, None)
        with cpu_tuning.override(**{name: values[-1]}):
            assert backend.plan_key(info, None) != before, f"{name} is not in the plan key"
