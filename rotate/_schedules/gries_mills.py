"""Gries-Mills block swaps for ``lane-swaps``: a lane rotated by swapping its shorter side with the far end
of the longer one until the rest fits a saved-small-side rotation (``register_jitable``: the kernel in
``rotate/_backends/cuda/kernels/lane_swaps.py``, its planner and the emulator share it).
"""

from __future__ import annotations

from numba.core.extending import register_jitable


# --- lane-swaps: Gries-Mills block swaps, then a saved-small-side rotation --------
#
# ``roll_rows`` lanes too long for a block's shared memory: one block rotates a
# whole lane (``rotate/_backends/cuda/kernels/lane_swaps.py``, ``swap_kernel``). The host planner
# (exact traffic for host shifts, ``schedules.block_swap.gries_mills``) and the kernel walk
# the same steps.


@register_jitable
def swap_step(lo, n, k):
    """One Gries-Mills block swap of "rotate ``[lo, lo + n)`` left by ``k``" (``0 < k < n``).

    Returns ``(a, b, m, lo, n, k)``: swap ``[a, a + m)`` with ``[b, b + m)``
    (disjoint: ``a + m <= b``); what is left is "rotate ``[lo, lo + n)`` left
    by ``k``" (``k == 0``: done). Each swap puts ``m`` bytes in their final
    place (Gries and Mills, 1981).
    """
    if k <= n - k:
        # [A B1 B2], |A| = |B2| = k: swap A and B2; A is final at the end.
        a, b, m = lo, lo + n - k, k
        n -= k
    else:
        # [A1 A2 B], |A1| = |B| = m: swap A1 and B; B is final at the front.
        m = n - k
        a, b = lo, lo + k
        lo += m
        n -= m
        k -= m
    if k == n:
        k = 0
    return a, b, m, lo, n, k


@register_jitable
def saved_rotation(lo, n, k):
    """"Rotate ``[lo, lo + n)`` left by ``k``" as: save the small side, move the rest, put the saved bytes back.

    Returns ``(save, count, src, dst, length, put)``: bytes ``[save, save +
    count)`` are saved (``count = min(k, n - k)``), ``[src, src + length)``
    move to ``[dst, dst + length)`` (down when ``dst < src``, else up), then
    the saved bytes go to ``[put, put + count)``. Every byte is read once and
    written once.
    """
    if k <= n - k:
        return lo, k, lo + k, lo, n - k, lo + n - k
    r = n - k
    return lo + k, r, lo, lo + r, k, lo


@register_jitable
def swap_traffic(n, k, save):
    """Bytes ``lane-swaps`` reads plus writes rotating an ``n``-byte lane left by ``k``
    (``0 <= k < n``) with a saved side of at most ``save`` bytes: 4 per swapped byte, then 2 per
    byte of the saved-small-side rotation."""
    lo = 0
    total = 0
    while k != 0 and min(k, n - k) > save:
        a, b, m, lo, n, k = swap_step(lo, n, k)
        total += 4 * m
    if k != 0:
        total += 2 * n
    return total
