"""The CPU's chain on every lane (issue #36): lanes of a row's chain positions that share nothing.

* The exact plan tables the planner makes run in ``rotate._testing.emulator.emulate_free_lanes`` with the lanes
  interleaved adversarially (one after another, the last first, random per action, round robin): the
  bytes equal ``numpy.roll``'s, scratch starts poisoned, and no lane reads row bytes after any lane wrote
  them. The GPU's table (readers in earlier lanes waited for, not pre-read) is caught by the same emulator.
* ``rotate.roll`` against ``numpy.roll``, byte for byte, with tiny chain tiles and several lanes forced
  (item sizes 1-16 and primes, sizes off powers of two, shifts 0, +-1, +-n, beyond n, at tile edges).
* The planner takes the chain on every lane for the gate's long shifts at 256 MiB and 1 GiB, uint8 and
  float64, one lane and two, within 1.05x of 2N bytes moved, and ``rotate.plan`` says so.
* chain-lanes and chain-rows under each threading layer (subprocesses, a forked child) and as the serial
  twins a forked GNU OpenMP child runs.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rotate
from rotate._backends.cpu import planner, runners
from rotate._testing import emulator as E
from rotate._schedules import chain as S
from rotate._schedules import free_lanes
from rotate._backends.cpu import tuning as cpu_tuning

TILES = [(32,), (48,), (64,), (112,), (64, 48, 32)]



def _chain_details(n, k, lanes, tiles, ring=4):
    """The chain plan (``cpu.planner._plan_chain``, as the planner makes it) of one row of ``n`` bytes rotated left
    by ``k`` on ``lanes`` lanes, as the runner's details, or None where no tile fits."""
    with cpu_tuning.override(chain_tile_bytes=tuple(tiles), chain_ring=ring):
        plan = planner._plan_chain(1, n, k, 1 << 20, lanes)
    if plan is None:
        return None
    _, _, runner = plan
    _, used, tile_bytes, chain, table, scratch_row, lane_steps, direct = runner
    return {"lanes": used, "tile_bytes": tile_bytes, "ring": ring, "_table": table, "_scratch_row": scratch_row,
            "lane_steps": lane_steps, "chain_step": chain, "direct": direct}


def _emulate(n, k, d, policy, seed, direct=None):
    row = np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8)
    want = np.roll(row, -k)
    E.emulate_free_lanes(row, k, d["tile_bytes"], d["ring"], d["_table"], d["_scratch_row"], d["lane_steps"],
                         d["lanes"], policy, seed, d["direct"] if direct is None else direct)
    return row, want


