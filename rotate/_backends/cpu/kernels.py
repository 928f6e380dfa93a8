"""The CPU backend's kernels: serial ``@njit(nogil=True)`` loops a lane runs (block swaps, buffered
shifts, small rows in registers, strided rolls, the chain's pre-reads and walks), and the op codes
the planner's schedules use.
"""

from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from ..._schedules import chain as S
from . import team as _team
from .bytemem import HAS_BYTE_SHUFFLE, copy16, load_u64, shuffle3_store16, store_u16, store_u32, store_u64

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
# ran 3-4x slower in rotate._backends.cpu.lanes), with loop counts fixed at compile time for common rows.

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


@njit(cache=True, inline="always")
def _copy_span16(dst, d, src, s, nbytes):
    """``dst[d:d+nbytes] = src[s:s+nbytes]`` (``nbytes >= 16``, the spans apart) in 16-byte copies, the
    last one ending at ``nbytes`` (it rewrites bytes of the one before with the same values)."""
    j = 0
    while j + 16 < nbytes:
        copy16(dst, d + j, src, s + j)
        j += 16
    copy16(dst, d + nbytes - 16, src, s + nbytes - 16)


@njit(cache=True, inline="always")
def _doubled16(scratch, at, data, row, row_bytes):
    """The row at byte ``row`` twice, back to back, into ``scratch[at:at + 2 * row_bytes]``."""
    _copy_span16(scratch, at, data, row, row_bytes)
    _copy_span16(scratch, at + row_bytes, data, row, row_bytes)


@njit(cache=True)
def _small_rows_vectors(data, r0, r1, row_bytes, kb, scratch, s0):
    """:func:`_small_rows_copy` on bytes, for rows of 16 bytes or more: each row twice into scratch and the
    window at ``kb`` back, 16-byte copies all (element loops took 1.4-2.0x np.copyto on rows of 96
    bytes, one thread). Two doubled rows alternate at ``s0``: row ``r + 1`` is copied out before row
    ``r``'s window is read back, so those unaligned loads find their stores written to the cache, not
    waiting in the store buffer (as ``lanes._doubled_lanes``)."""
    if r0 >= r1:
        return
    room = (2 * row_bytes + 15) // 16 * 16
    _doubled16(scratch, s0, data, r0 * row_bytes, row_bytes)
    for r in range(r0, r1):
        at = r * row_bytes
        if r + 1 < r1:
            _doubled16(scratch, s0 + ((r + 1 - r0) & 1) * room, data, at + row_bytes, row_bytes)
        _copy_span16(data, at, scratch, s0 + ((r - r0) & 1) * room + kb, row_bytes)


@njit(cache=True)
def _small_rows_run(buf, r0, r1, seg, k, scratch, s0):
    """:func:`_small_rows_copy` with the row length a compile-time constant for 2-8 words; rows of 16 bytes
    or more through :func:`_small_rows_vectors`."""
    word = buf.itemsize
    if seg * word >= 16:
        _small_rows_vectors(buf.view(np.uint8), r0, r1, seg * word, k * word, scratch.view(np.uint8), s0 * word)
    elif seg == 2:  # counts known at compile time: the loops unroll and vectorise
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


@njit(cache=True, inline="always")
def _period_rows(row_bytes):
    """Rows of a *period*: the fewest rows of ``row_bytes`` that end on a 16-byte vector's end (16 / the
    largest power of two up to 16 dividing the row)."""
    g = 1
    for d in (16, 8, 4, 2):
        if row_bytes % d == 0:
            g = d
            break
    return 16 // g


