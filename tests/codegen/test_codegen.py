"""Codegen of the GPU chain kernel, read from PTX compiled without a GPU.

Checks what the performance depends on: the hot loops move 128-bit words
(``cp.async`` 16-byte copies into shared memory, ``st.global.v4.u32`` out,
``ld.shared.v4.u32`` for the realignment), the flags use acquire/release
operations that cannot be hoisted out of a polling loop, and nothing spills
to local memory. Runs in CI (CPU only): compiling the device functions a
kernel calls asks numba-cuda for the current device, which a fixture
answers with compute capability 9.0 (the H200's). The module skips only
when libNVVM itself cannot be loaded (checked up front); any compile error
after that fails the test.
"""

import re

import pytest

pytest.importorskip("numba.cuda")
from numba.core import config  # noqa: E402

if config.ENABLE_CUDASIM:
    pytest.skip("the CUDA simulator cannot compile PTX", allow_module_level=True)

from cases.compiler import require_compiler  # noqa: E402

require_compiler()

import numba.cuda.dispatcher as dispatcher  # noqa: E402
from numba import cuda, types  # noqa: E402

from rotate._backends.cuda.kernels import block_swaps, chain  # noqa: E402
from rotate._backends.cuda import device as gpu_device  # noqa: E402


class _H200:
    compute_capability = (9, 0)
    id = 0


@pytest.fixture
def ptx(monkeypatch):
    monkeypatch.setattr(dispatcher, "get_current_device", lambda: _H200())
    kernel = chain.chain_kernel(chain.TILE_BYTES, chain.THREADS)
    sig = (types.int64,) * 15  # raw addresses and integers: what schedules.chain.run_chain passes
    text, _ = cuda.compile_ptx(kernel.py_func, sig, cc=(9, 0), launch_bounds=chain.THREADS)
    return text


def test_hot_loops_move_128_bit_words(ptx):
    assert len(re.findall(r"cp\.async\.cg\.shared\.global \[%?\w+\], \[%rd\d+\], 16;", ptx)) >= 2
    assert "cp.async.wait_group 0;" in ptx and "cp.async.commit_group" in ptx
    assert ptx.count("st.global.v4.u32") >= 2
    assert ptx.count("ld.shared.v4.u32") >= 2
    # Realignment is one funnel shift a word, on shared addresses converted once a run (not per vector).
    assert ptx.count("shf.r.clamp.b32") >= 4
    assert ptx.count("cvta.to.shared.u64") < ptx.count("ld.shared.v4.u32")
    # No scalar global loads on the data path (the flag polls are ld.acquire, the table ld.global.nc.s64).
    assert not re.search(r"ld\.global\.(cg\.)?(u8|u16|u32|b32)\b", ptx)


def test_no_local_memory(ptx):
    assert "ld.local" not in ptx and "st.local" not in ptx


def test_flags_use_acquire_and_strong_stores(ptx):
    assert "ld.acquire.gpu.global.u32" in ptx
    assert "st.relaxed.gpu.global.u32" in ptx


@pytest.fixture
def pipeline_ptx(monkeypatch):

    monkeypatch.setattr(dispatcher, "get_current_device", lambda: _H200())
    threads = gpu_device.policy().pipeline_threads
    kernel = chain.chain_kernel(chain.TILE_BYTES, threads, chain.BUFFERS, 2, control_warp=True,
                                   direct_decode=True, pipeline=True)
    block = threads + chain.control_threads(True, True)
    text, _ = cuda.compile_ptx(kernel.py_func, (types.int64,) * 15, cc=(9, 0), launch_bounds=(block, 2))
    return text


def test_pipelined_kernel_copies_in_bulk_and_hands_off_through_mbarriers(pipeline_ptx):
    """The default chain kernel: one bulk copy a source piece completing on an mbarrier, parity waits,
    no ``cp.async`` 16-byte copies on the item path, 128-bit realigned stores, no local memory."""
    ptx = pipeline_ptx
    assert "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes" in ptx
    assert "mbarrier.expect_tx.relaxed.cta.shared::cta.b64" in ptx
    assert "mbarrier.try_wait.parity.shared::cta.b64" in ptx and "mbarrier.arrive.shared::cta.b64" in ptx
    assert "fence.mbarrier_init.release.cluster;" in ptx and "fence.proxy.async.global;" in ptx
    assert "cp.async.cg.shared.global" not in ptx and "cp.async.wait_group" not in ptx
    assert "cp.async.bulk.global" not in ptx  # the data warps store every item
    assert ptx.count("st.global.v4.u32") >= 2 and ptx.count("shf.r.clamp.b32") >= 4
    assert "ld.local" not in ptx and "st.local" not in ptx


