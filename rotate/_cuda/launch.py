"""Running a plan on the GPU: raw addresses, the caller's stream, cached scratch, one launch.

The chain kernel takes only scalars (device addresses and integers), so a
call builds one tuple of integers and hands it to ``cuda.core``'s ``launch``
with the kernel compiled once per configuration: no numba device arrays, no
per-call typing or argument marshalling. Plans are cached (``rotate._api``),
and so are everything derived from them here (compiled kernel, device copy of
the pre-read table, launch configuration).
"""

from __future__ import annotations

import collections
import itertools
import threading
from typing import Any

import numpy as np
from numba import cuda

from .. import _compile_notice
from .. import _schedule as S
from . import _kernels, planner
from . import params as P
from ._memops import SIMULATED


def execute(target: Any, info, plan, stream: Any = None) -> None:
    """Run every step of ``plan`` on ``target`` (an object with __cuda_array_interface__).

    ``stream`` is normally the handle ``resolve_stream`` gave while validating.
    """
    handle = stream if type(stream) is int else resolve_stream(target, stream)
    for step in plan.steps:
        RUNNERS[type(step.params)](target, info, step, handle)


# --- streams ---------------------------------------------------------------

def stream_handle(stream: Any) -> int:
    """The raw CUDA stream handle of a stream object (``__cuda_stream__`` first) or an int."""
    if isinstance(stream, (int, np.integer)):
        return int(stream)
    export = getattr(stream, "__cuda_stream__", None)
    if export is not None:
        exported = export() if callable(export) else export
        return int(exported[1])
    for attribute in ("cuda_stream", "ptr", "handle"):  # torch, CuPy, numba streams of older versions
        handle = getattr(stream, attribute, None)
        handle = getattr(handle, "value", handle)
        if isinstance(handle, (int, np.integer)):
            return int(handle)
        if handle is None and attribute == "handle" and hasattr(stream, "handle"):
            return 0
    raise TypeError(
        f"stream must be a CUDA stream object (anything with __cuda_stream__: CuPy, PyTorch, "
        f"numba-cuda, cuda.core streams) or an int handle, got {type(stream).__name__}"
    )


def _current_stream_of(target: Any) -> int:
    """The current stream of the library ``target`` belongs to, as a handle.

    Libraries are recognised by the array's *type* among the modules already
    imported (no import happens here), never by parsing module names.
    """
    import sys

    torch = sys.modules.get("torch")
    if torch is not None and isinstance(target, torch.Tensor):
        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        if raw is not None:
            return int(raw(target.device.index if target.device.index is not None else torch.cuda.current_device()))
        return int(torch.cuda.current_stream(target.device).cuda_stream)
    cupy = sys.modules.get("cupy")
    if cupy is not None and isinstance(target, cupy.ndarray):
        return int(cupy.cuda.get_current_stream().ptr)
    own = getattr(target, "stream", None)  # numba device arrays carry theirs
    if own is not None and not isinstance(own, (int, np.integer)):
        return stream_handle(own)
    cai_stream = target.__cuda_array_interface__.get("stream")
    if cai_stream and cai_stream > 2:  # CAI v3: 1 legacy default, 2 per-thread default
        return int(cai_stream)
    return 0


def resolve_stream(target: Any, stream: Any) -> int:
    """The handle to launch on: the caller's stream, or the array library's current one."""
    if SIMULATED:
        return 0
    if stream is not None:
        return stream_handle(stream)
    return _current_stream_of(target)


class _StreamRef:
    """A handle in the ``__cuda_stream__`` protocol, for a ``cuda.core`` without ``Stream.from_handle``."""

    __slots__ = ("handle",)

    def __init__(self, handle: int):
        self.handle = handle

    def __cuda_stream__(self):
        return (0, self.handle)


#: ``cuda.core`` Stream objects wrapping the raw handles launches run on (not
#: owning them). ``launch`` converts a foreign ``__cuda_stream__`` object on
#: every call (7.1 us a launch, and deprecated); a cached Stream launches in
#: 5.0 us (docs/results/launch-floor-h200.json).
_stream_refs: dict = {}
MAX_STREAM_REFS = 64


def core_stream(handle: int):
    """The cached ``cuda.core`` Stream for a raw stream handle."""
    stream = _stream_refs.get(handle)
    if stream is None:
        try:
            from cuda.core import Stream

            stream = Stream.from_handle(handle)
        except (ImportError, AttributeError):
            stream = _StreamRef(handle)
        if len(_stream_refs) >= MAX_STREAM_REFS:
            _stream_refs.clear()
        _stream_refs[handle] = stream
    return stream


def _numba_stream(handle: int):
    return cuda.external_stream(handle) if handle else cuda.default_stream()


# --- scratch ---------------------------------------------------------------

