"""Mutation testing: do the tests catch realistic one-line bugs in rotate/ and waveops/?

Each mutant replaces one line (an exact snippet that must occur once) in a
fresh copy of the working tree; a fast subset of the suite then runs
against the copy (``-x``: the first failing test kills the mutant). A mutant
that passes every test *survived*: either a test is missing or the mutant is
equivalent (say which in its description). numba's on-disk caches are
copied too, but the caches of rotate/'s kernels are stamped with all of the
package's sources (rotate/_core/numba_cache.py), so a mutant anywhere in rotate/
recompiles every cached kernel of the package its tests reach: 1.5-3 min a
mutant on 2 cores, about 3 min for the baseline.

    .venv/bin/python tools/mutation.py              # all mutants, prints the score
    .venv/bin/python tools/mutation.py --list       # just the mutants
    .venv/bin/python tools/mutation.py -k cpu       # mutants whose name contains "cpu"
    .venv/bin/python tools/mutation.py --json docs/results/mutation.json
    .venv/bin/python tools/mutation.py --names issue35 --without issue35   # the suite before issue #35's tests
    .venv/bin/python tools/mutation.py --names issue35 --tests issue35     # issue #35's tests alone

Run it before resolving an issue that touches rotate/ or waveops/ and keep
the score in docs/mutation.md at 90% or more.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# The fast subset: API, errors, CPU backend, robustness (with one thread test and one
# fork test), the software wave. 1.5-3 min a mutant on 2 cores (see above).
TESTS = [
    "tests/api/test_errors.py", "tests/robustness/test_robustness.py", "tests/api/test_roll.py",
    "tests/backends/test_cpu_backend.py", "tests/waveops/test_waveops_cpu.py", "tests/schedules/test_schedule.py",
    "tests/schedules/test_lanes_schedule.py", "tests/schedules/test_long_lane_walks.py", "tests/backends/test_numba_cache.py",
] + [
    # Issue #35's tests (cache keys varied one component at a time, rare argument shapes, the GPU planner's
    # head tables): first, so that the mutants they were written for die early.
    "tests/backends/test_planner_tables.py", "tests/api/test_cache_keys.py", "tests/api/test_arg_shapes.py",
]
ISSUE35_TESTS = TESTS[-3:]
TESTS = ISSUE35_TESTS + TESTS[:-3]
DESELECT = "not processes or workqueue-threads or omp-fork"

# (name, file, original snippet, mutated snippet)
MUTANTS = [
    ("index-int-truncates", "rotate/_core/validate.py",
     "        return operator.index(value)", "        return int(value)"),
    ("shift-array-int", "rotate/_core/validate.py",
     "        return tuple(as_index(v, name) for v in value)\n", "        return tuple(int(v) for v in value)\n"),
    ("shifts-same-axis-overwrite", "rotate/_core/validate.py",
     "        totals[a] = totals.get(a, 0) + s", "        totals[a] = s"),
    ("axis-range-off-by-one", "rotate/_core/validate.py",
     "    if not -ndim <= axis < ndim:", "    if not -ndim <= axis <= ndim:"),
    ("read-only-accepted", "rotate/_core/validate.py",
     "    if not a.flags.writeable:", "    if False:"),
    ("object-field-accepted", "rotate/_core/validate.py",
     "    if dtype.hasobject:", "    if dtype.kind == 'O':"),
    ("overlap-check-dropped", "rotate/_core/validate.py",
     "    check_no_self_overlap(a.shape, a.strides, a.itemsize, name)", "    pass"),
    ("overlap-extent-itemsize", "rotate/_core/validate.py",
     "        if stride < extent:", "        if stride < itemsize:"),
    ("stream-ignored-on-host", "rotate/_core/validate.py",
     "    if stream is not None and not device:", "    if False:"),
    ("middle-end-excluded", "rotate/_api.py",
     "    if not 0 <= middle <= size:", "    if not 0 <= middle < size:"),
    # Since the backend protocol (main), plan cache keys come from each backend's plan_key.
    ("gpu-plan-cache-ignores-tunables", "rotate/_backends/cuda/backend.py",
     "        return (device, gpu.device_shape(device), capability, _tuning().current(capability), max_scratch_bytes)",
     "        return (device, gpu.device_shape(device), capability, max_scratch_bytes)"),
    ("cpu-plan-cache-ignores-tunables", "rotate/_backends/cpu/planner.py",
     "    return (threads, tuning)",
     "    return (threads,)"),
    ("plan-ignores-mask", "rotate/_api.py",
     "    for part in _parts(a):  # a masked array's mask", "    for part in [a]:  # a masked array's mask"),
    ("scratch-sum-not-max", "rotate/_core/plan.py",
     "        return max((s.scratch_bytes for s in self.steps), default=0)",
     "        return sum(s.scratch_bytes for s in self.steps)"),
    ("bytes-moved-max-not-sum", "rotate/_core/plan.py",
     "        return sum(s.bytes_moved for s in self.steps)",
     "        return max((s.bytes_moved for s in self.steps), default=0)"),
    ("flat-zero-shift-step", "rotate/_core/plan.py",
     "        return [(None, n, s)] if s else []", "        return [(None, n, s)] if n else []"),
    ("f-order-axis-not-mirrored", "rotate/_core/plan.py",
     "        c_axis = lambda a: info.ndim - 1 - a  # noqa: E731", "        c_axis = lambda a: a  # noqa: E731"),
    ("gpu-scratch-cap-min", "rotate/_backends/cuda/device.py",
     "    return max(rows * seg // policy().scratch_fraction, policy().min_scratch)",
     "    return min(rows * seg // policy().scratch_fraction, policy().min_scratch)"),
    # Rows the chain and block swaps decline run through the roll_rows kernels (row-lanes), in numpy.roll's
    # direction; lane-chains' run steps are reused only for the same problem and bound.
    ("row-lanes-shift-left", "rotate/_backends/cuda/schedules/row_lanes.py",
     "    params = RowLanesParams(lane_step.params, (seg - left) // word)",
     "    params = RowLanesParams(lane_step.params, left // word)"),
    ("row-lanes-after-reversal", "rotate/_backends/cuda/schedules/__init__.py",
     '    ("row-lanes", row_lanes.plan_row_lanes),\n    ("reversal", reversal.plan),',
     '    ("reversal", reversal.plan),\n    ("row-lanes", row_lanes.plan_row_lanes),'),
    ("chain-runs-key-drops-scratch-bound", "rotate/_backends/cuda/schedules/lane_chains.py",
     "    key = (s, lanes, n, itemsize, head, max_scratch_bytes, D.policy(),", "    key = (s, lanes, n, itemsize, head, D.policy(),"),
    ("struct-gaps-moved", "rotate/_core/arrays.py",
     "    return dtype.names is not None and field_byte_ranges(dtype) != [(0, dtype.itemsize)]",
     "    return False"),
    ("read-only-mask-accepted", "rotate/_core/arrays.py",
     "            if data.flags.writeable and not mask.flags.writeable:", "            if False:"),
    ("no-gpu-not-detected", "rotate/_core/arrays.py",
     "    if not cuda.is_available():", "    if False:"),
    ("c-order-line-wrong-merge", "rotate/_core/arrays.py",
     "        if dim_stride != n * stride:", "        if dim_stride != dim * stride:"),
    ("strided-word-ignores-strides", "rotate/_backends/cpu/planner.py",
     "    while word > 1 and (itemsize % word or any(strides[i] % word for i in live)):",
     "    while word > 1 and itemsize % word:"),
    ("cpu-bound-ignored", "rotate/_backends/cpu/planner.py",
     "    return min(_T().scratch_bytes, int(max_scratch_bytes))", "    return _T().scratch_bytes"),
    ("cpu-bound-fallback-skipped", "rotate/_backends/cpu/planner.py",
     "        if plan[1] * itemsize <= budget:", "        if True:"),
    ("shift-seam-wrong-neighbour", "rotate/_backends/cpu/kernels.py",
     "            _move(buf, stop - d, scratch, after * d, d)", "            _move(buf, stop - d, scratch, t * d, d)"),
    ("team-caller-takes-every-member", "rotate/_backends/cpu/team.py",
     "        kernel(*args, *runs[0])", "        kernel(*args, 0, members)"),
    ("team-phases-out-of-order", "rotate/_backends/cpu/kernels.py",
     "            for phase in (_shift_seams, _shift_chunks):", "            for phase in (_shift_chunks, _shift_seams):"),
    ("wave-width-128-accepted", "waveops/cpu.py",
     "        if not is_pow2(w) or w > MAX_WIDTH:", "        if not is_pow2(w) or w > 2 * MAX_WIDTH:"),
    # The software wave's default width is fixed (32, a CUDA warp), not the host SIMD width (issue #32).
    ("wave-default-width-simd", "waveops/cpu.py",
     "        w = DEFAULT_WIDTH\n", "        w = width()\n"),
    ("wave-default-width-simd-njit", "waveops/cpu.py",
     "    default_w = DEFAULT_WIDTH\n", "    default_w = simd_width_for(*_host_target())\n"),
    # The GPU chain schedule (rotate/_schedules/chain.py), judged by tests/schedules/test_schedule.py: the
    # byte-by-byte completeness check and the emulator under hostile interleavings.
    ("kinds-have-wait-matches-pre", "rotate/_schedules/chain.py",
     "        return (low & ~high & 0x55) != 0", "        return (low & 0x55) != 0"),
    ("schedule-ring-one-too-deep", "rotate/_schedules/chain.py",
     "        if step_r - step_w < ring:",
     "        if step_r - step_w <= ring:"),
    ("schedule-wait-on-a-later-lane", "rotate/_schedules/chain.py",
     "        if co_resident or lane_r < lane_w:",
     "        if co_resident or lane_r != lane_w:"),
    ("co-resident-wait-on-the-same-step-of-a-later-lane", "rotate/_schedules/chain.py",
     "    if step_r < step_w or (step_r == step_w and lane_r < lane_w):",
     "    if step_r <= step_w:"),
    ("pre-ticket-group-drops-its-last-span", "rotate/_schedules/chain.py",
     "        end = first + group\n        if end > big:",
     "        end = first + group - 1\n        if end > big:"),
    ("lane-scan-one-step-lanes-pre-read-their-predecessor", "rotate/_schedules/chain.py",
     "        if steps > 1:\n            for pw in range(steps, m, steps):  # lane starts",
     "        if steps > 0:\n            for pw in range(steps, m, steps):  # lane starts"),
    ("lane-scan-lane-starts-off-by-one", "rotate/_schedules/chain.py",
     "            for pw in range(steps, m, steps):  # lane starts",
     "            for pw in range(steps + 1, m, steps):  # lane starts"),
    ("even-lanes-one-block-an-sm", "rotate/_backends/cuda/schedules/chain.py",
     "    even = (per_sm >= 2) & (lanes >= per_sm * sms - int(D.policy().co_resident_even_slack * sms))",
     "    even = (per_sm >= 1) & (lanes >= per_sm * sms - int(D.policy().co_resident_even_slack * sms))"),
    ("even-lanes-fewest-blocks-an-sm-first", "rotate/_backends/cuda/schedules/chain.py",
     "        best = int(fits[np.lexsort((pre[fits], -per_sm))[0]])",
     "        best = int(fits[np.lexsort((pre[fits], per_sm))[0]])"),
    ("co-resident-block-walks-two-lanes", "rotate/_testing/emulator/chain.py",
     "            if co_resident and b.lane >= 0:  # one lane a block (the kernel's ``one_lane``)",
     "            if co_resident and b.lane >= total_lanes:"),
    ("schedule-pre-span-not-aligned-up", "rotate/_schedules/chain.py",  # the GPU's pre_span (classify, not free_classify)
     "        if classify(m, g, length, inv, lane_steps, ring, co_resident, reader, w) == PRE:\n"
     "            if z < lo:\n                lo = z\n            if run_end > hi:\n                hi = run_end\n"
     "        z = run_end\n    if lo >= hi:\n        return 1, 0\n"
     "    return align_down(head + lo) - head, align_up(head + hi) - head",
     "        if classify(m, g, length, inv, lane_steps, ring, co_resident, reader, w) == PRE:\n"
     "            if z < lo:\n                lo = z\n            if run_end > hi:\n                hi = run_end\n"
     "        z = run_end\n    if lo >= hi:\n        return 1, 0\n"
     "    return align_down(head + lo) - head, align_down(head + hi) - head"),
    ("schedule-reader-run-one-long", "rotate/_schedules/chain.py",
     "    end = z + (rx1 - x)  # the reader's destinations end (x wraps only at z == k, a tile end)",
     "    end = z + (rx1 - x) + 1"),
    ("schedule-chain-order-shifted", "rotate/_schedules/chain.py",
     "    return (c + s * p) % m",
     "    return (c + s * p + 1) % m"),
    ("schedule-pre-span-one-vector-short", "rotate/_schedules/chain.py",  # the GPU's table (pre_span, not free_pre_span)
     "        lo, hi = pre_span(n, k, head, tile_bytes, m, g, length, inv, lane_steps, ring, co_resident, w)\n"
     "        if lo < hi:\n            table[entry + T_OFFSET] = total\n            table[entry + T_LO] = lo\n"
     "            table[entry + T_VECS] = (hi - lo) // 16",
     "        lo, hi = pre_span(n, k, head, tile_bytes, m, g, length, inv, lane_steps, ring, co_resident, w)\n"
     "        if lo < hi:\n            table[entry + T_OFFSET] = total\n            table[entry + T_LO] = lo\n"
     "            table[entry + T_VECS] = (hi - lo) // 16 - 1"),
    # The pipelined chain kernel's hand-offs as the emulator runs them (rotate/_testing/emulator/chain.py, pl_*),
    # judged by tests/schedules/test_schedule.py: a copy into an unwritten buffer, a descriptor slot reused
    # early, a clear without its ring wait, a write before "cleared".
    ("pipeline-issue-before-buffer-written", "rotate/_testing/emulator/chain.py",
     "                if c >= 1 and b.written < c:", "                if False:"),
    ("pipeline-decode-into-busy-slot", "rotate/_testing/emulator/chain.py",
     "        if b.end is not None or j >= max(b.freed, buffers + 1):", "        if b.end is not None:"),
    ("pipeline-clear-without-ring-wait", "rotate/_testing/emulator/chain.py",
     "                if not waits_clear(b, row, key, tile, ring=ring):",
     "                if not waits_clear(b, row, key, tile, kinds=(S.WAIT, S.PRE), ring=ring):"),
    ("pipeline-write-before-cleared", "rotate/_testing/emulator/chain.py",
     "        if b.phase == \"exit\" or b.cleared <= i:",
     "        if b.phase == \"exit\" or len(b.items) <= i or (\n"
     "                b.items[i] is not None and (not b.ring or b.ring[0][1] not in b.landed)):"),
    # The GPU row-cycles schedule's index math (rotate/_backends/cuda/kernels/cycles.py), judged by
    # tests/schedules/test_lanes_schedule.py: the segment table's coverage and the emulator.
    ("cycles-source-row-inverted", "rotate/_schedules/rowperm.py",
     "        i -= s\n", "        i += s\n"),
    ("cycles-cut-cycle-looks-whole", "rotate/_backends/cuda/kernels/cycles.py",
     "            table[3 * g + 2] = g - j + (j + 1) % pieces",
     "            table[3 * g + 2] = g - j + j % pieces"),
    ("cycles-segment-one-step-short", "rotate/_backends/cuda/kernels/cycles.py",
     "            table[3 * g + 1] = min(piece, lengths[c] - first)",
     "            table[3 * g + 1] = max(1, min(piece, lengths[c] - first) - 1)"),
    # The chunked row-cycles variant's chunk math (rotate/_backends/cuda/kernels/cycles.py), judged by
    # tests/schedules/test_lanes_schedule.py: the chunk tiling test and the chunked emulator.
    ("cycles-chunk-source-rolled-left", "rotate/_backends/cuda/kernels/cycles.py",
     "    a = lo - shift\n", "    a = lo + shift\n"),
    ("cycles-chunks-unaligned", "rotate/_backends/cuda/kernels/cycles.py",
     "    lo = k * chunk - head\n", "    lo = k * chunk\n"),
    ("cycles-chunk-wrap-run-one-long", "rotate/_backends/cuda/kernels/cycles.py",
     "    if len_a > seg - a:\n        len_a = seg - a\n", "    if len_a > seg - a:\n        len_a = seg - a + 1\n"),
    # lane-swaps' index math (rotate/_schedules/gries_mills.py), judged by tests/schedules/test_lanes_schedule.py's emulator
    # and traffic tests.
    ("swaps-step-partner-one-early", "rotate/_schedules/gries_mills.py",
     "        a, b, m = lo, lo + n - k, k\n", "        a, b, m = lo, lo + n - k - 1, k\n"),
    ("swaps-saved-side-put-one-early", "rotate/_schedules/gries_mills.py",
     "        return lo, k, lo + k, lo, n - k, lo + n - k\n", "        return lo, k, lo + k, lo, n - k, lo + n - k - 1\n"),
    # The quick path of repeated GPU calls (rotate/_api.py), judged by tests/robustness/test_robustness.py with
    # the device stubbed: a cached plan used after a setting changed, a cached call at another address.
    ("quick-path-skips-plan-key", "rotate/_api.py",
     "            if hit is not None and hit[1] == backend.plan_key(hit[0], max_scratch_bytes):\n",
     "            if hit is not None:\n"),
    ("quick-path-keeps-old-pointer", "rotate/_api.py",
     "                    hit = (_arrays.ArrayInfo(template.shape, template.strides, template.dtype, template.kind,\n"
     "                                             pointer, template.readonly), hit[1], hit[2])\n",
     "                    hit = (template, hit[1], hit[2])\n"),
    # Session 9: the plan table's ring reach (the GPU kernels wait that far for their own copies),
    # judged by tests/schedules/test_schedule.py; the CPU chain-serial ring, by tests/backends/test_cpu_backend.py.
    ("pre-reads-finished-one-short", "rotate/_schedules/chain.py",
     "    return finished >= total\n", "    return finished >= total - 1\n"),
    ("pre-list-large-at-the-boundary", "rotate/_schedules/chain.py",
     "        if vecs > PRE_SMALL_VECS:",
     "        if vecs >= PRE_SMALL_VECS:"),
    ("pre-ticket-runs-past-the-list", "rotate/_schedules/chain.py",
     "    if end > count:\n        end = count\n", "    if end > count + 1:\n        end = count + 1\n"),
    ("aliasing-window-too-narrow", "rotate/_backends/cpu/planner.py",
     "    return 1 <= distance_bytes % 4096 < window\n", "    return 1 <= distance_bytes % 4096 < window // 2\n"),
    ("ring-reach-one-short", "rotate/_schedules/chain.py",
     "            distance = position_of(m, g, length, inv, reader) - pw  # same lane: the step difference\n",
     "            distance = position_of(m, g, length, inv, reader) - pw - 1\n"),
    ("chain-serial-writes-too-early", "rotate/_backends/cpu/kernels.py",
     "        oldest = position - (ring - 1)\n", "        oldest = position - (ring - 2)\n"),
    ("chain-serial-ignores-pre-reads", "rotate/_backends/cpu/kernels.py",
     "                if kind == S.PRE:  # the bytes wait in scratch\n",
     "                if False:\n"),
    ("wave-pow2-check", "waveops/_core.py",
     "    return n > 0 and (n & (n - 1)) == 0", "    return n > 0 and (n & (n - 2)) == 0"),
    # Issue #9's half-swaps (judged by tests/schedules/test_lanes_schedule.py's emulator and tests/robustness/test_robustness.py's
    # planner checks) and the quick path's tuple keys (tests/robustness/test_robustness.py, device stubbed).
    ("half-swap-partner-is-the-row", "rotate/_schedules/rowperm.py",
     "    partner = source_row(d, n0, n1, n2, n3, s0, s1, s2, s3)\n", "    partner = d\n"),
    ("half-swap-takes-odd-radices", "rotate/_schedules/rowperm.py",
     "    if any(s not in (0, n // 2) or (s and n % 2) for n, s in zip(lead, lead_shifts)):",
     "    if any(s not in (0, n // 2) for n, s in zip(lead, lead_shifts)):"),
    # flat_strips' strip step (tests/schedules/test_lanes_schedule.py's emulator, tests/robustness/test_robustness.py's planner).
    ("strip-boundary-row-off-by-one", "rotate/_schedules/rowperm.py",
     "        row = first + count\n", "        row = first + count - 1\n"),
    ("strip-mask-one-byte-short", "rotate/_schedules/rowperm.py",
     "    last = min(hi - at, 4)\n", "    last = min(hi - at - 1, 4)\n"),
    ("flat-strip-wider-strip", "rotate/_schedules/rowperm.py",
     "    if 2 * row_shift <= seg:\n", "    if 2 * row_shift >= seg:\n"),
    # lane-panels' warps variant: which lanes take it and its grid (tests/robustness/test_robustness.py, device stubbed;
    # the kernel itself is judged by the simulator, tests/backends/test_cuda_sim.py, outside this fast subset).
    ("warp-lanes-exclude-8-kib", "rotate/_backends/cuda/schedules/lane_panels.py",
     "    if choice is False or seg < 16 or (choice is None and not D.policy().warp_lane_min_bytes <= seg <= D.policy().warp_lane_bytes):",
     "    if choice is False or seg < 16 or (choice is None and not D.policy().warp_lane_min_bytes <= seg < D.policy().warp_lane_bytes):"),
    ("warp-grid-a-block-a-lane", "rotate/_backends/cuda/schedules/lane_panels.py",
     "grid=max(1, min(grid, S.ceil_div(rows, groups)))", "grid=max(1, min(grid, rows))"),
    ("warp-lanes-from-2-kib", "rotate/_backends/cuda/tuning.py",
     "    warp_lane_min_bytes: int = 1024\n", "    warp_lane_min_bytes: int = 2048\n"),
    ("warp-group-half-warp-at-1-kib", "rotate/_backends/cuda/schedules/lane_panels.py",
     "    if seg <= 1024:\n        return 8\n", "    if seg < 1024:\n        return 8\n"),
    # The single-lane walk's pre-read bytes in closed form (rotate/_schedules/chain.py, walk_pre_bytes), judged by
    # tests/schedules/test_long_lane_walks.py against count_kinds: the residue window one short, the tile the wrap cuts
    # left out.
    ("walk-pre-window-one-short", "rotate/_schedules/walks.py",
     "    return (floor_sum(u1 - u0, mod, step, base + mod - low) - floor_sum(u1 - u0, mod, step, base))",
     "    return (floor_sum(u1 - u0, mod, step, base + mod - low - 1) - floor_sum(u1 - u0, mod, step, base))"),
    ("walk-pre-skips-the-cut-tile", "rotate/_schedules/walks.py",
     "    for t in range(max(a0, a1), b0):\n", "    for t in range(max(a0, a1) + 1, b0):\n"),
    # lane-walks (rotate/_schedules/chain.py, the planner's exact traffic): a writer that does not wait for its last
    # look-ahead reader; spans that leave out the readers the ring's last buffer holds; pre-read bytes counted
    # once (tests/schedules/test_lanes_schedule.py's emulator, tests/robustness/test_robustness.py's plan).
    ("walk-reach-one-short", "rotate/_schedules/walks.py",
     "        if ahead > farthest and ahead <= reach:\n", "        if ahead > farthest and ahead < reach:\n"),
    ("walk-span-ring-too-long", "rotate/_schedules/walks.py",
     "    return pre_span(n, k, head, tile_bytes, m, g, length, inv, m, reach + 1, 0, w)",
     "    return pre_span(n, k, head, tile_bytes, m, g, length, inv, m, reach + 2, 0, w)"),
    ("walk-traffic-pre-reads-once", "rotate/_backends/cuda/schedules/lane_walks.py",
     "                moved = 2 * seg + 2 * spans\n", "                moved = 2 * seg + spans\n"),
    # lane-walks' pool (rotate/_schedules/chain.py walk_decision, the planner's replay): lanes over their share
    # never offered the pool; the pool's counter grown only by the lanes it takes (the kernel keeps every
    # ask), so a replay after a turned-away lane sees room the kernel does not have.
    ("walk-pool-never-offered", "rotate/_schedules/walks.py",
     "    if total > share and total > pool_left:\n", "    if total > share:\n"),
    ("walk-traffic-pool-only-on-fit", "rotate/_backends/cuda/schedules/lane_walks.py",
     "            if spans > share:  # asked of the pool, whether it fitted or not\n",
     "            if tile and spans > share:\n"),
    # lane-walks' choice and defaults (rotate/_schedules/chain.py, rotate/_backends/cuda/schedules/lane_walks.py; tests/schedules/test_lanes_schedule.py,
    # tests/robustness/test_robustness.py): chunks too narrow (more than one round of 256 picks); the 16-32 KiB tiles for
    # lanes beyond their 480 tiles (which then take block swaps) or from 1 MiB; a sixth of a lane whatever
    # the lane count.
    ("walk-chunks-floor", "rotate/_schedules/walks.py",
     "    return ceil_div(sizes, WALK_CHUNKS)\n", "    return max(1, sizes // WALK_CHUNKS)\n"),
    ("walk-wide-tiles-unchecked", "rotate/_backends/cuda/schedules/lane_walks.py",
     "        if tile_lo <= tile_hi:\n            tile, max_tiles = D.policy().walk_wide_tile_bytes",
     "        if True:\n            tile, max_tiles = D.policy().walk_wide_tile_bytes"),
    ("walk-wide-tiles-from-1-mib", "rotate/_backends/cuda/tuning.py",
     "    walk_wide_min_lane_bytes: int = 2 << 20\n", "    walk_wide_min_lane_bytes: int = 1 << 20\n"),
    ("walk-one-lane-share-always", "rotate/_backends/cuda/schedules/lane_walks.py",
     "        share = int(seg * (D.policy().walk_share_one_lane if rows <= grid else D.policy().walk_share))\n",
     "        share = int(seg * D.policy().walk_share_one_lane)\n"),
    # lane-walks' launch bound setting (a measurement knob): it must cap the grid's blocks an SM too.
    ("walk-min-blocks-grid-uncapped", "rotate/_backends/cuda/schedules/lane_walks.py",
     "        resident = min(resident, int(min_blocks))\n", "        resident = resident\n"),
    # waveops' cached CPU kernels inline _core.py: their cache must be stamped with all of waveops' sources.
    ("waveops-cache-stamped-by-own-file", "waveops/__init__.py",
     "_numba_cache.install(_os.path.dirname(_os.path.abspath(__file__)))\n", "_os.path.dirname(__file__)\n"),
    # Scratch of a stream evicted from the 8-stream cache (rotate/_backends/cuda/runtime.py; tests/robustness/test_robustness.py
    # with a stand-in driver): dropped at once instead of kept until its stream passes an event.
    ("evicted-scratch-dropped-at-once", "rotate/_backends/cuda/runtime.py",
     "        _evicted = _held_until_passed(_evicted, entry._handle, entry)\n",
     "        _evicted = _held_until_passed(_evicted, entry._handle, None)\n"),
    ("quick-path-takes-lists", "rotate/_api.py",
     "    return type(value) is int or (type(value) is tuple and all(type(v) is int for v in value))",
     "    return type(value) is int or (type(value) in (tuple, list) and all(type(v) is int for v in value))"),
    # Issue #36: the host quick path of repeated numpy calls (rotate/_api.py), judged by
    # tests/api/test_cache_keys.py: a key component dropped, the writeable flag or the plan key not checked.
    ("host-key-drops-strides", "rotate/_api.py",
     "        return (a.shape, a.strides, a.dtype, shift, axis, middle, max_scratch_bytes)",
     "        return (a.shape, a.dtype, shift, axis, middle, max_scratch_bytes)"),
    ("host-key-drops-shape", "rotate/_api.py",
     "        return (a.shape, a.strides, a.dtype, shift, axis, middle, max_scratch_bytes)",
     "        return (a.strides, a.dtype, shift, axis, middle, max_scratch_bytes)"),
    ("host-quick-skips-writeable", "rotate/_api.py",
     "    if hit is None or not a.flags.writeable:", "    if hit is None:"),
    ("host-quick-skips-plan-key", "rotate/_api.py",
     "    if plan_key != backend.plan_key(info, max_scratch_bytes):  # a setting changed: plan again",
     "    if False:  # a setting changed: plan again"),
] + [
    # Issue #35: bug classes the suite was blind to, written *before* the tests that kill them
    # (ISSUE35_MUTANTS; ``--without`` runs them against the suite as it was: the honest figure).
    # Cache keys: a component dropped from the CPU plan cache's key, the quick path's layout key
    # (roll, fftshift and roll_rows share it), the quick layouts' 16-byte head, roll_rows' own quick key.
    ("fast-plan-key-drops-strides", "rotate/_api.py",
     "        key = (backend.name, info.shape, info.strides, info.dtype, info.pointer % 16, shift, axis, middle,",
     "        key = (backend.name, info.shape, info.dtype, info.pointer % 16, shift, axis, middle,"),
    ("fast-plan-key-drops-dtype", "rotate/_api.py",
     "        key = (backend.name, info.shape, info.strides, info.dtype, info.pointer % 16, shift, axis, middle,",
     "        key = (backend.name, info.shape, info.strides, info.pointer % 16, shift, axis, middle,"),
    ("fast-plan-key-drops-middle", "rotate/_api.py",
     "        key = (backend.name, info.shape, info.strides, info.dtype, info.pointer % 16, shift, axis, middle,",
     "        key = (backend.name, info.shape, info.strides, info.dtype, info.pointer % 16, shift, axis,"),
    ("quick-layout-drops-writeable", "rotate/_core/arrays.py",
     "              bool(data[1]), repr(descr) if descr and len(descr) > 1 else None)",
     "              False, repr(descr) if descr and len(descr) > 1 else None)"),
    ("quick-layout-drops-strides", "rotate/_core/arrays.py",
     "    layout = (kind, typestr, tuple(cai[\"shape\"]), strides if strides is None else tuple(strides),",
     "    layout = (kind, typestr, tuple(cai[\"shape\"]), None,"),
    ("quick-layout-drops-descr", "rotate/_core/arrays.py",
     "              bool(data[1]), repr(descr) if descr and len(descr) > 1 else None)",
     "              bool(data[1]), None)"),
    ("quick-layouts-8-byte-head", "rotate/_api.py",
     "                hit = _quick_layouts.get((pointer & 15, args))",
     "                hit = _quick_layouts.get((pointer & 7, args))"),
    ("rows-quick-key-drops-shift-layout", "rotate/rows.py",
     "    return backend, (layout, pointer, shift_layout, shift_pointer, axis, max_scratch_bytes), default_stream",
     "    return backend, (layout, pointer, None, shift_pointer, axis, max_scratch_bytes), default_stream"),
    ("rows-quick-key-drops-axis", "rotate/rows.py",
     "    return backend, (layout, pointer, shift_layout, shift_pointer, axis, max_scratch_bytes), default_stream",
     "    return backend, (layout, pointer, shift_layout, shift_pointer, None, max_scratch_bytes), default_stream"),
    ("rows-quick-skips-plan-key", "rotate/rows.py",
     "    if plan_key != backend.plan_key(info, max_scratch_bytes):  # a setting changed: plan again",
     "    if False:  # a setting changed: plan again"),
    # Rare argument and dtype shapes: lists of 0-d arrays, reversed views past the overlap check's
    # enumeration limit, a padded struct inside a 2-D subarray field, byte-swapped uint64 shifts.
    ("zero-d-list-elements-refused", "rotate/_core/validate.py",
     "        if isinstance(v, (list, tuple, range, np.ndarray)) and not (isinstance(v, np.ndarray) and v.ndim == 0):",
     "        if isinstance(v, (list, tuple, range, np.ndarray)):"),
    ("overlap-nesting-signed-strides", "rotate/_core/validate.py",
     "    dims = sorted((abs(int(s)), int(n)) for n, s in zip(shape, strides) if int(n) > 1)",
     "    dims = sorted((int(s), int(n)) for n, s in zip(shape, strides) if int(n) > 1)"),
    ("subarray-struct-first-axis-only", "rotate/_core/arrays.py",
     "            for i in range(prod(shape)):", "            for i in range(shape[0]):"),
    ("byteswapped-uint64-shifts-not-reduced", "rotate/_core/shifts.py",
     '    elif arr.dtype.kind == "u" and arr.dtype.itemsize == 8:  # may exceed int64: reduce here',
     "    elif arr.dtype == np.uint64:  # may exceed int64: reduce here"),
    # The GPU planner's per-head plan tables: rows of 8 mod 16 bytes start at two offsets.
    ("heads-one-table-for-8-mod-16-rows", "rotate/_backends/cuda/schedules/chain.py",
     "    if rows == 1 or seg % 16 == 0:", "    if rows == 1 or seg % 8 == 0:"),
    ("heads-table-too-short", "rotate/_backends/cuda/schedules/chain.py",
     "    return tuple(range(16))", "    return tuple(range(8))"),
]
ISSUE35_MUTANTS = [m[0] for m in MUTANTS[-16:]]

IGNORE = shutil.ignore_patterns(".git", ".venv", ".hypothesis", ".pytest_cache", "*.egg-info", "bench-results")


def run_tests(tree: Path, timeout: int, tests: list = TESTS) -> tuple[str, float, str]:
    env = dict(os.environ, CI="true", HYPOTHESIS_PROFILE="mutation", PYTHONPATH=str(tree),
               PYTHONDONTWRITEBYTECODE="1")
    # The fast suite, plus the slow tests marked ``mutants`` (they kill mutants the fast ones miss).
    # -n 0: one process (a timeout then kills the whole run, and -x stops at the first failure as it did).
    cmd = [sys.executable, "-m", "pytest", "-n", "0", "-x", "-q", "-p", "no:cacheprovider", "-m", "not slow or mutants",
           "-k", DESELECT, *tests]
    start = time.perf_counter()
    try:
        r = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "killed (timeout)", time.perf_counter() - start, ""
    tail = (r.stdout + r.stderr).strip().splitlines()[-1:] or [""]
    return ("survived" if r.returncode == 0 else "killed"), time.perf_counter() - start, tail[0]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", default="", help="only mutants whose name contains this")
    parser.add_argument("--names", help="only these mutants (comma-separated names; 'issue35': issue #35's)")
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--timeout", type=int, default=900)
    parser.add_argument("--without", default="",
                        help="leave these test files out (comma-separated; 'issue35': issue #35's): how many "
                             "mutants the suite killed before the tests written for them existed")
    parser.add_argument("--tests", default="",
                        help="run only these test files (comma-separated; 'issue35': issue #35's)")
    args = parser.parse_args(argv)
    without = [t for w in args.without.split(",") if w for t in (ISSUE35_TESTS if w == "issue35" else [w])]
    only = [t for w in args.tests.split(",") if w for t in (ISSUE35_TESTS if w == "issue35" else [w])]
    tests = [t for t in (only or TESTS) if t not in without]
    names = [n for w in (args.names or "").split(",") if w for n in (ISSUE35_MUTANTS if w == "issue35" else [w])]
    mutants = [m for m in MUTANTS if args.k in m[0] and (not names or m[0] in names)]
    for name, path, old, new in mutants:  # every snippet must still match exactly once
        count = (ROOT / path).read_text().count(old)
        if count != 1:
            raise SystemExit(f"mutant {name}: snippet occurs {count} times in {path}; update MUTANTS")
    if args.list:
        for name, path, old, new in mutants:
            print(f"{name:34s} {path}: {old.strip()!r} -> {new.strip()!r}")
        return 0
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        def fresh_tree(i: int) -> Path:  # copy2 keeps mtimes, so numba's caches stay valid
            tree = Path(tmp) / f"tree{i}"
            shutil.copytree(ROOT, tree, ignore=IGNORE)
            return tree

        tree = fresh_tree(0)
        status, seconds, tail = run_tests(tree, args.timeout, tests)
        shutil.rmtree(tree)
        print(f"baseline (no mutant): {status} in {seconds:.0f}s  {tail}", flush=True)
        if status != "survived":
            raise SystemExit("the unmutated tree fails its tests; fix that first")
        for i, (name, path, old, new) in enumerate(mutants, 1):
            tree = fresh_tree(i)
            target = tree / path
            target.write_text(target.read_text().replace(old, new))
            status, seconds, tail = run_tests(tree, args.timeout, tests)
            shutil.rmtree(tree)
            results.append({"mutant": name, "file": path, "status": status, "seconds": round(seconds, 1)})
            print(f"{status:17s} {seconds:6.0f}s  {name}  ({path})  {tail}", flush=True)
    killed = sum(r["status"].startswith("killed") for r in results)
    score = 100.0 * killed / len(results) if results else 0.0
    print(f"\nmutation score: {killed}/{len(results)} killed = {score:.0f}%"
          + (f" (without {', '.join(without)})" if without else ""))
    for r in results:
        if r["status"] == "survived":
            print(f"  survived: {r['mutant']} ({r['file']})")
    if args.json:
        Path(args.json).write_text(json.dumps({"killed": killed, "total": len(results), "score": score,
                                               "tests": tests, "without": without, "deselect": DESELECT,
                                               "results": results},
                                              indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
