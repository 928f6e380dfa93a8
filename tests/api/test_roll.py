"""Property tests of the public API (rotate.roll / rotate.rotate / rotate.plan) on numpy arrays.

Oracles: ``numpy.roll`` for ``roll`` and a plain-Python ``std::rotate`` for
``rotate``. Results are compared byte for byte (NaNs, padding and odd-sized
dtypes included). Every property test ``note()``s a ready-to-paste
reproduction, printed by hypothesis when an example fails.

The CPU kernels themselves (budgets, lanes, block swaps) are exercised in
tests/backends/test_cpu_backend.py; here the subject is the public contract: in
place, same object, same buffer, numpy.roll's argument semantics.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, note
from hypothesis import strategies as st

import rotate
from rotate._core import arrays as _arrays

# Item sizes 1, 2, 4, 8, 16, plus odd sizes (3, 9) and padded structs.
STRUCT9 = np.dtype([("a", "u1"), ("b", "<f8")])  # packed: itemsize 9
STRUCT16 = np.dtype({"names": ["a", "b"], "formats": ["u1", "<f8"], "offsets": [0, 8], "itemsize": 16})
DTYPES = [
    np.dtype(bool), np.dtype(np.int8), np.dtype(np.uint16), np.dtype(np.int32), np.dtype(np.float32),
    np.dtype(np.float64), np.dtype(np.complex128), np.dtype("datetime64[ns]"), STRUCT9, STRUCT16,
    np.dtype("S3"),
]
assert sorted({d.itemsize for d in DTYPES}) == [1, 2, 3, 4, 8, 9, 16]

# Lengths the algorithms care about: tiny, primes, powers of two +- 1.
DIMS = [0, 1, 2, 3, 4, 5, 7, 8, 9, 13, 15, 16, 17, 31, 32, 33, 63, 64, 65]
LONG_DIMS = DIMS + [127, 128, 129, 251, 255, 256, 257, 1021, 1023, 1024, 1025, 4093, 4095, 4096, 4097]
MAX_SIZE = 6000
HUGE = 10**30 + 7


# --- helpers -----------------------------------------------------------------

def make_array(seed, shape, dtype):
    """Random bytes (never all zero), C-contiguous, writeable. Mirrored by ``array_code``."""
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    raw = np.random.default_rng(seed).integers(1, 256, nbytes, dtype=np.uint8)
    if dtype == np.bool_:
        raw &= 1
    return raw.view(dtype).reshape(shape)


def array_code(seed, shape, dtype, name="a"):
    """Python source that rebuilds ``make_array(seed, shape, dtype)``."""
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    mask = " & 1" if dtype == np.bool_ else ""
    return (f"raw = np.random.default_rng({seed}).integers(1, 256, {nbytes}, dtype=np.uint8){mask}\n"
            f"{name} = raw.view(np.{dtype!r}).reshape({shape!r})\n")


def as_void(a):
    """The same memory as opaque fixed-size items: copies keep every byte (struct padding too)."""
    return a.view(np.dtype((np.void, a.dtype.itemsize)))


def data_ptr(a):
    return a.__array_interface__["data"][0]


def as_python(shift):
    """numpy.roll is the oracle for the *value* of a shift; give it exact Python ints."""
    if isinstance(shift, (list, tuple)):
        return type(shift)(int(s) for s in shift)
    return int(shift)


def assert_same_bytes(actual, expected):
    assert actual.shape == expected.shape and actual.dtype.itemsize == expected.dtype.itemsize
    got, want = as_void(actual).tobytes(), as_void(expected).tobytes()
    item = actual.dtype.itemsize
    if _arrays.has_gaps(actual.dtype):  # bytes outside every field (padding) are never moved
        keep = np.zeros(item, bool)
        for lo, hi in _arrays.field_byte_ranges(actual.dtype):
            keep[lo:hi] = True
        got = np.frombuffer(got, np.uint8).reshape(-1, item)[:, keep].tobytes()
        want = np.frombuffer(want, np.uint8).reshape(-1, item)[:, keep].tobytes()
        item = int(keep.sum())
    if got != want:
        first = next(i for i in range(len(got)) if got[i] != want[i]) // item
        wrong = sum(got[i * item:(i + 1) * item] != want[i * item:(i + 1) * item] for i in range(len(got) // item))
        raise AssertionError(
            f"{wrong} of {actual.size} elements differ from the oracle; first at flat index {first}: "
            f"got {got[first * item:(first + 1) * item].hex()} want {want[first * item:(first + 1) * item].hex()}"
        )


def wrap_int(draw, value):
    """``value`` as a Python int or, where it fits, one of numpy's integer scalars."""
    kinds = [int]
    for t in (np.int64, np.int32, np.int8, np.uint8, np.uint64, np.intp):
        info = np.iinfo(t)
        if info.min <= value <= info.max:
            kinds.append(t)
    kind = draw(st.sampled_from(kinds))
    return value if kind is int else kind(value)


