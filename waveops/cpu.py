"""The CPU software wave: ``rotate`` over arrays of whole waves.

A software wave of width ``W`` is ``W`` consecutive array elements, one per
lane; an array of ``k * W`` elements holds ``k`` waves back to back.  Lane
``l`` of wave ``w`` is element ``w * W + l``.  ``rotate`` does, for every
wave at once, what ``waveops.rotate`` does for one warp on the GPU::

    out[w*W + l] = lanes[w*W + (l + delta) mod W]

with the same types, the same wrap-around for any integer ``delta`` and the
same bits (NaN payloads, ``-0.0``): values are moved as raw 32/64-bit words.
It is the CUDA rotate's seams turned into loops: ``lane_id`` is the position
in the wave, ``shuffle_idx`` a gather within it, and the source lane the
shared ``waveops.source_lane`` formula.

The default width is ``DEFAULT_WIDTH`` = 32, a CUDA warp and the default of
``waveops.rotate``: the same call gives the same result on every machine,
bit for bit what the GPU's default gives.  ``width()`` is this CPU's SIMD
width for 32-bit lanes (4, 8 or 16); pass ``width=width()`` to opt in to the
wave shape the host vectorises for.

Both functions work from Python (with argument checking and error messages
that name the fix) and inside ``@numba.njit`` code.
"""

import platform
from typing import Any, Optional, SupportsIndex, TypeVar, Union

import numpy as np
import numpy.typing as npt
from numba import njit, prange
from numba.core import config as _numba_config
from numba.core import errors as _nb_errors
from numba.core import types as _nb_types
from numba.extending import overload

from ._core import is_pow2, source_lane

__all__ = ["rotate", "width", "lane_ids", "MAX_WIDTH", "DEFAULT_WIDTH", "simd_width_for"]

MAX_WIDTH = 64
_ScalarT = TypeVar("_ScalarT", bound=np.generic)
#: The software wave's default width: a CUDA warp, as ``waveops.rotate``'s default. Fixed, not the
#: host's SIMD width, so a call without ``width`` gives the same result on every CPU (opt in to the
#: SIMD width with ``width=width()``).
DEFAULT_WIDTH = 32
_SUPPORTED = ("int32", "uint32", "float32", "int64", "uint64", "float64")

# --------------------------------------------------------------------------
# Width detection


def _parse_features(features):
    """Enabled features from an LLVM feature string ``'+avx2,-avx512f,...'``."""
    on = set()
    for item in features.split(","):
        item = item.strip()
        if item.startswith("+"):
            on.add(item[1:])
    return on


# CPU names LLVM knows, for when NUMBA_CPU_NAME names one and the feature
# string is empty (LLVM then uses the CPU's own feature set).
_AVX512_CPUS = (
    "skylake-avx512", "cascadelake", "cooperlake", "cannonlake",
    "icelake-client", "icelake-server", "tigerlake", "rocketlake",
    "sapphirerapids", "emeraldrapids", "graniterapids", "diamondrapids",
    "knl", "knm", "znver4", "znver5", "x86-64-v4",
)
_AVX2_CPUS = (
    "haswell", "broadwell", "skylake", "alderlake", "raptorlake",
    "meteorlake", "arrowlake", "lunarlake", "gracemont", "sierraforest",
    "grandridge", "znver1", "znver2", "znver3", "bdver4", "x86-64-v3",
)


def simd_width_for(cpu_name: str, features: str, machine: Optional[str] = None) -> int:
    """SIMD lanes of 32 bits for a CPU name and LLVM feature string.

    Parameters
    ----------
    cpu_name : str
        LLVM CPU name (``'skylake-avx512'``, ``'generic'``, ...).
    features : str
        LLVM feature string, e.g. ``'+avx2,+sse4.2,-avx512f'``.  When empty
        the CPU name decides.
    machine : str, optional
        ``platform.machine()``; only used to document non-x86 hosts.

    Returns
    -------
    int
        16 with AVX-512F, 8 with AVX2, otherwise 4 (SSE2, NEON, AltiVec and
        128-bit SIMD in general).

    See Also
    --------
    width : This host's width, detected with this function.

    Examples
    --------
    >>> from waveops.cpu import simd_width_for
    >>> simd_width_for("generic", "")
    4
    >>> simd_width_for("haswell", "+avx2,+avx,+sse4.2")
    8
    >>> simd_width_for("x", "+avx512f,+avx2")
    16
    >>> simd_width_for("skylake-avx512", "")
    16
    >>> simd_width_for("neoverse-v1", "+neon,+sve", machine="aarch64")
    4
    """
    on = _parse_features(features)
    name = (cpu_name or "").lower()
    if not features:
        if name in _AVX512_CPUS:
            return 16
        if name in _AVX2_CPUS:
            return 8
        return 4
    if "avx512f" in on:
        return 16
    if "avx2" in on:
        return 8
    return 4


