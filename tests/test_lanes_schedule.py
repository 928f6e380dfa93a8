"""The GPU row-cycles schedule (multi-axis roll, fftshift) under a hostile scheduler, on the CPU.

``rotate._emulator.emulate_row_cycles`` runs the kernel's index math
(``segment_table``, ``source_row``) and protocol with 1-4 virtual blocks
whose steps and asynchronous copies a scheduler interleaves: random, or
always the highest / lowest block first. Every result must equal numpy.roll
and no interleaving may deadlock (docs/design.md, "Termination of
row-cycles"). The CUDA simulator runs the kernel itself (tests/sim_cases.py).
"""

import numpy as np
import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st

pytest.importorskip("numba.cuda")

from rotate import _emulator as E  # noqa: E402
from rotate._cuda import _lanes as L  # noqa: E402


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
        table = L.segment_table(lead, shifts, piece).reshape(-1, 3)
        rows = int(np.prod(lead))
        dims = (1,) * (L.MAX_LEAD - len(lead)) + lead
        offs = (0,) * (L.MAX_LEAD - len(shifts)) + shifts
        seen = []
        for first, steps, following in table:
            assert 1 <= steps <= piece
            d = int(first)
            for _ in range(steps):
                seen.append(d)
                d = int(L.source_row(d, *dims, *offs))
            assert d == table[following][0], "a segment ends where its next one starts"
        assert sorted(seen) == list(range(rows)), "every row is written exactly once"


def test_the_emulator_catches_a_schedule_without_pre_reads(monkeypatch):
    """Not vacuous: with cut cycles marked whole (no pre-read of their first rows), rows are lost."""
    real = L.segment_table

    def no_pre_reads(lead, shifts, piece):
        table = real(lead, shifts, piece).copy()
        table[2::3] = np.arange(len(table) // 3)
        return table

    monkeypatch.setattr(L, "segment_table", no_pre_reads)
    x = np.arange(12 * 4, dtype=np.uint8).reshape(12, 4)
    got = E.emulate_row_cycles(x, (12,), (5,), 1, 3, 2, "random", 1)
    assert not np.array_equal(got, np.roll(x, (5, 1), (0, 1)))
