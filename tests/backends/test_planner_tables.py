"""Issue #35: the GPU chain planner's per-head plan tables (no GPU: the device is stubbed).

Rows of a chain step start at ``(head0 + row * seg) % 16`` bytes past a
16-byte boundary, and each start has its own tile grid, so its own part of
the plan table. The kernel picks a row's part by that offset
(``head_base``: ``table_stride * head`` when the table holds more than one
head, else the only part). Rows whose byte length is 8 mod 16 start at just
two offsets; a table built for too few heads is wrong only for some rows and
some shifts, so the simulator's sample of cases rarely meets it. Here every
row's part of a planned table must be the table laid out for that row's own
offset alone, for every base offset, rows of every residue mod 16 (8 above
all), row counts 2-5 and many shifts; and the rule itself
(``schedules.chain._heads``) is checked against the offsets rows really start at.
"""

from __future__ import annotations

import numpy as np
import pytest

from rotate._schedules import chain as S
from rotate._backends.cuda import device as gpu_device, registry as gpu_registry
from rotate._backends.cuda.schedules import chain as gpu_chain
from rotate._backends.cuda import tuning as cuda_tuning


@pytest.fixture
def gpu(monkeypatch):
    monkeypatch.setattr(gpu_device, "device_shape", lambda device_id=0: (132, 228 * 1024))
    monkeypatch.setattr(gpu_device, "_device_id", lambda: 0)
    monkeypatch.setattr(gpu_device, "_cooperative_config", lambda: False)
    with cuda_tuning.override(tile_bytes=64, threads=4, grid=3):
        yield


def kernel_part(table, heads, head, m_max):
    """The kernel's part of ``table`` for a row starting ``head`` bytes past a 16-byte boundary (``head_base``)."""
    stride = S.table_stride(m_max)
    base = stride * (head if heads > 1 else 0)
    return table[base:base + stride]


@pytest.mark.parametrize("rows", [1, 2, 3, 5, 16, 17])
def test_heads_cover_every_offset_a_row_starts_at(rows):
    for seg in (8, 24, 40, 200, 1000, 1032, 4, 12, 2, 3, 16, 32, 4096):
        for head0 in range(16):
            heads = gpu_chain._heads(rows, seg, head0)
            starts = {S.row_head(head0, row, seg) for row in range(rows)}
            if len(heads) == 1:
                assert heads == (head0,) and starts == {head0}, (rows, seg, head0, heads)
            else:  # the table is indexed by the offset itself: every one of the 16, in order
                assert heads == tuple(range(16)), (rows, seg, head0, heads)
            assert starts <= set(heads)
    if rows > 1:  # rows of 8 mod 16 bytes start at two offsets: one table is not enough
        assert len(gpu_chain._heads(rows, 200, 3)) == 16


def _check_chain_tables(step, rows, seg, left):
    d = step.details
    m_max = d["_m_max"]
    heads = d["_heads"]
    assert heads in (1, 16)
    for row in range(rows):
        head = S.row_head(d["head0"], row, seg)
        own, own_bytes = gpu_chain.chain_layout(seg, left, (head,), d["tile_bytes"], d["chain_step"], d["lane_steps"],
                                              d["buffers"], d["co_resident"])
        stride = S.table_stride(m_max)
        got = kernel_part(d["_table"], heads, head, m_max)
        assert got.size == stride and np.array_equal(got, own[:stride]), (
            f"row {row} (offset {head}) reads another offset's table: rows={rows} seg={seg} left={left} "
            f"head0={d['head0']} heads={heads}")
        assert d["_scratch_row"] >= own_bytes  # every row's pre-reads fit its scratch
        assert d["_pre_row"] >= gpu_chain.pre_tickets_per_row(own, seg, d["tile_bytes"])


@pytest.mark.parametrize("seg", [200, 136, 264, 72, 203, 100, 192])  # 8 mod 16 first; then 11, 4, 0 mod 16
@pytest.mark.parametrize("rows", [2, 3, 5])
def test_every_row_reads_the_table_of_its_own_offset(gpu, rows, seg):
    rng = np.random.default_rng(seg * 10 + rows)
    shifts = sorted({1, 7, 8, 9, 16, 24, 63, 64, 65, seg // 2 + 8, seg - 8, seg - 1} |
                    set(rng.integers(1, seg, 8).tolist()))
    chains = 0
    for head0 in range(16):
        for left in shifts[head0 % 3::2]:
            if left <= 0 or left >= seg:
                continue
            step = gpu_registry.plan_step(1, seg - left, rows, seg, left, 1, (1 << 32) + head0, None)
            if step.algorithm != "chain":
                continue
            chains += 1
            _check_chain_tables(step, rows, seg, left)
    assert chains >= 40, chains


def test_block_swap_final_steps_read_their_own_offsets_table(gpu):
    """Block swaps end in a chain step per row offset (rows of 8 mod 16 bytes: two)."""
    seen = 0
    for head0 in (0, 5, 8):
        for left in (77, 100, 150):
            step = gpu_registry.plan_step(1, 200 - left, 3, 200, left, 1, (1 << 32) + head0, 150)
            if step.algorithm != "block-swap":
                continue
            lo, sub_n, sub_k = step.details["final"]
            for head, final in step.details["_final_steps"].items():
                assert final.details["head0"] == head
                _check_chain_tables(final, 1, sub_n, sub_k)
                seen += 1
    assert seen