def test_co_resident_kernel_draws_one_lane_and_keeps_its_registers(monkeypatch, pipeline_ptx):
    """``one_lane`` (co-resident plans): the same pipelined kernel with the block's second ticket draw
    compiled out; it must still fit its launch bounds without spilling to local memory."""

    threads = gpu_device.policy().pipeline_threads
    kernel = chain.chain_kernel(chain.TILE_BYTES, threads, chain.BUFFERS, 2, control_warp=True,
                                   direct_decode=True, pipeline=True, one_lane=True)
    block = threads + chain.control_threads(True, True)
    ptx, _ = cuda.compile_ptx(kernel.py_func, (types.int64,) * 15, cc=(9, 0), launch_bounds=(block, 2))
    assert ptx != pipeline_ptx
    assert "mbarrier.try_wait.parity.shared::cta.b64" in ptx and ptx.count("st.global.v4.u32") >= 2
    assert "ld.local" not in ptx and "st.local" not in ptx


@pytest.fixture
def swap_ptx(monkeypatch):
    monkeypatch.setattr(dispatcher, "get_current_device", lambda: _H200())
    kernel = block_swaps.swap_kernel(chain.TILE_BYTES, chain.THREADS)
    i64 = types.int64
    sig = (types.Array(types.uint8, 1, "C"), i64, i64, i64, i64, i64, i64)
    text, _ = cuda.compile_ptx(kernel.py_func, sig, cc=(9, 0), launch_bounds=chain.THREADS)
    return text


def test_swap_kernel_moves_128_bit_words_without_local_memory(swap_ptx):
    assert "cp.async.cg.shared.global" in swap_ptx
    assert swap_ptx.count("st.global.v4.u32") >= 2 and swap_ptx.count("ld.shared.v4.u32") >= 2
    assert "ld.local" not in swap_ptx and "st.local" not in swap_ptx


@pytest.mark.parametrize("unit", [1, 2, 4, 8, 16])
@pytest.mark.parametrize("which", ["panel", "cycle"])
def test_lane_kernels_compile_for_every_unit(monkeypatch, which, unit):
    """roll_rows' lane panels and the row-cycles kernel: 128-bit copies in and stores out, the
    realigning gather's 128-bit shared loads, flag polls that cannot be hoisted, no local memory."""
    from rotate._backends.cuda.kernels import cycles, panels

    monkeypatch.setattr(dispatcher, "get_current_device", lambda: _H200())
    threads = 256 if which == "panel" else 1024  # the largest block each is launched with
    kernel = (panels.panel_kernel if which == "panel" else cycles.cycle_kernel)(unit, threads)
    sig = (types.int64,) * (11 if which == "panel" else 21)  # what run_lane_panels / run_row_cycles pass
    text, _ = cuda.compile_ptx(kernel.py_func, sig, cc=(9, 0), launch_bounds=threads)
    assert "cp.async.cg.shared.global" in text and "cp.async.wait_group" in text
    assert "st.global.v4.u32" in text and "ld.shared.v4.u32" in text
    assert "ld.local" not in text and "st.local" not in text
    if which == "cycle":
        assert "ld.acquire.gpu.global.u32" in text and "atom.global.add.u64" in text


@pytest.mark.parametrize("unit", [1, 2, 4, 8, 16])
def test_panel_window_writer_compiles_to_realigned_vector_loads(monkeypatch, unit):
    """lane-panels' window writer (lanes of 16 bytes to 2 KiB): 128-bit shared loads (two windows a run),
    128-bit global stores, and no local memory (its runs' words stay in registers)."""
    from rotate._backends.cuda.kernels import panels

    monkeypatch.setattr(dispatcher, "get_current_device", lambda: _H200())
    text, gather = (cuda.compile_ptx(panels.panel_kernel(unit, 256, 0, windows).py_func, (types.int64,) * 11,
                                     cc=(9, 0), launch_bounds=256)[0] for windows in (True, False))
    assert "st.global.v4.u32" in text and text.count("ld.shared.v4.u32") >= 2
    assert "ld.local" not in text and "st.local" not in text
    assert text != gather  # the flag reaches the writer
    if unit == 1:  # no byte-by-byte gather left but the panel's partial vectors
        assert text.count("ld.shared.u8") < gather.count("ld.shared.u8")


