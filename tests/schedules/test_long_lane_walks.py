"""The single-lane chain walk that benchmarks/probes/long_lane_walks.py sizes, run on the CPU (no GPU needed).

The walk is the candidate one-pass schedule for ``roll_rows`` lanes longer
than a block's shared memory (archive/perf-notes-2026-12-02.md, "Long lanes in one pass"):
one block owns a lane and writes its tiles in chain order
(``chain.tile_at`` over one lane of all ``m`` tiles); every piece whose
reader comes after its writer (``classify`` with a ring of one, no
co-residence) is pre-read before the walk, the rest is read from the lane
itself. This runs exactly that order and those rules tile by tile, with the
look-ahead a block would have (the next items' copies taken before the
current item writes), against ``numpy.roll``, so the ``PRE`` bytes the
benchmark counts are the ones a correct walk needs.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from rotate._schedules import chain as S
from rotate._schedules import walks


def walk(lane: np.ndarray, left: int, head: int, tile_bytes: int, chain: int, ahead: int) -> int:
    """Rotate ``lane`` (bytes, first byte ``head`` past a 16-byte boundary) left by ``left`` in place by the
    single-lane walk; items' copies are taken ``ahead`` items before they are written. Returns the
    pre-read bytes (clipped to the lane)."""
    n = len(lane)
    m = S.tile_count(n, head, tile_bytes)
    p = S.chain_step(m, chain)
    g, length, inv = S.chain_shape(m, p)
    saved = {}
    for w in range(m):
        lo, hi = S.pre_span(n, left, head, tile_bytes, m, g, length, inv, m, 1, 0, w)
        if lo < hi:
            lo, hi = max(lo, 0), min(hi, n)
            saved[w] = (lo, lane[lo:hi].copy())

    def copy_sources(position):
        """The item's destination range and its source bytes, as a block's copies would take them."""
        tile = S.tile_at(m, p, g, length, position)
        x0, x1 = S.tile_dest(n, head, tile_bytes, tile)
        out = np.empty(x1 - x0, np.uint8)
        x = x0
        while x < x1:
            writer, z, end = S.source_run(n, left, head, tile_bytes, x, x1)
            kind = S.classify(m, g, length, inv, m, 1, 0, tile, writer)
            if kind == S.PRE:
                lo, held = saved[writer]
                piece = held[z - lo:z - lo + end - x]
            else:
                assert kind == S.SELF, kind  # one lane: a reader before its writer, or the writer itself
                piece = lane[z:z + end - x]
            assert len(piece) == end - x, (tile, writer, x, end)
            out[x - x0:end - x0] = piece
            x = end
        return x0, x1, out

    in_flight = [copy_sources(position) for position in range(min(ahead, m))]
    for position in range(m):
        x0, x1, out = in_flight.pop(0)
        if position + ahead < m:  # the look-ahead copy is taken before this item writes
            in_flight.append(copy_sources(position + ahead))
        lane[x0:x1] = out
    return sum(len(held) for _, held in saved.values()), len(saved)


@settings(deadline=None, max_examples=300)
@given(data=st.data(), n=st.integers(1, 3000), head=st.integers(0, 15),
       tile_bytes=st.sampled_from([16, 32, 48, 64, 112, 256, 1024]), ahead=st.integers(1, 3))
def test_walk_matches_numpy_roll(data, n, head, tile_bytes, ahead):
    left = data.draw(st.integers(0, n - 1), label="left")
    q = left // tile_bytes
    chain = data.draw(st.sampled_from(sorted({max(1, q), q + 1})), label="chain")
    rng = np.random.default_rng(n * 31 + left)
    lane = rng.integers(0, 256, n, dtype=np.uint8)
    expected = np.roll(lane, -left)
    walk(lane, left, head, tile_bytes, chain, ahead)
    assert np.array_equal(lane, expected), (
        f"reproduce: walk(lane, left={left}, head={head}, tile_bytes={tile_bytes}, chain={chain}, ahead={ahead}) "
        f"on {n} bytes")


def test_walk_pre_reads_what_the_benchmark_counts():
    """The benchmark's count (the schedule's ``PRE`` bytes at a ring of one) is what the walk must keep: a
    tile's span holds all of them, plus at most 15 bytes of alignment at each end. (Bytes between two
    ``PRE`` pieces of one tile would count too; in these cases there are none.)"""
    builder = S.compiled_table_builders()[1]
    rng = np.random.default_rng(5)
    for n in (4096, 65536 + 48, 200_003):
        for left in rng.integers(1, n, 6):
            left = int(left)
            for tile_bytes in (256, 1024, 4096):
                q = left // tile_bytes
                for chain in sorted({max(1, q), q + 1}):
                    _, _, _, pre = builder(n, left, 0, tile_bytes, chain, S.max_tiles(n, tile_bytes), 1, 0)
                    lane = rng.integers(0, 256, n, dtype=np.uint8)
                    expected = np.roll(lane, -left)
                    kept, spans = walk(lane, left, 0, tile_bytes, chain, 2)
                    assert np.array_equal(lane, expected)
                    assert pre <= kept <= pre + 30 * spans, (n, left, tile_bytes, chain, kept, pre, spans)


@settings(deadline=None, max_examples=400)
@given(data=st.data(), n=st.integers(1, 40000), head=st.integers(0, 15), tile_vecs=st.integers(1, 80))
def test_walk_pre_bytes_closed_form_matches_the_tile_count(data, n, head, tile_vecs):
    """``walks.walk_pre_bytes`` (O(log m): floor sums over the full tiles, the few partial ones run by run)
    equals ``count_kinds``' PRE count for one lane of all tiles, a ring of one: any length, head, tile size,
    shift and chain step, cycles of every shape (``g > 1`` included)."""
    tile_bytes = 16 * tile_vecs
    left = data.draw(st.integers(0, n - 1), label="left")
    q = left // tile_bytes
    chain = data.draw(st.sampled_from(sorted({max(1, q), q + 1})), label="chain")
    m = S.tile_count(n, head, tile_bytes)
    expected = S.compiled_table_builders()[1](n, left, head, tile_bytes, chain, m, 1, 0)[3]
    got = walks.walk_pre_bytes(n, left, head, tile_bytes, chain)
    assert got == expected, (f"reproduce: walks.walk_pre_bytes({n}, {left}, {head}, {tile_bytes}, {chain}) "
                             f"== {got}, count_kinds says {expected}")


def test_floor_sum_against_its_definition():
    rng = np.random.default_rng(3)
    for _ in range(2000):
        count, mod, a, b = (int(v) for v in (rng.integers(0, 60), rng.integers(1, 50), rng.integers(0, 200),
                                             rng.integers(0, 200)))
        assert walks.floor_sum(count, mod, a, b) == sum((a * i + b) // mod for i in range(count))


def test_residue_counts_against_their_definition():
    """``_schedule._residues_at_least``: how many ``u`` in ``[u0, u1)`` have ``u * step mod mod >= low``, by
    floor sums, against counting them."""
    rng = np.random.default_rng(4)
    for _ in range(3000):
        mod = int(rng.integers(2, 300))
        step, low = int(rng.integers(0, mod)), int(rng.integers(1, mod))
        u0 = int(rng.integers(0, 3 * mod))
        u1 = u0 + int(rng.integers(0, 3 * mod))
        expected = sum(1 for u in range(u0, u1) if u * step % mod >= low)
        assert walks._residues_at_least(u0, u1, step, low, mod) == expected, (u0, u1, step, low, mod)