def shift_for(draw, n):
    """A shift for an axis of length ``n``: 0, +-n, multiples, far beyond, random."""
    m = max(n, 1)
    value = draw(st.one_of(
        st.sampled_from([0, n, -n, 2 * n, -2 * n, 1, -1, n - 1, 1 - n, HUGE, -HUGE, 2**63 - 1, -(2**63), 2**64 + 1]),
        st.integers(-3 * m - 2, 3 * m + 2),
    ))
    return wrap_int(draw, value)


@st.composite
def shapes(draw, min_ndim=0, max_ndim=4, max_size=MAX_SIZE):
    ndim = draw(st.integers(min_ndim, max_ndim))
    if ndim == 1:
        return (draw(st.sampled_from([d for d in LONG_DIMS if d <= max_size])),)
    shape, size = [], 1
    for _ in range(ndim):
        d = draw(st.sampled_from([d for d in DIMS if d * size <= max_size]))  # 0 and 1 always fit
        shape.append(d)
        size *= max(d, 1)
    return tuple(shape)


@st.composite
def shift_and_axis(draw, shape, allow_none=True):
    """Every argument form numpy.roll accepts, explicit axes drawn from ``range(-ndim, ndim)``."""
    ndim = len(shape)
    size = int(np.prod(shape, dtype=np.int64))
    forms = ["axes-empty"] if ndim else []  # numpy.roll(0-d, s, axis=()) itself fails
    if allow_none:
        forms += ["none", "none-tuple"]
    if ndim:
        forms += ["int", "int", "int-tuple-shifts", "tuple", "tuple", "tuple-one-shift", "list"]
    form = draw(st.sampled_from(forms))
    axis_st = st.integers(-ndim, ndim - 1) if ndim else st.nothing()
    if form == "none":
        return shift_for(draw, size), None
    if form == "none-tuple":  # numpy sums the shifts
        k = draw(st.integers(0, 3))
        return tuple(shift_for(draw, size) for _ in range(k)), None
    if form == "axes-empty":
        return shift_for(draw, size), ()
    if form == "int":
        axis = draw(axis_st)
        return shift_for(draw, shape[axis]), axis
    if form == "int-tuple-shifts":  # shifts broadcast against one axis and add up
        axis = draw(axis_st)
        k = draw(st.integers(1, 3))
        return tuple(shift_for(draw, shape[axis]) for _ in range(k)), axis
    if form == "tuple-one-shift":
        axes = tuple(draw(st.lists(axis_st, min_size=1, max_size=4)))
        return shift_for(draw, shape[axes[0]]), axes
    axes = draw(st.lists(axis_st, min_size=1, max_size=4))  # repeats allowed: shifts add up
    shifts = [shift_for(draw, shape[ax]) for ax in axes]
    if form == "list":
        return shifts, axes
    return tuple(shifts), tuple(axes)


# --- roll == numpy.roll --------------------------------------------------------

