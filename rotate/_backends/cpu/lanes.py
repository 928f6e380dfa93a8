"""CPU kernels for per-lane shifts (``roll_rows``) and one-pass multi-axis rolls.

Two entry points, each with a planner that decides everything before any byte
moves (the runners execute exactly the plan's ``params``):

* :func:`plan_lanes` / :func:`run_lanes` -- every 1-D lane of an array along
  one axis rolled by its own shift (``rotate.roll_rows``).
* :func:`plan_multiaxis` / :func:`run_multiaxis` -- ``numpy.roll`` over two or
  more axes of a C- or F-contiguous array in one pass (``rotate.roll`` with
  several axes, ``rotate.fftshift``).

Per-lane shifts (``per-lane-*``)
--------------------------------
Lanes are spread over the CPU backend's threads (``rotate._backends.cpu.team``; "threads" below, to
keep them apart from the array's lanes), each thread owning one scratch row
of ``cap`` words. A contiguous lane of at most ``copy_lane_bytes`` that fits
the scratch row is copied into it with one memcpy and written back rotated
with two (``per-lane-copy``: the lane stays in cache in between). A longer
contiguous lane is rotated with memmoves (``per-lane-shift``): save ``d = min(k, n - k)`` words, memmove the rest, restore
(``d <= cap``); longer rotations first take Gries--Mills block swaps through a
``tile`` of the same scratch until ``d`` fits; with no scratch at all, three
reversals. Contiguous lanes of at most ``small_lane_bytes`` bytes are moved as
words of the widest size up to 8 bytes that divides the lane and the lane
pitch (a lane of 4 uint8 is one uint32), many lanes per call: a lane that is
one word is rotated in a register (``per-lane-word-rotate``: bit rotation, no
scratch); a lane of two or three words is copied twice into the thread's scratch row and the
rotated window written back (``per-lane-small-copy``), with a funnel shift
across word boundaries when an element is narrower than the word. Short lanes
whose bytes (or pitch) are not a multiple of 4 would move as 1- or 2-byte
words, and lanes of ``window_min_words`` words or more pay a funnel shift a
word where 16-byte copies move four or two; they are addressed as bytes and moved 8 at a time instead
(``per-lane-byte-window``): a lane of 2-7 bytes is rotated inside the 8-byte
window that holds it and written back with two overlapping stores that stay
in the lane, a lane of 8-16 bytes as two 8-byte words built in registers, a
longer one copied twice into scratch and its rotated window copied back, in
16-byte copies. A lane that is strided in memory is gathered into the scratch row and written back rotated when it
fits (``per-lane-strided-gather``), else reversed three times in place
(``per-lane-strided-reversal``: no scratch, twice the traffic).

Multi-axis rolls in one pass (``multi-axis-cycles``)
----------------------------------------------------
View the C-ordered array as ``(outer, n0, block)``: ``n0`` is the first
rolled axis, ``outer`` the axes before it, ``block`` everything after it
(``blk`` words). numpy.roll makes destination block ``j`` equal to source
block ``(j - s0) mod n0``, itself rolled over the remaining axes. The block
permutation has ``g = gcd(n0, s0)`` cycles of ``n0 / g`` blocks; walking a
cycle moves each block once, *rolling it while it is copied* (rows of the
block copied to their rolled row with their own rotation: two memcpys per
row), so every byte is read once and written once (2N), plus one block per
cycle through scratch (the cycle's first block, saved before it is
overwritten). Cycles are spread over threads, one scratch block per thread;
when there are fewer cycles than threads, each cycle is cut into pieces
whose first blocks are all saved first (the seams), so one cycle still uses
every thread.

Scratch bound: ``slots * blk`` words, ``slots`` at most ``2 * threads``, and
never more than the budget (``max_scratch_bytes`` or the CPU tuning's
``scratch_bytes``, 8 MiB; with no bound given, blocks larger than that may take
up to ``multiaxis_default_share`` of the array): the planner drops threads to fit, and when even one
block does not fit (a huge trailing block, e.g. a 3-D roll whose planes are
larger than the budget) it returns None and the caller plans one pass per
axis instead, which ``plan()`` shows as one step per axis.
"""

from __future__ import annotations

import functools
import math
import sys
from dataclasses import dataclass

import numpy as np
from numba import njit
from numba.extending import overload

from . import team as _team
from . import runners, threads as cpu_threads
from .bytemem import HAS_BYTE_SHUFFLE, load_u64, shuffle_store16, store_u16, store_u32, store_u64
from .kernels import _copy_span16, _doubled16, _move, _shift_serial, _swap_tiled
from ..._core.plan import Params, Step
from .tuning import current as _T
from ..._core.validate import word_view_params

# Block copies of rows up to this many words use element loops, not memmove (a compiled kernel's own
# constant, baked in at compile time: not tuning, and not in the plan key).
SMALL_ROW_WORDS = 16

_LANE_ROW = 0  # contiguous lanes: memmove / Gries--Mills per lane
_LANE_SMALL = 1  # contiguous short lanes: word rotation, or copy loop through scratch
_LANE_STRIDED = 2  # strided lanes: gather through scratch, else reversal
_LANE_COPY = 3  # contiguous cache-sized lanes: memcpy into scratch, two memcpys back
_LANE_BYTES = 4  # contiguous short lanes of bytes not a multiple of 4: 8-byte windows at byte offsets
# Bytes the byte-window kernels load at once (one uint64).
WINDOW_BYTES = 8


# ---------------------------------------------------------------------------
# compiled kernels
# ---------------------------------------------------------------------------


@njit(cache=True, inline="always")
def _reverse_words(buf, lo, n, e, stride):
    """Reverse ``n`` elements of ``e`` words, ``stride`` words apart, starting at ``buf[lo]``."""
    i = 0
    j = n - 1
    while i < j:
        a = lo + i * stride
        b = lo + j * stride
        for w in range(e):
            x = buf[a + w]
            buf[a + w] = buf[b + w]
            buf[b + w] = x
        i += 1
        j -= 1


@njit(cache=True, inline="always")
def _rotate_contiguous(buf, lo, n, k, scratch, s0, cap, tile):
    """Rotate ``buf[lo:lo+n]`` left by ``k`` (words) with at most ``cap`` words of scratch at ``s0``."""
    while 0 < k < n:
        d = min(k, n - k)
        if d <= cap:
            _shift_serial(buf, lo, n, k, scratch, s0)
            return
        if tile == 0:  # no scratch at all: three reversals
            _reverse_words(buf, lo, k, 1, 1)
            _reverse_words(buf, lo + k, n - k, 1, 1)
            _reverse_words(buf, lo, n, 1, 1)
            return
        if k <= n - k:
            _swap_tiled(buf, lo, lo + n - k, k, scratch, s0, tile)
            n -= k
        else:
            m = n - k
            _swap_tiled(buf, lo, lo + k, m, scratch, s0, tile)
            lo += m
            n -= m
            k -= m


#: The kernels the factories below have built, by (factory, arguments): each is built once, and
#: tests list every dispatcher from here (a call after rotate.warmup must compile and load nothing).
built_kernels: dict = {}


def _built(factory):
    """``factory``'s kernel for each distinct argument tuple, built once and kept in ``built_kernels``."""

    @functools.wraps(factory)
    def kernel_for(*key):
        kernel = built_kernels.get((factory.__name__, key))
        if kernel is None:
            kernel = built_kernels[(factory.__name__, key)] = factory(*key)
        return kernel
    return kernel_for


