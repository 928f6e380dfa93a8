"""The CPU backend's threads: serial ``nogil`` kernels run by a team of Python threads.

A parallel kernel here is an ``@njit(nogil=True)`` function whose last two
arguments are a range ``[lo, hi)`` of *members* (a lane, a piece, a thread's
share): :func:`run` splits ``range(members)`` into ``workers`` contiguous
runs, calls the kernel on each run in its own thread (the caller's thread
takes the first) and returns when every run has finished. A kernel with
phases that must not overlap (seams saved before anything moves) is one
kernel a phase, run one after another.

Why not numba's ``parallel=True``: its parfor lowering compiles each kernel
two to three times slower (``docs/results/cold-start-cpu.json``: 3.0 s for a
1M-element float32 roll, 1.1 s serial), and every first call pays that; the
threads numba would start are the same OS threads these are. A forked child
gets a fresh pool (a pool's threads do not survive ``fork``), so no threading
layer can hang a child process.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Optional

_pool: Optional[ThreadPoolExecutor] = None
_pool_workers = 0
_pool_lock = threading.Lock()


def _executor(workers: int) -> ThreadPoolExecutor:
    global _pool, _pool_workers
    with _pool_lock:
        if _pool is None or _pool_workers < workers:
            old = _pool
            _pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="rotate")
            _pool_workers = workers
            if old is not None:
                old.shutdown(wait=False)
        return _pool


def _forget_pool_in_child() -> None:
    global _pool, _pool_workers, _pool_lock
    _pool, _pool_workers, _pool_lock = None, 0, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool_in_child)


def shares(members: int, workers: int) -> list:
    """``range(members)`` cut into at most ``workers`` contiguous ``(lo, hi)`` runs, none empty."""
    workers = max(1, min(int(workers), int(members)))
    return [(w * members // workers, (w + 1) * members // workers) for w in range(workers)]


def run(kernel: Callable[..., Any], members: int, workers: int, *args: Any) -> None:
    """``kernel(*args, lo, hi)`` over ``range(members)``, in ``workers`` threads at most.

    The runs are contiguous and ordered (worker ``w`` takes the ``w``-th),
    so a kernel that keys scratch on its members sees the same members
    whatever the team size. An exception in any run is raised here, after
    every run has ended (none is left writing into the caller's array).
    """
    runs = shares(members, workers)
    if members <= 0:
        return
    if len(runs) == 1:
        kernel(*args, 0, members)
        return
    pool = _executor(len(runs) - 1)
    futures = [pool.submit(kernel, *args, lo, hi) for lo, hi in runs[1:]]
    error = None
    try:
        kernel(*args, *runs[0])
    except BaseException as exc:  # wait for the others before raising: they write the same array
        error = exc
    for future in futures:
        try:
            future.result()
        except BaseException as exc:
            error = error or exc
    if error is not None:
        raise error