@given(shape=shapes(), dtype=st.sampled_from(DTYPES), seed=st.integers(0, 2**32 - 1), data=st.data())
def test_roll_matches_numpy(shape, dtype, seed, data):
    shift, axis = data.draw(shift_and_axis(shape), label="shift, axis")
    a = make_array(seed, shape, dtype)
    note("import numpy as np, rotate\n" + array_code(seed, shape, dtype)
         + "void = np.dtype((np.void, a.dtype.itemsize))  # copies keep struct padding\n"
         + f"expected = np.roll(a.view(void).copy(), {as_python(shift)!r}, axis={axis!r})\n"
         + f"out = rotate.roll(a, {shift!r}, axis={axis!r})\n"
         + "assert out is a and a.view(void).tobytes() == expected.tobytes()")
    expected = np.roll(as_void(a).copy(), as_python(shift), axis=axis)
    before = (data_ptr(a), a.shape, a.strides, a.dtype)
    out = rotate.roll(a, shift, axis=axis)
    assert out is a
    assert (data_ptr(a), a.shape, a.strides, a.dtype) == before
    assert_same_bytes(a, expected)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape, shift, axis", [
    ((97,), 1, None), ((97,), -1, None), ((97,), HUGE, None), ((97,), -HUGE, 0),
    ((128,), 2**64 + 1, 0), ((127,), np.int64(-(2**63)), None), ((129,), np.uint64(2**64 - 1), -1),
    ((7, 129), (HUGE, -HUGE + 3), (1, 0)), ((16, 17, 3), np.int64(2**62), (0, 1, 2)),
    ((5, 8), (1, 2, 3), -1), ((5, 8), 3, (0, 0, 1, -2)), ((31, 33), HUGE, None),
])
def test_roll_fixed_cases(dtype, shape, shift, axis):
    """Deterministic edge cases for every dtype: huge Python ints, numpy scalars, summed axes."""
    a = make_array(12345, shape, dtype)
    expected = np.roll(as_void(a).copy(), as_python(shift), axis=axis)
    assert as_void(a).tobytes() != expected.tobytes() or dtype == np.bool_  # the case moves something
    assert rotate.roll(a, shift, axis=axis) is a
    assert_same_bytes(a, expected)


def test_zero_dim_and_empty_arrays():
    for dtype in DTYPES:
        z = make_array(1, (), dtype)
        zc = as_void(z).copy()
        assert rotate.roll(z, 5) is z
        assert_same_bytes(z, zc)
        assert rotate.rotate(z, 1) == 0 and rotate.rotate(z, 0) == 1
        assert_same_bytes(z, zc)
        for shape, axis in [((0,), None), ((0,), 0), ((3, 0), 0), ((3, 0), 1), ((0, 4), (0, 1)), ((2, 0, 5), -1)]:
            e = make_array(1, shape, dtype)
            assert rotate.roll(e, 3, axis=axis) is e and e.shape == shape
            assert rotate.rotate(e.reshape(-1), 0) == 0


def test_integer_like_shift_objects():
    """numpy.roll accepts anything with __index__ (bool included); so must roll."""
    class Three:
        def __index__(self):
            return 3

    for shift, value in ((Three(), 3), (True, 1), (np.array(3), 3), (np.int16(-3), -3)):
        a = np.arange(10, dtype=np.int16)
        assert rotate.roll(a, shift) is a
        assert a.tolist() == np.roll(np.arange(10), value).tolist()
    a = np.arange(12).reshape(3, 4)
    rotate.roll(a, np.array([1, 2]), axis=(0, 1))
    assert a.tolist() == np.roll(np.arange(12).reshape(3, 4), (1, 2), axis=(0, 1)).tolist()