@pytest.mark.parametrize("unit", [1, 4, 16])
@pytest.mark.parametrize("row_threads", [32, 256])
def test_panel_run_writer_compiles_to_straight_vector_loops(monkeypatch, unit, row_threads):
    """lane-panels' run writer (lanes of 2 KiB and more): the chain kernel's realigning loops, 128-bit
    shared loads and global stores, 32-bit shared addresses (``ld.shared`` on ``%r``), no local memory."""
    from rotate._backends.cuda.kernels import panels

    monkeypatch.setattr(dispatcher, "get_current_device", lambda: _H200())
    kernel = panels.panel_kernel(unit, 256, row_threads)
    text, _ = cuda.compile_ptx(kernel.py_func, (types.int64,) * 11, cc=(9, 0), launch_bounds=256)
    assert "st.global.v4.u32" in text and re.search(r"ld\.shared\.v4\.u32 \{[^}]*\}, \[%r\d+\]", text)
    assert text.count("shf.r.clamp.b32") >= 16  # four funnel shifts in each of the four shifted loops
    assert "ld.local" not in text and "st.local" not in text


@pytest.mark.parametrize("slots,min_blocks,threads,group",
                         [(2, 0, 256, 32), (2, 0, 128, 32), (3, 0, 256, 32), (8, 0, 256, 32), (2, 3, 256, 32),
                          (2, 0, 256, 16), (2, 0, 256, 8), (3, 0, 128, 8), (2, 0, 128, 4)])
def test_warp_lane_kernel_syncs_warps_only(monkeypatch, slots, min_blocks, threads, group):
    """lane-panels' warps variant: the run writer's loops, a warp barrier (``bar.warp.sync``) and no
    block barrier, ``cp.async`` ring waits by its slot count, no local memory (blocks of eight and four
    warps; also under a launch bound of three blocks an SM; a lane a warp, a half or a quarter warp)."""
    from rotate._backends.cuda.kernels import panels

    monkeypatch.setattr(dispatcher, "get_current_device", lambda: _H200())
    kernel = panels.warp_lane_kernel(threads, slots, min_blocks, group)
    bounds = (threads, min_blocks) if min_blocks else threads
    text, _ = cuda.compile_ptx(kernel.py_func, (types.int64,) * 9, cc=(9, 0), launch_bounds=bounds)
    assert "bar.warp.sync" in text and "bar.sync" not in text and "barrier.sync" not in text
    assert f"cp.async.wait_group {slots - 1};" in text and "cp.async.cg.shared.global" in text
    assert "st.global.v4.u32" in text and text.count("shf.r.clamp.b32") >= 16
    assert "ld.local" not in text and "st.local" not in text


@pytest.mark.parametrize("unit", [1, 8, 16])
def test_cycle_run_writer_compiles_without_local_memory(monkeypatch, unit):
    """row-cycles' three-row kernel writing rows as runs, at the widest block the planner gives it (512)."""
    from rotate._backends.cuda.kernels import cycles

    monkeypatch.setattr(dispatcher, "get_current_device", lambda: _H200())
    threads = gpu_device.policy().run_cycle_threads
    kernel = cycles.cycle_kernel(unit, threads, True)
    text, _ = cuda.compile_ptx(kernel.py_func, (types.int64,) * 21, cc=(9, 0), launch_bounds=threads)
    assert "st.global.v4.u32" in text and text.count("shf.r.clamp.b32") >= 16
    assert "ld.acquire.gpu.global.u32" in text and "atom.global.add.u64" in text
    assert "ld.local" not in text and "st.local" not in text


