"""``rotate.warmup``: compile the kernels the common calls need, at a moment the caller chooses.

It makes real calls (``roll``, ``roll_rows``, ``fftshift``) on scratch arrays
of each dtype asked for, shaped so that their plans reach every runner those
functions have (short and long rows, one word a row, block swaps and the
chain schedule, strided views, several axes in one pass, short, byte-window
and long lanes), once with the plans of numba's thread count and once with
those of one thread (``numba.set_num_threads`` is per thread: other threads'
calls are left alone). So it compiles exactly what such calls compile,
whatever the planner picks, and follows the planner when that changes. The
kernels depend on the width of the words they move, not on the dtype itself:
float32 warms int32 and uint32 too, float64 every 8- and 16-byte type.
"""

from __future__ import annotations

import sys
import time
from typing import Any, Callable, Iterable, Optional, Union

import numpy as np

from ._core import compile_notice as _compile_notice
from ._api import plan, roll
from . import _backends
from .rows import fftshift, roll_rows

FUNCTIONS = ("roll", "roll_rows", "fftshift")
DEFAULT_DTYPES = ("float32", "float64")


def warmup(dtypes: Iterable[Any] = DEFAULT_DTYPES, *, functions: Iterable[str] = FUNCTIONS,
           gpu: Optional[bool] = None, cpu: bool = True, progress: Union[bool, Callable[[str], Any]] = True) -> int:
    """Compile the kernels that calls of these functions on these dtypes need, now.

    A call compiles its kernels the first time it needs them, for seconds
    (numba; the CPU's kernels are then cached on disk, so this happens once
    per installation, the GPU's in every process). ``warmup`` does that work
    at a moment you choose, such as a service's startup or a container
    image's build, so that later calls do not stall. A kernel already
    compiled or cached costs only its loading.

    Parameters
    ----------
    dtypes : iterable of dtype-likes, optional
        The array dtypes to prepare for (default: float32 and float64).
        Kernels move words, so a dtype warms every dtype of its item size:
        float32 warms int32 too; float64 every 8- and 16-byte dtype
        (int64, complex64, complex128).
    functions : iterable of str, optional
        Any of ``"roll"`` (also :func:`rotate`), ``"roll_rows"`` and
        ``"fftshift"`` (also :func:`ifftshift` and rolls over several axes);
        default all three.
    gpu : bool, optional
        Also compile the GPU kernels of these calls on the current CUDA
        device. None (default): when a usable CUDA GPU is present.
    cpu : bool, optional
        Compile the CPU kernels (default True; False for a service that
        rolls device arrays only).
    progress : bool or callable, optional
        True (default) prints a line to stderr as each function and dtype is
        done; a callable (``logging.getLogger("app").info``, say) receives
        those lines instead; False says nothing.

    Returns
    -------
    int
        The number of kernels compiled (0 when everything was compiled or
        cached already).

    Raises
    ------
    TypeError
        A dtype rotate cannot move (object dtypes).
    ValueError
        An unknown function name.
    RuntimeError
        ``gpu=True`` on a machine without a usable CUDA GPU.

    Notes
    -----
    The calls run on scratch arrays of a few MiB; nothing of yours is
    touched. Rolls plan fewer CPU threads on a machine that other processes
    keep busy; while warmup runs, they plan as on an idle machine (calls
    from other threads too), so that the kernels of many-thread plans are
    compiled however busy the machine is at the time. GPU kernels
    are specialised for the tile and grid the planner picks for a size, so
    the GPU part prepares the common sizes (4 KiB to 64 MiB); an unusual
    size can still compile a kernel on its first call. ``roll_rows`` is
    prepared for int64 shifts (Python ints and lists, and numpy's default
    integer arrays); shifts of another integer dtype compile their own
    kernels. While warmup runs, its compiles are reported by ``progress``,
    not by the one-time notice a compiling call logs on the ``"rotate"``
    logger.

    See Also
    --------
    roll, roll_rows, fftshift : The calls it prepares.

    Examples
    --------
    >>> import rotate
    >>> n = rotate.warmup(dtypes=["float32"], functions=["roll"], gpu=False, progress=False)
    >>> rotate.warmup(dtypes=["float32"], functions=["roll"], gpu=False, progress=False)  # done already
    0

    At a service's startup, reporting to its log:

    >>> import logging
    >>> n = rotate.warmup(progress=logging.getLogger("service").info)   # doctest: +SKIP
    """
    if isinstance(dtypes, (str, np.dtype, type)):  # one dtype, not an iterable of them
        dtypes = [dtypes]
    if isinstance(functions, str):
        functions = [functions]
    wanted = [_check_dtype(d) for d in dtypes]
    names = [_check_function(f) for f in functions]
    on_gpu = _gpu_wanted(gpu)
    say = _reporter(progress)
    steps = [(name, dtype, "cpu") for dtype in wanted for name in names] if cpu else []
    if on_gpu:
        steps += [(name, dtype, "gpu") for dtype in wanted for name in names]
    if not steps:
        return 0
    say(f"rotate.warmup: compiling the kernels of {', '.join(names)} for "
        f"{', '.join(str(d) for d in wanted)} ({' and '.join(w for w, on in (('CPU', cpu), ('GPU', on_gpu)) if on)}); "
        f"a few seconds each where not compiled or cached yet")
    start = time.perf_counter()
    with _compile_notice.counting() as compiled:
        for index, (name, dtype, where) in enumerate(steps, 1):
            step_start, before = time.perf_counter(), len(compiled)
            for backend in _backends.backends():
                if (backend.device_kind == "cpu") == (where == "cpu"):
                    backend.warmup(name, dtype, _CALLS)
            say(f"rotate.warmup: [{index}/{len(steps)}] {name} {dtype} ({where.upper()}): "
                f"{len(compiled) - before} kernels compiled, {time.perf_counter() - step_start:.1f} s")
    say(f"rotate.warmup: done, {len(compiled)} kernels compiled in {time.perf_counter() - start:.1f} s")
    return len(compiled)


def _check_dtype(dtype: Any) -> np.dtype:
    dt = np.dtype(dtype)
    plan(np.zeros(2, dt), 1)  # rotate's own checks: object dtypes raise TypeError here
    return dt


def _check_function(name: Any) -> str:
    if name not in FUNCTIONS:
        raise ValueError(f"functions must name some of {', '.join(FUNCTIONS)}, got {name!r}")
    return name


def gpu_usable() -> bool:
    """A CUDA GPU numba-cuda can use (not the simulator)."""
    try:
        from numba import cuda
        from numba.core import config

        return not config.ENABLE_CUDASIM and bool(cuda.is_available())
    except Exception:
        return False


def _gpu_wanted(gpu: Optional[bool]) -> bool:
    if gpu is None:
        return gpu_usable()
    if gpu and not gpu_usable():
        raise RuntimeError("warmup(gpu=True) needs a usable CUDA GPU and numba-cuda (pip install "
                           "'inplace-rotate[cu12]' or '[cu13]'); none was found. Pass gpu=False or leave it None")
    return bool(gpu)


def _reporter(progress: Union[bool, Callable[[str], Any]]) -> Callable[[str], Any]:
    if callable(progress):
        return progress
    if progress:
        return lambda line: print(line, file=sys.stderr, flush=True)
    return lambda line: None


#: What the backends' warmups call: the public functions, handed down so no backend imports them.
_CALLS = {"roll": roll, "roll_rows": roll_rows, "fftshift": fftshift}
