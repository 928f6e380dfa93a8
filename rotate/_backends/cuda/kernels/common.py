"""Device functions the kernel families share: copy-group waits, block tickets, the launch's last-block
exit, the realigning vector loads and stores and the realigned write of a staged tile (``_write_moved``).

Module-level factories build (and cache) one device function per configuration.
"""

from __future__ import annotations

import functools

from numba import cuda, int32, int64, uint32, uint64

from ...._schedules import chain as S
from .memops import (atomic_add_u64, copies_waiter, copy16_async_at, funnel_right, load16_shared, load16_shared_at,
                      load_shared_at, shared_address, store8, store16, store_u64)

wait_all = copies_waiter(0)
_wait_left1 = copies_waiter(1)
_wait_left2 = copies_waiter(2)
_wait_left3 = copies_waiter(3)


@cuda.jit(device=True)
def wait_copies_left(left):
    """``cp.async.wait_group`` with ``left`` groups allowed in flight (an immediate, so a branch a count;
    at most 3 left: callers with deeper rings wait for more than they must, never less)."""
    if left <= 0:
        wait_all()
    elif left == 1:
        _wait_left1()
    elif left == 2:
        _wait_left2()
    else:
        _wait_left3()

@cuda.jit(device=True)
def block_ticket(ctrl, counters, index, tid):
    """The block's next ticket from dispenser ``counters[index]``: thread 0 draws it into ``ctrl[0]``,
    every thread returns it (the second barrier keeps ``ctrl[0]`` until all have read it)."""
    if tid == 0:
        ctrl[0] = int64(atomic_add_u64(counters, index, uint64(1)))
    cuda.syncthreads()
    ticket = ctrl[0]
    cuda.syncthreads()
    return ticket


@cuda.jit(device=True)
def leave_launch(counters):
    """Thread 0, once its block draws no more tickets: the last block out rewinds the four dispensers
    (``counters[2]`` counts the blocks out), so the next launch on the stream starts from zero."""
    finished = atomic_add_u64(counters, 2, uint64(1))
    if finished == cuda.gridDim.x - 1:
        # Every block has drawn its final ticket and taken its last pool bytes.
        store_u64(counters, 0, uint64(0))
        store_u64(counters, 1, uint64(0))
        store_u64(counters, 2, uint64(0))
        store_u64(counters, 3, uint64(0))


@cuda.jit(device=True)
def _realigned_words(lo_words, hi_words, r):
    """The 16 bytes ``r`` bytes (1-15) into the 32 of ``lo_words`` and ``hi_words``: a 5-word window
    chosen by branch and four funnel shifts."""
    u0, u1, u2, u3, u4 = S.window5(
        r >> 2, uint64(lo_words[0]), uint64(lo_words[1]), uint64(lo_words[2]),
        uint64(lo_words[3]), uint64(hi_words[0]), uint64(hi_words[1]),
        uint64(hi_words[2]), uint64(hi_words[3]))
    bs = r & 3
    return (uint32(S.funnel(u0, u1, bs)), uint32(S.funnel(u1, u2, bs)), uint32(S.funnel(u2, u3, bs)),
            uint32(S.funnel(u3, u4, bs)))


@cuda.jit(device=True)
def load_realigned(smem, w, r):
    """The 16 bytes that start ``r`` bytes (0-15) into shared word ``w`` (a multiple of 4), as four
    words: one 16-byte shared load when ``r == 0``, else two and ``_realigned_words``."""
    lo_words = load16_shared(smem, w)
    if r == 0:
        return lo_words[0], lo_words[1], lo_words[2], lo_words[3]
    return _realigned_words(lo_words, load16_shared(smem, w + 4), r)


@cuda.jit(device=True)
def store_realigned(smem, w, r, data, pos):
    """Store to ``data[pos:pos + 16]`` the 16 bytes that start ``r`` bytes into shared word ``w``
    (``load_realigned``'s bytes). Both the chain kernel's and the lane kernels' writes. A store on
    each branch, not one store of ``load_realigned``'s words: that form takes the lane-panels gather
    kernel from 48 registers to 40 and its short lanes 3% slower on the H100 (issue #31's benchmark
    before and after 01164aa)."""
    lo_words = load16_shared(smem, w)
    if r == 0:
        store16(data, pos, lo_words[0], lo_words[1], lo_words[2], lo_words[3])
    else:
        u0, u1, u2, u3 = _realigned_words(lo_words, load16_shared(smem, w + 4), r)
        store16(data, pos, u0, u1, u2, u3)


