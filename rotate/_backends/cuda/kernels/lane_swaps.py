"""The ``lane-swaps`` kernel: ``roll_rows`` of lanes beyond a block's shared memory.

``swap_kernel``: one block rotates a whole lane (lanes grid-strided), its
shift read on the device: Gries-Mills block swaps until the small side
fits the saved-side buffer, then that side saved in shared memory and the
rest streamed by its length through 16 KiB panels (read ahead, written
behind). Lanes are disjoint: no block waits for another. ``_swap_lane`` is
one lane's work, which the walk kernel also runs for lanes it cannot walk.
"""

from __future__ import annotations

import functools

from numba import cuda, int64, uint32

from ...._schedules import chain as S
from ...._schedules import gries_mills
from .common import _write_moved
from .memops import SIMULATED, load_i64
from .panels import PANEL_BYTES, THREADS, _movers, buffer_vecs, wait_all, wait_but_one, wait_but_two

def swap_smem_bytes(panel_bytes: int, save_bytes: int) -> int:
    """Dynamic shared memory of the swap kernel: four panel buffers (two swap pairs), the saved small side
    over the last two (it is never live during a swap)."""
    panel_vecs = buffer_vecs(panel_bytes)
    return 16 * (2 * panel_vecs + max(2 * panel_vecs, buffer_vecs(save_bytes)))


def save_capacity(vecs: int) -> int:
    """The most bytes ``vecs`` staging vectors hold at any head offset (``buffer_vecs``' inverse)."""
    return 16 * vecs - 31


