"""CPU backend: in-place rotation of contiguous rows and of arbitrarily strided arrays.

Two entry points do the work, each with a ``plan_*`` twin that reports what it
would do without doing it:

* :func:`rotate_rows_inplace` / :func:`plan_rows` -- ``rows`` consecutive
  segments of ``seg`` unsigned words, each rotated left by ``k``.
* :func:`roll_strided` / :func:`plan_strided` -- ``numpy.roll`` along one axis
  of an array with arbitrary (also negative) strides and any fixed-size dtype.

Algorithms (``d = min(k, seg - k)``)
------------------------------------
``buffered-shift``
    ``d`` fits the scratch budget: save the ``d`` words that wrap around, memmove
    the other ``seg - d`` words by ``d``, put the saved words back.  Traffic is
    ``2*seg + 2*chunks*d`` words, i.e. about one memcpy.  The memmove is split
    into ``chunks`` parallel pieces; a piece's source overlaps the *next*
    piece's destination by ``d`` words (the seam), so every piece's seam is
    saved before any piece moves, and each piece fills its last ``d`` words from
    its neighbour's saved seam (cyclically, so the wrap-around is the same code).
``block-swap`` / ``block-swap+buffered-shift``
    ``d`` is too large to buffer: Gries--Mills block swaps.  Each swap exchanges
    the shorter block with the far end of the longer one (so the shorter block
    lands in its final place) and leaves a smaller rotation of the remainder.
    Swaps run tile by tile through a ``tile_bytes`` cache-resident tile per
    lane, tiles spread over the lanes.  The reduction stops as soon as the
    remaining ``d`` fits the budget and finishes with ``buffered-shift``; a
    rotation by exactly half is a single swap.  Array traffic is at most 2x a
    memcpy (``4*m`` words per swap of ``m``; the tile adds ``2*m`` L1 traffic,
    counted in ``bytes_moved``).
``block-swap+fused-shift``
    When the last swap would leave a shift by a small ``e = |n - 2k|``, that
    swap and the shift are fused into one pass (every word read and written
    once; seams between lanes and the ``e`` unpaired words saved first).
    Near ``seg/2`` this is ~1x memcpy instead of ~1.5x.  Scratch
    ``lanes * (e + tile)`` words, within the same budget.
``chain-serial`` / ``chain-lanes`` / ``chain-rows``
    ``d`` too large to buffer (block swaps planned, but a single half swap):
    the GPU's chain schedule (``rotate._schedule``: the same plan table
    format, tiles walked in chain order ``j, j + p, j + 2p, ...``), on one
    lane, with each row's chain positions cut into one run a lane, or
    (many rows) each lane walking its own rows. Lanes
    share nothing: every byte a lane reads that another lane writes is
    pre-read into scratch (all lanes, a phase of its own) before any lane
    writes (the next phase), so lanes never wait. Within a lane every tile is
    read into a ring of ``chain_ring`` tile buffers before the tile
    ``chain_ring - 1`` items back is written, so every reader classed
    ``SELF`` or ``RING`` has its bytes before they are overwritten, and the
    ``PRE`` bytes come from scratch. The planner picks the tile and chain
    step (``q``, ``q + 1`` or a short lattice vector's) that cost least:
    structured shifts pre-read a few KiB, random ones about ``sqrt(n T)``
    bytes a lane. One pass: every byte read and written once, against
    1.33-1.5x for block swaps and a shift.
``small-rows-copy``
    Rows of at most ``small_row_bytes``: copy the row twice into a per-lane
    scratch row and write the window at ``k`` back, one loop each (unsigned
    indices, compile-time counts for 2-8 words); rows are split over lanes.
    Avoids per-row call overhead for e.g. 10**6 rows of 8 words.
``small-rows-word-rotate``
    Rows of 2, 4 or 8 bytes made of narrower words (8 uint8, 2 float32): each
    row is one wider word, rotated by a bit rotation in a register; no scratch.

Many rows of larger segments are spread over lanes (each row rotated serially
with the algorithms above); few long rows are rotated one after another, each
using all lanes.

Strided arrays (``roll_strided``) are viewed as a grid of ``L`` rows (the roll
axis) by columns (all other element positions, and the words inside each
element).  Columns are taken in batches along the smallest-stride direction and
each batch is rolled with ``strided-buffered-shift`` (save ``d`` rows of the
batch, shift, restore) or, when even one column's ``d`` words exceed the
budget, ``strided-reversal`` (triple reversal by row swaps, no scratch, about
2x the traffic).  Words are the widest unsigned type (8, 4, 2 or 1 bytes)
dividing the itemsize and every stride, so bool, datetime, structured and
odd-sized (3, 10, 12 ...) dtypes all work without Python objects.

Scratch bound
-------------
Every call allocates at most ``min(scratch_bytes, max_scratch_bytes)`` bytes of
scratch (the tuning's ``scratch_bytes``, 8 MiB), whatever the array size, plus
O(ndim + log(seg)) integers of bookkeeping.  The budget is split evenly between
lanes; when it cannot hold even one lane's scratch, the step falls back to
``reversal`` (three in-place reversals, no scratch, about 2x the traffic), so
any bound, 0 included, is met.  Those sizes are fields of the CPU tuning
policy (``rotate/_tuning/cpu.py``), read at plan time: tests shrink them with
``rotate._tuning.cpu.override`` to reach the large-``d`` and many-seam paths on
small arrays.

Threads
-------
Lanes are independent pieces of work run by a team of Python threads
(``rotate._team``) on serial ``nogil`` kernels; their number is the tuning's
``lanes`` (default: ``numba.get_num_threads()``, which ``numba.set_num_threads``
changes) capped so that each lane gets at least ``min_lane_bytes`` of work.
A schedule with phases (seams saved before anything moves) runs one kernel a
phase. The result never depends on the number of lanes or threads;
``plan_*`` report scratch and traffic for the lane count in force when they
are called. No numba parallel region is entered, so no threading layer's
limits apply (workqueue's one region at a time, GNU OpenMP in a forked
child), and a first call compiles serial code only (two to three times
faster than ``parallel=True`` kernels: ``docs/results/cold-start-cpu.json``).

Different arrays may be rolled from different threads at once; one array
must not be rolled (or read) from two threads at once, as with any in-place
operation.
"""

from __future__ import annotations

import functools
import math
import os
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Optional

import numba
import numpy as np
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from . import _schedule as S
from . import _team
from ._bytemem import load_u64, store_u16, store_u32, store_u64
from ._arrays import host_span
from ._tuning.cpu import current as _T
from ._plan import INTERNAL, Params, Step

__all__ = ["rotate_rows_inplace", "plan_rows", "roll_strided", "plan_strided", "plan_rows_params",
           "plan_strided_params", "run_rows", "run_strided", "planner_settings"]

def _alias_slack(tile_bytes):
    """Spare scratch bytes chain-serial keeps to place its ring (tiles of at least the tuning's ``alias_slack``).

    The plan passes it to the kernel, which places the ring only where it has a page to spare
    (``_ring_offset`` is below 4096): the kernel never reads the tuning itself.
    """
    return _T().alias_slack if tile_bytes >= _T().alias_slack else 0

# Schedule op kinds for the contiguous path.
_SWAP = 0
_SHIFT = 1
_SWAP_SHIFT = 2

# Strided modes.
_STRIDED_SHIFT = 0
_STRIDED_REVERSAL = 1


# ---------------------------------------------------------------------------
# compiled kernels
# ---------------------------------------------------------------------------


@intrinsic
def _move(typingctx, dst, dst_start, src, src_start, count):
    """memmove ``count`` elements ``src[src_start:]`` -> ``dst[dst_start:]`` (overlap allowed).

    Lowers to ``llvm.memmove``, i.e. libc memmove: vectorised, overlap-safe,
    and as fast as ``np.copyto`` -- a hand-written loop over one array cannot be
    vectorised by LLVM because it cannot rule out aliasing.
    """
    sig = types.void(dst, types.intp, src, types.intp, types.intp)

    def codegen(context, builder, signature, args):
        dst_ty, _, src_ty, _, _ = signature.args
        dst_val, dst_idx, src_val, src_idx, n = args
        dst_arr = context.make_array(dst_ty)(context, builder, dst_val)
        src_arr = context.make_array(src_ty)(context, builder, src_val)
        itemsize = context.get_abi_sizeof(context.get_data_type(dst_ty.dtype))
        cgutils.raw_memmove(
            builder,
            builder.gep(dst_arr.data, [dst_idx]),
            builder.gep(src_arr.data, [src_idx]),
            n,
            itemsize,
        )
        return context.get_dummy_value()

    return sig, codegen


@njit(cache=True, inline="always")
def _swap_tiled(buf, i, j, m, scratch, scratch_lo, tile):
    """Swap ``buf[i:i+m]`` and ``buf[j:j+m]`` (disjoint) through a scratch tile."""
    for off in range(0, m, tile):
        count = min(tile, m - off)
        _move(scratch, scratch_lo, buf, i + off, count)
        _move(buf, i + off, buf, j + off, count)
        _move(buf, j + off, scratch, scratch_lo, count)


@njit(cache=True, inline="always")
def _shift_serial(buf, lo, n, k, scratch, scratch_lo):
    """Rotate ``buf[lo:lo+n]`` left by ``k`` with ``min(k, n-k)`` words of scratch."""
    if k <= n - k:
        _move(scratch, scratch_lo, buf, lo, k)
        _move(buf, lo, buf, lo + k, n - k)
        _move(buf, lo + n - k, scratch, scratch_lo, k)
    else:
        d = n - k
        _move(scratch, scratch_lo, buf, lo + k, d)
        _move(buf, lo + d, buf, lo, k)
        _move(buf, lo, scratch, scratch_lo, d)


# A Gries--Mills swap of ``m = min(k, n-k)`` pairs fused with the buffered shift by
# ``e = |n - 2k|`` that would follow it (``_SWAP_SHIFT``), rotating ``buf[lo:lo+n]``
# left by ``k`` in one pass: pair ``i`` moves the word at ``i`` (A side) and at ``k +
# i`` (B side) straight to their final places, so every word is read and written once
# (~1x memcpy instead of ~1.5x). A-side writes land ``e`` words behind the B-side
# reads, so each lane's first (or last) ``e`` B words are clobbered by its neighbour:
# those seams, and the ``e`` words nobody pairs (the carry), are saved first
# (``_swap_shift_seams``, a phase of its own), then the lanes move their pairs
# (``_swap_shift_pairs``), then the carry lands (``_swap_shift_carry``). Scratch:
# ``lanes * (e + tile)`` words, seams first, then one tile per lane.


@njit(cache=True, inline="always")
def _swap_shift_span(n, k, lanes, tile):
    m = min(k, n - k)
    n_tiles = (m + tile - 1) // tile
    tiles_per_lane = (n_tiles + lanes - 1) // lanes
    return m, n - 2 * m, tiles_per_lane * tile  # pairs, e, pairs per lane (the last lane may get fewer)


