"""The GPU chain schedule, checked statically and run by the CPU emulator under hostile interleavings.

The emulator executes the same ``rotate._schedules.chain`` hooks the CUDA kernel
calls. These tests check, for small geometries exhaustively, that every
byte a tile overwrites has its reader handled (waited for, in flight in the
block's own ring, or served from a pre-read that covers it) and that every
wait points at an earlier (lane, step); then that the emulator finishes with
1..6 blocks, ring depths 2..4, any chain step and lane length, under every
scheduling policy, with the result of numpy.roll.
"""

import numba
import numpy as np
import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st

from rotate._schedules import chain as S
from rotate._testing.emulator import POLICIES, Deadlock, ScheduleError, emulate, plan_rows


def variant(control_warp):
    """``emulate``'s keywords for a kernel variant: False (single), True (control warp), "pipeline"."""
    return {"control_warp": control_warp in (True, "pipeline"), "pipeline": control_warp == "pipeline"}


def expected(data, rows, n, k):
    return np.roll(data.reshape(rows, n), -k, axis=1).reshape(-1)


@settings(deadline=None, max_examples=300)
@given(
    n=st.integers(2, 300),
    data=st.data(),
    head0=st.integers(0, 15),
    tile_bytes=st.sampled_from([16, 32, 48, 64, 128]),
    rows=st.integers(1, 3),
    blocks=st.integers(1, 6),
    buffers=st.integers(2, 4),
    policy=st.sampled_from(POLICIES),
    seed=st.integers(0, 2**16),
    control_warp=st.sampled_from([False, True, "pipeline"]),
)
def test_emulated_schedule_matches_numpy_and_never_deadlocks(n, data, head0, tile_bytes, rows, blocks, buffers,
                                                             policy, seed, control_warp):
    k = data.draw(st.integers(1, n - 1), label="k")
    chain = data.draw(st.one_of(st.none(), st.integers(1, 40)), label="chain")
    lane_steps = data.draw(st.one_of(st.none(), st.integers(1, 12)), label="lane_steps")
    buf = np.random.default_rng(seed).integers(0, 256, rows * n, dtype=np.uint8)
    note(f"reproduce: emulate(buf, rows={rows}, n={n}, k={k}, head0={head0}, tile_bytes={tile_bytes}, "
         f"blocks={blocks}, policy={policy!r}, seed={seed}, buffers={buffers}, chain={chain}, "
         f"lane_steps={lane_steps}, **variant({control_warp!r})) with buf = np.random.default_rng({seed})"
         f".integers(0, 256, {rows * n}, dtype=np.uint8)")
    out = emulate(buf, rows, n, k, head0, tile_bytes, blocks, policy, seed, buffers, chain, lane_steps,
                  **variant(control_warp))
    np.testing.assert_array_equal(out, expected(buf, rows, n, k))


@pytest.mark.parametrize("n,k", [(1000, 1), (1000, 999), (1000, 500), (1000, 501), (997, 333), (4096, 17),
                                 (1024, 341), (1024, 513), (1024, 259)])
