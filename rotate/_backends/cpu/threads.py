"""How many lanes (Python threads on nogil kernels) a CPU call may use: numba's thread count, less the
threads other processes keep busy (``/proc/loadavg``, read at most every ``_BUSY_TTL`` seconds).
"""

from __future__ import annotations

import os
import time

import numba

from .tuning import current as _T

def _lanes(work_bytes: int, units: int, max_lanes=None) -> int:
    wanted = _T().lanes if _T().lanes is not None else usable_threads()
    if max_lanes is not None:
        wanted = min(int(wanted), max_lanes)
    return max(1, min(int(wanted), units, work_bytes // _T().min_lane_bytes))


_getter = None  # numba's C getter of the calling thread's count, once the thread pool is up


def _first_getter():
    # numba.get_num_threads() takes a lock and checks the thread pool every
    # call (~0.7 us); once the pool is up, the C getter alone says the same.
    global _getter
    numba.get_num_threads()
    try:
        from numba.np.ufunc import parallel

        getter = parallel._get_num_threads
        getter()
    except Exception:  # pragma: no cover - numba internals moved
        getter = numba.get_num_threads
    _getter = getter
    return getter


def num_threads() -> int:
    """numba's thread count for the calling thread."""
    getter = _getter
    return (getter if getter is not None else _first_getter())()


# A busy machine: numba's threads wait for each other at the end of every
# parallel region, so one thread the OS leaves off a core stalls the whole
# call (issue #30: a 16 MiB roll took 15.7 ms on two threads with both cores
# busy, 0.65 ms on one). Plans use no more threads than the cores other
# processes leave free, read from the runnable count in /proc/loadavg at
# most every _BUSY_TTL seconds (a call of a few ms reads it once).
_BUSY_TTL = 0.01
_busy = [-1.0, 0]  # when last read, other processes' runnable threads then
_LOADAVG = "/proc/loadavg"
_CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def _others_running(threads: int) -> int:
    """Runnable threads of other processes now, at least (0 where the OS does not say)."""
    now = time.monotonic()
    if now - _busy[0] < _BUSY_TTL:
        return _busy[1]
    try:
        with open(_LOADAVG, "rb") as f:
            running = int(f.read().split()[3].split(b"/")[0])
    except (OSError, ValueError, IndexError):
        running = 0
    # The count includes this thread and may include this process's other threads (numba's workers
    # spin a little after a region): all of ours are discounted, so a quiet machine keeps them.
    _busy[0], _busy[1] = now, max(0, running - threads)
    return _busy[1]


def usable_threads() -> int:
    """numba's thread count, less the cores that other processes keep busy (at least 1): what plans use."""
    threads = num_threads()
    if threads <= 1 or not _T().adapt_to_load:
        return threads
    return max(1, min(threads, _CORES - _others_running(threads)))