def test_masked_array_mask_moves_with_its_data():
    """numpy.roll(masked) rolls the mask with the data; so does roll, in place, on both."""
    for shape, shift, axis in [((6,), 2, None), ((6,), -7, None), ((3, 4), 1, 1), ((3, 4), (1, -1), (0, 1))]:
        data = np.arange(float(np.prod(shape))).reshape(shape)
        mask = (np.arange(data.size) % 3 == 0).reshape(shape)
        m = np.ma.array(data, mask=mask)
        expected = np.roll(m.copy(), shift, axis=axis)
        assert expected.mask.tolist() != mask.tolist()  # the case moves the mask
        data_ptr_before = m.data.__array_interface__["data"][0]
        assert rotate.roll(m, shift, axis=axis) is m
        assert m.data.__array_interface__["data"][0] == data_ptr_before
        assert m.mask.tolist() == expected.mask.tolist(), "data rolled but its mask did not"
        assert m.data.tolist() == expected.data.tolist()
    m = np.ma.array(np.arange(5), mask=[1, 0, 0, 0, 0])
    assert rotate.rotate(m, 2) == 3
    assert m.data.tolist() == [2, 3, 4, 0, 1] and m.mask.tolist() == [False, False, False, True, False]
    nomask = np.ma.array(np.arange(5))
    assert rotate.roll(nomask, 1) is nomask and nomask.data.tolist() == [4, 0, 1, 2, 3]


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")  # np.matrix
def test_ndarray_subclasses_keep_their_type():
    mat = np.matrix(np.arange(6).reshape(2, 3))
    assert rotate.roll(mat, 1, axis=1) is mat and mat.tolist() == [[2, 0, 1], [5, 3, 4]]
    rec = np.rec.fromarrays([np.arange(5), np.arange(5) * 1.5], names="x,y")
    expected = np.roll(rec.copy(), 2)
    assert rotate.roll(rec, 2) is rec and rec.tobytes() == expected.tobytes()


# --- non-contiguous inputs --------------------------------------------------------

@st.composite
def views(draw):
    """(base shape, order, index, transpose perm): a strided, possibly F-ordered, view."""
    ndim = draw(st.integers(1, 3))
    base_shape = tuple(draw(st.lists(st.sampled_from([1, 2, 3, 4, 5, 7, 8, 9, 12, 16, 17]),
                                     min_size=ndim, max_size=ndim)))
    order = draw(st.sampled_from("CF"))
    index = []
    for d in base_shape:
        step = draw(st.sampled_from([1, 1, 2, 3, -1, -2, -3]))
        start = draw(st.integers(0, d - 1))
        stop = draw(st.one_of(st.none(), st.integers(0, d)))
        index.append(slice(start, stop, step) if draw(st.booleans()) else slice(None, None, step))
    perm = tuple(draw(st.permutations(range(ndim))))
    return base_shape, order, tuple(index), perm


def view_code(seed, base_shape, dtype, order, index, perm):
    return (array_code(seed, base_shape, dtype, name="base")
            + "void = np.dtype((np.void, base.dtype.itemsize))  # copies keep struct padding\n"
            + ("base = np.asfortranarray(base.view(void)).view(base.dtype)\n" if order == "F"
               else "base = base.view(void).copy().view(base.dtype)\n")
            + f"v = base[{index!r}].transpose({perm!r})\n")


def make_view(seed, base_shape, dtype, order, index, perm):
    base = make_array(seed, base_shape, dtype)
    base = (np.asfortranarray(as_void(base)) if order == "F" else as_void(base).copy()).view(dtype)
    return base, base[index].transpose(perm)


@given(case=views(), dtype=st.sampled_from(DTYPES), seed=st.integers(0, 2**32 - 1), data=st.data())
def test_roll_strided_views_explicit_axes(case, dtype, seed, data):
    base_shape, order, index, perm = case
    base, v = make_view(seed, base_shape, dtype, order, index, perm)
    allow_none = v.ndim == 1  # axis=None on a 1-D strided view is fine
    shift, axis = data.draw(shift_and_axis(v.shape, allow_none=allow_none), label="shift, axis")
    note("import numpy as np, rotate\n" + view_code(seed, base_shape, dtype, order, index, perm)
         + "expected_base = base.view(void).copy(order='K')\n"
         + f"ev = expected_base[{index!r}].transpose({perm!r})\n"
         + f"ev[...] = np.roll(ev.copy(), {as_python(shift)!r}, axis={axis!r})\n"
         + f"assert rotate.roll(v, {shift!r}, axis={axis!r}) is v\n"
         + "assert base.view(void).tobytes() == expected_base.tobytes()")
    expected_base = as_void(base).copy(order="K")
    ev = expected_base[index].transpose(perm)
    ev[...] = np.roll(ev.copy(), as_python(shift), axis=axis)
    ptr, strides = data_ptr(v), v.strides
    out = rotate.roll(v, shift, axis=axis)
    assert out is v and data_ptr(v) == ptr and v.strides == strides
    assert_same_bytes(v, ev)
    assert_same_bytes(base, expected_base)  # nothing outside the view moved


