"""waveops.cpu (the software wave) against an independent numpy reference.

Runs everywhere (no GPU, no numba-cuda needed for most tests).  Values are
drawn as raw bit patterns, so NaNs with payloads, signalling NaNs, -0.0,
infinities, denormals and extreme integers all occur; equality is checked
on the bits.
"""

import doctest
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

import waveops
import waveops._core
import waveops.cpu
from waveops.cpu import rotate, simd_width_for

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DTYPES = ["int32", "uint32", "float32", "int64", "uint64", "float64"]
WIDTHS = [1, 2, 4, 8, 16, 32, 64]
DELTA_DTYPES = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]

SPECIAL_BITS = {
    32: [
        0x00000000, 0x80000000,  # +-0.0 / 0 and INT32_MIN
        0x7F800000, 0xFF800000,  # +-inf
        0x7FC00000, 0x7FC00001, 0xFFC0BEEF,  # quiet NaNs with payloads
        0x7F800001, 0x7FA00000,  # signalling NaNs
        0x00000001, 0x807FFFFF,  # denormals
        0x7F7FFFFF, 0x7FFFFFFF, 0xFFFFFFFF, 0x00000001,  # extremes / -1
    ],
    64: [
        0x0000000000000000, 0x8000000000000000,
        0x7FF0000000000000, 0xFFF0000000000000,
        0x7FF8000000000000, 0x7FF8000000000001, 0xFFF8DEADBEEF0001,
        0x7FF0000000000001, 0x7FF4000000000000,
        0x0000000000000001, 0x800FFFFFFFFFFFFF,
        0x7FEFFFFFFFFFFFFF, 0x7FFFFFFFFFFFFFFF, 0xFFFFFFFFFFFFFFFF,
    ],
}

def word_dtype(dtype):
    return np.dtype(np.uint32 if np.dtype(dtype).itemsize == 4 else np.uint64)


def reference(lanes, delta, width):
    """Independent of waveops: reshape into waves and index with np.mod."""
    lanes = np.asarray(lanes)
    waves = lanes.reshape(-1, width)
    lane = np.arange(width)
    if np.ndim(delta) == 0:
        src = (lane + int(delta) % width) % width
        return waves[:, src].ravel()
    # Reduce in the delta's own dtype first (uint64 stays exact), then int64.
    d = (np.asarray(delta) % np.asarray(width, dtype=np.asarray(delta).dtype))
    d = d.astype(np.int64).reshape(-1, width)
    src = (lane[None, :] + d) % width
    return np.take_along_axis(waves, src, axis=1).ravel()


def bits(a):
    a = np.asarray(a)
    return a.view(word_dtype(a.dtype))


def repro(dtype, values, delta, width):
    """A ready-to-paste call reproducing a failing example."""
    w = word_dtype(dtype)
    if np.ndim(delta):
        d = f"np.array({np.asarray(delta).tolist()}, dtype=np.{np.asarray(delta).dtype})"
    else:
        d = repr(int(delta))
    return (
        "import numpy as np, waveops\n"
        f"x = np.array({[int(v) for v in bits(values)]}, dtype=np.{w}).view(np.{dtype})\n"
        f"waveops.cpu.rotate(x, {d}, width={width})"
    )


@st.composite
def waves(draw, dtypes=DTYPES, widths=WIDTHS, max_waves=4):
    dtype = draw(st.sampled_from(dtypes))
    width = draw(st.sampled_from(widths))
    nwaves = draw(st.integers(1, max_waves))
    nbits = np.dtype(dtype).itemsize * 8
    word = st.one_of(
        st.sampled_from(SPECIAL_BITS[nbits]), st.integers(0, 2**nbits - 1)
    )
    raw = draw(st.lists(word, min_size=nwaves * width, max_size=nwaves * width))
    values = np.array(raw, dtype=word_dtype(dtype)).view(dtype)
    return dtype, width, values


uniform_delta = st.one_of(
    st.integers(-3 * 64, 3 * 64),
    st.integers(-(2**70), 2**70),
    st.sampled_from([0, 1, -1, 2**31 - 1, -(2**31), 2**63 - 1, -(2**63), 2**64 - 1]),
)


@st.composite
def per_lane_deltas(draw, n):
    dt = np.dtype(draw(st.sampled_from(DELTA_DTYPES)))
    info = np.iinfo(dt)
    vals = draw(
        st.lists(
            st.one_of(st.integers(info.min, info.max), st.integers(-70, 70).filter(
                lambda v: info.min <= v <= info.max)),
            min_size=n, max_size=n,
        )
    )
    return np.array(vals, dtype=dt)


