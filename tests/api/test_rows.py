"""rotate.roll_rows, rotate.fftshift/ifftshift and one-pass multi-axis rolls on the CPU.

Oracles: a Python loop of ``numpy.roll`` over the lanes (roll_rows),
``numpy.fft.fftshift``/``ifftshift`` and ``numpy.roll`` (multi-axis). Arrays
are random non-zero bytes inside a buffer with poisoned guard bytes; strided
views leave gaps that must stay untouched too, so the whole buffer is
compared byte for byte with what the oracle says it should hold. Scratch is
poisoned before every kernel runs and counted against the plan.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st

import rotate
from rotate._core import arrays as _arrays
from rotate._backends.cpu import lanes as cpu_lanes, runners
from rotate._backends.cpu import tuning as cpu_tuning

from cases.rows import CpuRowsRunner, check_rows_case, short_lane_cases
from test_roll import DTYPES, HUGE, STRUCT9

ROOT = Path(__file__).resolve().parents[2]
GUARD = 32
POISON = 0xA5
LANE_DIMS = [1, 2, 3, 5, 7, 8, 13, 16, 31, 33, 64, 127, 130]
_CPU_ROWS = CpuRowsRunner()


def void(a):
    return a.view(np.dtype((np.void, a.dtype.itemsize)))


def expect(expected_raw, view, a, oracle):
    """Write ``oracle(a)`` into ``expected_raw`` through ``view``. Bytes outside every field of a
    padded structured dtype are never moved (rotate rolls field by field), so such dtypes get the
    oracle of each field and keep their padding."""
    if a.dtype.names is not None and _arrays.has_gaps(a.dtype):
        for name in a.dtype.names:
            void(view(expected_raw)[name])[...] = oracle(a[name])
    else:
        void(view(expected_raw))[...] = oracle(a)


def build(seed, base_shape, dtype, order, view_kind):
    """(raw buffer, view into it, function making the same view of another buffer)."""
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(base_shape, dtype=np.int64)) * dtype.itemsize
    raw = np.full(2 * GUARD + nbytes, POISON, np.uint8)
    raw[GUARD:GUARD + nbytes] = np.random.default_rng(seed).integers(1, 256, nbytes, dtype=np.uint8)

    def view(buf):
        flat = buf[GUARD:GUARD + nbytes].view(dtype)
        base = flat.reshape(base_shape) if order == "C" else flat.reshape(base_shape[::-1]).T
        if view_kind == "every-other":
            return base[::2]
        if view_kind == "reversed":
            return base[::-1]
        return base

    return raw, view(raw), view


@contextlib.contextmanager
def tunables(lanes=None, poison_scratch=True, allocated=None, **tuning):
    """Force ``lanes`` threads of work on tiny arrays; poison and count scratch; other CPU tuning fields."""
    saved = runners.scratch_array

    def scratch_array(words, dtype):
        if allocated is not None:
            allocated.append(words * np.dtype(dtype).itemsize)
        return np.full(words * np.dtype(dtype).itemsize, POISON, np.uint8).view(dtype)

    fields = dict(dict(lanes=lanes, min_lane_bytes=1) if lanes else {}, **tuning)
    try:
        with cpu_tuning.override(**fields):
            if poison_scratch:
                runners.scratch_array = scratch_array
            yield
    finally:
        runners.scratch_array = saved


def lanes_oracle(a, shifts, axis):
    """numpy.roll on every lane, one Python loop iteration per lane."""
    moved = np.moveaxis(void(a).copy(), axis, -1)
    lane_shape = moved.shape[:-1]
    sh = np.broadcast_to(np.asarray(shifts, dtype=object), lane_shape)
    out = moved.copy()
    for idx in np.ndindex(*lane_shape):
        out[idx] = np.roll(moved[idx], int(sh[idx]))
    return np.moveaxis(out, -1, axis)


@st.composite
def layouts(draw, min_ndim=1, max_ndim=4, max_size=2500):
    ndim = draw(st.integers(min_ndim, max_ndim))
    shape, size = [], 1
    for _ in range(ndim):
        d = draw(st.sampled_from([d for d in LANE_DIMS if d * size <= max_size]))
        shape.append(d)
        size *= d
    order = draw(st.sampled_from("CF"))
    view_kind = draw(st.sampled_from(["whole", "whole", "every-other", "reversed"]))
    return tuple(shape), order, view_kind


def shift_values(n):
    return st.one_of(st.sampled_from([0, n, -n, 1, -1, n - 1, 1 - n, 2 * n + 1, HUGE, -HUGE, 2**63 - 1]),
                     st.integers(-3 * n - 2, 3 * n + 2))


@given(layout=layouts(), dtype=st.sampled_from(DTYPES), seed=st.integers(0, 2**32 - 1),
       lanes=st.sampled_from([None, 2, 3]), scratch=st.sampled_from([None, None, 0, 8, 64, 1024]), data=st.data())
def test_roll_rows_matches_a_loop_of_numpy_roll(layout, dtype, seed, lanes, scratch, data):
    base_shape, order, view_kind = layout
    raw, a, view = build(seed, base_shape, dtype, order, view_kind)
    axis = data.draw(st.integers(-a.ndim, a.ndim - 1), label="axis")
    n = a.shape[axis]
    lane_shape = a.shape[:axis % a.ndim] + a.shape[axis % a.ndim + 1:]
    form = data.draw(st.sampled_from(["full", "scalar", "broadcast", "list"]), label="shifts form")
    if form == "scalar":
        shifts = data.draw(shift_values(n))
        oracle_shifts = shifts
    else:
        b_shape = lane_shape if form != "broadcast" else tuple(1 if data.draw(st.booleans()) else d for d in lane_shape)
        count = int(np.prod(b_shape, dtype=np.int64))
        values = data.draw(st.lists(shift_values(n), min_size=count, max_size=count))
        oracle_shifts = np.array(values, dtype=object).reshape(b_shape)
        if form == "list" or any(abs(v) >= 2**63 for v in values):
            shifts = oracle_shifts.tolist() if b_shape else values[0]  # Python ints of any size
        else:
            shifts = np.array(values, dtype=data.draw(st.sampled_from([np.int64, np.int32]))
                              if all(abs(v) < 2**15 for v in values) else np.int64).reshape(b_shape)
    note(f"shape={a.shape} strides={a.strides} dtype={a.dtype} axis={axis} shifts={shifts!r} lanes={lanes} "
         f"scratch={scratch}")
    expected_raw = raw.copy()
    expect(expected_raw, view, a, lambda x: lanes_oracle(x, oracle_shifts, axis))
    allocated = []
    with tunables(lanes, allocated=allocated):
        p = rotate.plan_roll_rows(a, shifts, axis, max_scratch_bytes=scratch)
        note(str(p))
        out = rotate.roll_rows(a, shifts, axis, max_scratch_bytes=scratch)
    assert out is a
    wrong = np.flatnonzero(raw != expected_raw)
    assert wrong.size == 0, f"{wrong.size} bytes differ (guards at [0,{GUARD}) and the end); first {wrong[:8]}"
    assert allocated == [s.scratch_bytes for s in p.steps]
    if scratch is not None:
        assert p.scratch_bytes <= scratch
    assert p.bytes_moved >= p.ideal_bytes


@pytest.mark.parametrize("n, rows", [(8, 100_000), (4096, 64), (100_003, 3)])
def test_roll_rows_long_and_short_lanes(n, rows):
    rng = np.random.default_rng(n)
    a = rng.integers(1, 2**62, (rows, n), dtype=np.int64)
    shifts = rng.integers(-3 * n, 3 * n, rows)
    shifts[:3] = (0, n, -1)
    expected = np.array([np.roll(r, s) for r, s in zip(a, shifts)])
    with tunables(2):
        rotate.roll_rows(a, shifts)
    assert np.array_equal(a, expected)


# --- short lanes (<= small_lane_bytes): words wider than the element, one-word lanes, funnel shifts ----

SHORT_ALGORITHMS = ("per-lane-word-rotate", "per-lane-small-copy", "per-lane-byte-window")
SHORT_DTYPES = [np.dtype(np.uint8), np.dtype(np.int16), np.dtype(np.float32), np.dtype(np.float64),
                np.dtype(np.complex128), np.dtype("S3"), STRUCT9]
SHORT_NS = [2, 3, 4, 5, 7, 8, 16, 31, 32, 49]  # 49: 49 * (1/49) < 1 in float64, the reduction's upper correction
# (base shape without the lane axis, how the array is laid out, axis); see short_lane_array
SHORT_LAYOUTS = [
    ((300,), "C", -1),  # back to back
    ((300,), "F", 0),  # F order, lanes along axis 0: contiguous, pitch n
    ((6, 50), "C", -1),  # lanes over two dims, merged into one
    ((6, 50), "step", -1),  # every other lane of a middle dim of 101: two dims the kernel walks row by row
    ((6, 50), "reversed", -1),  # negative pitch
    ((300,), "offset", -1),  # one byte into the buffer: wide words unaligned
    ((300,), "padded", -1),  # lanes with a gap after each: pitch wider than the lane
]


def short_lane_array(seed, outer, n, dtype, layout):
    """(raw buffer, lanes view into it, function making the same view of another buffer)."""
    outer = tuple(outer)
    lead = 1 if layout == "offset" else 0
    pad = 1 if layout == "padded" else 0
    base = outer[:-1] + (outer[-1] * 2 + 1 if layout == "step" else outer[-1], n + pad)
    count = int(np.prod(base))
    nbytes = count * dtype.itemsize
    raw = np.full(2 * GUARD + nbytes + lead, POISON, np.uint8)
    raw[GUARD + lead:GUARD + lead + nbytes] = np.random.default_rng(seed).integers(1, 256, nbytes, dtype=np.uint8)

    def view(buf):
        flat = buf[GUARD + lead:GUARD + lead + nbytes].view(dtype)
        if layout == "F":
            return flat.reshape(base)[..., :n].T  # an F-ordered array, lanes along axis 0
        a = flat.reshape(base)[..., :n]
        if layout == "step":
            return a[..., :-1:2, :]
        if layout == "reversed":
            return a[::-1, ::-1]
        return a

    return raw, view(raw), view


# The fast suite takes every item size and layout at these lengths (a byte-window edge, 49); the others, the
# shortest (2) included, run under -m slow.
FAST_SHORT_NS = (3, 49)


@pytest.mark.parametrize("dtype, n", [pytest.param(d, n, marks=() if n in FAST_SHORT_NS else pytest.mark.slow)
                                      for d in SHORT_DTYPES for n in SHORT_NS if d.itemsize * n <= 256],
                         ids=lambda v: str(v))
@pytest.mark.parametrize("outer, layout, axis", SHORT_LAYOUTS, ids=[f"{o}-{lay}" for o, lay, _ in SHORT_LAYOUTS])
def test_short_lanes_match_numpy_roll_for_every_item_size(dtype, n, outer, layout, axis):
    """Every lane shift from -3n-2 to 3n+2 and the int64 extremes, on 1, 2 and 3 threads; guards and gaps untouched.

    The extremes are the first two lanes only, so the first block of shifts
    takes the division and the later blocks the division-free reduction.
    """
    raw, a, view = short_lane_array(n * 1000 + dtype.itemsize, outer, n, dtype, layout)
    lane_shape = a.shape[:axis % a.ndim] + a.shape[axis % a.ndim + 1:]
    count = int(np.prod(lane_shape))
    near = np.arange(-3 * n - 2, 3 * n + 3, dtype=np.int64)
    shifts = np.concatenate([[2**63 - 1, -2**63], np.resize(np.roll(near, n), count - 2)]).reshape(lane_shape)
    assert a.shape[axis] == n and dtype.itemsize * n <= cpu_tuning.current().small_lane_bytes
    for lanes in (None, 2, 3):
        raw_now = raw.copy()
        a_now = view(raw_now)
        expected_raw = raw_now.copy()
        expect(expected_raw, view, a_now, lambda x: lanes_oracle(x, shifts.astype(object), axis))
        allocated = []
        with tunables(lanes, allocated=allocated):
            p = rotate.plan_roll_rows(a_now, shifts, axis)
            assert rotate.roll_rows(a_now, shifts, axis) is a_now
        wrong = np.flatnonzero(raw_now != expected_raw)
        assert wrong.size == 0, f"{p}: {wrong.size} bytes differ; first {wrong[:8]}"
        assert allocated == [s.scratch_bytes for s in p.steps]
        (step,) = p.steps
        lane_bytes = n * dtype.itemsize
        if layout in ("C", "reversed", "offset") and lane_bytes in (2, 4, 8):
            assert step.algorithm == "per-lane-word-rotate" and step.word_bytes == lane_bytes, str(p)
            assert step.scratch_bytes == 0 and p.bytes_moved == p.ideal_bytes
        else:
            assert step.algorithm in SHORT_ALGORITHMS, str(p)
        if layout == "step":  # lane offsets from two dims that do not merge
            assert len(step.details["dims"]) == 2, str(p)
        if step.algorithm == "per-lane-byte-window":  # bytes addressed one by one, moved 8 at a time
            word = cpu_lanes._word_for(lane_bytes, step.details["dim_strides"])
            assert step.word_bytes == 1, str(p)
            assert word < 4 or lane_bytes // word >= cpu_tuning.current().window_min_words, str(p)
        else:
            assert lane_bytes % step.word_bytes == 0 and step.word_bytes >= np.gcd(dtype.itemsize, 8)


@settings(deadline=None, max_examples=150)
@given(case=short_lane_cases(), lanes=st.sampled_from([None, 2, 3]), window_min_words=st.sampled_from([4, 0]))
def test_short_lanes_of_every_item_size_and_length(case, lanes, window_min_words):
    """Lanes of 1-300 bytes (most next to a word boundary), item sizes 1-16, poisoned guards and scratch.

    Lanes of at most 256 bytes that are not a multiple of 4 bytes take the
    byte windows (the array spans at least 8 bytes); the plan says so. Lanes of
    whole words take them too from ``window_min_words`` words (0: the word loop).
    """
    with tunables(lanes, window_min_words=window_min_words):
        plan = check_rows_case(_CPU_ROWS, case)
    n = case.shape[-1]
    lane_bytes = n * np.dtype(case.dtype).itemsize
    if n > 1 and lane_bytes % 4 and lane_bytes <= cpu_tuning.current().small_lane_bytes and case.nbytes >= 8:
        (step,) = plan.steps
        if step.word_bytes == lane_bytes:  # a 2-byte lane at even pitches is one word: bit-rotated in a register
            assert lane_bytes == 2 and plan.algorithm == "per-lane-word-rotate", str(plan)
        else:
            assert plan.algorithm == "per-lane-byte-window", str(plan)
            assert step.details["lane_bytes"] == lane_bytes and step.word_bytes == 1


def test_byte_shuffle_masks_are_numpy_roll_of_the_two_words():
    """``_shuffled_lanes``' masks: row ``b`` takes a lane rolled right by ``b`` bytes to its first 8 bytes and
    its last 8 (at ``L - 8``), for every lane length the shuffle takes."""
    for lane_bytes in range(9, 17):
        masks = cpu_lanes.shuffle_masks(lane_bytes).reshape(lane_bytes, 16)
        lane = np.arange(lane_bytes)
        for b in range(lane_bytes):
            rolled = np.roll(lane, b)
            assert masks[b, :8].tolist() == rolled[:8].tolist(), (lane_bytes, b)
            assert masks[b, 8:].tolist() == rolled[lane_bytes - 8:].tolist(), (lane_bytes, b)


def _byte_shuffle_case(monkeypatch, shuffle, lane_bytes, dtype):
    """Plan with the byte shuffle on or off (skipped where the host has none); ``(items a lane, rng)``."""
    if shuffle and not cpu_lanes.HAS_BYTE_SHUFFLE:
        pytest.skip("this host has no byte shuffle the kernels use (x86-64 SSSE3)")
    monkeypatch.setattr(cpu_lanes, "HAS_BYTE_SHUFFLE", shuffle)
    return lane_bytes // np.dtype(dtype).itemsize, np.random.default_rng(lane_bytes)


@pytest.mark.parametrize("shuffle", [True, False])
@pytest.mark.parametrize("lane_bytes,dtype", [(10, np.uint16), (9, np.uint8), (14, np.uint16), (15, np.uint8)])
def test_nine_to_sixteen_byte_lanes_with_and_without_the_byte_shuffle(monkeypatch, lane_bytes, dtype, shuffle):
    """Lanes of 9-16 bytes take one byte shuffle each where the host has one (pshufb), the two-word path
    otherwise; both equal numpy.roll, the last lanes (whose 16 bytes would leave the array) included, on
    back-to-back and strided lanes."""
    n, rng = _byte_shuffle_case(monkeypatch, shuffle, lane_bytes, dtype)
    windows = 0
    for shape, view in (((257, n), lambda a: a), ((40, 2 * n), lambda a: a[:, ::2]), ((3, 19, n), lambda a: a)):
        base = rng.integers(1, 200, shape).astype(dtype)
        a = view(base)
        shifts = rng.integers(-3 * n, 3 * n, a.shape[:-1])
        expected = np.array([np.roll(lane, s) for lane, s in zip(a.reshape(-1, a.shape[-1]), shifts.reshape(-1))])
        plan = rotate.plan_roll_rows(a, shifts)
        assert rotate.roll_rows(a, shifts) is a
        assert np.array_equal(a.reshape(-1, a.shape[-1]), expected), str(plan)
        step = plan.steps[0]
        if step.algorithm == "per-lane-byte-window":
            assert step.details["shuffle"] == shuffle, str(plan)
            windows += 1
    assert windows == 2  # the back-to-back lanes; the strided ones take the gather


def test_group_masks_are_numpy_roll_of_each_lane():
    """``_grouped_lanes``' masks: row ``sum(b_i * L**i)`` rolls lane ``i`` of the group right by ``b_i`` bytes,
    the group's first 8 bytes in the row's first half and its last 8 in the second, for every grouped lane
    length."""
    for lane_bytes, group in cpu_lanes.GROUP_LANES.items():
        width = group * lane_bytes
        masks = cpu_lanes.group_masks(lane_bytes).reshape(lane_bytes ** group, 16)
        rng = np.random.default_rng(lane_bytes)
        for row in list(range(min(40, len(masks)))) + list(rng.integers(0, len(masks), 40)):
            rolls = [(int(row) // lane_bytes ** i) % lane_bytes for i in range(group)]
            expected = np.concatenate([np.roll(np.arange(i * lane_bytes, (i + 1) * lane_bytes), b)
                                       for i, b in enumerate(rolls)])
            assert masks[row, :8].tolist() == expected[:8].tolist(), (lane_bytes, row)
            assert masks[row, 8:].tolist() == expected[width - 8:].tolist(), (lane_bytes, row)


@pytest.mark.parametrize("shuffle", [True, False])
@pytest.mark.parametrize("lane_bytes,dtype", [(3, np.uint8), (5, np.uint8),  # 6 and 7 compile their own: slow suite
                                              pytest.param(6, np.uint16, marks=pytest.mark.slow),
                                              pytest.param(7, np.uint8, marks=pytest.mark.slow)])
def test_three_to_seven_byte_lanes_in_groups_with_and_without_the_byte_shuffle(monkeypatch, lane_bytes, dtype,
                                                                               shuffle):
    """Back-to-back lanes of 3, 5, 6 and 7 bytes go several to a byte shuffle where the host has one, the
    window path otherwise; both equal numpy.roll: lane counts that leave part of a group (at a shift block's
    end, at a thread's, at the array's, where a group's 16 bytes would leave the span), rows of lanes with
    their own origins, and strided lanes (which never group)."""
    n, rng = _byte_shuffle_case(monkeypatch, shuffle, lane_bytes, dtype)
    grouped = 0
    back_to_back = [(count, n) for count in (1, 4, 5, 6, 11, 64, 65, 69, 70, 131, 1000, 2003)] + [(3, 67, n)]
    cases = [(shape, slice(None), True) for shape in back_to_back]
    cases += [((40, 2 * n), slice(None, None, 2), False), ((50, n + 2), slice(None, n), False)]
    for shape, columns, contiguous in cases:
        base = rng.integers(1, 200, shape).astype(dtype)
        a = base[..., columns]
        untouched = base.copy()
        shifts = rng.integers(-3 * n, 3 * n, a.shape[:-1])
        expected = np.array([np.roll(lane, s) for lane, s in zip(a.reshape(-1, a.shape[-1]), shifts.reshape(-1))])
        plan = rotate.plan_roll_rows(a, shifts)
        assert rotate.roll_rows(a, shifts) is a
        assert np.array_equal(a.reshape(-1, a.shape[-1]), expected), str(plan)
        if not contiguous:  # the bytes between strided lanes: read past, never written
            gaps = np.ones(shape, bool)
            gaps[..., columns] = False
            assert np.array_equal(base[gaps], untouched[gaps])
        step = plan.steps[0]
        if step.algorithm == "per-lane-byte-window":
            assert step.details["group_shuffle"] == (shuffle and contiguous), str(plan)
            grouped += step.details["group_shuffle"]
    assert grouped >= (11 if shuffle else 0), grouped


@pytest.mark.parametrize("lane_bytes,dtype", [(17, np.uint8), (19, np.uint8), (26, np.uint16), (31, np.uint8),
                                             (33, np.uint8), (41, np.uint8), (46, np.uint16), (49, np.uint8),
                                             (57, np.uint8), (63, np.uint8), (65, np.uint8), (99, np.uint8),
                                             (130, np.uint16)])
def test_byte_window_lanes_of_seventeen_bytes_and_more_doubled_in_16_byte_copies(lane_bytes, dtype):
    """Byte-window lanes over 16 bytes are copied twice into scratch and their rotated window copied back, in
    16-byte copies (the last of each span ending at its end); every shift of a lane length, back-to-back
    and strided lanes, 1-3 threads, against numpy.roll, the bytes between strided lanes untouched."""
    n = lane_bytes // np.dtype(dtype).itemsize
    rng = np.random.default_rng(lane_bytes)
    for shape, columns in (((3 * n, n), slice(None)), ((40, n + 3), slice(None, n)), ((2, 5, n), slice(None))):
        for lanes in (1, 2, 3):
            base = rng.integers(1, 200, shape).astype(dtype)
            a = base[..., columns]
            untouched = base.copy()
            shifts = np.resize(np.arange(-n, 2 * n), a.shape[:-1])
            expected = np.array([np.roll(lane, s) for lane, s in zip(a.reshape(-1, n), shifts.reshape(-1))])
            with tunables(lanes):
                plan = rotate.plan_roll_rows(a, shifts)
                assert rotate.roll_rows(a, shifts) is a
            assert np.array_equal(a.reshape(-1, n), expected), str(plan)
            gaps = np.ones(shape, bool)
            gaps[..., columns] = False
            assert np.array_equal(base[gaps], untouched[gaps])
            step = plan.steps[0]
            assert step.algorithm == "per-lane-byte-window" and not step.details["two_words"], str(plan)


@pytest.mark.parametrize("lane_bytes,dtype", [(3, np.uint8), (5, np.uint8), (6, np.uint16), (7, np.uint8),
                                             (9, np.uint8), (10, np.uint16), (15, np.uint8), (33, np.uint8)])
def test_byte_lanes_with_every_shift_within_a_lane_length(lane_bytes, dtype):
    """Shifts in ``[-n, n)`` (a lag within a lane, the common case) take a quotient-free reduction of a
    shift block; one shift outside, near or far, sends its block back to the general one. Both equal
    numpy.roll, the block boundaries and the range's two ends included."""
    n = lane_bytes // np.dtype(dtype).itemsize
    rng = np.random.default_rng(lane_bytes)
    for outside in (None, -n - 1, n, 2**60 + 1, -(2**62)):
        base = rng.integers(1, 200, (3001, n)).astype(dtype)
        shifts = rng.integers(-n, n, 3001)
        shifts[:4] = (-n, n - 1, 0, -1)
        if outside is not None:
            shifts[1500] = outside
        expected = np.array([np.roll(lane, s) for lane, s in zip(base, shifts)])
        assert rotate.roll_rows(base, shifts) is base
        assert np.array_equal(base, expected), (lane_bytes, outside)


def test_portable_byte_shuffle_equals_the_definition(monkeypatch):
    """``shuffle_store16`` compiled without ``pshufb`` (16 extracts and inserts: what a host without SSSE3
    runs) permutes and stores as defined."""
    from numba import njit

    from rotate._backends.cpu import bytemem as _bytemem

    monkeypatch.setattr(_bytemem, "HAS_BYTE_SHUFFLE", False)

    @njit(cache=False)
    def shuffle(buf, masks, b, tail):
        _bytemem.shuffle_store16(buf, 3, masks, 16 * b, tail)

    rng = np.random.default_rng(3)
    for lane_bytes in (9, 12, 16):
        masks = cpu_lanes.shuffle_masks(lane_bytes)
        for b in range(lane_bytes):
            buf = rng.integers(0, 256, 40, dtype=np.uint8)
            expected = buf.copy()
            rolled = np.roll(buf[3:3 + lane_bytes], b)
            expected[3:3 + lane_bytes] = rolled
            shuffle(buf, masks, b, lane_bytes - 8)
            assert np.array_equal(buf, expected), (lane_bytes, b)


@pytest.mark.parametrize("pshufb", [True, False])
def test_three_vector_byte_shuffle_equals_the_definition(monkeypatch, pshufb):
    """``shuffle3_store16`` (the period shuffles of CPU rows of 3-7 bytes), with ``pshufb`` where the host
    has it and compiled without (what a host without SSSE3 runs): each output byte is the byte its mask
    indexes in the vector before, at or after the source position (0x80 and up: zero), ORed."""
    from numba import njit

    from rotate._backends.cpu import bytemem as _bytemem

    if pshufb and not _bytemem.HAS_BYTE_SHUFFLE:
        pytest.skip("this host has no pshufb")
    monkeypatch.setattr(_bytemem, "HAS_BYTE_SHUFFLE", pshufb)

    @njit(cache=False)
    def shuffle(dst, at, src, src_at, masks):
        _bytemem.shuffle3_store16(dst, at, src, src_at, masks, 0)

    rng = np.random.default_rng(5)
    for _ in range(50):
        src = rng.integers(0, 256, 64, dtype=np.uint8)
        masks = rng.integers(0, 16, 48, dtype=np.uint8)
        masks[rng.random(48) < 0.5] = rng.choice([0x80, 0x8F, 0xFF])  # picks nothing
        for i in range(16):  # at most one of the three picks a byte, as the period masks do
            picks = [k for k in range(3) if masks[16 * k + i] < 0x80]
            for k in picks[1:]:
                masks[16 * k + i] = 0x80
        dst = rng.integers(0, 256, 40, dtype=np.uint8)
        expected = dst.copy()
        for i in range(16):
            expected[7 + i] = 0
            for k in range(3):
                if masks[16 * k + i] < 0x80:
                    expected[7 + i] = src[16 + 16 * (k - 1) + masks[16 * k + i]]
        shuffle(dst, 7, src, 16, masks)
        assert np.array_equal(dst, expected)


def test_short_lane_shift_reduction_is_numpys_modulo():
    """The division-free reduction (float64 quotient, one correction each way) against Python's %."""
    for n in range(1, 300):
        inv = 1.0 / n
        for s in [0, 1, -1, n - 1, n, n + 1, -n, -n - 1, 7 * n, -7 * n, 12345 * n - 1, 2**52 - 1, -(2**52) + 1,
                  2**52, -(2**52) - 1, (2**52 // n) * n, -(2**52 // n) * n, 2**63 - 1, -(2**63)]:
            assert cpu_lanes._reduce_shift(s, n, inv) == s % n, (s, n)
            if abs(s) < 2**52:
                assert cpu_lanes._reduce_near(s, n, inv) == s % n, (s, n)


# int64 and int32 shifts (what users pass) in the README's command; every other integer dtype compiles the
# lane kernels once more (numba specialises them on the shifts' dtype: 10-30 s each on 2 cores), so those
# run in the slow suite, which CI runs too.
_COMMON_SHIFT_DTYPES = [np.int32, np.int64]
_RARE_SHIFT_DTYPES = [np.int16, np.int8, np.uint8, np.uint16, np.uint32]


@pytest.mark.parametrize("shift_dtype", _COMMON_SHIFT_DTYPES +
                         [pytest.param(d, marks=pytest.mark.slow) for d in _RARE_SHIFT_DTYPES])
@pytest.mark.parametrize("dtype, n", [
    (np.uint8, 8),  # per-lane-word-rotate
    (np.uint8, 3),  # per-lane-byte-window (2-7 bytes)
    (np.uint16, 5),  # per-lane-byte-window (8-16 bytes)
    (np.uint8, 33),  # per-lane-byte-window (doubled copies)
    (np.float32, 8),  # per-lane-small-copy
    (np.float64, 700),  # per-lane-copy
])
def test_roll_rows_takes_narrow_integer_shifts(dtype, n, shift_dtype):
    """Shifts of any integer dtype, extremes included, roll as numpy.roll; arrays of the lanes' shape reach
    the CPU kernels without a copy (uint64 ones are reduced to int64 first)."""
    rng = np.random.default_rng(n)
    info = np.iinfo(shift_dtype)
    shifts = rng.integers(max(info.min, -3 * n), min(info.max, 3 * n) + 1, 257).astype(shift_dtype)
    shifts[:4] = [info.min, info.max, 0, info.max - 1]
    a = rng.integers(1, 100, (257, n)).astype(dtype)
    expected = np.array([np.roll(r, int(s)) for r, s in zip(a, shifts)])
    assert np.array_equal(rotate.roll_rows(a, shifts), expected)
    from rotate._core import shifts as _shifts

    taken = _shifts.lane_shifts(shifts, (257,), n, 1, a.shape, narrow=True)
    assert np.shares_memory(taken, shifts) and taken.dtype == shift_dtype
    huge = np.arange(257, dtype=np.uint64) * np.uint64(7 * 10**16)  # beyond int64 from lane 132 on
    wide = _shifts.lane_shifts(huge, (257,), n, 1, a.shape, narrow=True)
    assert wide.dtype == np.int64 and wide.tolist() == [int(v) % n for v in huge]


@pytest.mark.parametrize("dtype, n, budget, algorithm", [
    (np.uint8, 8, 0, "per-lane-word-rotate"),  # one word: no scratch needed
    (np.uint16, 4, 0, "per-lane-word-rotate"),
    (np.float32, 8, 0, "per-lane-shift"),  # no scratch at all: three reversals
    (np.float32, 8, 71, "per-lane-copy"),  # one copy of 32 B fits; two and one lane's shift (8 B words) do not
    (np.float32, 8, 72, "per-lane-small-copy"),  # shifts reduced one lane at a time
    (np.float32, 8, 100, "per-lane-small-copy"),
    (np.uint8, 3, 8, "per-lane-byte-window"),  # one reduced shift (8 bytes) a thread
    (np.uint8, 3, 7, "per-lane-small-copy"),  # byte windows need 8; two copies of 3 bytes and a shift fit
    (np.uint8, 3, 6, "per-lane-copy"),
    (np.uint8, 17, 104, "per-lane-byte-window"),  # a shift and two doubled 17-byte lanes (2 * 48 bytes) a thread
    (np.uint8, 17, 103, "per-lane-small-copy"),
    (np.uint8, 17, 8, "per-lane-shift"),
    (np.uint8, 65, 296, "per-lane-byte-window"),  # a shift and two doubled 65-byte lanes (2 * 144 bytes) a thread
    (np.uint8, 65, 295, "per-lane-small-copy"),
])
def test_short_lanes_within_a_scratch_budget(dtype, n, budget, algorithm):
    rng = np.random.default_rng(n)
    a = rng.integers(1, 100, (999, n)).astype(dtype)
    shifts = rng.integers(-2 * n, 2 * n, 999)
    expected = np.array([np.roll(r, s) for r, s in zip(a, shifts)])
    for lanes in (None, 3):
        allocated = []
        b = a.copy()
        with tunables(lanes, allocated=allocated):
            p = rotate.plan_roll_rows(b, shifts, max_scratch_bytes=budget)
            rotate.roll_rows(b, shifts, max_scratch_bytes=budget)
        assert p.scratch_bytes <= budget and (lanes or p.algorithm == algorithm), str(p)
        if p.algorithm in SHORT_ALGORITHMS:
            assert p.algorithm == algorithm  # threads dropped to fit, never the kernel
        assert allocated == [p.scratch_bytes]
        assert np.array_equal(b, expected)


@pytest.mark.parametrize("n", [256, 257, 301])
def test_short_lanes_of_more_than_256_bytes_keep_their_shifts(n):
    """``per-lane-small-copy`` keeps the lanes' reduced shifts in scratch as words of the lane's word: 1-byte
    words hold shifts up to 255. A ``small_lane_bytes`` override made odd lanes of 257 bytes and more short
    (the byte windows being too big for the budget), and their shifts from 256 on wrapped: wrong rows, no
    error. Those lanes now take a kernel that keeps the whole shift."""
    base = (np.arange(n * (n + 1)) % 251).astype(np.uint8).reshape(n, n + 1)
    a = base[:, :n]  # an odd pitch: the lanes move as 1-byte words, n of them
    shifts = np.arange(n)  # every shift of the lane, 256 and on included
    expected = np.array([np.roll(r, s) for r, s in zip(a, shifts)])
    budget = 2 * n + 8  # two copies of a lane and a shift; too small for two doubled lanes (byte windows)
    with cpu_tuning.override(small_lane_bytes=1024):
        p = rotate.plan_roll_rows(a, shifts, max_scratch_bytes=budget)
        rotate.roll_rows(a, shifts, max_scratch_bytes=budget)
    assert (p.algorithm == "per-lane-small-copy") == (n <= 256), str(p)
    assert a.tobytes() == expected.tobytes()


@given(layout=layouts(max_ndim=4), dtype=st.sampled_from(DTYPES), seed=st.integers(0, 2**32 - 1),
       lanes=st.sampled_from([None, 2, 3]), data=st.data())
def test_fftshift_and_ifftshift_match_numpy_fft(layout, dtype, seed, lanes, data):
    base_shape, order, view_kind = layout
    raw, a, view = build(seed, base_shape, dtype, order, view_kind)
    axes = data.draw(st.one_of(st.none(), st.integers(-a.ndim, a.ndim - 1),
                               st.lists(st.integers(-a.ndim, a.ndim - 1), min_size=1, max_size=a.ndim,
                                        unique_by=lambda ax: ax % a.ndim)
                               .map(tuple)), label="axes")
    inverse = data.draw(st.booleans(), label="ifftshift")
    ours, theirs = (rotate.ifftshift, np.fft.ifftshift) if inverse else (rotate.fftshift, np.fft.fftshift)
    note(f"shape={a.shape} strides={a.strides} dtype={a.dtype} axes={axes} {ours.__name__} lanes={lanes}")
    expected_raw = raw.copy()
    expect(expected_raw, view, a, lambda x: theirs(void(x).copy(), axes=axes))
    with tunables(lanes):
        assert ours(a, axes) is a
    wrong = np.flatnonzero(raw != expected_raw)
    assert wrong.size == 0, f"{wrong.size} bytes differ; first {wrong[:8]}"


@given(layout=layouts(min_ndim=2, max_ndim=4), dtype=st.sampled_from(DTYPES), seed=st.integers(0, 2**32 - 1),
       lanes=st.sampled_from([None, 2, 3, 5]), data=st.data())
def test_multi_axis_roll_is_one_pass_and_equals_numpy(layout, dtype, seed, lanes, data):
    base_shape, order, view_kind = layout
    view_kind = "whole" if data.draw(st.integers(0, 3)) else view_kind
    raw, a, view = build(seed, base_shape, dtype, order, view_kind)
    axes = data.draw(st.lists(st.integers(-a.ndim, a.ndim - 1), min_size=2, max_size=a.ndim,
                              unique_by=lambda ax: ax % a.ndim).map(tuple), label="axes")
    shifts = tuple(data.draw(shift_values(a.shape[ax]), label=f"shift {ax}") for ax in axes)
    note(f"shape={a.shape} strides={a.strides} dtype={a.dtype} shifts={shifts} axes={axes} lanes={lanes}")
    expected_raw = raw.copy()
    expect(expected_raw, view, a, lambda x: np.roll(void(x).copy(), shifts, axes))
    allocated = []
    with tunables(lanes, allocated=allocated):
        p = rotate.plan(a, shifts, axes)
        note(str(p))
        rotate.roll(a, shifts, axes)
    wrong = np.flatnonzero(raw != expected_raw)
    assert wrong.size == 0, f"{wrong.size} bytes differ; first {wrong[:8]}"
    assert allocated == [s.scratch_bytes for s in p.steps]
    moving = [ax for ax, s in zip(axes, shifts) if s % a.shape[ax]]
    # Padded structured dtypes roll field by field (strided views), one pass per axis.
    if len(moving) >= 2 and view_kind == "whole" and not (a.dtype.names and _arrays.has_gaps(a.dtype)):
        # One pass; an innermost rolled axis of short rows (split_inner_row_bytes) takes a pass of its own.
        inner = max(moving, key=lambda ax: ax % a.ndim) if a.flags.c_contiguous else \
            min(moving, key=lambda ax: ax % a.ndim)
        ax = inner % a.ndim
        row = np.prod(a.shape[ax:] if a.flags.c_contiguous else a.shape[:ax + 1]) * a.itemsize
        if row <= cpu_tuning.current().split_inner_row_bytes and a.nbytes >= cpu_tuning.current().split_min_bytes:
            assert p.steps[-1].algorithm.startswith("small-rows-"), str(p)
        else:
            assert len(p.steps) == 1 and p.algorithm == "multi-axis-cycles", str(p)
        assert p.ideal_bytes == 2 * a.nbytes * len(p.steps) and p.bytes_moved >= p.ideal_bytes


def test_multi_axis_plan_reports_one_pass_with_bounded_scratch():
    a = np.zeros((2048, 1024), np.complex64)
    p = rotate.plan(a, (1024, 512), axis=(0, 1))
    assert len(p.steps) == 1 and p.algorithm == "multi-axis-cycles"
    assert p.steps[0].axis == (0, 1) and p.steps[0].shift == (1024, 512)
    assert p.scratch_bytes <= 2 * cpu_tuning.current().scratch_bytes and p.scratch_bytes <= 64 * 1024 * 2
    # Blocks larger than the budget: one pass per axis, and the plan says so with one step each.
    p = rotate.plan(a, (3, 5), axis=(0, 1), max_scratch_bytes=1024)
    assert len(p.steps) == 2 and "multi-axis" not in p.algorithm
    b = np.arange(24 * 35).reshape(24, 35)
    expected = np.roll(b, (3, 5), (0, 1))
    rotate.roll(b, (3, 5), (0, 1), max_scratch_bytes=64)
    assert np.array_equal(b, expected)


@pytest.mark.parametrize("order", ["C", "F"])
def test_outer_axis_beyond_the_budget_alone_and_the_other_axes_in_one_pass(order):
    # The first rolled axis's blocks (10 KiB) exceed the bound, the next axis's (2 KiB) fit: two passes, not three.
    shape, shifts, axes = (3, 5, 64, 4), (1, -2, 30), (0, 1, 2)
    if order == "F":
        shape, shifts, axes = shape[::-1], shifts[::-1], (1, 2, 3)
    b = np.random.default_rng(7).integers(1, 2**62, shape).astype(np.int64, order=order)
    expected = np.roll(b, shifts, axes)
    p = rotate.plan(b, shifts, axes, max_scratch_bytes=4096)
    assert [s.algorithm == "multi-axis-cycles" for s in p.steps] == [False, True], str(p)
    assert p.scratch_bytes <= 4096
    rotate.roll(b, shifts, axes, max_scratch_bytes=4096)
    assert np.array_equal(b, expected)


def test_fftshift_of_a_2d_image_in_one_pass_without_a_copy():
    image = np.fft.fft2(np.random.default_rng(0).standard_normal((257, 384))).astype(np.complex64)
    expected = np.fft.fftshift(image)
    ptr = image.__array_interface__["data"][0]
    assert rotate.plan(image, (128, 192), (0, 1)).algorithm == "multi-axis-cycles"
    assert rotate.fftshift(image) is image and image.__array_interface__["data"][0] == ptr
    assert np.array_equal(image, expected)
    rotate.ifftshift(image)
    assert np.array_equal(image, np.fft.ifftshift(expected))


# --- errors: clear, and nothing moves ------------------------------------------------


class FakeDeviceArray:
    """Exposes __cuda_array_interface__ without a GPU: rotate must refuse it before touching anything."""

    def __init__(self, shape, typestr="<i8"):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr, "data": (0, False), "version": 3,
                                         "strides": None}


ROW_ERRORS = [
    ("shape mismatch", lambda a: (a, np.zeros(4, np.int64)), {}, ValueError, "does not broadcast"),
    ("too many dims", lambda a: (a, np.zeros((1, 5, 1), np.int64)), {}, ValueError, "does not broadcast"),
    ("float shifts", lambda a: (a, np.ones(5)), {}, TypeError, "must be integers"),
    ("float scalar", lambda a: (a, 1.5), {}, TypeError, "must be integers"),
    ("bool shifts", lambda a: (a, np.ones(5, bool)), {}, TypeError, "must be integers"),
    ("str shifts", lambda a: (a, "3"), {}, TypeError, "shifts must be"),
    ("None shifts", lambda a: (a, None), {}, TypeError, "shifts must be"),
    ("float in list", lambda a: (a, [1, 2, 3, 4.5, 5]), {}, TypeError, "must be integers"),
    ("huge float in object list", lambda a: (a, [10**30, 1.5, 0, 0, 0]), {}, TypeError, "shifts must be an integer"),
    ("shifts on the GPU", lambda a: (a, FakeDeviceArray((5,))), {}, TypeError, "GPU array"),
    ("axis out of range", lambda a: (a, 1), {"axis": 2}, np.exceptions.AxisError, "axis"),
    ("axis float", lambda a: (a, 1), {"axis": 1.0}, TypeError, "axis must be an integer"),
    ("negative scratch", lambda a: (a, 1), {"max_scratch_bytes": -1}, ValueError, "max_scratch_bytes"),
    ("read-only", lambda a: (a.view(), 1), {}, ValueError, "read-only"),
    ("list input", lambda a: (a.tolist(), 1), {}, TypeError, "numpy array"),
    ("GPU array without a GPU", lambda a: (FakeDeviceArray((5, 7)), 1), {}, RuntimeError, "no usable CUDA GPU"),
]


@pytest.mark.parametrize("name, make, kwargs, error, words", ROW_ERRORS, ids=[e[0] for e in ROW_ERRORS])
def test_roll_rows_errors_are_clear_and_move_nothing(name, make, kwargs, error, words):
    a = np.random.default_rng(0).integers(1, 100, (5, 7))
    before = a.copy()
    args = make(a)
    if name == "read-only":
        args[0].flags.writeable = False
    for fn in (rotate.roll_rows, rotate.plan_roll_rows):
        with pytest.raises(error, match=words):
            fn(*args, **kwargs)
    assert np.array_equal(a, before)


def test_roll_rows_masked_array_mask_moves_with_its_data():
    data = np.arange(12).reshape(3, 4)
    m = np.ma.masked_array(data.copy(), mask=data % 5 == 0)
    expected = np.ma.masked_array(lanes_oracle(data, [1, 2, 3], 1).view(data.dtype),
                                  mask=lanes_oracle(data % 5 == 0, [1, 2, 3], 1).view(bool))
    assert rotate.roll_rows(m, [1, 2, 3]) is m
    assert np.array_equal(m.data, expected.data) and np.array_equal(m.mask, expected.mask)


def test_repeated_fftshift_calls_reuse_their_shifts_per_shape_and_still_check_axes():
    for shape in [(3, 4), (4, 3), (3, 4), (5,), (3, 4)]:
        for axes in [None, 1, (1, 0), (-1,)] if len(shape) == 2 else [None, 0, (0, 0), (-1,)]:
            for shift, oracle in [(rotate.fftshift, np.fft.fftshift), (rotate.ifftshift, np.fft.ifftshift)]:
                a = np.arange(int(np.prod(shape))).reshape(shape)
                assert np.array_equal(shift(a, axes), oracle(np.arange(a.size).reshape(shape), axes))
    for _ in range(2):  # a call that raised left nothing behind to skip its check the next time
        with pytest.raises(np.exceptions.AxisError):
            rotate.fftshift(np.zeros((3, 4)), axes=(0, 2))


def test_fftshift_errors():
    a = np.arange(12).reshape(3, 4)
    with pytest.raises(np.exceptions.AxisError):
        rotate.fftshift(a, axes=(0, 2))
    with pytest.raises(TypeError, match="axes must be an integer"):
        rotate.fftshift(a, axes=1.0)
    with pytest.raises(TypeError, match="numpy array"):
        rotate.fftshift([[1, 2], [3, 4]])
    assert np.array_equal(a, np.arange(12).reshape(3, 4))


def test_zero_length_and_noop_lanes():
    for shape, axis in [((0, 5), 1), ((5, 0), 1), ((5, 1), 1), ((1, 5), 0)]:
        a = np.ones(shape)
        p = rotate.plan_roll_rows(a, 3, axis)
        assert p.steps == () and p.algorithm == "noop"
        assert rotate.roll_rows(a, 3, axis) is a
    a = np.arange(10).reshape(2, 5)
    before = a.copy()
    assert rotate.roll_rows(a, [5, -10]) is a and np.array_equal(a, before)  # lanes rolled by 0 are skipped


# --- the benchmark's numbers in docs/perf-cpu.md come from its JSON ----------------------


def test_perf_cpu_rows_section_is_generated_from_the_committed_json():
    spec = importlib.util.spec_from_file_location("rows_bench", ROOT / "benchmarks" / "rows_bench.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    data = json.loads((ROOT / "docs" / "results" / "cpu-rows-bench.json").read_text())
    text = (ROOT / "docs" / "perf-cpu.md").read_text()
    assert bench.render_docs(text, data) == text, "run python benchmarks/rows_bench.py --docs-only and commit"


def test_rows_bench_results_written_elsewhere_leave_the_tracked_docs_alone(tmp_path):
    """A run with ``--json`` elsewhere must not rewrite docs/perf-cpu.md (the docs test would then fail)."""
    spec = importlib.util.spec_from_file_location("rows_bench", ROOT / "benchmarks" / "rows_bench.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    data = json.loads((ROOT / "docs" / "results" / "cpu-rows-bench.json").read_text())
    for row in data["rows"]:
        row["ms"] = row["ms"] * 3 + 1  # numbers no doc holds
    elsewhere = tmp_path / "mine.json"
    elsewhere.write_text(json.dumps(data))
    doc = ROOT / "docs" / "perf-cpu.md"
    before = doc.read_bytes()
    try:
        bench.main(["--json", str(elsewhere), "--docs-only"])
        assert doc.read_bytes() == before, "rows_bench rewrote docs/perf-cpu.md from results written elsewhere"
    finally:
        doc.write_bytes(before)


# --- the shared rows table (tests/cases/rows.py), also run by the simulator and the GPU ---

from cases.rows import (BIG_ROWS_CASES, CHUNKED_ROWS_CASES, COLUMN_CASES, FIXED_ROWS_CASES, LONG_LANE_CASES,  # noqa: E402
                        rows_cases)


@pytest.mark.parametrize("case", [c for c in FIXED_ROWS_CASES if not c.device_shifts], ids=repr)
def test_shared_rows_cases_cpu(case):
    check_rows_case(_CPU_ROWS, case)


@pytest.mark.parametrize("case", COLUMN_CASES, ids=repr)
def test_column_rows_cases_cpu(case):
    """The GPU's column table (roll_rows along strided axes: column-panels there) on the CPU."""
    check_rows_case(_CPU_ROWS, case)


@pytest.mark.parametrize("case", LONG_LANE_CASES, ids=repr)
def test_long_lane_rows_cases_cpu(case):
    """The GPU's long-lane table (lane-swaps there) on the CPU: the same cases against numpy."""
    check_rows_case(_CPU_ROWS, case)


@settings(deadline=None, max_examples=60)
@given(case=rows_cases())
def test_random_shared_rows_cases_cpu(case):
    check_rows_case(_CPU_ROWS, case)


def test_the_rows_harness_catches_a_wrong_roll(monkeypatch):
    """check_rows_case is not vacuous: a roll_rows that skips the last lane fails it."""
    import rotate
    from cases.rows import RowsCase

    real = rotate.roll_rows

    def skips_last_lane(a, shifts, axis=-1, **kw):
        real(a[:-1], np.asarray(shifts)[:-1], axis, **kw)
        return a

    monkeypatch.setattr(rotate, "roll_rows", skips_last_lane)
    with pytest.raises(AssertionError, match="differ from numpy"):
        check_rows_case(_CPU_ROWS, RowsCase("roll_rows", (3, 7), "uint8", (1, 2, 3)))


@pytest.mark.parametrize("case", CHUNKED_ROWS_CASES + BIG_ROWS_CASES, ids=repr)
def test_big_row_cases_cpu(case):
    """The GPU's chunked row-cycles cases (tiny and at their real size) on the CPU backend."""
    check_rows_case(_CPU_ROWS, case)