@given(shape=shapes(min_ndim=2, max_ndim=4, max_size=2000), dtype=st.sampled_from(DTYPES),
       seed=st.integers(0, 2**32 - 1), data=st.data())
def test_roll_f_contiguous_explicit_axes(shape, dtype, seed, data):
    a = np.asfortranarray(as_void(make_array(seed, shape, dtype))).view(dtype)
    shift, axis = data.draw(shift_and_axis(shape, allow_none=False), label="shift, axis")
    note("import numpy as np, rotate\n" + array_code(seed, shape, dtype)
         + "void = np.dtype((np.void, a.dtype.itemsize))  # copies keep struct padding\n"
         + "a = np.asfortranarray(a.view(void)).view(a.dtype)\n"
         + f"expected = np.roll(a.view(void).copy(), {as_python(shift)!r}, axis={axis!r})\n"
         + f"rotate.roll(a, {shift!r}, axis={axis!r})\nassert a.view(void).tobytes() == expected.tobytes()")
    expected = np.roll(as_void(a).copy(), as_python(shift), axis=axis)
    ptr = data_ptr(a)
    assert rotate.roll(a, shift, axis=axis) is a
    assert data_ptr(a) == ptr and a.flags.f_contiguous
    assert_same_bytes(a, expected)


@given(case=views(), dtype=st.sampled_from([np.dtype(np.int32), STRUCT9, np.dtype("S3")]),
       seed=st.integers(0, 2**32 - 1), data=st.data())
def test_axis_none_on_non_c_contiguous_nd_raises(case, dtype, seed, data):
    base_shape, order, index, perm = case
    base, v = make_view(seed, base_shape, dtype, order, index, perm)
    assume(v.ndim > 1 and v.size > 1 and not v.flags.c_contiguous)
    shift = data.draw(st.integers(1, v.size - 1), label="shift % size") + v.size * data.draw(st.integers(-2, 2))
    if _arrays.c_order_line(v.shape, v.strides) is not None:
        # C order is one strided line (e.g. shape (1, n)): it rolls in place like numpy.roll.
        expected = np.roll(as_void(v).copy(), shift)
        assert rotate.roll(v, shift) is v
        assert as_void(v).tobytes() == expected.tobytes()
        return
    note("import numpy as np, rotate\n" + view_code(seed, base_shape, dtype, order, index, perm)
         + f"rotate.roll(v, {shift})  # ValueError")
    before = as_void(base).tobytes(order="A")
    for call in (lambda: rotate.roll(v, shift), lambda: rotate.roll(v, shift, axis=None),
                 lambda: rotate.rotate(v, shift % v.size), lambda: rotate.plan(v, shift)):
        with pytest.raises(ValueError, match="C-contiguous") as err:
            call()
        assert "ax" in str(err.value)  # the fix: give explicit axes
        assert as_void(base).tobytes(order="A") == before


def test_axis_none_on_1d_strided_views():
    for dtype in DTYPES:
        base = as_void(make_array(7, (101,), dtype))  # void items: copies keep every byte
        for sl in (slice(None, None, 2), slice(None, None, -1), slice(90, 3, -3), slice(1, None, 5)):
            b = base.copy()
            v = b[sl].view(dtype)
            expected_b = b.copy()
            expected_b[sl] = np.roll(b[sl].copy(), 4)
            assert rotate.roll(v, 4) is v
            assert_same_bytes(b.view(dtype), expected_b.view(dtype))  # padding is never moved
            b2 = base.copy()
            ret = rotate.rotate(b2[sl].view(dtype), 3)
            expected_b2 = base.copy()
            expected_b2[sl] = np.roll(base[sl], -3)
            assert ret == b2[sl].size - 3
            assert_same_bytes(b2.view(dtype), expected_b2.view(dtype))


