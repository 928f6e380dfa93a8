"""Recognising where an array lives and describing its memory, for any library.

Host arrays are numpy arrays. Device arrays are anything exposing the CUDA
Array Interface (numba device arrays, CuPy arrays, PyTorch CUDA tensors), or
DLPack with a CUDA device (imported zero-copy through CuPy or PyTorch, never
through a host copy).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from .validate import check_dtype, check_numpy_array, prod

# DLPack device types (dlpack.h: DLDeviceType).
_DLPACK_CPU = 1
_DLPACK_CUDA = 2
_DLPACK_CUDA_MANAGED = 13


@dataclass(frozen=True)
class ArrayInfo:
    """What the planner needs to know about an array, wherever it lives."""

    shape: tuple[int, ...]
    strides: tuple[int, ...]  # bytes
    dtype: np.dtype
    kind: str  # where the memory lives: "cpu", "cuda" (a backend's device_kind)
    pointer: int = 0  # device pointer; 0 for host arrays
    readonly: bool = False

    @property
    def device(self) -> bool:
        """True when the memory is on an accelerator (any kind but "cpu")."""
        return self.kind != "cpu"

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def size(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def nbytes(self) -> int:
        return self.size * self.itemsize

    @property
    def c_contiguous(self) -> bool:
        return _contiguous(self.shape, self.strides, self.itemsize)

    @property
    def f_contiguous(self) -> bool:
        return _contiguous(self.shape[::-1], self.strides[::-1], self.itemsize)


def _contiguous(shape, strides, itemsize) -> bool:
    expected = itemsize
    for dim, stride in zip(reversed(shape), reversed(strides)):
        if dim == 0:
            return True
        if dim != 1 and stride != expected:
            return False
        expected *= dim
    return True


def _is_simulated_array(a: Any) -> bool:
    """numba's CUDA simulator stands in device arrays by host-backed fakes."""
    return type(a).__name__ == "FakeCUDAArray" and hasattr(a, "_ary")


def _has_cai(a: Any) -> bool:
    """Whether ``a`` exports ``__cuda_array_interface__``, without computing it.

    Libraries define it as a property (torch builds a dict for it, ~2 us), so
    the class is asked first; objects that set it per instance are found in
    their ``__dict__``.
    """
    return (getattr(type(a), "__cuda_array_interface__", None) is not None
            or "__cuda_array_interface__" in getattr(a, "__dict__", ()))


def is_device_array(a: Any) -> bool:
    """True for objects whose memory is on a CUDA device."""
    if isinstance(a, np.ndarray):
        return False
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(a, torch.Tensor):  # its class defines the interface for every device
        return a.device.type == "cuda"
    if _is_simulated_array(a):
        return True
    if _has_cai(a):
        return True
    device = _dlpack_device(a)
    return device is not None and device[0] in (_DLPACK_CUDA, _DLPACK_CUDA_MANAGED)


def _dlpack_device(a: Any) -> Optional[tuple[int, int]]:
    get = getattr(a, "__dlpack_device__", None)
    if get is None:
        return None
    try:
        return tuple(get())  # type: ignore[return-value]
    except Exception:
        return None


def describe_host(a: np.ndarray) -> ArrayInfo:
    return ArrayInfo(
        shape=tuple(a.shape),
        strides=tuple(a.strides),
        dtype=a.dtype,
        kind="cpu",
        readonly=not a.flags.writeable,
    )


def device_view(a: Any) -> Any:
    """An object exposing ``__cuda_array_interface__`` for device array ``a``.

    Objects that only speak DLPack are imported zero-copy through CuPy or
    PyTorch, whichever is installed.
    """
    if _has_cai(a) or _is_simulated_array(a):
        return a
    for importer in (_cupy_from_dlpack, _torch_from_dlpack):
        view = importer(a)
        if view is not None:
            return view
    raise TypeError(
        f"a is a CUDA DLPack array of type {type(a).__name__} without "
        f"__cuda_array_interface__; install CuPy or PyTorch so it can be imported "
        f"without a copy, or pass a CuPy array, PyTorch tensor or numba device array"
    )


def _cupy_from_dlpack(a):
    try:
        import cupy
    except ImportError:
        return None
    return cupy.from_dlpack(a)


def _torch_from_dlpack(a):
    try:
        import torch
    except ImportError:
        return None
    return torch.from_dlpack(a)


