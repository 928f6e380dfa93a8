"""GPU timers: the ones ``python -m rotate.bench`` times with (rotate/bench.py), so every GPU benchmark's
numbers are taken alike and compare with its table.

Why private: they are ``rotate.bench``'s helpers, not its command line; the names here are the
benchmarks' contract, so a rename in rotate/bench.py breaks here, once.

* ``whole_call_timers(cuda, stream, calls=20)``: (name, timer) pairs for the whole call, back to back
  between two events, and one synchronised call at a time;
* ``events_timer(cuda, stream)``: device time alone, CUDA events around one call;
* ``memcpy(cuda, nbytes, stream)``: a device-to-device copy of ``nbytes`` (and the buffers to keep);
* ``time_all_ways(fn, timers, repeat)``: medians of ``fn`` under each timer;
* ``with_pct(times, memcpy_ms)``: those times with each one's % of the memcpy.
"""

from __future__ import annotations

from rotate import bench as _bench

# Looked up at each call, so a test that stubs rotate.bench's helper stubs the benchmarks' too.


def whole_call_timers(cuda, stream, calls: int = 20):
    return _bench._whole_call_timers(cuda, stream, calls)


def events_timer(cuda, stream):
    return _bench._events_timer(cuda, stream)


def memcpy(cuda, nbytes: int, stream):
    return _bench._memcpy(cuda, nbytes, stream)


def time_all_ways(fn, timers, repeat: int) -> dict:
    return _bench._time_all_ways(fn, timers, repeat)


def with_pct(times: dict, memcpy_ms: float) -> dict:
    return _bench._with_pct(times, memcpy_ms)