# --- rotate == std::rotate -----------------------------------------------------------

def std_rotate(lst, middle):
    """std::rotate(first, first + middle, last): returns the rotated list and the new index of *first."""
    return lst[middle:] + lst[:middle], len(lst) - middle


def elements(a):
    """The flattened array as a list of per-element byte strings (C order)."""
    raw, item = as_void(a).tobytes(), a.dtype.itemsize
    fields = _arrays.field_byte_ranges(a.dtype)  # padding is never moved: compare field bytes
    return [b"".join(raw[i + lo:i + hi] for lo, hi in fields) for i in range(0, len(raw), item)]


@given(shape=shapes(), dtype=st.sampled_from(DTYPES), seed=st.integers(0, 2**32 - 1), data=st.data())
def test_rotate_matches_std_rotate(shape, dtype, seed, data):
    a = make_array(seed, shape, dtype)
    size = a.size
    middle = data.draw(st.one_of(st.sampled_from([0, size]), st.integers(0, size)), label="middle")
    middle = wrap_int(data.draw, middle)
    note("import numpy as np, rotate\n" + array_code(seed, shape, dtype)
         + "before = a.view(np.dtype((np.void, a.dtype.itemsize))).copy()\n"
         + f"ret = rotate.rotate(a, {middle!r})\n"
         + f"assert ret == {size - int(middle)}\n"
         + f"assert a.view(before.dtype).reshape(-1).tobytes() == np.concatenate([before.reshape(-1)[{int(middle)}:], "
           f"before.reshape(-1)[:{int(middle)}]]).tobytes()")
    want, want_ret = std_rotate(elements(a), int(middle))
    ptr = data_ptr(a)
    ret = rotate.rotate(a, middle)
    assert isinstance(ret, int) and ret == want_ret
    assert data_ptr(a) == ptr and a.shape == shape
    assert elements(a) == want


def test_rotate_docstring_example_and_ends():
    x = np.array([1, 2, 3, 4, 5])
    assert rotate.rotate(x, 2) == 3 and x.tolist() == [3, 4, 5, 1, 2]
    assert rotate.rotate(x, 0) == 5 and x.tolist() == [3, 4, 5, 1, 2]
    assert rotate.rotate(x, 5) == 0 and x.tolist() == [3, 4, 5, 1, 2]
    assert rotate.rotate(x, np.uint8(4)) == 1 and x.tolist() == [2, 3, 4, 5, 1]
    m = np.arange(12, dtype=np.float32).reshape(3, 4)
    assert rotate.rotate(m, 5) == 7 and m.reshape(-1).tolist() == [5, 6, 7, 8, 9, 10, 11, 0, 1, 2, 3, 4]


# --- plan ----------------------------------------------------------------------

def check_plan_invariants(p, a):
    assert isinstance(p, rotate.Plan)
    assert p.backend == "cpu" and p.shape == a.shape and p.dtype == a.dtype
    if not p.steps:
        assert p.algorithm == "noop" and p.scratch_bytes == 0 and p.bytes_moved == 0 and p.ideal_bytes == 0
        return
    assert p.algorithm != "noop"
    assert p.ideal_bytes > 0 and p.bytes_moved >= p.ideal_bytes
    assert 0 <= p.scratch_bytes <= 64 * 2**20
    assert p.tile_bytes is None or p.tile_bytes > 0
    for s in p.steps:
        if isinstance(s.axis, tuple):  # several axes in one pass: one reduced shift per axis
            assert s.algorithm == "multi-axis-cycles" and len(s.axis) == len(s.shift) >= 2
            assert all(0 < sh < a.shape[ax] for ax, sh in zip(s.axis, s.shift))
            assert s.ideal_bytes == 2 * a.nbytes
        else:
            length = a.size if s.axis is None else a.shape[s.axis]
            assert 0 < s.shift < length
        assert s.bytes_moved >= s.ideal_bytes > 0 and s.scratch_bytes >= 0