def describe_device(a: Any) -> ArrayInfo:
    """Read shape, strides, dtype and pointer from the CUDA Array Interface."""
    if _is_simulated_array(a):
        host = a._ary
        check_dtype(host.dtype)
        return ArrayInfo(tuple(host.shape), tuple(host.strides), host.dtype, "cuda",
                         pointer=host.__array_interface__["data"][0],
                         readonly=not host.flags.writeable)
    cai = a.__cuda_array_interface__  # read once: for torch it is built on every access
    shape = tuple(cai["shape"])
    typestr = cai["typestr"]
    descr = cai.get("descr")
    if descr and len(descr) > 1:
        dtype = np.dtype([tuple(field) for field in descr])
        check_dtype(dtype)
    else:
        dtype = _typestr_dtype(typestr)
    strides = cai.get("strides")
    if strides is None:
        strides, step = [], dtype.itemsize
        for dim in reversed(shape):
            strides.append(step)
            step *= dim
        strides = tuple(reversed(strides))
    pointer, readonly = cai["data"]
    if cai.get("mask") is not None:
        raise ValueError("a has a mask in its __cuda_array_interface__; masked device arrays are not supported")
    return ArrayInfo(
        shape=shape,
        strides=tuple(int(s) for s in strides),
        dtype=dtype,
        kind="cuda",
        pointer=int(pointer or 0),
        readonly=bool(readonly),
    )


# --- the quick path of a repeated call (issue #8: host work per call) -----------
#
# A call that rolls an array whose layout was seen before needs only its
# address, a key for its layout and its library's current stream; the full
# description (``describe_device``) ran, with every check, the first time.
# The key holds everything the description reads, so a hit describes the same
# array. Libraries are recognised by the array's exact *type* (a subclass may
# change what its attributes mean), once per type.

_QUICK_NO, _QUICK_TORCH, _QUICK_CUPY, _QUICK_CAI = range(4)
_quick_kinds: dict = {}


def _quick_kind(cls: type) -> int:
    torch = sys.modules.get("torch")
    if torch is not None and cls is torch.Tensor:
        return _QUICK_TORCH
    cupy = sys.modules.get("cupy")
    if cupy is not None and cls is cupy.ndarray:
        return _QUICK_CUPY
    if issubclass(cls, np.ndarray) or cls.__name__ == "FakeCUDAArray":
        return _QUICK_NO
    if getattr(cls, "__cuda_array_interface__", None) is not None:
        return _QUICK_CAI  # numba device arrays and other exporters: the interface itself is the key
    return _QUICK_NO


def quick_device(a: Any) -> Optional[tuple]:
    """``(layout_key, pointer, current_stream)`` of a CUDA array, cheaply; None: take the full path.

    ``layout_key`` determines what :func:`describe_device` would return
    apart from the pointer; ``current_stream`` is the raw handle of the
    array library's current stream (what ``runtime.resolve_stream`` gives
    without ``stream=``). torch tensors are read through their own
    attributes (their ``__cuda_array_interface__`` builds a dict: ~1.8 us),
    others through the interface.
    """
    cls = type(a)
    kind = _quick_kinds.get(cls)
    if kind is None:
        kind = _quick_kinds[cls] = _quick_kind(cls)
    if kind == _QUICK_TORCH:
        if not a.is_cuda or a.requires_grad:
            return None  # the full path says what is wrong with it
        device = a.get_device()
        return ((kind, a.shape, a.stride(), a.dtype), a.data_ptr(),
                int(sys.modules["torch"]._C._cuda_getCurrentRawStream(device)))
    if kind == _QUICK_NO:
        return None
    cai = a.__cuda_array_interface__
    if cai.get("mask") is not None:
        return None
    strides = cai.get("strides")
    typestr = cai["typestr"]
    descr = cai.get("descr")
    data = cai["data"]
    layout = (kind, typestr, tuple(cai["shape"]), strides if strides is None else tuple(strides),
              bool(data[1]), repr(descr) if descr and len(descr) > 1 else None)
    if kind == _QUICK_CUPY:
        stream = int(sys.modules["cupy"].cuda.get_current_stream().ptr)
    else:
        own = getattr(a, "stream", None)  # numba arrays carry theirs (cuda.as_cuda_array of a CuPy array, too)
        if own is not None and not isinstance(own, (int, np.integer)):
            stream = _bound_stream_handle(own)
            if stream is None:
                return None
        else:
            stream = cai.get("stream") or 0
            stream = int(stream) if stream > 2 else 0  # CAI v3: 1 legacy default, 2 per-thread default
    return layout, int(data[0] or 0), stream


_bound_streams: dict = {}  # id(stream object) -> (the object, its raw handle)


def _bound_stream_handle(stream: Any) -> Optional[int]:
    """The raw handle of a stream object an array is bound to (``__cuda_stream__``), cached by identity."""
    entry = _bound_streams.get(id(stream))
    if entry is not None and entry[0] is stream:
        return entry[1]
    export = getattr(stream, "__cuda_stream__", None)
    if export is None:
        return None  # the full path knows the older spellings
    handle = int((export() if callable(export) else export)[1])
    if len(_bound_streams) >= 64:
        _bound_streams.clear()
    _bound_streams[id(stream)] = (stream, handle)
    return handle