@functools.lru_cache(maxsize=None)
def _swap_lane(threads: int, panel_bytes: int):
    """``swap_lane(sm32, data, row_pos, head, seg, k, save_bytes, tid)``: one lane of ``seg`` bytes rotated
    left by ``k`` bytes by ``lane-swaps``' steps (``swap_kernel``; ``lane-walks`` takes it for the lanes it
    does not walk). Ends with a barrier: the saved side's buffer is the next lane's."""
    if panel_bytes % 16 or panel_bytes < 32:
        raise ValueError(f"panel_bytes must be a multiple of 16 and >= 32, got {panel_bytes}")
    stage, _ = _movers(1, threads)  # staging is byte-exact: no unit
    write_moved = _write_moved(threads, -(-(panel_bytes // 16 + 1) // threads))
    panel_vecs = buffer_vecs(panel_bytes)
    saved_vec = 2 * panel_vecs  # the saved side overlaps the swaps' B buffers: never live at once

    @cuda.jit(device=True)
    def stage_at(sm32, buf_vec, data, row_pos, head, pos, nbytes, tid):
        """Stage lane bytes ``[pos, pos + nbytes)`` (one copy group); returns where ``buf_vec`` starts in the
        lane, as ``write_moved`` takes it."""
        offset = (head + pos) & 15
        stage(sm32, buf_vec, data, row_pos + pos, offset, nbytes, tid)
        return pos - offset

    @cuda.jit(device=True)
    def swap(sm32, data, row_pos, head, a, b, m, tid):
        """Swap lane bytes ``[a, a + m)`` and ``[b, b + m)`` (disjoint), panels cut on A's grid."""
        grid_head = (head + a) & 15
        count = S.tile_count(m, grid_head, panel_bytes)
        x0, x1 = S.tile_dest(m, grid_head, panel_bytes, 0)
        stage_at(sm32, 0, data, row_pos, head, a + x0, x1 - x0, tid)
        stage_at(sm32, 2 * panel_vecs, data, row_pos, head, b + x0, x1 - x0, tid)
        buf = 0
        for j in range(count):
            if j + 1 < count:  # the next pair's copies fly while this pair is written
                y0, y1 = S.tile_dest(m, grid_head, panel_bytes, j + 1)
                stage_at(sm32, (1 - buf) * panel_vecs, data, row_pos, head, a + y0, y1 - y0, tid)
                stage_at(sm32, (3 - buf) * panel_vecs, data, row_pos, head, b + y0, y1 - y0, tid)
                wait_but_two()
            else:
                wait_all()
            cuda.syncthreads()
            x0, x1 = S.tile_dest(m, grid_head, panel_bytes, j)
            a_al = a + x0 - ((head + a + x0) & 15)
            b_al = b + x0 - ((head + b + x0) & 15)
            write_moved(sm32, (2 + buf) * panel_vecs, b_al, data, row_pos, head, a + x0, a + x1, b - a, tid)
            write_moved(sm32, buf * panel_vecs, a_al, data, row_pos, head, b + x0, b + x1, a - b, tid)
            cuda.syncthreads()  # the buffers are staged again
            buf = 1 - buf

    @cuda.jit(device=True)
    def move(sm32, data, row_pos, head, src, dst, length, tid):
        """Move lane bytes ``[src, src + length)`` to ``[dst, dst + length)`` (they may overlap).

        Panels are walked away from the side the bytes move towards, so the
        panel staged ahead (the next source) never overlaps the panel being
        written, and every byte is staged before a later panel overwrites it.
        Copy groups the caller started earlier (the saved side) are older, so
        they have landed before the first write.
        """
        grid_head = (head + dst) & 15
        count = S.tile_count(length, grid_head, panel_bytes)
        down = dst < src
        x0, x1 = S.tile_dest(length, grid_head, panel_bytes, 0 if down else count - 1)
        stage_at(sm32, 0, data, row_pos, head, src + x0, x1 - x0, tid)
        buf = 0
        for i in range(count):
            if i + 1 < count:
                y0, y1 = S.tile_dest(length, grid_head, panel_bytes, i + 1 if down else count - 2 - i)
                stage_at(sm32, (1 - buf) * panel_vecs, data, row_pos, head, src + y0, y1 - y0, tid)
                wait_but_one()
            else:
                wait_all()
            cuda.syncthreads()
            x0, x1 = S.tile_dest(length, grid_head, panel_bytes, i if down else count - 1 - i)
            src_al = src + x0 - ((head + src + x0) & 15)
            write_moved(sm32, buf * panel_vecs, src_al, data, row_pos, head, dst + x0, dst + x1, src - dst, tid)
            cuda.syncthreads()
            buf = 1 - buf

    @cuda.jit(device=True)
    def put_saved(sm32, data, row_pos, head, saved_al, save, count, put, tid):
        """Write the saved bytes (lane bytes ``[save, save + count)`` staged from ``saved_al``) to ``put``."""
        grid_head = (head + put) & 15
        for j in range(S.tile_count(count, grid_head, panel_bytes)):
            x0, x1 = S.tile_dest(count, grid_head, panel_bytes, j)
            write_moved(sm32, saved_vec, saved_al, data, row_pos, head, put + x0, put + x1, save - put, tid)

    @cuda.jit(device=True)
    def swap_lane(sm32, data, row_pos, head, seg, k, save_bytes, tid):
        lo = int64(0)
        length = seg
        while k != 0 and min(k, length - k) > save_bytes:
            a, b, m, lo, length, k = gries_mills.swap_step(lo, length, k)
            swap(sm32, data, row_pos, head, a, b, m, tid)
        if k != 0:
            save, count, src, dst, moved, put = gries_mills.saved_rotation(lo, length, k)
            saved_al = stage_at(sm32, saved_vec, data, row_pos, head, save, count, tid)
            move(sm32, data, row_pos, head, src, dst, moved, tid)
            put_saved(sm32, data, row_pos, head, saved_al, save, count, put, tid)
            cuda.syncthreads()  # the saved side's buffer is the next lane's swap buffer

    return swap_lane


@functools.lru_cache(maxsize=None)
def swap_kernel(threads: int = THREADS, panel_bytes: int = PANEL_BYTES):
    """``kernel(data, shifts, rows, seg, n, item, shift_stride, head0, save_bytes)``.

    ``roll_rows`` of lanes too long for a block's shared memory
    (``lane-swaps``): rolls each of ``rows`` lanes of ``seg`` bytes (``n``
    items of ``item`` bytes) right by ``shifts[lane * shift_stride] mod n``
    items, a whole lane per block, lanes grid-strided over the blocks (no
    ticket: no scratch, and many lanes average out their unequal costs).
    Per lane, as "rotate left by ``k`` bytes":

    * while the small side ``min(k, seg' - k)`` exceeds ``save_bytes``, a
      Gries-Mills block swap (``rotate._schedules.gries_mills.swap_step``): both regions
      staged panel by panel (the next pair's copies fly while a pair is
      written), each written from the other;
    * then the small side is staged into shared memory, the rest moved by
      its length through two panel buffers, walked away from the side it
      moves towards (no byte is written before it is staged), and the saved
      bytes written back (``rotate._schedules.gries_mills.saved_rotation``).

    No block ever waits for another (``co_resident`` is False). Panels are
    ``panel_bytes`` (a multiple of 16), cut on the destination's 16-byte
    grid; writes are whole aligned 16-byte stores realigned in registers
    (``common._write_moved``), bytes at the ends one by one. Launch with
    ``swap_smem_bytes(panel_bytes, save_bytes)`` of dynamic shared memory.
    """
    if panel_bytes % 16 or panel_bytes < 32:
        raise ValueError(f"panel_bytes must be a multiple of 16 and >= 32, got {panel_bytes}")
    swap_lane = _swap_lane(threads, panel_bytes)
    jit_options = {} if SIMULATED else {"launch_bounds": threads}

    @cuda.jit(**jit_options)
    def kernel(data, shifts, rows, seg, n, item, shift_stride, head0, save_bytes):
        sm32 = cuda.shared.array(0, uint32)
        tid = cuda.threadIdx.x
        for lane in range(int64(cuda.blockIdx.x), rows, int64(cuda.gridDim.x)):
            s = load_i64(shifts, lane * shift_stride) % n  # Python's modulo: in [0, n)
            if s == 0:
                continue
            row_pos = lane * seg
            head = (head0 + row_pos) & 15
            swap_lane(sm32, data, row_pos, head, seg, (n - s) * item, save_bytes, tid)  # right by s: left n - s

    return kernel
