"""The CUDA kernels under numba's CUDA simulator (run by tests/backends/test_cuda_sim.py).

Run directly with ``NUMBA_ENABLE_CUDASIM=1 python tests/cases/sim.py``. The
simulator runs blocks one after another and threads as Python threads, so
inputs are small and tiles tiny (64-256 bytes, 4-8 threads): many tiles,
seam chunks and rows per call, every misalignment of the base address.
The cases and the test body are shared with the CPU and GPU tests
(tests/cases/roll.py).
"""

import os
import sys

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

assert os.environ.get("NUMBA_ENABLE_CUDASIM") == "1", "run with NUMBA_ENABLE_CUDASIM=1"

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/: the cases package

from cases.roll import FIXED_CASES, Case, CudaRunner, cases, check_roll_case  # noqa: E402
from numba import cuda, uint32  # noqa: E402 - after the simulator switch above

EXAMPLES = int(os.environ.get("SIM_EXAMPLES", "80"))
SIM_MAX_BYTES = 2048  # the simulator runs every thread in Python


def _fixed_cases(runner, chain_details):
    """Every fixed case that fits the simulator; each chain step's details must satisfy ``chain_details``."""
    ran = chains = 0
    for case in FIXED_CASES:
        if case.nbytes <= SIM_MAX_BYTES:
            plan = check_roll_case(runner, case)
            ran += 1
            steps = [step for step in plan.steps if step.algorithm == "chain"]
            assert all(chain_details(step.details) for step in steps), plan
            chains += bool(steps)
    assert ran > 100 and chains > 50, (ran, chains)


def check_fixed():
    """The defaults: the pipelined kernel (producer, decoder, bulk copies, mbarriers), direct decoding."""
    _fixed_cases(CudaRunner(tile_bytes=64, threads=4, grid=3),
                 lambda d: d["pipeline"] and d["decode"] == "direct")


@settings(deadline=None, max_examples=EXAMPLES, database=None)
@given(case=cases(max_elements=700, max_dim=9, dtypes=["uint8", "int16", "float32", "complex128"]),
       tile=st.sampled_from([64, 128, 256]), threads=st.sampled_from([4, 8]), grid=st.integers(1, 4),
       variant=st.sampled_from([None, "single", "control-warp", "pipeline"]),
       decode=st.sampled_from(["runs", "direct"]))
def check_random(case, tile, threads, grid, variant, decode):
    check_roll_case(CudaRunner(tile_bytes=tile, threads=threads, grid=grid, chain_variant=variant,
                               chain_decode=decode), case)


def check_fixed_single_kernel():
    """The fixed cases again with the single-thread kernel (cp.async ring, block barriers) walking
    every item's source runs (``chain_decode="runs"``); the control-warp kernel is drawn at random."""
    _fixed_cases(CudaRunner(tile_bytes=64, threads=4, grid=3, chain_variant="single", chain_decode="runs"),
                 lambda d: not d["pipeline"] and not d["control_warp"] and d["decode"] == "runs")


def check_sector_split():
    """Bulk copies whose global end would start halfway into a 32-byte sector move
    that first vector alone, the rest from the sector boundary (``kernels.chain.bulk_load_sectors``),
    and every copy lands in shared memory at its global source's phase within a sector
    (``kernels.chain.sector_shift``) unless it continues the copy before it: every copy longer than a
    vector starts on a sector, the rolls stay right, and splits happen here."""
    from rotate._backends.cuda.kernels import chain, memops

    seen, landed = [], []
    plain_load = chain.bulk_load

    def load(smem, to, src, pos, nbytes, bars, barrier):
        seen.append(("load", memops.address_low(src, pos), int(nbytes)))
        landed.append((int(to), int(nbytes), int(memops.address_low(src, pos))))
        plain_load(smem, to, src, pos, nbytes, bars, barrier)

    chain.bulk_load = load
    try:
        runner = CudaRunner(tile_bytes=128, threads=4, grid=3)
        for n, dtype, shift, offset in [(1000, "uint8", 3, 0), (1000, "uint8", 17, 0), (1000, "uint8", 500, 9),
                                        (997, "uint8", 16, 0), (999, "uint8", 48, 16 - 1), (60, "complex128", 1, 0),
                                        (61, "complex128", 7, 8), (1000, "uint8", 30, 0),
                                        (1000, "uint8", 32, 16), (500, "complex128", 2, 48)]:
            # The last two start 16 bytes into a sector (device buffers start on 256-byte
            # boundaries, tests/cases/roll.py's device_copy) with whole-vector shifts.
            check_roll_case(runner, Case((n,), dtype, shift, offset=offset, seed=n + shift))
        check_roll_case(runner, Case((5, 307), "uint8", 40, axis=1, offset=7, seed=5))  # rows of every phase
    finally:
        chain.bulk_load = plain_load
    long_misplaced = [c for c in seen if c[2] > 16 and c[1] % 32]
    assert not long_misplaced, long_misplaced[:5]
    assert all(c[1] % 16 == 0 and c[2] % 16 == 0 for c in seen), seen[:5]
    split = {kind for kind, address, nbytes in seen if nbytes == 16 and address % 32 == 16}
    assert split == {"load"}, (split, len(seen))
    # Each load lands at its source's phase in a sector (buffers start on 128-byte lines; offsets
    # here are from the buffers' start), or continues the copy before it (a joined piece).
    off_phase = [(i, copy) for i, copy in enumerate(landed) if (copy[0] - copy[2]) % 32
                 and (i == 0 or copy[0] != landed[i - 1][0] + landed[i - 1][1])]
    assert not off_phase, off_phase[:5]
    assert sum((to - address) % 32 == 0 for to, _, address in landed) > 0.8 * len(landed)