class Scratch:
    """Flags, ticket counters and pre-read buffer of one (device, stream), reused across calls.

    Flags hold the epoch of the launch that set them, so a new launch (new
    epoch) starts with every flag "not done" without a memset. The counters
    are rewound to zero by the last block of each launch. Launches on one
    stream run in order, so they may share it; growth takes a lock, a call
    that fits does not.

    A buffer replaced by a larger one is *retired*, not dropped: it is kept
    until an event recorded on the stream at replacement has completed, so
    every launch queued before then (an earlier step of the same plan, or an
    earlier call) has finished with it. numba's own memory manager frees
    synchronously, but an external one (an RMM or CuPy pool) hands freed
    memory out again at once.
    """

    def __init__(self, handle: int = 0):
        self.flags = None
        self.pre = None
        self.counters = None
        self._epochs = itertools.count(1)
        self._grow = threading.Lock()
        self.addresses = (0, 0, 0)
        self._handle = handle
        self._retired = []  # (event, buffers) of replaced buffers, until the stream passes the event
        # What fits without growing, as plain ints: a device array's .size is a
        # Python property, and reserve runs on every call.
        self._flag_capacity = -1
        self._pre_capacity = -1

    def reserve(self, flag_count: int, pre_bytes: int):
        if flag_count > self._flag_capacity or pre_bytes > self._pre_capacity:
            with self._grow:
                if self.counters is None:
                    self.counters = cuda.to_device(np.zeros(4, np.uint64))
                if self.flags is None or self.flags.size < flag_count:
                    self._retire(self.flags)
                    self.flags = cuda.to_device(np.zeros(max(flag_count, 1024), np.uint32))
                    self._epochs = itertools.count(1)
                if self.pre is None or self.pre.size < pre_bytes:
                    self._retire(self.pre)
                    self.pre = cuda.device_array(max(pre_bytes, 16), np.uint8)
                self._remember_addresses()
        epoch = next(self._epochs)
        if epoch >= 0xFFFFFFFF:  # wrapped: old flags could alias new epochs
            with self._grow:
                self._retire(self.flags)
                self.flags = cuda.to_device(np.zeros(self.flags.size, np.uint32))
                self._epochs = itertools.count(2)
                self._remember_addresses()
            epoch = 1
        return self.flags, self.pre, self.counters, epoch

    def _retire(self, buffer):
        """Keep ``buffer`` (being replaced) until the launches queued on this stream so far have finished;
        forget the retired buffers whose launches have."""
        # The simulator runs each launch to its end: nothing to keep there.
        self._retired = _held_until_passed(self._retired, self._handle, None if SIMULATED else buffer)

    def _remember_addresses(self):
        if not SIMULATED:  # what a launch passes, read once per allocation
            self.addresses = (_address(self.pre), _address(self.flags), _address(self.counters))
        self._flag_capacity = int(self.flags.size)
        self._pre_capacity = int(self.pre.size)

    @property
    def nbytes(self) -> int:
        held = [self.flags, self.pre, self.counters] + [kept for _, kept in self._retired]
        return sum(int(a.size * a.dtype.itemsize) for a in held if a is not None)


#: Streams whose scratch is kept; the least recently used beyond this is let go once its stream has
#: finished the launches queued on it (``_evict``).
MAX_CACHED_STREAMS = 8
_scratch: "collections.OrderedDict" = collections.OrderedDict()
_scratch_lock = threading.Lock()
_evicted: list = []  # (event, Scratch) of streams evicted from the cache, until each stream passes its event


def scratch_for(handle: int, device: int = None) -> Scratch:
    key = (planner._device_id() if device is None else device, handle)
    entry = _scratch.get(key)
    if entry is None:
        with _scratch_lock:
            entry = _scratch.get(key)
            if entry is None:
                entry = _scratch[key] = Scratch(handle)
                while len(_scratch) > MAX_CACHED_STREAMS:
                    _evict(_scratch.popitem(last=False)[1])
    return entry


def _evict(entry: Scratch) -> None:
    """Let go of an evicted stream's scratch only once that stream has finished the launches queued on it
    (as ``Scratch._retire`` does for a replaced buffer: an external memory pool would hand the memory to
    another stream's allocation at once, under a kernel still running). Forget the evicted scratch whose
    streams have passed their events. Caller holds ``_scratch_lock``."""
    global _evicted
    if SIMULATED or entry.counters is None:  # the simulator runs each launch to its end; nothing allocated
        _evicted = _held_until_passed(_evicted, entry._handle, None)
        return
    try:
        _evicted = _held_until_passed(_evicted, entry._handle, entry)
    except Exception:  # the stream was destroyed (its handle is stale): wait for every launch instead
        cuda.synchronize()


def _held_until_passed(held: list, handle: int, kept) -> list:
    """``held`` (``(event, object)`` pairs) without those whose events have completed, plus ``kept`` (unless
    None) with an event recorded on stream ``handle`` now: kept until that stream passes it."""
    held = [(event, old) for event, old in held if not event.query()]
    if kept is not None:
        event = cuda.event(timing=False)
        event.record(_numba_stream(handle))
        held.append((event, kept))
    return held


def release_scratch() -> int:
    """Free every cached scratch buffer and device table; returns the bytes released.

    Call it after a stream is destroyed, or to give memory back; the next
    roll allocates again. Synchronises the device first, so no running
    kernel still uses them.
    """
    if not SIMULATED and cuda.is_available():
        cuda.synchronize()
    with _scratch_lock:
        released = sum(entry.nbytes for entry in _scratch.values()) + sum(kept.nbytes for _, kept in _evicted)
        _scratch.clear()
        _evicted.clear()
        _device_tables.clear()
        _prepared.clear()  # they hold the freed tables' addresses
        _stream_refs.clear()  # a destroyed stream's handle may come back as another stream's
        _shift_scalars.clear()
    return released


