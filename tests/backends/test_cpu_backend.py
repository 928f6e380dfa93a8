"""Property tests of the CPU backend (rotate._backends.cpu) against numpy.roll.

The module's budget constants are shrunk per example (``tiny_budget``) so that the
block-swap, many-seam and reversal paths run on arrays of a few hundred words.
Every failing example prints a ready-to-paste reproduction via ``note()``.
"""

from __future__ import annotations

import contextlib

import numba
import numpy as np
import pytest
from hypothesis import assume, given, note, settings
from hypothesis import strategies as st

import rotate
from rotate._backends.cpu import kernels, planner, runners
from rotate._backends.cpu import tuning as cpu_tuning

WORD_DTYPES = [np.uint8, np.uint16, np.uint32, np.uint64]

# Sizes around the edges the algorithms care about: tiny, primes, powers of two +-1.
EDGE_SEGS = [2, 3, 4, 5, 7, 8, 13, 15, 16, 17, 31, 32, 33, 61, 63, 64, 65, 97, 127, 128, 129, 251, 255, 256, 257,
             509, 1021, 1023, 1024, 1025]


@contextlib.contextmanager
def tiny_budget(scratch_bytes=None, tile_bytes=None, lanes=None, small_row_bytes=0):
    """Shrink every budget so small arrays take the large-array code paths.

    Yields the assignment that reproduces the setting (empty when left at defaults).
    A context manager rather than a fixture: hypothesis runs many examples per fixture.
    """
    if scratch_bytes is None:
        yield ""
        return
    fields = dict(scratch_bytes=scratch_bytes, tile_bytes=tile_bytes, lanes=lanes, min_lane_bytes=1,
                  small_row_bytes=small_row_bytes)
    with cpu_tuning.override(**fields):
        yield f"rotate._backends.cpu.tuning.override(**{fields})"


def random_words(rng, size, dtype):
    info = np.iinfo(dtype)
    return rng.integers(1, info.max, size, dtype=dtype, endpoint=True)  # never zero


def roll_rows_oracle(buf, rows, seg, k):
    """Plain-Python reference: new_seg[i] = old_seg[(i + k) % seg]."""
    old = buf.tolist()
    return [old[r * seg + (i + k) % seg] for r in range(rows) for i in range(seg)]


segs = st.one_of(st.sampled_from(EDGE_SEGS), st.integers(2, 700))


