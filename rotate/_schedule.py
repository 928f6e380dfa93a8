"""Index math of the flag-chained in-place rotation, shared by every runner.

These are plain functions registered with ``register_jitable``: the CUDA
kernel calls them as device functions, ``numba.njit`` code can call them,
and the CPU emulator (``rotate._emulator``) calls them from Python. One
definition, so the emulator that tests the schedule under adversarial
interleavings runs exactly the arithmetic the GPU runs.

The problem, per *row* (a segment of ``n`` bytes): rotate left by ``k``
bytes, ``0 < k < n``: ``new[x] = old[(x + k) % n]``. The segment's first
byte sits ``head`` bytes past a 16-byte boundary.

Tiles cut the *destination* on the 16-byte address grid: tile ``j`` covers
positions ``[max(0, j*T - head), min(n, (j+1)*T - head))``; all inner tile
boundaries are 16-byte aligned in memory.

The *seam* is the part of the source that wraps around:

* left schedule (``k <= n - k``): seam = positions ``[0, k)``; tiles are
  handed out in ascending order.
* right schedule (``k > n - k``): seam = positions ``[k, n)``; tiles are
  handed out in descending order.

Before the tiles run, a separate launch copies every row's seam
(over-copied to whole 16-byte vectors) into scratch; tiles whose source is
in the seam read it from there. Then each row has one ticket per tile.
The only wait is "the tiles that read the bytes I overwrite have published
read-done", and those tiles always hold smaller tickets of the same row
(docs/design.md proves it), so the kernel finishes with any number of
resident blocks, even one.

A ticket's waits are returned as inclusive ticket ranges ``(lo, hi)``;
``lo > hi`` means "nothing to wait for".
"""

from __future__ import annotations

from numba import uint64
from numba.core.extending import register_jitable

VECTOR = 16  # bytes per global load/store


@register_jitable
def align_down(x):
    return x - (x % 16)


@register_jitable
def align_up(x):
    return x + ((16 - x % 16) % 16)


@register_jitable
def ceil_div(a, b):
    return (a + b - 1) // b


@register_jitable
def is_left(n, k):
    """True when the seam is ``[0, k)`` (the shorter way round is left)."""
    return k <= n - k


@register_jitable
def seam_bounds(n, k):
    """Seam positions ``[lo, hi)``: the source bytes that wrap around."""
    if is_left(n, k):
        return 0, k
    return k, n


@register_jitable
def seam_origin(n, k, head):
    """Position of the first (16-byte aligned) seam vector; scratch byte 0 mirrors it."""
    lo, hi = seam_bounds(n, k)
    return align_down(head + lo) - head


@register_jitable
def seam_span(n, k, head):
    """Bytes of scratch the row's seam occupies (whole vectors)."""
    lo, hi = seam_bounds(n, k)
    return align_up(head + hi) - align_down(head + lo)


@register_jitable
def tile_count(n, head, tile_bytes):
    return ceil_div(head + n, tile_bytes)


@register_jitable
def max_seam_span(n, k):
    """Largest seam span over all 16 head offsets: the scratch a row needs."""
    lo, hi = seam_bounds(n, k)
    return align_up(hi - lo + 15) + 16


@register_jitable
def tickets_per_row(n, tile_bytes):
    """Tickets reserved per row: the most tiles any head offset gives, so rows start at fixed tickets."""
    return ceil_div(n + 15, tile_bytes)


@register_jitable
def row_head(head0, row, n):
    return (head0 + row * n) % 16


@register_jitable
def tile_dest(n, head, tile_bytes, j):
    """Destination positions ``[x0, x1)`` of tile ``j``."""
    x0 = j * tile_bytes - head
    x1 = x0 + tile_bytes
    if x0 < 0:
        x0 = 0
    if x1 > n:
        x1 = n
    return x0, x1


@register_jitable
def tile_of(head, tile_bytes, x):
    return (x + head) // tile_bytes


