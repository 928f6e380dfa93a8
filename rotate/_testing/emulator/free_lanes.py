"""The CPU's chain-lanes emulated: lanes that share nothing, their actions interleaved in any order."""

from __future__ import annotations

import random

import numpy as np

from ..._schedules import chain as S

# --- the CPU's chain-lanes: lanes that share nothing, under any interleaving -------------------------

#: Orders ``emulate_free_lanes`` runs the lanes in: one after another, the last first, item by item in a
#: random interleaving, and round robin.
FREE_POLICIES = ("in-order", "reverse", "random", "round-robin")


class RaceError(AssertionError):
    """A lane read row bytes that a lane had already overwritten."""


def _free_lane_actions(row, scratch, written, n, k, tile_bytes, ring, table, m_max, ring_at, first, end, direct):
    """Lane ``[first, end)`` of ``rotate._backends.cpu.kernels._chain_walk``, an action at a time (a generator): each item's
    read into the ring, each write back (``direct``: ``SELF`` pieces of other tiles straight from the row),
    exactly as the runner orders them, byte by byte."""
    items = S.TILE_FIELDS * m_max

    def read_row(z, count, tile):
        if written[z:z + count].any():
            raise RaceError(f"tile {tile} read row bytes {z}..{z + count} after a write")
        return row[z:z + count].copy()

    for position in range(first, end + ring - 1):
        if position < end:
            packed = int(table[items + position])
            tile = S.item_tile(packed)
            x0, x1 = S.tile_dest(n, 0, tile_bytes, tile)
            slot = ring_at + ((position - first) % ring) * tile_bytes - x0
            x = x0
            run = 0
            while x < x1:
                w, z, stop = S.source_run(n, k, 0, tile_bytes, x, x1)
                count = stop - x
                kind = S.kind_at(S.item_piece_kinds(packed), run)
                if kind == S.PRE:
                    entry = S.TILE_FIELDS * w
                    src = int(table[entry + S.T_OFFSET]) + z - int(table[entry + S.T_LO])
                    scratch[slot + x:slot + x + count] = scratch[src:src + count]
                elif not direct or kind != S.SELF or w == tile:
                    scratch[slot + x:slot + x + count] = read_row(z, count, tile)
                run += 1
                x = stop
            yield
        oldest = position - (ring - 1)
        if oldest >= first:
            packed = int(table[items + oldest])
            tile = S.item_tile(packed)
            x0, x1 = S.tile_dest(n, 0, tile_bytes, tile)
            slot = ring_at + ((oldest - first) % ring) * tile_bytes - x0
            x = x0
            run = 0
            while x < x1:
                w, z, stop = S.source_run(n, k, 0, tile_bytes, x, x1)
                if direct and S.kind_at(S.item_piece_kinds(packed), run) == S.SELF and w != tile:
                    row[x:stop] = read_row(z, stop - x, tile)
                else:
                    row[x:stop] = scratch[slot + x:slot + stop]
                run += 1
                x = stop
            written[x0:x1] = True
            yield


def emulate_free_lanes(row, k, tile_bytes, ring, table, scratch_row, lane_steps, lanes, policy="random",
                       seed=0, direct=False):
    """Run ``chain-lanes`` (or ``chain-serial``: one lane) on the bytes ``row`` (rotated left by ``k``, in
    place) from its plan table, the lanes interleaved as ``policy`` says (``FREE_POLICIES``).

    The pre-read phase copies each lane's share of the listed spans (``_chain_pre_part``'s split, the lanes
    in a random order), then the lanes' walks run with no waits (``direct``: as the runner's ``direct``
    option copies), an action at a time in the policy's order:
    whatever order threads run them in must give ``numpy.roll``'s bytes. Scratch starts poisoned (0xA5);
    a read of row bytes after any lane wrote them raises ``RaceError``. Returns the scratch.
    """
    n = len(row)
    m_max = S.max_tiles(n, tile_bytes)
    m = S.tile_count(n, 0, tile_bytes)
    rng = random.Random(seed)
    total = scratch_row - 16
    lane_bytes = ring * tile_bytes
    scratch = np.full(scratch_row + lanes * lane_bytes, 0xA5, np.uint8)
    listed = S.pre_list(m_max)
    shares = list(range(lanes))
    rng.shuffle(shares)
    for lane in shares:
        lo, hi = total * lane // lanes, total * (lane + 1) // lanes
        for i in range(int(table[listed])):
            entry = S.TILE_FIELDS * int(table[listed + 1 + i])
            offset = int(table[entry + S.T_OFFSET])
            if lo <= offset < hi:
                start = int(table[entry + S.T_LO])
                stop = min(n, start + 16 * int(table[entry + S.T_VECS]))
                scratch[offset:offset + stop - start] = row[start:stop]
    written = np.zeros(n, bool)
    walks = [_free_lane_actions(row, scratch, written, n, k, tile_bytes, ring, table, m_max,
                                scratch_row + lane * lane_bytes, lane * lane_steps, min(m, (lane + 1) * lane_steps),
                                direct)
             for lane in range(lanes)]
    live = list(range(lanes))
    if policy == "reverse":
        live.reverse()
    turn = 0
    while live:
        if policy == "random":
            pick = rng.randrange(len(live))
        elif policy == "round-robin":
            pick = turn % len(live)
            turn += 1
        elif policy in ("in-order", "reverse"):
            pick = 0
        else:
            raise ValueError(f"unknown policy {policy!r}")
        try:
            next(walks[live[pick]])
        except StopIteration:
            live.pop(pick)
    return scratch
