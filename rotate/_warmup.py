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
from ._backends.cpu import tuning as _cpu_tuning
from .rows import fftshift, roll_rows

FUNCTIONS = ("roll", "roll_rows", "fftshift")
DEFAULT_DTYPES = ("float32", "float64")
#: Lane and row lengths the calls take: every word width a short row or lane moves in (8, 4, 2 bytes, one word
#: a row, byte windows) for items of 1-16 bytes.
_SHORT = (2, 3, 4, 5, 6, 7, 8, 9, 12, 15, 16, 17, 32, 33)


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
            (_gpu_calls if where == "gpu" else _cpu_calls)(name, dtype)
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


# --- the CPU calls -----------------------------------------------------------------------------------------

def _cpu_calls(name: str, dtype: np.dtype) -> None:
    """``name``'s representative calls, with the plans of numba's thread count, then of one thread.

    Planned as on an idle machine: on a busy one the planner gives calls fewer threads (down to one), and
    the multi-threaded plans' kernels would be left for a later call to compile.
    """
    import numba

    threads = numba.get_num_threads()
    with _cpu_tuning.override(adapt_to_load=False):
        for count in (threads, 1) if threads > 1 else (1,):
            numba.set_num_threads(count)  # this thread's count only
            try:
                _CPU[name](dtype)
            finally:
                numba.set_num_threads(threads)


def _big(dtype: np.dtype) -> int:
    """Elements of an array that plans several threads' lanes (each lane needs ``min_lane_bytes``)."""
    return max(64, 4 * _cpu_tuning.current().min_lane_bytes // dtype.itemsize)


def _cpu_roll(dtype: np.dtype) -> None:
    from ._backends.cpu import planner

    n = _big(dtype)
    for length in _SHORT:  # one short row (one lane), then many (each lane a share of them)
        roll(np.zeros(length, dtype), 1)
        roll(np.zeros((max(1, n // length), length), dtype), 1, axis=1)
    budget = max(1 << 20, n * dtype.itemsize // 4)  # block swaps need rotations larger than the scratch bound
    # Each op of a schedule is a kernel of its own, compiled per word width: lengths n + 1, 2, 4 (and
    # halves of them) move items narrower than 8 bytes as narrower words.
    for m in (n, n + 1, n + 2, n + 4) if dtype.itemsize < 8 else (n,):
        a = np.zeros(m, dtype)
        roll(a, 3)  # a buffered shift
        roll(a, m // 3, max_scratch_bytes=budget)  # block swaps, or the chain schedule on one lane
        roll(a, m // 2 - 1, max_scratch_bytes=budget)  # a swap fused with the shift after it
        roll(a, m // 2, max_scratch_bytes=budget)  # one swap
    planner.compile_chain_builders()  # the chain above was planned interpreted; long rows plan compiled
    a = np.zeros(n, dtype)
    roll(np.zeros((64, max(2, n // 64)), dtype), 3, axis=1)  # rows spread over lanes
    roll(a[::2], 3)  # strided
    roll(np.zeros((64, max(2, n // 64)), dtype)[:, ::2], 3, axis=1)
    roll(np.zeros(16, dtype), 3, max_scratch_bytes=0)  # no scratch: reversals


def _cpu_fftshift(dtype: np.dtype) -> None:
    n = _big(dtype)
    fftshift(np.zeros(n, dtype))
    for shape in ((6, 8), (4, 6, 5), (64, max(2, n // 64)), (max(2, n // 8), 8)):
        fftshift(np.zeros(shape, dtype))
    # Innermost rows of at most split_inner_row_bytes take a pass of their own (small-rows kernels: a word,
    # up to 8 bytes, 9-16, 17-32 and 33-64 bytes in registers), few rows and many.
    split = _cpu_tuning.current().split_inner_row_bytes
    for row_bytes in (2, 3, 4, 8, 12, 24, 40):
        length = row_bytes // dtype.itemsize
        if row_bytes % dtype.itemsize or length < 2 or row_bytes > split:
            continue
        for rows in (6, max(6, n // length)):
            fftshift(np.zeros((rows, length), dtype))
    # Rolls over several axes where fewer cycles than threads are walked: each cycle cut into pieces (rows
    # longer than split_inner_row_bytes, which stay in the one pass).
    length = max(8, (2 * _cpu_tuning.current().split_inner_row_bytes) // dtype.itemsize)
    roll(np.zeros((max(2, n // length), length), dtype), (1, 3), axis=(0, 1))


def _cpu_roll_rows(dtype: np.dtype) -> None:
    n = _big(dtype)
    for length in _SHORT + (1024,):  # short lanes (words, one word a lane, byte windows), then long ones
        for rows in (4, max(4, n // length)):
            a = np.zeros((rows, length), dtype)
            roll_rows(a, np.arange(rows) - rows // 2)  # a shift a lane
            roll_rows(a, 1)  # one shift broadcast to every lane: a strided shifts array, its own kernels
    for columns in (64, max(64, n // 64)):  # strided lanes
        a = np.zeros((64, columns), dtype)
        roll_rows(a, np.arange(columns), axis=0)
        roll_rows(a, 1, axis=0)


_CPU = {"roll": _cpu_roll, "roll_rows": _cpu_roll_rows, "fftshift": _cpu_fftshift}


# --- the GPU calls -----------------------------------------------------------------------------------------

def _gpu_calls(name: str, dtype: np.dtype) -> None:
    from numba import cuda

    def zeros(shape):
        return cuda.device_array(shape, dtype)

    item = dtype.itemsize
    if name == "roll":
        for nbytes in (4 << 10, 1 << 20, 16 << 20, 64 << 20, 256 << 20):  # the planner's tile and grid follow size
            n = max(2, nbytes // item)
            a = zeros(n)
            for shift in (1, 3, 4097, n // 3, n // 2 - 1, n // 2, n // 2 + 1, (n * 5) // 7, n - 7):
                roll(a, shift)
            del a
    elif name == "fftshift":
        for shape in ((512, 512), (1024, 1024), (1023, 1025), (2048, 4096), (64, 64, 64), (4096, 8), (3, 5),
                      (4096, 4096 // item), (8, (1 << 20) // item)):
            fftshift(zeros(shape))
    else:
        for shape in ((4096, 16), (4096, 15), (1 << 16, 64), (1024, 1024), (1024, 1024 // item * 4), (256, 65536),
                      (64, (1 << 20) // item), (16, 1 << 20), (4, 1 << 22)):
            rows = shape[0]
            shifts = cuda.to_device(np.arange(rows, dtype=np.int64) * 7 - rows)
            roll_rows(zeros(shape), shifts)
    cuda.synchronize()