def check_fallback():
    runner = CudaRunner(tile_bytes=64, threads=4, grid=3)
    seen = set()
    for shift in (1, 100, 150, 151, 200, 299):  # no scratch: exact divisions swap, others reverse
        seen.add(check_roll_case(runner, Case((300,), "uint8", shift, max_scratch=0, seed=2)).algorithm)
    assert seen == {"reversal", "block-swap"}, seen


@settings(deadline=None, max_examples=EXAMPLES // 2, database=None)
@given(n=st.integers(40, 900), data=st.data(), offset=st.integers(0, 15), cap=st.integers(0, 400),
       seed=st.integers(0, 2**32 - 1))
def check_block_swap(n, data, offset, cap, seed):
    """Distances whose pre-reads exceed max_scratch_bytes: block swaps, then the chain kernel."""
    shift = data.draw(st.integers(1, n - 1))
    check_roll_case(CudaRunner(tile_bytes=64, threads=4, grid=3),
                    Case((n,), "uint8", shift, offset=offset, max_scratch=cap, seed=seed))


def check_block_swap_rows_at_every_offset():
    """Several rows whose starts sit at different offsets from a 16-byte boundary (203-byte rows):
    each row's final chain step must be planned for its own offset (the GPU faulted on a
    misaligned address when row 0's plan ran on every row)."""
    runner = CudaRunner(tile_bytes=64, threads=4, grid=2)
    seen = set()
    for shift in (77, 100, 150):
        for offset in (0, 5):
            seen.add(check_roll_case(runner, Case((3, 203), "uint8", shift, axis=1, offset=offset,
                                                  max_scratch=150, seed=shift)).algorithm)
    assert "block-swap" in seen, seen


def check_row_lanes():
    """Rolls of many rows that neither the chain (no scratch for its pre-reads) nor block swaps (more rows
    than max_swap_rows) take: the roll_rows kernels with one shift for every row, where reversal ran before
    (row-panels; row-walks and row-swaps for rows past the lanes' shared memory), at 16-byte offsets 0 and
    5, against numpy.roll, bytes."""
    from cases.rows import LONG_LANE_SETTINGS, NO_SCRATCH_WALK_SETTINGS

    seen = set()
    for settings, shape, dtype, shift, axis in ((dict(max_swap_rows=2), (6, 203), "uint8", 77, 1),
                                                (dict(max_swap_rows=2), (3, 4, 70), "int16", (-2, 31), (0, 2)),
                                                (dict(max_swap_rows=2, **NO_SCRATCH_WALK_SETTINGS), (5, 300),
                                                 "uint8", 113, 1),
                                                (dict(max_swap_rows=2, **LONG_LANE_SETTINGS), (4, 150), "uint16",
                                                 -61, -1)):
        runner = CudaRunner(tile_bytes=64, threads=4, grid=3, lane_threads=8, **settings)
        for offset in (0, 5):
            plan = check_roll_case(runner, Case(shape, dtype, shift, axis, offset=offset, max_scratch=0,
                                                seed=len(seen) + offset))
            seen.update(step.algorithm for step in plan.steps)
    assert {"row-panels", "row-walks", "row-swaps"} <= seen and "reversal" not in seen, seen


def check_rows_fixed():
    """roll_rows (lane-panels), multi-axis roll and fftshift (row-cycles): the shared table."""
    from cases.rows import FIXED_ROWS_CASES, CudaRowsRunner, check_rows_case

    seen = set()
    for grid in (1, 3):  # one resident block must finish too: every wait is on an earlier ticket
        # grid 1 writes rows with the per-unit gather, grid 3 as runs (row-cycles' default)
        runner = CudaRowsRunner(min_cycle_row=16, lane_threads=16, grid=grid,
                                lane_writer="gather" if grid == 1 else None)
        for case in FIXED_ROWS_CASES[grid - 1:: 2 if grid == 3 else 5]:  # the GPU tests run them all
            seen.add(check_rows_case(runner, case).algorithm)
    assert {"lane-panels", "row-cycles", "half-swaps"} <= seen, seen


def check_rows_long_lanes():
    """Lanes too long for a block (lane-panels' limit shrunk): lane-swaps, one launch, on the shared
    long-lane table with grids of 1 and 3 blocks (no block waits for another, so one finishes too);
    lane-chains for a few long lanes with host shifts (its thresholds lowered here); one panel
    buffer for lanes of about 300 to 570 bytes."""
    from cases.rows import LONG_LANE_CASES, LONG_LANE_SETTINGS, CudaRowsRunner, RowsCase, check_rows_case

    seen = set()
    for grid in (1, 3):
        runner = CudaRowsRunner(lane_threads=8, grid=grid, **LONG_LANE_SETTINGS)
        for case in LONG_LANE_CASES[grid - 1:: 3 if grid == 1 else 1]:  # the GPU tests run them all
            plan = check_rows_case(runner, case)
            assert plan.algorithm == "lane-swaps", plan
            seen.add(plan.steps[0].details["bytes_moved_is_bound"])
    assert seen == {True, False}, seen  # device shifts: a bound; host shifts: exact
    runner = CudaRowsRunner(max_lane_smem=600, min_chain_lane_bytes=0, lane_threads=8, threads=4,
                            tile_bytes=64, grid=3)
    for shape, dtype, shifts, device, algorithm in (((4, 700), "uint8", (3, 3, -7, 0), False, "lane-chains"),
                                                    ((4, 700), "uint8", (3, 3, -7, 0), True, "lane-swaps"),
                                                    ((9, 700), "uint8", 5, False, "lane-swaps"),
                                                    ((3, 100), "float32", (1, 50, 99), True, "lane-panels"),
                                                    ((5, 70), "uint16", 9, True, "lane-panels")):
        case = RowsCase("roll_rows", shape, dtype, shifts, -1, 3, seed=len(seen), device_shifts=device)
        plan = check_rows_case(runner, case)
        assert plan.algorithm == algorithm, (case, plan)
        if algorithm == "lane-panels" and case.nbytes // shape[0] > 300:
            assert plan.steps[0].details["buffers"] == 1, plan


def check_rows_lane_walks():
    """lane-walks on lanes of a few hundred bytes (tiles of 32-64 bytes): grids of one block and three,
    rings of two to four buffers, eight threads (thread 0 decodes after it writes) and 64 (a warp decodes
    while the other writes, eight items at a time); no scratch at all (block swaps in the walk kernel,
    except for lanes with nothing to pre-read); a share of one vector and an ample pool, or no share and a
    tight pool (lanes over what is left take block swaps). The pool (the bytes after the blocks' shares)
    must hold exactly the bytes the lanes over their share asked of it, and every launch must leave its
    counters at zero. Tiles of 1-2 KiB put two sizes in each chunk of the choice: the pool's exact fill
    shows each lane chose as the emulator does."""
    from cases.rows import (LONG_LANE_CASES, NO_SCRATCH_WALK_SETTINGS, POOL_WALK_SETTINGS, TIGHT_POOL_WALK_SETTINGS,
                            WALK_SETTINGS, WIDE_CHOICE_CASE, WIDE_CHOICE_WALK_SETTINGS, CudaRowsRunner,
                            check_pool_filled, check_rows_case, launch_scratch_state, walk_pool_bytes)

    no_scratch = CudaRowsRunner(lane_threads=8, grid=2, **NO_SCRATCH_WALK_SETTINGS)
    pool = CudaRowsRunner(lane_threads=8, grid=4, **POOL_WALK_SETTINGS)
    pooled = 0
    for runner, cases in ((CudaRowsRunner(lane_threads=8, grid=1, **WALK_SETTINGS), LONG_LANE_CASES[0:6:2]),
                          (CudaRowsRunner(lane_threads=8, grid=3, walk_buffers=2, **WALK_SETTINGS), LONG_LANE_CASES[7:12:2]),
                          (CudaRowsRunner(lane_threads=64, grid=2, walk_buffers=3, **WALK_SETTINGS), LONG_LANE_CASES[13:15]),
                          (no_scratch, LONG_LANE_CASES[3:4]),
                          (pool, LONG_LANE_CASES[3:5]),
                          (CudaRowsRunner(lane_threads=8, grid=3, **TIGHT_POOL_WALK_SETTINGS), LONG_LANE_CASES[4:5])):
        for case in cases:
            plan = check_rows_case(runner, case)
            assert plan.algorithm == "lane-walks", plan
            assert runner is not no_scratch or plan.scratch_bytes == 0, plan
            assert not launch_scratch_state(plan)[1].any()
            if runner is pool and walk_pool_bytes(plan, case):
                check_rows_case(runner, case)  # scratch poisoned before it: the first call may have grown it
                check_pool_filled(launch_scratch_state(plan)[0], walk_pool_bytes(plan, case))
                pooled += 1
    assert pooled  # lanes walked from the pool
    wide = CudaRowsRunner(lane_threads=8, grid=2, **WIDE_CHOICE_WALK_SETTINGS)
    plan = check_rows_case(wide, WIDE_CHOICE_CASE)
    assert plan.algorithm == "lane-walks" and plan.steps[0].details["tile_bytes"] == (1024, 2048), plan
    check_rows_case(wide, WIDE_CHOICE_CASE)  # scratch poisoned before it: the first call may have grown it
    check_pool_filled(launch_scratch_state(plan)[0], walk_pool_bytes(plan, WIDE_CHOICE_CASE))


@settings(deadline=None, max_examples=EXAMPLES // 4, database=None)
@given(data=st.data(), threads=st.sampled_from([4, 8, 32]), grid=st.integers(1, 4),
       panel=st.sampled_from([32, 48, 64, 128]), save=st.integers(1, 300))
def check_rows_long_lanes_random(data, threads, grid, panel, save):
    """lane-swaps with random panel and saved-side sizes, lanes of 2 bytes to 1.2 KB."""
    from cases.rows import CudaRowsRunner, check_rows_case, long_lane_cases

    case = data.draw(long_lane_cases())
    runner = CudaRowsRunner(max_lane_smem=32, lane_threads=threads, grid=grid, swap_panel_bytes=panel,
                            swap_save_bytes=save)
    assert check_rows_case(runner, case).algorithm == "lane-swaps"


def check_rows_chunked():
    """row-cycles' chunked variant (rows too long for three row buffers) on tiny rows: chunks of 16-48
    bytes, ring depths 2-4, first rows in shared memory or in scratch, grids of 1 and 3 blocks."""
    from cases.rows import CHUNKED_ROWS_CASES, CHUNKED_RUNS, CudaRowsRunner, check_rows_case

    seen = set()
    # Half (each shape for every other dtype): the simulator takes ~1 s a case; the GPU runs them all.
    half = [case for i, case in enumerate(CHUNKED_ROWS_CASES) if (i + i // 6) % 2 == 0]
    for i, case in enumerate(half):
        variant, chunk, ring = CHUNKED_RUNS[i % len(CHUNKED_RUNS)]
        runner = CudaRowsRunner(min_cycle_row=16, lane_threads=(4, 8)[i % 2],
                                grid=(1, 3)[i // len(CHUNKED_RUNS) % 2], cycle_variant=variant,
                                cycle_chunk_bytes=chunk, cycle_ring=ring)
        plan = check_rows_case(runner, case)
        details = plan.steps[0].details
        assert plan.algorithm == "row-cycles" and details["variant"] == "chunked", plan
        assert (details["chunk_bytes"], details["ring"]) == (chunk, ring), details
        seen.add((details["first_rows"], details["block"], details["grid"] > 1))
    assert {first for first, _, _ in seen} == {"shared memory", "scratch"}, seen
    assert {many for _, _, many in seen} == {False, True}, seen


def check_rows_chunked_picked_where_three_rows_do_not_fit():
    """No variant forced: three rows where they fit the shared memory a block may take (``cycle_smem``
    shrunk here), else the chunked kernel with the first row in shared memory, else with first rows in
    scratch, else one pass per axis."""
    from cases.rows import CudaRowsRunner, RowsCase, check_rows_case

    case = RowsCase("roll", (9, 100), "uint8", (4, 33), (0, 1), 3)  # three 100-byte rows: 432 bytes
    for limit, want in ((432, ("three-rows", "shared memory")), (320, ("chunked", "shared memory")),
                        (200, ("chunked", "scratch")), (100, None)):
        runner = CudaRowsRunner(min_cycle_row=16, lane_threads=8, grid=2, cycle_smem=limit,
                                cycle_chunk_bytes=16, tile_bytes=64, threads=4)
        plan = check_rows_case(runner, case)
        if want is None:
            assert plan.algorithm != "row-cycles" and len(plan.steps) == 2, plan
        else:
            details = plan.steps[0].details
            assert (details["variant"], details["first_rows"]) == want, (limit, details)
            assert details["smem_bytes"] <= limit


def check_rows_folded_row_cycles():
    """row-cycles with the last rolled axis folded into the leading radices: where rows from that axis on
    do not fit three-rows (``cycle_smem`` shrunk here) but the bytes after it reach ``min_cycle_row``,
    rows are those bytes, moved whole (no in-row shift). Item sizes 1-16 and 3, misaligned bases, shifts
    negative and beyond the length; five rolled leading axes are more radices than the kernels walk."""
    from cases.rows import CudaRowsRunner, RowsCase, check_rows_case

    for i, (dtype, offset) in enumerate((("uint8", 3), ("int16", 2), ("float32", 12), ("float64", 8),
                                        ("complex128", 0), ("V3", 1))):
        item = np.dtype(dtype).itemsize
        tail = max(1, 24 // item)  # 24-48 bytes after the last rolled axis
        for shape, shifts, axes in (((3, 4, 5, tail), (1, -2, 13), (0, 1, 2)),
                                    ((6, 7, tail), (-4, 9), (0, 1)),
                                    ((2, 3, 4, 5, tail), (1, 1, -1, 2), (0, 1, 2, 3)),
                                    ((2, 3, 2, 3, 5, tail), (1, 1, -1, 2, 2), (0, 1, 2, 3, 4))):
            if len(shape) == 6 and i > 1:  # the slowest shape under the simulator: two item sizes
                continue
            case = RowsCase("roll", shape, dtype, shifts, axes, offset, seed=i)
            runner = CudaRowsRunner(min_cycle_row=16, lane_threads=8, grid=(1, 3)[i % 2], cycle_smem=200,
                                    tile_bytes=64, threads=4)
            plan = check_rows_case(runner, case)
            if len(shape) == 6:  # five rolled leading axes: one radix too many once folded
                assert plan.algorithm != "row-cycles" or plan.steps[0].seg_bytes != tail * item, plan
                continue
            details = plan.steps[0].details
            assert plan.algorithm == "row-cycles" and plan.steps[0].seg_bytes == tail * item, plan
            assert details["row_shift_bytes"] == 0, details


def check_rows_short_row_cycles():
    """Multi-axis rolls of few short rows (2 bytes and up): one row-cycles launch up to
    ``short_row_cycles_max_rows`` (the shared cases that fit the simulator, one block and three), a
    pass an axis beyond it (the limit lowered here to 64 rows)."""
    from cases.rows import SHORT_ROW_CYCLES_CASES, CudaRowsRunner, RowsCase, check_rows_case

    small = [case for case in SHORT_ROW_CYCLES_CASES if case.nbytes <= SIM_MAX_BYTES]
    assert len(small) >= 2, small
    for grid in (1, 3):
        for case in small:
            plan = check_rows_case(CudaRowsRunner(lane_threads=8, grid=grid), case)
            assert [step.algorithm for step in plan.steps] == ["row-cycles"], plan
    for limit, steps in ((64, 1), (63, 2)):
        case = RowsCase("roll", (64, 4), "float32", (5, -3), (0, 1), 4, seed=limit)
        plan = check_rows_case(CudaRowsRunner(lane_threads=8, grid=2, short_row_cycles_max_rows=limit), case)
        assert len(plan.steps) == steps and (steps == 2 or plan.algorithm == "row-cycles"), plan


def check_rows_halves_apart():
    """A multi-axis roll no one-pass schedule takes (rows shorter than ``min_cycle_row``): the axes rolled
    by half their length in one ``half-swaps`` pass, the others in their own, in either order of memory
    (C and F), item sizes 1-16; rows off a 16-byte boundary keep a pass an axis."""
    from cases.rows import CudaRowsRunner, RowsCase, check_rows_case

    # The simulator's arrays have few enough rows for one row-cycles launch (short_row_cycles_max_rows): off here.
    runner = CudaRowsRunner(tile_bytes=64, threads=4, lane_threads=8, grid=3, short_row_cycles_max_rows=0)
    for i, (function, shape, dtype, shifts, axes, offset, order, passes) in enumerate((
            ("fftshift", (3, 4, 16), "float32", None, None, 0, "C", 2),
            ("roll", (5, 6, 8, 16), "int16", (2, 3, -4, 24), (0, 1, 2, 3), 0, "C", 2),
            ("fftshift", (16, 4, 3), "float32", None, None, 0, "F", 2),
            ("ifftshift", (7, 2, 32), "uint8", None, None, 0, "C", 2),
            ("roll", (3, 5, 4, 2), "complex128", (1, 2, 2, 1), (0, 1, 2, 3), 0, "C", 3),
            ("fftshift", (3, 4, 16), "float32", None, None, 4, "C", 3))):
        case = RowsCase(function, shape, dtype, shifts, axes, offset, seed=i, order=order)
        plan = check_rows_case(runner, case)
        assert len(plan.steps) == passes and (passes == 3 or plan.steps[-1].algorithm == "half-swaps"), plan


@settings(deadline=None, max_examples=EXAMPLES // 2, database=None)
@given(data=st.data(), threads=st.sampled_from([4, 32]), grid=st.integers(1, 4))
def check_rows_random(data, threads, grid):
    from cases.rows import CudaRowsRunner, check_rows_case, rows_cases

    case = data.draw(rows_cases(max_bytes=600))
    check_rows_case(CudaRowsRunner(min_cycle_row=16, lane_threads=threads, grid=grid), case)




def check_rows_flat_strips():
    """``flat_strips``: a flat chain pass then ``row-strips`` (the boundary rows saved, then the chunks in
    any order), blocks of 1-8 threads so chunks hold one or several batches of loads, grids of 1 and 3,
    against numpy; every case's plan is the two steps."""
    from cases.rows import FLAT_STRIP_CASES, ONE_PASS, CudaRowsRunner, RowsCase, check_rows_case


    seen = set()
    for i, (function, shape, dtype, shifts, axes, order) in enumerate(FLAT_STRIP_CASES):
        for threads, grid in ((1, 3), (2, 1), (8, 3))[i % 2:]:
            runner = CudaRowsRunner(flat_strips=True, lane_threads=threads, grid=grid, tile_bytes=64, threads=4)
            case = RowsCase(function, shape, dtype, shifts if shifts is not None else 0, axes, 0, seed=i, order=order)
            plan = check_rows_case(runner, case)
            flat, strip = plan.steps
            assert flat.algorithm in ONE_PASS and strip.algorithm == "row-strips", plan
            seen.add((flat.algorithm, strip.details["up"], strip.details["chunks"] > 1))
    assert {"chain", "half-swaps"} == {flat for flat, _, _ in seen}, seen  # 112 of 224 bytes: a half-swap
    assert {(up, many) for _, up, many in seen} >= {(True, True), (False, True), (True, False)}, seen


def check_rows_window_writer():
    """lane-panels' window writer (each whole vector from the one to four source runs it covers; lanes of
    16 bytes to 2 KiB by default) forced onto every lane length, below 16 bytes too (a vector over many
    lanes): lanes of two items to 40 bytes of every item size at every 16-byte offset, lane shifts on both sides
    of a vector edge, and random cases, panels of one lane and of several, grids of 1 and 3 blocks."""
    from cases.rows import CudaRowsRunner, RowsCase, check_rows_case, rows_cases

    for i, (item, n) in enumerate((item, n) for item in (1, 2, 4, 8, 16) for n in range(2, 41 // item + 1)):
        dtype = {1: "uint8", 2: "uint16", 4: "float32", 8: "float64", 16: "complex128"}[item]
        rows = 5 + i % 4
        shifts = tuple((3 * r + i) % (2 * n + 1) - n for r in range(rows))
        case = RowsCase("roll_rows", (rows, n), dtype, shifts, -1, offset=(7 * i) % 16, seed=i)
        runner = CudaRowsRunner(lane_threads=32, grid=(1, 3)[i % 2], lane_writer="windows",
                                panel_bytes=(16, 200)[i % 3 == 0])
        plan = check_rows_case(runner, case)
        assert plan.algorithm == "lane-panels" and plan.steps[0].details["writer"] == "windows", plan

    @settings(deadline=None, max_examples=EXAMPLES // 4, database=None)
    @given(data=st.data(), grid=st.integers(1, 3), panel=st.sampled_from([48, 256, 1000]))
    def random_cases(data, grid, panel):
        case = data.draw(rows_cases(max_bytes=800).filter(lambda c: c.function == "roll_rows"))
        runner = CudaRowsRunner(lane_threads=32, grid=grid, lane_writer="windows", panel_bytes=panel)
        check_rows_case(runner, case)

    random_cases()


def check_rows_run_writer():
    """lane-panels' run writer (each lane as two runs through ``_write_moved``, lanes of 2 KiB and more
    by default) forced onto short lanes: every other fixed roll_rows case and random ones, groups of 4
    and 16 threads, panels of one or several lanes, grids of 1 and 3 blocks."""
    from cases.rows import FIXED_ROWS_CASES, CudaRowsRunner, check_rows_case, rows_cases

    seen = set()
    lanes = [case for case in FIXED_ROWS_CASES if case.function == "roll_rows"]
    for i, case in enumerate(lanes[::2]):
        runner = CudaRowsRunner(min_row_threads=4, lane_threads=16, grid=(1, 3)[i % 2],
                                lane_writer="runs", panel_bytes=(64, 200)[i % 3 == 0])
        plan = check_rows_case(runner, case)
        assert plan.algorithm == "lane-panels" and plan.steps[0].details["writer"] == "runs", plan
        seen.add(plan.steps[0].details["row_threads"])
    assert seen == {4, 8, 16}, seen

    @settings(deadline=None, max_examples=EXAMPLES // 4, database=None)
    @given(data=st.data(), grid=st.integers(1, 3), panel=st.sampled_from([48, 256, 1000]))
    def random_cases(data, grid, panel):
        case = data.draw(rows_cases(max_bytes=800).filter(lambda c: c.function == "roll_rows"))
        runner = CudaRowsRunner(min_row_threads=4, lane_threads=16, grid=grid, lane_writer="runs",
                                panel_bytes=panel)
        check_rows_case(runner, case)

    random_cases()


def check_rows_lane_warps():
    """lane-panels' warps variant (``kernels.panels.warp_lane_kernel``, 1-8 KiB lanes by default) forced onto short
    lanes: every other fixed roll_rows case and random ones, one and two warps a block, a lane a warp or a
    half, quarter or eighth of one (``warp_lane_threads``), grids of 1-3 blocks, 2-8 slots a group; more
    lanes a group than its 32-shift table (the table refills); lane counts that leave a warp's groups one
    lane apart (a group idles through the warp's last round)."""
    from cases.rows import FIXED_ROWS_CASES, CudaRowsRunner, RowsCase, check_rows_case, rows_cases

    def check(runner, case):
        plan = check_rows_case(runner, case)
        if plan.algorithm == "lane-panels" and plan.steps[0].seg_bytes >= 16:
            assert plan.steps[0].details["variant"] == "warps", plan
        return plan

    seen = set()
    lanes = [case for case in FIXED_ROWS_CASES if case.function == "roll_rows"]
    for i, case in enumerate(lanes[::2]):
        runner = CudaRowsRunner(lane_warps=True, lane_threads=(32, 64)[i % 2], grid=1 + i % 3,
                                warp_slots=(None, 2, 3, 8)[i % 4], warp_lane_threads=(None, 16, 8, 4)[i % 4])
        plan = check(runner, case)
        seen.add(plan.steps[0].details.get("variant"))
    assert "warps" in seen, seen
    # 70 lanes for one warp: its shift table (32 a time) refills twice; bytes off the 16-byte grid.
    many = RowsCase("roll_rows", (70, 33), "uint8", tuple(range(-35, 35)), -1, 3, seed=1)
    assert check(CudaRowsRunner(lane_warps=True, lane_threads=32, grid=1), many).steps[0].details["variant"] == "warps"
    # Groups of 16 and 8: 70 lanes over 2 or 4 groups of one warp, so the groups end one round apart; and
    # 71 lanes over two warps of quarter-warp groups (8 groups: lane counts 9 and 8).
    for group, threads, rows in ((16, 32, 70), (8, 32, 70), (8, 64, 71), (4, 32, 70)):
        case = RowsCase("roll_rows", (rows, 37), "uint8", tuple(range(-(rows // 2), rows - rows // 2)), -1, 5, seed=3)
        plan = check(CudaRowsRunner(lane_warps=True, lane_threads=threads, grid=1, warp_lane_threads=group), case)
        assert plan.steps[0].details["lane_threads"] == group, plan
    # One shift for every row (rotate.roll along the last axis): row-panels runs the same kernel.
    for shape, dtype, shift in (((40, 100), "uint8", 3), ((12, 64), "float32", -5)):
        plan = check_rows_case(CudaRowsRunner(lane_warps=True, lane_threads=32, grid=2),
                               RowsCase("roll", shape, dtype, (shift,), (1,), 4, seed=2))
        assert plan.algorithm == "row-panels" and plan.steps[0].details["variant"] == "warps", plan

    @settings(deadline=None, max_examples=EXAMPLES // 4, database=None)
    @given(data=st.data(), grid=st.integers(1, 3), threads=st.sampled_from([32, 64]),
           slots=st.sampled_from([None, 2, 3, 8]), group=st.sampled_from([None, 16, 8, 4]))
    def random_cases(data, grid, threads, slots, group):
        case = data.draw(rows_cases(max_bytes=800).filter(lambda c: c.function == "roll_rows"))
        check(CudaRowsRunner(lane_warps=True, lane_threads=threads, grid=grid, warp_slots=slots,
                             warp_lane_threads=group), case)

    random_cases()


def check_write_moved():
    """The tiled kernels' write path (``kernels.common._write_moved``) against its definition, byte for byte.

    Every row offset (``head``), source alignment and run length up to a few
    vectors, including runs inside one vector and runs with partial vectors
    at both ends, for both loop choices on sources on the vector grid; the
    row is poisoned and every byte outside ``[lo, hi)`` must be left alone.
    The simulator also faults 16-byte accesses that are not 16-byte aligned
    and shared reads past the buffer.
    """
    from rotate._backends.cuda.kernels import common

    threads, buffer_words, slot0 = 4, 4 * 12, 1
    rng = np.random.default_rng(7)
    cases = [(head, lo, length, z) for head in range(16) for lo in (0, 5, 16, 17) for length in (0, 1, 11, 16, 31, 48)
             for z in (0, 3, 8, 13)]
    picked = [cases[i] for i in rng.choice(len(cases), 160, replace=False)]
    picked += [(0, 0, 64, 0), (3, 13, 35, 13), (15, 1, 15, 4), (0, 16, 16, 0), (9, 7, 0, 2)]
    for spare_vector in (False, True):
        write_moved = common._write_moved(threads, 1, spare_vector)

        @cuda.jit
        def kernel(source_words, data, src_al, row_pos, head, lo, hi, delta):
            smem = cuda.shared.array(buffer_words, uint32)
            tid = cuda.threadIdx.x
            for i in range(tid, buffer_words, threads):
                smem[i] = source_words[i]
            cuda.syncthreads()
            write_moved(smem, slot0, src_al, data, row_pos, head, lo, hi, delta, tid)

        for head, lo, length, z in picked:
            hi = lo + length
            delta = z - lo  # destination x reads source position x + delta
            src_al = (head + z) // 16 * 16 - head  # the buffer holds source vectors from here on
            buffer = rng.integers(0, 256, 4 * buffer_words, dtype=np.uint8)
            storage = rng.integers(0, 256, 256, dtype=np.uint8)
            row_pos = (head - storage.ctypes.data) % 16 + 16  # the row's byte 0 sits ``head`` past the grid
            before = storage.copy()
            kernel[1, threads](buffer.view(np.uint32), storage, src_al, row_pos, head, lo, hi, delta)
            expected = before.copy()
            for x in range(lo, hi):
                expected[row_pos + x] = buffer[16 * slot0 + x + delta - src_al]
            assert np.array_equal(storage, expected), (
                f"write_moved(spare_vector={spare_vector}) head={head} lo={lo} hi={hi} z={z}: "
                f"wrong bytes at {np.flatnonzero(storage != expected) - row_pos}")


def check_rows_8_mod_16():
    """Issue #35: several rows whose byte length is 8 mod 16, so rows start at two offsets from a 16-byte
    boundary and the chain kernel reads a plan table per offset (``schedules.chain._heads``): a table built for too
    few offsets is wrong only for some rows and some shifts, so many shifts, every row count 2-5, base
    offsets of both parities, item sizes 1, 2, 4 and 8, and grids of 1 and 3 blocks."""
    runner = CudaRunner(tile_bytes=64, threads=4, grid=3)
    one_block = CudaRunner(tile_bytes=64, threads=4, grid=1)
    chains = 0
    for i, (shape, dtype, shifts) in enumerate([
            ((3, 200), "uint8", (1, 7, 8, 9, 24, 63, 64, 65, 100, 108, 136, 192, 199)),
            ((2, 136), "uint8", (3, 8, 72, 120, 135)),
            ((5, 100), "int16", (1, 4, 33, 50, 96, 99)),
            ((4, 34), "float32", (1, 2, 17, 30, 33)),
            ((3, 25), "float64", (1, 3, 12, 13, 24))]):
        for j, shift in enumerate(shifts):
            offset = (0, 8, 3, 11, 5)[(i + j) % 5]
            case = Case(shape, dtype, shift, 1, offset=offset, seed=100 * i + j)
            plan = check_roll_case(one_block if j % 4 == 3 else runner, case)
            steps = [step for step in plan.steps if step.algorithm == "chain"]
            assert all(step.details["_heads"] == 16 for step in steps), plan
            chains += bool(steps)
    assert chains >= 25, chains


def check_rare_arguments():
    """Issue #35: lists of 0-d arrays as shift and axis (tests/cases/roll.py RARE_ARGUMENT_CASES)."""
    from cases.roll import RARE_ARGUMENT_CASES

    runner = CudaRunner(tile_bytes=64, threads=4, grid=3)
    for case in RARE_ARGUMENT_CASES:
        check_roll_case(runner, case)


#: Every check, in groups of about equal time (3-4 minutes each on 2 cores); tests/backends/test_cuda_sim.py runs
#: each group in its own interpreter (the simulator must be on before numba.cuda is imported).
def check_rows_columns():
    """roll_rows along strided axes (column-panels): the shared column table with strips in shared memory
    (grids of one block and more; one block through many strips and many tiles) and staged in scratch (shared memory shrunk below a strip's rows), strips
    a few bytes wide and blocks of 32 threads, random cases under random strip and block sizes; a GPU array
    that is neither C- nor F-contiguous, and a scratch bound below one staged strip, refused with nothing
    moved."""
    import rotate
    from cases.rows import COLUMN_CASES, CudaRowsRunner, RowsCase, check_rows_case, column_cases

    seen = set()
    for i, case in enumerate(COLUMN_CASES):
        staged = i % 3 == 2
        settings_ = dict(grid=(1, None)[i % 2], column_threads=(32, 256)[i % 2])
        if staged:
            settings_.update(column_smem_bytes=1, column_staged_strip_bytes=(8, 16)[i % 2])
        plan = check_rows_case(CudaRowsRunner(**settings_), case)
        details = plan.steps[0].details
        assert plan.algorithm == "column-panels" and details["staged"] == staged, plan
        seen.add((details["word_bytes"], details["unit_bytes"]))
    assert {(1, 1), (8, 8), (8, 4), (2, 2)} <= seen, seen
    # One block through every strip, and staged lanes many tiles long (a tile of 32 rows: one load a
    # thread): the barriers between strips and between tiles are what keeps these right.
    for case in (RowsCase("roll_rows", (9, 40), "uint8", tuple(range(-20, 20)), 0, 3),
                 RowsCase("roll_rows", (70, 3, 6), "float32", ((1, -7, 69, 3, 0, 35),) * 3, 0, 4),
                 RowsCase("roll_rows", (5, 70, 4), "int16", ((3, -1, 140, 7),) * 5, 1, 2, order="F")):
        for extra in ({}, dict(column_smem_bytes=1, column_unroll=1, column_staged_strip_bytes=8)):
            plan = check_rows_case(CudaRowsRunner(grid=1, column_threads=32, column_strip_bytes=8,
                                                  column_min_strip_bytes=8, **extra), case)
            details = plan.steps[0].details
            assert details["grid"] == 1 and details["staged"] == bool(extra), plan
            assert details["pitch"] > details["strip_bytes"] or details["outer"] > 1, plan  # several strips
    # A scratch bound of one word's lanes: the staged strip narrows to a word to fit it.
    narrow = CudaRowsRunner(column_smem_bytes=1, min_scratch=300 * 8, scratch_fraction=1 << 40,
                            column_staged_share=0.0)
    plan = check_rows_case(narrow, RowsCase("roll_rows", (300, 8), "float32", tuple(range(8)), 0, 0))
    assert plan.steps[0].details["strip_bytes"] == 8 and plan.steps[0].scratch_bytes == 300 * 8, plan
    # The default bound holds at least one such slot: a long signal of few channels plans (it was refused).
    big = cuda.device_array((1_000_000, 8), np.float32)
    plan = rotate.plan_roll_rows(big, np.zeros(8, np.int64), axis=0)
    assert plan.steps[0].details["staged"] and plan.steps[0].scratch_bytes >= 1_000_000 * 8, plan
    del big

    @settings(deadline=None, max_examples=max(1, EXAMPLES // 4), database=None)
    @given(case=column_cases(max_bytes=1500), threads=st.sampled_from([32, 64, 256]),
           strip=st.sampled_from([8, 32, 256]), smem=st.sampled_from([16, 512, 40960]))
    def random_cases(case, threads, strip, smem):
        check_rows_case(CudaRowsRunner(column_threads=threads, column_strip_bytes=strip, column_min_strip_bytes=8,
                                       column_smem_bytes=smem, column_staged_strip_bytes=strip), case)

    random_cases()

    host = np.arange(48, dtype=np.float32).reshape(6, 8)
    a = cuda.to_device(host)
    for bad, message in ((lambda: rotate.roll_rows(a[:, ::2], [1, 2, 3, 4], axis=0), "C- or F-contiguous"),
                         (lambda: rotate.roll_rows(a, list(range(8)), axis=0, max_scratch_bytes=8),
                          "max_scratch_bytes")):
        try:
            with rotate._backends.cuda.tuning.override(column_smem_bytes=16):
                bad()
        except ValueError as exc:
            assert message in str(exc), exc
        else:
            raise AssertionError(f"no error for {message}")
        assert (a.copy_to_host() == host).all()


GROUPS = {
    "rows-long": ("check_rows_8_mod_16", "check_rare_arguments", "check_rows_long_lanes",
                  "check_rows_long_lanes_random", "check_rows_lane_walks", "check_rows_columns"),
    "rows": ("check_rows_fixed", "check_rows_run_writer", "check_rows_window_writer", "check_rows_lane_warps", "check_rows_flat_strips",
             "check_rows_chunked", "check_rows_chunked_picked_where_three_rows_do_not_fit", "check_rows_folded_row_cycles",
             "check_rows_short_row_cycles", "check_rows_halves_apart", "check_rows_random"),
    "flat": ("check_write_moved", "check_fallback", "check_row_lanes", "check_block_swap_rows_at_every_offset", "check_block_swap",
             "check_fixed", "check_fixed_single_kernel", "check_sector_split",
             "check_random"),
}
CHECKS = tuple(name for group in GROUPS.values() for name in group)


if __name__ == "__main__":
    for name in [n for arg in sys.argv[1:] for n in GROUPS.get(arg, (arg,))] or CHECKS:  # groups or checks
        if name not in CHECKS:
            sys.exit(f"no simulator check or group named {name!r}; groups: {', '.join(GROUPS)}; "
                     f"checks: {', '.join(CHECKS)}")
        globals()[name]()
    print("simulator cases passed")
    sys.exit(0)