# --- the chain kernel --------------------------------------------------------

_device_tables: "collections.OrderedDict" = collections.OrderedDict()
MAX_DEVICE_TABLES = 64


def _device_table_entry(table: np.ndarray):
    key = (planner._device_id(), id(table))
    entry = _device_tables.get(key)
    if entry is None or entry[0] is not table:
        device = cuda.to_device(table)
        entry = _device_tables[key] = (table, device, 0 if SIMULATED else _address(device))
        while len(_device_tables) > MAX_DEVICE_TABLES:
            _device_tables.popitem(last=False)
            _prepared.clear()  # prepared launches may hold the evicted table's address
    return entry


def _device_table(table: np.ndarray):
    return _device_table_entry(table)[1]


def _device_table_address(table: np.ndarray) -> int:
    return _device_table_entry(table)[2]


def _chain_config(p: P.ChainParams):
    """``chain_kernel``'s arguments from a chain step's params (``block`` counts the control warps)."""
    control_warp, pipeline = bool(p.control_warp), bool(p.pipeline)
    return (p.tile_bytes, p.block - _kernels.control_threads(control_warp, pipeline), p.buffers, p.min_blocks,
            control_warp, p.decode == "direct", pipeline, bool(p.bulk_store), bool(p.co_resident))


def _int64_cufunc(kernel, args: int):
    """``kernel`` compiled for ``args`` int64 parameters and loaded in the current device's context (numba
    loads a module per device, so callers cache the result per device)."""
    with _compile_notice.gpu_compiling(kernel):  # numba-cuda fires no compile event: say so here
        return kernel.compile("void(" + ", ".join(["int64"] * args) + ")")._codelibrary.get_cufunc()


@_kernels.functools.lru_cache(maxsize=None)
def _compiled_chain(tile_bytes: int, threads: int, buffers: int, min_blocks: int, control_warp: bool = False,
                    direct_decode: bool = False, pipeline: bool = False, bulk_stores: bool = False,
                    one_lane: bool = False, device: int = 0):
    """The chain kernel compiled for all-int64 arguments, and its cuda.core handle in ``device``'s context
    (numba loads the module per device: a handle from another device's context would not launch here)."""
    kernel = _kernels.chain_kernel(tile_bytes, threads, buffers, min_blocks, control_warp, direct_decode, pipeline,
                                   bulk_stores, one_lane)
    if SIMULATED:
        return kernel, None
    return kernel, _int64_cufunc(kernel, 15).kernel


def _address(array) -> int:
    """A device array's address (an int is one already: ``roll_rows``' quick path passes the shifts' address)."""
    return array if type(array) is int else int(array.__cuda_array_interface__["data"][0])


def run_chain(pointer: int, target: Any, step, handle: int) -> None:
    """Launch one chain step on the rows at device address ``pointer``."""
    p = step.params
    if pointer % 16 != p.head0:  # the plan table's tile grid is the address's: never run it elsewhere
        raise AssertionError(f"internal error: a chain plan for offset {p.head0} from a 16-byte boundary "
                             f"was given an array at offset {pointer % 16}")
    device = planner._device_id()
    entry = scratch_for(handle, device)
    flags, pre, counters, epoch = entry.reserve(2 * step.rows * p.m_max, step.rows * p.scratch_row)
    if SIMULATED:
        kernel, _ = _compiled_chain(*_chain_config(p))
        data = _sim_bytes(target, step.rows * step.seg_bytes)
        kernel[p.grid, p.block](data, pre, flags, counters, _device_table(p.table),
                                *_chain_scalars(step, pointer), epoch)
        return
    prepared = _prepared.get((id(step), device, handle))
    if prepared is None or prepared[0] is not step:
        prepared = _prepare_launch(step, device, handle)
    _, launch, ref, config, kernel, table_address, head_args, tail_args = prepared
    # Plain ints: cuda.core passes them as 64-bit values, every parameter here is int64.
    launch(ref, config, kernel, pointer, *entry.addresses, table_address, *head_args, pointer % 16,
           *tail_args, epoch)


def _chain_scalars(step, pointer: int):
    p = step.params
    return (step.rows, step.seg_bytes, step.left_bytes, pointer % 16, p.lane_steps, p.lanes_row, p.pre_row,
            p.scratch_row, p.heads)


#: What a launch of a cached plan needs besides the data pointer and the epoch,
#: built once per (step, device, stream): a call then only reads a dict.
_prepared: dict = {}


def _prepare_launch(step, device: int, handle: int):
    from cuda.core import LaunchConfig, launch

    p = step.params
    _, cu_kernel = _compiled_chain(*_chain_config(p), device=device)
    ref = core_stream(handle)
    if p.co_resident:
        if p.grid != p.lanes:
            raise AssertionError(f"internal error: a co-resident chain plan has {p.lanes} lanes and a grid of "
                                 f"{p.grid} blocks; it needs one block a lane")
        check_co_resident(cu_kernel, p, device)
    # A co-resident plan's blocks wait on each other's later lanes: a cooperative launch makes the driver
    # start them all at once or refuse the launch (before any byte moves), never start part of them.
    config = LaunchConfig(grid=p.grid, block=p.block, is_cooperative=bool(p.co_resident))
    prepared = (step, launch, ref, config, cu_kernel, _device_table_address(p.table),
                (step.rows, step.seg_bytes, step.left_bytes),
                (p.lane_steps, p.lanes_row, p.pre_row, p.scratch_row, p.heads))
    if len(_prepared) > 256:
        _prepared.clear()
    _prepared[(id(step), device, handle)] = prepared
    return prepared