_typestr_dtypes: dict = {}


def _typestr_dtype(typestr: str) -> np.dtype:
    """numpy's dtype for a CUDA Array Interface typestr, checked once per typestr."""
    dtype = _typestr_dtypes.get(typestr)
    if dtype is None:
        try:
            dtype = np.dtype(typestr)
        except TypeError:
            raise TypeError(
                f"a has CUDA typestr {typestr!r}, which numpy cannot describe; "
                f"rotate supports fixed-size numeric, bool and structured dtypes"
            ) from None
        check_dtype(dtype)
        _typestr_dtypes[typestr] = dtype
    return dtype


def is_dtensor(a: Any) -> bool:
    """True for a torch.distributed.tensor.DTensor (never imports torch)."""
    mod = sys.modules.get("torch.distributed.tensor")
    cls = getattr(mod, "DTensor", None) if mod is not None else None
    return cls is not None and isinstance(a, cls)


def torch_host_view(a: Any) -> Optional[np.ndarray]:
    """A zero-copy numpy view of a torch CPU tensor; None for anything else (never imports torch).

    Dtypes numpy lacks (bfloat16, float8) are viewed as same-size unsigned
    integers: the kernels move bytes, so the roll is the same.
    """
    torch = sys.modules.get("torch")
    if torch is None or not isinstance(a, torch.Tensor):
        return None
    if is_dtensor(a):
        raise TypeError("a is a DTensor: roll it with rotate.roll (collectively, on every rank); "
                        "rotate.distributed.plan says what that does")
    if a.device.type != "cpu":
        return None
    if a.requires_grad:
        raise ValueError("a is a torch tensor that requires grad; an in-place roll would bypass "
                         "autograd. Pass a.detach()")
    if a.is_conj() or a.is_neg():
        raise ValueError("a is a torch tensor with a lazy conj/neg bit; call a.resolve_conj().resolve_neg() first")
    try:
        return a.numpy()
    except TypeError:
        same_size = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
        if a.element_size() not in same_size:
            raise
        return a.view(same_size[a.element_size()]).numpy()


# --- what a call moves ---------------------------------------------------------

def field_byte_ranges(dtype: np.dtype) -> list[tuple[int, int]]:
    """The byte ranges ``[lo, hi)`` of one item that hold data, merged and sorted.

    ``[(0, itemsize)]`` for plain dtypes and packed structs; a multi-field
    view such as ``a[['x', 'z']]`` leaves a gap where field ``y`` lives.
    """
    ranges: list[tuple[int, int]] = []
    _collect_ranges(dtype, 0, ranges)
    ranges.sort()
    merged: list[tuple[int, int]] = []
    for lo, hi in ranges:
        if merged and lo <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], hi))
        elif hi > lo:
            merged.append((lo, hi))
    return merged


def _collect_ranges(dtype: np.dtype, base: int, out: list) -> None:
    if dtype.names is None:
        if dtype.subdtype is not None:
            sub, shape = dtype.subdtype
            inner = field_byte_ranges(sub)
            if inner == [(0, sub.itemsize)]:
                out.append((base, base + dtype.itemsize))
                return
            for i in range(prod(shape)):
                out.extend((base + i * sub.itemsize + lo, base + i * sub.itemsize + hi) for lo, hi in inner)
            return
        out.append((base, base + dtype.itemsize))
        return
    for name in dtype.names:
        field_dtype, offset = dtype.fields[name][:2]
        _collect_ranges(field_dtype, base + offset, out)


def has_gaps(dtype: np.dtype) -> bool:
    """Whether some bytes of an item belong to no field: padding, or another view's fields.

    numpy cannot tell the two apart (a multi-field view's base is the buffer's
    owner, not the struct it was cut from), so such bytes are never moved:
    ``a[['x', 'z']]`` must not move field ``y``, and padding holds no data.
    """
    return dtype.names is not None and field_byte_ranges(dtype) != [(0, dtype.itemsize)]


class _ByteSpan:
    """``[lo, lo + width)`` of every item of ``a``, as an array of opaque items (keeps ``a`` alive)."""

    def __init__(self, owner: np.ndarray, lo: int, width: int):
        self._owner = owner
        self.__array_interface__ = {
            "version": 3,
            "shape": tuple(owner.shape),
            "strides": tuple(owner.strides),
            "typestr": f"|V{width}",
            "data": (owner.__array_interface__["data"][0] + lo, False),
        }


