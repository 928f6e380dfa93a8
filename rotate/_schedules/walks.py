"""Index math of lane walks: a block walks its own lane in chain order, with a ring of look-ahead copies.

The pre-read bytes of a lane walked by one block in closed form (``walk_pre_bytes``), the walk's cost
model and its tile choice (``walk_choose``, ``walk_decision``: the planner's and the kernel's, one
definition), and where a walk's copies may land (``walk_span``, ``walk_reach``). Built on the chain
order of ``rotate._schedules.chain``; ``register_jitable`` like it, so the CUDA kernel
(``rotate/_backends/cuda/kernels/walks.py``), the planner and the emulator share it.
"""

from __future__ import annotations

from numba.core.extending import register_jitable

from .chain import (align_up, ceil_div, chain_shape, chain_step, position_of, pre_span, reader_run, source_run,
                    tile_count, tile_dest)


# --- a lane walked by one block: its pre-read bytes in closed form ---------------
#
# A block that owns a whole lane and writes its tiles in chain order (one lane of all ``m`` tiles, a ring of
# one: tests/schedules/test_long_lane_walks.py, docs/results/long-lane-walks-probe.json) must pre-read every byte
# whose reader tile comes after its writer tile in that order. Counting them tile by tile
# (``count_kinds``) is a walk over all ``m`` tiles, too slow for a block choosing among many tile sizes.
# ``walk_pre_bytes`` counts the same bytes in O(log m): a full tile's bytes go to at most two writer tiles
# ``t + d`` with ``d`` fixed in each of the two regions (source not wrapped, wrapped), and whether
# ``t + d`` precedes ``t`` in chain order depends on ``t mod g`` alone, or, for ``d`` a multiple of ``g``,
# on whether ``(t div g) * inv mod L`` falls in a window: residues of an arithmetic progression, counted
# with a floor sum. The few tiles that are partial or straddle the wrap are counted run by run.


