"""``roll_rows``' long-lane schedules emulated: lane-swaps (Gries-Mills swaps, then the saved small side)
and lane-walks (a block walking its lane in chain order, copies landing whenever the scheduler says)."""

from __future__ import annotations

import numpy as np

from ..._schedules import chain as S
from ..._schedules import gries_mills
from ..._schedules import walks as SW
from .chain import ScheduleError

def emulate_lane_swaps(lane: np.ndarray, k: int, save: int, panel: int, head: int, late: bool) -> np.ndarray:
    """One lane of ``lane-swaps`` (``rotate._backends.cuda.kernels.lane_swaps.swap_kernel``) rotated left by ``k`` bytes, on the CPU.

    Walks the kernel's steps with its index math (``swap_step``,
    ``saved_rotation``, ``tile_dest`` on a lane ``head`` bytes past a 16-byte
    boundary). Each panel (a swap pair, or a move panel) is staged one panel
    ahead of the one being written, as the kernel's copies are; an
    asynchronous copy may read memory at any time until it is waited for, so
    ``late`` reads each staged panel after the panel before it was written
    (``late=False``: at once). Both must equal ``numpy.roll``: a panel whose
    source overlaps the previous panel's destination gives different bytes.
    Returns the rotated lane (a copy).
    """
    x = np.array(lane, copy=True)

    def pipeline(items):
        """Write each item's moves ``(src, dst, count)`` from bytes staged one item ahead."""
        read = lambda item: [x[s:s + c].copy() for s, _, c in item]  # noqa: E731
        staged = read(items[0]) if items else None
        for i, item in enumerate(items):
            ahead = read(items[i + 1]) if i + 1 < len(items) and not late else None
            for (_, d, c), data in zip(item, staged):
                x[d:d + c] = data
            staged = read(items[i + 1]) if i + 1 < len(items) and late else ahead

    lo, n = 0, len(x)
    while k != 0 and min(k, n - k) > save:
        a, b, m, lo, n, k = gries_mills.swap_step(lo, n, k)
        grid = (head + a) & 15
        tiles = [S.tile_dest(m, grid, panel, j) for j in range(S.tile_count(m, grid, panel))]
        pipeline([[(a + x0, b + x0, x1 - x0), (b + x0, a + x0, x1 - x0)] for x0, x1 in tiles])
    if k != 0:
        save_at, count, src, dst, length, put = gries_mills.saved_rotation(lo, n, k)
        saved = x[save_at:save_at + count].copy()  # its group is the oldest: landed before any write
        grid = (head + dst) & 15
        tiles = [S.tile_dest(length, grid, panel, j) for j in range(S.tile_count(length, grid, panel))]
        if dst > src:  # moving up: walk the panels downwards
            tiles.reverse()
        pipeline([[(src + x0, dst + x0, x1 - x0)] for x0, x1 in tiles])
        x[put:put + count] = saved
    return x


def walk_plan(n: int, k: int, head: int, tile_max: int, max_tiles: int, reach: int, share: int, save: int,
              pool_left: int = 0):
    """What ``lane-walks`` (``rotate._backends.cuda.kernels.walks.walk_kernel``) does with one lane of ``n`` bytes rotated left
    by ``k``: ``("none",)``, ``("swaps", pre_bytes)`` (the lane would have too many tiles, or its pre-reads,
    ``pre_bytes``, exceed both the block's ``share`` of scratch and the ``pool_left`` bytes left in the
    launch's pool, which the kernel's pool counter takes all the same), or
    ``("walk", tile_bytes, chain, spans, offsets, total)`` with each tile's pre-read span and its offset
    in the lane's scratch (the pool's when ``total > share``). The kernel decides with the same functions
    in the same order."""
    if k == 0:
        return ("none",)
    tile_bytes, chain, total = SW.walk_decision(n, k, head, tile_max, max_tiles, reach, share, pool_left)
    if tile_bytes == 0:
        return ("swaps", total)
    m = S.tile_count(n, head, tile_bytes)
    g, length, inv = S.chain_shape(m, S.chain_step(m, chain))
    spans = [SW.walk_span(n, k, head, tile_bytes, m, g, length, inv, reach, w) for w in range(m)]
    offsets = list(np.cumsum([0] + [max(hi - lo, 0) for lo, hi in spans[:-1]]))
    return ("walk", tile_bytes, chain, spans, offsets, total)