@register_jitable
def tile_ticket(n, k, head, tile_bytes, j):
    """Ticket (within the row) of tile ``j``: ascending tiles on the left schedule, descending on the right."""
    if is_left(n, k):
        return j
    return tile_count(n, head, tile_bytes) - 1 - j


@register_jitable
def decode_ticket(n, k, head, tile_bytes, local):
    """The tile ticket ``local`` of a row writes, or -1 for none.

    (The row's ticket range is an upper bound over head offsets.)
    """
    ntiles = tile_count(n, head, tile_bytes)
    if local >= ntiles:
        return -1
    if is_left(n, k):
        return local
    return ntiles - 1 - local


@register_jitable
def tile_parts(n, k, head, tile_bytes, j):
    """Split tile ``j``'s destination where its source wraps.

    Returns ``(x0, xs, x1)``: positions ``[x0, xs)`` read ``x + k`` (part A),
    ``[xs, x1)`` read ``x + k - n`` (part B).
    """
    x0, x1 = tile_dest(n, head, tile_bytes, j)
    xs = n - k
    if xs < x0:
        xs = x0
    if xs > x1:
        xs = x1
    return x0, xs, x1


@register_jitable
def waits_before_write(n, k, head, tile_bytes, j):
    """Tickets that must have published "read done" before tile ``j`` overwrites ``[x0, x1)``.

    Returns an inclusive ticket range ``(lo, hi)``, empty when ``lo > hi``:
    the tiles that read those positions from the array. Seam positions need
    no wait (their readers read scratch, filled before the launch), and
    tile ``j`` itself reads all of its source before it writes.
    """
    x0, x1 = tile_dest(n, head, tile_bytes, j)
    if is_left(n, k):
        # Non-seam positions [max(x0, k), x1) are read by destinations y - k: tiles <= j.
        lo = x0 if x0 > k else k
        if lo >= x1:
            return 1, 0
        t_lo = tile_of(head, tile_bytes, lo - k)
        t_hi = tile_of(head, tile_bytes, x1 - 1 - k)
        if t_hi >= j:
            t_hi = j - 1
        if t_lo > t_hi:
            return 1, 0
        return tile_ticket(n, k, head, tile_bytes, t_lo), tile_ticket(n, k, head, tile_bytes, t_hi)
    # Right: non-seam positions [x0, min(x1, k)) are read by destinations y + n - k: tiles >= j.
    hi = x1 if x1 < k else k
    if x0 >= hi:
        return 1, 0
    t_lo = tile_of(head, tile_bytes, x0 + n - k)
    t_hi = tile_of(head, tile_bytes, hi - 1 + n - k)
    if t_lo <= j:
        t_lo = j + 1
    if t_lo > t_hi:
        return 1, 0
    # Descending order: the larger tile has the smaller ticket.
    return tile_ticket(n, k, head, tile_bytes, t_hi), tile_ticket(n, k, head, tile_bytes, t_lo)


@register_jitable
def funnel(lo, hi, byte_shift):
    """Bytes ``[byte_shift, byte_shift + 4)`` of the little-endian pair ``lo, hi`` (one SHF)."""
    wide = (uint64(hi) << uint64(32)) | uint64(lo)
    return (wide >> uint64(byte_shift * 8)) & uint64(0xFFFFFFFF)


@register_jitable
def window5(word_shift, a0, a1, a2, a3, b0, b1, b2, b3):
    """Words ``word_shift .. word_shift + 4`` of the 8-word window ``a0..a3, b0..b3``.

    A branch on a block-uniform value instead of a run-time index into a
    register array, which would spill the array to local memory.
    """
    if word_shift == 0:
        return a0, a1, a2, a3, b0
    if word_shift == 1:
        return a1, a2, a3, b0, b1
    if word_shift == 2:
        return a2, a3, b0, b1, b2
    return a3, b0, b1, b2, b3
