"""The GPU row-cycles schedule (multi-axis roll, fftshift) under a hostile scheduler, on the CPU.

``rotate._testing.emulator.emulate_row_cycles`` runs the kernel's index math
(``segment_table``, ``source_row``) and protocol with 1-4 virtual blocks
whose steps and asynchronous copies a scheduler interleaves: random, or
always the highest / lowest block first. Every result must equal numpy.roll
and no interleaving may deadlock (docs/design.md, "Termination of
row-cycles"). The CUDA simulator runs the kernel itself (tests/cases/sim.py).
"""

from unittest import mock

import numpy as np
import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st

pytest.importorskip("numba.cuda")

from rotate._testing import emulator as E  # noqa: E402
from rotate._backends.cuda.kernels import cycles  # noqa: E402
from rotate._schedules import rowperm as _rowperm


@settings(deadline=None, max_examples=300)
@given(data=st.data(), blocks=st.integers(1, 4), policy=st.sampled_from(E.POLICIES), seed=st.integers(0, 10**6))
def test_row_cycles_equal_numpy_under_any_interleaving(data, blocks, policy, seed):
    ndim = data.draw(st.integers(1, 3))
    lead = tuple(data.draw(st.integers(1, 9)) for _ in range(ndim))
    shifts = tuple(data.draw(st.integers(0, n - 1)) for n in lead)
    seg = data.draw(st.integers(1, 12))
    row_shift = data.draw(st.integers(0, seg - 1))
    piece = data.draw(st.integers(1, 6))
    note(f"lead={lead} shifts={shifts} seg={seg} row_shift={row_shift} piece={piece}")
    rows = int(np.prod(lead))
    x = np.random.default_rng(seed).integers(0, 256, (rows, seg), dtype=np.uint8)
    got = E.emulate_row_cycles(x, lead, shifts, row_shift, piece, blocks, policy, seed)
    want = np.roll(x.reshape(*lead, seg), (*shifts, row_shift), tuple(range(ndim + 1))).reshape(rows, seg)
    assert np.array_equal(got, want)


def test_segment_table_covers_every_row_once_and_links_cycles():
    for lead, shifts, piece in (((8,), (4,), 3), ((6, 5), (2, 3), 2), ((7,), (1,), 2), ((4, 4, 4), (2, 0, 2), 4)):
        table = cycles.segment_table(lead, shifts, piece).reshape(-1, 3)
        rows = int(np.prod(lead))
        dims = (1,) * (_rowperm.MAX_LEAD - len(lead)) + lead
        offs = (0,) * (_rowperm.MAX_LEAD - len(shifts)) + shifts
        seen = []
        for first, steps, following in table:
            assert 1 <= steps <= piece
            d = int(first)
            for _ in range(steps):
                seen.append(d)
                d = int(_rowperm.source_row(d, *dims, *offs))
            assert d == table[following][0], "a segment ends where its next one starts"
        assert sorted(seen) == list(range(rows)), "every row is written exactly once"


def test_the_emulator_catches_a_schedule_without_pre_reads(monkeypatch):
    """Not vacuous: with cut cycles marked whole (no pre-read of their first rows), rows are lost."""
    real = cycles.segment_table

    def no_pre_reads(lead, shifts, piece):
        table = real(lead, shifts, piece).copy()
        table[2::3] = np.arange(len(table) // 3)
        return table

    monkeypatch.setattr(cycles, "segment_table", no_pre_reads)
    x = np.arange(12 * 4, dtype=np.uint8).reshape(12, 4)
    got = E.emulate_row_cycles(x, (12,), (5,), 1, 3, 2, "random", 1)
    assert not np.array_equal(got, np.roll(x, (5, 1), (0, 1)))


# --- lane-swaps (roll_rows' lanes beyond a block's shared memory) ---

from rotate._schedules import chain as S  # noqa: E402
from rotate._schedules import gries_mills, walks  # noqa: E402
from rotate._backends.cuda import tuning as cuda_tuning


@settings(deadline=None, max_examples=400)
@given(n=st.integers(1, 600), data=st.data(), save=st.integers(1, 200), panel=st.sampled_from([32, 48, 64, 256]),
       head=st.integers(0, 15), late=st.booleans(), seed=st.integers(0, 10**6))
def test_lane_swaps_equal_numpy_whenever_the_staged_copies_land(n, data, save, panel, head, late, seed):
    """The swap kernel's walk: block swaps, then the saved small side and the streamed rest, each
    panel staged one ahead; a copy landing late (after the panel before it is written) or at once
    gives numpy.roll, so no staged panel overlaps the one written meanwhile."""
    k = data.draw(st.integers(0, n - 1))
    note(f"n={n} k={k} save={save} panel={panel} head={head} late={late}")
    lane = np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8)
    assert np.array_equal(E.emulate_lane_swaps(lane, k, save, panel, head, late), np.roll(lane, -k))