_width_cache = None


def _host_target():
    """(cpu name, feature string) numba's CPU target compiles for."""
    import llvmlite.binding as ll
    from numba.core.codegen import get_host_cpu_features

    name = _numba_config.CPU_NAME or ll.get_host_cpu_name()
    if _numba_config.CPU_FEATURES is not None:
        features = _numba_config.CPU_FEATURES
    else:
        # Same call numba's codegen makes: honours NUMBA_ENABLE_AVX=0.
        features = get_host_cpu_features()
    return name, features


def width() -> int:
    """The host SIMD width for 32-bit lanes; an opt-in wave width (the default is 32).

    Not the default width of `rotate` and `lane_ids` (``DEFAULT_WIDTH``, 32,
    the same on every machine): pass ``width=width()`` to them to model the
    wave shape the host vectorises for.  Detected once from the CPU name and features numba compiles for, so it
    follows ``NUMBA_CPU_NAME``/``NUMBA_CPU_FEATURES`` (and
    ``NUMBA_ENABLE_AVX=0``) when they are set.  Callable from ``@njit`` code,
    where it is a compile-time constant.

    Returns
    -------
    int
        4 for SSE/NEON, 8 for AVX2, 16 for AVX-512.

    See Also
    --------
    rotate : Uses it as the default width.
    simd_width_for : The rule, for any CPU name and feature string.
    waveops.width : The CUDA warp width (32).

    Examples
    --------
    >>> from waveops.cpu import width
    >>> width() in (4, 8, 16)
    True
    """
    global _width_cache
    if _width_cache is None:
        name, features = _host_target()
        _width_cache = simd_width_for(name, features, platform.machine())
    return _width_cache


# --------------------------------------------------------------------------
# Kernels.  Values are handled as raw uint32/uint64 words, which both keeps
# every float bit pattern intact and limits compilation to two value types.


@njit(parallel=True, cache=True)
def _rotate_uniform(lanes, d, w, out):
    # d is already reduced to 0 <= d < w; each wave is two contiguous copies.
    nwaves = lanes.size // w
    for wave in prange(nwaves):
        base = wave * w
        k = w - d
        for l in range(k):
            out[base + l] = lanes[base + d + l]
        for l in range(d):
            out[base + k + l] = lanes[base + l]


@njit(parallel=True, cache=True)
def _rotate_per_lane(lanes, deltas, w, out):
    nwaves = lanes.size // w
    for wave in prange(nwaves):
        base = wave * w
        for l in range(w):
            i = base + l
            out[i] = lanes[source_lane(i, deltas[i], w)]


source_lane = njit(inline="always")(source_lane)

# --------------------------------------------------------------------------
# Python entry point


def _check_width(width_, n_lanes):
    if width_ is None:
        w = DEFAULT_WIDTH
    else:
        if isinstance(width_, (bool, np.bool_)) or not isinstance(
            width_, (int, np.integer)
        ):
            raise TypeError(
                "waveops.cpu.rotate: width must be an int power of two from 1 "
                f"to {MAX_WIDTH}, got {width_!r} ({type(width_).__name__}); "
                "pass e.g. width=32 (the default), or width=waveops.cpu.width() "
                "for the host SIMD width"
            )
        w = int(width_)
        if not is_pow2(w) or w > MAX_WIDTH:
            raise ValueError(
                "waveops.cpu.rotate: width must be a power of two from 1 to "
                f"{MAX_WIDTH}, got width={w}; pass 1, 2, 4, 8, 16, 32 or 64"
            )
    if n_lanes % w:
        raise ValueError(
            f"waveops.cpu.rotate: lanes must hold whole waves, but its length "
            f"{n_lanes} is not a multiple of width={w}; pad lanes to "
            f"{-(-n_lanes // w) * w} elements or pick a width dividing {n_lanes}"
            + (f" (width defaults to {DEFAULT_WIDTH}, a CUDA warp; the host SIMD width is "
               f"width=waveops.cpu.width())" if width_ is None or width_ is DEFAULT_WIDTH else "")
        )
    return w


def _word_view(a):
    """The array as raw words, plus the dtype to view the result back as."""
    dt = a.dtype
    if dt.kind not in "iuf" or dt.itemsize not in (4, 8) or dt.fields:
        raise TypeError(
            "waveops.cpu.rotate: lanes must have dtype "
            f"{', '.join(_SUPPORTED)}; got dtype {dt}; cast it first "
            "(e.g. lanes.astype(np.int32)) or rotate the 32/64-bit parts "
            "of wider types separately"
        )
    # Native-order words even for byte-swapped input: a rotate moves whole
    # elements, so it never needs to know what the bytes mean.
    return a.view(np.uint32 if dt.itemsize == 4 else np.uint64)