def check_co_resident(cu_kernel, p: P.ChainParams, device: int) -> None:
    """Raise before launching if the driver would not hold every block of a co-resident plan at once.

    The planner counts blocks from its model of the kernel's shared memory
    and registers (``planner.blocks_per_sm``); the driver's occupancy of the
    compiled kernel is what a cooperative launch checks.
    """
    sms, _ = planner.device_shape(device)
    fit = cu_kernel.occupancy.max_active_blocks_per_multiprocessor(p.block, 0) * sms
    if p.grid > fit:
        raise RuntimeError(
            f"internal error: a co-resident chain plan needs {p.grid} blocks resident at once, but the "
            f"compiled kernel fits {fit} on this GPU; plan with rotate's GPU setting co_resident=False "
            f"(rotate._tuning.cuda.override(co_resident=False)) and report this")


def _sim_bytes(target, nbytes: int, offset: int = 0):
    from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray

    host = target._ary.reshape(-1, order="A").view(np.uint8)[offset:offset + nbytes]
    return FakeCUDAArray(host)


# --- fallbacks -------------------------------------------------------------

_views: dict = {}


def _byte_view(target, info, offset: int, nbytes: int, typestr: str = "|u1", itemsize: int = 1):
    """A 1-D device view of ``nbytes`` bytes of the array from ``offset``, as ``typestr`` words."""
    if SIMULATED:
        host = target._ary.reshape(-1, order="A").view(np.uint8)[offset:offset + nbytes]
        from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray

        return FakeCUDAArray(host.view(np.dtype(typestr)))
    desc = {
        "shape": (nbytes // itemsize,),
        "typestr": typestr,
        "data": (info.pointer + offset, False),
        "version": 3,
        "strides": None,
    }
    key = (info.pointer + offset, nbytes, typestr)
    view = _views.get(key)
    if view is None:
        if len(_views) > 256:
            _views.clear()
        view = _views[key] = cuda.from_cuda_array_interface(desc, owner=None, sync=False)
    return view


def _launch(kernel, grid, block, handle, args):
    if not SIMULATED and not kernel.overloads:  # the first launch compiles it
        with _compile_notice.gpu_compiling(kernel):
            kernel[grid, block, _numba_stream(handle)](*args)
        return
    kernel[grid, block, _numba_stream(handle) if not SIMULATED else 0](*args)


def _run_block_swap(target, info, step, handle) -> None:
    p = step.params
    kernel = _kernels.swap_kernel(p.tile_bytes, p.block)
    lo, sub_n, sub_k = p.final
    for row in range(step.rows):
        offset = row * step.seg_bytes
        data = _byte_view(target, info, offset, step.seg_bytes)
        head0 = np.int64((info.pointer + offset) % 16)
        for a, b, m in p.swaps:
            tiles = S.ceil_div(m + 15, p.tile_bytes)
            _launch(kernel, max(1, min(tiles, p.grid)), p.block, handle, (
                data, np.int64(1), np.int64(step.seg_bytes), np.int64(a), np.int64(b), np.int64(m), head0))
        if sub_k:
            start = info.pointer + offset + lo
            final = p.final_steps[start % 16]
            run_chain(start, _SimSlice(target, offset + lo, sub_n) if SIMULATED else None, final, handle)


class _SimSlice:
    """Bytes ``[offset, offset + nbytes)`` of a simulated array, as ``run_chain`` reads them."""

    def __init__(self, target, offset, nbytes):
        self._ary = target._ary.reshape(-1, order="A").view(np.uint8)[offset:offset + nbytes]


def _run_reversal(target, info, step, handle) -> None:
    word = step.word_bytes
    words = _byte_view(target, info, 0, step.rows * step.seg_bytes, f"<u{word}", word)
    n, k = step.seg_bytes // word, step.left_bytes // word
    kernel = _kernels.reverse_kernel(word)
    grid, block = step.params.grid, step.params.block
    for lo, hi in ((0, k), (k, n), (0, n)):
        if hi - lo > 1:
            _launch(kernel, grid, block, handle,
                    (words, np.int64(step.rows), np.int64(n), np.int64(lo), np.int64(hi)))


#: The runner of each schedule's params type: ``run(target, info, step, handle)``.
RUNNERS = {
    P.ChainParams: lambda target, info, step, handle: run_chain(info.pointer, target, step, handle),
    P.BlockSwapParams: _run_block_swap,
    P.ReversalParams: _run_reversal,
}


# --- per-lane shifts and one-pass multi-axis rolls -------------------------

def _set_dynamic_smem(cufunc) -> None:
    """Let the kernel take all the dynamic shared memory a block may opt in to, less its static part
    (above 48 KiB needs the opt-in; asking for more than the device allows is an error)."""
    from numba.cuda.cudadrv.driver import binding, driver

    optin = int(getattr(cufunc.device, "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN", 48 * 1024))
    attr = binding.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    driver.cuKernelSetAttribute(attr, optin - int(cufunc.attrs.shared), cufunc.handle, cufunc.device.id)


@_kernels.functools.lru_cache(maxsize=None)
def _compiled_lanes(which: str, unit: int, threads: int, args: int, device: int, panel_bytes: int = 0,
                    row_threads: int = 0, runs: bool = False, group: int = 32, min_blocks: int = 1,
                    windows: bool = False):
    """A kernel of rotate/_cuda/_lanes.py compiled for int64 arguments, its cuda.core handle,
    allowed the most dynamic shared memory a block can have (on ``device``). ``which``: "panel",
    "cycle" (built per ``unit``) or "swap" (per ``panel_bytes``)."""
    from . import _lanes

    if which == "swap":
        kernel = _lanes.swap_kernel(threads, panel_bytes)
    elif which == "walk":  # row_threads: buffers; unit: tile bytes; group: most tiles; runs: a trace address
        kernel = _lanes.walk_kernel(threads, row_threads, unit, group, panel_bytes, int(runs), min_blocks)
    elif which == "warps":  # panel_bytes: the slots a group has; row_threads: the launch bound's blocks an SM
        kernel = _lanes.warp_lane_kernel(threads, panel_bytes, row_threads, group)
    elif which == "panel":
        kernel = _lanes.panel_kernel(unit, threads, row_threads, windows)
    else:
        kernel = _lanes.cycle_kernel(unit, threads, runs)
    if SIMULATED:
        return kernel, None
    cufunc = _int64_cufunc(kernel, args)
    _set_dynamic_smem(cufunc)
    return kernel, cufunc.kernel


def _launch_core(handle: int, grid: int, block: int, smem: int, kernel, *args) -> None:
    from cuda.core import LaunchConfig, launch

    launch(core_stream(handle), LaunchConfig(grid=grid, block=block, shmem_size=smem), kernel, *args)


def run_row_cycles(target: Any, info, step, handle: int) -> None:
    """Launch one ``row-cycles`` step (a multi-axis roll in one pass)."""
    p = step.params
    if info.pointer % 16 != p.head0:
        raise AssertionError("internal error: a row-cycles plan run on an array at another 16-byte offset")
    device = planner._device_id()
    nseg = p.segments
    flags, pre, counters, epoch = scratch_for(handle, device).reserve(nseg, p.pre_bytes)
    if isinstance(p, P.RowCyclesChunkedParams):
        _run_row_cycles_chunked(target, info, step, handle, device, pre, flags, counters, epoch)
        return
    unit = p.unit_bytes
    scalars = (nseg, step.seg_bytes, step.seg_bytes // unit, p.row_shift_bytes // unit, p.head0, p.slot,
               p.buf_vecs, *p.lead, *p.lead_shifts, epoch)
    _launch_cycles(target, info, step, handle, device, (pre, flags, counters),
                   _compiled_lanes("cycle", unit, p.block, 21, device, runs=p.writer == "runs"), scalars)


def _launch_cycles(target: Any, info, step, handle: int, device: int, scratch: tuple, compiled: tuple,
                   scalars: tuple) -> None:
    """Launch a ``row-cycles`` kernel (either variant): data, scratch and the segment table, then ``scalars``."""
    p = step.params
    kernel, cu_kernel = compiled
    if SIMULATED:
        data = _sim_bytes(target, step.rows * step.seg_bytes)
        kernel[p.grid, p.block, 0, p.smem_bytes](data, *scratch, _device_table(p.table), *scalars)
        return
    pre_address, flags_address, counters_address = scratch_for(handle, device).addresses
    _launch_core(handle, p.grid, p.block, p.smem_bytes, cu_kernel, info.pointer, pre_address, flags_address,
                 counters_address, _device_table_address(p.table), *scalars)


@_kernels.functools.lru_cache(maxsize=None)
def _compiled_cycle_stream(threads: int, ring: int, device: int):
    """``_lanes.cycle_stream_kernel`` compiled for int64 arguments (23), its cuda.core handle, allowed the
    most dynamic shared memory a block can have (on ``device``)."""
    from . import _lanes

    kernel = _lanes.cycle_stream_kernel(threads, ring)
    if SIMULATED:
        return kernel, None
    cufunc = _int64_cufunc(kernel, 23)
    _set_dynamic_smem(cufunc)
    return kernel, cufunc.kernel


def _run_row_cycles_chunked(target: Any, info, step, handle: int, device: int, pre, flags, counters,
                            epoch: int) -> None:
    """Launch a ``row-cycles`` step of the ``chunked`` variant (rows too long for three row buffers)."""
    p = step.params
    scalars = (p.segments, step.seg_bytes, p.row_shift_bytes, p.head0, p.slot, p.saved_vecs, p.chunk_bytes,
               p.ring_vecs, p.chunks_per_row, *p.lead, *p.lead_shifts, epoch)
    _launch_cycles(target, info, step, handle, device, (pre, flags, counters),
                   _compiled_cycle_stream(p.block, p.ring, device), scalars)


def run_lane_panels(target: Any, info, step, handle: int, shifts: Any, shift_stride: int, p: Any = None) -> None:
    """Launch one ``lane-panels`` step: lane ``i`` rolled by ``shifts[i * shift_stride]`` (int64, on the device).
    ``p``: the lane-panels params (a ``row-panels`` step's ``params.lanes``), else the step's."""
    p = step.params if p is None else p
    if info.pointer % 16 != p.head0:
        raise AssertionError("internal error: a lane-panels plan run on an array at another 16-byte offset")
    if isinstance(p, P.LaneWarpsParams):
        _run_lane_warps(target, info, step, p, handle, shifts, shift_stride)
        return
    unit = p.unit_bytes
    scalars = (step.rows, step.seg_bytes, p.n, step.word_bytes // unit, shift_stride, p.panel_rows, p.head0,
               p.buf_vecs, p.buffers)
    kernel, cu_kernel = _compiled_lanes("panel", unit, p.block, 11, planner._device_id(), row_threads=p.row_threads,
                                        windows=p.writer == "windows")
    if SIMULATED:
        data = _sim_bytes(target, step.rows * step.seg_bytes)
        flat = getattr(shifts, "_ary", shifts).reshape(-1)  # a 0-d array of one shift too
        kernel[p.grid, p.block, 0, p.smem_bytes](data, flat, *scalars)
        return
    _launch_core(handle, p.grid, p.block, p.smem_bytes, cu_kernel, info.pointer, _address(shifts), *scalars)


def _run_lane_warps(target: Any, info, step, p: P.LaneWarpsParams, handle: int, shifts: Any,
                    shift_stride: int) -> None:
    """Launch a ``lane-panels`` step of the ``warps`` variant (``_lanes.warp_lane_kernel``)."""
    scalars = (step.rows, step.seg_bytes, p.n, step.word_bytes, shift_stride, p.head0, p.slot_vecs)
    kernel, cu_kernel = _compiled_lanes("warps", 1, p.block, 9, planner._device_id(), p.slots, p.min_blocks,
                                        group=p.lane_threads)
    if SIMULATED:
        data = _sim_bytes(target, step.rows * step.seg_bytes)
        flat = getattr(shifts, "_ary", shifts).reshape(-1)
        kernel[p.grid, p.block, 0, p.smem_bytes](data, flat, *scalars)
        return
    _launch_core(handle, p.grid, p.block, p.smem_bytes, cu_kernel, info.pointer, _address(shifts), *scalars)


def run_lane_swaps(target: Any, info, step, handle: int, shifts: Any, shift_stride: int, p: Any = None) -> None:
    """Launch one ``lane-swaps`` step: lane ``i`` rolled by ``shifts[i * shift_stride]`` (int64, on the
    device), a block per lane (``p``: a ``row-swaps`` step's ``params.lanes``, else the step's)."""
    p = step.params if p is None else p
    if info.pointer % 16 != p.head0:
        raise AssertionError("internal error: a lane-swaps plan run on an array at another 16-byte offset")
    scalars = (step.rows, step.seg_bytes, p.n, step.word_bytes, shift_stride, p.head0, p.save_bytes)
    kernel, cu_kernel = _compiled_lanes("swap", 1, p.block, 9, planner._device_id(), p.panel_bytes)
    if SIMULATED:
        data = _sim_bytes(target, step.rows * step.seg_bytes)
        flat = getattr(shifts, "_ary", shifts).reshape(-1)
        kernel[p.grid, p.block, 0, p.smem_bytes](data, flat, *scalars)
        return
    _launch_core(handle, p.grid, p.block, p.smem_bytes, cu_kernel, info.pointer, _address(shifts), *scalars)


def run_lane_walks(target: Any, info, step, handle: int, shifts: Any, shift_stride: int, p: Any = None) -> None:
    """Launch one ``lane-walks`` step: lane ``i`` rolled by ``shifts[i * shift_stride]`` (int64, on the
    device), lanes by ticket, each block with its share of scratch and the launch's pool after them
    (``p``: a ``row-walks`` step's ``params.lanes``, else the step's)."""
    p = step.params if p is None else p
    if info.pointer % 16 != p.head0:
        raise AssertionError("internal error: a lane-walks plan run on an array at another 16-byte offset")
    device = planner._device_id()
    entry = scratch_for(handle, device)
    _, pre, counters, _ = entry.reserve(0, step.scratch_bytes)
    scalars = (step.rows, step.seg_bytes, p.n, step.word_bytes, shift_stride, p.head0, p.share_bytes, p.pool_bytes,
               p.save_bytes)
    kernel, cu_kernel = _compiled_lanes("walk", p.tile_bytes[1], p.block, 13, device, p.panel_bytes, p.buffers,
                                        runs=planner._t().walk_trace, group=p.max_tiles, min_blocks=p.min_blocks)
    if SIMULATED:
        data = _sim_bytes(target, step.rows * step.seg_bytes)
        flat = getattr(shifts, "_ary", shifts).reshape(-1)
        kernel[p.grid, p.block, 0, p.smem_bytes](data, flat, pre, counters, *scalars)
        return
    _launch_core(handle, p.grid, p.block, p.smem_bytes, cu_kernel, info.pointer, _address(shifts),
                 entry.addresses[0], entry.addresses[2], *scalars)


RUNNERS[P.RowCyclesParams] = RUNNERS[P.RowCyclesChunkedParams] = run_row_cycles


@_kernels.functools.lru_cache(maxsize=None)
def _compiled_half_swaps(threads: int, vecs: int, group: int, device: int = 0):
    """``_halfswap.half_swap_kernel`` compiled for int64 arguments (15) and its cuda.core handle in
    ``device``'s context."""
    from . import _halfswap

    kernel = _halfswap.half_swap_kernel(threads, vecs, group)
    if SIMULATED:
        return kernel, None
    return kernel, _int64_cufunc(kernel, 15).kernel


def run_half_swaps(target: Any, info, step, handle: int) -> None:
    """Launch one ``half-swaps`` step (every rolled axis by half its length: disjoint swaps of aligned runs)."""
    p = step.params
    if info.pointer % 16:
        raise AssertionError("internal error: a half-swaps plan run on an array that is not 16-byte aligned")
    scalars = (p.items, step.rows, p.chunk_bytes, p.chunks_per_half, step.seg_bytes, step.seg_bytes // 2,
               *p.lead, *p.lead_shifts)
    kernel, cu_kernel = _compiled_half_swaps(p.block, p.vecs, p.group, planner._device_id())
    if SIMULATED:
        kernel[p.grid, p.block](_sim_bytes(target, step.rows * step.seg_bytes), *scalars)
        return
    _launch_core(handle, p.grid, p.block, 0, cu_kernel, info.pointer, *scalars)


RUNNERS[P.HalfSwapsParams] = run_half_swaps


@_kernels.functools.lru_cache(maxsize=None)
def _compiled_strips(threads: int, vecs: int, device: int):
    """``_strips``' save and move kernels compiled for int64 arguments (10 and 12), with their cuda.core
    handles in ``device``'s context (the key holds the device: a handle belongs to one context)."""
    from . import _strips

    save, move = _strips.strip_save_kernel(threads), _strips.strip_kernel(threads, vecs)
    if SIMULATED:
        return save, None, move, None
    return save, _int64_cufunc(save, 10).kernel, move, _int64_cufunc(move, 12).kernel


def run_row_strips(target: Any, info, step, handle: int) -> None:
    """Launch a ``row-strips`` step (after a flat pass, one strip of every row moved a row): the boundary
    rows to scratch, then the items."""
    p = step.params
    if info.pointer % 16 or p.pitch % 16:
        raise AssertionError("internal error: a row-strips plan run on rows that are not 16-byte aligned")
    device = planner._device_id()
    entry = scratch_for(handle, device)
    _, pre, _, _ = entry.reserve(0, step.scratch_bytes)
    lo, hi = p.strip
    head = (p.items, p.chunks, p.chunk_rows, p.rows, p.pitch, p.v_lo, p.vectors)
    up = int(p.up)
    save, cu_save, move, cu_move = _compiled_strips(p.block, p.vecs, device)
    save_grid = max(1, min(p.grid, S.ceil_div(p.items * p.vectors, p.block)))
    if SIMULATED:
        data = _sim_bytes(target, step.rows * p.rows * p.pitch)
        save[save_grid, p.block](data, pre, *head, up)
        move[p.grid, p.block](data, pre, *head, lo, hi, up)
        return
    pre_address = entry.addresses[0]
    _launch_core(handle, save_grid, p.block, 0, cu_save, info.pointer, pre_address, *head, up)
    _launch_core(handle, p.grid, p.block, 0, cu_move, info.pointer, pre_address, *head, lo, hi, up)


RUNNERS[P.RowStripsParams] = run_row_strips


_shift_scalars: collections.OrderedDict = collections.OrderedDict()


def _shift_scalar(device: int, value: int):
    """A one-element int64 device array holding ``value`` (the lane kernel reads shifts from memory),
    cached per (device, value): made once, with a synchronous copy."""
    key = (device, int(value))
    array = _shift_scalars.get(key)
    if array is None:
        array = _shift_scalars[key] = cuda.to_device(np.array([value], np.int64))
        while len(_shift_scalars) > 256:
            _shift_scalars.popitem(last=False)
    return array


def run_row_lanes(target: Any, info, step, handle: int) -> None:
    """A ``row-panels``, ``row-walks`` or ``row-swaps`` step: every row rolled by the same shift through the
    ``roll_rows`` kernel its params hold."""
    p = step.params
    LANE_RUNNERS[type(p.lanes)](target, info, step, handle, _shift_scalar(planner._device_id(), p.shift), 0,
                                p.lanes)


RUNNERS[P.RowLanesParams] = run_row_lanes


def pointer_device(pointer: int) -> int:
    """The ordinal of the device that holds ``pointer``."""
    from cuda.bindings import driver

    err, ordinal = driver.cuPointerGetAttribute(
        driver.CUpointer_attribute.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, pointer)
    if int(err) != 0:
        raise ValueError(f"address {pointer:#x} is not device memory CUDA knows (error {err})")
    return int(ordinal)


def run_lanes(target: Any, info, step, handle: int, host_shifts, device_shifts, stride: int) -> None:
    """Run a ``roll_rows`` step: ``lane-panels``, ``lane-swaps`` or ``lane-walks`` in one launch (shifts read
    on the device), or ``lane-chains``: the chain steps its plan holds, a launch per run of equal shifts."""
    run = LANE_RUNNERS.get(type(step.params))
    if run is not None:
        if device_shifts is None:
            if stride == 0:  # one shift for every lane (a repeating view): upload it once
                host_shifts = np.ascontiguousarray(host_shifts[:1])
            if SIMULATED:
                device_shifts = cuda.to_device(host_shifts)
            else:
                device_shifts = cuda.to_device(host_shifts, stream=_numba_stream(handle))
        run(target, info, step, handle, device_shifts, stride)
        return
    import dataclasses

    n = step.seg_bytes // step.word_bytes
    for lane, end, sub in step.params.runs:  # one chain launch per run of lanes with the same shift
        pointer = info.pointer + lane * step.seg_bytes
        lane_info = dataclasses.replace(info, shape=(end - lane, n), strides=(step.seg_bytes, step.word_bytes),
                                        pointer=pointer)
        lane_target = _SimSlice(target, lane * step.seg_bytes, (end - lane) * step.seg_bytes) if SIMULATED else target
        RUNNERS[type(sub.params)](lane_target, lane_info, sub, handle)


def run_column_panels(target: Any, info, step, handle: int, shifts: Any, shift_stride: int) -> None:
    """Launch one ``column-panels`` step: lane ``(o, i)`` (column ``i`` of block ``o``) rolled by
    ``shifts[(o * lanes_per_row + i) * shift_stride]`` (int64, on the device)."""
    p = step.params
    word = p.word_bytes
    total = step.rows * step.seg_bytes
    n = step.seg_bytes // step.word_bytes
    words = _byte_view(target, info, 0, total, f"<u{word}", word)
    flat = _flat_shifts(shifts, step.rows if shift_stride else 1)
    scalars = tuple(np.int64(v) for v in (shift_stride, p.outer, n, p.pitch // word, p.strip_bytes // word,
                                          p.lanes_per_row, step.word_bytes))
    device = planner._device_id()
    kernel = _compiled_columns(p.staged, word, p.unit_bytes, p.block, p.unroll, device)
    if p.staged:  # the slots hold units, lane by lane
        _, pre, _, _ = scratch_for(handle, device).reserve(0, step.scratch_bytes)
        args = (words, _typed(pre, step.scratch_bytes, p.unit_bytes), flat) + scalars + (np.int64(p.tile_rows),)
    else:
        args = (words, flat) + scalars
    kernel[p.grid, p.block, 0 if SIMULATED else _numba_stream(handle), p.smem_bytes](*args)


@_kernels.functools.lru_cache(maxsize=None)
def _compiled_columns(staged: bool, word: int, unit: int, threads: int, unroll: int, device: int):
    """A ``_columns`` kernel compiled for its arguments' types (so the first launch does not compile) and
    allowed the most dynamic shared memory a block can have on ``device``."""
    from . import _columns

    kernel = (_columns.staged_kernel if staged else _columns.panel_kernel)(word, unit, threads, unroll)
    if not SIMULATED:
        words, units = f"uint{8 * word}[::1]", f"uint{8 * unit}[::1]"
        signature = (f"void({words}, {units}, int64[::1], {', '.join(['int64'] * 8)})" if staged else
                     f"void({words}, int64[::1], {', '.join(['int64'] * 7)})")
        with _compile_notice.gpu_compiling(kernel):
            _set_dynamic_smem(kernel.compile(signature)._codelibrary.get_cufunc())
    return kernel


def _flat_shifts(shifts: Any, count: int):
    """The ``count`` shifts as the 1-D device array the kernel indexes, in memory order (F-ordered ones
    too; the quick path passes their address)."""
    if SIMULATED:
        return getattr(shifts, "_ary", shifts).reshape(-1, order="A")
    # Always a view of our own (sync=False): numba's dispatcher would import a CuPy array with sync=True and
    # wait on its stream, and device shifts are read on the device so the host never waits for them.
    key = (_address(shifts), count, "shifts")
    view = _views.get(key)
    if view is None:
        if len(_views) > 256:
            _views.clear()
        desc = {"shape": (count,), "typestr": "<i8", "data": (key[0], False), "version": 3, "strides": None}
        view = _views[key] = cuda.from_cuda_array_interface(desc, owner=None, sync=False)
    return view


def _typed(buffer, nbytes: int, word: int):
    """The first ``nbytes`` of a uint8 device buffer as ``word``-byte unsigned words."""
    dtype = np.dtype(f"<u{word}")
    if SIMULATED:
        from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray

        return FakeCUDAArray(buffer._ary[:nbytes].view(dtype))
    return buffer[:nbytes].view(dtype)


#: The runners of the ``roll_rows`` steps that read the shifts on the device, by params type (a
#: ``lane-chains`` step runs the chain steps its plan holds instead).
LANE_RUNNERS = {
    P.LanePanelsParams: run_lane_panels,
    P.LaneWarpsParams: run_lane_panels,
    P.LaneSwapsParams: run_lane_swaps,
    P.LaneWalksParams: run_lane_walks,
    P.ColumnPanelsParams: run_column_panels,
}