SHIFT_FAMILIES = [lambda n: n // 3, lambda n: n // 2 + 3, lambda n: n // 4 + 3, lambda n: 2 * n // 5 + 1,
                  lambda n: n - n // 3, lambda n: 1237, lambda n: n - 1237, lambda n: n // 2 - 1]


@pytest.mark.parametrize("direct", [False, True])
@pytest.mark.parametrize("policy", E.FREE_POLICIES)
@pytest.mark.parametrize("lanes", [1, 2, 3, 5])
@pytest.mark.parametrize("n", [3001, pytest.param(4096, marks=pytest.mark.slow), 4099,
                               pytest.param(6007, marks=pytest.mark.slow)])  # half of them under -m slow
def test_emulated_lanes_match_numpy(direct, policy, lanes, n):
    """Every gate shift family under each interleaving, with and without straight copies: numpy.roll's
    bytes, no read after a write."""
    taken = 0
    for i, family in enumerate(SHIFT_FAMILIES):
        k = family(n)
        for tiles in ((64,), (48,)):
            d = _chain_details(n, k, lanes, tiles)
            if d is None:
                continue
            taken += 1
            assert d["lanes"] == min(lanes, -(-S.tile_count(n, 0, d["tile_bytes"]) // d["lane_steps"]))
            row, want = _emulate(n, k, d, policy, seed=n + 31 * i + lanes, direct=direct)
            assert row.tobytes() == want.tobytes(), (n, k, lanes, tiles, policy)
    assert taken >= len(SHIFT_FAMILIES), taken  # not vacuous: the chain takes (nearly) every shift


@settings(deadline=None, max_examples=120)
@given(n=st.integers(200, 5000), data=st.data(), lanes=st.integers(1, 6), tiles=st.sampled_from(TILES),
       ring=st.integers(2, 5), policy=st.sampled_from(E.FREE_POLICIES), seed=st.integers(0, 2**31),
       direct=st.booleans())
def test_emulated_lanes_random(n, data, lanes, tiles, ring, policy, seed, direct):
    """Any row, shift, lane count, tile and ring depth: the planned table run in any interleaving."""
    k = data.draw(st.integers(1, n - 1))
    d = _chain_details(n, k, lanes, tiles, ring)
    if d is None:
        return
    row, want = _emulate(n, k, d, policy, seed, direct)
    assert row.tobytes() == want.tobytes()


def _gpu_table(n, k, tile_bytes, lane_steps, ring):
    """The GPU's table for the same lanes: a reader in an earlier lane at an earlier step is waited for
    (``WAIT``), not pre-read; lanes that never wait must not run it."""
    m_max = S.max_tiles(n, tile_bytes)
    table = np.zeros(S.table_stride(m_max), np.int64)
    layout, kinds, _ = S.compiled_table_builders()
    best = None
    for chain in (k // tile_bytes, k // tile_bytes + 1):
        pre = kinds(n, k, 0, tile_bytes, chain, lane_steps, ring, 0)
        if pre[1] and (best is None or pre[1] > best[0]):
            best = (pre[1], chain)
    if best is None:
        return None, 0
    scratch_row = layout(n, k, 0, tile_bytes, best[1], lane_steps, ring, 0, table, 0)
    return table, S.align_up(scratch_row) + 16


def test_waits_dropped_without_pre_reads_are_caught():
    """Not vacuous: the GPU's plan (waits instead of pre-reads across lanes) run with no waits reads
    overwritten bytes under some interleaving, and the emulator says so."""
    caught = 0
    for n, k in ((4096, 4096 // 3), (3001, 1237), (6007, 6007 // 2 + 3), (4099, 2 * 4099 // 5 + 1)):
        table, scratch_row = _gpu_table(n, k, 64, 16, 4)
        if table is None:
            continue
        for policy in ("reverse", "random"):
            row = np.random.default_rng(n).integers(0, 256, n, dtype=np.uint8)
            try:
                E.emulate_free_lanes(row, k, 64, 4, table, scratch_row, 16, -(-S.tile_count(n, 0, 64) // 16),
                                     policy, 1)
            except E.RaceError:
                caught += 1
    assert caught >= 4, caught


def test_free_classify_pre_reads_every_other_lanes_reader():
    """``free_classify``: a reader in another lane is PRE whatever the order; within a lane the one-lane
    rules (SELF earlier, RING within the ring, PRE further back)."""
    m, p, lane_steps, ring = 37, 10, 8, 3
    g, length, inv = S.chain_shape(m, S.chain_step(m, p))
    for reader in range(m):
        for writer in range(m):
            kind = free_lanes.free_classify(m, g, length, inv, lane_steps, ring, reader, writer)
            pr = S.position_of(m, g, length, inv, reader)
            pw = S.position_of(m, g, length, inv, writer)
            if pr // lane_steps != pw // lane_steps:
                assert kind == S.PRE
            elif pr <= pw:
                assert kind == S.SELF
            elif pr - pw < ring:
                assert kind == S.RING
            else:
                assert kind == S.PRE


def test_lattice_chains_find_short_vectors():
    """Random shifts: a lattice step pre-reads far less than q or q + 1 (about sqrt(n T) a boundary);
    structured shifts keep q or q + 1 first."""
    _, pre_bytes = free_lanes.compiled_free_builders()
    chains = free_lanes.lattice_chains  # the planner interprets it
    n, tile = 1 << 28, 16 << 10
    m = S.tile_count(n, 0, tile)
    better = 0
    for seed in range(6):
        k = int(np.random.default_rng(seed).integers(1, n))
        out = np.zeros(8, np.int64)
        count = chains(n, k, 0, tile, 4, out)
        assert count >= 4 and len(set(out[:count].tolist())) == count
        pres = [pre_bytes(n, k, 0, tile, int(c), -(-m // 2), 4, n) for c in out[:count]]
        assert min(pres[2:]) <= 3 * int(np.sqrt(n * tile)), (k, pres)  # two lanes: two boundaries
        better += min(pres[2:]) * 4 < min(pres[:2])
    assert better == 6, better
    out = np.zeros(8, np.int64)
    count = chains(n, n // 3, 0, tile, 4, out)
    assert list(out[:2]) == [(n // 3) // tile, (n // 3) // tile + 1]


def _ring_bytes_exact(n, k, tile, chain, lane_steps, ring):
    """Every tile's readers classified (``free_classify``): the bytes ``free_ring_bytes`` estimates."""
    m = S.tile_count(n, 0, tile)
    g, length, inv = S.chain_shape(m, S.chain_step(m, chain))
    total = 0
    for w in range(m):
        x0, x1 = S.tile_dest(n, 0, tile, w)
        z = x0
        while z < x1:
            reader, end = S.reader_run(n, k, 0, tile, z, x1)
            total += (end - z) * (free_lanes.free_classify(m, g, length, inv, lane_steps, ring, reader, w) == S.RING)
            z = end
    return total


@pytest.mark.parametrize("n,k,tile,chain,lanes", [
    (1 << 22, (1 << 22) // 3, 1 << 12, 341, 1), (1 << 22, (1 << 22) // 3, 1 << 12, 683, 1),
    (1 << 22, (1 << 21) + 3, 1 << 12, 512, 2), (5 << 20, 1234577, 1 << 12, 301, 1),
    (3 << 16, 70001, 1 << 12, 17, 1),  # 48 tiles: fewer than the samples, counted exactly
])
def test_free_ring_bytes_estimates_the_ring(n, k, tile, chain, lanes):
    """The sampled estimate of the bytes kept in the ring is within 1/32 of the row of the exact count,
    and exact where the row has no more tiles than samples."""
    m = S.tile_count(n, 0, tile)
    lane_steps = -(-m // lanes)
    exact = _ring_bytes_exact(n, k, tile, chain, lane_steps, 4)
    estimate = free_lanes.free_ring_bytes(n, k, 0, tile, chain, lane_steps, 4, 64)
    assert abs(estimate - exact) <= n // 32, (estimate, exact)
    if m <= 64:
        assert estimate == exact


def test_chain_planner_charges_the_ring():
    """A random shift whose least pre-reading chain step keeps nearly the whole row in the ring (uint8,
    256 MiB, one lane: 96% of the bytes, 1.66x copyto) takes a step that keeps almost none there (1.09x)."""
    n, k = 1 << 28, 127076851
    tuning = cpu_tuning.CpuTuning()
    plan = planner._plan_chain(1, n, k, tuning.scratch_bytes, 1)
    tile, chain, lane_steps = plan[2][2], plan[2][3], plan[2][6]
    assert free_lanes.free_ring_bytes(n, k, 0, tile, chain, lane_steps, 4, 256) < n // 20, (tile, chain)
    with cpu_tuning.override(chain_ring_byte_cost=0):  # pre-reads alone: the ring-heavy step
        blind = planner._plan_chain(1, n, k, tuning.scratch_bytes, 1)
    assert free_lanes.free_ring_bytes(n, k, 0, blind[2][2], blind[2][3], blind[2][6], 4, 256) > n // 2


def test_interpreted_and_compiled_builders_plan_alike(monkeypatch):
    """The planner interprets its table builders for short rows and compiles them for long ones (cold first
    calls, issue #32): both make the same plan, table included."""
    rng = np.random.default_rng(7)
    cases = [(1 << 25, (1 << 25) // 3, 1), (1 << 24, (1 << 23) + 4097, 2), (3 << 20, 1 << 20, 1)]
    cases += [(int(n), int(rng.integers(1, n)), int(lanes)) for n, lanes in ((1 << 25, 1), (5 << 22, 2))]
    for n, k, lanes in cases:
        plans = []
        for builders in ((free_lanes.layout_free_lanes, free_lanes.free_pre_bytes), free_lanes.compiled_free_builders()):
            monkeypatch.setattr(planner, "_chain_builders", lambda n, tuning: builders)
            plans.append(planner._plan_chain(1, n, k, 8 << 20, lanes))
        assert (plans[0] is None) == (plans[1] is None), (n, k)
        if plans[0] is not None:
            assert plans[0][:2] == plans[1][:2] and plans[0][2][:4] == plans[1][2][:4], (n, k)
            assert plans[0][2][5:] == plans[1][2][5:], (n, k)
            assert np.array_equal(plans[0][2][4], plans[1][2][4]), (n, k)


# --- through the public API ---------------------------------------------------------------------------

DTYPES = [np.uint8, np.uint16, np.float32, np.float64, np.complex128, "V3", "V5", "V7", "V13"]


def _shifts(n, itemsize, tile_bytes):
    edge = max(1, tile_bytes // itemsize)
    return sorted({0, 1, -1, n, -n, n + 5, -3 * n - 7, n // 3, n // 2 + 1, n // 4 + 3, 2 * n // 5 + 1,
                   edge - 1, edge, edge + 1, n - edge, n - edge - 1, 3 * edge + 1, n - 1, -(n // 3)})


def test_straight_copies_stay_off_where_they_alias():
    """A straight row-to-row copy 1-31 bytes ahead modulo 4096 would alias (16-31: 3.6x copyto streaming
    from memory): such shifts copy through the placed ring."""
    n = 1 << 24
    for k, direct in ((n // 3, True), (4096 * 1365 + 4090, False), (n // 2 - 4, False), (n // 2 + 3, True),
                      (n // 2 - 24, False), (n // 2 - 31, False), (n // 2 - 32, True)):
        with cpu_tuning.override(lanes=2, adapt_to_load=False):
            name, _, _, d = planner.plan_rows_params(1, n, k, 1)
        assert name == "chain-lanes" and d.direct == direct, (k, name, getattr(d, "direct", None))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("count", [255, 257, 1021, 1023, 1025, 2039])
def test_roll_takes_chain_lanes_and_matches_numpy(tune, dtype, count):
    """``rotate.roll`` with 64- and 48-byte chain tiles on three lanes against ``numpy.roll``, bytes."""
    dtype = np.dtype(dtype)
    base = np.random.default_rng(count).integers(0, 256, count * dtype.itemsize, dtype=np.uint8).view(dtype)
    tune.cpu(lanes=3, min_lane_bytes=1, chain_tile_bytes=(64, 48), scratch_bytes=1600, adapt_to_load=False)
    taken = 0
    for shift in _shifts(count, dtype.itemsize, 64):
        a = base.copy()
        plan = rotate.plan(a, shift)
        rotate.roll(a, shift)
        want = np.roll(base, shift)
        assert a.view(np.uint8).tobytes() == want.view(np.uint8).tobytes(), (shift, str(plan))
        taken += bool(plan.steps) and plan.steps[0].algorithm == "chain-lanes"
    if count * dtype.itemsize >= 3000:  # smaller rows fit the buffered shift or pre-read past the bound
        assert taken >= 3, taken


@pytest.mark.parametrize("direct", [True, False])
@pytest.mark.parametrize("lanes", [2, 3])
@pytest.mark.parametrize("rows,seg", [(1, 3 * (1 << 20) + 11), (2, 3 * (1 << 20) + 11)])
def test_chain_lanes_with_default_tiles(tune, direct, lanes, rows, seg):
    """Rows long enough for the default tiles: the rings are placed (a page of slack) lane by lane; pieces
    copied straight from the row or all through the ring."""
    tune.cpu(lanes=lanes, min_lane_bytes=1 << 16, scratch_bytes=1 << 20, adapt_to_load=False, chain_direct=direct)
    taken = 0
    for k in (seg // 3, seg // 2 + 3, seg // 4 + 3, 2 * seg // 5 + 1, 1234567):
        name, scratch, moved, d = planner.plan_rows_params(rows, seg, k, 1)
        if name == "chain-lanes":  # 48 tiles: a few shifts pre-read more than the bound holds
            taken += 1
            assert d.alias_slack == 4096 and scratch <= 1 << 20
            assert d.direct == (direct and not (planner._aliasing(-k) or planner._aliasing(seg - k))), k
        buf = np.random.default_rng(k).integers(0, 256, rows * seg, dtype=np.uint8)
        want = np.roll(buf.reshape(rows, seg), -k, axis=1).reshape(-1)
        runners.rotate_rows_inplace(buf, rows, seg, k)
        assert buf.tobytes() == want.tobytes(), (rows, seg, k)
    assert taken >= 3, taken


# --- the planner at the gate's sizes ------------------------------------------------------------------

def _gate_shifts(n):
    rand = [int(np.random.default_rng(s).integers(1, n)) for s in range(3)]
    return [n // 3, n // 2 + 3, n // 4 + 3, 2 * n // 5 + 1, n - n // 3] + rand


@pytest.mark.parametrize("mib", [256, 1024])
@pytest.mark.parametrize("dtype", [np.uint8, np.float64])
@pytest.mark.parametrize("lanes", [1, 2])
def test_gate_shifts_take_the_chain_in_one_pass(tune, mib, dtype, lanes):
    """Every long gate shift takes the chain on every lane, within 1.05x of 2N bytes moved, and
    ``rotate.plan`` names the schedule, lanes, chain step, tile and pre-read bytes."""
    tune.cpu(lanes=lanes, adapt_to_load=False)
    a = np.empty((mib << 20) // np.dtype(dtype).itemsize, dtype)  # never touched: no pages
    for shift in _gate_shifts(a.size):
        plan = rotate.plan(a, shift)
        step = plan.steps[0]
        want = "chain-lanes" if lanes > 1 else "chain-serial"
        assert step.algorithm == want and step.details["lanes"] == lanes, (shift, str(plan))
        assert step.bytes_moved <= 1.05 * 2 * a.nbytes, (shift, step.bytes_moved / (2 * a.nbytes))
        assert step.scratch_bytes <= cpu_tuning.current().scratch_bytes
        text = str(plan)
        for key in ("chain_step=", "lane_steps=", "tile_bytes=", "pre_read_bytes=", f"lanes={lanes}"):
            assert key in text, text


# --- threading layers ---------------------------------------------------------------------------------

LAYER_SCRIPT = r'''
import os, sys
import numpy as np
import numba
import rotate
from rotate._backends import cpu as _cpu
from rotate._backends.cpu import tuning as cpu

n = 3 * (1 << 20) + 11
with cpu.override(lanes=2, min_lane_bytes=1 << 16, scratch_bytes=1 << 20, adapt_to_load=False):
    a = np.random.default_rng(1).integers(0, 256, n, dtype=np.uint8)
    for s in (n // 3, n // 2 + 3, 1234567):
        want = np.roll(a, s)
        assert rotate.plan(a, s).steps[0].algorithm == "chain-lanes"
        rotate.roll(a, s)
        assert a.tobytes() == want.tobytes(), s
    pid = os.fork()
    if pid == 0:  # a forked child (threads of its own) rolls too
        b = a.copy()
        want = np.roll(b, n // 3)
        rotate.roll(b, n // 3)
        os._exit(0 if b.tobytes() == want.tobytes() else 3)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
with cpu.override(lanes=2, min_lane_bytes=1, chain_tile_bytes=(64, 48), scratch_bytes=2048, adapt_to_load=False):
    rows, seg = 7, 6007
    buf = np.random.default_rng(3).integers(0, 2**63, rows * seg, dtype=np.uint64)
    want = np.roll(buf.reshape(rows, seg), -(seg // 3), axis=1).reshape(-1)
    assert _cpu.planner.plan_rows(rows, seg, seg // 3, 8)[0] == "chain-rows"
    _cpu.runners.rotate_rows_inplace(buf, rows, seg, seg // 3)
    assert buf.tobytes() == want.tobytes()
print("ok", numba.threading_layer())
'''


def _layers():
    layers = ["workqueue", "omp"]
    try:
        import tbb  # noqa: F401
        layers.append("tbb")
    except ImportError:
        pass
    return layers


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
@pytest.mark.parametrize("layer", _layers())
def test_chain_lanes_under_each_threading_layer(layer, tmp_path):
    """chain-lanes and chain-rows under each threading layer numba may pick, and in a forked child."""
    script = tmp_path / "job.py"
    script.write_text(LAYER_SCRIPT)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, NUMBA_THREADING_LAYER=layer, NUMBA_NUM_THREADS="2",
               PYTHONPATH=os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]))
    result = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True,
                            timeout=600, cwd=tmp_path)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert f"ok {layer}" in result.stdout


@pytest.mark.parametrize("lanes", [2, 3])
def test_chain_lanes_and_rows_on_any_team(lanes, tune):
    """chain-lanes and chain-rows run by rotate._backends.cpu.team's threads, 2 or 3 lanes: the same bytes as numpy."""
    tune.cpu(lanes=lanes, min_lane_bytes=1, chain_tile_bytes=(64, 48), scratch_bytes=2048, adapt_to_load=False)
    for rows, seg in ((1, 6007), (7, 6007)):
        for k in (seg // 3, seg // 2 + 3, 2 * seg // 5 + 1):
            name = planner.plan_rows(rows, seg, k, 8)[0]
            assert name in ("chain-lanes", "chain-rows"), name
            buf = np.random.default_rng(k).integers(0, 2**63, rows * seg, dtype=np.uint64)
            want = np.roll(buf.reshape(rows, seg), -k, axis=1).reshape(-1)
            runners.rotate_rows_inplace(buf, rows, seg, k)
            assert buf.tobytes() == want.tobytes(), (rows, k, name)