def emulate_lane_walk(lane: np.ndarray, k: int, head: int, tile_max: int, max_tiles: int, reach: int,
                      share: int, save: int, panel: int = 16 * 1024, pool_left: int = 0):
    """One lane of ``lane-walks`` rotated left by ``k`` bytes on the CPU: ``(rotated copy, plan)``.

    Runs the kernel's walk with its index math: pre-read spans copied to
    scratch first, then the tiles in chain order, the copies of each item
    started ``reach`` items before it writes (the kernel's ring of
    ``reach + 1`` buffers). An asynchronous copy may read the lane at any
    moment until the first wait that covers it (the writing of the item
    itself, or of an earlier item whose ring reach reaches it), so each copy
    is taken when it starts and checked unchanged when it must have landed:
    a ``RING`` reader the writer did not wait for, or an array piece whose
    writer came first, fails here. Lanes the walk does not take run
    ``emulate_lane_swaps``.
    """
    n = len(lane)
    plan = walk_plan(n, k, head, tile_max, max_tiles, reach, share, save, pool_left)
    if plan[0] == "none":
        return np.array(lane, copy=True), plan
    if plan[0] == "swaps":
        return emulate_lane_swaps(lane, k, save, panel, head, late=True), plan
    _, tile_bytes, chain, spans, offsets, total = plan
    x = np.array(lane, copy=True)
    m = S.tile_count(n, head, tile_bytes)
    p = S.chain_step(m, chain)
    g, length, inv = S.chain_shape(m, p)
    rank = np.empty(m, np.int64)
    for position in range(m):
        rank[S.tile_at(m, p, g, length, position)] = position
    scratch = {}
    for w, (lo, hi) in enumerate(spans):
        if lo < hi:
            lo_c, hi_c = max(lo, 0), min(hi, n)  # the span's vectors over-reach the lane's ends
            scratch[w] = (lo_c, x[lo_c:hi_c].copy())

    def sources(position):
        """``[(x_lo, x_hi, z, from_scratch)]`` and the bytes as the copy takes them now."""
        tile = S.tile_at(m, p, g, length, position)
        x0, x1 = S.tile_dest(n, head, tile_bytes, tile)
        pieces, data = [], []
        at = x0
        while at < x1:
            writer, z, end = S.source_run(n, k, head, tile_bytes, at, x1)
            late = rank[writer] + reach < position
            lo_w, hi_w = spans[writer]
            if late and not (lo_w <= z and z + (end - at) <= hi_w):  # a span may hold early pieces too
                raise ScheduleError(f"lane-walks: piece [{at}, {end}) of tile {tile} from tile {writer}: "
                                    f"pre-read {late}, span {spans[writer]}")
            pieces.append((at, end, z, late))
            if late:
                lo_c, held = scratch[writer]
                data.append(held[z - lo_c:z - lo_c + end - at].copy())
            else:
                data.append(x[z:z + end - at].copy())
            at = end
        return tile, x0, x1, pieces, data

    in_flight = {}
    for position in range(min(reach, m)):
        in_flight[position] = sources(position)
    for position in range(m):
        if position + reach < m:
            in_flight[position + reach] = sources(position + reach)
        tile = S.tile_at(m, p, g, length, position)
        farthest = SW.walk_reach(n, k, head, tile_bytes, rank, 0, position, tile, reach)
        for landed in range(position, position + farthest + 1):  # the copies this write waits for
            if landed in in_flight and in_flight[landed][0] is not None:
                _, _, _, pieces, data = in_flight[landed]
                for (lo, hi, z, late), held in zip(pieces, data):
                    if not late and not np.array_equal(x[z:z + hi - lo], held):
                        raise ScheduleError(f"lane-walks: item {landed}'s copy of [{z}, {z + hi - lo}) changed "
                                            f"before it landed (written before item {position})")
                in_flight[landed] = (None,) + in_flight[landed][1:]
        _, x0, x1, pieces, data = in_flight.pop(position)
        for (lo, hi, z, late), held in zip(pieces, data):
            x[lo:hi] = held
    return x, plan