@settings(deadline=None, max_examples=200)
@given(waves(), uniform_delta)
def test_uniform_delta_matches_numpy(w, delta):
    dtype, width, values = w
    note(repro(dtype, values, delta, width))
    got = rotate(values, delta, width=width)
    assert got.dtype == values.dtype and got.shape == values.shape
    np.testing.assert_array_equal(bits(got), bits(reference(values, delta, width)))


@settings(deadline=None, max_examples=200)
@given(st.data())
def test_per_lane_delta_matches_numpy(data):
    dtype, width, values = data.draw(waves())
    delta = data.draw(per_lane_deltas(values.size))
    note(repro(dtype, values, delta, width))
    got = rotate(values, delta, width=width)
    np.testing.assert_array_equal(bits(got), bits(reference(values, delta, width)))


@settings(deadline=None, max_examples=50)
@given(waves(widths=[32]), uniform_delta)
def test_default_width_is_a_warp_of_32(w, delta):
    """Without ``width``, a wave is 32 lanes (waveops.rotate's default), not the host SIMD width."""
    dtype, width, values = w
    note(repro(dtype, values, delta, width))
    assert waveops.cpu.DEFAULT_WIDTH == 32
    want = bits(reference(values, delta, 32))
    np.testing.assert_array_equal(bits(rotate(values, delta)), want)
    np.testing.assert_array_equal(bits(rotate(values, delta, width=None)), want)
    if -(2**63) <= delta < 2**63:  # @njit code holds int64 deltas (a Python int beyond it has no numba type)
        np.testing.assert_array_equal(bits(njit_call(values, np.int64(delta), None)), want)
    np.testing.assert_array_equal(waveops.cpu.lane_ids(values.size), np.arange(values.size) % 32)


def test_default_width_needs_whole_warps_even_where_simd_is_narrower():
    """64 lanes are whole waves of the SIMD width on every host, but 48 are not whole warps: the
    default refuses them everywhere, instead of accepting them on some CPUs only."""
    x = np.arange(48, dtype=np.int32)
    with pytest.raises(ValueError, match="width=32"):
        rotate(x, 1)
    np.testing.assert_array_equal(rotate(x, 1, width=waveops.cpu.width()),
                                  reference(x, 1, waveops.cpu.width()))


@pytest.mark.slow  # compiles the call for two targets; CI runs it with -m slow
def test_default_width_is_the_same_on_every_cpu():
    """The default does not follow the host: the same call compiled for the baseline target (SIMD
    width 4) and for this host's own (8 or 16 on AVX2/AVX-512 machines). Only targets this host can
    run: code compiled for AVX-512 would die of an illegal instruction on a CPU without it."""
    code = ("import numpy as np, waveops; x = np.arange(64, dtype=np.float32); "
            "print(waveops.cpu.width(), waveops.cpu.rotate(x, 5).tolist())")
    outs = set()
    for env in ({"NUMBA_CPU_NAME": "generic"}, {}):
        out = subprocess.run([sys.executable, "-c", code], env={**os.environ, **env, "PYTHONPATH": REPO},
                             capture_output=True, text=True, check=True, cwd=REPO).stdout.split(" ", 1)
        outs.add(out[1])
        assert int(out[0]) in (4, 8, 16)
    want = reference(np.arange(64, dtype=np.float32), 5, 32).tolist()
    assert outs == {f"{want}\n"}


_njit_call = []


def njit_call(*args):
    """waveops.cpu.rotate called from @njit code (compiled once per type)."""
    if not _njit_call:
        from numba import njit

        @njit
        def call(x, d, w):
            return waveops.cpu.rotate(x, d, w)

        _njit_call.append(call)
    return _njit_call[0](*args)