@pytest.mark.parametrize("vecs", [1, 4])
@pytest.mark.parametrize("group", [32, 256])
def test_half_swap_kernel_loads_both_runs_before_storing(monkeypatch, vecs, group):
    """half-swaps: a pass's 128-bit loads of both runs all come before its first store (the loads are in
    flight together), no shared memory, no local memory."""
    from rotate._backends.cuda.kernels import half_swaps

    monkeypatch.setattr(dispatcher, "get_current_device", lambda: _H200())
    kernel = half_swaps.half_swap_kernel(256, vecs, group)
    text, _ = cuda.compile_ptx(kernel.py_func, (types.int64,) * 15, cc=(9, 0), launch_bounds=256)
    loads = [m.start() for m in re.finditer(r"ld\.global\.cg\.v4\.u32", text)]
    stores = [m.start() for m in re.finditer(r"st\.global\.v4\.u32", text)]
    assert len(loads) == len(stores) and len(loads) % (2 * vecs) == 0  # LLVM may unroll the pass loop
    assert loads[2 * vecs - 1] < stores[0]
    assert ".shared" not in text and "ld.local" not in text and "st.local" not in text


@pytest.mark.parametrize("vecs", [1, 4])
def test_row_strip_kernels_load_a_batch_before_the_barrier(monkeypatch, vecs):
    """row-strips: the save kernel is a 128-bit copy; the move kernel issues a batch's 128-bit loads
    (sources, and destinations the strip only partly covers) before its one barrier and every store
    after it, with no shared or local memory."""
    from rotate._backends.cuda.kernels import strips

    monkeypatch.setattr(dispatcher, "get_current_device", lambda: _H200())
    save, _ = cuda.compile_ptx(strips.strip_save_kernel(256).py_func, (types.int64,) * 10, cc=(9, 0),
                               launch_bounds=256)
    assert save.count("ld.global.cg.v4.u32") == 1 and save.count("st.global.v4.u32") == 1
    text, _ = cuda.compile_ptx(strips.strip_kernel(256, vecs).py_func, (types.int64,) * 12, cc=(9, 0),
                               launch_bounds=256)
    loads = [m.start() for m in re.finditer(r"ld\.global\.cg\.v4\.u32", text)]
    stores = [m.start() for m in re.finditer(r"st\.global\.v4\.u32", text)]
    barriers = [m.start() for m in re.finditer(r"bar\.sync", text)]
    assert len(barriers) == 1 and len(stores) == vecs and len(loads) >= 2 * vecs
    assert max(loads) < barriers[0] < min(stores)
    assert ".shared" not in text and "ld.local" not in text and "st.local" not in text


@pytest.mark.parametrize("panel_bytes", [16 * 1024, 64])
def test_swap_lane_kernel_compiles_to_128_bit_copies_and_stores(monkeypatch, panel_bytes):
    """roll_rows' long lanes (lane-swaps): 128-bit copies in, realigned 128-bit stores out, no local
    memory (also for the tests' 64-byte panels)."""
    from rotate._backends.cuda.kernels import lane_swaps, panels

    monkeypatch.setattr(dispatcher, "get_current_device", lambda: _H200())
    kernel = lane_swaps.swap_kernel(panels.THREADS, panel_bytes)
    sig = (types.int64,) * 9  # what schedules.lane_swaps.run_lane_swaps passes
    text, _ = cuda.compile_ptx(kernel.py_func, sig, cc=(9, 0), launch_bounds=panels.THREADS)
    assert len(re.findall(r"cp\.async\.cg\.shared\.global \[\w+\], \[%rd\d+\], 16;", text)) >= 1
    assert "cp.async.wait_group 2;" in text and "cp.async.wait_group 1;" in text  # a swap pair, a move panel
    assert text.count("st.global.v4.u32") >= 1 and text.count("ld.shared.v4.u32") >= 2


@pytest.mark.parametrize("buffers,tile_bytes,panel_bytes", [(4, 16 * 1024, 16 * 1024), (3, 64, 64), (2, 64, 64)])
def test_walk_lane_kernel_compiles(monkeypatch, buffers, tile_bytes, panel_bytes):
    """roll_rows' lane walks: 128-bit copies in (lane and scratch), realigned 128-bit stores out, a
    ``cp.async.wait_group`` for every look-ahead the ring allows, no local memory (also with the tests'
    64-byte tiles)."""
    from rotate._backends.cuda.kernels import panels, walks

    monkeypatch.setattr(dispatcher, "get_current_device", lambda: _H200())
    kernel = walks.walk_kernel(panels.THREADS, buffers, tile_bytes, 64, panel_bytes)
    sig = (types.int64,) * 13  # what schedules.lane_walks.run_lane_walks passes
    text, _ = cuda.compile_ptx(kernel.py_func, sig, cc=(9, 0), launch_bounds=panels.THREADS)
    assert len(re.findall(r"cp\.async\.cg\.shared\.global \[\w+\], \[%rd\d+\], 16;", text)) >= 1
    for pending in range(buffers):
        assert f"cp.async.wait_group {pending};" in text, pending
    assert text.count("st.global.v4.u32") >= 2 and text.count("ld.shared.v4.u32") >= 2
    assert "ld.local" not in text and "st.local" not in text


