"""waveops.rotate on a real GPU equals the software wave, bit for bit.

Self-contained: run with ``python -m pytest tests/waveops/test_waveops_gpu.py`` on a
machine with numba-cuda and a CUDA GPU.  Everything is marked ``gpu`` and
the module skips cleanly without numba-cuda, under the CUDA simulator (no
warp shuffles there) or when ``numba.cuda.is_available()`` is false.

Values are drawn as raw bit patterns (NaN payloads, signalling NaNs, -0.0,
infinities, denormals, extreme integers); outputs are poisoned before every
launch; a failing example prints a ready-to-paste reproduction.
"""

import importlib.util
import os
import sys

import numpy as np
import pytest

pytestmark = pytest.mark.gpu

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

try:
    from numba import cuda
    from numba.cuda.core import config as _cuda_config
except ImportError:
    pytest.skip("numba-cuda is not installed", allow_module_level=True)
if _cuda_config.ENABLE_CUDASIM:
    pytest.skip("the CUDA simulator has no warp shuffles", allow_module_level=True)
if not cuda.is_available():
    pytest.skip("no usable CUDA GPU (numba.cuda.is_available() is False)",
                allow_module_level=True)

from hypothesis import given, note, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

try:
    import waveops
except ImportError:
    sys.path.insert(0, REPO)
    import waveops

DTYPES = ["int32", "uint32", "float32", "int64", "uint64", "float64"]
WIDTHS = [1, 2, 4, 8, 16, 32]
DELTA_DTYPES = ["int8", "int32", "uint64"]
WARP = 32

SPECIAL_BITS = {
    32: [0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000,
         0x7FC00001, 0xFFC0BEEF, 0x7F800001, 0x7FA00000, 0x00000001,
         0x807FFFFF, 0x7F7FFFFF, 0x7FFFFFFF, 0xFFFFFFFF],
    64: [0x0000000000000000, 0x8000000000000000, 0x7FF0000000000000,
         0xFFF0000000000000, 0x7FF8000000000000, 0x7FF8000000000001,
         0xFFF8DEADBEEF0001, 0x7FF0000000000001, 0x7FF4000000000000,
         0x0000000000000001, 0x800FFFFFFFFFFFFF, 0x7FEFFFFFFFFFFFFF,
         0x7FFFFFFFFFFFFFFF, 0xFFFFFFFFFFFFFFFF],
}
POISON = {32: 0xDEADBEEF, 64: 0xDEADBEEFCAFEF00D}


def word_dtype(dtype):
    return np.dtype(np.uint32 if np.dtype(dtype).itemsize == 4 else np.uint64)


def bits(a):
    return np.asarray(a).view(word_dtype(np.asarray(a).dtype))


def reference(lanes, delta, width):
    """numpy, independent of waveops."""
    waves = lanes.reshape(-1, width)
    lane = np.arange(width)
    if np.ndim(delta) == 0:
        src = (lane + int(delta) % width) % width
        return waves[:, src].ravel()
    d = np.asarray(delta) % np.asarray(width, dtype=np.asarray(delta).dtype)
    src = (lane[None, :] + d.astype(np.int64).reshape(-1, width)) % width
    return np.take_along_axis(waves, src, axis=1).ravel()


# --------------------------------------------------------------------------
# Kernels.  Stores are guarded and loads clamped so that every lane of every
# launched warp reaches the rotate, whatever the launch shape.


@cuda.jit
def k_uniform(out, x, d, w):
    i = cuda.grid(1)
    n = x.size
    v = waveops.rotate(x[min(i, n - 1)], d, w)
    if i < n:
        out[i] = v


@cuda.jit
def k_per_lane(out, x, d, w):
    i = cuda.grid(1)
    n = x.size
    j = min(i, n - 1)
    v = waveops.rotate(x[j], d[j], w)
    if i < n:
        out[i] = v


@cuda.jit
def k_default_width(out, x, d):
    i = cuda.grid(1)
    n = x.size
    v = waveops.rotate(x[min(i, n - 1)], d)
    if i < n:
        out[i] = v


_literal_kernels = {}


def k_literal(width):
    """A kernel with ``width`` as a compile-time constant."""
    if width not in _literal_kernels:
        def k(out, x, d):
            i = cuda.grid(1)
            n = x.size
            v = waveops.rotate(x[min(i, n - 1)], d, width)
            if i < n:
                out[i] = v

        _literal_kernels[width] = cuda.jit(k)
    return _literal_kernels[width]


@cuda.jit
def k_lane_and_width(out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i, 0] = waveops.lane_id()
        out[i, 1] = waveops.width()


