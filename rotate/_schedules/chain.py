"""Index math of the chain-ordered in-place rotation, shared by every runner.

These are plain functions registered with ``register_jitable``: the CUDA
kernel calls them as device functions, ``numba.njit`` code (the planner's
scratch layout) calls them compiled for the CPU, and the emulator
(``rotate._testing.emulator``) calls them from Python. One definition, so the
schedule the emulator checks under adversarial interleavings is exactly the
one the GPU runs.

The problem, per *row* (a segment of ``n`` bytes): rotate left by ``k``
bytes, ``0 < k < n``: ``new[x] = old[(x + k) % n]``. The row's first byte
sits ``head`` bytes past a 16-byte boundary.

Tiles cut the *destination* on the 16-byte address grid: tile ``j`` covers
positions ``[max(0, j*T - head), min(n, (j+1)*T - head))`` (``tile_dest``);
all inner tile boundaries are 16-byte aligned in memory. Item ``j`` writes
tile ``j`` from source positions ``x + k (mod n)``.

The **chain order**: tiles are walked ``j, j + p, j + 2p, ... (mod m)`` with
``p`` about ``k / T``, so the item that reads most of tile ``j + p`` is the
one processed just before the item that overwrites it. The ``gcd(p, m)``
cycles of ``L = m / gcd(p, m)`` tiles are laid end to end as *positions*
``P = c * L + s`` (cycle ``c``, step ``s`` along it) and cut into *lanes* of
``S`` consecutive positions. A block draws a lane from a ticket counter and
processes its positions in order; the *key* of an item is ``(lane, step)``.

Every byte has exactly one writer (its tile) and one reader (the item whose
source holds it). ``classify(reader, writer)`` decides how the writer is kept
from overwriting the byte before the reader has it:

* ``SELF``: reader and writer are one item (a block reads before it writes),
  or the same lane with the reader earlier (the block published it already);
* ``WAIT``: the reader is in an earlier lane at a step no later than the
  writer's: the writer waits for the reader's "read done" flag;
* ``RING``: the reader is the writer's own lane, at most ``B - 1`` steps
  later: its copies are in flight in the block's ring of ``B`` buffers
  before the writer writes, so the writer waits for its own copies up to
  that reader's to land (``ring_reach``), not for the ones after it;
* ``PRE``: anything else: the bytes are *pre-read* into scratch before any
  item runs, the reader reads them there, and the writer only waits for the
  pre-read.

Waits therefore only point to lexicographically smaller keys (or to the
pre-read phase, which waits for nothing), which is what makes the kernel
finish with any number of resident blocks (docs/design.md).

A *co-resident* plan (``co_resident=1``: one block a lane, all resident at
once, launched cooperatively) also waits for readers in later lanes at
earlier steps: its waits point to smaller ``(step, lane)`` keys, which
finishes because every lane is being walked at once. A random shift's
pieces read across lanes in both directions; without co-residency half of
them are pre-read.
"""

from __future__ import annotations

import functools

import numpy as np
from numba import uint64
from numba.core.extending import register_jitable

VECTOR = 16  # bytes per global load/store

SELF = 0
WAIT = 1
RING = 2
PRE = 3


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
def row_head(head0, row, n):
    return (head0 + row * n) % 16


@register_jitable
def tile_count(n, head, tile_bytes):
    return ceil_div(head + n, tile_bytes)


@register_jitable
def max_tiles(n, tile_bytes):
    """The most tiles a row can have over all 16 head offsets."""
    return ceil_div(n + 15, tile_bytes)


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


# --- the chain ---------------------------------------------------------------

@register_jitable
def gcd(a, b):
    while b:
        a, b = b, a % b
    return a


@register_jitable
def mod_inverse(a, m):
    """``a^-1 mod m`` for coprime ``a, m`` (extended Euclid); 0 when ``m == 1``."""
    if m == 1:
        return 0
    r0, r1 = m, a % m
    t0, t1 = 0, 1
    while r1:
        quotient = r0 // r1
        r0, r1 = r1, r0 - quotient * r1
        t0, t1 = t1, t0 - quotient * t1
    return t0 % m


@register_jitable
def chain_step(m, p):
    """The chain step actually used for ``m`` tiles: ``p`` reduced into ``[1, m)`` (1 for one tile)."""
    if m <= 1:
        return 1
    p = p % m
    if p == 0:
        p = 1
    return p