@pytest.mark.parametrize("ring", [2, 3, 4])
@pytest.mark.parametrize("threads", [128, 512])
def test_chunked_cycle_kernel_compiles(monkeypatch, ring, threads):
    """row-cycles' chunked variant (rows beyond three row buffers): 128-bit copies in and stores out, the
    realigning 128-bit shared loads, ``cp.async.wait_group`` with the ring's count (every older group
    covered), flag polls that cannot be hoisted, no local memory."""
    from rotate._backends.cuda.kernels import cycles

    monkeypatch.setattr(dispatcher, "get_current_device", lambda: _H200())
    kernel = cycles.cycle_stream_kernel(threads, ring)
    sig = (types.int64,) * 23  # what schedules.row_cycles._run_row_cycles_chunked passes
    text, _ = cuda.compile_ptx(kernel.py_func, sig, cc=(9, 0), launch_bounds=threads)
    assert re.search(r"cp\.async\.cg\.shared\.global \[\w+\], \[%rd\d+\], 16;", text)
    assert f"cp.async.wait_group {ring - 1};" in text and "cp.async.commit_group" in text
    assert "st.global.v4.u32" in text and "ld.shared.v4.u32" in text and "ld.global.cg.v4.u32" in text
    assert "ld.acquire.gpu.global.u32" in text and "st.relaxed.gpu.global.u32" in text
    assert "atom.global.add.u64" in text
    assert "ld.local" not in text and "st.local" not in text


def test_walk_pre_bytes_compiles_for_the_device(monkeypatch):
    """The closed-form count of a long lane's pre-read bytes (``walks.walk_pre_bytes``) compiles for
    sm_90 as a device function, with no local memory: a block a lane counts both chain steps of a tile."""
    from rotate._schedules import walks as SW

    monkeypatch.setattr(dispatcher, "get_current_device", lambda: _H200())

    def kernel(lefts, n, tile, out):
        k = lefts[cuda.blockIdx.x]
        q = k // tile
        out[cuda.blockIdx.x] = min(SW.walk_pre_bytes(n, k, 0, tile, max(1, q)), SW.walk_pre_bytes(n, k, 0, tile, q + 1))

    array = types.int64[::1]
    text, _ = cuda.compile_ptx(kernel, (array, types.int64, types.int64, array), cc=(9, 0))
    assert "div.s64" in text or "rem.s64" in text  # the floor sums and chain positions divide
    assert "ld.local" not in text and "st.local" not in text


@pytest.mark.parametrize("word,unit", [(8, 8), (8, 1), (4, 2), (1, 1)])
@pytest.mark.parametrize("staged", [False, True])
def test_column_kernels_keep_their_loads_in_registers(monkeypatch, word, unit, staged):
    """column-panels (roll_rows along a strided axis): the words a thread loads ahead stay in registers (no
    local memory), rows move as ``word``-byte global loads and stores, the panel in shared memory unless
    staged."""
    from rotate._backends.cuda.kernels import columns

    monkeypatch.setattr(dispatcher, "get_current_device", lambda: _H200())
    kernel = (columns.staged_kernel if staged else columns.panel_kernel)(word, unit, 256, 4)
    wtype, utype = getattr(types, f"uint{8 * word}"), getattr(types, f"uint{8 * unit}")
    arrays = (wtype[::1],) + ((utype[::1],) if staged else ()) + (types.int64[::1],)
    text, _ = cuda.compile_ptx(kernel.py_func, arrays + (types.int64,) * (8 if staged else 7), cc=(9, 0),
                               launch_bounds=256)
    assert "ld.local" not in text and "st.local" not in text
    bits = 8 * word
    assert re.search(rf"ld\.global(\.nc)?\.(u|b){bits}\b", text) and re.search(rf"st\.global\.(u|b){bits}\b", text)
    if staged:  # the slot moves units: loaded and stored unit-wide
        assert re.search(rf"st\.global\.(u|b){8 * unit}\b", text) and re.search(rf"ld\.global\.(u|b){8 * unit}\b", text)