@njit(cache=True)
def _period_masks(row_bytes, b):
    """``(masks, vectors, rows)`` of a period (``rows`` rows of ``row_bytes``, ``vectors`` 16-byte vectors)
    rotated left by ``b`` bytes: for each output vector, three masks of 16 indices into the vector before
    it, itself and the one after (0x80: none)."""
    rows = _period_rows(row_bytes)
    vectors = rows * row_bytes // 16
    masks = np.full(48 * vectors, 0x80, np.uint8)
    for p in range(16 * vectors):
        c = p % row_bytes
        q = p - c + (c + b) % row_bytes
        v = p // 16
        masks[48 * v + 16 * (q // 16 - v + 1) + p % 16] = q % 16
    return masks, vectors, rows


@njit(cache=True)
def _shuffled_rows_run(buf, r0, r1, row_bytes, b):
    """Rows ``r0..`` of 3-7 bytes rotated left by ``b`` bytes a period at a time (``_period_masks``): the
    period copied aside, each 16-byte vector rebuilt from its three neighbours there by byte shuffles
    (three ``pshufb``: a row of 3-7 bytes a few instructions, where the 8-byte window took a dozen). Returns
    the first row not done (the rows after the last whole period)."""
    periods = (r1 - r0) // _period_rows(row_bytes)
    if periods <= 0:  # a lane past the last row has r0 > r1: floor division would make -1 periods
        return r0
    masks, vectors, rows = _period_masks(row_bytes, b)
    aside = np.zeros(16 * (vectors + 2), np.uint8)  # a zero vector either side: never picked
    for k in range(periods):
        base = (r0 + k * rows) * row_bytes
        for v in range(vectors):
            copy16(aside, 16 + 16 * v, buf, base + 16 * v)
        for v in range(vectors):
            shuffle3_store16(buf, base + 16 * v, aside, 16 + 16 * v, masks, 48 * v)
    return r0 + periods * rows


@njit(cache=True)
def _register_rows_run(buf, r0, r1, row_bytes, b):
    """Rows ``r0..r1-1`` of ``row_bytes`` (3-64) bytes of ``buf`` (bytes), each rotated left by ``b`` bytes
    in registers: the row read as one little-endian integer is rotated right by ``8 b`` bits.

    Rows of up to 8 bytes go a period of 16-byte vectors at a time through byte shuffles where the host has
    them (``_shuffled_rows_run``); the rows after the last whole period, or all of them, are read as the
    8-byte window at the row (the last few rows: the window that ends the span) and written back as two
    overlapping stores of their own bytes only; rows of 9-16 bytes
    as two 8-byte chunks of the rotated row (at 0 and 8 before the end); rows of 17-32 bytes as four (at 0,
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
    if row_bytes <= 8 and HAS_BYTE_SHUFFLE:
        r0 = _shuffled_rows_run(buf, r0, r1, row_bytes, b)
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
    # 9-16 bytes: the rotated row's first 8 bytes and its last 8 (overlapping where the row is shorter),
    # each loaded whole or, where its source wraps, from two loads. As one 128-bit value rotated per row
    # (128-bit shifts) this ran 2.5-3.7x np.copyto, as chunks 0.7-1.3x (one thread).
    e = row_bytes - 8
    p0 = b % row_bytes
    p1 = (e + b) % row_bytes
    w0, w1 = p0 + 8 > row_bytes, p1 + 8 > row_bytes
    for r in range(r0, r1):
        at = r * row_bytes
        v0 = _rotated_chunk(buf, at, row_bytes, p0, w0, _U(8 * (p0 - e)), _U(8 * (row_bytes - p0)))
        v1 = _rotated_chunk(buf, at, row_bytes, p1, w1, _U(8 * (p1 - e)), _U(8 * (row_bytes - p1)))
        store_u64(buf, _U(at), v0)
        store_u64(buf, _U(at + e), v1)


@njit(cache=True, nogil=True)
def _rotate_register_rows(buf, rows, row_bytes, b, lanes, l_lo, l_hi):
    """Rows of 3-64 bytes (not 4 or 8) rotated in registers (``_register_rows_run``); rows over lanes."""
    per = (rows + lanes - 1) // lanes
    for lane in range(l_lo, l_hi):
        _register_rows_run(buf, min(rows, lane * per), min(rows, (lane + 1) * per), row_bytes, b)


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

    ``table`` is the row's plan table (``rotate._schedules.free_lanes.layout_free_lanes``, one lane, head 0). Per row:
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
# ``lane_steps`` that share nothing (``rotate._schedules.free_lanes.layout_free_lanes``): every byte a lane reads
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