@given(shape=shapes(), dtype=st.sampled_from(DTYPES), seed=st.integers(0, 2**32 - 1), data=st.data())
def test_plan_matches_what_roll_does(shape, dtype, seed, data):
    shift, axis = data.draw(shift_and_axis(shape), label="shift, axis")
    a = make_array(seed, shape, dtype)
    note("import numpy as np, rotate\n" + array_code(seed, shape, dtype)
         + f"print(rotate.plan(a, {shift!r}, axis={axis!r}))")
    before = as_void(a).copy()
    p = rotate.plan(a, shift, axis=axis)
    assert_same_bytes(a, before)  # planning moves nothing
    check_plan_invariants(p, a)
    # noop exactly when numpy.roll is the identity on every axis it names
    if axis is None:
        total = sum(as_python(shift)) if isinstance(shift, tuple) else int(shift)
        moves = a.size > 1 and total % a.size != 0
    else:
        per_axis = {}
        shifts = as_python(shift) if isinstance(shift, (list, tuple)) else [int(shift)]
        axes = list(axis) if isinstance(axis, (list, tuple)) else [axis]
        if len(shifts) == 1:
            shifts = shifts * len(axes)
        if len(axes) == 1:
            axes = axes * len(shifts)
        for s, ax in zip(shifts, axes):
            per_axis[ax % a.ndim] = per_axis.get(ax % a.ndim, 0) + s
        moves = a.size > 0 and any(a.shape[ax] > 1 and s % a.shape[ax] for ax, s in per_axis.items())
        moving_axes = sum(1 for ax, s in per_axis.items() if a.size and s % a.shape[ax])
        # Two or more moving axes of a contiguous array are one pass (one step). A padded struct
        # rolls field by field (strided views: one pass per axis for each field).
        fields = len(a.dtype.names) if a.dtype.names and _arrays.has_gaps(a.dtype) else 1
        one_pass = fields == 1 and moving_axes >= 2 and (a.flags.c_contiguous or a.flags.f_contiguous)
        assert len(p.steps) == fields * (1 if one_pass else moving_axes)
    assert (p.algorithm != "noop") == moves
    assert bool(p.steps) == moves


@pytest.mark.parametrize("n", [0, 1, 2, 17, 256])
def test_plan_noop_cases(n):
    a = make_array(3, (n,), np.dtype(np.float64))
    for shift in (0, n, -n, 5 * n, np.int64(-3 * n)):
        p = rotate.plan(a, shift)
        assert p.algorithm == "noop" and p.steps == () and p.bytes_moved == 0 and p.scratch_bytes == 0
    for middle in {0, n}:
        assert rotate.plan(a, middle=middle).steps == ()
    if n > 1:
        assert rotate.plan(a, 1).algorithm != "noop"
    z = make_array(3, (), np.dtype(np.float64))
    assert rotate.plan(z, 7).algorithm == "noop" and rotate.plan(z, middle=1).steps == ()


