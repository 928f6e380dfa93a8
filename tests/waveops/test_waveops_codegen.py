"""Codegen of waveops.rotate, read from PTX compiled without a GPU.

``cuda.compile_ptx`` needs no driver, but compiling the device functions a
kernel calls asks numba-cuda for the current device's compute capability.
The ``no_gpu_cc90`` fixture answers that question with cc 9.0 for the length
of one test, so these run in CI on a CPU-only machine.

Checked for every value type and width: exactly one ``shfl.sync.idx.b32``
per 32-bit word, no other shuffle, no local memory, no float conversion of
the value (the bits move, never the number), and literal widths that are
not powers of two in 1..32 are rejected when the kernel compiles.
"""

import re

import pytest

pytest.importorskip("numba.cuda")

from numba.cuda.core import config as _cuda_config  # noqa: E402

if _cuda_config.ENABLE_CUDASIM:
    pytest.skip("the CUDA simulator cannot compile PTX", allow_module_level=True)

from cases.compiler import require_compiler  # noqa: E402

require_compiler()

import numba.cuda.dispatcher as _dispatcher  # noqa: E402
from numba import cuda  # noqa: E402
from numba.cuda import types  # noqa: E402
from numba.core.errors import TypingError  # noqa: E402

import waveops  # noqa: E402

CC = (9, 0)
VALUE_TYPES = {
    "int32": 1, "uint32": 1, "float32": 1,
    "int64": 2, "uint64": 2, "float64": 2,
}


class _FakeDevice:
    compute_capability = CC


@pytest.fixture
def no_gpu_cc90(monkeypatch):
    monkeypatch.setattr(_dispatcher, "get_current_device", lambda: _FakeDevice())


def ptx_of(fn, sig):
    ptx, _ = cuda.compile_ptx(fn, sig, cc=CC)
    return ptx


def assert_clean(ptx, words):
    assert ptx.count("shfl.sync.idx.b32") == words, ptx
    assert len(re.findall(r"shfl\.sync\.(up|down|bfly)", ptx)) == 0
    # No stack frame: no local depot, no local loads/stores.
    assert ".local" not in ptx and "__local_depot" not in ptx
    assert "ld.local" not in ptx and "st.local" not in ptx
    # The value is bit-moved: no int<->float conversion instructions.
    assert not re.search(r"cvt\.(rn|rz|rm|rp|rni|rzi)?\.?[fsu]\d+\.f\d+", ptx), ptx
    assert not re.search(r"cvt\.(rn|rz|rm|rp)\.f\d+\.[su]\d+", ptx), ptx


def k_default(out, x, d):
    i = cuda.grid(1)
    out[i] = waveops.rotate(x[i], d)


def k_per_lane_runtime_width(out, x, d, w):
    i = cuda.grid(1)
    out[i] = waveops.rotate(x[i], d[i], w)


def _literal_width_kernel(width):
    def k(out, x, d):
        i = cuda.grid(1)
        out[i] = waveops.rotate(x[i], d, width)

    return k


@pytest.mark.parametrize("ty", list(VALUE_TYPES))
def test_default_width_one_shuffle_per_word(no_gpu_cc90, ty):
    t = getattr(types, ty)
    for dty in (types.int64, types.int32, types.uint64):
        ptx = ptx_of(k_default, (t[::1], t[::1], dty))
        assert_clean(ptx, VALUE_TYPES[ty])


@pytest.mark.parametrize("ty", list(VALUE_TYPES))
def test_per_lane_delta_runtime_width(no_gpu_cc90, ty):
    t = getattr(types, ty)
    for dty in (types.int8, types.uint32, types.uint64):
        ptx = ptx_of(k_per_lane_runtime_width, (t[::1], t[::1], dty[::1], types.int32))
        assert_clean(ptx, VALUE_TYPES[ty])


@pytest.mark.parametrize("width", [1, 2, 4, 8, 16, 32])
@pytest.mark.parametrize("ty", list(VALUE_TYPES))
def test_literal_widths(no_gpu_cc90, ty, width):
    t = getattr(types, ty)
    ptx = ptx_of(_literal_width_kernel(width), (t[::1], t[::1], types.int64))
    assert_clean(ptx, VALUE_TYPES[ty])


@pytest.mark.parametrize("width", [0, 3, 12, 64, -2])
def test_bad_literal_width_rejected(no_gpu_cc90, width):
    with pytest.raises(ValueError, match=rf"width must be a power of two.*width={width}"):
        ptx_of(_literal_width_kernel(width), (types.float32[::1], types.float32[::1], types.int64))


def test_bad_value_and_delta_types_rejected(no_gpu_cc90):
    def k_bool(out, x, d):
        i = cuda.grid(1)
        out[i] = waveops.rotate(x[i] > 0, d)

    def k_float_delta(out, x, d):
        i = cuda.grid(1)
        out[i] = waveops.rotate(x[i], d)

    with pytest.raises(TypingError, match="value must be int32"):
        ptx_of(k_bool, (types.float32[::1], types.float32[::1], types.int64))
    with pytest.raises(TypingError, match="delta must be an integer"):
        ptx_of(k_float_delta, (types.float32[::1], types.float32[::1], types.float64))
    with pytest.raises(TypingError, match="value must be int32"):
        ptx_of(k_float_delta, (types.int16[::1], types.int16[::1], types.int64))


def test_lane_id_and_width(no_gpu_cc90):
    def k(out):
        i = cuda.grid(1)
        out[i] = waveops.lane_id() * 100 + waveops.width()

    ptx = ptx_of(k, (types.int32[::1],))
    assert "%laneid" in ptx
    assert ".local" not in ptx


def test_rotate_matches_raw_shfl_instruction_count(no_gpu_cc90):
    """waveops.rotate(v, d) emits the same shuffle as the hand-written one."""

    def raw(out, x, d):
        i = cuda.grid(1)
        out[i] = cuda.shfl_sync(0xFFFFFFFF, x[i], (cuda.laneid + d) & 31)

    for ty in ("float32", "float64"):
        t = getattr(types, ty)
        sig = (t[::1], t[::1], types.int32)
        a, b = ptx_of(raw, sig), ptx_of(k_default, sig)
        assert a.count("shfl.sync.idx.b32") == b.count("shfl.sync.idx.b32")