@pytest.mark.parametrize("blocks", [1, 2, 7])
@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("control_warp", [False, True, "pipeline"])
def test_boundary_shifts(n, k, blocks, policy, control_warp):
    buf = np.random.default_rng(n + k).integers(0, 256, n, dtype=np.uint8)
    out = emulate(buf, 1, n, k, 5, 64, blocks, policy, seed=blocks, chain=max(1, k // 64) + (k % 64 > 32),
                  **variant(control_warp))
    np.testing.assert_array_equal(out, expected(buf, 1, n, k))


def _key(n, head, tile_bytes, chain, lane_steps, tile):
    m = S.tile_count(n, head, tile_bytes)
    g, length, inv = S.chain_shape(m, S.chain_step(m, chain))
    pos = S.position_of(m, g, length, inv, tile)
    return pos // lane_steps, pos % lane_steps


@settings(deadline=None, max_examples=400)
@given(n=st.integers(2, 1500), data=st.data(), head=st.integers(0, 15),
       tile_bytes=st.sampled_from([16, 32, 64, 96, 1024]), ring=st.integers(2, 4), co_resident=st.booleans())
def test_every_overwritten_byte_has_its_reader_handled(n, data, head, tile_bytes, ring, co_resident):
    """Completeness of the hooks, byte by byte: the writer of each byte either waits for its reader
    (an earlier lane at no later step; co-resident: any other lane at an earlier step, or an earlier
    lane at the same step), or has it in its own ring, or the byte is inside the writer's pre-read
    span and the reader takes it from scratch."""
    k = data.draw(st.integers(1, n - 1), label="k")
    chain = data.draw(st.integers(1, 60), label="chain")
    lane_steps = data.draw(st.integers(1, 20), label="lane_steps")
    m = S.tile_count(n, head, tile_bytes)
    p = S.chain_step(m, chain)
    g, length, inv = S.chain_shape(m, p)
    assert sorted(S.tile_at(m, p, g, length, q) for q in range(m)) == list(range(m)), "the chain is a permutation"
    for j in range(m):
        assert S.tile_at(m, p, g, length, S.position_of(m, g, length, inv, j)) == j
    F = S.TILE_FIELDS
    m_max = S.max_tiles(n, tile_bytes)
    table = np.zeros(S.table_stride(m_max), np.int64)
    assert S.layout_pre_reads(n, k, head, tile_bytes, chain, lane_steps, ring, int(co_resident), table, 0) >= 0
    for position in range(m):  # the table the kernel reads holds exactly the hooks' decisions
        packed = int(table[F * m_max + position])
        j = S.item_tile(packed)
        assert j == S.tile_at(m, p, g, length, position)
        x0, x1 = S.tile_dest(n, head, tile_bytes, j)
        x, index = x0, 0
        while x < x1:
            writer, _, x = S.source_run(n, k, head, tile_bytes, x, x1)
            assert S.kind_at(S.item_piece_kinds(packed), index) == S.classify(m, g, length, inv, lane_steps, ring,
                                                                               int(co_resident), j, writer)
            index += 1
        z, index = x0, 0
        while z < x1:
            reader, z = S.reader_run(n, k, head, tile_bytes, z, x1)
            assert S.kind_at(S.item_reader_kinds(packed), index) == S.classify(m, g, length, inv, lane_steps, ring,
                                                                                int(co_resident), reader, j)
            index += 1
    covered = np.zeros(n, np.int32)
    for w in range(m):
        x0, x1 = S.tile_dest(n, head, tile_bytes, w)
        covered[x0:x1] += 1
        key_w = _key(n, head, tile_bytes, chain, lane_steps, w)
        farthest_ring_reader = 0
        for z in range(x0, x1):
            reader = S.tile_of(head, tile_bytes, (z - k) % n)  # brute force, not the hooks' runs
            assert S.reader_run(n, k, head, tile_bytes, z, x1)[0] == reader
            kind = S.classify(m, g, length, inv, lane_steps, ring, int(co_resident), reader, w)
            key_r = _key(n, head, tile_bytes, chain, lane_steps, reader)
            if kind == S.SELF:
                assert reader == w or (key_r[0] == key_w[0] and key_r[1] < key_w[1])
            elif kind == S.WAIT and co_resident:  # all lanes run at once: (step, lane) order
                assert key_r[0] != key_w[0] and key_r[::-1] < key_w[::-1]
            elif kind == S.WAIT:
                assert key_r < key_w and key_r[1] <= key_w[1]
            elif kind == S.RING:
                assert key_r[0] == key_w[0] and 0 < key_r[1] - key_w[1] < ring
                farthest_ring_reader = max(farthest_ring_reader, key_r[1] - key_w[1])
            else:
                offset, lo, vecs = table[F * w:F * w + 3]
                assert offset >= 0 and lo <= z < lo + 16 * vecs, f"byte {z} of tile {w} is not pre-read"
                assert (head + lo) % 16 == 0 and offset % 16 == 0, "pre-read spans mirror the alignment"
        # The kernel waits for its own copies up to the farthest ring reader, and no further.
        packed = int(table[F * m_max + key_w[0] * lane_steps + key_w[1]])
        assert S.item_tile(packed) == w and S.item_ring_reach(packed) == farthest_ring_reader
        # The reader's side decodes the same decision for the same bytes.
        x = x0
        while x < x1:
            writer, z, end = S.source_run(n, k, head, tile_bytes, x, x1)
            assert z == (x + k) % n and S.tile_of(head, tile_bytes, z) == writer
            assert S.tile_of(head, tile_bytes, (end - 1 + k) % n) == writer
            x = end
    assert (covered == 1).all(), "tiles must cover every destination byte exactly once"
    # The pre-read list holds every tile with a span once, large spans first; the tickets cover it once.
    count, big = int(table[S.pre_list(m_max)]), int(table[S.pre_big(m_max)])
    group = int(table[S.pre_group_at(m_max)])
    listed = [int(w) for w in table[S.pre_list(m_max) + 1:S.pre_list(m_max) + 1 + count]]
    assert sorted(listed) == [w for w in range(m) if table[F * w] >= 0]
    assert all((table[F * w + S.T_VECS] > S.PRE_SMALL_VECS) == (i < big) for i, w in enumerate(listed))
    big_vecs = sum(int(table[F * w + S.T_VECS]) for w in listed[:big])
    assert group == S.pre_group(big, big_vecs) and 1 <= group <= S.PRE_GROUP_MAX
    taken = []
    for index in range(S.pre_row_tickets(count, big, group)):
        first, end = S.pre_ticket_entries(index, count, big, group)
        assert first < end and (first >= big or (end <= big and end - first <= group))
        taken.extend(range(first, end))
    assert taken == list(range(count)), "every listed span is in exactly one pre-read ticket"


@given(count=st.integers(0, 3 * S.PRE_TICKET_ENTRIES + 5), group=st.integers(1, S.PRE_GROUP_MAX), data=st.data())
def test_pre_read_tickets_take_each_listed_span_once(count, group, data):
    big = data.draw(st.integers(0, count), label="big")
    taken = []
    big_tickets = -(-big // group)
    for index in range(S.pre_row_tickets(count, big, group)):
        first, end = S.pre_ticket_entries(index, count, big, group)
        if index < big_tickets:  # large spans, group a ticket (the last ticket the rest), never mixed with small
            assert end - first == min(group, big - first) and end <= big
        else:
            assert first >= big and end - first == min(S.PRE_TICKET_ENTRIES, count - first)
        taken.extend(range(first, end))
    assert taken == list(range(count))
    rows, pre_row = 3, S.pre_row_tickets(count, big, group)
    assert [S.pre_ticket(t, pre_row) for t in range(rows * pre_row)] == [(r, i) for r in range(rows)
                                                                           for i in range(pre_row)]


def test_short_shift_needs_only_a_few_pre_read_bytes():
    """A short shift pre-reads only the k-byte prefix of each lane's first tile (and of tile 0)."""
    n, k, T = 1 << 20, 3, 4096
    chain, lane_steps, table, row_bytes, _ = plan_rows(1, n, k, 0, T, lane_steps=16)
    lanes = S.ceil_div(S.tile_count(n, 0, T), lane_steps)
    assert row_bytes <= 16 * (lanes + 1)


@pytest.mark.parametrize("control_warp", [False, True, "pipeline"])
def test_a_wrong_schedule_is_caught(monkeypatch, control_warp):
    """The emulator is not vacuous: waits that are skipped corrupt the result."""
    real = S.classify
    monkeypatch.setattr(S, "classify", lambda *a: S.SELF if real(*a) == S.WAIT else real(*a))
    buf = np.random.default_rng(0).integers(0, 256, 1024, dtype=np.uint8)
    outcomes = set()
    for seed in range(30):  # chain 10, lanes of 4: a quarter of the bytes are guarded by WAIT
        out = emulate(buf, 1, 1024, 341, 0, 32, 8, "random", seed, chain=10, lane_steps=4,
                      **variant(control_warp))
        outcomes.add(bool(np.array_equal(out, expected(buf, 1, 1024, 341))))
    assert False in outcomes


@pytest.mark.parametrize("control_warp", [False, True, "pipeline"])
def test_forward_wait_is_reported(monkeypatch, control_warp):
    real = S.classify
    monkeypatch.setattr(S, "classify", lambda *a: S.WAIT if real(*a) == S.PRE else real(*a))
    buf = np.arange(300, dtype=np.uint8)
    with pytest.raises((ScheduleError, Deadlock)):
        emulate(buf, 1, 300, 7, 0, 32, 3, "lowest", 0, chain=1, lane_steps=2, **variant(control_warp))


_layout_pre_reads = S.layout_pre_reads


def _no_pre_reads(n, k, head, tile_bytes, chain, lane_steps, ring, co_resident, table, base):
    """A layout that forgot its pre-reads: every span, and the list of them, empty."""
    m_max = S.max_tiles(n, tile_bytes)
    _layout_pre_reads(n, k, head, tile_bytes, chain, lane_steps, ring, co_resident, table, base)
    for w in range(m_max):
        table[base + S.TILE_FIELDS * w + S.T_OFFSET] = -1
        table[base + S.TILE_FIELDS * w + S.T_VECS] = 0
    table[base + S.pre_list(m_max)] = 0
    table[base + S.pre_big(m_max)] = 0
    return 0


def test_deadlock_is_detected(monkeypatch):
    """A pre-read the layout forgot, waited for by its flag (no count of finished tickets to say
    "all done"), is waited for forever: the emulator reports a deadlock."""
    monkeypatch.setattr(S, "layout_pre_reads", _no_pre_reads)
    monkeypatch.setattr(S, "pre_reads_finished", lambda finished, total: False)
    with pytest.raises(Deadlock):
        emulate(np.arange(200, dtype=np.uint8), 1, 200, 3, 0, 16, 2, "lowest", 0, lane_steps=3)


def test_forgotten_pre_read_is_reported(monkeypatch):
    """With the kernel's shortcut (no flag polls once every pre-read ticket is done), a scratch piece
    the plan never pre-reads would be read as garbage: the emulator reports it."""
    monkeypatch.setattr(S, "layout_pre_reads", _no_pre_reads)
    with pytest.raises(ScheduleError, match="from scratch"):
        emulate(np.arange(200, dtype=np.uint8), 1, 200, 3, 0, 16, 2, "lowest", 0, lane_steps=3)


def _early_decoding_outcomes(control_warp):
    """Results of 40 interleavings in which blocks decode while another block still copies its
    pre-read ticket (8 blocks; 2-4 of these seeds decode before the last ticket is copied)."""
    buf = np.random.default_rng(1).integers(0, 256, 1024, dtype=np.uint8)
    outcomes = set()
    for seed in range(40):
        out = emulate(buf, 1, 1024, 341, 0, 32, 8, "random", seed, lane_steps=4, **variant(control_warp))
        outcomes.add(bool(np.array_equal(out, expected(buf, 1, 1024, 341))))
    return outcomes


@pytest.mark.parametrize("control_warp", [False, True, "pipeline"])
def test_decoding_before_the_last_pre_read_is_copied(control_warp):
    """The kernel's "every pre-read ticket finished" shortcut, as it is, under those interleavings."""
    assert _early_decoding_outcomes(control_warp) == {True}


@pytest.mark.parametrize("control_warp", [False, True, "pipeline"])
def test_an_early_all_pre_reads_done_is_caught(monkeypatch, control_warp):
    """The interleavings above are sensitive: counting one ticket short lets an item read scratch
    before its span is there."""
    monkeypatch.setattr(S, "pre_reads_finished", lambda finished, total: finished >= total - 1)
    assert False in _early_decoding_outcomes(control_warp)


@pytest.mark.parametrize("control_warp", [False, True, "pipeline"])
def test_ring_wait_on_an_item_not_in_flight_is_reported(monkeypatch, control_warp):
    real = S.classify
    monkeypatch.setattr(S, "classify", lambda *a: S.RING if real(*a) == S.PRE else real(*a))
    with pytest.raises(ScheduleError):
        emulate(np.arange(300, dtype=np.uint8), 1, 300, 7, 0, 32, 2, "lowest", 0, chain=1, lane_steps=2,
                **variant(control_warp))


def test_ring_wait_that_stops_short_is_reported(monkeypatch):
    """The ring wait is only as long as the table's reach: one item short, and the emulator objects."""
    buf = np.random.default_rng(1).integers(0, 256, 2000, dtype=np.uint8)
    # chain 3 (q + 1) at k = 2000 // 3 reads most of each tile two steps ahead: ring readers at reach 2.
    assert max(S.item_ring_reach(int(v)) for v in plan_rows(1, 2000, 666, 0, 256, chain=3, lane_steps=8,
                                                            buffers=4)[2] if v >= 0) == 2
    assert np.array_equal(emulate(buf, 1, 2000, 666, 0, 256, 3, "lowest", 0, buffers=4, chain=3, lane_steps=8),
                          expected(buf, 1, 2000, 666))
    real = S.ring_reach
    monkeypatch.setattr(S, "ring_reach", lambda *a: max(0, real(*a) - 1))
    with pytest.raises(ScheduleError):
        emulate(buf, 1, 2000, 666, 0, 256, 3, "lowest", 0, buffers=4, chain=3, lane_steps=8)
    with pytest.raises(ScheduleError):
        emulate(buf, 1, 2000, 666, 0, 256, 3, "lowest", 0, buffers=4, chain=3, lane_steps=8, control_warp=True)
    with pytest.raises(ScheduleError):
        emulate(buf, 1, 2000, 666, 0, 256, 3, "lowest", 0, buffers=4, chain=3, lane_steps=8, **variant("pipeline"))


@settings(deadline=None, max_examples=300)
@given(n=st.integers(2, 2000), data=st.data(), fits=st.integers(0, 2000))
def test_gries_mills_swaps_then_rotation_equal_numpy(n, data, fits):
    """The GPU block-swap fallback's plan: the swaps, then the final rotation, equal numpy.roll."""
    from rotate._backends.cuda.schedules import block_swap as gpu_block_swap

    k = data.draw(st.integers(1, n - 1))
    a = np.arange(n)
    swaps, (lo, sub_n, sub_k) = gpu_block_swap.gries_mills(n, k, lambda nn, kk: min(kk, nn - kk) <= fits)
    for x, y, m in swaps:
        assert 0 <= x and x + m <= y and y + m <= n, "swapped blocks must be disjoint and inside"
        a[x:x + m], a[y:y + m] = a[y:y + m].copy(), a[x:x + m].copy()
    assert sub_k == 0 or min(sub_k, sub_n - sub_k) <= fits
    a[lo:lo + sub_n] = np.roll(a[lo:lo + sub_n], -sub_k)
    np.testing.assert_array_equal(a, np.roll(np.arange(n), -k))


def test_block_swap_planning_gives_up_after_its_pass_limit():
    """A 1-byte distance with no scratch would take n block swaps, each asking whether the rest
    fits, on the host (the GPU test run sat in this loop for minutes): the planner stops early."""
    from rotate._backends.cuda import device as gpu_device
    from rotate._backends.cuda.schedules import block_swap as gpu_block_swap

    asked = []
    swaps, _ = gpu_block_swap.gries_mills(1_000_003, 1_000_002, lambda n, k: asked.append((n, k)) or False,
                                          gpu_device.policy().max_swap_passes)
    assert len(swaps) == gpu_device.policy().max_swap_passes + 1
    assert len(asked) <= gpu_device.policy().max_swap_passes + 2


def test_kinds_have_matches_the_fields():
    """``kinds_have`` (the chain kernel's direct decoding) against ``kind_at`` on every packing of 1-4 runs."""
    import itertools

    for runs in range(1, S.MAX_RUNS + 1):
        for fields in itertools.product((S.SELF, S.WAIT, S.RING, S.PRE), repeat=runs):
            packed = sum(kind << (2 * i) for i, kind in enumerate(fields))
            for kind in (S.WAIT, S.RING, S.PRE):
                assert S.kinds_have(packed, kind) == (kind in fields), (fields, kind)
                assert any(S.kind_at(packed, i) == kind for i in range(runs)) == (kind in fields)


# --- co-resident plans (one block a lane, launched cooperatively) ---------------------------------

def _co_resident_geometry(n, k, tile_bytes, chain, lane_steps):
    """Whether a co-resident table of this geometry waits on a later lane (what co-residency buys)."""
    m = S.tile_count(n, 0, tile_bytes)
    g, length, inv = S.chain_shape(m, S.chain_step(m, chain))
    for w in range(m):
        x0, x1 = S.tile_dest(n, 0, tile_bytes, w)
        z = x0
        while z < x1:
            reader, z = S.reader_run(n, k, 0, tile_bytes, z, x1)
            if (S.classify(m, g, length, inv, lane_steps, 2, 1, reader, w) == S.WAIT
                    and _key(n, 0, tile_bytes, chain, lane_steps, reader)[0]
                    > _key(n, 0, tile_bytes, chain, lane_steps, w)[0]):
                return True
    return False


@settings(deadline=None, max_examples=60)
@given(n=st.integers(200, 2500), data=st.data(), policy=st.sampled_from(POLICIES),
       control_warp=st.sampled_from([False, True, "pipeline"]), seed=st.integers(0, 2**16))
def test_co_resident_plans_finish_with_a_block_per_lane(n, data, policy, control_warp, seed):
    """A co-resident plan under any interleaving, every lane held by a block of its own: numpy.roll's
    result, every wait pointing to a smaller (step, lane) key (the emulator raises otherwise)."""
    tile_bytes = data.draw(st.sampled_from([16, 32, 48, 64]), label="tile_bytes")
    k = data.draw(st.integers(1, n - 1), label="k")
    q = k // tile_bytes
    chain = data.draw(st.sampled_from(sorted({max(1, q), q + 1})), label="chain")
    m = S.tile_count(n, 5, tile_bytes)
    lane_steps = data.draw(st.integers(1, max(1, m // 2)), label="lane_steps")
    lanes = S.lanes_per_row(n, tile_bytes, lane_steps)
    buf = np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8)
    out = emulate(buf, 1, n, k, 5, tile_bytes, lanes, policy, seed, buffers=data.draw(st.integers(2, 4)),
                  chain=chain, lane_steps=lane_steps, co_resident=True, **variant(control_warp))
    np.testing.assert_array_equal(out, expected(buf, 1, n, k),
                                  err_msg=f"emulate(buf, 1, {n}, {k}, 5, {tile_bytes}, {lanes}, {policy!r}, {seed}, "
                                          f"chain={chain}, lane_steps={lane_steps}, co_resident=True)")


@pytest.mark.parametrize("rows", [1, 3])
def test_co_resident_rows(rows):
    """Several rows, every row's lanes a block each, misaligned rows (16 heads in the table)."""
    n, k, T = 1001, 389, 32
    chain, lane_steps = k // T + 1, 7
    lanes = rows * S.lanes_per_row(n, T, lane_steps)
    buf = np.random.default_rng(rows).integers(0, 256, rows * n, dtype=np.uint8)
    for policy in POLICIES:
        out = emulate(buf, rows, n, k, 3, T, lanes, policy, 1, chain=chain, lane_steps=lane_steps, co_resident=True,
                      pipeline=True, control_warp=True)
        np.testing.assert_array_equal(out, expected(buf, rows, n, k))


def test_co_resident_plan_needs_every_lane_resident():
    """Not vacuous: a co-resident table waits on later lanes, so with one block it cannot finish."""
    n, k, T, chain, lane_steps = 1500, 700, 32, 22, 6
    assert _co_resident_geometry(n, k, T, chain, lane_steps)
    buf = np.random.default_rng(0).integers(0, 256, n, dtype=np.uint8)
    with pytest.raises(Deadlock):
        emulate(buf, 1, n, k, 0, T, 1, "lowest", 0, chain=chain, lane_steps=lane_steps, co_resident=True)
    lanes = S.lanes_per_row(n, T, lane_steps)
    out = emulate(buf, 1, n, k, 0, T, lanes, "lowest", 0, chain=chain, lane_steps=lane_steps, co_resident=True)
    np.testing.assert_array_equal(out, expected(buf, 1, n, k))


@settings(deadline=None, max_examples=200)
@given(n=st.integers(64, 4000), data=st.data(), ring=st.integers(2, 4))
def test_co_resident_pre_reads_only_what_the_order_forces(n, data, ring):
    """Co-residency only turns PRE into WAIT: never the reverse, never a different SELF or RING; and
    ``pre_bytes_by_lane_steps`` (the planner's lane scan) counts what ``count_kinds`` counts."""
    tile_bytes = data.draw(st.sampled_from([16, 32, 64]), label="tile_bytes")
    k = data.draw(st.integers(1, n - 1), label="k")
    chain = data.draw(st.integers(1, 40), label="chain")
    head = data.draw(st.integers(0, 15), label="head")
    m = S.tile_count(n, head, tile_bytes)
    steps = np.array(sorted(set(data.draw(st.lists(st.integers(1, m + 2), min_size=1, max_size=5)))), np.int64)
    for co_resident in (0, 1):
        scanned = np.empty(len(steps), np.int64)
        S.pre_bytes_by_lane_steps(n, k, head, tile_bytes, chain, ring, co_resident, steps, scanned)
        for lane_steps, pre in zip(steps, scanned):
            assert pre == S.count_kinds(n, k, head, tile_bytes, chain, int(lane_steps), ring, co_resident)[3]
    g, length, inv = S.chain_shape(m, S.chain_step(m, chain))
    for lane_steps in steps:
        for w in range(m):
            x0, x1 = S.tile_dest(n, head, tile_bytes, w)
            z = x0
            while z < x1:
                reader, z = S.reader_run(n, k, head, tile_bytes, z, x1)
                alone = S.classify(m, g, length, inv, int(lane_steps), ring, 0, reader, w)
                together = S.classify(m, g, length, inv, int(lane_steps), ring, 1, reader, w)
                assert together == alone or (alone == S.PRE and together == S.WAIT)


@given(x=st.integers(0, (1 << 52) - 1), d=st.integers(1, 1 << 40))
def test_lane_scan_divides_positions_exactly(x, d):
    """The lane scan's float quotient (``_divmod_near``) is ``divmod`` for every chain position it meets."""
    assert S._divmod_near(x, d, 1.0 / d) == divmod(x, d)


_chain_shape_compiled = numba.njit(lambda m, p: S.chain_shape(m, p))


@settings(deadline=None, max_examples=300)
@given(m=st.integers(1, (1 << 32) - 1), data=st.data())
def test_chain_shape_is_gcd_and_modular_inverse(m, data):
    """``chain_shape`` (the chain's cycles and the inverse ``position_of`` needs) against ``math.gcd`` and
    ``pow(x, -1, L)``, for tile counts up to 2**32, in Python and compiled (the planner's and kernels')."""
    import math

    p = data.draw(st.integers(1, max(1, m - 1)))
    g = math.gcd(p, m)
    length = m // g
    inverse = pow(p // g, -1, length) if length > 1 else 0
    assert S.chain_shape(m, p) == (g, length, inverse) == _chain_shape_compiled(m, p)