@_built
def _lanes_kernel(mode: int):
    """The threads' kernel for lanes of one ``mode`` (a closure constant: a first call compiles its loop only)."""

    @njit(cache=True, nogil=True)
    def kernel(buf, origin, n, stride, e, dims, dim_strides, shifts, threads, scratch, slot, cap, tile, t_lo, t_hi):
        # Roll lane ``l`` (elements of ``e`` words, ``stride`` words apart) right by ``shifts[l]``. Lane
        # ``l`` is the C-order multi-index over ``dims`` (the other axes), its first word at
        # ``origin + sum(index_i * dim_strides_i)``; shifts are integers of any dtype but uint64 (reduced
        # here). Thread ``t`` (this call runs ``t_lo <= t < t_hi``) owns ``cap`` words of scratch at
        # ``t * slot``.
        lanes = shifts.shape[0]
        per = (lanes + threads - 1) // threads
        for t in range(t_lo, t_hi):
            s0 = t * slot
            for lane in range(t * per, min(lanes, (t + 1) * per)):
                sh = shifts[lane] % n
                if sh == 0:
                    continue
                if dims.shape[0] == 1:  # lanes evenly spaced (the planner merges what it can): no divisions
                    lo = origin + lane * dim_strides[0]
                else:
                    lo = origin
                    rest = lane
                    for d in range(dims.shape[0] - 1, -1, -1):
                        lo += (rest % dims[d]) * dim_strides[d]
                        rest //= dims[d]
                if mode == _LANE_ROW:
                    _rotate_contiguous(buf, lo, n * e, (n - sh) * e, scratch, s0, cap, tile)
                elif mode == _LANE_COPY:
                    words = n * e
                    k = (n - sh) * e
                    _move(scratch, s0, buf, lo, words)
                    _move(buf, lo, scratch, s0 + k, words - k)
                    _move(buf, lo + words - k, scratch, s0, k)
                elif n * e <= cap:
                    for i in range(n):
                        for w in range(e):
                            scratch[s0 + i * e + w] = buf[lo + i * stride + w]
                    for i in range(n):
                        src = i - sh
                        if src < 0:
                            src += n
                        for w in range(e):
                            buf[lo + i * stride + w] = scratch[s0 + src * e + w]
                else:
                    k = n - sh
                    _reverse_words(buf, lo, k, e, stride)
                    _reverse_words(buf, lo + k * stride, n - k, e, stride)
                    _reverse_words(buf, lo, n, e, stride)

    return kernel


# Short lanes. Indices below are cast to unsigned (``_U``): numba wraps a
# negative signed index around, and that check in every access made these loops
# several times slower. (Inlined into a numba prange body, these loops ran 3-4x
# slower, measured with numba 0.68: the threads' kernels are serial code.) Lanes are ``words`` words of ``2**wshift``
# bytes, ``pitch`` words apart; ``shifts`` are numpy.roll shifts of any integer dtype
# value, reduced a block of lanes at a time ahead of the moves (a reduction in
# the same iteration put its latency in front of every lane's loads).

_U = np.uint64
_EXACT = 1 << 52  # |s| below this: a float64 quotient s * (1/n) is off by at most one
_CHECK_BLOCK = 256  # one-word lanes: shifts checked for |s| >= _EXACT this many at a time


@njit(cache=True, inline="always")
def _reduce_near(s, n, inv):
    """``s mod n`` in ``[0, n)`` for ``|s| < 2**52`` (``inv = 1.0 / n``): no division, no branch."""
    r = s - np.int64(np.float64(s) * inv) * n
    r += n & (r >> 63)
    r -= n & ((n - 1 - r) >> 63)
    return r


@njit(cache=True, inline="always")
def _reduce_shift(s, n, inv):
    """``s mod n`` in ``[0, n)`` as numpy.roll takes it, for any int64 ``s``."""
    if _U(s) + _U(_EXACT) < _U(2 * _EXACT):
        return _reduce_near(s, n, inv)
    return s % n


@njit(cache=True, inline="always")
def _all_within(shifts, first, m, n):
    """Every shift in ``[-n, n)``: its roll is ``s`` or ``s + n``."""
    out = False
    for i in range(m):
        out |= _U(shifts[_U(first + i)]) + _U(n) >= _U(2 * n)
    return not out


@njit(cache=True, inline="always")
def _all_near(shifts, first, m):
    far = False
    for i in range(m):
        far |= _U(shifts[_U(first + i)]) + _U(_EXACT) >= _U(2 * _EXACT)
    return not far


@njit(cache=True, inline="always")
def _rotate_in_words(buf, at0, pitch, shifts, first, m, n, inv, item_bits, top, near):
    one = _U(1)
    for i in range(m):
        s = shifts[_U(first + i)]
        r = _U((_reduce_near(s, n, inv) if near else _reduce_shift(s, n, inv)) * item_bits)
        at = _U(at0 + i * pitch)
        x = _U(buf[at])
        buf[at] = (x << r) | ((x >> one) >> (top - r))  # two shifts: no shift by the full width when r == 0


@njit(cache=True)
def _lanes_in_one_word(buf, lo, pitch, shifts, first, count, n, item_bits, top):
    """Lanes of one word each (``top + 1`` bits): numpy.roll by ``s`` is a left bit rotation by ``s * item_bits``."""
    inv = 1.0 / n
    for start in range(0, count, _CHECK_BLOCK):
        m = min(_CHECK_BLOCK, count - start)
        if _all_near(shifts, first + start, m):  # the loop without a division vectorises
            _rotate_in_words(buf, lo + start * pitch, pitch, shifts, first + start, m, n, inv, item_bits, top, True)
        else:
            _rotate_in_words(buf, lo + start * pitch, pitch, shifts, first + start, m, n, inv, item_bits, top, False)


@njit(cache=True, inline="always")
def _byte_shifts(scratch, at, shifts, first, m, n, inv, itemsize):
    """``scratch[at:at+m]`` = each lane's roll in bytes (below ``small_lane_bytes``: fits any word)."""
    if _all_within(shifts, first, m, n):  # |s| < n (lags within a lane): one add, no quotient
        for i in range(m):
            s = shifts[_U(first + i)]
            scratch[_U(at + i)] = (s + (n & (s >> 63))) * itemsize
    elif _all_near(shifts, first, m):
        for i in range(m):
            scratch[_U(at + i)] = _reduce_near(shifts[_U(first + i)], n, inv) * itemsize
    else:
        for i in range(m):
            scratch[_U(at + i)] = _reduce_shift(shifts[_U(first + i)], n, inv) * itemsize


@njit(cache=True, inline="always")
def _copy_lanes(buf, lo, pitch, shifts, first, count, n, itemsize, wshift, top, words, scratch, s0, block, funnel):
    """Each lane twice into scratch, then its rotated window back: ``w[j - q]`` for word ``j``.

    Rolling right by ``b`` bytes shifts the lane, read as one little-endian
    integer, left by ``8 b`` bits. With ``8 b = q * bits + r``, word ``j`` of
    the result is ``(w[j-q] << r) | (w[j-q-1] >> (bits - r))``; ``r`` is 0
    when elements are whole words (``funnel`` False: a plain copy). The
    lanes' byte shifts go ``block`` at a time to ``scratch[s0 + 2*words:]``.
    """
    one = _U(1)
    low = (1 << wshift) - 1
    inv = 1.0 / n
    bs0 = s0 + 2 * words
    for start in range(0, count, block):
        m = min(block, count - start)
        _byte_shifts(scratch, bs0, shifts, first + start, m, n, inv, itemsize)
        for i in range(m):
            b = np.int64(scratch[_U(bs0 + i)])
            at = lo + (start + i) * pitch
            for j in range(words):
                v = buf[_U(at + j)]
                scratch[_U(s0 + j)] = v
                scratch[_U(s0 + words + j)] = v
            src = s0 + words - (b >> wshift)
            if funnel:
                r = _U((b & low) << 3)
                rest = top - r
                for j in range(words):
                    hi = _U(scratch[_U(src + j)])
                    lw = _U(scratch[_U(src + j - 1)])
                    buf[_U(at + j)] = (hi << r) | ((lw >> one) >> rest)
            else:
                for j in range(words):
                    buf[_U(at + j)] = scratch[_U(src + j)]


@njit(cache=True, inline="always")
def _lane_row(origin, dims, dim_strides, lane, last):
    """Where lane ``lane`` starts (the C-order multi-index over ``dims``, ``origin + sum(index_i *
    dim_strides_i)``), and how many lanes from it to ``last`` lie in its innermost row (one set of
    divisions a row of lanes, not a lane)."""
    nd = dims.shape[0]
    inner = dims[nd - 1]
    j = lane % inner
    lo = origin + j * dim_strides[nd - 1]
    rest = lane // inner
    for d in range(nd - 2, -1, -1):
        lo += (rest % dims[d]) * dim_strides[d]
        rest //= dims[d]
    return lo, min(last - lane, inner - j)


