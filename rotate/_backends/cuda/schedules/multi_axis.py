"""A roll over several axes: which schedule takes it (``half-swaps``, a flat pass and ``row-strips``, or
``row-cycles``), else None (one pass per axis).
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from ...._core.plan import Step
from .. import device as D
from .. import registry as REG
from . import chain
from . import half_swaps
from . import lane_panels
from . import row_cycles
from . import row_lanes
from . import row_strips


def plan_multi_axis(shape: tuple, itemsize: int, c_shifts: dict, pointer: int,
                    cap: Optional[int]) -> Optional[tuple]:
    """The steps of a roll over several axes of a C-ordered array: one ``half-swaps`` step where every
    rolled axis moves by half its length; a flat one-pass rotation and a ``row-strips`` step where one
    leading axis rolls in an array of at least ``flat_strips_min_bytes`` and the strip is narrow
    (``flat_strip_fraction``) or ``row-cycles`` cannot take it and the strip step fills the SMs (the
    tuning's ``flat_strips``: None, that rule; True, wherever it applies; False, never); else one
    ``row-cycles`` step. None when none takes it (one pass per axis then)."""
    lead, offs, seg, block = row_cycles._fold_rows(shape, itemsize, c_shifts)
    rows = int(np.prod(lead, dtype=np.int64)) if lead else 1
    row_shift = c_shifts[max(c_shifts)] * block
    step = half_swaps.plan_half_swaps(lead, offs, rows, seg, row_shift, itemsize, pointer)
    if step is not None:
        return (step,)
    # A forced cycle variant asks for row-cycles (measurements, tests), as it does over half-swaps.
    flat = D.policy().flat_strips is not False and D.policy().cycle_variant is None
    # Below flat_strips_min_bytes the three launches cost more than a pass saves: row-cycles, else a pass
    # an axis (two launches).
    flat = flat and (D.policy().flat_strips or rows * seg >= D.policy().flat_strips_min_bytes)
    steps = plan_flat_strips(lead, offs, seg, row_shift, itemsize, pointer, cap) if flat else None
    if steps is not None and (D.policy().flat_strips
                              or steps[1].seg_bytes <= D.policy().flat_strip_fraction * steps[0].seg_bytes):
        return steps  # a narrow strip: row-cycles need not be planned at all
    step = _row_cycles(shape, itemsize, c_shifts, pointer, cap, seg)
    if step is None:  # a wide strip, and row-cycles cannot take the roll
        return steps if steps is not None and _fills_the_gpu(steps[1]) else None
    return (step,)


def _fills_the_gpu(strips: Step) -> bool:
    """Whether a ``row-strips`` step has a block for every SM. Its items are a strip a batch, cut in chunks
    the scratch bound pays for: a wide strip in few batches made 14 items of 17 MiB, and the (14, 17,
    16305, 64) float16 ifftshift ran at 9% of memcpy where a pass an axis moves each byte at 70-90%."""
    sms, _ = D.device_shape(D._device_id())
    return strips.params.grid >= sms


def _row_cycles(shape: tuple, itemsize: int, c_shifts: dict, pointer: int, cap: Optional[int], seg: int):
    """row-cycles on rows from the last rolled axis on, or, where those are too long for ``three-rows``
    and the bytes after that axis make rows of at least ``min_cycle_row``, on those (the tuning's
    ``cycle_fold``: None, that rule; True, wherever the folded rows can; False, never)."""
    fold = D.policy().cycle_fold
    if fold is not False and (fold or not row_cycles.three_rows_fit(seg)):
        step = row_cycles.plan_row_cycles_folded(shape, itemsize, c_shifts, pointer, cap)
        if step is not None:
            return step
    return row_cycles.plan_row_cycles(shape, itemsize, c_shifts, pointer, cap)


def _one_pass(params) -> bool:
    """A schedule that moves each byte once (plus pre-reads): a flat pass worth a strip step after it
    (``chain``, ``half-swaps``, ``row-panels``)."""
    if isinstance(params, row_lanes.RowLanesParams):
        return isinstance(params.lanes, (lane_panels.LanePanelsParams, lane_panels.LaneWarpsParams))
    return isinstance(params, (chain.ChainParams, half_swaps.HalfSwapsParams))


def plan_flat_strips(lead, lead_shifts, seg: int, row_shift: int, word: int, pointer: int,
                     max_scratch_bytes: Optional[int]) -> Optional[tuple]:
    """A multi-axis roll with one rolled leading radix as two steps (rotate/_schedules/rowperm.py): each batch of
    rows rotated flat (``chain``, or whichever one-pass schedule ``plan_step`` picks), then the strip
    left one row off moved by ``row-strips``. None unless rows start on 16-byte boundaries, the strip
    step's scratch (a strip a chunk) fits ``max_scratch_bytes`` and the flat rotation is one pass
    within it (at 1 GiB the chain's pre-reads for many shifts need more than the default bound:
    docs/results/plan-probes-h200-shape.json)."""
    from ...._schedules.rowperm import flat_strip_shape

    shape = flat_strip_shape(tuple(lead), tuple(lead_shifts), seg, row_shift)
    if shape is None or pointer % 16 or seg % 16:
        return None
    batches, rows, flat, lo, hi, up = shape
    total = rows * seg
    # The default bound as a plain int: the flat pass competes with row-cycles (one pass) here, not with
    # block swaps, so the chain does not grow past it (``chain_default_share``).
    bound = D.default_cap(batches, total) if max_scratch_bytes is None else max_scratch_bytes
    strip = row_strips.plan_row_strips(batches, rows, seg, lo, hi, up, word, bound)
    if strip is None:
        return None
    flat_step = REG.plan_step(None, flat // word, batches, total, (total - flat) % total, word, pointer, bound)
    if not _one_pass(flat_step.params):  # the chain's pre-reads passed the bound: two passes
        return None
    return flat_step, strip