@settings(deadline=None, max_examples=300)
@given(n=st.integers(2, 10**7), data=st.data(), save=st.integers(1, 1 << 17))
def test_swap_traffic_is_two_n_when_the_small_side_fits_and_at_most_four_n(n, data, save):
    k = data.draw(st.integers(1, n - 1))
    traffic = gries_mills.swap_traffic(n, k, save)
    if min(k, n - k) <= save:
        assert traffic == 2 * n
    assert 2 * n <= traffic <= 4 * n
    lo, sub_n, sub_k, swapped = 0, n, k, 0
    while sub_k and min(sub_k, sub_n - sub_k) > save:  # every swap is disjoint and inside the lane
        a, b, m, lo, sub_n, sub_k = gries_mills.swap_step(lo, sub_n, sub_k)
        assert 0 <= a and a + m <= b and b + m <= n and m > save
        swapped += m
    assert traffic == 4 * swapped + (2 * sub_n if sub_k else 0)


# --- lane-walks (roll_rows' lanes from 1 MiB: a block walks its lane in chain order) ---


@settings(deadline=None, max_examples=400)
@given(n=st.integers(1, 6000), data=st.data(), head=st.integers(0, 15), tile=st.sampled_from([32, 48, 64, 256, 1024]),
       reach=st.integers(1, 3), share=st.sampled_from([0, 64, 512, 1 << 30]), pool=st.sampled_from([0, 96, 1 << 30]),
       seed=st.integers(0, 10**6))