@settings(deadline=None, max_examples=50, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_njit_callers_get_the_same_bits(data):
    dtype, width, values = data.draw(waves(dtypes=["float32", "uint64"]))
    per_lane = data.draw(st.booleans())
    delta = data.draw(per_lane_deltas(values.size)) if per_lane else data.draw(
        st.integers(-(2**62), 2**62))
    note(repro(dtype, values, delta, width))
    np.testing.assert_array_equal(
        bits(njit_call(values, delta, width)), bits(rotate(values, delta, width=width))
    )


def test_rotate_is_a_permutation_with_inverse():
    x = np.arange(64 * 3, dtype=np.int64)
    for w in WIDTHS:
        for d in (-65, -1, 0, 1, 5, 64, 2**40 + 3):
            y = rotate(x, d, width=w)
            np.testing.assert_array_equal(rotate(y, -d, width=w), x)
            np.testing.assert_array_equal(np.sort(y), x)


def test_bits_survive_exactly():
    specials = np.array(SPECIAL_BITS[64] + [0x7FF8000000000002, 5], dtype=np.uint64)
    x = specials.view(np.float64)
    y = rotate(x, 3, width=16)
    np.testing.assert_array_equal(y.view(np.uint64), np.roll(specials, -3))
    x32 = np.array(SPECIAL_BITS[32] + [7], dtype=np.uint32).view(np.float32)
    y32 = rotate(x32, -1, width=16)
    np.testing.assert_array_equal(y32.view(np.uint32), np.roll(x32.view(np.uint32), 1))


def test_non_contiguous_and_byteswapped_inputs():
    x = np.arange(64, dtype=np.float64)
    np.testing.assert_array_equal(rotate(x[::2], 1, width=8), reference(x[::2], 1, 8))
    be = x.astype(">f8")
    got = rotate(be, 3, width=16)
    assert got.dtype == be.dtype
    np.testing.assert_array_equal(got, reference(x, 3, 16))
    d = np.arange(64, dtype=">i4")
    np.testing.assert_array_equal(rotate(x, d, width=8), reference(x, np.arange(64), 8))


def test_empty_and_zero_d_delta():
    assert rotate(np.empty(0, np.float32), 3, width=4).shape == (0,)
    x = np.arange(8, dtype=np.int32)
    np.testing.assert_array_equal(rotate(x, np.int8(-1), width=4), reference(x, -1, 4))
    np.testing.assert_array_equal(rotate(x, np.array(3), width=8), reference(x, 3, 8))


def test_lane_ids():
    np.testing.assert_array_equal(waveops.cpu.lane_ids(8, 4), [0, 1, 2, 3, 0, 1, 2, 3])


# ---------------------------------------------------------------------------
# Errors name the argument, what was received and the fix.


@pytest.mark.parametrize(
    "kwargs, exc, parts",
    [
        (dict(width=3), ValueError, ["width", "width=3", "power of two"]),
        (dict(width=128), ValueError, ["width", "width=128", "1, 2, 4"]),
        (dict(width=0), ValueError, ["width=0"]),
        (dict(width=-4), ValueError, ["width=-4"]),
        (dict(width=4.0), TypeError, ["width", "4.0", "float"]),
        (dict(width=True), TypeError, ["width", "True"]),
        (dict(width=16, n=24), ValueError, ["length 24", "width=16", "pad lanes to 32"]),
        (dict(dtype=np.int16), TypeError, ["dtype", "int16", "astype"]),
        (dict(dtype=np.complex64), TypeError, ["complex64"]),
        (dict(dtype=np.bool_), TypeError, ["bool"]),
        (dict(delta=1.5), TypeError, ["delta", "1.5", "float"]),
        (dict(delta=True), TypeError, ["delta", "True"]),
        (dict(delta=None), TypeError, ["delta", "None"]),
        (dict(delta=np.ones(32)), TypeError, ["delta", "float64"]),
        (dict(delta=np.ones(31, np.int64)), ValueError, ["delta", "(31,)", "(32,)"]),
        (dict(shape=(4, 8)), ValueError, ["1-D", "(4, 8)", "ravel"]),
    ],
)
def test_errors_are_actionable(kwargs, exc, parts):
    n = kwargs.pop("n", 32)
    x = np.zeros(kwargs.pop("shape", n), dtype=kwargs.pop("dtype", np.float32))
    delta = kwargs.pop("delta", 1)
    with pytest.raises(exc) as info:
        rotate(x, delta, **kwargs)
    msg = str(info.value)
    assert "waveops.cpu.rotate" in msg
    for part in parts:
        assert part in msg, (part, msg)


def test_njit_errors():
    from numba.core.errors import TypingError

    call = njit_call

    with pytest.raises(ValueError, match="power of two"):
        call(np.zeros(12, np.float32), 1, 3)
    with pytest.raises(ValueError, match="multiple of width"):
        call(np.zeros(12, np.float32), 1, 8)
    with pytest.raises(ValueError, match="one entry per lane"):
        call(np.zeros(8, np.float32), np.zeros(4, np.int64), 4)
    with pytest.raises(TypingError, match="dtype"):
        call(np.zeros(8, np.int16), 1, 4)
    with pytest.raises(TypingError, match="delta must be an integer"):
        call(np.zeros(8, np.int32), 1.5, 4)


# ---------------------------------------------------------------------------
# Width detection


@pytest.mark.parametrize(
    "name, features, expected",
    [
        ("generic", "", 4),
        ("x86-64", "+sse2,+sse", 4),
        ("sandybridge", "+avx,+sse4.2,-avx2", 4),
        ("haswell", "+avx2,+avx,+fma", 8),
        ("skylake-avx512", "+avx512f,+avx2", 16),
        ("znver4", "+avx2,-avx512f", 8),  # NUMBA_CPU_FEATURES wins over the name
        ("znver4", "", 16),
        ("haswell", "", 8),
        ("cortex-a72", "+neon,+fp-armv8", 4),
    ],
)
def test_simd_width_for(name, features, expected):
    assert simd_width_for(name, features) == expected


@pytest.mark.parametrize(
    "env, expected",
    [
        ({"NUMBA_CPU_NAME": "generic"}, 4),
        ({"NUMBA_CPU_NAME": "haswell", "NUMBA_CPU_FEATURES": "+avx2,+avx,+sse4.2"}, 8),
        ({"NUMBA_CPU_NAME": "skylake-avx512",
          "NUMBA_CPU_FEATURES": "+avx512f,+avx2,+avx"}, 16),
    ],
)
@pytest.mark.slow  # a fresh interpreter a target (seconds on 2 cores); CI runs it with -m slow
def test_width_honours_numba_cpu_env(env, expected):
    code = "import waveops; print(waveops.cpu.width())"
    out = subprocess.run(
        [sys.executable, "-c", code], env={**os.environ, **env, "PYTHONPATH": REPO},
        capture_output=True, text=True, check=True, cwd=REPO,
    ).stdout
    assert int(out) == expected


def test_host_width_is_plausible():
    assert waveops.cpu.width() in (4, 8, 16)


# ---------------------------------------------------------------------------
# Import behaviour and docs


def _run(code, **env):
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env={**os.environ, "PYTHONPATH": REPO, **env},
        capture_output=True, text=True, cwd=REPO,
    )


