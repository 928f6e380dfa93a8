"""waveops: the per-lane wave rotate, on CUDA and on a CPU software wave.

A *wave* is a group of lanes that execute in lock step: a CUDA warp (32
lanes), an AMD wavefront (64), the SIMD lanes of a CPU register.  ``rotate``
is the wave's cyclic shift: every lane reads the value of the lane ``delta``
positions ahead, wrapping inside its group of ``width`` lanes.  It is the
neighbour exchange under lane-level stencils, sliding windows, hand-rolled
scans and register-tile permutations, with no trip through shared memory.

Device functions (inside ``@cuda.jit`` kernels; need numba-cuda)
-----------------------------------------------------------------
``rotate(value, delta, width=32)``
    Lane ``l`` returns ``value`` of lane ``(l + delta) mod width`` within its
    aligned group of ``width`` lanes (``l & ~(width-1)`` is the group's first
    lane).  ``width`` is a power of two from 1 to 32; ``delta`` is any
    integer (negative, larger than the width) and may differ per lane.
    ``value`` is int32, uint32 or float32 (one ``shfl.sync.idx`` each) or
    int64, uint64 or float64 (two).  The bits move untouched: NaN payloads
    and ``-0.0`` survive.
``lane_id()``
    This thread's lane, ``0 <= lane_id() < width()``.
``width()``
    The wave width: 32 on NVIDIA.

Contract: ``rotate`` is a full-warp collective, like any ``shfl_sync`` with
the full member mask.  All 32 lanes of the warp must reach the same call
(also when ``width < 32``; the groups share one instruction).  Calling it
from a divergent branch, or after some lanes of the warp returned (a partial
last warp whose out-of-range threads exited early), is undefined behaviour:
on Volta and later the call may hang or return garbage for the lanes whose
source was not participating.  Keep every lane alive, clamp its load index,
and guard only the store.  A run-time ``width`` that is not a power of two
from 1 to 32 gives unspecified lanes (a literal one is rejected when the
kernel compiles).

Software wave (host, numba ``@njit``; no GPU needed)
----------------------------------------------------
``waveops.cpu`` runs the same rotate over arrays holding whole waves, bit
for bit equal to the GPU, and returns a new array:
``waveops.cpu.rotate(lanes, delta, width=32)`` (32 lanes a wave by default,
as on the GPU, on every machine); ``waveops.cpu.width()`` is the host SIMD
width for 32-bit lanes (4, 8 or 16), an opt-in width
(``width=waveops.cpu.width()``).

Other backends (submodules, imported on demand)
-----------------------------------------------
``waveops.amdgpu`` (``ds_bpermute`` kernels as LLVM IR, compiled to AMDGPU ISA
by numba's llvmlite), ``waveops.spirv`` (SPIR-V modules: native
``OpGroupNonUniformRotateKHR`` or a shuffle fallback) and ``waveops.vulkan``
(runs them through the Vulkan loader).  See docs/waveops.md.

Importing ``waveops`` needs neither numba-cuda nor a GPU, and never
initialises the CUDA driver: the CUDA device functions are loaded on first
use of ``waveops.rotate``/``lane_id``/``width``.  Without numba-cuda (or under
the CUDA simulator, which has no warp shuffles) those names still exist but
raise a ``RuntimeError`` explaining why when called.

Examples
--------
>>> import numpy as np, waveops
>>> waveops.cpu.rotate(np.arange(8, dtype=np.int32), 1, width=4)
array([1, 2, 3, 0, 5, 6, 7, 4], dtype=int32)

On a GPU::

    from numba import cuda
    import waveops

    @cuda.jit
    def right_neighbour(out, x):
        i = cuda.grid(1)
        out[i] = waveops.rotate(x[i], 1)      # lane l gets lane (l+1) % 32
"""

import os as _os
from typing import TYPE_CHECKING, Any, SupportsIndex, TypeVar

from rotate._core import numba_cache as _numba_cache
from rotate import _version

# cpu.py's cached kernels inline _core.py: stamp their cache with every waveops source, so an edit to
# _core.py alone cannot leave them running the old code (numba stamps a cache with its own file only).
_numba_cache.install(_os.path.dirname(_os.path.abspath(__file__)))

from . import cpu  # noqa: E402
from ._core import source_lane  # noqa: E402

__all__ = ["rotate", "lane_id", "width", "cpu", "source_lane", "cuda_available"]
__version__: str = _version.version()  # one distribution, one version: rotate.__version__

_DEVICE_NAMES = ("rotate", "lane_id", "width")
_cuda_module = None

if TYPE_CHECKING:
    # What the device functions that __getattr__ loads (waveops/_cuda.py) look like to a type checker.
    _ValueT = TypeVar("_ValueT")

    def rotate(value: _ValueT, delta: SupportsIndex, width: int = 32) -> _ValueT: ...

    def lane_id() -> int: ...

    def width() -> int: ...


def _unavailable(name, why):
    def stub(*args, **kwargs):
        raise RuntimeError(
            f"waveops.{name}() is a CUDA device function and {why}. "
            f"For the CPU software wave use waveops.cpu.{name}()."
        )

    stub.__name__ = name
    stub.__qualname__ = name
    what = {"rotate": "Lane shuffle inside a CUDA kernel (a device function)",
            "lane_id": "This thread's lane in its warp (a CUDA device function)",
            "width": "The warp width (a CUDA device function)"}[name]
    stub.__doc__ = f"{what}; unavailable here: {why}."
    return stub


def _load_cuda():
    """Import the CUDA backend once; return it, or a reason string."""
    global _cuda_module
    if _cuda_module is None:
        try:
            from numba.cuda.core import config as _cfg
        except ImportError as exc:
            _cuda_module = (
                "numba-cuda is not installed (pip install 'numba-cuda[cu12]' "
                f"or '[cu13]' to match your driver; import failed: {exc})"
            )
        else:
            if _cfg.ENABLE_CUDASIM:
                _cuda_module = (
                    "the CUDA simulator (NUMBA_ENABLE_CUDASIM=1) has no warp "
                    "shuffles; unset it and run on a GPU"
                )
            else:
                from . import _cuda

                _cuda_module = _cuda
    return _cuda_module


def __getattr__(name: str) -> Any:
    if name in _DEVICE_NAMES:
        backend = _load_cuda()
        if isinstance(backend, str):
            value = _unavailable(name, backend)
        else:
            value = getattr(backend, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'waveops' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_DEVICE_NAMES))


def cuda_available() -> bool:
    """True when waveops' CUDA device functions can run here.

    Needs numba-cuda (not the simulator) and a usable GPU.  This calls
    ``numba.cuda.is_available()``, which initialises the CUDA driver, so
    ``import waveops`` never calls it for you.

    Returns
    -------
    bool
        True when numba-cuda is installed (outside the simulator) and
        ``numba.cuda.is_available()`` says a GPU is usable.

    Notes
    -----
    It never raises: a broken driver install counts as "no GPU" (False).

    See Also
    --------
    rotate : The device function this says can run.
    waveops.cpu.rotate : The CPU software wave, which runs anywhere.

    Examples
    --------
    >>> import waveops
    >>> waveops.cuda_available() in (True, False)
    True
    """
    if isinstance(_load_cuda(), str):
        return False
    from numba import cuda

    try:
        return bool(cuda.is_available())
    except Exception:  # a broken driver install counts as "no GPU"
        return False