def _short_run(buf, lo, pitch, shifts, first, count, n, itemsize, wshift, top, words, scratch, s0, block, kind,
               fixed):
    """``count`` evenly spaced short lanes from word ``lo``: the loop for ``kind`` and ``fixed`` (constants)."""
    raise NotImplementedError("compiled code only: numba picks the loop by the constants (the overload below)")


# Each run is compiled as a function of its own, called from the threads' kernel: inlined
# into the kernel's lane walk, the same loops ran 7-23% slower (one thread, cache-resident lanes).
@overload(_short_run, prefer_literal=True, jit_options={"cache": True})
def _short_run_for(buf, lo, pitch, shifts, first, count, n, itemsize, wshift, top, words, scratch, s0, block, kind,
                   fixed):
    the_kind, the_fixed = kind.literal_value, fixed.literal_value
    funnel = the_kind == _SHORT_FUNNEL
    if the_kind == _SHORT_ONE_WORD:
        def one_word(buf, lo, pitch, shifts, first, count, n, itemsize, wshift, top, words, scratch, s0, block, kind,
                     fixed):
            _lanes_in_one_word(buf, lo, pitch, shifts, first, count, n, itemsize * 8, top)
        return one_word
    if the_fixed:
        def fixed_words(buf, lo, pitch, shifts, first, count, n, itemsize, wshift, top, words, scratch, s0, block,
                        kind, fixed):
            _copy_lanes(buf, lo, pitch, shifts, first, count, n, itemsize, wshift, top, the_fixed, scratch, s0,
                        block, funnel)
        return fixed_words

    def any_words(buf, lo, pitch, shifts, first, count, n, itemsize, wshift, top, words, scratch, s0, block, kind,
                  fixed):
        _copy_lanes(buf, lo, pitch, shifts, first, count, n, itemsize, wshift, top, words, scratch, s0, block, funnel)
    return any_words


# One kernel a kind of short lane, built when a plan first runs it: a first call
# compiles only the loop it runs (``docs/results/cold-start-cpu.json``: one kernel
# holding every kind took 5.3 s to compile for a 2x4 roll_rows). The kind is a
# closure constant, so numba drops the other branches before typing them.
_SHORT_ONE_WORD, _SHORT_WORDS, _SHORT_FUNNEL = 0, 1, 2


def _short_kind(words: int, itemsize: int, wshift: int) -> tuple:
    """``(kind, words or 0)``: lanes of one word; of whole-word elements; narrower (the funnel). Lanes
    of 2-4 words get their count as a constant: runtime-count loops cost 1.2-2.4x per lane there."""
    if words == 1:
        return _SHORT_ONE_WORD, 1
    kind = _SHORT_WORDS if itemsize & ((1 << wshift) - 1) == 0 else _SHORT_FUNNEL
    return kind, (words if words <= 4 else 0)


@_built
def _short_lanes_kernel(kind: int, fixed: int):
    """The threads' kernel rolling every short contiguous lane of one kind (see :func:`_short_kind`)."""

    @njit(cache=True, nogil=True)
    def kernel(buf, origin, words, dims, dim_strides, shifts, n, itemsize, wshift, threads, scratch, slot, block,
               t_lo, t_hi):
        # Roll every short contiguous lane (``words`` words of ``2**wshift`` bytes) right by its shift.
        # Lane ``l`` is the C-order multi-index over ``dims``, its first word at
        # ``origin + sum(index_i * dim_strides_i)``. Each thread takes a run of lanes and walks it one
        # innermost row of lanes at a time (one set of divisions per row, not per lane); thread ``t``
        # owns ``2 * words + block`` words of scratch at ``t * slot`` (none when a lane is one word).
        top = _U((8 << wshift) - 1)
        lanes = shifts.shape[0]
        per = (lanes + threads - 1) // threads
        pitch = dim_strides[dims.shape[0] - 1]
        for t in range(t_lo, t_hi):
            lane = t * per
            last = min(lanes, lane + per)
            while lane < last:
                lo, count = _lane_row(origin, dims, dim_strides, lane, last)
                _short_run(buf, lo, pitch, shifts, lane, count, n, itemsize, wshift, top, words, scratch, t * slot,
                           block, kind, fixed)
                lane += count

    return kernel


# Short lanes whose bytes are not a multiple of 4 (3 uint8, 7 uint8, 5 uint16, a
# 3-byte struct, ...), or whose pitch is not: the kernels above could only move
# them as 1- or 2-byte words, a loop iteration per byte or two. These move
# 8-byte windows at byte offsets of the array viewed as bytes (``_bytemem``):
# a lane of 2-7 bytes is loaded as the 8-byte window holding it, rotated in
# the register and written back with two overlapping stores of 2 or 4 bytes
# that never leave the lane (the window's other bytes belong to neighbouring
# lanes, maybe another thread's: read, never written). A lane of 8 bytes or
# more is written as 8-byte words (the last one ending at the lane's end,
# overlapping the one before), each built from one or two 8-byte loads of the
# lane at the rotated offset; all loads of a lane come before its stores. The
# shifts are reduced a block ahead into the thread's uint64 scratch, as
# ``_copy_lanes`` does.


@njit(cache=True, inline="always")
def _rolled_window(w, b, lane_bytes):
    """The low ``lane_bytes`` (< 8) bytes of window ``w`` rolled right by ``b`` bytes (higher bytes: garbage)."""
    bits = _U(8 * lane_bytes)
    c = bits - (b << _U(3))  # in 1..bits: rolling right by b bytes is a left rotation by 8b bits
    x = w & ((_U(1) << bits) - _U(1))
    if lane_bytes <= 4:  # the lane doubled fits a register: one shift takes the rotation out of it
        return (x | (x << bits)) >> c
    return (w << (bits - c)) | (x >> c)


@njit(cache=True, inline="always")
def _put_lane(buf, at, y, lane_bytes):
    """Write the low ``lane_bytes`` (2-7) bytes of ``y`` at byte ``at``: two stores that may overlap."""
    if lane_bytes >= 4:
        store_u32(buf, at, y)
        store_u32(buf, at + _U(lane_bytes - 4), y >> _U(8 * (lane_bytes - 4)))
    else:
        store_u16(buf, at, y)
        store_u16(buf, at + _U(lane_bytes - 2), y >> _U(8 * (lane_bytes - 2)))


@njit(cache=True, inline="always")
def _window_lane(buf, here, b, lane_bytes, last_start):
    """Roll the lane of ``lane_bytes`` (2-7) bytes at byte ``here`` right by ``b`` bytes through the 8-byte
    window at it (the window that ends the span, where the lane's own would leave it)."""
    window = min(here, last_start)
    w = load_u64(buf, _U(window)) >> _U(8 * (here - window))
    _put_lane(buf, _U(here), _rolled_window(w, b, lane_bytes), lane_bytes)


