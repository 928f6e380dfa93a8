"""GPU backend on a real device: results equal numpy.roll, bit for bit.

Skipped without a CUDA GPU (CI); run on the device machine (CONTRIBUTING.md).
The cases and the test body (``check_roll_case``: poisoned guards and
scratch, numpy.roll byte for byte) are shared with the CPU tests and the
CUDA simulator (tests/cases/roll.py, tests/cases/sim.py).
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

cuda = pytest.importorskip("numba.cuda")
from numba.core import config  # noqa: E402

if config.ENABLE_CUDASIM or not cuda.is_available():
    pytest.skip("needs a CUDA GPU (the simulator runs tests/backends/test_cuda_sim.py)", allow_module_level=True)

import rotate  # noqa: E402
from cases.roll import DTYPES, FIXED_CASES, Case, CudaRunner, cases, check_roll_case  # noqa: E402
from rotate._backends.cuda import tuning as cuda_tuning

pytestmark = pytest.mark.gpu

TILES = [64, 256, 4096, None]  # None: the default tile
RUNNER = CudaRunner()


def tile_tunables(tile):
    return () if tile is None else (("tile_bytes", tile),)


@pytest.mark.parametrize("case", FIXED_CASES, ids=repr)
def test_fixed_cases(case):
    check_roll_case(RUNNER, case)


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
    check_roll_case(RUNNER, Case((n,), "uint8", shift, offset=offset, seed=seed, tunables=tile_tunables(tile)))


@settings(deadline=None, max_examples=80)
@given(
    dtype=st.sampled_from(DTYPES),
    n=st.integers(1, 20000),
    shift=st.integers(-50000, 50000),
    tile=st.sampled_from(TILES),
    seed=st.integers(0, 2**32 - 1),
)
def test_dtypes(dtype, n, shift, tile, seed):
    check_roll_case(RUNNER, Case((n,), dtype, shift, offset=seed % 16, seed=seed, tunables=tile_tunables(tile)))


@settings(deadline=None, max_examples=100)
@given(case=cases(max_dim=40, tunables=[(), (("tile_bytes", 64),), (("tile_bytes", 256),)]))
def test_random_cases(case):
    check_roll_case(RUNNER, case)


@pytest.mark.parametrize("shift", [1, 3, 4097, 500_000, 999_999])
def test_reversal_fallback(shift):
    plan = check_roll_case(RUNNER, Case((1_000_003,), "uint8", shift, max_scratch=0, seed=shift))
    assert plan.algorithm == "reversal"


@pytest.mark.parametrize("variant", ["pipeline", "control-warp"])
@pytest.mark.parametrize("decode", ["runs", "direct"])
@pytest.mark.parametrize("offset", [0, 7])
def test_every_shift_takes_one_chain_pass(offset, decode, variant):
    n = 64 * 1024 * 1024 + 13
    for shift in (1, 3, 4097, (1 << 20) + 5, n // 4 + 3, n // 3, n // 2 + 1, n - 7, 23_456_789):
        plan = check_roll_case(RUNNER, Case((n,), "uint8", shift, offset=offset, max_scratch=n, seed=3,
                                            tunables=(("chain_decode", decode), ("chain_variant", variant))))
        details = plan.steps[0].details
        assert plan.algorithm == "chain" and details["decode"] == decode, plan
        assert details["pipeline"] == (variant == "pipeline"), plan


@pytest.mark.parametrize("variant", ["pipeline", "control-warp", "single"])
@pytest.mark.parametrize("offset", [0, 5])
def test_random_shifts_take_co_resident_chains(offset, variant):
    """Random shifts of 64 MiB: the co-resident chain (one block a lane, launched cooperatively, waits on
    later lanes at earlier steps) equals numpy.roll; the planner takes it for most of them (it pre-reads
    less), so this cannot pass without running it. The same shifts with co_resident=False agree."""
    n = 64 * 1024 * 1024 + offset
    rng = np.random.default_rng(offset)
    co_resident = 0
    for shift in rng.integers(1, n, 6):
        for allowed in (True, False):
            plan = check_roll_case(RUNNER, Case((n,), "uint8", int(shift), offset=offset, seed=int(shift),
                                                tunables=(("co_resident", allowed), ("chain_variant", variant))))
            details = plan.steps[0].details
            if details.get("co_resident"):
                assert allowed and details["grid"] == details["lanes"], plan
                co_resident += 1
    assert co_resident >= 3, f"only {co_resident} of 6 random shifts planned co-resident chains"


@pytest.mark.parametrize("rows", [2, 7])
def test_co_resident_chains_over_rows(rows):
    """Several misaligned rows (16 heads in the plan table), a random shift each call, co-resident."""
    seg = (48 << 20) // rows + 3
    rng = np.random.default_rng(rows)
    seen = 0
    for shift in rng.integers(1, seg, 4):
        plan = check_roll_case(RUNNER, Case((rows, seg), "uint8", int(shift), axis=1, offset=3, seed=int(shift)))
        seen += bool(plan.steps[0].details.get("co_resident"))
    assert seen >= 1, "no co-resident plan among the random shifts"


@settings(deadline=None, max_examples=60)
@given(n=st.integers(2, 3_000_000), data=st.data(), offset=st.integers(0, 15),
       tile=st.sampled_from([256, 4096, None]), rows=st.integers(1, 5), decode=st.sampled_from(["runs", "direct"]),
       variant=st.sampled_from([None, "single", "control-warp", "pipeline"]))
def test_chain_structured_shifts_and_rows(n, data, offset, tile, rows, decode, variant):
    """Shifts n/p +- small, near tile and lane boundaries, over several rows; every kernel variant,
    both item decodings."""
    seg = max(2, n // rows)
    p = data.draw(st.integers(1, 9), label="p")
    small = data.draw(st.integers(-40, 40), label="small")
    shift = (seg // p + small) % seg or 1
    check_roll_case(RUNNER, Case((rows, seg), "uint8", shift, axis=1, offset=offset, seed=n + p,
                                 tunables=tile_tunables(tile) + (("chain_decode", decode), ("chain_variant", variant))))


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


def test_torch_tensor_on_its_current_stream():
    torch = pytest.importorskip("torch", reason="torch is not installed")
    if not torch.cuda.is_available():
        pytest.skip("torch is installed without CUDA")
    host = np.random.default_rng(9).integers(0, 2**31, 100_003).astype(np.float32)
    t = torch.from_numpy(host.copy()).cuda()
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        assert rotate.roll(t, 12345) is t
    s.synchronize()
    np.testing.assert_array_equal(t.cpu().numpy(), np.roll(host, 12345))


def test_cupy_array():
    cupy = pytest.importorskip("cupy", reason="cupy is not installed")
    host = np.random.default_rng(9).integers(0, 2**31, 100_003).astype(np.float32)
    c = cupy.asarray(host)
    assert rotate.rotate(c, 10) == host.size - 10
    np.testing.assert_array_equal(cupy.asnumpy(c), np.roll(host, -10))
    s = cupy.cuda.Stream(non_blocking=True)
    with s:
        assert rotate.roll(c, 777) is c
    s.synchronize()
    np.testing.assert_array_equal(cupy.asnumpy(c), np.roll(host, 777 - 10))


def _quick_path_libraries():
    """(name, make from host, to host, stream context factory, synchronise) for each installed library."""
    libs = [("numba", cuda.to_device, lambda d: d.copy_to_host(), None, cuda.synchronize)]
    try:
        import torch

        if torch.cuda.is_available():
            libs.append(("torch", lambda h: torch.from_numpy(h.copy()).cuda(), lambda t: t.cpu().numpy(),
                         lambda: torch.cuda.stream(torch.cuda.Stream()), torch.cuda.synchronize))
    except ImportError:
        pass
    try:
        import cupy

        libs.append(("cupy", cupy.asarray, cupy.asnumpy, lambda: cupy.cuda.Stream(non_blocking=True),
                     cupy.cuda.runtime.deviceSynchronize))
    except ImportError:
        pass
    return libs


@pytest.mark.parametrize("lib", _quick_path_libraries(), ids=lambda lib: lib[0])
def test_repeated_calls_take_the_quick_path_correctly(lib):
    # Issue #8's quick path: after the first call the description and plan are
    # reused; every call must still run on the library's current stream, at
    # the array's address, with a plan that follows the settings.
    from rotate import _api

    name, make, to_host, stream_context, synchronise = lib
    rng = np.random.default_rng(11)
    host = rng.integers(0, 2**31, 65_537).astype(np.float32)
    a, b = make(host), make(host[::-1].copy())  # the same layout at two addresses
    total = 0
    for shift in (3, 3, 3, -70, 3, 40_000):
        rotate.roll(a, shift)
        rotate.roll(b, shift)
        total += shift
    synchronise()
    np.testing.assert_array_equal(to_host(a), np.roll(host, total))
    np.testing.assert_array_equal(to_host(b), np.roll(host[::-1], total))
    assert any(key[0] == _quick_key_pointer(a) for key in _api._quick_calls)  # the quick path was taken
    with cuda_tuning.override(tile_bytes=4096):
        rotate.roll(a, 5)
        total += 5
    synchronise()
    np.testing.assert_array_equal(to_host(a), np.roll(host, total))
    if stream_context is not None:  # a non-default current stream: the quick path asks for it each call
        context = stream_context()
        with context:
            for _ in range(3):
                rotate.roll(a, 1000)
        total += 3000
        synchronise()
        np.testing.assert_array_equal(to_host(a), np.roll(host, total))


def _quick_key_pointer(a):
    from rotate._core import arrays as _arrays

    return _arrays.quick_device(a)[1]


def test_numba_array_bound_to_a_stream_runs_on_it():
    host = np.arange(100_003, dtype=np.int32)
    stream = cuda.stream()
    d = cuda.to_device(host, stream=stream)
    for _ in range(3):
        rotate.roll(d, 7)
    stream.synchronize()
    np.testing.assert_array_equal(d.copy_to_host(), np.roll(host, 21))


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
    for shift in (n // 3, n // 2 + 1, n - n // 3 + 7, 20_000_001):
        plan = check_roll_case(RUNNER, Case((n,), "uint8", shift, offset=offset, max_scratch=200_000, seed=offset))
        assert plan.algorithm == "block-swap", plan


@settings(deadline=None, max_examples=40)
@given(n=st.integers(1000, 300_000), data=st.data(), offset=st.integers(0, 15), cap=st.integers(0, 50_000))
def test_block_swap_small_caps(n, data, offset, cap):
    shift = data.draw(st.integers(1, n - 1))
    check_roll_case(RUNNER, Case((n,), "uint8", shift, offset=offset, max_scratch=cap, seed=n,
                                 tunables=(("tile_bytes", 256),)))


@pytest.mark.parametrize("rows,seg,dtype,shift", [(100_003, 24, "uint8", 5), (1 << 17, 7, "int16", -3),
                                                  (20_011, 1000, "float32", 333), (3, 5_000_011, "uint8", 1_666_670)])
def test_many_short_rows_and_few_long_ones(rows, seg, dtype, shift):
    """Rows shorter than a chain tile take row-panels (a chain item per row cost a whole tile's
    bookkeeping); with tiles smaller than the rows, the chain kernel takes the same rows."""
    row_bytes = seg * np.dtype(dtype).itemsize
    plan = check_roll_case(RUNNER, Case((rows, seg), dtype, shift, axis=1, offset=3, seed=rows))
    assert plan.algorithm == ("row-panels" if row_bytes < 32 * 1024 else "chain"), plan
    if row_bytes >= 64:
        plan = check_roll_case(RUNNER, Case((rows, seg), dtype, shift, axis=1, offset=3, seed=rows + 1,
                                            tunables=(("tile_bytes", 64),)))
        assert plan.algorithm == "chain", plan


def test_more_than_2_to_the_32_elements():
    """5 GiB of uint8: element, tile and position indices past 32 bits. Checked on the device against cupy.roll."""
    cupy = pytest.importorskip("cupy")
    n = 5 * (1 << 30) + 7
    try:
        x = cupy.random.randint(0, 256, n, dtype=cupy.uint8)
    except cupy.cuda.memory.OutOfMemoryError:
        pytest.skip("needs 10 GiB of free device memory")
    for shift in (3, n // 3, -(1 << 20) - 5):
        expected = cupy.roll(x, shift)
        plan = rotate.plan(x, shift)
        rotate.roll(x, shift)
        assert plan.algorithm == "chain", plan
        assert bool(cupy.array_equal(x, expected)), f"shift {shift}: {int((x != expected).sum())} bytes differ"
        del expected


def test_release_scratch_gives_memory_back_and_the_next_roll_allocates_again():
    x = cuda.to_device(np.arange(1 << 20, dtype=np.uint8))
    rotate.roll(x, 12345)
    assert rotate.release_scratch() > 0
    assert rotate.release_scratch() == 0
    rotate.roll(x, -12345)
    np.testing.assert_array_equal(x.copy_to_host(), np.arange(1 << 20, dtype=np.uint8))
