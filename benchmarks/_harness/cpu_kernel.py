"""The CPU row kernel that cpu_bench.py times, and its plan.

Why private: cpu_bench.py times the kernel a 1-D or many-rows roll runs (``rotate.roll`` of the same
array runs it on the array's words) without the call's dispatch, as docs/results/cpu-bench.json and
cpu-bench-1thread.json were measured (docs/perf-cpu.md, "Benchmark"); ``python -m rotate.bench --cpu``
times the whole public call.
"""

from __future__ import annotations


def rotate_rows_inplace(words, rows: int, seg: int, k: int) -> None:
    """Rotate each of ``rows`` rows of ``seg`` words of ``words`` left by ``k``, in place."""
    from rotate._backends.cpu import runners

    runners.rotate_rows_inplace(words, rows, seg, k)


def planned(words, rows: int, seg: int, k: int):
    """A callable running the kernel's plan for that call, planned once here: the timing then holds the
    kernel alone (``rotate_rows_inplace`` plans on every call, and a fresh process plans long rows with
    interpreted table builders for its first second, 0.1-0.2 s a 256 MiB plan)."""
    from rotate._backends.cpu import planner, runners
    from rotate._core.plan import Step

    rows, seg, k = int(rows), int(seg), int(k)
    word = words.itemsize
    name, scratch, moved, params = planner.plan_rows_params(rows, seg, k, word)
    step = Step(None, 0, rows, seg * word, k * word, word, name, scratch, moved, params=params)
    return lambda: runners.run_rows(words, step)


def plan_rows(rows: int, seg: int, k: int, word_bytes: int) -> tuple:
    """(algorithm, scratch bytes, bytes moved) the kernel's planner gives that call."""
    from rotate._backends.cpu import planner

    return planner.plan_rows(rows, seg, k, word_bytes)