@pytest.mark.parametrize("shape", [(1000,), (97, 13), (4, 5, 6)])
def test_plan_shift_and_middle_consistent(shape):
    a = make_array(0, shape, np.dtype(np.int32))
    n = a.size
    for m in (0, 1, 3, n // 2, n - 1, n):
        assert rotate.plan(a, middle=m) == rotate.plan(a, -m)
        assert rotate.plan(a, middle=m) == rotate.plan(a, n - m)
        assert rotate.plan(a, middle=m) == rotate.plan(a, -m, axis=None)
    assert rotate.plan(a, 3) == rotate.plan(a, middle=n - 3)
    assert rotate.plan(a, middle=3).steps[0].shift == n - 3
    assert rotate.plan(a, 3).steps[0].shift == 3
    assert rotate.plan(a, np.int64(3)) == rotate.plan(a, 3) == rotate.plan(a, 3 + HUGE * n)


def test_plan_scratch_bounded_for_large_array():
    """~50 MB: scratch stays small whatever the shift, and the roll itself is right."""
    n = 50 * 10**6 + 3  # odd size: no even split
    a = np.empty(n, dtype=np.uint8)
    for shift in (1, -1, 4097, n // 2, n // 3, -(n // 3), n - 1, HUGE):
        for p in (rotate.plan(a, shift), rotate.plan(a, middle=shift % n)):
            check_plan_invariants(p, a)
            assert p.scratch_bytes <= 64 * 2**20 and p.bytes_moved <= 6 * n
    m = a[: 7 * 10**6 * 7].reshape(7000, 7000)
    for shift, axis in [((3, 3500), (0, 1)), (-2333, 1), (3499, 0)]:
        check_plan_invariants(rotate.plan(m, shift, axis=axis), m)
    t = m[:, ::2].T  # strided: scratch still bounded
    for shift, axis in [(1, 0), (1749, 0), (3499, 1), (1, 1)]:
        p = rotate.plan(t, shift, axis=axis)
        assert p.backend == "cpu" and 0 <= p.scratch_bytes <= 64 * 2**20 and p.bytes_moved > 0

    rng = np.random.default_rng(0)
    a[:] = rng.integers(1, 256, n, dtype=np.uint8)
    shift = -(n // 3) + 11
    expected = np.roll(a, shift)
    ptr = data_ptr(a)
    assert rotate.roll(a, shift) is a and data_ptr(a) == ptr
    assert np.array_equal(a, expected)


def test_plan_ideal_bytes_covers_whole_array_for_strided_views():
    """A roll along one axis reads and writes every element once: ideal = 2 * a.nbytes."""
    base = np.zeros((100, 50), dtype=np.int64)
    for v, axis in [(base, 0), (np.asfortranarray(base), 1), (base[:, ::2], 0), (base[:, ::2], 1), (base[::-1], 0)]:
        p = rotate.plan(v, 3, axis=axis)
        assert p.ideal_bytes == 2 * v.nbytes, (v.strides, axis, p.ideal_bytes, 2 * v.nbytes)


def test_plan_does_not_modify_and_roll_uses_it():
    a = make_array(9, (33, 17), np.dtype(np.complex128))
    before = a.copy()
    plans = [rotate.plan(a, 5), rotate.plan(a, (1, -2), axis=(0, 1)), rotate.plan(a, middle=100),
             rotate.plan(a.T, 3, axis=0), rotate.plan(a[::2, ::-3], 2, axis=(0, 1, 1))]
    assert_same_bytes(a, before)
    assert all(p.backend == "cpu" for p in plans) and all(p.steps for p in plans)
    assert "Plan(backend='cpu'" in str(plans[0])


BAD_CALLS = [
    ("shift 1.5", lambda a: ((a, 1.5), {})),
    ("shift str", lambda a: ((a, "3"), {})),
    ("shift 2.0", lambda a: ((a, 2.0), {})),
    ("shift float in tuple", lambda a: ((a, (1, 2.0)), {"axis": (0, 1)})),
    ("axis out of range", lambda a: ((a, 1), {"axis": 2})),
    ("axis too negative", lambda a: ((a, 1), {"axis": (0, -3)})),
    ("axis float", lambda a: ((a, 1), {"axis": 1.0})),
    ("shift/axis mismatch", lambda a: ((a, (1, 2, 3)), {"axis": (0, 1)})),
    ("read-only", lambda a: ((a.copy().view(), 1), {})),
    ("negative max_scratch_bytes", lambda a: ((a, 1), {"max_scratch_bytes": -1})),
    ("list input", lambda a: ((a.tolist(), 1), {})),
]


@pytest.mark.parametrize("name, make", BAD_CALLS, ids=[n for n, _ in BAD_CALLS])
def test_plan_raises_what_roll_raises(name, make):
    a = make_array(4, (6, 5), np.dtype(np.int32))
    errors = []
    for fn in (rotate.roll, rotate.plan):
        args, kwargs = make(a)
        if name == "read-only":
            args[0].flags.writeable = False
        before = a.copy()
        with pytest.raises(Exception) as err:
            fn(*args, **kwargs)
        assert_same_bytes(a, before)
        errors.append((type(err.value), str(err.value)))
    assert errors[0] == errors[1]
    assert issubclass(errors[0][0], (TypeError, ValueError))