@njit(cache=True, inline="always")
def _window_lanes(buf, lo, pitch, shifts, first, count, n, itemsize, lane_bytes, scratch, s0, block):
    """Lanes of 2-7 bytes, each read as the 8-byte window starting at it (at the span's end: ending there)."""
    inv = 1.0 / n
    span = buf.shape[0]
    last_start = span - 8  # the planner only comes here when the span holds 8 bytes
    for start in range(0, count, block):
        m = min(block, count - start)
        _byte_shifts(scratch, s0, shifts, first + start, m, n, inv, itemsize)
        at = lo + start * pitch
        # lanes whose window from their first byte stays inside the span: all but the last few
        inside = 0
        if pitch > 0:
            inside = m if at + (m - 1) * pitch <= last_start else max(0, (last_start - at) // pitch + 1)
        for i in range(inside):
            y = _rolled_window(load_u64(buf, _U(at + i * pitch)), scratch[_U(s0 + i)], lane_bytes)
            _put_lane(buf, _U(at + i * pitch), y, lane_bytes)
        for i in range(inside, m):  # the window that ends the span, when the lane's own would leave it
            _window_lane(buf, at + i * pitch, scratch[_U(s0 + i)], lane_bytes, last_start)


#: Back-to-back lanes of these byte lengths go in groups, one byte shuffle a group: lanes a group (the
#: group's bytes, at most 15, fit one 16-byte load with the shuffle's two overlapping 8-byte stores). Lanes
#: of 2 and 4 bytes are words (``per-lane-word-rotate``).
GROUP_LANES = {3: 5, 5: 3, 6: 2, 7: 2}


@njit(cache=True, inline="always")
def _grouped_lanes(buf, lo, shifts, first, count, n, itemsize, lane_bytes, group, scratch, s0, block, masks):
    """Back-to-back lanes of 3-7 bytes, ``group`` of them (``GROUP_LANES``) a byte shuffle (``pshufb``).

    The 16 bytes at a group's start are permuted by the mask row ``sum(b_i *
    L**i)`` of its lanes' rolls ``b_i`` in bytes (``group_masks``), and the
    group's ``group * L`` bytes stored as two overlapping 8-byte words: one
    load, one shuffle and two stores for up to five lanes, where the window
    path takes a load, a rotation and two stores a lane. Bytes read past the
    group (the next lanes', maybe another thread's) are never stored. A group
    whose 16 bytes would leave the span, and the lanes of a shift block that
    do not fill a group, take the window path.
    """
    inv = 1.0 / n
    width = group * lane_bytes
    tail = width - 8
    end = buf.shape[0] - 16  # the last group start with 16 bytes inside the span
    last_start = buf.shape[0] - 8
    step = block - block % group if block >= group else block  # shift blocks of whole groups
    for start in range(0, count, step):
        m = min(step, count - start)
        at = lo + start * lane_bytes
        whole = m // group
        if at + (whole - 1) * width > end:  # the span ends inside this block: its groups that fit
            whole = max(0, (end - at) // width + 1)
        _byte_shifts(scratch, s0, shifts, first + start, m, n, inv, itemsize)
        # Each group's mask row over its lanes' rolls, in place: row g lands on word g, whose roll belongs
        # to a group at or before g (already summed); the rolls of the lanes left over stay where they are.
        for g in range(whole):
            row = 0
            scale = 1
            for j in range(group):
                row += np.int64(scratch[_U(s0 + g * group + j)]) * scale
                scale *= lane_bytes
            scratch[_U(s0 + g)] = row
        for g in range(whole):
            shuffle_store16(buf, _U(at + g * width), masks, _U(16 * np.int64(scratch[_U(s0 + g)])), _U(tail))
        for j in range(whole * group, m):
            _window_lane(buf, at + j * lane_bytes, scratch[_U(s0 + j)], lane_bytes, last_start)


def group_masks(lane_bytes: int) -> np.ndarray:
    """``_grouped_lanes``' masks for back-to-back lanes of ``lane_bytes`` (a ``GROUP_LANES`` key): row
    ``sum(b_i * L**i)`` (``b_i``: lane ``i``'s roll right in bytes, ``L = lane_bytes``) maps output byte
    ``o`` of the group to byte ``(o // L) * L + (o % L - b_{o // L}) mod L``, the first 8 output bytes
    in its first half and the last 8 (from ``group * L - 8``) in its second."""
    group = GROUP_LANES[lane_bytes]
    width = group * lane_bytes
    rows = np.arange(lane_bytes ** group)
    out = np.arange(width)
    rolls = (rows[:, None] // lane_bytes ** (out // lane_bytes)[None, :]) % lane_bytes  # b of each output's lane
    source = (out // lane_bytes) * lane_bytes + (out % lane_bytes - rolls) % lane_bytes
    return np.concatenate([source[:, :8], source[:, width - 8:]], axis=1).astype(np.uint8).reshape(-1)


@njit(cache=True, inline="always")
def _rolled_word(buf, lane, o, b, lane_bytes, head):
    """Bytes ``o .. o+7`` of the lane at byte ``lane`` rolled right by ``b``: one or two 8-byte loads, no branch.

    Source offset ``t = (o - b) mod L``; when ``t + 8 > L`` the word wraps:
    its first ``L - t`` bytes end the lane and the rest start it (``head``,
    the lane's first 8 bytes).
    """
    t = o - b
    t += lane_bytes & (t >> 63)
    top = lane_bytes - 8
    clamped = min(t, top)
    over = t - clamped  # bytes past the lane's last full window: 0, or 1-7 when the word wraps
    tail = load_u64(buf, _U(lane + clamped)) >> _U(8 * over)
    wraps = _U(0) - _U(over != 0)
    return tail | ((head << _U((64 - 8 * over) & 63)) & wraps)


@njit(cache=True, inline="always")
def _roll_two_words(buf, lane, b, lane_bytes, top):
    """The lane of 8-16 bytes at byte ``lane`` rolled right by ``b`` bytes: its two words (at 0 and at
    ``top``, ending at the lane's end) built in registers from loads, then stored."""
    head = load_u64(buf, _U(lane))
    first_word = _rolled_word(buf, lane, 0, b, lane_bytes, head)
    last_word = _rolled_word(buf, lane, top, b, lane_bytes, head)
    store_u64(buf, _U(lane), first_word)
    store_u64(buf, _U(lane + top), last_word)


@njit(cache=True, inline="always")
def _two_word_lanes(buf, lo, pitch, shifts, first, count, n, itemsize, lane_bytes, scratch, s0, block):
    """Lanes of 8-16 bytes: two words, at 0 and ending at the lane's end, built in registers, then stored."""
    inv = 1.0 / n
    top = lane_bytes - 8
    for start in range(0, count, block):
        m = min(block, count - start)
        _byte_shifts(scratch, s0, shifts, first + start, m, n, inv, itemsize)
        for i in range(m):
            _roll_two_words(buf, lo + (start + i) * pitch, np.int64(scratch[_U(s0 + i)]), lane_bytes, top)


@njit(cache=True, inline="always")
def _shuffled_lanes(buf, lo, pitch, shifts, first, count, n, itemsize, lane_bytes, scratch, s0, block, masks):
    """Lanes of 9-16 bytes, each as one 16-byte byte shuffle (``pshufb``) from the 16 bytes at its start.

    ``masks`` row ``b`` (16 bytes) takes a lane rolled right by ``b`` bytes
    to its first 8 bytes and its last 8: the two overlapping words the
    two-word path builds with loads, shifts and masks, here in one
    instruction. The bytes read past the lane (its neighbour's, maybe
    another thread's) are never stored. A lane whose 16 bytes would leave the
    span takes the two-word path.
    """
    inv = 1.0 / n
    top = lane_bytes - 8
    end = buf.shape[0] - 16  # the last lane start with 16 bytes inside the span
    for start in range(0, count, block):
        m = min(block, count - start)
        _byte_shifts(scratch, s0, shifts, first + start, m, n, inv, itemsize)
        for i in range(m):
            lane = lo + (start + i) * pitch
            b = np.int64(scratch[_U(s0 + i)])
            if lane <= end:
                shuffle_store16(buf, _U(lane), masks, _U(16 * b), top)
            else:
                _roll_two_words(buf, lane, b, lane_bytes, top)


def shuffle_masks(lane_bytes: int) -> np.ndarray:
    """``_shuffled_lanes``' masks for lanes of ``lane_bytes`` (9-16): row ``b`` maps output byte ``j`` of
    the first word to the lane's byte ``(j - b) mod L`` and of the last word (at ``L - 8``) to
    ``(L - 8 + j - b) mod L`` (numpy.roll right by ``b`` bytes)."""
    b = np.arange(lane_bytes)[:, None]
    j = np.arange(8)[None, :]
    return np.concatenate([(j - b) % lane_bytes, (lane_bytes - 8 + j - b) % lane_bytes], axis=1).astype(
        np.uint8).reshape(-1)


@njit(cache=True, inline="always")
def _copy_doubled(buf, lane, sbytes, at, lane_bytes, words):
    """The lane at byte ``lane`` twice, back to back, into ``sbytes[at:at + 2 * lane_bytes]`` (8-byte moves)."""
    for j in range(words - 1):
        v = load_u64(buf, _U(lane + 8 * j))
        store_u64(sbytes, _U(at + 8 * j), v)
        store_u64(sbytes, _U(at + lane_bytes + 8 * j), v)
    v = load_u64(buf, _U(lane + lane_bytes - 8))
    store_u64(sbytes, _U(at + lane_bytes - 8), v)
    store_u64(sbytes, _U(at + 2 * lane_bytes - 8), v)


@njit(cache=True, inline="always")
def _doubled_lanes16(buf, lo, pitch, shifts, first, count, n, itemsize, lane_bytes, scratch, sbytes, s0, block,
                     inv, room, base):
    """:func:`_doubled_lanes` for lanes of 16 bytes or more, in 16-byte copies (the spans of
    ``kernels._small_rows_vectors``)."""
    for start in range(0, count, block):
        m = min(block, count - start)
        _byte_shifts(scratch, s0, shifts, first + start, m, n, inv, itemsize)
        lane = lo + start * pitch
        _doubled16(sbytes, base, buf, lane, lane_bytes)
        for i in range(m):
            if i + 1 < m:
                _doubled16(sbytes, base + ((i + 1) & 1) * room, buf, lane + pitch, lane_bytes)
            window = base + (i & 1) * room + lane_bytes - np.int64(scratch[_U(s0 + i)])
            _copy_span16(buf, lane, sbytes, window, lane_bytes)
            lane += pitch


@njit(cache=True, inline="always")
def _doubled_lanes(buf, lo, pitch, shifts, first, count, n, itemsize, lane_bytes, scratch, sbytes, s0, block):
    """Lanes over 16 bytes: each copied twice into scratch, the rotated window copied back, in 8-byte moves.

    Two scratch copies alternate: lane ``i + 1`` is copied out before lane
    ``i``'s window is read back, so those unaligned loads find the stores
    they read already written to the cache, not waiting in the store buffer
    (a load straddling two pending stores waits for both).
    """
    inv = 1.0 / n
    words = (lane_bytes + 7) // 8
    room = (2 * lane_bytes + 15) // 8 * 8
    base = (s0 + block) * 8
    if lane_bytes >= 16:  # 16-byte copies (the chosen path: lanes of more than two_words_max bytes)
        _doubled_lanes16(buf, lo, pitch, shifts, first, count, n, itemsize, lane_bytes, scratch, sbytes, s0,
                         block, inv, room, base)
        return
    for start in range(0, count, block):
        m = min(block, count - start)
        _byte_shifts(scratch, s0, shifts, first + start, m, n, inv, itemsize)
        lane = lo + start * pitch
        _copy_doubled(buf, lane, sbytes, base, lane_bytes, words)
        for i in range(m):
            if i + 1 < m:
                _copy_doubled(buf, lane + pitch, sbytes, base + ((i + 1) & 1) * room, lane_bytes, words)
            src = base + (i & 1) * room + lane_bytes - np.int64(scratch[_U(s0 + i)])
            for j in range(words - 1):
                store_u64(buf, _U(lane + 8 * j), load_u64(sbytes, _U(src + 8 * j)))
            store_u64(buf, _U(lane + lane_bytes - 8), load_u64(sbytes, _U(src + lane_bytes - 8)))
            lane += pitch


def _byte_run(buf, lo, pitch, shifts, first, count, n, itemsize, lane_bytes, scratch, sbytes, s0, block, masks,
              kind, fixed, group):
    """``count`` evenly spaced byte-window lanes from byte ``lo``: the loop for ``kind``, ``fixed``, ``group``."""
    raise NotImplementedError("compiled code only: numba picks the loop by the constants (the overload below)")


@overload(_byte_run, prefer_literal=True, jit_options={"cache": True})
def _byte_run_for(buf, lo, pitch, shifts, first, count, n, itemsize, lane_bytes, scratch, sbytes, s0, block, masks,
                  kind, fixed, group):
    the_kind, the_fixed, the_group = kind.literal_value, fixed.literal_value, group.literal_value
    if the_kind == _BYTE_GROUPED:
        def grouped(buf, lo, pitch, shifts, first, count, n, itemsize, lane_bytes, scratch, sbytes, s0, block, masks,
                    kind, fixed, group):
            _grouped_lanes(buf, lo, shifts, first, count, n, itemsize, the_fixed, the_group, scratch, s0, block, masks)
        return grouped
    if the_kind == _BYTE_WINDOW and the_fixed:
        def fixed_window(buf, lo, pitch, shifts, first, count, n, itemsize, lane_bytes, scratch, sbytes, s0, block,
                         masks, kind, fixed, group):
            _window_lanes(buf, lo, pitch, shifts, first, count, n, itemsize, the_fixed, scratch, s0, block)
        return fixed_window
    if the_kind == _BYTE_WINDOW:
        def window(buf, lo, pitch, shifts, first, count, n, itemsize, lane_bytes, scratch, sbytes, s0, block, masks,
                   kind, fixed, group):
            _window_lanes(buf, lo, pitch, shifts, first, count, n, itemsize, lane_bytes, scratch, s0, block)
        return window
    if the_kind == _BYTE_SHUFFLED:
        def shuffled(buf, lo, pitch, shifts, first, count, n, itemsize, lane_bytes, scratch, sbytes, s0, block, masks,
                     kind, fixed, group):
            _shuffled_lanes(buf, lo, pitch, shifts, first, count, n, itemsize, lane_bytes, scratch, s0, block, masks)
        return shuffled
    if the_kind == _BYTE_TWO_WORDS:
        def two_words(buf, lo, pitch, shifts, first, count, n, itemsize, lane_bytes, scratch, sbytes, s0, block, masks,
                      kind, fixed, group):
            _two_word_lanes(buf, lo, pitch, shifts, first, count, n, itemsize, lane_bytes, scratch, s0, block)
        return two_words

    def doubled(buf, lo, pitch, shifts, first, count, n, itemsize, lane_bytes, scratch, sbytes, s0, block, masks, kind,
                fixed, group):
        # Always true (_byte_kind sends only lanes of 8 bytes or more here), but LLVM cannot know it: the
        # parfor kernel's branch chain told it (lane_bytes < 8 went elsewhere), and without the range its
        # word loops took an 8x-unrolled form with a remainder loop and more spills: lanes of 17-41 B ran
        # 1.12-1.18x slower (issue #36), as fast again with this test.
        if lane_bytes >= 8:
            _doubled_lanes(buf, lo, pitch, shifts, first, count, n, itemsize, lane_bytes, scratch, sbytes, s0, block)
    return doubled


# One kernel a kind of byte-window lane, as for the short lanes above (one kernel
# holding every kind took 8.8 s to compile for a roll_rows of 3-byte lanes). Lanes
# of 3, 5, 6 and 7 bytes get their size as a constant (the shift amounts and
# stores are then constants); ``group`` is the lanes a grouped shuffle moves at once.
_BYTE_WINDOW, _BYTE_GROUPED, _BYTE_TWO_WORDS, _BYTE_SHUFFLED, _BYTE_DOUBLED = 0, 1, 2, 3, 4


def _byte_kind(lane_bytes: int, pitch: int, masks: np.ndarray, two_words: bool) -> tuple:
    """``(kind, constant lane bytes or 0, group)``: which loop a plan's byte-window lanes run."""
    fixed = lane_bytes if lane_bytes in GROUP_LANES else 0
    if lane_bytes < 8:
        if fixed and masks.shape[0] > 0 and pitch == lane_bytes:  # the plan's "group_shuffle", lanes back to back
            return _BYTE_GROUPED, fixed, GROUP_LANES[fixed]
        return _BYTE_WINDOW, fixed, 0
    if two_words:  # the plan's choice for lanes of 9-16 bytes: in registers
        return (_BYTE_SHUFFLED if masks.shape[0] else _BYTE_TWO_WORDS), 0, 0  # "shuffle": one byte shuffle a lane
    return _BYTE_DOUBLED, 0, 0


@_built
def _byte_lanes_kernel(kind: int, fixed: int, group: int):
    """The threads' kernel rolling every byte-window lane of one kind (see :func:`_byte_kind`)."""

    @njit(cache=True, nogil=True)
    def kernel(buf, origin, lane_bytes, dims, dim_strides, shifts, n, itemsize, threads, scratch, sbytes, slot,
               block, masks, t_lo, t_hi):
        # Roll every short lane of ``lane_bytes`` bytes (``buf``: the array's span as bytes) right by its
        # shift. Lanes are walked as in the short lanes' kernel (offsets and pitches in bytes); thread
        # ``t`` owns ``slot`` uint64 words of scratch at ``t * slot``.
        lanes = shifts.shape[0]
        per = (lanes + threads - 1) // threads
        pitch = dim_strides[dims.shape[0] - 1]
        for t in range(t_lo, t_hi):
            lane = t * per
            last = min(lanes, lane + per)
            while lane < last:
                lo, count = _lane_row(origin, dims, dim_strides, lane, last)
                _byte_run(buf, lo, pitch, shifts, lane, count, n, itemsize, lane_bytes, scratch, sbytes, t * slot, block,
                          masks, kind, fixed, group)
                lane += count

    return kernel


@njit(cache=True, inline="always")
def _copy_block_rolled(dst, doff, src, soff, row_dims, row_shifts, rowlen, rshift):
    """``dst[doff:doff+blk]`` = the block at ``src[soff:]`` rolled: rows permuted, each row rotated.

    The block is ``prod(row_dims)`` rows of ``rowlen`` words; destination row
    ``r`` (C-order multi-index ``i``) is source row ``(i - row_shifts) mod
    row_dims``, shifted right by ``rshift`` words. The two ranges never overlap.
    """
    rows = 1
    for d in range(row_dims.shape[0]):
        rows *= row_dims[d]
    for r in range(rows):
        rest = r
        sr = 0
        mult = 1
        for d in range(row_dims.shape[0] - 1, -1, -1):
            dim = row_dims[d]
            i = rest % dim - row_shifts[d]
            rest //= dim
            if i < 0:
                i += dim
            sr += i * mult
            mult *= dim
        dlo = doff + r * rowlen
        slo = soff + sr * rowlen
        if rowlen <= SMALL_ROW_WORDS:
            for x in range(rshift):
                dst[dlo + x] = src[slo + rowlen - rshift + x]
            for x in range(rowlen - rshift):
                dst[dlo + rshift + x] = src[slo + x]
        else:
            _move(dst, dlo, src, slo + rowlen - rshift, rshift)
            _move(dst, dlo + rshift, src, slo, rowlen - rshift)


# numpy.roll of the ``(outer, n0, blk)`` word array by ``s0`` along n0, each block
# rolled while moved (``_copy_block_rolled``), walked as the cycles of
# ``j -> j - s0 (mod n0)``. With ``pieces_per_cycle == 0`` each thread walks whole
# cycles with one scratch block (slot ``t``): ``_cycles_whole``. Otherwise every
# cycle is cut into that many pieces: ``_cycle_seams`` saves each piece's first
# block to its own slot, and only then (a second phase) ``_cycle_pieces`` moves
# the pieces, a piece's last block coming from the next piece's slot.


@njit(cache=True, nogil=True)
def _cycles_whole(buf, outer, n0, s0, blk, row_dims, row_shifts, rowlen, rshift, threads, scratch, t_lo, t_hi):
    g = math.gcd(n0, s0)
    cycle_len = n0 // g
    units = outer * g
    per = (units + threads - 1) // threads
    for t in range(t_lo, t_hi):
        slot = t * blk
        for u in range(t * per, min(units, (t + 1) * per)):
            base = (u // g) * n0 * blk
            j = u % g
            _move(scratch, slot, buf, base + j * blk, blk)
            for _ in range(cycle_len - 1):
                src = j - s0
                if src < 0:
                    src += n0
                _copy_block_rolled(buf, base + j * blk, buf, base + src * blk, row_dims, row_shifts, rowlen, rshift)
                j = src
            _copy_block_rolled(buf, base + j * blk, scratch, slot, row_dims, row_shifts, rowlen, rshift)


@njit(cache=True, nogil=True)
def _cycle_seams(buf, n0, s0, blk, q, scratch, p_lo, p_hi):
    g = math.gcd(n0, s0)
    cycle_len = n0 // g
    for p in range(p_lo, p_hi):
        u = p // q
        first = (p % q) * cycle_len // q
        j = (u % g - first * s0) % n0
        _move(scratch, p * blk, buf, (u // g) * n0 * blk + j * blk, blk)


@njit(cache=True, nogil=True)
def _cycle_pieces(buf, n0, s0, blk, row_dims, row_shifts, rowlen, rshift, q, scratch, p_lo, p_hi):
    g = math.gcd(n0, s0)
    cycle_len = n0 // g
    for p in range(p_lo, p_hi):
        u = p // q
        piece = p % q
        first = piece * cycle_len // q
        last = (piece + 1) * cycle_len // q
        base = (u // g) * n0 * blk
        j = (u % g - first * s0) % n0
        for _ in range(first, last - 1):
            src = j - s0
            if src < 0:
                src += n0
            _copy_block_rolled(buf, base + j * blk, buf, base + src * blk, row_dims, row_shifts, rowlen, rshift)
            j = src
        nxt = u * q + (piece + 1) % q
        _copy_block_rolled(buf, base + j * blk, scratch, nxt * blk, row_dims, row_shifts, rowlen, rshift)


# ---------------------------------------------------------------------------
# planning (pure Python) and runners
# ---------------------------------------------------------------------------


def _budget(max_scratch_bytes) -> int:
    return _T().scratch_bytes if max_scratch_bytes is None else int(max_scratch_bytes)


def _word_for(itemsize: int, strides) -> int:
    word = 8
    while word > 1 and (itemsize % word or any(s % word for s in strides)):
        word //= 2
    return word


def lane_layout(shape, strides, itemsize: int, axis: int):
    """``(word, e, n, stride, dims, dim_strides, mode)`` for lanes along ``axis`` (strides in words)."""
    word = _word_for(itemsize, [s for s, d in zip(strides, shape) if d > 1])
    e = itemsize // word
    n = int(shape[axis])
    stride = int(strides[axis]) // word if n > 1 else e
    dims = tuple(int(d) for i, d in enumerate(shape) if i != axis)
    dim_strides = tuple(int(s) // word for i, s in enumerate(strides) if i != axis)
    if stride == e:
        mode = _LANE_SMALL if n * itemsize <= _T().small_lane_bytes else _LANE_ROW
    else:
        mode = _LANE_STRIDED
    return word, e, n, stride, dims, dim_strides, mode


def _merge_dims(dims, dim_strides):
    """Merge neighbouring dims that are evenly spaced (C order kept), so lane offsets need fewer divisions."""
    out_dims, out_strides = [], []
    for d, s in zip(dims, dim_strides):
        if d == 1:  # no offset to add, whatever its stride
            continue
        if out_dims and out_strides[-1] == s * d:
            out_dims[-1] *= d
            out_strides[-1] = s
        else:
            out_dims.append(d)
            out_strides.append(s)
    return tuple(out_dims) or (1,), tuple(out_strides) or (0,)


@dataclass(frozen=True, eq=False)
class LanesParams(Params):
    """``per-lane-shift``/``-copy``/``-strided-*``: lanes of ``n`` items (``e`` words each, ``stride`` words
    apart), one a position of ``dims``; a thread's scratch ``slot`` (words) of which ``cap`` hold a lane's
    saved words and ``tile`` the block swaps'."""

    CONSTANTS = (("runner", "lanes"),)
    mode: int
    word: int
    e: int
    n: int
    stride: int
    dims: tuple
    dim_strides: tuple
    threads: int
    cap: int
    slot: int
    tile: int


@dataclass(frozen=True, eq=False)
class ShortLanesParams(Params):
    """``per-lane-word-rotate``/``-small-copy``: short contiguous lanes as ``words`` words of ``word`` bytes."""

    CONSTANTS = (("runner", "lanes"), ("mode", _LANE_SMALL))
    word: int
    words: int
    n: int
    itemsize: int
    dims: tuple
    dim_strides: tuple
    threads: int
    slot: int
    block: int


@dataclass(frozen=True, eq=False)
class ByteLanesParams(Params):
    """``per-lane-byte-window``: lanes of ``lane_bytes`` bytes moved as 8-byte windows at byte offsets."""

    CONSTANTS = (("runner", "lanes"), ("mode", _LANE_BYTES), ("word", 1), ("window", WINDOW_BYTES))
    lane_bytes: int
    n: int
    itemsize: int
    dims: tuple
    dim_strides: tuple
    threads: int
    slot: int
    block: int
    two_words: bool
    shuffle: bool  # 9-16 bytes: one byte shuffle a lane where the host has one (pshufb), else two words
    group_shuffle: bool  # back-to-back lanes of 3, 5, 6 or 7 bytes: one byte shuffle for up to five of them


@dataclass(frozen=True, eq=False)
class MultiAxisParams(Params):
    """``multi-axis-cycles``: ``outer`` blocks of ``n0`` slabs of ``blk`` words, slabs moved along their cycles
    (``s0``), each rolled inside by ``row_shifts`` and ``rshift`` on the way; ``pieces_per_cycle`` 0: whole
    cycles a thread, else cycles cut into pieces, their seams saved first."""

    CONSTANTS = (("runner", "multi-axis"),)
    outer: int
    n0: int
    s0: int
    blk: int
    row_dims: tuple
    row_shifts: tuple
    rowlen: int
    rshift: int
    pieces_per_cycle: int
    threads: int
    slots: int
    cycles: int


def plan_lanes(shape, strides, itemsize: int, axis: int, max_scratch_bytes=None) -> Step:
    """Plan :func:`run_lanes` for the lanes of an array along ``axis`` (``shape[axis] >= 2``)."""
    word, e, n, stride, dims, dim_strides, mode = lane_layout(shape, strides, itemsize, axis)
    dims, dim_strides = _merge_dims(dims, dim_strides)
    lanes = math.prod(dims)
    total = lanes * n * itemsize
    threads = cpu_threads._lanes(total, max(1, lanes))
    if mode == _LANE_SMALL:
        span = sum((d - 1) * abs(s) for d, s in zip(shape, strides)) + itemsize
        step = _plan_short_lanes(axis, n, itemsize, word, dims, dim_strides, lanes, threads, max_scratch_bytes,
                                 span)
        if step is not None:
            return step
        mode = _LANE_ROW  # not even two copies of the lane fit the budget
    lane_words = n * e
    cap = min(_budget(max_scratch_bytes) // word // threads, lane_words)
    tile = min(max(1, _T().tile_bytes // word), cap)
    # Threads' scratch rows on separate cache lines: sharing one made two threads slower than one.
    slot = cap if threads == 1 else -(-cap * word // 128) * 128 // word
    if threads * slot * word > _budget(max_scratch_bytes):
        slot = cap
    if mode == _LANE_ROW and lane_words <= cap and lane_words * word <= _T().copy_lane_bytes:
        mode = _LANE_COPY
    if mode == _LANE_COPY:
        name = "per-lane-copy"
        moved = 4 * total
    elif mode == _LANE_ROW:
        name = "per-lane-shift"
        moved = 2 * total + 2 * lanes * min(cap, lane_words // 2) * word  # at most, when every d fits
    elif cap >= lane_words:
        name = "per-lane-strided-gather"
        moved = 4 * total
    else:
        name = "per-lane-strided-reversal"
        moved = 4 * total
    params = LanesParams(mode=mode, word=word, e=e, n=n, stride=stride, dims=dims, dim_strides=dim_strides,
                         threads=threads, cap=cap, slot=slot, tile=tile)
    return Step(axis, 0, lanes, n * itemsize, 0, word, name, threads * slot * word, moved, strided=mode == _LANE_STRIDED,
                params=params)


def _plan_short_lanes(axis, n, itemsize, word, dims, dim_strides, lanes, threads, max_scratch_bytes, span):
    """The short-lane step (lanes of at most ``small_lane_bytes``), or None when its scratch does not fit
    or a lane's shift does not fit one of its words (lanes of more than 256 1-byte words: only a tuning
    override of ``small_lane_bytes`` makes those short).

    The kernels move words of ``lane_word`` bytes: the widest up to 8 that
    divides the lane's bytes and every lane pitch, wider than the element when
    it can be (4 uint8 lanes are uint32 words), so one-word lanes need no
    scratch and others need, per thread, two copies of the lane and the byte
    shifts of ``block`` lanes (``shift_block``, at least 1). Lanes that would
    move as 1- or 2-byte words take 8-byte windows at byte offsets instead
    (:func:`_plan_byte_lanes`) when its scratch fits.
    """
    lane_bytes = n * itemsize
    byte_strides = [s * word for s in dim_strides]
    lane_word = _word_for(lane_bytes, byte_strides)
    words = lane_bytes // lane_word
    windowed = 0 < _T().window_min_words <= words  # a lane's fixed doubling cost against a funnel shift a word
    if words > 1 and (lane_word < 4 or windowed):
        step = _plan_byte_lanes(axis, n, itemsize, dims, byte_strides, lanes, threads, max_scratch_bytes, span)
        if step is not None:
            return step
    if words > 1 << (8 * lane_word):
        return None  # the lanes' shifts wait in scratch as words of lane_word bytes: 1-byte words hold < 256
    least = 0 if words == 1 else 2 * words + 1
    budget_words = _budget(max_scratch_bytes) // lane_word
    while threads > 1 and threads * least > budget_words:
        threads -= 1
    if least > budget_words:
        return None
    block = 0 if words == 1 else min(_T().shift_block, budget_words // threads - 2 * words)
    need = 0 if words == 1 else 2 * words + block
    # Threads' scratch rows on separate cache lines: sharing one made two threads slower than one.
    # The scratch array is only 16-byte aligned, so rounding to 128 bytes is not enough: a spare
    # 128 bytes keeps one thread's last line off the next one's first (rotate/_backends/cpu/'s small rows
    # ran 3.7x slower by malloc's luck without it).
    slot = need if threads == 1 or need == 0 else (-(-need * lane_word // 128) * 128 + 128) // lane_word
    if threads * slot > budget_words:
        slot = need
    total = lanes * lane_bytes
    if words == 1:
        name, moved = "per-lane-word-rotate", 2 * total
    else:  # scratch: two copies written, one read back (the funnel reads two words per word)
        name = "per-lane-small-copy"
        moved = (5 if itemsize % lane_word == 0 else 6) * total + 2 * lanes * lane_word  # + byte shifts
    params = ShortLanesParams(word=lane_word, words=words, n=n, itemsize=itemsize, dims=dims,
                              dim_strides=tuple(s // lane_word for s in byte_strides), threads=threads, slot=slot,
                              block=block)
    return Step(axis, 0, lanes, lane_bytes, 0, lane_word, name, threads * slot * lane_word, moved, params=params)


def _plan_byte_lanes(axis, n, itemsize, dims, byte_strides, lanes, threads, max_scratch_bytes, span):
    """``per-lane-byte-window``: lanes of 2-256 bytes read and written as 8-byte windows at byte offsets.

    None when it cannot run: a big-endian host, a span of fewer than 8 bytes
    (a lane's window would leave the array), or a budget without room for one
    shift per thread (and, for lanes over 16 bytes, their rotated words but
    the last: all of a lane's loads come before its stores).
    """
    lane_bytes = n * itemsize
    if sys.byteorder != "little" or span < WINDOW_BYTES:
        return None
    # lanes over 16 bytes: two doubled copies (2 * 2L bytes, each rounded up to 8 with 8 to spare);
    # two words hold at most 16 bytes whatever two_words_max says
    two_words = lane_bytes <= min(_T().two_words_max, 2 * WINDOW_BYTES)
    buffered = 0 if two_words else 2 * ((2 * lane_bytes + 15) // 8)
    budget_words = _budget(max_scratch_bytes) // 8
    while threads > 1 and threads * (1 + buffered) > budget_words:
        threads -= 1
    if 1 + buffered > budget_words:
        return None
    block = min(_T().shift_block, budget_words // threads - buffered)
    need = block + buffered
    # threads' scratch rows a spare 128 bytes apart, as in _plan_short_lanes
    slot = need if threads == 1 else (-(-need * 8 // 128) * 128 + 128) // 8
    if threads * slot > budget_words:
        slot = need
    total = lanes * lane_bytes
    # the lanes once each way, the shifts through scratch; lanes over 16 bytes: also twice into scratch and back
    moved = (2 * total + 16 * lanes) if buffered == 0 else (5 * total + 16 * lanes)
    params = ByteLanesParams(
        lane_bytes=lane_bytes, n=n, itemsize=itemsize, dims=dims, dim_strides=tuple(byte_strides), threads=threads,
        slot=slot, block=block, two_words=two_words,
        shuffle=HAS_BYTE_SHUFFLE and WINDOW_BYTES < lane_bytes and two_words,
        group_shuffle=HAS_BYTE_SHUFFLE and lane_bytes in GROUP_LANES and byte_strides[-1] == lane_bytes)
    return Step(axis, 0, lanes, lane_bytes, 0, 1, "per-lane-byte-window", threads * slot * 8, moved, params=params)


_NO_MASKS = np.zeros(0, np.uint8)
_NO_MASKS.flags.writeable = False  # the masks' type (read-only) either way: one compiled kernel, not two


@functools.lru_cache(maxsize=None)
def _shuffle_masks(lane_bytes: int, grouped: bool = False) -> np.ndarray:
    masks = group_masks(lane_bytes) if grouped else shuffle_masks(lane_bytes)
    masks.flags.writeable = False
    return masks


def _byte_lane_masks(p: ByteLanesParams) -> np.ndarray:
    """The byte-shuffle masks a ``per-lane-byte-window`` step runs with (none: no shuffle)."""
    if p.shuffle:
        return _shuffle_masks(p.lane_bytes)
    if p.group_shuffle:
        return _shuffle_masks(p.lane_bytes, True)
    return _NO_MASKS


def run_lanes(flat: np.ndarray, origin: int, shifts: np.ndarray, step: Step) -> None:
    """Run a :func:`plan_lanes` step on the word array ``flat`` (the lanes' span, lane origin in words).

    ``shifts`` are integers of any dtype but uint64, one per lane in C order of the other axes
    (numpy.roll shifts, any value; each dtype compiles its own kernels).
    """
    p = step.params
    if isinstance(p, ByteLanesParams):
        scratch = runners.scratch_array(p.threads * p.slot, np.dtype(np.uint64))
        masks = _byte_lane_masks(p)
        kernel = _byte_lanes_kernel(*_byte_kind(p.lane_bytes, p.dim_strides[-1], masks, p.two_words))
        _team.run(kernel, p.threads, p.threads, flat, origin, p.lane_bytes, np.array(p.dims, np.int64),
                  np.array(p.dim_strides, np.int64), shifts, p.n, p.itemsize, p.threads, scratch,
                  scratch.view(np.uint8), p.slot, p.block, masks)
        return
    scratch = runners.scratch_array(p.threads * p.slot, flat.dtype)
    if isinstance(p, ShortLanesParams):
        wshift = p.word.bit_length() - 1
        kernel = _short_lanes_kernel(*_short_kind(p.words, p.itemsize, wshift))
        _team.run(kernel, p.threads, p.threads, flat, origin, p.words, np.array(p.dims, np.int64),
                  np.array(p.dim_strides, np.int64), shifts, p.n, p.itemsize, wshift, p.threads, scratch, p.slot,
                  p.block)
        return
    _team.run(_lanes_kernel(p.mode), p.threads, p.threads, flat, origin, p.n, p.stride, p.e,
              np.array(p.dims, np.int64), np.array(p.dim_strides, np.int64), shifts, p.threads, scratch, p.slot,
              p.cap, p.tile)


def register_axis(info, rotations):
    """The innermost rotation of a multi-axis roll of a contiguous array when rolling its axis alone is a
    roll of rows of at most ``split_inner_row_bytes`` (the tuning's) bytes on an array of at least
    ``split_min_bytes``, else None."""
    if len(rotations) < 2 or rotations[0][0] is None or not (info.c_contiguous or info.f_contiguous):
        return None
    if math.prod(info.shape) * info.itemsize < _T().split_min_bytes:
        return None
    if info.c_contiguous:
        inner = max(rotations, key=lambda r: r[0])
        row = math.prod(info.shape[inner[0]:])
    else:
        inner = min(rotations, key=lambda r: r[0])
        row = math.prod(info.shape[:inner[0] + 1])
    return inner if row * info.itemsize <= _T().split_inner_row_bytes else None


def plan_multiaxis(info, rotations, max_scratch_bytes=None):
    """One Step rolling every axis of ``rotations`` in one pass, or None when it cannot.

    ``rotations``: ``[(axis, length, shift)]`` with ``0 < shift < length``, at
    least two axes. None for layouts that are not C- or F-contiguous, for
    blocks larger than the scratch budget and, in arrays of ``split_min_bytes``
    or more, for blocks under ``cycle_min_block_bytes`` (the caller plans per axis).
    """
    if len(rotations) < 2 or rotations[0][0] is None:
        return None
    if info.c_contiguous:
        shape, c_axis = list(info.shape), {axis: axis for axis, _, _ in rotations}
    elif info.f_contiguous:
        shape, c_axis = list(info.shape[::-1]), {axis: info.ndim - 1 - axis for axis, _, _ in rotations}
    else:
        return None
    word = word_view_params(info.itemsize)
    e = info.itemsize // word
    shifts = [0] * len(shape)
    for axis, _length, s in rotations:
        shifts[c_axis[axis]] = s
    moving = [i for i, s in enumerate(shifts) if s]
    first, last = moving[0], moving[-1]
    outer = math.prod(shape[:first])
    n0 = shape[first]
    inner = math.prod(shape[last + 1:]) * e
    blk = math.prod(shape[first + 1:]) * e
    row_dims = tuple(shape[first + 1:last])
    row_shifts = tuple(shifts[first + 1:last])
    rowlen = shape[last] * inner
    rshift = shifts[last] * inner
    g = math.gcd(n0, shifts[first])
    cycle_len = n0 // g
    units = outer * g
    total = outer * n0 * blk * word
    threads = cpu_threads._lanes(total, max(1, n0))
    budget_words = _budget(max_scratch_bytes) // word
    if max_scratch_bytes is None and blk > budget_words:  # no bound given: a share of the array saves a pass
        budget_words = max(budget_words, int(total * _T().multiaxis_default_share) // word)
    if blk > budget_words:
        return None
    if blk * word < _T().cycle_min_block_bytes and total >= _T().split_min_bytes:
        return None  # a random access a small block: latency-bound (a pass an axis streams instead)
    if units >= threads:
        q, slots = 0, threads
        while slots > 1 and slots * blk > budget_words:
            slots -= 1
        threads = slots
    else:
        q = min(cycle_len, -(-threads // units))
        while q > 1 and units * q * blk > budget_words:
            q -= 1
        slots = units * q
        if slots * blk > budget_words:  # several cycles, one slot each, do not fit: walk them one thread at a time
            q, slots, threads = 0, 1, 1
    axes = tuple(axis for axis, _, _ in rotations)
    params = MultiAxisParams(outer=outer, n0=n0, s0=shifts[first], blk=blk, row_dims=row_dims, row_shifts=row_shifts,
                             rowlen=rowlen, rshift=rshift, pieces_per_cycle=q, threads=threads, slots=slots,
                             cycles=units)
    moved = 2 * total + 2 * slots * blk * word if q else 2 * total + 2 * units * blk * word
    return Step(axes, tuple(s for _, _, s in rotations), outer * n0, blk * word, (rowlen - rshift) * word, word,
                "multi-axis-cycles", slots * blk * word, moved, params=params)


def run_multiaxis(buf: np.ndarray, step: Step, p: MultiAxisParams) -> None:
    """Run a :func:`plan_multiaxis` step on the array's memory as a flat word array."""
    scratch = runners.scratch_array(p.slots * p.blk, buf.dtype)
    row_dims, row_shifts = np.array(p.row_dims, np.int64), np.array(p.row_shifts, np.int64)
    q, threads = p.pieces_per_cycle, p.threads
    if q == 0:
        _team.run(_cycles_whole, threads, threads, buf, p.outer, p.n0, p.s0, p.blk, row_dims, row_shifts, p.rowlen,
                  p.rshift, threads, scratch)
        return
    pieces = p.cycles * q
    _team.run(_cycle_seams, pieces, threads, buf, p.n0, p.s0, p.blk, q, scratch)
    _team.run(_cycle_pieces, pieces, threads, buf, p.n0, p.s0, p.blk, row_dims, row_shifts, p.rowlen, p.rshift, q,
              scratch)



runners.ROW_RUNNERS[MultiAxisParams] = run_multiaxis