def run(kernel, values, *args, blocks_of_one_warp=False):
    """Launch over ``values`` with a poisoned output; return the output."""
    nbits = values.dtype.itemsize * 8
    out = np.full(values.shape, POISON[nbits], dtype=word_dtype(values.dtype))
    d_out = cuda.to_device(out.view(values.dtype))
    d_x = cuda.to_device(values)
    dev_args = [cuda.to_device(a) if isinstance(a, np.ndarray) else a for a in args]
    n = values.size
    if blocks_of_one_warp:
        grid, block = -(-n // WARP), WARP
    else:
        block = 128
        grid = -(-n // block)  # a partial last block: clamped lanes join in
    kernel[grid, block](d_out, d_x, *dev_args)
    cuda.synchronize()
    return d_out.copy_to_host()


def repro(dtype, values, delta, width, literal=False):
    w = word_dtype(dtype)
    if np.ndim(delta):
        d = f"np.array({np.asarray(delta).tolist()}, dtype=np.{np.asarray(delta).dtype})"
        dexpr = "d[i]"
    else:
        d, dexpr = repr(int(delta)), "d"
    wexpr = str(width) if literal else "w"
    return f"""\
import numpy as np, waveops
from numba import cuda
x = np.array({[int(v) for v in bits(values)]}, dtype=np.{w}).view(np.{dtype})
d, w = {d}, {width}
@cuda.jit
def k(out, x, d, w):
    i = cuda.grid(1)
    out[i] = waveops.rotate(x[i], {dexpr}, {wexpr})
out = cuda.to_device(np.zeros_like(x)); k[1, x.size](out, cuda.to_device(x), d, w)
print(out.copy_to_host().view(np.{w}))
print(waveops.cpu.rotate(x, d, width=w).view(np.{w}))"""


@st.composite
def warps(draw, dtypes=DTYPES, widths=WIDTHS):
    dtype = draw(st.sampled_from(dtypes))
    width = draw(st.sampled_from(widths))
    n = WARP * draw(st.integers(1, 5))
    nbits = np.dtype(dtype).itemsize * 8
    word = st.one_of(st.sampled_from(SPECIAL_BITS[nbits]), st.integers(0, 2**nbits - 1))
    raw = draw(st.lists(word, min_size=n, max_size=n))
    return dtype, width, np.array(raw, dtype=word_dtype(dtype)).view(dtype)


int64_delta = st.one_of(
    st.integers(-100, 100),
    st.integers(-(2**63), 2**63 - 1),
    st.sampled_from([0, 1, -1, 31, 32, 33, -32, 2**31, -(2**31) - 1]),
)


def check(got, values, delta, width):
    want = waveops.cpu.rotate(values, delta, width=width)
    np.testing.assert_array_equal(bits(want), bits(reference(values, delta, width)))
    np.testing.assert_array_equal(bits(got), bits(want))


@settings(deadline=None, max_examples=150)
@given(warps(), int64_delta, st.booleans())
def test_uniform_delta_runtime_width(w, delta, one_warp_blocks):
    dtype, width, values = w
    note(repro(dtype, values, delta, width))
    got = run(k_uniform, values, np.int64(delta), np.int32(width),
              blocks_of_one_warp=one_warp_blocks)
    check(got, values, delta, width)


@settings(deadline=None, max_examples=150)
@given(st.data())
def test_per_lane_delta(data):
    dtype, width, values = data.draw(warps())
    ddt = np.dtype(data.draw(st.sampled_from(DELTA_DTYPES)))
    info = np.iinfo(ddt)
    delta = np.array(
        data.draw(st.lists(
            st.one_of(st.integers(info.min, info.max),
                      st.integers(max(info.min, -70), min(info.max, 70))),
            min_size=values.size, max_size=values.size)),
        dtype=ddt,
    )
    note(repro(dtype, values, delta, width))
    got = run(k_per_lane, values, delta, np.int32(width))
    check(got, values, delta, width)


@settings(deadline=None, max_examples=60)
@given(warps(widths=[32]), int64_delta)
def test_default_width_is_32(w, delta):
    dtype, _, values = w
    note(repro(dtype, values, delta, 32))
    got = run(k_default_width, values, np.int64(delta))
    check(got, values, delta, 32)
    # Both defaults agree: waveops.rotate(v, d) on the GPU is waveops.cpu.rotate(x, d) on the host.
    np.testing.assert_array_equal(bits(got), bits(waveops.cpu.rotate(values, delta)))


@pytest.mark.parametrize("width", WIDTHS)
@settings(deadline=None, max_examples=25)
@given(w=warps(dtypes=["float32", "float64"]), delta=int64_delta)
def test_literal_width(width, w, delta):
    dtype, _, values = w
    note(repro(dtype, values, delta, width, literal=True))
    check(run(k_literal(width), values, np.int64(delta)), values, delta, width)


def test_lane_id_and_width_on_device():
    out = np.full((256, 2), -1, dtype=np.int32)
    d_out = cuda.to_device(out)
    k_lane_and_width[2, 128](d_out)
    got = d_out.copy_to_host()
    np.testing.assert_array_equal(got[:, 0], np.arange(256) % 32)
    assert (got[:, 1] == 32).all()


def test_bits_survive_on_device():
    x64 = np.array(SPECIAL_BITS[64] * 3, dtype=np.uint64)[:32].view(np.float64)
    x32 = np.array(SPECIAL_BITS[32] * 3, dtype=np.uint32)[:32].view(np.float32)
    for x in (x32, x64):
        for delta in (1, -5, 32 * 7 + 3):
            got = run(k_uniform, x, np.int64(delta), np.int32(32))
            np.testing.assert_array_equal(bits(got), np.roll(bits(x), -delta))


# --------------------------------------------------------------------------
# The examples' CUDA kernels, against numpy and their software-wave twins.


def _example(name):
    path = os.path.join(REPO, "examples", name + ".py")
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize(
    "name, argv",
    [
        ("wave_stencil", ["--n", "100003"]),
        ("wave_stencil", ["--n", "3"]),
        ("wave_window_sum", ["--n", "100003", "--k", "5"]),
        ("wave_window_sum", ["--n", "40", "--k", "32"]),
        ("wave_scan", ["--n", "65536"]),
        ("wave_scan", ["--n", "4096", "--width", "8"]),
        ("wave_scan", ["--n", "64", "--width", "1"]),
        ("wave_tile", ["--tiles", "1001", "--delta", "-3", "--skew", "1"]),
        ("wave_tile", ["--tiles", "7", "--registers", "3", "--delta", "100", "--skew", "0"]),
    ],
)
def test_example_on_gpu(name, argv, capsys):
    assert _example(name).main(argv) == 0
    out = capsys.readouterr().out
    assert "CUDA kernel" in out and "skipped" not in out, out