def rotate(lanes: npt.NDArray[_ScalarT], delta: Union[SupportsIndex, npt.NDArray[np.integer[Any]]],
           width: Optional[int] = DEFAULT_WIDTH) -> npt.NDArray[_ScalarT]:
    """Lane shuffle of every wave in an array (CPU twin of ``waveops.rotate``); returns a new array.

    ``out[w*W + l] = lanes[w*W + (l + delta) mod W]`` for every wave ``w``
    and lane ``l`` — bit for bit what ``waveops.rotate(value, delta, W)``
    returns on the GPU when lane ``l`` of a warp group holds ``lanes[w*W+l]``.

    Parameters
    ----------
    lanes : numpy.ndarray
        1-D array of one or more waves back to back; its length a multiple
        of the width.  dtype int32, uint32, float32, int64, uint64 or
        float64.  Any byte order and any stride (non-contiguous input is
        copied first).
    delta : int or numpy.ndarray of int
        Rotation distance: one integer for all lanes (any sign or size) or a
        1-D integer array with one delta per lane, ``len(delta) ==
        len(lanes)``.  Taken modulo the width.
    width : int, optional
        Wave width, a power of two from 1 to 64.  Default 32
        (``DEFAULT_WIDTH``): a CUDA warp, as ``waveops.rotate``'s default, on
        every machine.  ``width=waveops.cpu.width()`` opts in to the host
        SIMD width (4, 8 or 16: results then depend on the CPU).  ``None``
        means the default.

    Returns
    -------
    numpy.ndarray
        A new array, same dtype and shape as ``lanes``.

    Raises
    ------
    TypeError
        Unsupported dtype, non-integer ``delta`` or ``width``.
    ValueError
        ``lanes`` not 1-D; ``width`` not a power of two in [1, 64]; length of
        ``lanes`` not a multiple of the width; ``delta`` array of the wrong
        shape.

    Notes
    -----
    Values move as raw 32- or 64-bit words, so every bit pattern survives
    (NaN payloads, ``-0.0``), as on the GPU.  Callable inside ``@numba.njit``
    code too, where the value checks run at run time with fixed messages.

    See Also
    --------
    waveops.rotate : The CUDA device function this is the twin of.
    lane_ids : The lane of each element.
    waveops.vulkan.Device.rotate : The same rotate on a Vulkan device.

    Examples
    --------
    >>> import numpy as np
    >>> from waveops.cpu import rotate
    >>> x = np.arange(8, dtype=np.int32)
    >>> rotate(x, 1, width=4)
    array([1, 2, 3, 0, 5, 6, 7, 4], dtype=int32)
    >>> rotate(x, -1, width=8)
    array([7, 0, 1, 2, 3, 4, 5, 6], dtype=int32)
    >>> rotate(x, np.array([0, 1, 2, 3, 0, 0, 0, 0]), width=4)
    array([0, 2, 0, 2, 4, 5, 6, 7], dtype=int32)

    Bits survive, as on the GPU:

    >>> y = rotate(np.array([-0.0, np.inf, np.nan, 1.0]), 2, width=4)
    >>> y, np.signbit(y[2])
    (array([nan,  1., -0., inf]), np.True_)
    """
    a = np.asarray(lanes)
    if a.ndim != 1:
        raise ValueError(
            "waveops.cpu.rotate: lanes must be a 1-D array of whole waves, got "
            f"shape {a.shape}; pass lanes.ravel() (each run of width elements "
            "is one wave)"
        )
    words = _word_view(np.ascontiguousarray(a))
    w = _check_width(width, a.size)
    out = np.empty_like(words)
    if a.size == 0:
        return out.view(a.dtype)
    if isinstance(delta, (int, np.integer)) and not isinstance(
        delta, (bool, np.bool_)
    ):
        # Python ints of any size: reduce exactly before it meets int64.
        _rotate_uniform(words, np.int64(int(delta) % w), np.int64(w), out)
        return out.view(a.dtype)
    d = np.asarray(delta) if not isinstance(delta, (bool, np.bool_)) else None
    if d is None or d.dtype.kind not in "iu":
        got = (
            f"{delta!r} ({type(delta).__name__})"
            if d is None or d.ndim == 0
            else f"an array of dtype {d.dtype}"
        )
        raise TypeError(
            "waveops.cpu.rotate: delta must be an integer or a 1-D integer "
            f"array with one delta per lane, got {got}; pass an int, or "
            "convert per-lane deltas with np.asarray(delta, dtype=np.int64)"
        )
    if d.ndim == 0:
        _rotate_uniform(words, np.int64(int(d) % w), np.int64(w), out)
        return out.view(a.dtype)
    if d.shape != a.shape:
        raise ValueError(
            f"waveops.cpu.rotate: a per-lane delta needs one entry per lane: "
            f"lanes has shape {a.shape}, delta has shape {d.shape}; pass an "
            f"int for a uniform rotate or a delta array of shape {a.shape}"
        )
    if d.dtype.byteorder not in "=|":
        d = d.astype(d.dtype.newbyteorder("="))
    # Only the low bits matter; wrap to int64/int32 without a copy where the
    # size allows (two's complement keeps (l + d) & (w - 1) exact).
    if d.dtype.itemsize == 8:
        d = np.ascontiguousarray(d).view(np.int64)
    elif d.dtype.itemsize == 4:
        d = np.ascontiguousarray(d).view(np.int32)
    else:
        d = d.astype(np.int64)
    _rotate_per_lane(words, d, np.int64(w), out)
    return out.view(a.dtype)


