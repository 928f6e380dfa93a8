"""The CUDA kernels under numba's CUDA simulator (run by tests/test_cuda_sim.py).

Run directly with ``NUMBA_ENABLE_CUDASIM=1 python tests/sim_cases.py``. The
simulator runs blocks one after another and threads as Python threads, so
inputs are small and tiles tiny (64-256 bytes, 4-8 threads): many tiles,
seam chunks and rows per call, every misalignment of the base address.
"""

import os
import sys

import numpy as np
from hypothesis import given, note, settings
from hypothesis import strategies as st

assert os.environ.get("NUMBA_ENABLE_CUDASIM") == "1", "run with NUMBA_ENABLE_CUDASIM=1"

from numba import cuda  # noqa: E402

import rotate  # noqa: E402
from rotate._cuda import planner  # noqa: E402


def roll_simulated(host, shift, axis=None, offset=0, tile=64, threads=4, grid=3, max_scratch=None):
    raw = np.concatenate([np.full(offset, 0x5A, np.uint8), host.view(np.uint8).reshape(-1)])
    buf = cuda.to_device(raw)
    dev = buf[offset:].view(host.dtype)
    if host.ndim != 1:
        dev = dev.reshape(host.shape)
    with planner.override(tile_bytes=tile, threads=threads, grid=grid):
        plan = rotate.plan(dev, shift, axis, max_scratch_bytes=max_scratch)
        rotate.roll(dev, shift, axis, max_scratch_bytes=max_scratch)
    got = buf.copy_to_host()
    assert (got[:offset] == 0x5A).all(), "bytes before the array were overwritten"
    return got[offset:].view(host.dtype).reshape(host.shape), plan


@settings(deadline=None, max_examples=int(os.environ.get("SIM_EXAMPLES", "80")), database=None)
@given(n=st.integers(1, 700), shift=st.integers(-2000, 2000), offset=st.integers(0, 15),
       tile=st.sampled_from([64, 128, 256]), threads=st.sampled_from([4, 8]), grid=st.integers(1, 4),
       seed=st.integers(0, 2**32 - 1))
def check_bytes(n, shift, offset, tile, threads, grid, seed):
    host = np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8)
    note(f"reproduce: NUMBA_ENABLE_CUDASIM=1 roll_simulated(host, {shift}, offset={offset}, tile={tile}, "
         f"threads={threads}, grid={grid}) with host = np.random.default_rng({seed}).integers(0, 256, {n}, dtype=np.uint8)")
    got, plan = roll_simulated(host, shift, offset=offset, tile=tile, threads=threads, grid=grid)
    note(str(plan))
    np.testing.assert_array_equal(got, np.roll(host, shift))


@settings(deadline=None, max_examples=int(os.environ.get("SIM_EXAMPLES", "80")) // 2, database=None)
@given(shape=st.lists(st.integers(1, 9), min_size=2, max_size=3), data=st.data(),
       dtype=st.sampled_from([np.int16, np.float32, np.complex128]))
def check_axes(shape, data, dtype):
    host = np.random.default_rng(1).integers(0, 256, int(np.prod(shape)) * np.dtype(dtype).itemsize,
                                             dtype=np.uint8).view(dtype).reshape(shape)
    axis = data.draw(st.integers(0, len(shape) - 1))
    shift = data.draw(st.integers(-20, 20))
    got, plan = roll_simulated(host, shift, axis)
    note(str(plan))
    np.testing.assert_array_equal(got.view(np.uint8), np.roll(host, shift, axis).view(np.uint8))


def check_fallback():
    host = np.random.default_rng(2).integers(0, 256, 300, dtype=np.uint8)
    seen = set()
    for shift in (1, 100, 150, 151, 200, 299):  # no scratch: exact divisions swap, others reverse
        got, plan = roll_simulated(host, shift, max_scratch=0)
        seen.add(plan.algorithm)
        np.testing.assert_array_equal(got, np.roll(host, shift))
    assert seen == {"reversal", "block-swap"}, seen


@settings(deadline=None, max_examples=int(os.environ.get("SIM_EXAMPLES", "80")) // 2, database=None)
@given(n=st.integers(40, 900), data=st.data(), offset=st.integers(0, 15), cap=st.integers(0, 400),
       seed=st.integers(0, 2**32 - 1))
def check_block_swap(n, data, offset, cap, seed):
    """Distances whose seam exceeds max_scratch_bytes: block swaps, then the short kernel."""
    shift = data.draw(st.integers(1, n - 1))
    host = np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8)
    note(f"reproduce: roll_simulated(host, {shift}, offset={offset}, max_scratch={cap}) with "
         f"host = np.random.default_rng({seed}).integers(0, 256, {n}, dtype=np.uint8)")
    got, plan = roll_simulated(host, shift, offset=offset, max_scratch=cap)
    note(str(plan))
    np.testing.assert_array_equal(got, np.roll(host, shift))


if __name__ == "__main__":
    check_fallback()
    check_block_swap()
    check_axes()
    check_bytes()
    print("simulator cases passed")
    sys.exit(0)
