"""Lanes that share nothing: the CPU's ``chain-lanes`` and ``chain-serial`` plan tables.

Built on the chain order of ``rotate._schedules.chain``: every byte a lane reads that another lane
writes is pre-read, so lanes need no waits and run in any interleaving (``rotate._testing.emulator``
checks that). ``lattice_chains`` picks chain steps whose pre-reads stay small for a random shift.
"""

from __future__ import annotations

import functools

import numpy as np
from numba.core.extending import register_jitable

from .chain import (MAX_RUNS, PRE, RING, TILE_FIELDS, T_LO, T_OFFSET, T_VECS, WAIT, align_down, align_up, ceil_div,
                    chain_shape, chain_step, classify, gcd, max_tiles, mod_inverse, pack_item, pre_big, pre_group_at,
                    pre_list, reader_run, source_run, tile_at, tile_count, tile_dest)


# --- lanes that share nothing: the CPU's chain-lanes -------------------------------
#
# numba's CPU target has no flags a thread could wait on, and a thread a lane may run in any order the
# threading layer picks (prange over workqueue, OpenMP or TBB). So the CPU cuts a row's chain positions
# into lanes of ``lane_steps`` positions that never wait: a byte whose reader is in another lane is
# ``PRE`` whichever lane comes first (``free_classify``: ``classify``'s ``WAIT`` becomes ``PRE``), and all
# pre-reads are copied, by every lane in parallel, before any lane writes. Within a lane the rules are the
# one-lane ones: a reader earlier in the walk (``SELF``), at most ``ring - 1`` positions later (``RING``,
# read ahead), or ``PRE``. The table is the GPU's format (``layout_free_lanes``), so one runner and one
# emulator read it.
#
# The chain step: the bytes of tile ``j`` go to tiles ``j + q`` and ``j + q + 1`` (``k = qT + r``; the
# wrapped part one tile further at most). A step ``p`` with ``u = p^-1 mod m`` puts tile ``j + d`` at
# ``d u`` positions after tile ``j`` (mod ``m``), so a piece crosses a lane's end (or the walk's) for about
# ``d u mod m`` items a boundary: both ``x = q u`` and ``y = (q + 1) u`` should be small and not far
# negative. Such ``(x, y)`` are short vectors of the lattice ``{(q u, (q + 1) u) mod m}`` (basis
# ``(q, q + 1)``, ``(m, m)``, determinant ``m``), about ``sqrt(m)`` long for a random shift: a boundary
# then costs about ``T sqrt(m) = sqrt(n T)`` pre-read bytes, where ``q`` or ``q + 1`` alone costs
# ``r`` bytes a tile. ``lattice_chains`` lists the steps of the shortest few; structured shifts (n/3,
# n/2 + c) have ``x, y`` within the ring at ``p = q`` or ``q + 1``, which are always tried.


@register_jitable
def free_classify(m, g, length, inv, lane_steps, ring, reader, writer):
    """``classify`` for lanes that never wait: a reader in another lane is ``PRE`` (no ``WAIT``)."""
    kind = classify(m, g, length, inv, lane_steps, ring, 0, reader, writer)
    if kind == WAIT:
        return PRE
    return kind


@register_jitable
def free_pre_span(n, k, head, tile_bytes, m, g, length, inv, lane_steps, ring, w):
    """``pre_span`` under ``free_classify``: positions ``[lo, hi)`` of tile ``w`` to pre-read (16-byte aligned in
    memory); ``lo >= hi``: none."""
    x0, x1 = tile_dest(n, head, tile_bytes, w)
    lo = x1
    hi = x0
    z = x0
    while z < x1:
        reader, run_end = reader_run(n, k, head, tile_bytes, z, x1)
        if free_classify(m, g, length, inv, lane_steps, ring, reader, w) == PRE:
            if z < lo:
                lo = z
            if run_end > hi:
                hi = run_end
        z = run_end
    if lo >= hi:
        return 1, 0
    return align_down(head + lo) - head, align_up(head + hi) - head


