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

Built on this module: ``walks`` (a block walking its own lane), ``free_lanes``
(the CPU's lanes that share nothing); beside it, ``gries_mills`` (lane-swaps'
block swaps).
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
