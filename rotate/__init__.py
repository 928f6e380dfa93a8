"""In-place array rotation at memory-bandwidth speed, on GPUs and CPUs.

``roll(a, shift, axis)`` has numpy.roll's semantics and ``rotate(a, middle)``
std::rotate's, but both work in place: no second array is allocated, every
byte is read once and written once. numpy arrays run on the CPU backend
(numba); CUDA device arrays (numba, CuPy, PyTorch, anything with
``__cuda_array_interface__`` or DLPack) run on the GPU backend (numba-cuda),
on the caller's stream. ``plan`` says what a call would do.

>>> import numpy as np, rotate
>>> rotate.roll(np.arange(5), 1)
array([4, 0, 1, 2, 3])
"""

from ._core import compile_notice as _compile_notice, numba_cache as _numba_cache

_numba_cache.install()  # before any module below defines a cached kernel
_compile_notice.install()  # a call about to compile says so, once (logger "rotate")

from ._api import plan, roll, rotate  # noqa: E402
from ._core.plan import Plan, Step  # noqa: E402
from ._core.validate import AxisError  # noqa: E402
from .rows import fftshift, ifftshift, plan_roll_rows, roll_rows  # noqa: E402
from ._warmup import warmup  # noqa: E402
from . import _backends  # noqa: E402
from . import distributed  # noqa: E402,F401  (registers DTensor rolls with roll; imports no torch)
from . import _version  # noqa: E402


def release_scratch() -> int:
    """Free the scratch and plan tables cached for GPU rolls; return the bytes released.

    GPU rolls keep a small scratch buffer (flags, counters, pre-read spans)
    per (device, stream) for reuse, for a bounded number of streams (the
    least recently used one's is dropped when another comes); call this after
    destroying streams, or to hand the memory back. The next roll allocates
    again. Does nothing (returns 0) when no GPU roll ran.

    Returns
    -------
    int
        The bytes of device memory released (0 when nothing was cached).

    Raises
    ------
    RuntimeError
        Only what the CUDA driver raises while freeing memory; a machine
        without a GPU never raises.

    Notes
    -----
    A buffer still in use by work queued on its stream is kept until that
    work has finished, so a pooling memory manager cannot hand it out under a
    running kernel. CPU rolls cache no scratch: their temporary memory is
    freed when the call returns.

    See Also
    --------
    roll : Its ``max_scratch_bytes`` bounds the scratch a call uses.
    plan : Says how much scratch a call would use.

    Examples
    --------
    >>> import rotate
    >>> rotate.release_scratch() >= 0
    True
    """
    return sum(backend.release_scratch() for backend in _backends.backends())


__all__ = ["roll", "rotate", "plan", "roll_rows", "plan_roll_rows", "fftshift", "ifftshift", "release_scratch",
           "warmup", "Plan", "Step", "AxisError"]
__version__: str = _version.version()  # pyproject.toml's, through the installed metadata