@register_jitable
def free_piece_kinds(n, k, head, tile_bytes, m, g, length, inv, lane_steps, ring, j):
    """``(piece_kinds, ok)``: ``free_classify(j, writer)`` of each ``source_run`` of tile ``j``, 2 bits a run
    (``pack_item``'s order); ``ok`` 0 past ``MAX_RUNS`` runs."""
    x0, x1 = tile_dest(n, head, tile_bytes, j)
    pieces = 0
    count = 0
    x = x0
    while x < x1:
        writer, z, end = source_run(n, k, head, tile_bytes, x, x1)
        if count >= MAX_RUNS:
            return 0, 0
        pieces |= free_classify(m, g, length, inv, lane_steps, ring, j, writer) << (2 * count)
        count += 1
        x = end
    return pieces, 1


@register_jitable
def free_lane_count(m, lane_steps):
    """Lanes of ``lane_steps`` positions a row of ``m`` tiles is cut into."""
    return ceil_div(m, lane_steps)


@register_jitable
def layout_free_lanes(n, k, head, tile_bytes, chain, lane_steps, ring, table, table_base):
    """Fill one head's part of a plan table (``layout_pre_reads``' format) for lanes that never wait.

    Per tile: its pre-read span (``free_pre_span``), spans back to back in tile order, so a span's scratch
    offset is the bytes listed before it (the runner splits them between lanes by that). Per chain position:
    the tile and its pieces' kinds (``free_piece_kinds``; readers' kinds and ring reach 0). Returns the row's
    pre-read bytes, or -1 if a tile has too many runs.
    """
    m = tile_count(n, head, tile_bytes)
    p = chain_step(m, chain)
    g, length, inv = chain_shape(m, p)
    m_max = max_tiles(n, tile_bytes)
    items = table_base + TILE_FIELDS * m_max
    listed = table_base + pre_list(m_max)
    table[listed] = 0
    total = 0
    for w in range(m_max):
        entry = table_base + TILE_FIELDS * w
        table[entry + T_OFFSET] = -1
        table[entry + T_LO] = 0
        table[entry + T_VECS] = 0
        table[items + w] = -1
        if w >= m:
            continue
        j = tile_at(m, p, g, length, w)
        pieces, ok = free_piece_kinds(n, k, head, tile_bytes, m, g, length, inv, lane_steps, ring, j)
        if not ok:
            return -1
        table[items + w] = pack_item(j, pieces, 0, 0)
        lo, hi = free_pre_span(n, k, head, tile_bytes, m, g, length, inv, lane_steps, ring, w)
        if lo < hi:
            table[entry + T_OFFSET] = total
            table[entry + T_LO] = lo
            table[entry + T_VECS] = (hi - lo) // 16
            total += hi - lo
            table[listed] += 1
            table[listed + table[listed]] = w
    table[table_base + pre_big(m_max)] = 0
    table[table_base + pre_group_at(m_max)] = 1
    return total


@register_jitable
def free_pre_bytes(n, k, head, tile_bytes, chain, lane_steps, ring, limit):
    """The bytes ``layout_free_lanes`` lists (every span, 16-byte aligned): what the planner ranks by. Stops
    counting once they pass ``limit`` (a candidate already beaten) and returns what it has then."""
    m = tile_count(n, head, tile_bytes)
    p = chain_step(m, chain)
    g, length, inv = chain_shape(m, p)
    total = 0
    for w in range(m):
        lo, hi = free_pre_span(n, k, head, tile_bytes, m, g, length, inv, lane_steps, ring, w)
        if lo < hi:
            total += hi - lo
            if total > limit:
                return total
    return total


@register_jitable
def free_ring_bytes(n, k, head, tile_bytes, chain, lane_steps, ring, samples):
    """Bytes of one row ``free_classify`` marks ``RING``, estimated from ``samples`` tiles (low-discrepancy:
    tile ``i * s mod m``, ``s`` the odd step near ``0.618 m`` coprime to ``m``; every tile when ``m <=
    samples``). The CPU walk copies those bytes row -> ring -> row, two copies more than a direct one."""
    m = tile_count(n, head, tile_bytes)
    p = chain_step(m, chain)
    g, length, inv = chain_shape(m, p)
    count = m if m <= samples else samples
    s = 1
    if count < m:
        s = (m * 618) // 1000 | 1
        while gcd(s, m) != 1:
            s += 2
    ring_bytes = 0
    seen = 0
    for i in range(count):
        w = (i * s) % m
        x0, x1 = tile_dest(n, head, tile_bytes, w)
        z = x0
        while z < x1:
            reader, run_end = reader_run(n, k, head, tile_bytes, z, x1)
            if free_classify(m, g, length, inv, lane_steps, ring, reader, w) == RING:
                ring_bytes += run_end - z
            z = run_end
        seen += x1 - x0
    if seen == 0:
        return 0
    return ring_bytes * n // seen