@st.composite
def rows_cases(draw):
    seg = draw(segs)
    k = draw(st.one_of(st.sampled_from([1, seg - 1, seg // 2, (seg + 1) // 2, seg // 3 + 1]),
                       st.integers(1, seg - 1)))
    k = min(max(k, 1), seg - 1)
    rows = draw(st.sampled_from([1, 1, 2, 3, 7]))
    dtype = draw(st.sampled_from(WORD_DTYPES))
    return rows, seg, k, dtype


@settings(deadline=None, max_examples=150)
@given(case=rows_cases(), budget=st.sampled_from([(8, 8, 1), (16, 8, 2), (24, 16, 3), (64, 8, 5), (256, 8, 3), (None, None, None)]),
       seed=st.integers(0, 2**32 - 1))
def test_rotate_rows_matches_oracle(case, budget, seed):
    rows, seg, k, dtype = case
    with tiny_budget(*budget) as setup:
        check_rows(rows, seg, k, dtype, seed, setup)


def check_rows(rows, seg, k, dtype, seed, setup):
    rng = np.random.default_rng(seed)
    buf = random_words(rng, rows * seg, dtype)
    expected = roll_rows_oracle(buf, rows, seg, k)
    note(f"from rotate._backends.cpu import planner, runners; import numpy as np\n{setup}\n"
         f"buf = np.random.default_rng({seed}).integers(1, np.iinfo(np.{np.dtype(dtype).name}).max, {rows * seg}, "
         f"dtype=np.{np.dtype(dtype).name}, endpoint=True)\n"
         f"expected = np.roll(buf.reshape({rows}, {seg}), -{k}, axis=1).ravel()\n"
         f"runners.rotate_rows_inplace(buf, {rows}, {seg}, {k}); assert np.array_equal(buf, expected)\n"
         f"# plan: {planner.plan_rows(rows, seg, k, buf.itemsize)}")
    runners.rotate_rows_inplace(buf, rows, seg, k)
    assert buf.tolist() == expected


@contextlib.contextmanager
def chain_tiles(tiles, scratch_bytes):
    """One lane, a small scratch bound and small chain tiles: long shifts of small rows take chain-serial."""
    with cpu_tuning.override(chain_tile_bytes=tuple(tiles), scratch_bytes=scratch_bytes, lanes=1):
        yield f"rotate._backends.cpu.tuning.override(chain_tile_bytes={tuple(tiles)}, scratch_bytes={scratch_bytes}, lanes=1)"


@settings(deadline=None, max_examples=150)
@given(rows=st.sampled_from([1, 1, 2, 5]), seg=st.one_of(st.sampled_from(EDGE_SEGS), st.integers(2, 3000)),
       data=st.data(), dtype=st.sampled_from(WORD_DTYPES),
       tiles=st.sampled_from([(64, 32), (48,), (128, 16), (256, 64)]), seed=st.integers(0, 2**32 - 1))
def test_chain_serial_matches_oracle(rows, seg, data, dtype, tiles, seed):
    """The GPU's chain schedule run by one thread (the plan table, pre-reads, a ring read ahead)."""
    k = data.draw(st.one_of(st.sampled_from([1, seg - 1, seg // 2, seg // 2 + 1, seg // 3, seg // 4 + 3]),
                            st.integers(1, seg - 1)))
    k = min(max(k, 1), seg - 1)
    with chain_tiles(tiles, 400) as setup:
        check_rows(rows, seg, k, dtype, seed, setup)


def test_chain_serial_is_taken_and_fits_its_bound():
    """Not vacuous: long shifts of one lane take chain-serial, within the scratch bound, one pass."""
    taken = 0
    with chain_tiles((64, 32), 400):
        for seg in (1500, 2000, 2999, 3000):
            for k in (seg // 3, seg // 2 + 3, seg // 4 + 3, seg - seg // 3, 123):
                name, scratch, moved = planner.plan_rows(1, seg, k, 1)
                if name == "chain-serial":
                    taken += 1
                    assert scratch <= 400 and moved < 2.5 * seg, (seg, k, scratch, moved)
                buf = random_words(np.random.default_rng(seg + k), seg, np.uint8)
                expected = np.roll(buf, -k)
                runners.rotate_rows_inplace(buf, 1, seg, k)
                np.testing.assert_array_equal(buf, expected, err_msg=f"seg={seg} k={k} {name}")
    assert taken >= 12, taken


@given(row=st.integers(0, 2**47), ring=st.integers(0, 2**47), k=st.integers(1, 2**40))
def test_chain_serial_ring_is_placed_away_from_4k_aliasing(row, ring, k):
    """Both streams of chain-serial (row -> ring at distance ring - row - k, ring -> row at row - ring)
    keep their stores at least 256 bytes off their loads modulo 4096, within the spare bytes, and the
    ring keeps the row's alignment modulo 64."""
    offset = kernels._ring_offset(row, ring, k)
    assert 0 <= offset < cpu_tuning.current().alias_slack
    start = ring + offset
    for distance in ((row - start) % 4096, (start - row - k) % 4096):
        assert 256 <= distance <= 4096 - 64, (distance, offset)
    assert (row - start) % 64 == 0


def test_block_swaps_whose_copies_alias_take_the_chain():
    """float64 rolled by n/2 + 1 swaps halves 8 bytes apart modulo 4096 (1.6-2.0x copyto on two threads,
    measured). Every such plan now takes the chain, whose straight copies would alias the same way: they
    go through the placed ring there (``direct`` off), as at n/2 + 3 (24 bytes apart: 3.2x copyto straight,
    one thread), and stay straight at n/2 + 5 (40 bytes apart).
    Where the chain of each lane's rows does not fit, one lane walks the rows (chain-serial)."""
    assert [planner._aliasing(d) for d in (0, 1, 15, 16, 4096, 4097, 4111, 4112, -4081, -8)] == \
        [False, True, True, False, False, True, True, False, True, False]
    seg = 1 << 16  # 16 rows of 512 KiB float64, a 256 KiB bound: block swaps, the rows spread over two lanes
    with cpu_tuning.override(lanes=2):
        aliasing = planner.plan_rows_params(16, seg, seg // 2 - 1, 8, 256 << 10)
        apart = planner.plan_rows_params(16, seg, seg // 2 - 5, 8, 256 << 10)
        near = planner.plan_rows_params(16, seg, seg // 2 - 3, 8, 256 << 10)
        one_row = planner.plan_rows_params(1, 1 << 22, (1 << 21) - 1, 8)
        tight = planner.plan_rows(16, seg, seg // 2 - 1, 8, 100 << 10)[0]  # two lanes' chains do not fit
    assert (aliasing[0], aliasing[3].direct) == ("chain-rows", False), aliasing[:3]
    assert (apart[0], apart[3].direct) == ("chain-rows", True), apart[:3]
    assert (near[0], near[3].direct) == ("chain-rows", False), near[:3]
    assert (one_row[0], one_row[3].direct) == ("chain-lanes", False), one_row[:3]
    assert tight == "chain-serial", tight


@pytest.mark.parametrize("lanes", [2, 3])
@pytest.mark.parametrize("dtype", [np.uint8, np.uint64])
def test_chain_rows_spread_over_lanes(lanes, dtype):
    """Many long rows, each lane walking its own rows in chain order (its own pre-reads and ring)."""
    rows, seg = 7, 6007
    with cpu_tuning.override(lanes=lanes, min_lane_bytes=1, chain_tile_bytes=(64, 48), scratch_bytes=2048,
                             adapt_to_load=False):
        taken = 0
        for k in (seg // 3, seg // 2 + 3, seg // 4 + 3, 2 * seg // 5 + 1, seg - 777):
            name, scratch, moved, d = planner.plan_rows_params(rows, seg, k, np.dtype(dtype).itemsize)
            if name == "chain-rows":
                taken += 1
                assert scratch <= 2048 and d.lanes == lanes, (k, scratch, d.lanes)
            buf = random_words(np.random.default_rng(k), rows * seg, dtype)
            expected = np.roll(buf.reshape(rows, seg), -k, axis=1).reshape(-1)
            runners.rotate_rows_inplace(buf, rows, seg, k)
            assert buf.tobytes() == expected.tobytes(), (k, name)
    assert taken >= 3, taken


@pytest.mark.parametrize("rows,seg", [(1, 3 * (1 << 20) + 11), (2, 3 * (1 << 20) + 11)])
def test_chain_serial_with_its_default_tiles(rows, seg):
    """Rows long enough for 16-64 KiB tiles: the ring moves within its spare bytes row by row."""
    with cpu_tuning.override(lanes=1, scratch_bytes=200 << 10):  # a shift that fits scratch takes buffered-shift
        for k in (seg // 3, seg // 2 + 3, seg // 4 + 3):
            name, scratch, moved = planner.plan_rows(rows, seg, k, 1)
            assert name == "chain-serial", (seg, k, name)
            buf = random_words(np.random.default_rng(seg + k), rows * seg, np.uint8)
            expected = np.roll(buf.reshape(rows, seg), -k, axis=1).reshape(-1)
            runners.rotate_rows_inplace(buf, rows, seg, k)
            np.testing.assert_array_equal(buf, expected, err_msg=f"rows={rows} seg={seg} k={k}")


@pytest.mark.parametrize("dtype", [np.uint8, np.uint64])
@pytest.mark.parametrize("lanes", [1, 2, 3, 7])
def test_fused_swap_shift_near_half(dtype, lanes):
    """k within a few words of seg/2: one fused swap+shift pass, seams between lanes."""
    itemsize = np.dtype(dtype).itemsize
    fused = 0
    with tiny_budget(96 * itemsize, 4 * itemsize, lanes):
        for seg in (61, 64, 97, 128, 255, 256, 257, 1000):
            for k in sorted({seg // 2 + delta for delta in range(-9, 10)} & set(range(1, seg))):
                buf = random_words(np.random.default_rng(seg * 1000 + k), seg, dtype)
                expected = np.roll(buf, -k)
                fused += planner.plan_rows(1, seg, k, itemsize)[0] == "block-swap+fused-shift"
                runners.rotate_rows_inplace(buf, 1, seg, k)
                np.testing.assert_array_equal(buf, expected, err_msg=f"seg={seg} k={k} lanes={lanes}")
    assert fused > 20


@settings(deadline=None, max_examples=60)
@given(rows=st.integers(1, 300), seg=st.integers(2, 40), data=st.data(),
       dtype=st.sampled_from(WORD_DTYPES), lanes=st.integers(1, 4))
def test_many_small_rows(rows, seg, data, dtype, lanes):
    """Small-row copy path and rows spread over lanes."""
    k = data.draw(st.integers(1, seg - 1))
    with tiny_budget(1 << 20, 64, lanes, small_row_bytes=data.draw(st.sampled_from([0, 256]))) as setup:
        check_many_rows(rows, seg, k, dtype, setup)


@pytest.mark.parametrize("row_bytes", [3, 5, 6, 7, 9, 10, 11, 12, 13, 14, 15, 16, 17, 19, 20, 23, 24, 25, 31, 32, 33,
                                       40, 41, 47, 48, 55, 56, 57, 63, 64])
@pytest.mark.parametrize("lanes", [1, 2, 3])
def test_rows_rotated_in_registers(row_bytes, lanes):
    """Rows of 3-64 bytes (not words) take ``small-rows-registers`` where the span holds an 8-byte window:
    every item size dividing the row, every shift (rows of 17-64 bytes: every chunk wrapping or not),
    row counts whose last rows read the window that ends the span, 1-3 lanes; bytes against numpy.roll."""
    for itemsize in (1, 2, 4, 8):
        if row_bytes % itemsize or row_bytes // itemsize < 2:
            continue
        dtype, seg = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[itemsize], row_bytes // itemsize
        for rows in sorted({-(-8 // row_bytes), 2, 3, 5, 97}):
            with tiny_budget(1 << 20, 64, lanes, small_row_bytes=256) as setup:
                for k in range(1, seg):
                    want = "small-rows-registers" if rows * row_bytes >= 8 else "small-rows-copy"  # a window
                    assert planner.plan_rows(rows, seg, k, itemsize)[0] == want
                    buf = random_words(np.random.default_rng(rows * 1000 + seg), rows * seg, dtype)
                    expected = np.roll(buf.reshape(rows, seg), -k, axis=1).ravel()
                    runners.rotate_rows_inplace(buf, rows, seg, k)
                    assert buf.tobytes() == expected.tobytes(), (setup, rows, seg, k, np.dtype(dtype).name)


@pytest.mark.parametrize("row_bytes", [65, 72, 80, 96, 127, 128, 129, 136, 192, 248, 255, 256])
@pytest.mark.parametrize("lanes", [1, 3])
def test_rows_of_65_to_256_bytes_in_16_byte_copies(row_bytes, lanes):
    """Rows of 65-256 bytes take ``small-rows-copy`` in 16-byte copies (``_small_rows_vectors``: each row twice
    into scratch, the window back, the last copy of each span ending at its end): every item size dividing
    the row, shifts at every 16-byte phase and the ends, 1-33 rows over 1 or 3 lanes; bytes against
    numpy.roll."""
    for itemsize in (1, 2, 4, 8):
        if row_bytes % itemsize:
            continue
        dtype, seg = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[itemsize], row_bytes // itemsize
        shifts = sorted({1, 2, seg // 2, seg - 1} | set(range(1, seg, max(1, 17 // itemsize))))
        for rows in (1, 2, 5, 33):
            with tiny_budget(1 << 20, 64, lanes, small_row_bytes=256) as setup:
                for k in shifts:
                    assert planner.plan_rows(rows, seg, k, itemsize)[0] == "small-rows-copy"
                    buf = random_words(np.random.default_rng(rows * 1000 + seg + k), rows * seg, dtype)
                    expected = np.roll(buf.reshape(rows, seg), -k, axis=1).ravel()
                    runners.rotate_rows_inplace(buf, rows, seg, k)
                    assert buf.tobytes() == expected.tobytes(), (setup, rows, seg, k, np.dtype(dtype).name)


def check_many_rows(rows, seg, k, dtype, setup):
    buf = random_words(np.random.default_rng(rows * 1000 + seg), rows * seg, dtype)
    expected = np.roll(buf.reshape(rows, seg), -k, axis=1).ravel()
    note(f"{setup}\nrunners.rotate_rows_inplace(buf, {rows}, {seg}, {k})  # dtype {np.dtype(dtype).name}")
    runners.rotate_rows_inplace(buf, rows, seg, k)
    np.testing.assert_array_equal(buf, expected)


@pytest.mark.parametrize("threads", [1, 2])
def test_result_does_not_depend_on_threads(threads):
    old = numba.get_num_threads()
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    try:
        rng = np.random.default_rng(7)
        n = 3 << 20  # large enough for several lanes with the default budgets
        for k in (1, 4097, n // 3, n // 2 + 3, n - 1):
            buf = random_words(rng, n, np.uint8)
            expected = np.roll(buf, -k)
            runners.rotate_rows_inplace(buf, 1, n, k)
            np.testing.assert_array_equal(buf, expected, err_msg=f"k={k}")
    finally:
        numba.set_num_threads(old)


def test_plan_rows_is_bounded_and_consistent():
    n = 1 << 28
    for k in (1, 3, 4097, n // 3, n // 2 + 3, n - 1, n // 2):
        for itemsize in (1, 8):
            name, scratch, moved = planner.plan_rows(1, n // itemsize, k // itemsize or 1, itemsize)
            assert scratch <= cpu_tuning.current().scratch_bytes
            assert 2 * n <= moved <= 6 * n, (name, moved)
    assert planner.plan_rows(1, 100, 50, 8)[0] == "buffered-shift"
    assert planner.plan_rows(10**6, 9, 3, 8)[0] == "small-rows-copy"  # 72-byte rows
    assert planner.plan_rows(10**6, 2, 1, 8)[0] == "small-rows-registers"  # 16-byte rows: two words
    assert planner.plan_rows(10**6, 8, 1, 2)[0] == "small-rows-registers"
    assert planner.plan_rows(1, 1 << 25, 1 << 24, 8)[0] == "block-swap"
    # A half rotation is a single swap: 4 array words + 2 tile words per swapped word.
    assert planner.plan_rows(1, 1 << 25, 1 << 24, 8)[2] == 6 * (1 << 24) * 8


# --------------------------------------------------------------------------- strided


STRUCTURED = [
    np.dtype([("a", "u1"), ("b", "u2")], align=False),  # itemsize 3
    np.dtype([("a", "<f8"), ("b", "u2")]),  # itemsize 10
    np.dtype([("a", "<i4"), ("b", "<f4"), ("c", "<u4")]),  # itemsize 12
    np.dtype("S5"),
    np.dtype("<U3"),  # itemsize 12
    np.dtype("c16"),  # itemsize 16
]
STRIDED_DTYPES = [np.dtype(x) for x in (np.bool_, np.int8, np.int16, np.float32, np.float64, "M8[s]")] + STRUCTURED


def random_array(rng, shape, dtype):
    raw = rng.integers(1, 256, (*shape, dtype.itemsize), dtype=np.uint8)
    if dtype == np.bool_:
        raw = rng.integers(0, 2, (*shape, 1), dtype=np.uint8)
    return np.ascontiguousarray(raw).view(dtype).reshape(shape)


@st.composite
def strided_cases(draw):
    ndim = draw(st.integers(1, 3))
    shape = draw(st.lists(st.integers(1, 9), min_size=ndim, max_size=ndim))
    axis = draw(st.integers(0, ndim - 1))
    shape[axis] = draw(st.integers(2, 40))
    steps = draw(st.lists(st.sampled_from([1, 2, 3, -1, -2]), min_size=ndim, max_size=ndim))
    perm = draw(st.permutations(range(ndim)))
    dtype = draw(st.sampled_from(STRIDED_DTYPES))
    return shape, steps, perm, axis, dtype


@settings(deadline=None, max_examples=150)
@given(case=strided_cases(), data=st.data(),
       budget=st.sampled_from([(8, 8, 1), (32, 8, 3), (1 << 20, 64, 2), (None, None, None)]))
def test_roll_strided_matches_numpy(case, data, budget):
    with tiny_budget(*budget) as setup:
        check_strided(*case, data, setup)


def check_strided(shape, steps, perm, axis, dtype, data, setup):
    # Build a base array, then a view with steps, negative strides and a transpose.
    base_shape = [n * abs(s) for n, s in zip(shape, steps)]
    base = random_array(np.random.default_rng(sum(shape)), base_shape, dtype)
    view = base[tuple(slice(None, None, s) for s in steps)].transpose(perm)
    axis = perm.index(axis)  # roll the axis we gave at least 2 elements
    shift = data.draw(st.integers(1, view.shape[axis] - 1))
    assume(view.size > 0)
    before = base.copy()
    expected = np.roll(view, shift, axis=axis)
    note(f"from rotate._backends.cpu import planner, runners; import numpy as np\n{setup}\n"
         f"base = np.zeros({tuple(base_shape)}, dtype={dtype!r})\n"
         f"view = base[{tuple(slice(None, None, s) for s in steps)}].transpose({tuple(perm)})\n"
         f"runners.roll_strided(view, {shift}, {axis})\n"
         f"# plan: {planner.plan_strided(view.shape, view.strides, view.itemsize, shift, axis)}")
    runners.roll_strided(view, shift, axis)
    assert view.tobytes() == expected.tobytes()
    # Nothing outside the view was touched.
    mask = np.ones(base.shape, dtype=bool)
    mask[tuple(slice(None, None, s) for s in steps)] = False
    assert base[mask].tobytes() == before[mask].tobytes()


def test_roll_strided_reversal_path():
    """One column whose shift exceeds the scratch budget: triple reversal."""
    a = np.arange(1, 201, dtype=np.float64)[::-2]
    with tiny_budget(8, 8, 2):
        for shift in (2, 17, 50, 98):
            b = a.copy()
            assert planner.plan_strided(a.shape, a.strides, a.itemsize, shift, 0)[0] == "strided-reversal"
            runners.roll_strided(a, shift, 0)
            np.testing.assert_array_equal(a, np.roll(b, shift))


def test_plan_strided_bounded():
    shape, strides = (1 << 24,), (16,)
    for shift in (1, 3, 4097, (1 << 24) // 3):
        name, scratch, moved = planner.plan_strided(shape, strides, 8, shift, 0)
        assert scratch <= cpu_tuning.current().scratch_bytes
        assert moved >= 2 * 8 * (1 << 24)


@pytest.mark.parametrize("shape, dtype, shift, axes, order", [
    ((37, 29, 8), np.float16, (-13, 19, 5), (0, 1, 2), "C"),
    ((50, 3, 5), np.uint8, (7, 2), (0, 1), "C"),        # the inner rolled axis is not the last: rows of 15 B
    ((6, 40, 7), np.uint16, (3, -2, 4), (0, 1, 2), "C"),
    ((8, 37, 29), np.float16, (5, -13, 19), (0, 1, 2), "F"),
    ((9, 4, 4, 3), np.uint8, (2, 1, 3, 1), (0, 1, 2, 3), "C"),  # 3 B rows, then 12 and 48 B rows: a pass each
    ((300, 7, 40), np.uint8, (101, 3, 17), (0, 1, 2), "C"),    # 40 B rows (eight words in registers)
    ((50, 9, 3), np.complex64, (7, 4, 1), (0, 1, 2), "C"),     # 24 B rows (four words)
])
def test_multi_axis_roll_with_short_inner_rows(shape, dtype, shift, axes, order):
    """A multi-axis roll whose innermost rolled axis makes rows of at most ``split_inner_row_bytes`` (64)
    rolls those rows in a pass of their own (in registers) and the other axes after, on arrays of at least
    ``split_min_bytes`` (lowered here; below it, one pass); bytes against numpy.roll."""
    a = np.asarray(np.random.default_rng(3).integers(0, 1 << 15, shape), dtype=dtype, order=order)
    want = np.roll(a, shift, axes)
    assert len(rotate.plan(a.copy(order="K"), shift, axes).steps) == 1  # small: one pass, one kernel
    with cpu_tuning.override(split_min_bytes=0):
        plan = rotate.plan(a, shift, axes)
        assert plan.steps[-1].algorithm in ("small-rows-registers", "small-rows-word-rotate"), plan.algorithm
        assert len(plan.steps) >= 2
        rotate.roll(a, shift, axes)
    assert a.tobytes(order="A") == want.tobytes(order="A")


@pytest.mark.parametrize("row_bytes, rows, lanes", [(3, 5, 4), (5, 9, 8), (7, 10, 8), (6, 5, 4)])
def test_register_rows_with_more_lanes_than_their_rows_fill(row_bytes, rows, lanes):
    """``small-rows-registers`` gives each lane ``ceil(rows / lanes)`` rows, so the last lanes can start past
    the last row. The byte-shuffle path took such a lane's empty range for -1 periods and rotated rows from
    a negative index: rows rotated twice and bytes before the array overwritten (heap corruption). Only a
    ``min_lane_bytes`` override makes lanes this short; guard bytes either side must stay as they were."""
    buf = (np.arange(64 + rows * row_bytes + 64) % 251).astype(np.uint8)
    a = buf[64:64 + rows * row_bytes].reshape(rows, row_bytes)
    guard = buf.copy()
    expected = np.roll(a, 1, axis=1)
    with cpu_tuning.override(lanes=lanes, min_lane_bytes=1, adapt_to_load=False):
        assert "small-rows-registers" in str(rotate.plan(a, 1, axis=1))
        rotate.roll(a, 1, axis=1)
    assert a.tobytes() == expected.tobytes()
    assert buf[:64].tobytes() == guard[:64].tobytes() and buf[64 + a.size:].tobytes() == guard[64 + a.size:].tobytes()