@register_jitable
def chain_shape(m, p):
    """``(g, L, inv)``: ``g`` cycles of ``L`` tiles, ``inv = (p / g)^-1 mod L``."""
    g = gcd(p, m)
    length = m // g
    return g, length, mod_inverse((p // g) % length, length)


@register_jitable
def tile_at(m, p, g, length, position):
    """The tile at chain position ``P = c * L + s``: ``c + s * p (mod m)``."""
    c = position // length
    s = position - c * length
    return (c + s * p) % m


@register_jitable
def position_of(m, g, length, inv, j):
    """The chain position of tile ``j`` (the inverse of ``tile_at``)."""
    c = j % g
    s = (((j - c) // g) % length) * inv % length
    return c * length + s


@register_jitable
def lanes_per_row(n, tile_bytes, lane_steps):
    """Lane tickets reserved per row: enough for the most tiles any head gives."""
    return ceil_div(max_tiles(n, tile_bytes), lane_steps)


@register_jitable
def classify(m, g, length, inv, lane_steps, ring, co_resident, reader, writer):
    """How ``writer`` is kept from overwriting bytes before ``reader`` (same row) has them."""
    if reader == writer:
        return SELF
    pr = position_of(m, g, length, inv, reader)
    pw = position_of(m, g, length, inv, writer)
    lane_r = pr // lane_steps
    lane_w = pw // lane_steps
    return classify_keys(lane_r, pr - lane_r * lane_steps, lane_w, pw - lane_w * lane_steps, ring, co_resident)


@register_jitable
def classify_keys(lane_r, step_r, lane_w, step_w, ring, co_resident):
    """``classify`` on the readers' and writers' (lane, step) keys (the kernel reads them from the plan's table).

    ``co_resident`` 0: a ``WAIT`` needs the reader's lane earlier *and* its
    step no later, so every wait points to a lexicographically smaller
    ``(lane, step)`` and any number of resident blocks finishes. 1: every lane
    of the launch has a block of its own, all resident at once (a cooperative
    launch guarantees it), so a wait may point to any smaller ``(step, lane)``:
    a reader in a *later* lane at an earlier step is waited for, not
    pre-read (docs/design.md, "Co-resident lanes").
    """
    if lane_r == lane_w and step_r == step_w:
        return SELF
    if lane_r == lane_w:
        if step_r < step_w:
            return SELF
        if step_r - step_w < ring:
            return RING
        return PRE
    if step_r < step_w or (step_r == step_w and lane_r < lane_w):
        if co_resident or lane_r < lane_w:
            return WAIT
    return PRE


@register_jitable
def reader_run(n, k, head, tile_bytes, z, x1):
    """``(reader, end)``: positions ``[z, end)`` (``end <= x1``) are all read by the item of tile ``reader``."""
    x = z - k
    if x < 0:
        x += n
    reader = tile_of(head, tile_bytes, x)
    rx0, rx1 = tile_dest(n, head, tile_bytes, reader)
    end = z + (rx1 - x)  # the reader's destinations end (x wraps only at z == k, a tile end)
    if end > x1:
        end = x1
    return reader, end


@register_jitable
def source_run(n, k, head, tile_bytes, x, x1):
    """``(writer, z, end)``: destinations ``[x, end)`` read source ``z, z+1, ...``, all in tile ``writer``."""
    z = x + k
    if z >= n:
        z -= n
    writer = tile_of(head, tile_bytes, z)
    wx0, wx1 = tile_dest(n, head, tile_bytes, writer)
    end = x + (wx1 - z)  # the source never crosses the wrap inside a run: n is a tile end
    if end > x1:
        end = x1
    return writer, z, end


@register_jitable
def pre_span(n, k, head, tile_bytes, m, g, length, inv, lane_steps, ring, co_resident, w):
    """Positions ``[lo, hi)`` of tile ``w`` to pre-read (16-byte aligned in memory); ``lo >= hi``: none.

    The span covers every byte of ``D_w`` whose reader ``classify`` marks ``PRE``.
    """
    x0, x1 = tile_dest(n, head, tile_bytes, w)
    lo = x1
    hi = x0
    # Readers of D_w: destinations x0 - k .. x1 - 1 - k (mod n), at most two
    # runs (the wrap) of at most two tiles each.
    z = x0
    while z < x1:
        reader, run_end = reader_run(n, k, head, tile_bytes, z, x1)
        if classify(m, g, length, inv, lane_steps, ring, co_resident, reader, w) == PRE:
            if z < lo:
                lo = z
            if run_end > hi:
                hi = run_end
        z = run_end
    if lo >= hi:
        return 1, 0
    return align_down(head + lo) - head, align_up(head + hi) - head


# --- a lane walked by one block: its pre-read bytes in closed form ---------------
#
# A block that owns a whole lane and writes its tiles in chain order (one lane of all ``m`` tiles, a ring of
# one: tests/test_long_lane_walks.py, docs/results/long-lane-walks-probe.json) must pre-read every byte
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


# --- realignment ---------------------------------------------------------------

@register_jitable
def funnel(lo, hi, byte_shift):
    """Bytes ``[byte_shift, byte_shift + 4)`` of the little-endian pair ``lo, hi`` (one SHF)."""
    wide = (uint64(hi) << uint64(32)) | uint64(lo)
    return (wide >> uint64(byte_shift * 8)) & uint64(0xFFFFFFFF)


@register_jitable
def byte_mask(lo, hi):
    """The little-endian 8-byte mask of bytes ``[lo, hi)`` (clamped to ``[0, 8]``) of a 64-bit word."""
    lo = min(max(lo, 0), 8)
    hi = min(max(hi, lo), 8)
    full = uint64(0xFFFFFFFFFFFFFFFF)
    upper = full if hi == 8 else (uint64(1) << uint64(8 * hi)) - uint64(1)
    lower = full if lo == 8 else (uint64(1) << uint64(8 * lo)) - uint64(1)
    return upper & ~lower


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


# --- the plan: where pre-reads go ----------------------------------------------

#: The plan table, per head: ``TILE_FIELDS`` int64 per tile (the pre-read
#: span of that tile: scratch offset or -1, start, 16-byte vectors), then one
#: packed int64 per chain position (``pack_item``), then the number of tiles
#: with a pre-read span and their list (what the pre-read tickets walk:
#: large spans first), then the number of large spans.
T_OFFSET, T_LO, T_VECS = range(3)
TILE_FIELDS = 3
MAX_RUNS = 4  # source pieces of an item, and readers of a tile, are at most this many


@register_jitable
def table_stride(m_max):
    """int64 entries of one head's part of the plan table."""
    return (TILE_FIELDS + 2) * m_max + 3


@register_jitable
def pre_list(m_max):
    """Offset, within a head's part of the table, of the pre-read count (the list follows it)."""
    return (TILE_FIELDS + 1) * m_max


#: Pre-read spans of at most this many 16-byte vectors are *small*: the
#: seam of a misaligned shift in one tile (one or two vectors). A thread
#: copies a small span alone; larger spans take a whole block.
PRE_SMALL_VECS = 4
#: Small spans a pre-read ticket covers (a thread each). One span a
#: block-wide ticket cost ~5 dependent round trips to memory each, and a
#: shift with a seam in every tile (1 MiB + 5 bytes) lists one a tile.
PRE_TICKET_ENTRIES = 256
#: Large spans a pre-read ticket covers: as many as make about
#: ``PRE_GROUP_VECS`` vectors on average (``pre_group``), at most
#: ``PRE_GROUP_MAX``, copied by the block as one run. A ticket costs a few
#: dependent round trips to memory whatever it copies: with one span a
#: ticket, random shifts' 1,000-5,700 spans of 2-16 KiB held every block
#: in the pre-read phase for 8-52 us of a 0.6 ms launch
#: (docs/results/chain-trace-244e2bd-h200.json).
PRE_GROUP_VECS = 2048
PRE_GROUP_MAX = 32


@register_jitable
def pre_big(m_max):
    """Offset, within a head's part of the table, of the number of large pre-read spans (listed first)."""
    return pre_list(m_max) + 1 + m_max


@register_jitable
def pre_group_at(m_max):
    """Offset, within a head's part of the table, of the large spans a pre-read ticket covers."""
    return pre_big(m_max) + 1


@register_jitable
def pre_group(big, big_vecs):
    """Large spans a pre-read ticket covers when ``big`` of them hold ``big_vecs`` vectors: about
    ``PRE_GROUP_VECS`` vectors a ticket, 1 to ``PRE_GROUP_MAX`` spans."""
    if big == 0:
        return 1
    group = PRE_GROUP_VECS * big // max(big_vecs, 1)
    return max(1, min(group, PRE_GROUP_MAX))


@register_jitable
def pre_row_tickets(count, big, group):
    """Pre-read tickets of a row that lists ``count`` spans, ``big`` of them large: one per ``group``
    large spans, then one per ``PRE_TICKET_ENTRIES`` small ones."""
    return ceil_div(big, group) + ceil_div(count - big, PRE_TICKET_ENTRIES)


def pre_tickets_per_row(table, m_max, heads):
    """The pre-read tickets a launch reserves per row: the most any of the table's ``heads`` needs
    (``pre_row_tickets``); what the kernel, the emulator and the planner count with."""
    stride = table_stride(m_max)
    return max(int(pre_row_tickets(int(table[h * stride + pre_list(m_max)]), int(table[h * stride + pre_big(m_max)]),
                                   int(table[h * stride + pre_group_at(m_max)])))
               for h in range(heads))


@register_jitable
def pre_ticket(ticket, pre_row):
    """``(row, index)``: pre-read ticket ``ticket`` of a launch with ``pre_row`` tickets a row."""
    row = 0 if ticket < pre_row else ticket // pre_row  # one row: no 64-bit division
    return row, ticket - row * pre_row


@register_jitable
def pre_ticket_entries(index, count, big, group):
    """``[first, end)``: the list entries a row's pre-read ticket ``index`` covers (empty past the list):
    ``group`` large spans a ticket (the last may have fewer), then ``PRE_TICKET_ENTRIES`` small ones."""
    big_tickets = ceil_div(big, group)
    if index < big_tickets:
        first = index * group
        end = first + group
        if end > big:
            end = big
        return first, end
    first = big + (index - big_tickets) * PRE_TICKET_ENTRIES
    end = first + PRE_TICKET_ENTRIES
    if end > count:
        end = count
    return first, end


@register_jitable
def pre_reads_finished(finished, total):
    """Whether ``finished`` pre-read tickets of ``total`` are all of them: from then on no item polls a
    pre-read flag (the kernel's decoding thread, and the emulator)."""
    return finished >= total


@register_jitable
def pack_item(tile, piece_kinds, reader_kinds, ring_reach=0):
    """One chain position's entry: its tile, then 2 bits per source piece and per reader (in run order),
    then the item's ring reach (``ring_reach``)."""
    return tile | (piece_kinds << 32) | (reader_kinds << 40) | (ring_reach << 48)


@register_jitable
def item_tile(packed):
    return packed & 0xFFFFFFFF


@register_jitable
def item_piece_kinds(packed):
    return (packed >> 32) & 0xFF


@register_jitable
def item_reader_kinds(packed):
    return (packed >> 40) & 0xFF


@register_jitable
def item_ring_reach(packed):
    return (packed >> 48) & 0xFF


@register_jitable
def kind_at(kinds, index):
    return (kinds >> (2 * index)) & 3


@register_jitable
def kinds_have(kinds, kind):
    """Whether any 2-bit field of ``kinds`` (packed as ``pack_item`` packs them, up to 4) equals ``kind``
    (1-3; unused fields are 0, ``SELF``)."""
    low = kinds & 0x55
    high = (kinds >> 1) & 0x55
    if kind == WAIT:
        return (low & ~high & 0x55) != 0
    if kind == RING:
        return (high & ~low & 0x55) != 0
    return (low & high) != 0


@register_jitable
def item_kinds(n, k, head, tile_bytes, m, g, length, inv, lane_steps, ring, co_resident, j):
    """``(piece_kinds, reader_kinds, ok)`` of tile ``j``'s item, packed 2 bits per run in run order.

    Pieces: ``classify(j, writer)`` for each ``source_run`` of ``j``'s
    destination; readers: ``classify(reader, j)`` for each ``reader_run``.
    ``ok`` is 0 when a tile has more than ``MAX_RUNS`` of either.
    """
    x0, x1 = tile_dest(n, head, tile_bytes, j)
    pieces = 0
    count = 0
    x = x0
    while x < x1:
        writer, z, end = source_run(n, k, head, tile_bytes, x, x1)
        if count >= MAX_RUNS:
            return 0, 0, 0
        pieces |= classify(m, g, length, inv, lane_steps, ring, co_resident, j, writer) << (2 * count)
        count += 1
        x = end
    readers = 0
    count = 0
    z = x0
    while z < x1:
        reader, end = reader_run(n, k, head, tile_bytes, z, x1)
        if count >= MAX_RUNS:
            return 0, 0, 0
        readers |= classify(m, g, length, inv, lane_steps, ring, co_resident, reader, j) << (2 * count)
        count += 1
        z = end
    return pieces, readers, 1


@register_jitable
def ring_reach(n, k, head, tile_bytes, m, g, length, inv, lane_steps, ring, co_resident, j):
    """How many steps ahead of tile ``j``'s item its farthest ``RING`` reader is (0: none).

    The kernel waits for its own copies up to that item, not for every copy
    in flight: the copies of items further ahead keep streaming while it
    writes (``cp.async.wait_group`` with ``ring - 1 - reach`` groups left).
    """
    x0, x1 = tile_dest(n, head, tile_bytes, j)
    reach = 0
    pw = position_of(m, g, length, inv, j)
    z = x0
    while z < x1:
        reader, end = reader_run(n, k, head, tile_bytes, z, x1)
        if classify(m, g, length, inv, lane_steps, ring, co_resident, reader, j) == RING:
            distance = position_of(m, g, length, inv, reader) - pw  # same lane: the step difference
            if distance > reach:
                reach = distance
        z = end
    return reach


@register_jitable
def layout_pre_reads(n, k, head, tile_bytes, chain, lane_steps, ring, co_resident, table, table_base):
    """Fill one head's part of the plan table, from ``table_base``.

    Per tile ``w``: the scratch offset of its pre-read span (-1: none), the
    span's start and its 16-byte vectors. Per chain position ``P``: the tile
    there and the kinds of its pieces and readers (``pack_item``). The kernel
    reads decisions from here instead of redoing the modular arithmetic per
    item (64-bit divisions on one thread of the block, on every item's
    critical path); the values are the hooks' own. Returns the row's scratch
    bytes for this head (spans back to back, each 16-byte aligned, so scratch
    mirrors the array's alignment), or -1 if a tile has too many runs.
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
        pieces, readers, ok = item_kinds(n, k, head, tile_bytes, m, g, length, inv, lane_steps, ring, co_resident, j)
        if not ok:
            return -1
        table[items + w] = pack_item(j, pieces, readers,
                                     ring_reach(n, k, head, tile_bytes, m, g, length, inv, lane_steps, ring, co_resident, j))
        lo, hi = pre_span(n, k, head, tile_bytes, m, g, length, inv, lane_steps, ring, co_resident, w)
        if lo < hi:
            table[entry + T_OFFSET] = total
            table[entry + T_LO] = lo
            table[entry + T_VECS] = (hi - lo) // 16
            total += hi - lo
            table[listed] += 1
            table[listed + table[listed]] = w
    # Large spans first (``pre_group`` a ticket, block-wide), then the small
    # ones (``PRE_TICKET_ENTRIES`` a ticket, a thread each); stable, in tile order.
    count = table[listed]
    order = np.empty(count, np.int64)
    big = 0
    big_vecs = 0
    for i in range(count):
        vecs = table[table_base + TILE_FIELDS * table[listed + 1 + i] + T_VECS]
        if vecs > PRE_SMALL_VECS:
            order[big] = table[listed + 1 + i]
            big += 1
            big_vecs += vecs
    small = big
    for i in range(count):
        if table[table_base + TILE_FIELDS * table[listed + 1 + i] + T_VECS] <= PRE_SMALL_VECS:
            order[small] = table[listed + 1 + i]
            small += 1
    for i in range(count):
        table[listed + 1 + i] = order[i]
    table[table_base + pre_big(m_max)] = big
    table[table_base + pre_group_at(m_max)] = pre_group(big, big_vecs)
    return total





@register_jitable
def count_kinds(n, k, head, tile_bytes, chain, lane_steps, ring, co_resident):
    """Bytes of one row guarded by each kind (SELF, WAIT, RING, PRE): what the planner's cost reads."""
    m = tile_count(n, head, tile_bytes)
    p = chain_step(m, chain)
    g, length, inv = chain_shape(m, p)
    counts = [0, 0, 0, 0]
    for w in range(m):
        x0, x1 = tile_dest(n, head, tile_bytes, w)
        z = x0
        while z < x1:
            reader, end = reader_run(n, k, head, tile_bytes, z, x1)
            counts[classify(m, g, length, inv, lane_steps, ring, co_resident, reader, w)] += end - z
            z = end
    return counts[0], counts[1], counts[2], counts[3]


@register_jitable
def pre_bytes_by_lane_steps(n, k, head, tile_bytes, chain, ring, co_resident, candidates, out):
    """``out[i]``: the bytes of one row ``classify`` marks ``PRE`` with lanes of ``candidates[i]`` steps.

    ``count_kinds``' PRE count for many lane lengths at once: the chain
    positions of every (reader, writer) run are found once, then each lane
    length only divides them. The planner scans lane lengths with it for a
    co-resident plan, whose pre-reads shrink to nearly nothing at some
    lengths and not at others (docs/results/plan-coverage-h200-shape.json).
    """
    m = tile_count(n, head, tile_bytes)
    p = chain_step(m, chain)
    g, length, inv = chain_shape(m, p)
    # A run read by the item just before its writer in chain order is the writer's own lane's last
    # step (SELF) unless the writer starts a lane: then it is PRE for any lane length above one step
    # (the reader, the previous lane's last step, comes later), a WAIT for one-step lanes. Those runs,
    # about half of all, are summed by position once and added per length in m / length steps; the
    # others are classified run by run.
    before_bytes = np.zeros(m + 1, np.int64)
    capacity = m // 2 + 8  # about one run a tile is not the predecessor's: grows (doubling) once or twice
    reader_pos = np.empty(capacity, np.int64)
    writer_pos = np.empty(capacity, np.int64)
    run_bytes = np.empty(capacity, np.int64)
    runs = 0
    for w in range(m):
        x0, x1 = tile_dest(n, head, tile_bytes, w)
        pw = position_of(m, g, length, inv, w)
        z = x0
        while z < x1:
            reader, end = reader_run(n, k, head, tile_bytes, z, x1)
            pr = position_of(m, g, length, inv, reader)
            if pr == pw - 1:
                before_bytes[pw] += end - z
            else:
                if runs == capacity:
                    capacity *= 2
                    reader_pos = _grown(reader_pos, capacity)
                    writer_pos = _grown(writer_pos, capacity)
                    run_bytes = _grown(run_bytes, capacity)
                reader_pos[runs] = pr
                writer_pos[runs] = pw
                run_bytes[runs] = end - z
                runs += 1
            z = end
    for c in range(len(candidates)):
        steps = candidates[c]
        inv_steps = 1.0 / steps
        total = 0
        if steps > 1:
            for pw in range(steps, m, steps):  # lane starts
                total += before_bytes[pw]
        for i in range(runs):
            # (lane, step) by a float quotient and one correction each way: exact for positions below
            # 2**52, and without the two 64-bit divisions a run that made the planner's scan its slowest step.
            lane_r, step_r = _divmod_near(reader_pos[i], steps, inv_steps)
            lane_w, step_w = _divmod_near(writer_pos[i], steps, inv_steps)
            if classify_keys(lane_r, step_r, lane_w, step_w, ring, co_resident) == PRE:
                total += run_bytes[i]
        out[c] = total


@register_jitable
def _grown(values, capacity):
    """``values`` copied into a new array of ``capacity`` entries (the rest unset)."""
    grown = np.empty(capacity, np.int64)
    grown[:len(values)] = values
    return grown


@register_jitable
def _divmod_near(x, d, inv):
    """``(x // d, x % d)`` for ``0 <= x < 2**52``, ``d >= 1``, ``inv = 1.0 / d``: no division."""
    q = np.int64(np.float64(x) * inv)
    r = x - q * d
    if r < 0:
        q -= 1
        r += d
    elif r >= d:
        q += 1
        r -= d
    return q, r


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


@functools.lru_cache(maxsize=1)
def compiled_table_builders():
    """``(layout, kinds, lane_scan)``: ``layout_pre_reads``, ``count_kinds`` and ``pre_bytes_by_lane_steps``
    compiled for the CPU (``@njit``).

    The GPU planner builds the kernel's plan table with them and the CPU's
    ``chain-serial`` its own; compiled on first use, cached on disk.
    """
    from numba import njit

    @njit(cache=True)
    def layout(n, k, head, tile_bytes, chain, lane_steps, ring, co_resident, table, table_base):
        return layout_pre_reads(n, k, head, tile_bytes, chain, lane_steps, ring, co_resident, table, table_base)

    @njit(cache=True)
    def kinds(n, k, head, tile_bytes, chain, lane_steps, ring, co_resident):
        return count_kinds(n, k, head, tile_bytes, chain, lane_steps, ring, co_resident)

    @njit(cache=True)
    def lane_scan(n, k, head, tile_bytes, chain, ring, co_resident, candidates, out):
        pre_bytes_by_lane_steps(n, k, head, tile_bytes, chain, ring, co_resident, candidates, out)

    return layout, kinds, lane_scan