@register_jitable
def _lattice_reduce(ax, ay, bx, by):
    """Lagrange-Gauss reduction of the basis ``(ax, ay), (bx, by)``: the shortest vector first."""
    if ax * ax + ay * ay > bx * bx + by * by:
        ax, ay, bx, by = bx, by, ax, ay
    while True:
        norm = ax * ax + ay * ay
        if norm == 0:
            return ax, ay, bx, by
        dot = ax * bx + ay * by
        # round(dot / norm) in integers
        t = (2 * dot + norm) // (2 * norm)
        bx -= t * ax
        by -= t * ay
        if bx * bx + by * by >= norm:
            return ax, ay, bx, by
        ax, ay, bx, by = bx, by, ax, ay


#: Combinations ``i v1 + j v2`` of the reduced basis ``lattice_chains`` looks at: ``|i|, |j|`` up to this.
LATTICE_REACH = 3


@register_jitable
def lattice_chains(n, k, head, tile_bytes, ring, out):
    """Chain steps whose walk keeps tile ``j``'s sources near it (the short lattice vectors above).

    Fills ``out`` with up to ``len(out)`` distinct steps, best first by ``(T - r) x + r y`` (``x, y`` at
    least ``-(ring - 1)``: a piece that far behind is read ahead by the ring), after ``q`` and ``q + 1``
    (reduced by ``chain_step``), which come first; returns how many.
    """
    m = tile_count(n, head, tile_bytes)
    cap = len(out)
    count = 0
    q = k // tile_bytes
    r = k - q * tile_bytes
    for c in (q, q + 1):
        p = chain_step(m, c)
        seen = False
        for i in range(count):
            if out[i] == p:
                seen = True
        if not seen and count < cap:
            out[count] = p
            count += 1
    if m < 3:
        return count
    ax, ay, bx, by = _lattice_reduce(q % m, (q + 1) % m, m, m)
    width = 2 * LATTICE_REACH + 1
    scores = np.empty(width * width, np.int64)
    steps = np.empty(width * width, np.int64)
    found = 0
    for i in range(-LATTICE_REACH, LATTICE_REACH + 1):
        for j in range(-LATTICE_REACH, LATTICE_REACH + 1):
            x = i * ax + j * bx
            y = i * ay + j * by
            if x < 1 - ring or y < 1 - ring or (x == 0 and y == 0):
                continue
            u = (y - x) % m
            if u == 0 or gcd(u, m) != 1:
                continue
            p = mod_inverse(u, m)
            scores[found] = (tile_bytes - r) * max(x, 0) + r * max(y, 0)
            steps[found] = p
            found += 1
    while count < cap and found > 0:
        best = 0
        for i in range(1, found):
            if scores[i] < scores[best]:
                best = i
        p = steps[best]
        found -= 1
        scores[best] = scores[found]
        steps[best] = steps[found]
        seen = False
        for i in range(count):
            if out[i] == p:
                seen = True
        if not seen:
            out[count] = p
            count += 1
    return count


@functools.lru_cache(maxsize=1)
def compiled_free_builders():
    """``(layout, pre_bytes)``: ``layout_free_lanes`` and ``free_pre_bytes`` compiled for the CPU (``@njit``):
    the CPU planner's ``chain-lanes`` tables and choice for rows too long to interpret (``lattice_chains``,
    a few dozen lattice points, is always interpreted)."""
    from numba import njit

    @njit(cache=True)
    def layout(n, k, head, tile_bytes, chain, lane_steps, ring, table, table_base):
        return layout_free_lanes(n, k, head, tile_bytes, chain, lane_steps, ring, table, table_base)

    @njit(cache=True)
    def pre_bytes(n, k, head, tile_bytes, chain, lane_steps, ring, limit):
        return free_pre_bytes(n, k, head, tile_bytes, chain, lane_steps, ring, limit)

    return layout, pre_bytes
