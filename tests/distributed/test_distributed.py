"""rotate.distributed: the schedule (pure index math) and real gloo groups of 2, 3 and 4 CPU processes.

The gloo runs start ``world`` processes of tests/cases/dist.py on loopback
(file:// rendezvous) and check each rank's report: every case equal to
torch.roll of the gathered tensor, bad input raising the same error on every
rank with the data untouched, DTensors (1-D and 2x2 meshes) rolled in place.
They need torch (the ``dist`` extra) and skip without it.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import importlib

import numpy as np
import pytest
from hypothesis import given, note
from hypothesis import strategies as st

from rotate._schedules import exchange

ROOT = Path(__file__).resolve().parents[2]


# --- the schedule, without torch --------------------------------------------


def _missing(reason: str):
    """Skip, unless CI asked for these tests to run (ROTATE_REQUIRE_TORCH=1): then a missing torch fails."""
    if os.environ.get("ROTATE_REQUIRE_TORCH") == "1":
        pytest.fail(f"ROTATE_REQUIRE_TORCH=1 but {reason}")
    pytest.skip(reason)


def _need(module: str):
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        _missing(f"{module} is not installed ({exc}); pip install -e '.[dist]'")


@st.composite
def splits(draw):
    ranks = draw(st.integers(1, 6))
    if draw(st.booleans()):
        length = draw(st.integers(0, 9))
        lengths = [length] * ranks
        if draw(st.booleans()):
            lengths[-1] = draw(st.integers(0, length))  # torch.chunk: a short (or empty) last shard
    else:
        lengths = draw(st.lists(st.integers(0, 11), min_size=ranks, max_size=ranks))
    n = sum(lengths)
    shift = draw(st.one_of(st.integers(-3 * n - 3, 3 * n + 3), st.integers(-10 ** 30, 10 ** 30)))
    return lengths, shift


@given(splits())
def test_schedule_equals_numpy_roll(case):
    lengths, shift = case
    note(f"lengths={lengths} shift={shift}")
    if lengths and sum(lengths) and _count_stages(lengths, shift) > exchange.MAX_STAGES:
        with pytest.raises(ValueError, match="too uneven"):
            exchange.build(lengths, shift)
        return
    data = np.arange(sum(lengths)) * 7 + 3
    shards = np.split(data, np.cumsum(lengths)[:-1]) if lengths else []
    got = exchange.simulate(list(shards), shift)
    assert np.array_equal(np.concatenate(got) if got else data, np.roll(data, shift))


def _count_stages(lengths, shift):
    n = sum(lengths)
    k = shift % n
    shortest = min(x for x in lengths if x)
    return -(-min(k, n - k) // shortest)


@given(splits())
def test_every_stage_receives_where_it_sends(case):
    lengths, shift = case
    if lengths and sum(lengths) and _count_stages(lengths, shift) > exchange.MAX_STAGES:
        return
    _, stages = exchange.build(lengths, shift)
    for stage in stages:
        exchange.check_stage(lengths, stage)  # build checks too; this states it as the property
        assert all(m.src != m.dst for m in stage.moves)


@given(st.integers(2, 6), st.integers(1, 50), st.data())
def test_even_split_volume(ranks, length, data):
    """Even splits send k elements per rank within a shard, and min(k, N - k) at most in general."""
    n = ranks * length
    k = data.draw(st.integers(1, n - 1))
    algorithm, stages = exchange.build([length] * ranks, k)
    assert len(stages) == 1
    sent = [sum(m.length for m in stages[0].moves if m.src == r) for r in range(ranks)]
    if k < length:
        assert algorithm == "even-within-shard" and sent == [k] * ranks
    assert max(sent) <= length
    if k > n - length:
        assert sent == [n - k] * ranks


def test_uneven_steps_take_the_shorter_direction():
    algorithm, stages = exchange.build([3, 5, 4], 10)  # N = 12: 10 right is 2 left
    assert algorithm == "uneven-within-shard" and len(stages) == 1
    assert stages[0].local_shifts == (-2, -2, -2)
    algorithm, stages = exchange.build([3, 5, 4], 5)
    assert algorithm == "uneven-steps" and [s.local_shifts[0] for s in stages] == [3, 2]


def test_too_uneven_splits_are_refused_not_crawled():
    with pytest.raises(ValueError, match="too uneven"):
        exchange.build([1000, 1, 1000], 500)
    assert len(exchange.build([1000, 1, 1000], 64)[1]) == 64
    assert len(exchange.build([1000, 1, 1000], -64)[1]) == 64


def test_check_stage_rejects_a_stage_that_would_overwrite_unsent_data():
    bad = exchange.Stage((1, 1), (exchange.Move(0, 0, 1, 1, 1), exchange.Move(1, 0, 0, 0, 1)))
    with pytest.raises(AssertionError):
        exchange.check_stage([4, 4], bad)


@given(st.integers(1, 5), st.integers(0, 40), st.integers(1, 40), st.integers(1, 64))
def test_chunks_tile_the_range_within_the_bound(rows, first, width, chunk_bytes):
    stop = first + width
    seen = np.zeros((rows, stop), int)
    for r0, r1, c0, c1 in exchange.chunks(rows, first, stop, chunk_bytes):
        assert (r1 - r0) * (c1 - c0) <= max(chunk_bytes, 1) or (r1 - r0 == 1 and c1 - c0 <= chunk_bytes)
        seen[r0:r1, c0:c1] += 1
    assert (seen[:, first:] == 1).all() and (seen[:, :first] == 0).all()


# --- real process groups (gloo, CPU) -------------------------------------------

def _run_world(world, tmp_path):
    _need("torch")
    dist = _need("torch.distributed")
    if not dist.is_available() or not dist.is_gloo_available():
        _missing("this torch build has no gloo backend")
    rdv = tmp_path / f"rdv{world}"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
               GLOO_SOCKET_IFNAME="lo", OMP_NUM_THREADS="1", NUMBA_NUM_THREADS="1")
    procs = [subprocess.Popen([sys.executable, str(ROOT / "tests" / "cases" / "dist.py"), str(world), str(r), str(rdv)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for r in range(world)]
    outputs = []
    try:
        for p in procs:
            outputs.append(p.communicate(timeout=240))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    reports = []
    for r, (p, (out, err)) in enumerate(zip(procs, outputs)):
        assert p.returncode == 0, f"rank {r} exited with {p.returncode}:\n{err[-4000:]}"
        reports.append(json.loads(out.strip().splitlines()[-1]))
    return reports


@pytest.mark.parametrize("world", [2, 3, 4])
def test_gloo_group(world, tmp_path):
    reports = _run_world(world, tmp_path)
    for rep in reports:
        assert rep["cases"] >= 120, rep["cases"]  # the cases ran, not just the harness
        assert not rep["failures"], "\n".join(rep["failures"])[:8000]


# --- torch CPU tensors through rotate.roll (zero-copy numpy view) -----------

@pytest.mark.parametrize("dtype", ["uint8", "int16", "float32", "float64", "complex128", "bfloat16", "bool"])
@pytest.mark.parametrize("shape, shift, axis", [((37,), 5, None), ((37,), -40, 0), ((6, 7), (2, -3), (0, 1)),
                                                ((6, 7), 11, None)])
def test_torch_cpu_tensor_rolls_in_place(dtype, shape, shift, axis):
    torch = _need("torch")
    g = torch.Generator().manual_seed(7)
    dt = getattr(torch, dtype)
    size = int(np.prod(shape)) * torch.empty((), dtype=dt).element_size()
    raw = torch.randint(1, 256, (size,), generator=g, dtype=torch.uint8)
    x = (raw % 2 == 1).reshape(shape) if dt == torch.bool else raw.view(dt).reshape(shape)
    want = torch.roll(x, shift, axis) if axis is not None else torch.roll(x, shift)
    ptr = x.data_ptr()
    import rotate
    assert rotate.roll(x, shift, axis) is x and x.data_ptr() == ptr
    assert torch.equal(x.view(torch.uint8), want.view(torch.uint8))
    assert rotate.plan(x, shift, axis).backend == "cpu"


def test_torch_cpu_tensor_errors_leave_it_unchanged():
    torch = _need("torch")
    import rotate
    x = torch.arange(5.0, requires_grad=True)
    with pytest.raises(ValueError, match="detach"):
        rotate.roll(x, 1)
    assert torch.equal(x.detach(), torch.arange(5.0))
    y = torch.arange(5)
    with pytest.raises(TypeError, match="shift"):
        rotate.roll(y, 1.5)
    assert torch.equal(y, torch.arange(5))