def field_views(a: np.ndarray) -> list[np.ndarray]:
    """One writeable opaque-item view per data range of ``a``'s items, gaps left out."""
    return [np.asarray(_ByteSpan(a, lo, hi - lo)) for lo, hi in field_byte_ranges(a.dtype)]


def rolled_parts(a: Any) -> list:
    """The arrays a call moves, each to be rolled the same way.

    A masked array's data and its mask roll together, like numpy.roll's; a
    multi-field view rolls only its own fields' bytes. Checks that need the
    whole picture (a read-only mask) run here, before anything moves.
    """
    if isinstance(a, np.ma.MaskedArray):
        mask = np.ma.getmask(a)
        data = a.data
        parts = [data]
        if mask is not np.ma.nomask:
            check_dtype(data.dtype)
            if data.flags.writeable and not mask.flags.writeable:
                raise ValueError(
                    "a.mask is read-only (a.mask.flags.writeable is False) although a's data "
                    "is writeable; roll moves the mask with the data, like numpy.roll, so give "
                    "a a writeable mask first (a.unshare_mask(), or a.mask = a.mask.copy())"
                )
            parts.append(mask)
    else:
        parts = [a]
    out = []
    for part in parts:
        if isinstance(part, np.ndarray) and part.dtype.names is not None:
            check_numpy_array(part)  # objects and read-only first: the byte views hide both
            if has_gaps(part.dtype):
                out.extend(field_views(part))
                continue
        out.append(part)
    return out


def c_order_line(shape, strides) -> Optional[tuple[int, int]]:
    """``(n, stride)`` when C order walks memory in one arithmetic progression, else None.

    Such a view (e.g. ``a[::2][None]``, shape ``(1, n)``) rolls with
    ``axis=None`` in place as a 1-D strided line.
    """
    dims = [(int(n), int(s)) for n, s in zip(shape, strides) if int(n) != 1]
    if any(n == 0 for n, _ in dims):
        return (0, 0)
    if not dims:
        return (1, 0)
    n, stride = dims[-1]
    for dim, dim_stride in reversed(dims[:-1]):
        if dim_stride != n * stride:
            return None
        n *= dim
    return n, stride


_device_usable = False  # once a usable GPU was seen, later calls skip the checks (call overhead)


def check_device_usable() -> None:
    """A device array needs numba-cuda and a working CUDA driver; say so plainly."""
    global _device_usable
    if _device_usable:
        return
    try:
        from numba import cuda
        from numba.core import config
    except ImportError as exc:
        raise RuntimeError(
            f"a is a CUDA device array, but numba-cuda is not installed ({exc}); install "
            f"the GPU extra: pip install 'inplace-rotate[cu12]' (or [cu13], matching your driver)"
        ) from None
    if config.ENABLE_CUDASIM:
        return
    if not cuda.is_available():
        raise RuntimeError(
            "a is a CUDA device array (it has __cuda_array_interface__ or CUDA DLPack), but "
            "no usable CUDA GPU or driver was found here (numba.cuda.is_available() is False); "
            "run on a machine with an NVIDIA GPU and driver, or pass a numpy array to use the "
            "CPU backend"
        )
    _device_usable = True


def byte_extent(info: ArrayInfo) -> tuple[int, int]:
    """``[lo, hi)``: the bytes an array's elements span from its pointer (empty arrays: an empty range)."""
    if info.size == 0:
        return info.pointer, info.pointer
    lo = info.pointer + sum((n - 1) * s for n, s in zip(info.shape, info.strides) if s < 0)
    hi = info.pointer + sum((n - 1) * s for n, s in zip(info.shape, info.strides) if s > 0) + info.itemsize
    return lo, hi


def host_span(a: np.ndarray) -> tuple[int, int, int]:
    """``(address, lo, hi)`` of a host array: its first element's address and the bytes its elements span."""
    address = a.__array_interface__["data"][0]
    lo, hi = byte_extent(ArrayInfo(a.shape, a.strides, a.dtype, "cpu", address))
    return address, lo, hi


def mark_written(a: Any) -> None:
    """Tell torch's autograd that ``a`` was changed in place (never imports torch).

    torch's own in-place ops bump a tensor's version counter, so a tensor that
    autograd saved for backward and that was changed since makes backward()
    raise instead of silently using the new values; an in-place roll must do
    the same. Inference tensors have no version counter.
    """
    torch = sys.modules.get("torch")
    if torch is None or not isinstance(a, torch.Tensor) or a.is_inference():
        return
    # torch's C bump takes a tuple (it iterates what it is given); the Python wrapper only adds checks
    bump = getattr(torch._C, "_increment_version", None) or torch.autograd.graph.increment_version
    bump((a,))