def lane_ids(n: int, width: Optional[int] = DEFAULT_WIDTH) -> npt.NDArray[np.int32]:
    """Lane index of each element of an ``n``-lane software wave array.

    The software-wave twin of ``waveops.lane_id()``: element ``i`` is lane
    ``i mod width`` of its wave.

    Parameters
    ----------
    n : int
        Number of elements (lanes of all waves), a multiple of the width.
    width : int, optional
        Wave width, a power of two from 1 to 64.  Default 32
        (``DEFAULT_WIDTH``), on every machine; ``width=waveops.cpu.width()``
        opts in to the host SIMD width.

    Returns
    -------
    numpy.ndarray
        ``n`` int32 lane indices, ``0 <= lane < width``.

    Raises
    ------
    TypeError
        A ``width`` that is not an int.
    ValueError
        ``width`` not a power of two in [1, 64], or ``n`` not a multiple of it.

    See Also
    --------
    rotate : The rotate over the same waves.
    waveops.lane_id : The CUDA device function.

    Examples
    --------
    >>> from waveops.cpu import lane_ids
    >>> lane_ids(8, width=4)
    array([0, 1, 2, 3, 0, 1, 2, 3], dtype=int32)
    """
    w = _check_width(width, n)
    return (np.arange(n, dtype=np.int64) & (w - 1)).astype(np.int32)


# --------------------------------------------------------------------------
# The same functions inside @njit code.  Checks that depend on values run at
# run time with fixed messages (nopython mode cannot format them).


@overload(width, target="cpu")
def _ol_width():
    w = width()
    return lambda: w


@overload(rotate, target="cpu")
def _ol_rotate(lanes, delta, width=DEFAULT_WIDTH):
    if not isinstance(lanes, _nb_types.Array) or lanes.ndim != 1:
        raise _nb_errors.TypingError(
            f"waveops.cpu.rotate: lanes must be a 1-D array, got {lanes}"
        )
    if str(lanes.dtype) not in _SUPPORTED:
        raise _nb_errors.TypingError(
            f"waveops.cpu.rotate: lanes must have dtype {', '.join(_SUPPORTED)}"
            f", got {lanes.dtype}; cast it first"
        )
    per_lane = isinstance(delta, _nb_types.Array)
    if per_lane:
        if delta.ndim != 1 or not isinstance(delta.dtype, _nb_types.Integer):
            raise _nb_errors.TypingError(
                "waveops.cpu.rotate: delta must be an integer or a 1-D integer "
                f"array, got {delta}"
            )
    elif not isinstance(delta, _nb_types.Integer):
        raise _nb_errors.TypingError(
            f"waveops.cpu.rotate: delta must be an integer or a 1-D integer "
            f"array, got {delta}; pass an int"
        )
    default_w = DEFAULT_WIDTH
    no_width = width is None or isinstance(width, (int, _nb_types.NoneType, _nb_types.Omitted))
    if not no_width and not isinstance(width, _nb_types.Integer):
        raise _nb_errors.TypingError(
            f"waveops.cpu.rotate: width must be an integer, got {width}"
        )

    def impl(lanes, delta, width=DEFAULT_WIDTH):
        w = default_w if width is None else np.int64(width)
        if w < 1 or w > MAX_WIDTH or (w & (w - 1)) != 0:
            raise ValueError(
                "waveops.cpu.rotate: width must be a power of two from 1 to 64"
            )
        n = lanes.size
        if n % w != 0:
            raise ValueError(
                "waveops.cpu.rotate: len(lanes) is not a multiple of width; "
                "pad lanes to whole waves"
            )
        out = np.empty_like(lanes)
        if per_lane:
            if delta.size != n:
                raise ValueError(
                    "waveops.cpu.rotate: per-lane delta must have one entry "
                    "per lane (len(delta) == len(lanes))"
                )
            for i in range(n):
                out[i] = lanes[source_lane(i, np.int64(delta[i]), w)]
        else:
            d = np.int64(delta)
            for i in range(n):
                out[i] = lanes[source_lane(i, d, w)]
        return out

    return impl