@functools.lru_cache(maxsize=None)
def _whole_vectors(threads: int, word_shift: int):
    """The write loop for one source alignment: ``word_shift`` words past the vector grid of shared
    memory, plus ``bits`` (0, 8, 16, 24); ``word_shift = -1``: on the grid (plain 16-byte copies).

    The word shift is a compile-time constant, so each loop is straight-line
    code: one or two 16-byte shared loads, four one-instruction funnel shifts
    and a 16-byte store a vector, on 32-bit shared addresses converted once.
    (A per-vector choice of the window cost ~95 instructions a vector,
    ncu at shift 3: the write loop was 45% of the warps' samples.)
    """

    @cuda.jit(device=True)
    def store_whole(smem, address, bits, data, pos, count, tid):
        """Store ``count`` whole vectors at ``data[pos + 16 v]`` from shared ``address + 16 v`` on."""
        v = int32(tid)
        at = uint32(address + uint32(16 * tid))
        p = int64(pos) + 16 * int64(v)  # 64-bit under the simulator too (NumPy keeps int32 + int)
        while v < count:
            a0, a1, a2, a3 = load16_shared_at(smem, at)
            if word_shift < 0:
                store16(data, p, a0, a1, a2, a3)
            elif word_shift == 0:
                b0 = load_shared_at(smem, uint32(at + uint32(16)))
                store16(data, p, funnel_right(a0, a1, bits), funnel_right(a1, a2, bits),
                        funnel_right(a2, a3, bits), funnel_right(a3, b0, bits))
            else:
                b0, b1, b2, b3 = load16_shared_at(smem, uint32(at + uint32(16)))
                if word_shift == 1:
                    store16(data, p, funnel_right(a1, a2, bits), funnel_right(a2, a3, bits),
                            funnel_right(a3, b0, bits), funnel_right(b0, b1, bits))
                elif word_shift == 2:
                    store16(data, p, funnel_right(a2, a3, bits), funnel_right(a3, b0, bits),
                            funnel_right(b0, b1, bits), funnel_right(b1, b2, bits))
                else:
                    store16(data, p, funnel_right(a3, b0, bits), funnel_right(b0, b1, bits),
                            funnel_right(b1, b2, bits), funnel_right(b2, b3, bits))
            v += threads
            at = uint32(at + uint32(16 * threads))
            p += 16 * threads

    return store_whole


@functools.lru_cache(maxsize=None)
def _copy_vectors(threads: int):
    """Start ``cp.async`` copies of a run of whole vectors, a thread every ``threads`` vectors."""

    @cuda.jit(device=True)
    def copy_vectors(smem, slot, src, pos, vecs, tid):
        """Copy ``src[pos:pos + 16 vecs]`` (16-byte aligned) into shared vectors ``slot`` on.

        32-bit shared addresses converted once and a 32-bit count: the
        per-vector loop of ``copy16_async`` redid both in 64 bits.
        """
        v = int32(tid)
        count = int32(vecs)
        at = uint32(shared_address(smem, 4 * slot) + uint32(16 * tid))
        p = int64(pos) + 16 * int64(v)  # 64-bit under the simulator too (NumPy keeps int32 + int)
        while v < count:
            copy16_async_at(smem, at, src, p)
            v += threads
            at = uint32(at + uint32(16 * threads))
            p += 16 * threads

    return copy_vectors


@functools.lru_cache(maxsize=None)
def _write_moved(threads: int, write_iters: int, spare_vector: bool = False):
    """The write path the tiled kernels share: realign in registers, store 16-byte vectors.

    ``write_iters`` is kept for the callers' cache keys (the loops now run to
    the run's own vector count). ``spare_vector``: the caller's buffers hold
    a spare vector after every run, so a source on the vector grid may take
    the funnel loop too (it reads one word past the run). The chain kernel
    does: with the plain copy loop, complex128 n/4 + 3 (16 KiB tiles, four
    buffers) ran at 58% of memcpy, with the funnel loop at 68% (same tree
    otherwise, one session, docs/results/chain-ab-write-loop-h200.jsonl);
    why the slower loop streams faster there is not known.
    """
    aligned = _whole_vectors(threads, -1)
    shifted0 = _whole_vectors(threads, 0)
    shifted1 = _whole_vectors(threads, 1)
    shifted2 = _whole_vectors(threads, 2)
    shifted3 = _whole_vectors(threads, 3)

    @cuda.jit(device=True)
    def store_bytes(smem, slot0, src_al, data, row_pos, x_lo, x_hi, delta):
        """Positions ``[x_lo, x_hi)`` (within one vector) byte by byte: the partial vectors at a run's ends."""
        for x in range(x_lo, x_hi):
            sb = 16 * slot0 + x + delta - src_al
            word = smem[sb >> 2]
            store8(data, row_pos + x, (word >> ((sb & 3) * 8)) & 0xFF)

    @cuda.jit(device=True)
    def write_moved(smem, slot0, src_al, data, row_pos, head, lo, hi, delta, tid):
        """Write row positions [lo, hi) with the bytes of positions p + delta.

        Those source bytes sit in ``smem`` from vector ``slot0`` on,
        over-copied from the 16-byte aligned position ``src_al``. Whole
        destination vectors go through the loop for the source's alignment
        (chosen once: it is the same for every vector of the run); the (at
        most two) partial vectors at the ends are written byte by byte, the
        first by thread 0, the last by the last thread.
        """
        d_lo = S.align_down(head + lo) - head  # the first destination vector (maybe partial)
        d_hi = S.align_up(head + hi) - head
        full_lo = d_lo if d_lo >= lo else d_lo + 16
        full_hi = d_hi if d_hi <= hi else d_hi - 16
        base = full_lo + delta - src_al  # buffer byte of the first whole vector's source
        r = base & 15
        if full_hi > full_lo:
            count = int32((full_hi - full_lo) >> 4)
            address = shared_address(smem, 4 * (slot0 + (base >> 4)))
            bits = uint32(8 * (r & 3))
            pos = row_pos + full_lo
            ws = r >> 2
            if r == 0 and not spare_vector:
                aligned(smem, address, bits, data, pos, count, tid)
            elif ws == 0:
                shifted0(smem, address, bits, data, pos, count, tid)
            elif ws == 1:
                shifted1(smem, address, bits, data, pos, count, tid)
            elif ws == 2:
                shifted2(smem, address, bits, data, pos, count, tid)
            else:
                shifted3(smem, address, bits, data, pos, count, tid)
        if full_lo > d_lo and tid == 0:
            store_bytes(smem, slot0, src_al, data, row_pos, lo, min(hi, full_lo), delta)
        if full_hi < d_hi and full_hi >= full_lo and tid == threads - 1:
            store_bytes(smem, slot0, src_al, data, row_pos, max(lo, full_hi), hi, delta)

    return write_moved
