"""Telling users that a call is about to compile: once per process, through the ``rotate`` logger.

A call compiles its kernels the first time it needs them (numba, then cached
on disk for later processes; the GPU's numba-cuda kernels in every process),
which takes seconds (issue #32: 3-18 s for a first call on 2 cores). So that
a stall is never silent, the first compile of the package's code in a
process logs one WARNING record on the ``"rotate"`` logger before the
compile starts, saying what is happening, that it happens once, and how to
do it ahead (``rotate.warmup()``) or silence it
(``logging.getLogger("rotate").setLevel(logging.ERROR)``). With no logging
configured, Python's last-resort handler prints it on stderr; an
application that configures logging routes or filters it like any other
record. Every compile is also logged at INFO when it ends, with its time.

Why ``logging`` and not ``warnings``: it is how the array ecosystem reports
compilation (JAX's ``jax_log_compiles`` logs "Compiling ..." on its loggers,
at WARNING when asked for; ``torch.compile`` through ``TORCH_LOGS``, which
are ``logging`` loggers; numba itself and CuPy say nothing), a compile is a
normal event the caller cannot avoid, only move, and a warning would turn
into an error under ``-W error`` or pytest's ``filterwarnings = error``.

CPU compiles are seen through numba's compile events (``"numba:compile"``,
fired only on a cache miss, before the compile); numba-cuda fires none for
kernels, so the GPU launcher calls :func:`gpu_compiling` where it compiles.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from typing import Any, Iterator, Optional

try:  # numba's event API (numba >= 0.53); without it calls still work, they only compile silently
    from numba.core import event
    _Listener: Any = event.Listener
except ImportError:  # pragma: no cover
    event = None
    _Listener = object

logger = logging.getLogger("rotate")

NOTICES = {
    "cpu": ("rotate: compiling this call's kernels with numba (seconds for each new kind of call; done once, "
            "then cached on disk for later runs). rotate.warmup() compiles them ahead, at a moment you choose; "
            "logging.getLogger('rotate').setLevel(logging.ERROR) silences this notice."),
    "cuda": ("rotate: compiling this call's GPU kernels with numba-cuda (seconds each, in every process: GPU "
             "kernels are not cached on disk). rotate.warmup(gpu=True) compiles them ahead, at a moment you "
             "choose; logging.getLogger('rotate').setLevel(logging.ERROR) silences this notice."),
}

_PREFIX = __name__.split(".")[0] + "."  # "rotate.": the functions this package defines
_told: set = set()  # the targets ("cpu", "cuda") whose notice this process has logged
_told_lock = threading.Lock()
_local = threading.local()  # per thread: depth of our compiles in progress, their start times, warmup's counter


def _ours(dispatcher: Any) -> bool:
    module = getattr(getattr(dispatcher, "py_func", None), "__module__", None) or ""
    return module.startswith(_PREFIX)


def _name(dispatcher: Any) -> str:
    py = dispatcher.py_func
    return f"{py.__module__}.{py.__qualname__}"


def _tell(target: str) -> None:
    """The notice for ``target``, once per process (none in a thread that is warming up)."""
    if getattr(_local, "counter", None) is not None or target in _told:
        return
    with _told_lock:
        if target in _told:
            return
        _told.add(target)
    logger.warning(NOTICES[target])


def _started(target: str) -> None:
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    if not stack:  # not a function compiled for one of ours already compiling
        _tell(target)
    stack.append(time.perf_counter())


def _ended(target: str, what: str) -> None:
    stack = getattr(_local, "stack", None)
    if not stack:
        return
    seconds = time.perf_counter() - stack.pop()
    if stack:
        return
    counter = getattr(_local, "counter", None)
    if counter is not None:
        counter.append((target, what, seconds))
    logger.info("rotate: compiled %s (%s) in %.1f s", what, target, seconds)


class _CpuListener(_Listener):
    """numba's compile events of this package's functions (a cache miss: a load from disk fires none)."""

    def on_start(self, ev) -> None:
        try:
            if _ours(ev.data["dispatcher"]):
                _started("cpu")
        except Exception:  # pragma: no cover - telling must never break a compile
            pass

    def on_end(self, ev) -> None:
        try:
            dispatcher = ev.data["dispatcher"]
            if _ours(dispatcher):
                _ended("cpu", _name(dispatcher))
        except Exception:  # pragma: no cover
            pass


_listener: Optional[_CpuListener] = None


def install() -> None:
    """Listen to numba's compile events (``import rotate`` calls it; idempotent)."""
    global _listener
    if _listener is None and event is not None:
        _listener = _CpuListener()
        event.register("numba:compile", _listener)


@contextlib.contextmanager
def gpu_compiling(kernel: Any) -> Iterator[None]:
    """Around a launch or ``compile`` of a numba-cuda kernel: the notice and the INFO record when it compiles
    (it has no compiled overload yet; every kernel here is compiled for one signature)."""
    if getattr(kernel, "overloads", True):
        yield
        return
    _started("cuda")
    try:
        yield
    finally:
        _ended("cuda", _name(kernel))


@contextlib.contextmanager
def counting() -> Iterator[list]:
    """Collect this thread's compiles of the package's code as ``(target, name, seconds)``, without the
    notice (``rotate.warmup`` reports its own progress)."""
    saved = getattr(_local, "counter", None)
    counter: list = []
    _local.counter = counter
    try:
        yield counter
    finally:
        _local.counter = saved
