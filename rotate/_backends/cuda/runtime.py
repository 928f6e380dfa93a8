"""What every GPU runner uses: the caller's stream, cached scratch, device tables and views, and
kernels compiled for int64 arguments and launched through ``cuda.core``.

Kernels take only scalars (device addresses and integers) where they can, so a call builds one tuple
of integers and launches a kernel compiled once per configuration: no per-call typing or argument
marshalling. Plans are cached (``rotate._api``), and so is everything derived from them here.
"""

from __future__ import annotations

import collections
import functools
import itertools
import threading
from typing import Any

import numpy as np
from numba import cuda

from ..._core import compile_notice as _compile_notice
from . import device as D
from .kernels.memops import SIMULATED


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
    key = (D._device_id() if device is None else device, handle)
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


_device_tables: "collections.OrderedDict" = collections.OrderedDict()


MAX_DEVICE_TABLES = 64


def _device_table_entry(table: np.ndarray):
    key = (D._device_id(), id(table))
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


def _int64_cufunc(kernel, args: int):
    """``kernel`` compiled for ``args`` int64 parameters and loaded in the current device's context (numba
    loads a module per device, so callers cache the result per device)."""
    with _compile_notice.gpu_compiling(kernel):  # numba-cuda fires no compile event: say so here
        return kernel.compile("void(" + ", ".join(["int64"] * args) + ")")._codelibrary.get_cufunc()


def _address(array) -> int:
    """A device array's address (an int is one already: ``roll_rows``' quick path passes the shifts' address)."""
    return array if type(array) is int else int(array.__cuda_array_interface__["data"][0])


def _sim_bytes(target, nbytes: int, offset: int = 0):
    from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray

    host = target._ary.reshape(-1, order="A").view(np.uint8)[offset:offset + nbytes]
    return FakeCUDAArray(host)


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


class _SimSlice:
    """Bytes ``[offset, offset + nbytes)`` of a simulated array, as ``run_chain`` reads them."""

    def __init__(self, target, offset, nbytes):
        self._ary = target._ary.reshape(-1, order="A").view(np.uint8)[offset:offset + nbytes]


def _set_dynamic_smem(cufunc) -> None:
    """Let the kernel take all the dynamic shared memory a block may opt in to, less its static part
    (above 48 KiB needs the opt-in; asking for more than the device allows is an error)."""
    from numba.cuda.cudadrv.driver import binding, driver

    optin = int(getattr(cufunc.device, "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN", 48 * 1024))
    attr = binding.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    driver.cuKernelSetAttribute(attr, optin - int(cufunc.attrs.shared), cufunc.handle, cufunc.device.id)


@functools.lru_cache(maxsize=None)
def _compiled_lanes(which: str, unit: int, threads: int, args: int, device: int, panel_bytes: int = 0,
                    row_threads: int = 0, runs: bool = False, group: int = 32, min_blocks: int = 1,
                    windows: bool = False):
    """A kernel of rotate/_backends/cuda/kernels/ (panels, cycles, lane_swaps, walks) compiled for int64 arguments, its cuda.core handle,
    allowed the most dynamic shared memory a block can have (on ``device``). ``which``: "panel",
    "cycle" (built per ``unit``) or "swap" (per ``panel_bytes``)."""
    from .kernels import cycles, lane_swaps, panels, walks

    if which == "swap":
        kernel = lane_swaps.swap_kernel(threads, panel_bytes)
    elif which == "walk":  # row_threads: buffers; unit: tile bytes; group: most tiles
        kernel = walks.walk_kernel(threads, row_threads, unit, group, panel_bytes, min_blocks)
    elif which == "warps":  # panel_bytes: the slots a group has; row_threads: the launch bound's blocks an SM
        kernel = panels.warp_lane_kernel(threads, panel_bytes, row_threads, group)
    elif which == "panel":
        kernel = panels.panel_kernel(unit, threads, row_threads, windows)
    else:
        kernel = cycles.cycle_kernel(unit, threads, runs)
    if SIMULATED:
        return kernel, None
    cufunc = _int64_cufunc(kernel, args)
    _set_dynamic_smem(cufunc)
    return kernel, cufunc.kernel


_launch_configs: dict = {}


def _launch_core(handle: int, grid: int, block: int, smem: int, kernel, *args) -> None:
    # A LaunchConfig is built once per shape (0.5 us each on the CPU machine) and the import bound once.
    config = _launch_configs.get((grid, block, smem))
    if config is None:
        config = _new_launch_config(grid, block, smem)
    _core_launch()(core_stream(handle), config, kernel, *args)


def _new_launch_config(grid: int, block: int, smem: int):
    from cuda.core import LaunchConfig

    if len(_launch_configs) > 256:
        _launch_configs.clear()
    config = _launch_configs[(grid, block, smem)] = LaunchConfig(grid=grid, block=block, shmem_size=smem)
    return config


@functools.lru_cache(maxsize=1)
def _core_launch():
    from cuda.core import launch

    return launch


def launch_lane_kernel(compiled: tuple, target: Any, info, step, p, handle: int, shifts: Any, scalars: tuple) -> None:
    """Launch a ``roll_rows`` lane kernel (``compiled``: its kernel and cuda.core handle) on the rows at
    ``info.pointer``: the data, the shifts (int64, on the device), then ``scalars``; under the simulator,
    on host views of both."""
    kernel, cu_kernel = compiled
    if SIMULATED:
        data = _sim_bytes(target, step.rows * step.seg_bytes)
        flat = getattr(shifts, "_ary", shifts).reshape(-1)  # a 0-d array of one shift too
        kernel[p.grid, p.block, 0, p.smem_bytes](data, flat, *scalars)
        return
    _launch_core(handle, p.grid, p.block, p.smem_bytes, cu_kernel, info.pointer, _address(shifts), *scalars)


def pointer_device(pointer: int) -> int:
    """The ordinal of the device that holds ``pointer``."""
    from cuda.bindings import driver

    err, ordinal = driver.cuPointerGetAttribute(
        driver.CUpointer_attribute.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, pointer)
    if int(err) != 0:
        raise ValueError(f"address {pointer:#x} is not device memory CUDA knows (error {err})")
    return int(ordinal)


#: What a launch of a cached plan needs besides the data pointer and the epoch,
#: built once per (step, device, stream): a call then only reads a dict.
_prepared: dict = {}


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