def test_lane_walks_equal_numpy_whenever_the_copies_land(n, data, head, tile, reach, share, pool, seed):
    """The walk kernel's schedule: its choice of tile size and chain step, the pre-read spans, then the
    tiles in chain order with the copies of ``reach`` items ahead started before each write. Every copy
    is taken when it starts and must be unchanged when it has to have landed (the emulator raises
    otherwise), a pre-read piece must lie in its writer's span, and the lane must equal numpy.roll.
    Lanes over both the share and what is left of the pool take block swaps."""
    k = data.draw(st.one_of(st.integers(0, n - 1), st.sampled_from([0, 1, n // 2, n - 1, n // 3])) if n > 1
                  else st.just(0))
    note(f"n={n} k={k} head={head} tile={tile} reach={reach} share={share} pool={pool}")
    lane = np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8)
    got, plan = E.emulate_lane_walk(lane, k, head, tile, 4096, reach, share, save=40, panel=64, pool_left=pool)
    assert np.array_equal(got, np.roll(lane, -k)), plan[:3]
    if plan[0] == "walk":
        assert plan[5] <= max(share, pool) and all(lo >= hi or (hi - lo) % 16 == 0 for lo, hi in plan[3])
        tile_lo, tile_hi = walks.walk_tile_range(n, tile, 4096)
        assert tile_lo <= plan[1] <= tile_hi and plan[1] % 16 == 0
    else:
        assert plan[0] == ("none" if k == 0 else "swaps")
        if k:  # a swap is a walk with no room: with room for its spans it would have walked
            tile_bytes, _, total = walks.walk_decision(n, k, head, tile, 4096, reach, share, 1 << 40)
            assert tile_bytes == 0 or total > max(share, pool), (tile_bytes, total)
            assert plan[1] == (total if tile_bytes else 0)  # what the lane asked of the pool


@settings(deadline=None, max_examples=200)
@given(n=st.integers(64, 20000), data=st.data(), head=st.integers(0, 15), reach=st.integers(1, 3))
def test_walk_reach_is_the_farthest_reader_within_the_ring(n, data, head, reach):
    """``walk_reach`` (which copies a write waits for) against the readers of every byte of the tile."""
    tile = data.draw(st.sampled_from([16, 32, 64, 128]))
    k = data.draw(st.integers(1, n - 1))
    m = S.tile_count(n, head, tile)
    p = S.chain_step(m, data.draw(st.integers(1, max(1, m - 1))))
    g, length, _ = S.chain_shape(m, p)
    rank = np.empty(m, np.int64)
    for position in range(m):
        rank[S.tile_at(m, p, g, length, position)] = position
    for position in range(m):
        j = S.tile_at(m, p, g, length, position)
        x0, x1 = S.tile_dest(n, head, tile, j)
        readers = {S.tile_of(head, tile, (z - k) % n) for z in range(x0, x1)}
        ahead = [rank[r] - position for r in readers if 0 < rank[r] - position <= reach]
        assert walks.walk_reach(n, k, head, tile, rank, 0, position, j, reach) == max(ahead, default=0)


@settings(deadline=None, max_examples=300)
@given(n=st.integers(1 << 10, 1 << 26), tile_max=st.sampled_from([32, 64, 2048, 24576, 32768, 65536]),
       max_tiles=st.sampled_from([2, 480, 1024, 4096]))
def test_walk_choice_is_one_round_of_chunks_that_cover_every_size(n, tile_max, max_tiles):
    """A choice is at most ``WALK_CHUNKS * WALK_CHAINS`` (256) picks, one round of the kernel's block, and
    its chunks hold every tile size once: consecutive, none empty, none past the last size."""
    from rotate._schedules import walks

    tile_lo, tile_hi = walks.walk_tile_range(n, tile_max, max_tiles)
    if tile_lo > tile_hi:
        return
    sizes = walks.walk_sizes(tile_lo, tile_hi)
    picks = walks.walk_picks(tile_lo, tile_hi)
    assert picks % walks.WALK_CHAINS == 0 and picks <= walks.WALK_CHUNKS * walks.WALK_CHAINS == 256
    width = walks.walk_chunk(sizes)
    chunks = picks // walks.WALK_CHAINS
    assert width * (chunks - 1) < sizes <= width * chunks, (sizes, width, chunks)


@settings(deadline=None, max_examples=200)
@given(n=st.integers(1 << 12, 1 << 24), data=st.data(), head=st.integers(0, 15))
def test_walk_choice_is_the_least_pick_and_its_tile_fits(n, data, head):
    """``walk_choose`` returns the pick of least (cost, index) that ``walk_pick_cost`` gives, every pick
    is a tile size in range with a chain step in ``[1, m)``; the kernel reduces the same picks."""
    k = data.draw(st.integers(1, n - 1))
    share = data.draw(st.sampled_from([0, n // 12, n]))
    tile_lo, tile_hi = walks.walk_tile_range(n, 1024, 256)
    if tile_lo > tile_hi:
        return
    sizes = walks.walk_sizes(tile_lo, tile_hi)
    picks = []
    for pick in range(walks.walk_picks(tile_lo, tile_hi)):
        cost, index = walks.walk_pick_cost(n, k, head, tile_hi, sizes, pick, 3, share)
        if index >= 0:
            tile, chain = walks.walk_candidate(n, k, head, tile_hi, index)
            assert tile_lo <= tile <= tile_hi and 1 <= chain < S.tile_count(n, head, tile)
            picks.append((cost, index))
    assert walks.walk_choose(n, k, head, tile_lo, tile_hi, 3, share) == (min(picks) if picks else (-1, -1))


# --- the chunked variant (cycle_stream_kernel): rows streamed through a ring of chunks ---


@settings(deadline=None, max_examples=300)
@given(data=st.data(), blocks=st.integers(1, 4), policy=st.sampled_from(E.POLICIES), seed=st.integers(0, 10**6))
def test_chunked_row_cycles_equal_numpy_under_any_interleaving(data, blocks, policy, seed):
    """Any chunk size against the row (1 to many chunks a row, wraps inside a chunk), ring depths 2-4, every
    16-byte phase, first rows kept in shared memory or pre-read into scratch."""
    ndim = data.draw(st.integers(1, 3))
    lead = tuple(data.draw(st.integers(1, 7)) for _ in range(ndim))
    shifts = tuple(data.draw(st.integers(0, n - 1)) for n in lead)
    seg = data.draw(st.integers(1, 70))
    row_shift = data.draw(st.integers(0, seg - 1))
    piece = data.draw(st.integers(1, 6))
    chunk = 16 * data.draw(st.integers(1, 4))
    ring = data.draw(st.integers(2, 4))
    head0 = data.draw(st.integers(0, 15))
    in_smem = data.draw(st.booleans())
    note(f"lead={lead} shifts={shifts} seg={seg} row_shift={row_shift} piece={piece} chunk={chunk} ring={ring} "
         f"head0={head0} in_smem={in_smem}")
    rows = int(np.prod(lead))
    x = np.random.default_rng(seed).integers(0, 256, (rows, seg), dtype=np.uint8)
    got = E.emulate_row_cycles_chunked(x, lead, shifts, row_shift, piece, blocks, chunk, ring, head0, in_smem,
                                       policy, seed)
    want = np.roll(x.reshape(*lead, seg), (*shifts, row_shift), tuple(range(ndim + 1))).reshape(rows, seg)
    assert np.array_equal(got, want)


def test_chunk_spans_tile_every_row_and_runs_cover_the_roll():
    """Chunks are 16-byte aligned in memory and tile the row; each chunk's two source runs are the rolled bytes."""
    for seg in (1, 15, 16, 17, 40, 100):
        for chunk in (16, 32, 48):
            for head in range(16):
                spans = [cycles.chunk_span(k, chunk, seg, head) for k in range(cycles.chunks_per_row(seg, chunk))]
                covered = [x for lo, hi in spans for x in range(lo, hi)]
                assert covered == list(range(seg)), (seg, chunk, head)
                assert all((head + lo) % 16 == 0 for lo, hi in spans[1:] if lo < hi)
                for shift in {0, 1, seg // 2, seg - 1}:
                    for lo, hi in spans:
                        if lo < hi:
                            a, len_a = cycles.source_run(lo, hi, shift, seg)
                            runs = list(range(a, a + len_a)) + list(range(hi - lo - len_a))
                            assert runs == [(x - shift) % seg for x in range(lo, hi)]


def _chunked_finds_a_wrong_row(**broken):
    """Whether some interleaving of a broken chunked protocol loses bytes (a 2-row-cycle fftshift and a 1-cycle roll)."""
    for lead, shifts in (((6,), (3,)), ((7,), (2,))):
        rows = int(np.prod(lead))
        x = np.arange(rows * 40, dtype=np.uint8).reshape(rows, 40)
        want = np.roll(x, (shifts[0], 9), (0, 1))
        for seed in range(60):
            got = E.emulate_row_cycles_chunked(x, lead, shifts, 9, 8, 2, 16, 3, 5, True, "random", seed, **broken)
            if not np.array_equal(got, want):
                return True
    return False


def test_the_emulator_catches_a_saved_row_staged_after_the_ring():
    """Not vacuous: the saved first row must be the oldest copy group. Staged after the ring's first units,
    the wait before step 0's first write may leave it in flight, and it reads an overwritten row."""
    assert not _chunked_finds_a_wrong_row()
    assert _chunked_finds_a_wrong_row(saved_first=False)


def test_the_emulator_catches_a_ring_wait_one_group_short():
    """Not vacuous: waiting for all but the newest ``ring`` groups (not ``ring - 1``) writes chunks from
    buffers whose copies have not landed."""
    assert _chunked_finds_a_wrong_row(wait_pending=3)


# --- half-swaps (every rolled axis by half its length; rotate/_schedules/rowperm.py) ---


@settings(deadline=None, max_examples=300)
@given(data=st.data(), threads=st.sampled_from([1, 2, 4, 8, 256]), vecs=st.integers(1, 4), seed=st.integers(0, 10**6))
def test_half_swaps_equal_numpy_in_any_item_order(data, threads, vecs, seed):
    """The planner's half-swap items, run in a random order (blocks never wait for each other, so any
    interleaving of items is one order of them), touch every byte exactly once and give numpy.roll."""
    from rotate._schedules import rowperm as R
    from rotate._backends.cuda import device as gpu_device
    from rotate._backends.cuda.schedules import half_swaps as gpu_half_swaps

    ndim = data.draw(st.integers(0, 4))
    lead = tuple(data.draw(st.integers(1, 6)) for _ in range(ndim))
    shifts = tuple(data.draw(st.sampled_from([0, n // 2])) if n % 2 == 0 else 0 for n in lead)
    seg = 32 * data.draw(st.integers(1, 20))
    note(f"lead={lead} shifts={shifts} seg={seg}")
    rows = int(np.prod(lead)) if lead else 1
    with cuda_tuning.override(lane_threads=threads, half_swap_vecs=vecs), \
            mock.patch.object(gpu_device, "device_shape", lambda device_id=0: (132, 228 * 1024)), \
            mock.patch.object(gpu_device, "_device_id", lambda: 0):  # plan as for an H200, without one
        step = gpu_half_swaps.plan_half_swaps(lead or (1,), shifts or (0,), rows, seg, seg // 2, 1, 0)
    assert step is not None and step.algorithm == "half-swaps"
    d = step.details
    assert d["chunk_bytes"] <= 16 * d["group"] * vecs and d["chunk_bytes"] % 16 == 0
    assert d["group"] * d["rows_per_item"] == threads and (d["rows_per_item"] == 1 or d["chunks_per_half"] == 1)
    x = np.random.default_rng(seed).integers(0, 256, rows * seg, dtype=np.uint8)
    got = x.copy()
    order = np.random.default_rng(seed + 1).permutation(d["items"])
    touched = E.emulate_half_swaps(got, order, rows, d["rows_per_item"], d["chunk_bytes"], d["chunks_per_half"],
                                   seg, seg // 2, *d["lead"], *d["lead_shifts"])
    assert (touched == 1).all(), "every byte lies in exactly one item, on one side"
    want = np.roll(x.reshape(*lead, seg), (*shifts, seg // 2), tuple(range(ndim + 1))).reshape(-1)
    assert np.array_equal(got, want)


def test_half_swap_shape_takes_only_half_rolls():
    from rotate._schedules.rowperm import half_swap_shape

    assert half_swap_shape((4, 6), (2, 0), 64, 32) == ((1, 1, 4, 6), (0, 0, 2, 0))
    assert half_swap_shape((), (), 64, 32) == ((1, 1, 1, 1), (0, 0, 0, 0))
    assert half_swap_shape((4,), (1,), 64, 32) is None  # not half the radix
    assert half_swap_shape((5,), (2,), 64, 32) is None  # odd radix: 2 is n // 2, but no involution
    assert half_swap_shape((4,), (2,), 64, 16) is None  # the row moves by a quarter
    assert half_swap_shape((2, 2, 2, 2, 2), (1,) * 5, 64, 32) is None  # more radices than the kernel walks


def test_the_half_swap_emulator_catches_a_wrong_partner(monkeypatch):
    """Not vacuous: items pairing a row with itself instead of its partner leave rows unmoved."""
    from rotate._schedules import rowperm as R

    x = np.arange(4 * 64, dtype=np.uint8)
    got = x.copy()
    touched = E.emulate_half_swaps(got, np.arange(4), 4, 1, 32, 1, 64, 32, 1, 1, 1, 4, 0, 0, 0, 0)  # no shifts
    want = np.roll(x.reshape(4, 64), (2, 32), (0, 1)).reshape(-1)
    assert (touched == 1).all() and not np.array_equal(got, want)


# --- flat pass and row strips (one rolled leading axis; rotate/_schedules/rowperm.py) ---


def _plan_as_h200(fn, *args, **overrides):
    from rotate._backends.cuda import device as gpu_device

    with cuda_tuning.override(**overrides), \
            mock.patch.object(gpu_device, "device_shape", lambda device_id=0: (132, 228 * 1024)), \
            mock.patch.object(gpu_device, "_device_id", lambda: 0):
        return fn(*args)


@settings(deadline=None, max_examples=300)
@given(data=st.data(), threads=st.sampled_from([1, 2, 4, 256]), seed=st.integers(0, 10**6))
def test_flat_pass_then_row_strips_equal_numpy_in_any_item_order(data, threads, seed):
    """A roll with one rolled leading axis and an in-row shift: the flat rotation the planner's first
    step makes (numpy.roll of each batch's bytes here; the chain schedule is tested on its own), then
    the strip items in a random order, each in batches of loads before stores as the kernel runs them,
    give numpy.roll over both axes and write each strip byte exactly once."""
    from rotate._schedules import rowperm as R
    from rotate._backends.cuda.schedules import row_strips as gpu_row_strips

    ndim = data.draw(st.integers(1, 3))
    lead = tuple(data.draw(st.integers(1, 7)) for _ in range(ndim))
    rolled = data.draw(st.integers(0, ndim - 1))
    lead = lead[:rolled] + (max(2, lead[rolled]),) + lead[rolled + 1:]
    shifts = tuple(data.draw(st.integers(1, n - 1)) if i == rolled else 0 for i, n in enumerate(lead))
    seg = 16 * data.draw(st.integers(1, 6))
    row_shift = data.draw(st.integers(1, seg - 1))
    cap = data.draw(st.sampled_from([None, 16 * 4, 1 << 20]))
    note(f"lead={lead} shifts={shifts} seg={seg} row_shift={row_shift} cap={cap}")
    batches, rows, flat, lo, hi, up = R.flat_strip_shape(lead, shifts, seg, row_shift)
    strip = _plan_as_h200(gpu_row_strips.plan_row_strips, batches, rows, seg, lo, hi, up, 1, cap or 1 << 30,
                          lane_threads=threads)
    slot = 16 * (-(-hi // 16) - lo // 16)
    if strip is None:  # only where a strip a batch passes the scratch bound
        assert batches * slot > cap, (lead, cap)
        return
    assert strip.algorithm == "row-strips" and strip.rows == batches
    d = strip.details
    assert hi - lo <= seg // 2 and (lo == 0) == up == d["up"] and row_shift in (lo, hi)
    assert d["items"] == batches * d["chunks"] and d["chunks"] * d["chunk_rows"] >= rows > (d["chunks"] - 1) * d["chunk_rows"]
    assert strip.scratch_bytes == d["items"] * slot <= (cap or 1 << 30)
    x = np.random.default_rng(seed).integers(0, 256, int(np.prod(lead)) * seg, dtype=np.uint8)
    got = np.roll(x.reshape(batches, rows * seg), flat, axis=1).reshape(-1)  # the flat step: each batch by flat
    order = np.random.default_rng(seed + 1).permutation(d["items"])
    written = E.emulate_row_strips(got, order, d["items"], d["chunks"], d["chunk_rows"], d["rows"], seg, d["v_lo"],
                                   d["vectors"], lo, hi, d["up"], threads * d["vecs"])
    want = np.roll(x.reshape(*lead, seg), (*shifts, row_shift), tuple(range(ndim + 1))).reshape(-1)
    assert np.array_equal(got, want)
    in_strip = np.zeros(seg, bool)
    in_strip[lo:hi] = True
    assert np.array_equal(written, np.tile(in_strip, x.size // seg).astype(np.int64))


def test_flat_strip_shape_takes_one_rolled_leading_radix():
    from rotate._schedules.rowperm import flat_strip_shape

    # (batches, rows, flat right rotation of a batch, strip lo, hi, up)
    assert flat_strip_shape((8,), (3,), 64, 10) == (1, 8, 3 * 64 + 10, 0, 10, True)
    assert flat_strip_shape((8,), (3,), 64, 40) == (1, 8, 2 * 64 + 40, 40, 64, False)  # the narrower strip
    assert flat_strip_shape((2, 8, 5), (0, 3, 0), 64, 10) == (2, 40, 15 * 64 + 10, 0, 10, True)
    assert flat_strip_shape((8, 5), (3, 1), 64, 10) is None  # two rolled radices
    assert flat_strip_shape((8,), (0,), 64, 10) is None  # nothing rolls before the row
    assert flat_strip_shape((8,), (3,), 64, 0) is None  # no in-row shift: a flat rotation alone


def test_the_strip_emulator_catches_a_wrong_walk(monkeypatch):
    """Not vacuous: an upward chunk walked from its last row (sources right, the boundary row first)
    reads strips it has already overwritten, and the emulator's result shows it."""
    from rotate._schedules import rowperm as R

    x = np.arange(6 * 16, dtype=np.uint8)
    want = x.reshape(6, 16).copy()
    want[:, :5] = np.roll(want[:, :5], -1, axis=0)
    got = x.copy()
    E.emulate_row_strips(got, np.arange(1), 1, 1, 6, 6, 16, 0, 1, 0, 5, True, 1)
    assert np.array_equal(got.reshape(6, 16), want)

    def from_the_last_row(first, count, j, rows, up):
        dest = first + count - 1 - j
        return dest, (dest + 1) % rows, j == 0

    from rotate._testing.emulator import rowperm as emulated

    monkeypatch.setattr(emulated, "strip_step", from_the_last_row)
    got = x.copy()
    E.emulate_row_strips.py_func(got, np.arange(1), 1, 1, 6, 6, 16, 0, 1, 0, 5, True, 1)
    assert not np.array_equal(got.reshape(6, 16), want)