@register_jitable
def floor_sum(count, mod, a, b):
    """``sum(floor((a * i + b) / mod) for i in range(count))`` for ``count >= 0``, ``mod > 0``, ``a, b >= 0``
    (the Euclid-like reduction: O(log mod) steps)."""
    total = 0
    while True:
        if a >= mod:
            total += (count * (count - 1) // 2) * (a // mod)
            a %= mod
        if b >= mod:
            total += count * (b // mod)
            b %= mod
        top = a * count + b
        if top < mod:
            return total
        count = top // mod
        b = top % mod
        mod, a = a, mod


@register_jitable
def _residues_at_least(u0, u1, step, low, mod):
    """How many ``u`` in ``[u0, u1)`` have ``(u * step) mod mod >= low`` (``0 < low < mod``)."""
    if u1 <= u0:
        return 0
    base = (u0 % mod) * step % mod
    # (u * step mod mod) >= low  <=>  floor((u * step + mod - low) / mod) - floor(u * step / mod) == 1
    return (floor_sum(u1 - u0, mod, step, base + mod - low) - floor_sum(u1 - u0, mod, step, base))


@register_jitable
def _mod_at_least(t0, t1, g, low):
    """How many ``t`` in ``[t0, t1)`` have ``t mod g >= low``."""
    def below(x):
        return (x // g) * (g - low) + max(0, x % g - low)
    return below(t1) - below(t0)


@register_jitable
def _earlier_count(t0, t1, d, g, length, inv):
    """How many tiles ``t`` in ``[t0, t1)`` have tile ``t + d`` (a tile of the row) earlier in chain order
    (``position_of(t + d) < position_of(t)``)."""
    if t1 <= t0:
        return 0
    a = d // g
    b = d - a * g
    if b != 0:  # another cycle: an earlier one exactly when t's cycle index passes g - b
        return _mod_at_least(t0, t1, g, g - b)
    e = (a % length) * inv % length  # same cycle, e steps on (mod L): earlier when the step wraps
    if e == 0:
        return 0
    low = length - e
    u_first = t0 // g
    u_last = (t1 - 1) // g
    first_hit = 1 if (u_first % length) * inv % length >= low else 0  # the partial cycle ranks at the ends
    if u_first == u_last:
        return (t1 - t0) * first_hit
    last_hit = 1 if (u_last % length) * inv % length >= low else 0
    return ((g * (u_first + 1) - t0) * first_hit + (t1 - g * u_last) * last_hit
            + g * _residues_at_least(u_first + 1, u_last, inv, low, length))


@register_jitable
def _tile_pre_bytes(n, k, head, tile_bytes, m, g, length, inv, t):
    """Bytes of destination tile ``t`` whose writer tile comes earlier in chain order (run by run)."""
    x0, x1 = tile_dest(n, head, tile_bytes, t)
    pos_t = position_of(m, g, length, inv, t)
    total = 0
    x = x0
    while x < x1:
        writer, z, end = source_run(n, k, head, tile_bytes, x, x1)
        if position_of(m, g, length, inv, writer) < pos_t:
            total += end - x
        x = end
    return total


@register_jitable
def walk_pre_bytes(n, k, head, tile_bytes, chain):
    """The bytes a block walking one lane of ``n`` bytes (rolled left by ``k``, ``0 <= k < n``) in chain
    order must pre-read: ``count_kinds(n, k, head, tile_bytes, chain, m, 1, 0)``'s PRE count, in O(log m)."""
    m = tile_count(n, head, tile_bytes)
    p = chain_step(m, chain)
    g, length, inv = chain_shape(m, p)
    if k == 0 or m == 1:
        return 0
    q = k // tile_bytes
    r = k - q * tile_bytes
    back = n - k  # region B (x >= n - k) reads x - back
    qb = back // tile_bytes
    rb = back - qb * tile_bytes
    # Full tiles wholly in region A: [a0, a1); wholly in region B: [b0, b1).
    a0 = 1 if head > 0 else 0
    a1 = (n - k + head) // tile_bytes
    b0 = ceil_div(n - k + head, tile_bytes)
    b1 = (n + head) // tile_bytes
    total = 0
    if a1 > a0:
        total += (tile_bytes - r) * _earlier_count(a0, a1, q, g, length, inv)
        if r:
            total += r * _earlier_count(a0, a1, q + 1, g, length, inv)
    if b1 > b0:
        total += (tile_bytes - rb) * _earlier_count(b0, b1, -qb, g, length, inv)
        if rb:
            total += rb * _earlier_count(b0, b1, -qb - 1, g, length, inv)
    # The rest, at most three tiles: a partial first tile, the tile the wrap cuts, a partial last tile.
    for t in range(0, a0):
        total += _tile_pre_bytes(n, k, head, tile_bytes, m, g, length, inv, t)
    for t in range(max(a0, a1), b0):
        total += _tile_pre_bytes(n, k, head, tile_bytes, m, g, length, inv, t)
    for t in range(max(b0, b1), m):
        total += _tile_pre_bytes(n, k, head, tile_bytes, m, g, length, inv, t)
    return total


# --- lane walks: a block walks its own lane with a ring of look-ahead copies ----------
#
# ``lane-walks`` (rotate/_backends/cuda/kernels/walks.py ``walk_kernel``, docs/design.md "Lane walks"): one block owns a
# lane and writes its tiles in chain order, the copies of the next ``reach`` items taken before an item
# writes. A piece whose reader is at most ``reach`` positions after its writer is read from the lane by
# that look-ahead (``RING``: the writer waits for those copies to land); one further behind is pre-read
# into the block's scratch before the walk (``classify`` with a ring of ``reach + 1``, one lane of all
# ``m`` tiles). The block picks its own tile size and chain step from an estimate of those pre-read
# bytes that costs O(log m) a candidate (``walk_estimate``), then counts the chosen walk's spans exactly.

#: The estimate's fractions are integers over this (the same choice on the CPU and the GPU: no floats).
WALK_SCALE = 1 << 16
#: Chain steps a tile size is tried with: ``q`` and ``q + 1`` of the unwrapped source, then of the wrapped.
WALK_CHAINS = 4


@register_jitable
def walk_late_share(d, m, g, length, inv, reach):
    """Of the items reading tile ``t + d`` (mod ``m``), about what share comes more than ``reach``
    positions after that tile's writer, times ``WALK_SCALE``.

    ``t + d`` lies in cycle ``(c + d) mod g`` of item ``t``'s cycle ``c``: an earlier cycle (for a share
    ``(d mod g) / g`` of the cycles) is written long before. In the same cycle (``d`` a multiple of
    ``g``) it sits ``delta = (d / g) * inv mod L`` positions on, wrapping to ``L - delta`` positions
    before for a share ``delta / L`` of the items.
    """
    d = d % m
    if d % g != 0:
        return (d % g) * WALK_SCALE // g
    delta = ((d // g) * inv) % length
    if length - delta > reach:
        return delta * WALK_SCALE // length
    return 0


@register_jitable
def walk_estimate(n, k, head, tile_bytes, chain, reach):
    """About how many bytes the walk of tile size ``tile_bytes`` and chain step ``chain`` pre-reads.

    A destination tile ``j`` reads ``T - r`` bytes from tile ``j + q`` and
    ``r`` from ``j + q + 1``, with ``k = q T + r`` where its source does not
    wrap (``n - k`` bytes of the lane) and ``k + m T - n`` where it does (``k``
    bytes); each part costs its bytes times ``walk_late_share``. Tiles cut at
    the lane's ends and the wrap are not counted apart, so this ranks
    candidates; the spans the walk pre-reads are counted exactly
    (``walk_span``).
    """
    m = tile_count(n, head, tile_bytes)
    p = chain_step(m, chain)
    g, length, inv = chain_shape(m, p)
    total = 0
    shift = k
    region = n - k
    for _ in range(2):
        q = shift // tile_bytes
        r = shift - q * tile_bytes
        items = region // tile_bytes
        total += items * ((tile_bytes - r) * walk_late_share(q, m, g, length, inv, reach)
                          + r * walk_late_share(q + 1, m, g, length, inv, reach))
        shift = k + m * tile_bytes - n
        region = k
    return total // WALK_SCALE


@register_jitable
def walk_candidate(n, k, head, tile_hi, index):
    """Candidate ``index`` of a walk's choice: ``(tile_bytes, chain)``, tile sizes from ``tile_hi`` down in
    16-byte steps, ``WALK_CHAINS`` chain steps each; ``chain <= 0`` or ``>= m``: not a candidate."""
    tile_bytes = tile_hi - 16 * (index // WALK_CHAINS)
    which = index % WALK_CHAINS
    m = tile_count(n, head, tile_bytes)
    shift = k if which < 2 else k + m * tile_bytes - n
    chain = shift // tile_bytes + (which & 1)
    if chain >= m:
        chain = 0
    return tile_bytes, chain


@register_jitable
def walk_sizes(tile_lo, tile_hi):
    """Tile sizes a walk chooses from: ``tile_hi`` down to ``tile_lo`` in 16-byte steps."""
    return (tile_hi - tile_lo) // 16 + 1


@register_jitable
def walk_tile_range(n, tile_max, max_tiles_):
    """``(tile_lo, tile_hi)``: the tile sizes a lane of ``n`` bytes chooses from (multiples of 16): at most
    ``tile_max``, at least half that, and never more than ``max_tiles_`` tiles."""
    tile_hi = tile_max
    tile_lo = tile_max // 2
    least = align_up(ceil_div(n + 15, max_tiles_))
    if tile_lo < least:
        tile_lo = least
    return tile_lo, tile_hi


#: Chunks the choice splits a lane's tile sizes into: each chunk's likeliest size (``walk_residue_score``)
#: is estimated in full, ``WALK_CHAINS`` estimates a chunk, a thread each, so a choice is at most
#: ``WALK_CHUNKS * WALK_CHAINS`` = 256 estimates, one round of the kernel's block (the estimate's modular
#: inverses dominate a block's setup of a lane: one estimate a size was too slow on an H200, and chunks
#: of 8 sizes took 2-3 rounds, 30-53 us a lane; docs/tuning.md, "WALK_CHUNKS").
WALK_CHUNKS = 64


@register_jitable
def walk_chunk(sizes):
    """Tile sizes a chunk holds when a choice has ``sizes`` of them: at most ``WALK_CHUNKS`` chunks."""
    return ceil_div(sizes, WALK_CHUNKS)


@register_jitable
def walk_residue_score(n, k, head, tile_bytes):
    """How far the two source regions sit from the tile grid: ``(n - k) d(k) + k d(k + m T - n)``,
    ``d(x)`` the distance of ``x`` from a multiple of ``T``. A tile size that cuts either region's source
    on (or near) tile boundaries leaves few bytes to straddle two writers; ``walk_estimate`` then
    weighs where those writers lie in the walk."""
    m = tile_count(n, head, tile_bytes)
    total = 0
    shift = k
    weight = n - k
    for _ in range(2):
        r = shift % tile_bytes
        total += weight * min(r, tile_bytes - r)
        shift = k + m * tile_bytes - n
        weight = k
    return total


@register_jitable
def walk_chunk_size(n, k, head, tile_hi, sizes, chunk):
    """Chunk ``chunk``'s tile size (an index from ``tile_hi`` down; -1: an empty chunk): of the
    ``walk_chunk(sizes)`` sizes from ``walk_chunk(sizes) * chunk`` on, the one of least
    ``walk_residue_score`` (ties: the larger)."""
    width = walk_chunk(sizes)
    first = chunk * width
    last = min(sizes, first + width)
    best_size = -1
    best_score = -1
    for size in range(first, last):
        score = walk_residue_score(n, k, head, tile_hi - 16 * size)
        if best_score < 0 or score < best_score:
            best_score = score
            best_size = size
    return best_size


#: What an item costs a walk beyond its bytes, in pre-read bytes (each moves twice more): on an H200 an
#: item of 5-21 KiB took 1.7-1.9 us whatever its size (docs/results/walk-trace-item-bytes-*.json), so fewer, larger tiles
#: win unless they pre-read much more.
WALK_ITEM_BYTES = 8 * 1024


@register_jitable
def walk_pick_cost(n, k, head, tile_hi, sizes, pick, reach, share):
    """``(cost, index)`` of pick ``pick``: chain step ``pick % WALK_CHAINS`` of chunk ``pick // WALK_CHAINS``'s
    tile size; the cost is ``walk_estimate`` plus ``WALK_ITEM_BYTES`` a tile, plus the lane's bytes when
    the estimate exceeds ``share`` (such a walk would likely not fit the block's scratch); index -1: no
    candidate."""
    return walk_size_cost(n, k, head, tile_hi, walk_chunk_size(n, k, head, tile_hi, sizes, pick // WALK_CHAINS),
                          pick % WALK_CHAINS, reach, share)


@register_jitable
def walk_size_cost(n, k, head, tile_hi, size, which, reach, share):
    """``walk_pick_cost`` once its chunk's tile size ``size`` is known (-1: an empty chunk): chain step
    ``which`` of that size. The kernel scores every size once and finds each chunk's from the scores."""
    if size < 0:
        return -1, -1
    index = size * WALK_CHAINS + which
    tile_bytes, chain = walk_candidate(n, k, head, tile_hi, index)
    if chain <= 0:
        return -1, -1
    estimate = walk_estimate(n, k, head, tile_bytes, chain, reach)
    cost = estimate + tile_count(n, head, tile_bytes) * WALK_ITEM_BYTES
    if estimate > share:
        cost += n
    return cost, index


@register_jitable
def walk_picks(tile_lo, tile_hi):
    """Candidates a choice estimates: ``WALK_CHAINS`` chain steps of each chunk's tile size."""
    sizes = walk_sizes(tile_lo, tile_hi)
    return ceil_div(sizes, walk_chunk(sizes)) * WALK_CHAINS


@register_jitable
def walk_choose(n, k, head, tile_lo, tile_hi, reach, share):
    """``(cost, index)``: the cheapest pick (ties: the smaller index), as the kernel's block reduces its
    threads' picks (a thread a pick)."""
    sizes = walk_sizes(tile_lo, tile_hi)
    best = -1
    best_index = -1
    for pick in range(walk_picks(tile_lo, tile_hi)):
        cost, index = walk_pick_cost(n, k, head, tile_hi, sizes, pick, reach, share)
        if index >= 0 and (best_index < 0 or cost < best or (cost == best and index < best_index)):
            best = cost
            best_index = index
    return best, best_index


@register_jitable
def walk_decision(n, k, head, tile_max, max_tiles, reach, share, pool_left):
    """``(tile_bytes, chain, pre_bytes)``: the walk ``walk_kernel`` takes for a lane of ``n`` bytes rotated left
    by ``k > 0`` (its choice, then its spans counted exactly), or ``tile_bytes == 0`` where it takes block
    swaps instead (too many tiles, no candidate, or spans over both the block's ``share`` and the
    ``pool_left`` bytes the launch's pool still has). A walk with ``pre_bytes > share`` holds its pre-reads
    in the pool; a lane turned away for want of room still reports its ``pre_bytes`` (the kernel's pool
    counter grows by them all the same). The kernel decides the same in parallel; the planner's traffic
    count and the emulator call this."""
    tile_lo, tile_hi = walk_tile_range(n, tile_max, max_tiles)
    if tile_lo > tile_hi:
        return 0, 0, 0
    _, index = walk_choose(n, k, head, tile_lo, tile_hi, reach, share)
    if index < 0:
        return 0, 0, 0
    tile_bytes, chain = walk_candidate(n, k, head, tile_hi, index)
    m = tile_count(n, head, tile_bytes)
    g, length, inv = chain_shape(m, chain_step(m, chain))
    total = 0
    for w in range(m):
        lo, hi = walk_span(n, k, head, tile_bytes, m, g, length, inv, reach, w)
        if lo < hi:
            total += hi - lo
    if total > share and total > pool_left:
        return 0, 0, total
    return tile_bytes, chain, total


@register_jitable
def walk_span(n, k, head, tile_bytes, m, g, length, inv, reach, w):
    """Positions ``[lo, hi)`` of tile ``w`` the walk pre-reads (16-byte aligned in memory; ``lo >= hi``:
    none): ``pre_span`` over one lane of all ``m`` tiles with a ring of ``reach + 1``."""
    return pre_span(n, k, head, tile_bytes, m, g, length, inv, m, reach + 1, 0, w)


@register_jitable
def walk_reach(n, k, head, tile_bytes, rank, rank0, position, tile, reach):
    """How many positions after ``position`` (tile ``tile``) the item's last look-ahead reader lies
    (0: none within ``reach``): the writer waits for that reader's copies. ``rank[rank0 + t]``: tile
    ``t``'s position."""
    x0, x1 = tile_dest(n, head, tile_bytes, tile)
    farthest = 0
    z = x0
    while z < x1:
        reader, end = reader_run(n, k, head, tile_bytes, z, x1)
        ahead = rank[rank0 + reader] - position
        if ahead > farthest and ahead <= reach:
            farthest = ahead
        z = end
    return farthest