def test_import_needs_no_numba_cuda_and_no_driver():
    # Make numba-cuda unimportable, then use the CPU part and the stubs.
    r = _run(
        """
        import sys
        sys.modules["numba.cuda"] = None
        sys.modules["numba_cuda"] = None
        import numpy as np, waveops
        assert "numba.cuda" not in sys.modules or sys.modules["numba.cuda"] is None
        print(waveops.cpu.rotate(np.arange(4, dtype=np.int32), 1, width=4).tolist())
        assert not waveops.cuda_available()
        try:
            waveops.rotate(1, 1)
        except RuntimeError as e:
            print("ERR", e)
        """
    )
    assert r.returncode == 0, r.stderr
    assert "[1, 2, 3, 0]" in r.stdout
    assert "numba-cuda is not installed" in r.stdout
    assert "waveops.cpu.rotate" in r.stdout


def test_import_does_not_load_numba_cuda():
    r = _run(
        """
        import sys, waveops
        print("numba.cuda" in sys.modules)
        """
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "False"


def test_simulator_explains_missing_shuffles():
    pytest.importorskip("numba.cuda")
    r = _run(
        """
        import waveops
        assert not waveops.cuda_available()
        try:
            waveops.rotate(1, 1)
        except RuntimeError as e:
            print(e)
        """,
        NUMBA_ENABLE_CUDASIM="1",
    )
    assert r.returncode == 0, r.stderr
    assert "simulator" in r.stdout and "waveops.cpu.rotate" in r.stdout


def test_device_functions_refuse_host_calls():
    pytest.importorskip("numba.cuda")
    r = _run(
        """
        import waveops
        for f in (lambda: waveops.rotate(1.0, 1), waveops.lane_id, waveops.width):
            try:
                f()
            except RuntimeError as e:
                print(e)
        """
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("device function") == 3


@pytest.mark.parametrize("module", [waveops, waveops._core, waveops.cpu])
def test_doctests(module):
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted > 0


def test_each_rotate_says_which_rotate_in_its_first_line():
    """Three public functions are called rotate: the first docstring line tells them apart."""
    import rotate as rotate_pkg

    first = {name: f.__doc__.strip().splitlines()[0] for name, f in
             {"rotate.rotate": rotate_pkg.rotate, "waveops.rotate": waveops.rotate,
              "waveops.cpu.rotate": waveops.cpu.rotate}.items()}
    assert "std::rotate" in first["rotate.rotate"] and "in place" in first["rotate.rotate"], first
    assert "Lane shuffle" in first["waveops.rotate"] and "CUDA kernel" in first["waveops.rotate"], first
    assert "Lane shuffle" in first["waveops.cpu.rotate"] and "new array" in first["waveops.cpu.rotate"], first
