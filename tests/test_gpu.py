"""GPU backend on a real device: results equal numpy.roll, bit for bit.

Skipped without a CUDA GPU (CI); run on the device machine (CONTRIBUTING.md).
The same kernels run under the CUDA simulator in tests/test_cuda_sim.py.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

cuda = pytest.importorskip("numba.cuda")
from numba.core import config  # noqa: E402

if config.ENABLE_CUDASIM or not cuda.is_available():
    pytest.skip("needs a CUDA GPU (the simulator runs tests/test_cuda_sim.py)", allow_module_level=True)

import rotate  # noqa: E402
from rotate._cuda import launch, planner  # noqa: E402

pytestmark = pytest.mark.gpu

DTYPES = [np.uint8, np.int16, np.float32, np.float64, np.complex128]
TILES = [64, 256, 4096, None]  # None: the default tile


def poison_scratch():
    """Fill the cached seam buffer with junk, so a kernel reading unwritten scratch fails."""
    entry = launch.scratch_for(0)
    if entry.pre is not None:
        entry.pre.copy_to_device(np.full(entry.pre.size, 0xA5, np.uint8))


def roll_on_device(host, shift, axis=None, offset=0, tile=None, max_scratch=None):
    buf = cuda.to_device(np.concatenate([np.full(offset, 0x5A, np.uint8), host.view(np.uint8).reshape(-1)]))
    dev = buf[offset:].view(host.dtype).reshape(host.shape) if host.ndim else buf[offset:].view(host.dtype)
    poison_scratch()
    overrides = {"tile_bytes": tile} if tile else {}
    with planner.override(**overrides):
        plan = rotate.plan(dev, shift, axis, max_scratch_bytes=max_scratch)
        out = rotate.roll(dev, shift, axis, max_scratch_bytes=max_scratch)
    assert out is dev
    got = buf.copy_to_host()
    assert (got[:offset] == 0x5A).all(), "bytes before the array were overwritten"
    return got[offset:].view(host.dtype).reshape(host.shape), plan


@settings(deadline=None, max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.one_of(st.integers(1, 3000), st.sampled_from([2**16 - 1, 2**16 + 1, 65521, 1 << 18])),
    shift=st.integers(-(10**6), 10**6),
    offset=st.integers(0, 15),
    tile=st.sampled_from(TILES),
    seed=st.integers(0, 2**32 - 1),
)
def test_bytes_any_alignment(n, shift, offset, tile, seed):
    # Random bytes from a seed: drawing up to 256 KiB through hypothesis trips
    # its data-size health check (seen once on the H200).
    host = np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8)
    note(f"reproduce: roll_on_device(np.random.default_rng({seed}).integers(0, 256, {n}, dtype=np.uint8), "
         f"{shift}, offset={offset}, tile={tile})")
    got, plan = roll_on_device(host, shift, offset=offset, tile=tile)
    note(str(plan))
    np.testing.assert_array_equal(got, np.roll(host, shift))


@settings(deadline=None, max_examples=80)
@given(
    dtype=st.sampled_from(DTYPES),
    n=st.integers(1, 20000),
    shift=st.integers(-50000, 50000),
    tile=st.sampled_from(TILES),
    seed=st.integers(0, 2**32 - 1),
)
def test_dtypes(dtype, n, shift, tile, seed):
    rng = np.random.default_rng(seed)
    host = rng.integers(0, 256, n * np.dtype(dtype).itemsize, dtype=np.uint8).view(dtype)
    got, plan = roll_on_device(host, shift, tile=tile)
    note(str(plan))
    np.testing.assert_array_equal(got.view(np.uint8), np.roll(host, shift).view(np.uint8))


@settings(deadline=None, max_examples=60)
@given(
    shape=st.lists(st.integers(1, 40), min_size=2, max_size=4),
    data=st.data(),
    tile=st.sampled_from([64, 256, None]),
)
def test_axes(shape, data, tile):
    host = np.random.default_rng(len(shape)).integers(0, 2**31, size=shape).astype(np.int32)
    axis = data.draw(st.integers(0, len(shape) - 1))
    shift = data.draw(st.integers(-100, 100))
    got, plan = roll_on_device(host, shift, axis, tile=tile)
    note(str(plan))
    np.testing.assert_array_equal(got, np.roll(host, shift, axis))


@pytest.mark.parametrize("shift", [1, 3, 4097, 500_000, 999_999])
def test_reversal_fallback(shift):
    host = np.random.default_rng(shift).integers(0, 256, 1_000_003, dtype=np.uint8)
    got, plan = roll_on_device(host, shift, max_scratch=0)
    assert plan.algorithm == "reversal"
    np.testing.assert_array_equal(got, np.roll(host, shift))


@pytest.mark.parametrize("offset", [0, 7])
def test_every_shift_takes_one_chain_pass(offset):
    n = 64 * 1024 * 1024 + 13
    host = np.random.default_rng(3).integers(0, 256, n, dtype=np.uint8)
    for shift in (1, 3, 4097, (1 << 20) + 5, n // 4 + 3, n // 3, n // 2 + 1, n - 7, 23_456_789):
        got, plan = roll_on_device(host, shift, offset=offset, max_scratch=n)
        assert plan.algorithm == "chain", plan
        np.testing.assert_array_equal(got, np.roll(host, shift))


@settings(deadline=None, max_examples=60)
@given(n=st.integers(2, 3_000_000), data=st.data(), offset=st.integers(0, 15),
       tile=st.sampled_from([256, 4096, None]), rows=st.integers(1, 5))
def test_chain_structured_shifts_and_rows(n, data, offset, tile, rows):
    """Shifts n/p +- small, near tile and lane boundaries, over several rows."""
    seg = max(2, n // rows)
    p = data.draw(st.integers(1, 9), label="p")
    small = data.draw(st.integers(-40, 40), label="small")
    shift = (seg // p + small) % seg or 1
    host = np.random.default_rng(n + p).integers(0, 256, rows * seg, dtype=np.uint8).reshape(rows, seg)
    note(f"reproduce: roll_on_device(host, {shift}, axis=1, offset={offset}, tile={tile}) with host = "
         f"np.random.default_rng({n + p}).integers(0, 256, {rows * seg}, dtype=np.uint8).reshape({rows}, {seg})")
    got, plan = roll_on_device(host, shift, axis=1, offset=offset, tile=tile)
    note(str(plan))
    np.testing.assert_array_equal(got, np.roll(host, shift, axis=1))


def test_concurrent_streams_do_not_interfere():
    rng = np.random.default_rng(5)
    hosts = [rng.integers(0, 256, 3_000_017, dtype=np.uint8) for _ in range(4)]
    streams = [cuda.stream() for _ in hosts]
    devs = [cuda.to_device(h, stream=s) for h, s in zip(hosts, streams)]
    shifts = [1, 77777, 1_500_001, 2_999_999]
    rounds = 5

    def work(i):
        for _ in range(rounds):
            rotate.roll(devs[i], shifts[i], stream=streams[i])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(hosts))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for h, d, s, stream in zip(hosts, devs, shifts, streams):
        stream.synchronize()
        np.testing.assert_array_equal(d.copy_to_host(), np.roll(h, s * rounds))


def test_torch_and_cupy_inputs():
    host = np.random.default_rng(9).integers(0, 2**31, 100_003).astype(np.float32)
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None and torch.cuda.is_available():
        t = torch.from_numpy(host.copy()).cuda()
        s = torch.cuda.Stream()
        with torch.cuda.stream(s):
            rotate.roll(t, 12345)
        s.synchronize()
        np.testing.assert_array_equal(t.cpu().numpy(), np.roll(host, 12345))
    try:
        import cupy
    except ImportError:
        cupy = None
    if cupy is not None:
        c = cupy.asarray(host)
        assert rotate.rotate(c, 10) == host.size - 10
        np.testing.assert_array_equal(cupy.asnumpy(c), np.roll(host, -10))
    if torch is None and cupy is None:
        pytest.skip("neither torch nor cupy installed")


def test_readonly_and_noncontiguous_device_arrays_are_refused_untouched():
    host = np.arange(1000, dtype=np.int32)
    dev = cuda.to_device(host.reshape(10, 100))
    with pytest.raises(ValueError, match="non-contiguous"):
        rotate.roll(dev[:, ::2], 1, axis=1)
    np.testing.assert_array_equal(dev.copy_to_host().reshape(-1), host)
    with pytest.raises(TypeError):
        rotate.roll(dev, 1.5)
    np.testing.assert_array_equal(dev.copy_to_host().reshape(-1), host)


@pytest.mark.parametrize("offset", [0, 5])
def test_block_swap_fallback_for_long_distances(offset):
    n = 48 * 1024 * 1024 + 13
    host = np.random.default_rng(offset).integers(0, 256, n, dtype=np.uint8)
    for shift in (n // 3, n // 2 + 1, n - n // 3 + 7, 20_000_001):
        got, plan = roll_on_device(host, shift, offset=offset, max_scratch=200_000)
        assert plan.algorithm == "block-swap", plan
        np.testing.assert_array_equal(got, np.roll(host, shift))


@settings(deadline=None, max_examples=40)
@given(n=st.integers(1000, 300_000), data=st.data(), offset=st.integers(0, 15), cap=st.integers(0, 50_000))
def test_block_swap_small_caps(n, data, offset, cap):
    shift = data.draw(st.integers(1, n - 1))
    host = np.random.default_rng(n).integers(0, 256, n, dtype=np.uint8)
    got, plan = roll_on_device(host, shift, offset=offset, tile=256, max_scratch=cap)
    note(str(plan))
    np.testing.assert_array_equal(got, np.roll(host, shift))