@njit(cache=True, nogil=True)
def _swap_shift_seams(buf, lo, n, k, lanes, scratch, tile, t_lo, t_hi):
    m, e, span = _swap_shift_span(n, k, lanes, tile)
    for t in range(t_lo, t_hi):
        if k > n - k:
            # [A_l | A_r | B], |A_l| = |B| = m, |A_r| = e; pairs ascend. Seam t: B words
            # [t*span - e, t*span) at positions lo + m + t*span; seam 0 is A_r, the carry.
            _move(scratch, t * e, buf, lo + m + t * span, e)
        else:
            # [A | B_l | B_r], |A| = |B_l| = m, |B_r| = e; pairs descend. Seam t: B words
            # [(t+1)*span, (t+1)*span + e), clobbered by lane t; the last seam starts at B
            # word m: it is B_r, the carry.
            _move(scratch, t * e, buf, lo + k + min(m, (t + 1) * span), e)


@njit(cache=True, nogil=True)
def _swap_shift_pairs(buf, lo, n, k, lanes, scratch, tile, t_lo, t_hi):
    m, e, span = _swap_shift_span(n, k, lanes, tile)
    tiles_lo = lanes * e
    for t in range(t_lo, t_hi):
        first = t * span
        last = min(m, first + span)
        if k > n - k:
            own = last - e if t < lanes - 1 else last  # B words below `own` are still in place
            for i in range(first, last, tile):
                c = min(tile, last - i)
                _move(scratch, tiles_lo + t * tile, buf, lo + i, c)
                direct = max(0, min(c, own - i))
                _move(buf, lo + i, buf, lo + k + i, direct)
                _move(buf, lo + i + direct, scratch, (t + 1) * e + (i + direct - own), c - direct)
                _move(buf, lo + m + i, scratch, tiles_lo + t * tile, c)
        else:
            own = first + e if t > 0 else first  # B words from `own` up are still in place
            for hi in range(last, first, -tile):
                c = min(tile, hi - first)
                j = hi - c
                _move(scratch, tiles_lo + t * tile, buf, lo + j, c)
                from_seam = max(0, min(c, own - j))
                _move(buf, lo + j, scratch, (t - 1) * e + (j - first), from_seam)
                _move(buf, lo + j + from_seam, buf, lo + k + j + from_seam, c - from_seam)
                _move(buf, lo + k + e + j, scratch, tiles_lo + t * tile, c)


@njit(cache=True, nogil=True)
def _swap_shift_carry(buf, lo, n, k, lanes, scratch, tile):
    m, e, _ = _swap_shift_span(n, k, lanes, tile)
    if k > n - k:
        _move(buf, lo + n - e, scratch, 0, e)
    else:
        _move(buf, lo + k, scratch, (lanes - 1) * e, e)


@njit(cache=True, nogil=True)
def _swap_lanes(buf, i, j, m, scratch, tile, tiles_per_lane, l_lo, l_hi):
    """Lanes ``l_lo..l_hi-1`` of a ``_SWAP`` op: each swaps its run of tiles of ``buf[i:i+m]`` and ``buf[j:j+m]``."""
    for lane in range(l_lo, l_hi):
        first = lane * tiles_per_lane * tile
        last = min(m, first + tiles_per_lane * tile)
        if last > first:
            _swap_tiled(buf, i + first, j + first, last - first, scratch, lane * tile, tile)


# A ``_SHIFT`` op: ``buf[lo:lo+n]`` rotated left by ``k`` as a shift by ``d = min(k, n-k)``
# in ``chunks`` chunks of ``n // chunks >= d`` words (so seams never overlap): every
# chunk's seam (the ``d`` words its neighbour's move overwrites) is saved first, in a
# phase of its own, then the chunks move.


@njit(cache=True, nogil=True)
def _shift_seams(buf, lo, n, k, chunks, scratch, c_lo, c_hi):
    d = min(k, n - k)
    chunk_len = n // chunks
    for t in range(c_lo, c_hi):
        start = lo + t * chunk_len
        if k <= n - k:  # shift left by d: chunk t's source runs d words into chunk t+1
            _move(scratch, t * d, buf, start, d)
        else:  # shift right by d: the mirror image, the seam is a chunk's last d words
            stop = lo + n if t == chunks - 1 else start + chunk_len
            _move(scratch, t * d, buf, stop - d, d)


@njit(cache=True, nogil=True)
def _shift_chunks(buf, lo, n, k, chunks, scratch, c_lo, c_hi):
    d = min(k, n - k)
    chunk_len = n // chunks
    for t in range(c_lo, c_hi):
        start = lo + t * chunk_len
        stop = lo + n if t == chunks - 1 else start + chunk_len
        if k <= n - k:
            _move(buf, start, buf, start + d, stop - start - d)
            after = t + 1 if t + 1 < chunks else 0
            _move(buf, stop - d, scratch, after * d, d)
        else:
            _move(buf, start + d, buf, start, stop - start - d)
            before = t - 1 if t > 0 else chunks - 1
            _move(buf, start, scratch, before * d, d)


def _rotate_segment_lanes(buf, seg_lo, ops, scratch, lanes, tile):
    """Run a schedule on one segment, each op spread over ``lanes`` threads, phase after phase."""
    for op, a, b, c, e in ops.tolist():
        if op == _SWAP:
            n_tiles = -(-c // tile)
            active = min(lanes, n_tiles)
            _team.run(_swap_lanes, active, active, buf, seg_lo + a, seg_lo + b, c, scratch, tile, -(-n_tiles // active))
        elif op == _SWAP_SHIFT:  # lo, n, k, lanes
            for phase in (_swap_shift_seams, _swap_shift_pairs):
                _team.run(phase, e, e, buf, seg_lo + a, b, c, e, scratch, tile)
            _swap_shift_carry(buf, seg_lo + a, b, c, e, scratch, tile)
        else:  # lo, n, k, chunks
            for phase in (_shift_seams, _shift_chunks):
                _team.run(phase, e, e, buf, seg_lo + a, b, c, e, scratch)


@njit(cache=True, nogil=True)
def _rotate_rows_lanes(buf, rows, seg, ops, scratch, lanes, lane_scratch, tile, l_lo, l_hi):
    """Spread rows over lanes; each lane (this call: ``l_lo..l_hi-1``) runs the schedule serially on its rows."""
    rows_per_lane = (rows + lanes - 1) // lanes
    for lane in range(l_lo, l_hi):
        scratch_lo = lane * lane_scratch
        for r in range(lane * rows_per_lane, min(rows, (lane + 1) * rows_per_lane)):
            row_lo = r * seg
            for o in range(ops.shape[0]):
                if ops[o, 0] == _SWAP:
                    _swap_tiled(buf, row_lo + ops[o, 1], row_lo + ops[o, 2], ops[o, 3], scratch, scratch_lo, tile)
                else:
                    _shift_serial(buf, row_lo + ops[o, 1], ops[o, 2], ops[o, 3], scratch, scratch_lo)


# Short rows, one shift for all. Indices are cast to unsigned (``_U``): numba
# wraps a negative signed index around, and that check in every access kept
# the loops from vectorising. The loops live in their own compiled function
# called from the lanes' kernel (inlined into a numba prange body, the same loops
# ran 3-4x slower in rotate._rows), with loop counts fixed at compile time for common rows.

_U = np.uint64


@njit(cache=True, inline="always")
def _small_rows_copy(buf, r0, r1, seg, k, scratch, s0):
    """Rows ``r0..r1-1``: each copied twice into ``scratch[s0:s0+2*seg]``, the window at ``k`` written back."""
    for r in range(r0, r1):
        at = _U(r * seg)
        for j in range(seg):
            v = buf[_U(at + j)]
            scratch[_U(s0 + j)] = v
            scratch[_U(s0 + seg + j)] = v
        src = _U(s0 + k)
        for j in range(seg):
            buf[_U(at + j)] = scratch[_U(src + j)]


@njit(cache=True)
def _small_rows_run(buf, r0, r1, seg, k, scratch, s0):
    """:func:`_small_rows_copy` with the row length a compile-time constant for 2-8 words."""
    if seg == 2:  # counts known at compile time: the loops unroll and vectorise
        _small_rows_copy(buf, r0, r1, 2, k, scratch, s0)
    elif seg == 3:
        _small_rows_copy(buf, r0, r1, 3, k, scratch, s0)
    elif seg == 4:
        _small_rows_copy(buf, r0, r1, 4, k, scratch, s0)
    elif seg == 6:
        _small_rows_copy(buf, r0, r1, 6, k, scratch, s0)
    elif seg == 8:
        _small_rows_copy(buf, r0, r1, 8, k, scratch, s0)
    else:
        _small_rows_copy(buf, r0, r1, seg, k, scratch, s0)


@njit(cache=True)
def _word_rows_run(buf, r0, r1, r, bits):
    """Rows ``r0..r1-1``, one word each: element rotation left by ``k`` is a right bit rotation by ``r``."""
    for i in range(r0, r1):
        x = _U(buf[_U(i)])
        buf[_U(i)] = (x >> r) | (x << (bits - r))  # 0 < r < bits: no shift by the full width


@njit(cache=True, nogil=True)
def _rotate_word_rows(buf, rows, r, bits, lanes, l_lo, l_hi):
    """Rows of one word (8 uint8 as one uint64): a bit rotation in a register, no scratch."""
    rows_per_lane = (rows + lanes - 1) // lanes
    for lane in range(l_lo, l_hi):
        _word_rows_run(buf, lane * rows_per_lane, min(rows, (lane + 1) * rows_per_lane), _U(r), _U(bits))


@njit(cache=True)
def _rotate_word_rows_serial(buf, rows, r, bits):
    """One lane of ``_rotate_word_rows``."""
    _word_rows_run(buf, 0, rows, _U(r), _U(bits))


@njit(cache=True, inline="always")
def _shr128(hi, lo, s):
    """``(hi, lo)`` as one 128-bit value shifted right by ``s`` (uint64, below 128) bits."""
    if s == 0:
        return hi, lo
    if s < 64:
        return hi >> s, (lo >> s) | (hi << (_U(64) - s))
    return _U(0), hi >> (s - _U(64))


@njit(cache=True, inline="always")
def _shl128(hi, lo, s):
    """``(hi, lo)`` as one 128-bit value shifted left by ``s`` (uint64, below 128) bits."""
    if s == 0:
        return hi, lo
    if s < 64:
        return (hi << s) | (lo >> (_U(64) - s)), lo << s
    return lo << (s - _U(64)), _U(0)


@njit(cache=True, inline="always")
def _rotated_chunk(buf, at, row_bytes, p, wrap, lo_shift, hi_shift):
    """Bytes ``p .. p + 7`` (mod ``row_bytes``) of the row at ``at``, from loads within the row only: the
    8 bytes at ``p``, or where they wrap (``wrap``) the window ending the row shifted down by ``lo_shift``
    bits and the row's first 8 bytes shifted up by ``hi_shift``."""
    if wrap:
        return (load_u64(buf, _U(at + row_bytes - 8)) >> lo_shift) | (load_u64(buf, _U(at)) << hi_shift)
    return load_u64(buf, _U(at + p))


@njit(cache=True)
def _register_rows_run64(buf, r0, r1, row_bytes, b):
    """``_register_rows_run`` for rows of 33-64 bytes: eight 8-byte chunks of the rotated row (at 0, 8, ...
    48, each at most 8 before the end, overlapping where the row is shorter), all loaded before any store."""
    e = row_bytes - 8
    o4, o5, o6 = min(32, e), min(40, e), min(48, e)
    p0, p1, p2, p3 = b % row_bytes, (8 + b) % row_bytes, (16 + b) % row_bytes, (24 + b) % row_bytes
    p4, p5, p6, p7 = (o4 + b) % row_bytes, (o5 + b) % row_bytes, (o6 + b) % row_bytes, (e + b) % row_bytes
    w0, w1, w2, w3 = p0 > e, p1 > e, p2 > e, p3 > e
    w4, w5, w6, w7 = p4 > e, p5 > e, p6 > e, p7 > e
    for r in range(r0, r1):
        at = r * row_bytes
        v0 = _rotated_chunk(buf, at, row_bytes, p0, w0, _U(8 * (p0 - e)), _U(8 * (row_bytes - p0)))
        v1 = _rotated_chunk(buf, at, row_bytes, p1, w1, _U(8 * (p1 - e)), _U(8 * (row_bytes - p1)))
        v2 = _rotated_chunk(buf, at, row_bytes, p2, w2, _U(8 * (p2 - e)), _U(8 * (row_bytes - p2)))
        v3 = _rotated_chunk(buf, at, row_bytes, p3, w3, _U(8 * (p3 - e)), _U(8 * (row_bytes - p3)))
        v4 = _rotated_chunk(buf, at, row_bytes, p4, w4, _U(8 * (p4 - e)), _U(8 * (row_bytes - p4)))
        v5 = _rotated_chunk(buf, at, row_bytes, p5, w5, _U(8 * (p5 - e)), _U(8 * (row_bytes - p5)))
        v6 = _rotated_chunk(buf, at, row_bytes, p6, w6, _U(8 * (p6 - e)), _U(8 * (row_bytes - p6)))
        v7 = _rotated_chunk(buf, at, row_bytes, p7, w7, _U(8 * (p7 - e)), _U(8 * (row_bytes - p7)))
        store_u64(buf, _U(at), v0)
        store_u64(buf, _U(at + 8), v1)
        store_u64(buf, _U(at + 16), v2)
        store_u64(buf, _U(at + 24), v3)
        store_u64(buf, _U(at + o4), v4)
        store_u64(buf, _U(at + o5), v5)
        store_u64(buf, _U(at + o6), v6)
        store_u64(buf, _U(at + e), v7)


@njit(cache=True)
def _register_rows_run(buf, r0, r1, row_bytes, b):
    """Rows ``r0..r1-1`` of ``row_bytes`` (3-64) bytes of ``buf`` (bytes), each rotated left by ``b`` bytes
    in registers: the row read as one little-endian integer is rotated right by ``8 b`` bits.

    Rows of up to 8 bytes are read as the 8-byte window at the row (the last few rows: the window that
    ends the span) and written back as two overlapping stores of their own bytes only; rows of 9-16 bytes
    as their first and last 8 bytes; rows of 17-32 bytes as four 8-byte chunks of the rotated row (at 0,
    8, 16 and 8 before the end, overlapping where the row is shorter), each loaded whole or, where its
    source wraps, from two loads; rows of 33-64 bytes as eight (``_register_rows_run64``). Loop-invariant
    shift counts: no per-row branch but the span's end.
    """
    if row_bytes > 32:
        _register_rows_run64(buf, r0, r1, row_bytes, b)
        return
    if row_bytes > 16:
        o2 = min(16, row_bytes - 8)
        p0 = b % row_bytes
        p1 = (8 + b) % row_bytes
        p2 = (o2 + b) % row_bytes
        p3 = (row_bytes - 8 + b) % row_bytes
        w0, w1, w2, w3 = p0 + 8 > row_bytes, p1 + 8 > row_bytes, p2 + 8 > row_bytes, p3 + 8 > row_bytes
        e = row_bytes - 8  # the window ending the row starts here
        for r in range(r0, r1):
            at = r * row_bytes
            v0 = _rotated_chunk(buf, at, row_bytes, p0, w0, _U(8 * (p0 - e)), _U(8 * (row_bytes - p0)))
            v1 = _rotated_chunk(buf, at, row_bytes, p1, w1, _U(8 * (p1 - e)), _U(8 * (row_bytes - p1)))
            v2 = _rotated_chunk(buf, at, row_bytes, p2, w2, _U(8 * (p2 - e)), _U(8 * (row_bytes - p2)))
            v3 = _rotated_chunk(buf, at, row_bytes, p3, w3, _U(8 * (p3 - e)), _U(8 * (row_bytes - p3)))
            store_u64(buf, _U(at), v0)
            store_u64(buf, _U(at + 8), v1)
            store_u64(buf, _U(at + o2), v2)
            store_u64(buf, _U(at + e), v3)
        return
    s = _U(8 * b)
    w = _U(8 * row_bytes)
    t = w - s
    if row_bytes <= 8:
        mask = (_U(1) << w) - _U(1)  # rows of 8 bytes are words: never here
        last = buf.shape[0] - 8
        tail = _U(8 * (row_bytes - 4)) if row_bytes >= 4 else _U(8)
        for r in range(r0, r1):
            at = r * row_bytes
            if at <= last:
                x = load_u64(buf, _U(at))
            else:
                x = load_u64(buf, _U(last)) >> _U(8 * (at - last))
            v = x & mask
            y = ((v >> s) | (v << t)) & mask
            if row_bytes >= 4:
                store_u32(buf, _U(at), y)
                store_u32(buf, _U(at + row_bytes - 4), y >> tail)
            else:
                store_u16(buf, _U(at), y)
                store_u16(buf, _U(at + 1), y >> tail)
        return
    top = ~_U(0) >> (_U(128) - w)
    high = _U(8 * (16 - row_bytes))
    back = _U(8 * (row_bytes - 8))
    for r in range(r0, r1):
        at = r * row_bytes
        lo = load_u64(buf, _U(at))
        hi = load_u64(buf, _U(at + row_bytes - 8)) >> high  # the row's bytes 8 .. row_bytes - 1
        a_hi, a_lo = _shr128(hi, lo, s)
        c_hi, c_lo = _shl128(hi, lo, t)
        o_hi, o_lo = (a_hi | c_hi) & top, a_lo | c_lo
        store_u64(buf, _U(at), o_lo)
        store_u64(buf, _U(at + row_bytes - 8), _shr128(o_hi, o_lo, back)[1])


@njit(cache=True, nogil=True)
def _rotate_register_rows(buf, rows, row_bytes, b, lanes, l_lo, l_hi):
    """Rows of 3-64 bytes (not 4 or 8) rotated in registers (``_register_rows_run``); rows over lanes."""
    per = (rows + lanes - 1) // lanes
    for lane in range(l_lo, l_hi):
        _register_rows_run(buf, lane * per, min(rows, (lane + 1) * per), row_bytes, b)


@njit(cache=True, nogil=True)
def _rotate_small_rows(buf, rows, seg, k, scratch, lanes, lane_stride, l_lo, l_hi):
    """Short rows: each row twice into a lane's scratch row, its rotated window written back."""
    rows_per_lane = (rows + lanes - 1) // lanes
    for lane in range(l_lo, l_hi):
        _small_rows_run(buf, lane * rows_per_lane, min(rows, (lane + 1) * rows_per_lane), seg, k, scratch,
                        lane * lane_stride)


@njit(cache=True, inline="always")
def _reverse_rows(flat, base, s, t, gb, r0, r1):
    """Reverse rows ``r0..r1-1`` of a (rows x gb) strided block, swapping whole rows."""
    lo = r0
    hi = r1 - 1
    while lo < hi:
        a = base + lo * s
        b = base + hi * s
        for g in range(gb):
            x = flat[a + g * t]
            flat[a + g * t] = flat[b + g * t]
            flat[b + g * t] = x
        lo += 1
        hi -= 1


@njit(cache=True, nogil=True)
def _roll_strided_words(flat, origin, n_rows, s, k, n_cols, t, batch, outer_shape, outer_strides,
                        mode, scratch, lanes, lane_scratch, l_lo, l_hi):
    """Rotate rows left by ``k`` in every (n_rows x batch) block of a strided word grid.

    Word (row r, column g, outer index o) lives at
    ``flat[origin + r*s + g*t + sum(o_i * outer_strides_i)]``; strides may be negative.
    """
    n_outer = 1
    for dim in range(outer_shape.shape[0]):
        n_outer *= outer_shape[dim]
    n_batches = (n_cols + batch - 1) // batch
    units = n_outer * n_batches
    units_per_lane = (units + lanes - 1) // lanes
    d = min(k, n_rows - k)
    for lane in range(l_lo, l_hi):
        s0 = lane * lane_scratch
        for unit in range(lane * units_per_lane, min(units, (lane + 1) * units_per_lane)):
            outer = unit // n_batches
            g0 = (unit % n_batches) * batch
            gb = min(batch, n_cols - g0)
            base = origin + g0 * t
            rest = outer
            for dim in range(outer_shape.shape[0] - 1, -1, -1):
                base += (rest % outer_shape[dim]) * outer_strides[dim]
                rest //= outer_shape[dim]
            if mode == _STRIDED_SHIFT:
                if k <= n_rows - k:
                    for r in range(d):
                        for g in range(gb):
                            scratch[s0 + r * gb + g] = flat[base + r * s + g * t]
                    for r in range(n_rows - d):
                        for g in range(gb):
                            flat[base + r * s + g * t] = flat[base + (r + d) * s + g * t]
                    for r in range(d):
                        for g in range(gb):
                            flat[base + (n_rows - d + r) * s + g * t] = scratch[s0 + r * gb + g]
                else:
                    for r in range(d):
                        for g in range(gb):
                            scratch[s0 + r * gb + g] = flat[base + (n_rows - d + r) * s + g * t]
                    for r in range(n_rows - 1, d - 1, -1):
                        for g in range(gb):
                            flat[base + r * s + g * t] = flat[base + (r - d) * s + g * t]
                    for r in range(d):
                        for g in range(gb):
                            flat[base + r * s + g * t] = scratch[s0 + r * gb + g]
            else:
                _reverse_rows(flat, base, s, t, gb, 0, k)
                _reverse_rows(flat, base, s, t, gb, k, n_rows)
                _reverse_rows(flat, base, s, t, gb, 0, n_rows)


# ---------------------------------------------------------------------------
# planning (pure Python, shared by plan_* and the executors so they agree)
# ---------------------------------------------------------------------------


def _lanes(work_bytes: int, units: int, max_lanes=None) -> int:
    wanted = _T().lanes if _T().lanes is not None else usable_threads()
    if max_lanes is not None:
        wanted = min(int(wanted), max_lanes)
    return max(1, min(int(wanted), units, work_bytes // _T().min_lane_bytes))


def _budget(max_scratch_bytes) -> int:
    """The scratch bound in force: the module's, tightened by the caller's."""
    if max_scratch_bytes is None:
        return _T().scratch_bytes
    return min(_T().scratch_bytes, int(max_scratch_bytes))


def _segment_schedule(seg: int, k: int, shift_cap: int, chunks_wanted: int, tile: int = 0):
    """Gries--Mills reduction of a left rotation of ``seg`` by ``k`` to a buffered shift.

    Returns a list of ops ``(kind, a, b, c, chunks)``:
    ``(_SWAP, i, j, m, 0)`` swaps words ``[i, i+m)`` and ``[j, j+m)``;
    ``(_SHIFT, lo, n, k, chunks)`` rotates ``[lo, lo+n)`` left by ``k`` with a
    buffered shift split into ``chunks`` pieces;
    ``(_SWAP_SHIFT, lo, n, k, lanes)`` (only when ``tile`` is given) does the last
    swap and the shift after it in one pass.
    """
    ops = []
    lo, n = 0, seg
    while 0 < k < n:
        d = min(k, n - k)
        if d <= shift_cap:
            ops.append((_SHIFT, lo, n, k, max(1, min(chunks_wanted, n // d))))
            break
        e = abs(n - 2 * k)
        if tile and 0 < e and e + min(tile, d) <= shift_cap:
            tile_eff = min(tile, d)
            n_tiles = -(-d // tile_eff)
            lanes = max(1, min(chunks_wanted, n_tiles))
            tiles_per_lane = -(-n_tiles // lanes)
            if tiles_per_lane * tile_eff < e:  # every lane but the last must cover its seam
                lanes = max(1, d // (-(-e // tile_eff) * tile_eff))
                tiles_per_lane = -(-n_tiles // lanes)
            lanes = -(-n_tiles // tiles_per_lane)  # drop lanes that would get no pairs
            ops.append((_SWAP_SHIFT, lo, n, k, lanes))
            break
        if k <= n - k:
            # [A | B_l | B_r] with |B_r| = |A|: swap A, B_r -> A is final at the end.
            ops.append((_SWAP, lo, lo + n - k, k, 0))
            n -= k
        else:
            # [A_l | A_r | B] with |A_l| = |B|: swap A_l, B -> B is final at the front.
            m = n - k
            ops.append((_SWAP, lo, lo + k, m, 0))
            lo += m
            n -= m
            k -= m
    return ops


def _schedule_cost(ops, tile: int, swap_lanes: int):
    """(scratch words, words moved) of one segment's schedule."""
    scratch = 0
    moved = 0
    for kind, _a, b, c, chunks in ops:
        if kind == _SWAP:
            m = c
            n_tiles = -(-m // tile)
            scratch = max(scratch, min(swap_lanes, n_tiles) * min(tile, m))
            moved += 6 * m  # array: read+write both blocks; tile: write+read one
        elif kind == _SWAP_SHIFT:
            n, k, lanes = b, c, chunks
            d = min(k, n - k)
            e = n - 2 * d
            scratch = max(scratch, lanes * (e + min(tile, d)))
            moved += 6 * d + 2 * lanes * e + 2 * e
        else:
            n, k = b, c
            d = min(k, n - k)
            scratch = max(scratch, chunks * d)
            moved += 2 * n + 2 * chunks * d
    return scratch, moved


def _aliasing(distance_bytes: int, window: int = 16) -> bool:
    """Whether a forward copy whose destination lies ``distance_bytes`` after its source suffers 4 KiB
    aliasing: destination 1-15 bytes ahead of the source modulo 4096 made a 16 KiB copy 7-8x slower on
    this host (each load waits for a store it does not depend on); 0 and 16 or more did not
    (``benchmarks/probes/cpu_aliasing.py``). The chain's straight copies, streaming from memory, pass
    ``window=32``: 16-31 bytes ahead ran a 256 MiB roll at 3.6-3.7x copyto, 32 and more at 0.92-1.02x."""
    return 1 <= distance_bytes % 4096 < window


def _ops_alias(ops, itemsize: int) -> bool:
    """Whether a block-swap schedule's copies from one part of the row to another alias (``_aliasing``):
    a swap's middle copy, a fused swap-shift's direct copy, a buffered shift's forward move."""
    for kind, a, b, c, _ in ops:
        if kind == _SWAP and _aliasing((a - b) * itemsize):
            return True
        if kind in (_SWAP_SHIFT, _SHIFT) and _aliasing(-c * itemsize):
            return True
    return False


def _plan_rows(rows: int, seg: int, k: int, itemsize: int, max_scratch_bytes=None):
    """Decide how to rotate within the scratch bound; returns (name, scratch_words, words_moved, runner)."""
    budget = _budget(max_scratch_bytes)
    for max_lanes in (None, 1):  # fewer lanes need less scratch
        plan = _plan_rows_lanes(rows, seg, k, itemsize, budget, max_lanes)
        if plan[1] * itemsize <= budget:
            # Block swaps: the one-pass chain schedule instead. Measured on this 2-core host,
            # 256 MiB (docs/tuning.md, "CPU: the chain"): one thread, swaps 1.0-4.8x np.copyto,
            # the chain 0.9-1.1x; two threads, swaps 0.8-2.9x (the fused pass moves word by word).
            # A rotation by exactly half stays one swap (every byte read and written once already).
            # Swaps whose copies alias at 4 KiB (float64 n/2 + 1: 1.6-2.0x copyto on two
            # threads, the chain 1.0x on one) take the chain too: its ring is placed.
            swaps = plan[0].startswith("block-swap")
            single_swap = swaps and len(plan[3][3]) == 1 and plan[3][3][0][0] == _SWAP
            if swaps and not single_swap:
                # The chain, one pass on every lane (issue #36): few long rows cut into lanes that
                # share each row (chain-lanes, chain-serial on one lane), or many rows spread over lanes,
                # each lane walking its own rows (chain-rows).
                lanes = plan[3][1]
                if plan[3][0] == "rows" and lanes > 1:
                    # Many rows spread over lanes: each lane runs chain-serial on its own rows.
                    chain = _plan_chain(rows, seg * itemsize, k * itemsize, budget // lanes, 1)
                    if chain is not None:
                        scratch_bytes, moved_bytes, runner = chain
                        runner = ("chain-rows", lanes) + runner[2:]
                        return ("chain-rows", -(-lanes * scratch_bytes // itemsize), moved_bytes // itemsize,
                                runner)
                    # Swaps whose copies alias at 4 KiB: one lane walks the rows in turn rather.
                    lanes = 1 if _ops_alias(plan[3][3], itemsize) else 0
                if lanes:
                    chain = _plan_chain(rows, seg * itemsize, k * itemsize, budget, lanes)
                    if chain is not None:
                        scratch_bytes, moved_bytes, runner = chain
                        name = "chain-lanes" if runner[1] > 1 else "chain-serial"
                        return name, -(-scratch_bytes // itemsize), moved_bytes // itemsize, runner
            return plan
    # Not even one lane's scratch fits: three reversals in place, no scratch.
    _, _, moved, _ = _plan_strided((rows, seg), (seg * itemsize, itemsize), itemsize, seg - k, 1, 0)
    return "reversal", 0, moved // itemsize, ("reversal",)


# The chain planner's table builders, interpreted (the same Python functions, uncompiled) while that is
# cheap: compiling them costs ~2.5 s on a fresh install (issue #32); interpreted, a random shift's plan
# takes 30-70 ms at 64 MiB, 80-190 ms at 256 MiB (compiled: 0.5 ms, 2.5-4 ms); 1 GiB up to 4.7 s.
_INTERPRET_TILES = 1 << 18  # at most this many tiles times tries (rows up to ~256 MiB) are interpreted
_INTERPRET_SECONDS = 1.0  # a process that has interpreted this long compiles: the compile then pays off
_interpreted = [0.0]


def _chain_builders(n: int, tuning):
    """``(layout, pre_bytes)`` for ``_plan_chain``: compiled if already compiled in this process, if the
    interpreter would take long (many tiles), or once this process has interpreted ``_INTERPRET_SECONDS``;
    else the uncompiled functions (same results: the integers stay far below 2**63 there)."""
    layout, pre_bytes = S.compiled_free_builders()
    if pre_bytes.signatures or _interpreted[0] >= _INTERPRET_SECONDS:
        return layout, pre_bytes
    tiles = sum(S.tile_count(n, 0, int(t)) for t in tuning.chain_tile_bytes if 16 <= int(t) < n)
    if tiles * (2 + max(0, int(tuning.chain_tries))) > _INTERPRET_TILES:
        return layout, pre_bytes
    return S.layout_free_lanes, S.free_pre_bytes


def compile_chain_builders() -> None:
    """Compile the chain planner's table builders (``rotate.warmup``): rows too long to interpret need them."""
    layout, pre_bytes = S.compiled_free_builders()
    n, tile_bytes, ring = 1 << 16, 1 << 12, int(_T().chain_ring)
    m_max = S.max_tiles(n, tile_bytes)
    pre_bytes(n, n // 3, 0, tile_bytes, 1, m_max, ring, 0)
    layout(n, n // 3, 0, tile_bytes, 1, m_max, ring, np.zeros(S.table_stride(m_max), np.int64), 0)


def _count_interpreted(layout, began: float) -> None:
    if layout is S.layout_free_lanes:
        _interpreted[0] += time.perf_counter() - began


def _ring_cost(n: int, k: int, tile_bytes: int, chain: int, lane_steps: int, ring: int, tuning) -> int:
    """What a chain candidate's ring round trips cost, in bytes of traffic (0 when nothing is copied
    straight: then every byte takes the ring, whichever the candidate). A third to all of a row went
    through the ring where pre-reads were counted alone (uint8, 256 MiB, one thread: ring share 0.96,
    1.66x copyto, against 0.00-0.02 and 0.98-1.09x for other random shifts)."""
    if not tuning.chain_direct or not tuning.chain_ring_byte_cost:
        return 0
    return tuning.chain_ring_byte_cost * S.free_ring_bytes(n, k, 0, tile_bytes, chain, lane_steps, ring,
                                                           max(1, int(tuning.chain_ring_samples)))


def _plan_chain(rows: int, n: int, k: int, budget: int, lanes: int):
    """The chain schedule for rows of ``n`` bytes rotated left by ``k`` bytes on ``lanes`` lanes, or None.

    Each row's chain positions are cut into ``lanes`` runs that share nothing
    (``rotate._schedule.layout_free_lanes``): the hooks class each reader as
    earlier in its lane's walk (``SELF``), at most ``chain_ring - 1`` items
    later in it (``RING``: read ahead), or ``PRE`` (another lane's, or further
    back in this one). Tries every tile of ``chain_tile_bytes`` with the chain
    steps ``q``, ``q + 1`` and ``chain_tries`` steps from short lattice
    vectors (``lattice_chains``), and takes the one of least cost: three
    times its pre-read bytes (read, written to scratch, read back) plus
    ``chain_item_bytes`` an item (ties: the larger tile), whose pre-reads and
    rings fit ``budget``. Returns ``(scratch_bytes, bytes_moved, runner)``.
    """
    tuning = _T()
    layout, pre_bytes = _chain_builders(n, tuning)
    chains = S.lattice_chains  # a few dozen lattice points: interpreted, never compiled
    ring = tuning.chain_ring
    began = time.perf_counter()
    best = None
    for tile_bytes in sorted({int(t) for t in tuning.chain_tile_bytes}, reverse=True):
        if tile_bytes < 16 or tile_bytes % 16 or tile_bytes >= n:
            continue
        m = S.tile_count(n, 0, tile_bytes)
        lane_steps = -(-m // max(1, min(lanes, m)))
        used = S.free_lane_count(m, lane_steps)
        rings = used * (ring * tile_bytes + _alias_slack(tile_bytes))
        steps = np.zeros(2 + max(0, int(tuning.chain_tries)), np.int64)
        count = chains(n, k, 0, tile_bytes, ring, steps)
        # The lattice's steps first (a random shift's best), then q and q + 1 (a structured shift's):
        # each count stops once it passes what the best so far allows, so beaten steps cost little.
        for chain in list(steps[2:count]) + list(steps[:min(2, count)]):
            ringed = _ring_cost(n, k, tile_bytes, int(chain), lane_steps, ring, tuning)
            limit = budget - 32 - rings
            if best is not None:
                limit = min(limit, (best[0][0] - m * tuning.chain_item_bytes - ringed) // 3)
            if limit < 0:
                continue
            pre = pre_bytes(n, k, 0, tile_bytes, int(chain), lane_steps, ring, limit)
            if pre > limit:
                continue
            key = (3 * pre + ringed + m * tuning.chain_item_bytes, -tile_bytes)
            if best is None or key < best[0]:
                best = (key, tile_bytes, int(chain), lane_steps, used)
    if best is None:
        _count_interpreted(layout, began)
        return None
    _, tile_bytes, chain, lane_steps, used = best
    m_max = S.max_tiles(n, tile_bytes)
    table = np.zeros(S.table_stride(m_max), np.int64)
    scratch_row = layout(n, k, 0, tile_bytes, chain, lane_steps, ring, table, 0)
    _count_interpreted(layout, began)
    if scratch_row < 0:
        return None
    scratch_row = S.align_up(scratch_row) + 16  # spans are over-copied to 16-byte multiples
    scratch = scratch_row + used * (ring * tile_bytes + _alias_slack(tile_bytes))
    if scratch > budget:
        return None
    moved = rows * (2 * n + 3 * (scratch_row - 16))  # each pre-read byte: read, written, read back
    # Straight copies row to row unless they would alias at 4 KiB (destination - source is -k, or n - k
    # where the source wraps; 1-31 bytes ahead): the ring, placed by _ring_offset, keeps both streams apart.
    direct = bool(tuning.chain_direct) and not (_aliasing(-k, 32) or _aliasing(n - k, 32))
    return scratch, moved, ("chain", used, tile_bytes, chain, table, scratch_row, lane_steps, direct)


def _plan_rows_lanes(rows: int, seg: int, k: int, itemsize: int, budget: int, max_lanes):
    total_bytes = rows * seg * itemsize
    tile = max(1, _T().tile_bytes // itemsize)
    if seg * itemsize <= _T().small_row_bytes:
        lanes = _lanes(total_bytes, rows, max_lanes)
        if seg * itemsize in (2, 4, 8):  # the row is one machine word: rotate it in a register
            return "small-rows-word-rotate", 0, 2 * rows * seg, ("word", lanes)
        if 3 <= seg * itemsize <= 64 and rows * seg * itemsize >= 8 and sys.byteorder == "little":
            # Rows of up to eight words: rotated in registers, no scratch (a row's copies through a scratch
            # row took 2.9-7.4x np.copyto for rows of 10-19 bytes, one thread).
            return "small-rows-registers", 0, 2 * rows * seg, ("registers", lanes)
        # Lanes' scratch rows 128 bytes apart: sharing a cache line between
        # threads made 2 lanes slower than 1 (false sharing).
        # Each lane's scratch row holds two copies of a row (read back as one window).
        # Rows 128 bytes past a multiple of 128: the scratch array itself is only
        # 16-byte aligned, and a row filling its 128 bytes exactly then shared a
        # cache line with the next lane's (false sharing: (10**6, 8) float64 took
        # 11 ms instead of 3, depending on where malloc put the scratch).
        lane_stride = 2 * seg if lanes == 1 else (-(-2 * seg * itemsize // 128) + 1) * 128 // itemsize
        return "small-rows-copy", lanes * lane_stride, 5 * rows * seg, ("small", lanes, lane_stride)
    seg_bytes = seg * itemsize
    if rows > 1 and (rows >= 8 * _lanes(total_bytes, rows, max_lanes) or seg_bytes <= (1 << 20)):
        lanes = _lanes(total_bytes, rows, max_lanes)
        cap = max(1, budget // itemsize // lanes)
        tile = min(tile, cap)
        ops = _segment_schedule(seg, k, cap, 1)
        lane_scratch, moved = _schedule_cost(ops, tile, 1)
        runner = ("rows", lanes, lane_scratch, ops, tile)
        scratch = lanes * lane_scratch
    else:
        lanes = _lanes(seg_bytes, max(1, seg // 2), max_lanes)
        cap = max(1, budget // itemsize // lanes)
        tile = min(tile, cap)
        ops = _segment_schedule(seg, k, cap, lanes, tile)
        scratch, moved = _schedule_cost(ops, tile, lanes)
        runner = ("segment", lanes, scratch, ops, tile)
    kinds = {op[0] for op in ops}
    if kinds == {_SHIFT}:
        name = "buffered-shift"
    elif kinds == {_SWAP}:
        name = "block-swap"
    elif _SWAP_SHIFT in kinds:
        name = "block-swap+fused-shift"
    else:
        name = "block-swap+buffered-shift"
    return name, scratch, rows * moved, runner


# ---------------------------------------------------------------------------
# public wrappers
# ---------------------------------------------------------------------------


def plan_rows(rows: int, seg: int, k: int, itemsize: int, max_scratch_bytes=None) -> tuple[str, int, int]:
    """Describe what :func:`rotate_rows_inplace` will do, without doing it.

    Parameters
    ----------
    rows, seg, k : int
        As for :func:`rotate_rows_inplace`.
    itemsize : int
        1, 2, 4 or 8 -- the word size of the buffer.
    max_scratch_bytes : int, optional
        The caller's scratch bound (tightens ``scratch_bytes``).

    Returns
    -------
    algorithm : str
        ``"small-rows-copy"``, ``"buffered-shift"``, ``"block-swap"``,
        ``"block-swap+buffered-shift"``, ``"block-swap+fused-shift"``,
        ``"chain-serial"``, ``"chain-lanes"``, ``"chain-rows"`` or ``"reversal"`` (no scratch;
        only when the bound allows nothing else).
    scratch_bytes : int
        Scratch the call allocates (at most ``min(scratch_bytes, max_scratch_bytes)``).
    bytes_moved : int
        Bytes read plus bytes written, array and scratch; the ideal is
        ``2 * rows * seg * itemsize``.
    """
    name, scratch, moved, _ = _plan_rows(int(rows), int(seg), int(k), int(itemsize), max_scratch_bytes)
    return name, scratch * itemsize, moved * itemsize




def rotate_rows_inplace(buf: np.ndarray, rows: int, seg: int, k: int, max_scratch_bytes=None) -> None:
    """Rotate each of ``rows`` consecutive segments of ``buf`` left by ``k``, in place.

    Plans with :func:`plan_rows_params` and runs that plan with :func:`run_rows`.

    Parameters
    ----------
    buf : numpy.ndarray
        1-D, C-contiguous, writeable, dtype uint8/16/32/64, ``len(buf) == rows * seg``.
    rows : int
        Number of segments, >= 1.
    seg : int
        Words per segment, >= 2.
    k : int
        ``0 < k < seg``; afterwards ``new_seg[i] == old_seg[(i + k) % seg]``.
    max_scratch_bytes : int, optional
        The caller's scratch bound (tightens ``scratch_bytes``).
    """
    rows, seg, k = int(rows), int(seg), int(k)
    word = buf.itemsize
    name, scratch, moved, params = plan_rows_params(rows, seg, k, word, max_scratch_bytes)
    run_rows(buf, Step(None, 0, rows, seg * word, k * word, word, name, scratch, moved, params=params))


@functools.lru_cache(maxsize=512)
def _ops_array(ops: tuple) -> np.ndarray:
    """The schedule as the (n, 5) int64 array the kernels read; cached: plans are reused."""
    return np.array(ops, dtype=np.int64).reshape(len(ops), 5)


def _word_layout(shape, strides, itemsize: int, axis: int):
    """Describe an array as a word grid: (word, n_rows, s, n_cols, t, outer_shape, outer_strides).

    Strides come back in words.  Columns are the smallest-|stride| non-axis
    direction (often the words inside one element); length-1 dims are dropped.
    """
    shape = [int(x) for x in shape]
    strides = [int(x) for x in strides]
    live = [i for i in range(len(shape)) if shape[i] != 1 or i == axis]
    word = 8
    while word > 1 and (itemsize % word or any(strides[i] % word for i in live)):
        word //= 2
    dims = [(shape[i], strides[i] // word) for i in live if i != axis]
    if itemsize > word:
        dims.append((itemsize // word, 1))
    if dims:
        col = min(range(len(dims)), key=lambda i: abs(dims[i][1]))
        n_cols, t = dims.pop(col)
    else:
        n_cols, t = 1, 0
    outer_shape = [dim[0] for dim in dims]
    outer_strides = [dim[1] for dim in dims]
    return word, shape[axis], strides[axis] // word, n_cols, t, outer_shape, outer_strides


def _line(shape, strides, axis):
    """axis=None rolls the C-order line: the shape and strides of that 1-D line, axis 0."""
    if axis is not None:
        return shape, strides, axis
    from ._arrays import c_order_line

    line = c_order_line(shape, strides)
    if line is None:
        raise ValueError(f"internal error: C order of shape {shape}, strides {strides} is not one strided line")
    return (line[0],), (line[1],), 0


def _plan_strided(shape, strides, itemsize: int, shift: int, axis, max_scratch_bytes=None):
    shape, strides, axis = _line(shape, strides, axis)
    word, n_rows, s, n_cols, t, outer_shape, outer_strides = _word_layout(shape, strides, itemsize, axis)
    n_outer = math.prod(outer_shape)
    k = n_rows - shift  # numpy.roll right by shift == rotate rows left by n_rows - shift
    d = min(k, shift)
    total_words = n_rows * n_cols * n_outer
    lanes = _lanes(total_words * word, max(1, n_outer * n_cols))
    budget_words = _budget(max_scratch_bytes) // word
    if d <= budget_words:
        lanes = max(1, min(lanes, budget_words // d))  # every lane holds at least d words
    cap = budget_words // lanes
    if d <= cap:
        mode = _STRIDED_SHIFT
        batch = min(n_cols, cap // d)
        if n_outer < lanes:
            # Too few outer lines to feed every lane: cut the columns finer.
            batch = min(batch, max(1, -(-n_cols // -(-lanes // n_outer))))
        name = "strided-buffered-shift"
        moved = (2 * n_rows + 2 * d) * n_cols * n_outer
    else:
        mode = _STRIDED_REVERSAL
        batch = n_cols
        if n_outer < lanes:
            batch = max(1, -(-n_cols // -(-lanes // n_outer)))
        name = "strided-reversal"
        moved = 4 * (k // 2 + shift // 2 + n_rows // 2) * n_cols * n_outer
    units = n_outer * -(-n_cols // batch)
    lanes = max(1, min(lanes, units))
    lane_scratch = d * batch if mode == _STRIDED_SHIFT else 0
    layout = (word, n_rows, s, n_cols, t, outer_shape, outer_strides)
    return name, lanes * lane_scratch * word, moved * word, (layout, k, mode, batch, lanes, lane_scratch)


def plan_strided(shape, strides, itemsize, shift, axis, max_scratch_bytes=None) -> tuple[str, int, int]:
    """Describe what :func:`roll_strided` will do, without doing it (``axis=None``: the C-order line).

    Returns
    -------
    algorithm : str
        ``"strided-buffered-shift"`` or ``"strided-reversal"``.
    scratch_bytes : int
        Scratch the call allocates (at most ``scratch_bytes``).
    bytes_moved : int
        Bytes read plus written, array and scratch (ideal: twice the array's bytes).
    """
    axis = None if axis is None else int(axis)
    name, scratch, moved, _ = _plan_strided(shape, strides, int(itemsize), int(shift), axis, max_scratch_bytes)
    return name, scratch, moved


class _WordSpan:
    """Exposes the memory span of an array as a flat word array (keeps the array alive)."""

    def __init__(self, owner, address: int, words: int, word: int):
        self._owner = owner
        self.__array_interface__ = {
            "version": 3,
            "shape": (words,),
            "typestr": "<u%d" % word,
            "data": (address, False),
        }



def roll_strided(a: np.ndarray, shift: int, axis, max_scratch_bytes=None) -> None:
    """``a[...] = numpy.roll(a, shift, axis)`` in place, for any strides and fixed-size dtype.

    Plans with :func:`plan_strided_params` and runs that plan with :func:`run_strided`.

    Parameters
    ----------
    a : numpy.ndarray
        Writeable, ndim >= 1, any strides (also negative), any dtype without
        Python objects.  Its elements must not overlap each other in memory.
    shift : int
        ``0 < shift < a.shape[axis]``; positive moves elements to larger indices.
    axis : int or None
        Non-negative axis index; None rolls the C-order line of a view whose
        C order is one strided line (``rotate._arrays.c_order_line``).
    max_scratch_bytes : int, optional
        The caller's scratch bound (tightens ``scratch_bytes``).
    """
    shift = int(shift)
    if a.size == 0:
        return
    name, scratch, moved, params = plan_strided_params(a.shape, a.strides, a.itemsize, shift, axis,
                                                       max_scratch_bytes)
    length = params.layout[1]
    run_strided(a, Step(axis, shift, a.size // length, length * a.itemsize, (length - shift) * a.itemsize,
                        a.itemsize, name, scratch, moved, strided=True, params=params))


# ---------------------------------------------------------------------------
# executable plans: the planner's decisions travel in Step.params (one type a
# runner), and the runners below execute exactly those without planning again
# ---------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class StridedParams(Params):
    """``roll_strided``'s plan: ``layout`` (word, rows, row stride, columns, column stride, outer shape,
    outer strides; strides in words), the rows' left rotation ``k``, ``mode``, the column ``batch``,
    ``lanes`` and their scratch (words)."""

    CONSTANTS = (("runner", "strided"),)
    layout: tuple
    k: int
    mode: int
    batch: int
    lanes: int
    lane_scratch: int
    threads: int
    max_scratch_bytes: Optional[int]


@dataclass(frozen=True, eq=False)
class RowsParams(Params):
    """What every contiguous-rows runner reads: ``lanes``, scratch (words: all of it, and a lane's),
    the ``tile`` (words), the schedule ``ops`` (``(kind, a, b, c, chunks)``, for the ops runners),
    numba's thread count when planned and the caller's bound (None: the tuning's)."""

    lanes: int
    scratch_words: int
    tile: int
    threads: int
    max_scratch_bytes: Optional[int]
    lane_scratch: int
    ops: tuple


@dataclass(frozen=True, eq=False)
class RowsSerialParams(RowsParams):
    """One lane runs the ops (buffered shift, block swaps) row by row."""

    CONSTANTS = (("runner", "rows-serial"),)


@dataclass(frozen=True, eq=False)
class RowsLanesParams(RowsParams):
    """Many rows: each lane runs the ops on its own rows."""

    CONSTANTS = (("runner", "rows"),)


@dataclass(frozen=True, eq=False)
class SegmentLanesParams(RowsParams):
    """Few long rows: every lane takes a part of each row's ops."""

    CONSTANTS = (("runner", "segment"),)


@dataclass(frozen=True, eq=False)
class SmallRowsParams(RowsParams):
    """Short rows copied twice into a lane's scratch row, the window written back; rows over lanes."""

    CONSTANTS = (("runner", "small-rows"),)


@dataclass(frozen=True, eq=False)
class SmallRowsSerialParams(RowsParams):
    """``small-rows`` on one lane."""

    CONSTANTS = (("runner", "small-rows-serial"),)


@dataclass(frozen=True, eq=False)
class RegisterRowsParams(RowsParams):
    """Rows of 3-64 bytes (``row_bytes``; not 4 or 8) rotated in registers, no scratch; rows over lanes
    (one lane: called directly, no team)."""

    CONSTANTS = (("runner", "register-rows"),)
    row_bytes: int


@dataclass(frozen=True, eq=False)
class WordRowsParams(RowsParams):
    """Rows of one ``row_word``-byte word each, bit-rotated in a register; rows over lanes."""

    CONSTANTS = (("runner", "word-rows"),)
    row_word: int


@dataclass(frozen=True, eq=False)
class WordRowsSerialParams(RowsParams):
    """``word-rows`` on one lane."""

    CONSTANTS = (("runner", "word-rows-serial"),)
    row_word: int


@dataclass(frozen=True, eq=False)
class RowsChainParams(RowsParams):
    """The GPU's chain schedule (``rotate._schedule``): tiles of ``tile_bytes`` in chain order, the bytes
    pre-read into ``scratch_row``-byte rows of scratch first (``table``: the plan table)."""

    tile_bytes: int
    chain_step: int
    lane_steps: int
    direct: bool
    ring: int
    pre_read_bytes: int
    alias_slack: int
    table: np.ndarray = field(metadata=INTERNAL)
    scratch_row: int = field(metadata=INTERNAL)


@dataclass(frozen=True, eq=False)
class ChainSerialParams(RowsChainParams):
    """One lane walks every row in chain order."""

    CONSTANTS = (("runner", "chain-serial"),)


@dataclass(frozen=True, eq=False)
class ChainLanesParams(RowsChainParams):
    """Each row's chain positions cut into one run a lane: pre-reads, then the lanes' walks."""

    CONSTANTS = (("runner", "chain-lanes"),)


@dataclass(frozen=True, eq=False)
class ChainRowsParams(RowsChainParams):
    """Many long rows: each lane walks its own rows, with its own pre-reads and ring."""

    CONSTANTS = (("runner", "chain-rows"),)


@dataclass(frozen=True, eq=False)
class RowsReversalParams(RowsParams):
    """No scratch fits the bound: the rows as a (rows x seg) word grid rolled by ``strided``'s plan
    (three in-place reversals)."""

    CONSTANTS = (("runner", "reversal"),)
    strided: StridedParams


@njit(cache=True)
def _rotate_rows_serial(buf, rows, seg, ops, scratch, tile):
    """One lane: the schedule on every row in turn, no parallel region to start."""
    for r in range(rows):
        row_lo = r * seg
        for o in range(ops.shape[0]):
            if ops[o, 0] == _SWAP:
                _swap_tiled(buf, row_lo + ops[o, 1], row_lo + ops[o, 2], ops[o, 3], scratch, 0, tile)
            else:
                _shift_serial(buf, row_lo + ops[o, 1], ops[o, 2], ops[o, 3], scratch, 0)


@njit(cache=True)
def _rotate_small_rows_serial(buf, rows, seg, k, scratch):
    """One lane of ``_rotate_small_rows``: waking a thread pool costs more than these rows."""
    _small_rows_run(buf, 0, rows, seg, k, scratch, 0)


@njit(cache=True)
def _ring_offset(row_address, ring_address, k):
    """Bytes (``< alias_slack``) past ``ring_address`` where ``chain-serial``'s ring starts for a row.

    A stream of loads from one buffer and stores to another whose addresses
    differ by a few bytes modulo 4096 makes each load wait for stores it
    does not depend on (4 KiB aliasing): float64 n/2 + 3 took 58-90 ms
    instead of 21-25 with the row 0-16 bytes past the ring modulo 4096
    (256 MiB, one thread; ``benchmarks/probes/cpu_aliasing.py``). The write-back stores at ``row - ring`` (mod
    4096) from its loads, the read-in at ``ring - row - k``; both sum to
    ``-k``, so put the first half a page (or a quarter) from both.
    """
    c = (-k) % 4096
    apart = (c + 2048) % 4096  # the write-back's distance; the read-in's is then c - apart = 2048
    if apart < 256 or apart > 3840:
        apart = (apart + 1024) % 4096
    apart -= apart % 64  # the ring keeps the row's alignment modulo 64
    return (row_address - apart - ring_address) % 4096


@njit(cache=True)
def _chain_pre_part(data, base, n, table, m_max, scratch, total, lane, lanes):
    """Lane ``lane`` of ``lanes``: copy the row's listed pre-read spans whose scratch offset falls in its
    ``total / lanes`` bytes (the table lists them back to back: the offset is the bytes before)."""
    listed = S.pre_list(m_max)
    lo = total * lane // lanes
    hi = total * (lane + 1) // lanes
    for i in range(table[listed]):
        entry = S.TILE_FIELDS * table[listed + 1 + i]
        offset = table[entry + S.T_OFFSET]
        if offset < lo or offset >= hi:
            continue
        start = table[entry + S.T_LO]
        stop = min(n, start + 16 * table[entry + S.T_VECS])
        _move(scratch, offset, data, base + start, stop - start)


@njit(cache=True)
def _chain_walk(data, base, n, k, tile_bytes, ring, table, m_max, scratch, ring_at, first, end, direct):
    """Walk chain positions ``[first, end)`` of the row at ``base``: read each item's source runs (the row,
    or scratch for ``PRE`` pieces) into a ring of ``ring`` tiles at ``scratch[ring_at:]`` and write the item
    ``ring - 1`` positions back. Reads only the lane's own tiles and scratch, writes only its own tiles.

    ``direct``: a ``SELF`` piece from another tile (its writer comes later in this lane, so its bytes are
    still in place when the item is written) is copied straight from the row when the item is written,
    not through the ring; only ``RING``, ``PRE`` and the item's own tile's pieces go through it.
    """
    items = S.TILE_FIELDS * m_max
    bufs = scratch[ring_at:ring_at + ring * tile_bytes]
    for position in range(first, end + ring - 1):
        if position < end:
            packed = table[items + position]
            tile = S.item_tile(packed)
            x0, x1 = S.tile_dest(n, 0, tile_bytes, tile)
            slot = ((position - first) % ring) * tile_bytes - x0
            x = x0
            run = 0
            while x < x1:
                w, z, stop = S.source_run(n, k, 0, tile_bytes, x, x1)
                kind = S.kind_at(S.item_piece_kinds(packed), run)
                if kind == S.PRE:  # the bytes wait in scratch
                    entry = S.TILE_FIELDS * w
                    _move(bufs, slot + x, scratch, table[entry + S.T_OFFSET] + z - table[entry + S.T_LO], stop - x)
                elif not direct or kind != S.SELF or w == tile:
                    _move(bufs, slot + x, data, base + z, stop - x)
                run += 1
                x = stop
        oldest = position - (ring - 1)
        if oldest >= first:
            packed = table[items + oldest]
            tile = S.item_tile(packed)
            x0, x1 = S.tile_dest(n, 0, tile_bytes, tile)
            slot = ((oldest - first) % ring) * tile_bytes - x0
            if not direct:
                _move(data, base + x0, bufs, slot + x0, x1 - x0)
                continue
            x = x0
            run = 0
            while x < x1:
                w, z, stop = S.source_run(n, k, 0, tile_bytes, x, x1)
                if S.kind_at(S.item_piece_kinds(packed), run) == S.SELF and w != tile:
                    _move(data, base + x, data, base + z, stop - x)  # its writer comes later: still in place
                else:
                    _move(data, base + x, bufs, slot + x, stop - x)
                run += 1
                x = stop


@njit(cache=True)
def _chain_ring_at(data, base, scratch, ring_at, k, slack):
    """Where a lane's ring starts: ``ring_at``, moved by ``_ring_offset`` when the plan left a page of slack."""
    if slack >= 4096:  # the plan left a page to place the ring in (_ring_offset < 4096)
        return ring_at + _ring_offset(data.ctypes.data + base, scratch.ctypes.data + ring_at, k)
    return ring_at


@njit(cache=True)
def _chain_rows_serial(data, rows, n, k, tile_bytes, ring, table, scratch, scratch_row, slack, direct=False):
    """``chain-serial``: every row rotated left by ``k`` bytes in one pass, in chain order, by one thread.

    ``table`` is the row's plan table (``rotate._schedule.layout_free_lanes``, one lane, head 0). Per row:
    copy the listed pre-read spans into scratch, then walk every chain position (``_chain_walk``).
    ``slack``: the spare scratch bytes the plan left after the ring; with a page of them (4096) the ring
    moves to ``_ring_offset``'s place, else it stays at ``scratch[scratch_row:]``.
    """
    m = S.tile_count(n, 0, tile_bytes)
    m_max = S.max_tiles(n, tile_bytes)
    total = scratch_row - 16
    for row in range(rows):
        base = row * n
        _chain_pre_part(data, base, n, table, m_max, scratch, total, 0, 1)
        ring_at = _chain_ring_at(data, base, scratch, scratch_row, k, slack)
        _chain_walk(data, base, n, k, tile_bytes, ring, table, m_max, scratch, ring_at, 0, m, direct)


# ``chain-lanes``: ``chain-serial`` with each row's chain positions cut into ``lanes`` lanes of
# ``lane_steps`` that share nothing (``rotate._schedule.layout_free_lanes``): every byte a lane reads
# that another lane writes is pre-read, by all lanes, before any lane writes (``_chain_lanes_pre``, a
# phase of its own); then the lanes walk with no waits, in whatever order the threads run
# (``_chain_lanes_walk``). Lane ``i``'s ring: ``scratch[scratch_row + i * (ring * tile_bytes + slack):]``,
# placed as ``chain-serial``'s is.


@njit(cache=True, nogil=True)
def _chain_lanes_pre(data, base, n, tile_bytes, table, scratch, scratch_row, lanes, l_lo, l_hi):
    m_max = S.max_tiles(n, tile_bytes)
    for lane in range(l_lo, l_hi):
        _chain_pre_part(data, base, n, table, m_max, scratch, scratch_row - 16, lane, lanes)


@njit(cache=True, nogil=True)
def _chain_lanes_walk(data, base, n, k, tile_bytes, ring, table, scratch, scratch_row, slack, lane_steps, direct,
                      l_lo, l_hi):
    m = S.tile_count(n, 0, tile_bytes)
    m_max = S.max_tiles(n, tile_bytes)
    lane_bytes = ring * tile_bytes + slack
    for lane in range(l_lo, l_hi):
        ring_at = _chain_ring_at(data, base, scratch, scratch_row + lane * lane_bytes, k, slack)
        _chain_walk(data, base, n, k, tile_bytes, ring, table, m_max, scratch, ring_at,
                    lane * lane_steps, min(m, (lane + 1) * lane_steps), direct)


@njit(cache=True, nogil=True)
def _chain_rows_spread(data, rows, n, k, tile_bytes, ring, table, scratch, scratch_row, slack, lanes, direct, l_lo,
                       l_hi):
    """``chain-rows``: many rows spread over ``lanes`` lanes, each lane running ``chain-serial`` on its own
    rows with its own pre-read spans and ring in ``scratch[i * (scratch_row + ring * tile_bytes + slack):]``
    (lane ``i``). Lanes touch different rows and scratch: no waits."""
    m = S.tile_count(n, 0, tile_bytes)
    m_max = S.max_tiles(n, tile_bytes)
    total = scratch_row - 16
    lane_bytes = scratch_row + ring * tile_bytes + slack
    rows_per_lane = (rows + lanes - 1) // lanes
    for lane in range(l_lo, l_hi):
        area = scratch[lane * lane_bytes:(lane + 1) * lane_bytes]
        for row in range(lane * rows_per_lane, min(rows, (lane + 1) * rows_per_lane)):
            base = row * n
            _chain_pre_part(data, base, n, table, m_max, area, total, 0, 1)
            ring_at = _chain_ring_at(data, base, area, scratch_row, k, slack)
            _chain_walk(data, base, n, k, tile_bytes, ring, table, m_max, area, ring_at, 0, m, direct)


def _get_num_threads_fast():
    # numba.get_num_threads() takes a lock and checks the thread pool every
    # call (~0.7 us); once the pool is up, the C getter alone says the same.
    numba.get_num_threads()
    try:
        from numba.np.ufunc import parallel

        getter = parallel._get_num_threads
        getter()
    except Exception:  # pragma: no cover - numba internals moved
        getter = numba.get_num_threads
    global num_threads
    num_threads = getter
    return getter()


def num_threads() -> int:
    """numba's thread count for the calling thread."""
    return _get_num_threads_fast()


# A busy machine: numba's threads wait for each other at the end of every
# parallel region, so one thread the OS leaves off a core stalls the whole
# call (issue #30: a 16 MiB roll took 15.7 ms on two threads with both cores
# busy, 0.65 ms on one). Plans use no more threads than the cores other
# processes leave free, read from the runnable count in /proc/loadavg at
# most every _BUSY_TTL seconds (a call of a few ms reads it once).
_BUSY_TTL = 0.01
_busy = [-1.0, 0]  # when last read, other processes' runnable threads then
_LOADAVG = "/proc/loadavg"
_CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def _others_running(threads: int) -> int:
    """Runnable threads of other processes now, at least (0 where the OS does not say)."""
    now = time.monotonic()
    if now - _busy[0] < _BUSY_TTL:
        return _busy[1]
    try:
        with open(_LOADAVG, "rb") as f:
            running = int(f.read().split()[3].split(b"/")[0])
    except (OSError, ValueError, IndexError):
        running = 0
    # The count includes this thread and may include this process's other threads (numba's workers
    # spin a little after a region): all of ours are discounted, so a quiet machine keeps them.
    _busy[0], _busy[1] = now, max(0, running - threads)
    return _busy[1]


def usable_threads() -> int:
    """numba's thread count, less the cores that other processes keep busy (at least 1): what plans use."""
    threads = num_threads()
    if threads <= 1 or not _T().adapt_to_load:
        return threads
    return max(1, min(threads, _CORES - _others_running(threads)))


def planner_settings(nbytes=None) -> tuple:
    """Everything the planners read besides the layout: the plan cache keys on it.

    The thread count plans are made for, and the tuning policy itself (every
    field, so no list of names can fall behind). An array of ``nbytes`` under
    two lanes' work plans one lane whatever the machine does, so its key skips
    the load check (a small call's microsecond).
    """
    tuning = _T()
    threads = usable_threads() if nbytes is None or nbytes >= 2 * tuning.min_lane_bytes else num_threads()
    return (threads, tuning)


def plan_rows_params(rows: int, seg: int, k: int, itemsize: int, max_scratch_bytes=None):
    """Plan :func:`run_rows`: ``(algorithm, scratch_bytes, bytes_moved, params)``.

    ``params`` (for ``Step.params``), a :class:`RowsParams` subclass a
    runner, holds everything the runner reads.  When the bound holds no
    lane's scratch it is :class:`RowsReversalParams`: the rows as a (rows x
    seg) word grid, rolled by three in-place reversals.
    """
    rows, seg, k, itemsize = int(rows), int(seg), int(k), int(itemsize)
    name, scratch, moved, runner = _plan_rows(rows, seg, k, itemsize, max_scratch_bytes)
    bound = None if max_scratch_bytes is None else int(max_scratch_bytes)
    if runner[0] == "reversal":
        _, strided_scratch, _, strided = plan_strided_params(
            (rows, seg), (seg * itemsize, itemsize), itemsize, seg - k, 1, 0)
        if strided_scratch or strided.mode != _STRIDED_REVERSAL:
            raise AssertionError("internal error: the reversal fallback must need no scratch")
        params = RowsReversalParams(lanes=strided.lanes, scratch_words=0, tile=0, threads=strided.threads,
                                    max_scratch_bytes=bound, lane_scratch=0, ops=(), strided=strided)
        return name, 0, moved * itemsize, params
    lanes = runner[1]
    common: dict[str, Any] = dict(lanes=lanes, scratch_words=scratch, tile=max(1, _T().tile_bytes // itemsize),
                                  threads=usable_threads(), max_scratch_bytes=bound)
    params: RowsParams
    if runner[0] in ("chain", "chain-rows"):
        _, _, tile_bytes, chain, table, scratch_row, lane_steps, direct = runner
        if runner[0] == "chain-rows":
            kind: Any = ChainRowsParams
        else:
            kind = ChainLanesParams if lanes > 1 else ChainSerialParams
        name = dict(kind.CONSTANTS)["runner"]
        params = kind(**common, lane_scratch=scratch // lanes if runner[0] == "chain-rows" else scratch, ops=(),
                      tile_bytes=tile_bytes, chain_step=chain, lane_steps=lane_steps, direct=direct,
                      ring=_T().chain_ring, pre_read_bytes=scratch_row - 16, alias_slack=_alias_slack(tile_bytes),
                      table=table, scratch_row=scratch_row)
    elif runner[0] == "small":
        params = (SmallRowsParams if lanes > 1 else SmallRowsSerialParams)(**common, lane_scratch=runner[2], ops=())
    elif runner[0] == "registers":
        params = RegisterRowsParams(**common, lane_scratch=0, ops=(), row_bytes=seg * itemsize)
    elif runner[0] == "word":  # the buffer is re-viewed as one word of row_word bytes a row
        params = (WordRowsParams if lanes > 1 else WordRowsSerialParams)(**common, lane_scratch=0, ops=(),
                                                                          row_word=seg * itemsize)
    else:
        ops = tuple(tuple(int(v) for v in op) for op in runner[3])
        common["tile"] = runner[4]  # the tile shrinks to fit a tight scratch bound
        fused = any(op[0] == _SWAP_SHIFT for op in ops)
        if lanes == 1 and not fused:
            params = RowsSerialParams(**common, lane_scratch=scratch, ops=ops)
        elif runner[0] == "rows":
            params = RowsLanesParams(**common, lane_scratch=runner[2], ops=ops)
        else:
            params = SegmentLanesParams(**common, lane_scratch=scratch, ops=ops)
    return name, scratch * itemsize, moved * itemsize, params


_WORDS = {w: np.dtype(f"u{w}") for w in (1, 2, 4, 8)}


def scratch_array(words: int, dtype: np.dtype) -> np.ndarray:
    """The one place the runners allocate scratch (tests poison it and count it)."""
    return np.empty(words, dtype)


def word_view(a: np.ndarray, word: int) -> np.ndarray:
    """``a``'s memory (C- or F-contiguous) as a flat array of ``word``-byte unsigned words."""
    flat = a.reshape(-1, order="A").view(_WORDS[word])
    if not np.may_share_memory(flat, a):  # a copy would silently lose the result
        raise AssertionError("internal error: contiguous view of a was a copy")
    return flat


# Runners that never enter a parallel region: safe under every threading layer
# and in a forked child as they are, so they take neither the lock nor a twin.


def run_rows(buf: np.ndarray, step) -> None:
    """Run a contiguous ``Step`` planned by :func:`plan_rows_params` (or another module's planner that
    registered its params type in ``ROW_RUNNERS``) on the word buffer ``buf``."""
    word = step.word_bytes
    if buf.itemsize != word:
        raise AssertionError(f"internal error: step planned for {word}-byte words, buffer has {buf.itemsize}")
    run = ROW_RUNNERS.get(type(step.params))
    if run is None:
        raise AssertionError(f"internal error: no CPU runner for {type(step.params).__name__}")
    run(buf, step, step.params)


def _run_reversal(buf: np.ndarray, step, p: RowsReversalParams) -> None:
    # no scratch fits the bound: the rows as a strided grid, reversed in place
    _run_strided_params(buf.reshape(step.rows, step.seg_bytes // step.word_bytes), p.strided)


def _rows_scratch(buf: np.ndarray, p: RowsParams) -> np.ndarray:
    return scratch_array(p.scratch_words, buf.dtype)  # none for word rows, but allocated (and counted) alike


def _run_word_rows(buf: np.ndarray, step, p) -> None:
    # each row one word, bit-rotated
    _rows_scratch(buf, p)
    rows, word = step.rows, step.word_bytes
    rows_buf = buf[:rows * (step.seg_bytes // word)].view(_WORDS[p.row_word])
    bits, r = 8 * p.row_word, 8 * word * (step.left_bytes // word)
    if type(p) is WordRowsParams:
        _team.run(_rotate_word_rows, p.lanes, p.lanes, rows_buf, rows, r, bits, p.lanes)
    else:
        _rotate_word_rows_serial(rows_buf, rows, r, bits)


def _run_register_rows(buf: np.ndarray, step, p: RegisterRowsParams) -> None:
    _rows_scratch(buf, p)  # none needed, but allocated (and counted) as every runner does
    data = buf[:step.rows * (step.seg_bytes // step.word_bytes)].view(np.uint8)
    if p.lanes > 1:
        _team.run(_rotate_register_rows, p.lanes, p.lanes, data, step.rows, p.row_bytes, step.left_bytes, p.lanes)
    else:
        _register_rows_run(data, 0, step.rows, p.row_bytes, step.left_bytes)


def _chain_bytes(buf: np.ndarray, step):
    return buf[:step.rows * (step.seg_bytes // step.word_bytes)].view(np.uint8)


def _run_chain_serial(buf: np.ndarray, step, p: ChainSerialParams) -> None:
    # byte positions: the GPU schedule's hooks
    scratch = _rows_scratch(buf, p)
    _chain_rows_serial(_chain_bytes(buf, step), step.rows, step.seg_bytes, step.left_bytes, p.tile_bytes, p.ring,
                       p.table, scratch.view(np.uint8), p.scratch_row, p.alias_slack, p.direct)


def _run_chain_rows(buf: np.ndarray, step, p: ChainRowsParams) -> None:
    # each lane its own rows, pre-read spans and ring
    scratch = _rows_scratch(buf, p)
    _team.run(_chain_rows_spread, p.lanes, p.lanes, _chain_bytes(buf, step), step.rows, step.seg_bytes,
              step.left_bytes, p.tile_bytes, p.ring, p.table, scratch.view(np.uint8), p.scratch_row, p.alias_slack,
              p.lanes, p.direct)


def _run_chain_lanes(buf: np.ndarray, step, p: ChainLanesParams) -> None:
    # lanes that share nothing: every row's pre-reads, then its lanes, no waits
    scratch = _rows_scratch(buf, p).view(np.uint8)
    data, n, lanes = _chain_bytes(buf, step), step.seg_bytes, p.lanes
    for row in range(step.rows):
        _team.run(_chain_lanes_pre, lanes, lanes, data, row * n, n, p.tile_bytes, p.table, scratch, p.scratch_row,
                  lanes)
        _team.run(_chain_lanes_walk, lanes, lanes, data, row * n, n, step.left_bytes, p.tile_bytes, p.ring, p.table,
                  scratch, p.scratch_row, p.alias_slack, p.lane_steps, p.direct)


def _run_small_rows(buf: np.ndarray, step, p: RowsParams) -> None:
    scratch = _rows_scratch(buf, p)
    rows, word = step.rows, step.word_bytes
    seg, k = step.seg_bytes // word, step.left_bytes // word
    if type(p) is SmallRowsSerialParams:
        _rotate_small_rows_serial(buf, rows, seg, k, scratch)
    else:
        _team.run(_rotate_small_rows, p.lanes, p.lanes, buf, rows, seg, k, scratch, p.lanes, p.lane_scratch)


def _run_ops_rows(buf: np.ndarray, step, p: RowsParams) -> None:
    scratch = _rows_scratch(buf, p)
    rows, seg, ops = step.rows, step.seg_bytes // step.word_bytes, _ops_array(p.ops)
    if type(p) is RowsSerialParams:
        _rotate_rows_serial(buf, rows, seg, ops, scratch, p.tile)
    elif type(p) is RowsLanesParams:
        _team.run(_rotate_rows_lanes, p.lanes, p.lanes, buf, rows, seg, ops, scratch, p.lanes, p.lane_scratch,
                  p.tile)
    else:
        for r in range(rows):
            _rotate_segment_lanes(buf, r * seg, ops, scratch, p.lanes, p.tile)


#: The runner of each contiguous step's params type: ``run(buf, step, params)``. rotate/_rows.py
#: registers its multi-axis runner, so this module never imports it (no import cycle).
ROW_RUNNERS: dict = {
    RowsReversalParams: _run_reversal,
    WordRowsParams: _run_word_rows,
    WordRowsSerialParams: _run_word_rows,
    RegisterRowsParams: _run_register_rows,
    ChainSerialParams: _run_chain_serial,
    ChainRowsParams: _run_chain_rows,
    ChainLanesParams: _run_chain_lanes,
    SmallRowsParams: _run_small_rows,
    SmallRowsSerialParams: _run_small_rows,
    RowsSerialParams: _run_ops_rows,
    RowsLanesParams: _run_ops_rows,
    SegmentLanesParams: _run_ops_rows,
}


def plan_strided_params(shape, strides, itemsize: int, shift: int, axis, max_scratch_bytes=None):
    """Plan :func:`run_strided`: ``(algorithm, scratch_bytes, bytes_moved, params)``.

    ``axis`` None plans the C-order line of a view whose C order is one
    strided line.  ``params``: a :class:`StridedParams`.
    """
    axis = None if axis is None else int(axis)
    name, scratch, moved, (layout, k, mode, batch, lanes, lane_scratch) = _plan_strided(
        shape, strides, int(itemsize), int(shift), axis, max_scratch_bytes)
    word, n_rows, s, n_cols, t, outer_shape, outer_strides = layout
    params = StridedParams(layout=(word, n_rows, s, n_cols, t, tuple(outer_shape), tuple(outer_strides)), k=k,
                           mode=mode, batch=batch, lanes=lanes, lane_scratch=lane_scratch, threads=usable_threads(),
                           max_scratch_bytes=None if max_scratch_bytes is None else int(max_scratch_bytes))
    return name, scratch, moved, params


def run_strided(a: np.ndarray, step) -> None:
    """Run a strided ``Step`` planned by :func:`plan_strided_params` on ``a`` (its shape and strides)."""
    _run_strided_params(a, step.params)


def _run_strided_params(a: np.ndarray, p: StridedParams) -> None:
    # The layout's word grid addresses a's elements from a's first element;
    # the span below only has to cover them (an axis=None line included).
    if a.size == 0:
        return
    word, n_rows, s, n_cols, t, outer_shape, outer_strides = p.layout
    address, low, high = host_span(a)
    flat = np.asarray(_WordSpan(a, low, (high - low) // word, word))
    scratch = scratch_array(p.lanes * p.lane_scratch, flat.dtype)
    _team.run(_roll_strided_words, p.lanes, p.lanes, flat, (address - low) // word, n_rows, s, p.k, n_cols, t,
              p.batch, np.array(outer_shape, dtype=np.int64), np.array(outer_strides, dtype=np.int64), p.mode,
              scratch, p.lanes, p.lane_scratch)
