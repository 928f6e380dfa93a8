"""Benchmarks that refuse a busy machine (issue #36): the load check CPU benchmarks share.

A CPU timing taken while other processes run measures them too (issue #36: a committed run at load
average 5.6 put rotate at 0.9x ``np.roll``'s call where a quiet machine gives 1.6x). A benchmark that
writes results calls::

    from rotate import bench_env

    bench_env.add_arguments(parser)            # --max-load LOAD, --allow-busy
    args = parser.parse_args(argv)
    gate = bench_env.LoadGate.from_args(args)  # reads the load now: refuses (exit 3) on a busy machine
    ...                                        # the benchmark
    result = gate.finish(result)               # the load at the end; "load_check" and "usable_for_docs" added
    ...                                        # write result
    return gate.status()                       # 3 when the end was busy (the file is kept, marked unusable)

The threshold is the 1-minute load average over 0.5 per core (``os.cpu_count()``: the load average is
the whole machine's), or ``--max-load``. At the start a load over it refuses the run: exit status 3 and a
message naming the load and the fix, unless ``--allow-busy``, which runs anyway and marks the result
``"usable_for_docs": false``. ``"usable_for_docs"`` also needs the default threshold met at both ends
(a ``--max-load`` above it runs, and is marked). At the end the benchmark's own threads are in the load
average, so the check subtracts them: the process's CPU time (its children's included) over the wall
time is how many threads it kept running, and the 1-minute average holds ``1 - exp(-seconds / 60)`` of
that. Over the threshold there (other processes started meanwhile), the result is still written but
marked unusable, and :meth:`LoadGate.status` is 3.

The documents only quote results that pass :func:`load_problem` at the default threshold, whatever
``--max-load`` a run was given (``tools/tables.py``, ``benchmarks/rows_bench.py --docs-only``;
``tests/project/test_docs.py`` checks every CPU result README.md and docs/performance.md cite).
``benchmarks/busy_bench.py`` loads the machine on purpose and does not take the check.

No public API: the benchmarks' shared code, importable without numba's kernels being compiled.
"""

from __future__ import annotations

import math
import os
import sys
import time
from typing import Any, Optional

#: The default threshold: a 1-minute load average above this much per core is a busy machine.
PER_CORE = 0.5
#: Exit status of a benchmark that refused to start, or whose end load was over the threshold.
BUSY_STATUS = 3
#: Benchmarks whose results are CPU timings (``rotate.bench`` only with ``"mode": "cpu"``): the ones the
#: documents' load check applies to.
#: (``busy_bench``, which loads the machine on purpose, is not one.)
CPU_TIMING_BENCHMARKS = frozenset({"cpu_bench", "call_overhead", "rows_bench", "random_bench", "cpu_aliasing",
                                   "rows_shift_dtypes", "short_rows_bench", "cold_start"})


def cores() -> int:
    """The machine's CPU count (the load average counts runnable threads on all of them)."""
    return os.cpu_count() or 1


def load_averages() -> Optional[list]:
    """``os.getloadavg()`` as a list (1, 5 and 15 minutes); None where the OS has none."""
    try:
        return [float(x) for x in os.getloadavg()]
    except (AttributeError, OSError):
        return None


def threshold(max_load: Optional[float] = None, ncores: Optional[int] = None) -> float:
    """The 1-minute load average a run may start and end under: ``max_load``, or 0.5 per core."""
    if max_load is not None:
        return float(max_load)
    return PER_CORE * (ncores if ncores is not None else cores())


def add_arguments(parser: Any) -> None:
    """``--max-load`` and ``--allow-busy`` on an argparse parser (or argument group)."""
    parser.add_argument("--max-load", type=float, default=None, metavar="LOAD",
                        help=f"refuse to run when the 1-minute load average exceeds LOAD at the start or end "
                             f"(default {PER_CORE} per core: {threshold():g} here)")
    parser.add_argument("--allow-busy", action="store_true",
                        help="run on a busy machine anyway; the result is marked \"usable_for_docs\": false")


_now = time.monotonic  # the wall clock of a run (tests replace it)


def _cpu_seconds() -> float:
    """CPU seconds of this process's threads and of its waited-for children."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


_NO_LOAD = "no load average on this system (os.getloadavg): the run cannot be checked"


def _fix(name: str) -> str:
    return (f"wait until the machine is quiet (`uptime`: other jobs done), then run {name} again; "
            f"--allow-busy runs anyway and marks the result unusable for the docs, --max-load LOAD "
            f"changes the threshold")


class LoadGate:
    """The load check of one benchmark run: :meth:`start` (or :meth:`from_args`), run, :meth:`finish`."""

    def __init__(self, max_load: Optional[float] = None, allow_busy: bool = False, name: str = "the benchmark",
                 log: Any = None) -> None:
        self.cores = cores()
        self.max_load = threshold(max_load, self.cores)
        self.allow_busy = bool(allow_busy)
        self.name = name
        self.log = log if log is not None else (lambda text: print(text, file=sys.stderr))
        self.start_load: Optional[list] = None
        self.end_load: Optional[list] = None
        self.start_problems: list = []  # found by start()
        self.end_problems: list = []  # found by the latest finish()
        self.record: Optional[dict] = None
        self._started = False
        self._wall = self._cpu = 0.0

    @property
    def problems(self) -> list:
        """Why this run is busy so far (the start's, and the latest :meth:`finish`'s), or nothing."""
        return self.start_problems + self.end_problems

    @classmethod
    def from_args(cls, args: Any, name: Optional[str] = None) -> "LoadGate":
        """A gate with ``args.max_load`` and ``args.allow_busy`` (from :func:`add_arguments`), started."""
        gate = cls(getattr(args, "max_load", None), getattr(args, "allow_busy", False),
                   name or os.path.basename(sys.argv[0] or "the benchmark"))
        gate.start()
        return gate

    def start(self) -> "LoadGate":
        """Read the load now; on a busy machine, refuse (``SystemExit`` with status 3) unless allowed."""
        self.start_load = load_averages()
        self._wall, self._cpu, self._started = _now(), _cpu_seconds(), True
        self.start_problems = []
        if self.start_load is None:
            self.start_problems.append(_NO_LOAD)
        elif self.start_load[0] > self.max_load:
            problem = (f"1-minute load average {self.start_load[0]:.2f} at the start exceeds {self.max_load:g} "
                       f"({self._threshold_words()})")
            self.start_problems.append(problem)
            if not self.allow_busy:
                self.log(f"{self.name}: refusing to run: {problem}. To fix: {_fix(self.name)}.")
                raise SystemExit(BUSY_STATUS)
            self.log(f"{self.name}: {problem}; --allow-busy: running, the result is marked unusable for the docs")
        return self

    def _threshold_words(self) -> str:
        default = threshold(None, self.cores)
        if self.max_load == default:
            return f"{PER_CORE} per core on {self.cores} cores"
        return f"--max-load; the default is {default:g}"

    def finish(self, result: Optional[dict] = None) -> dict:
        """Read the load at the end; add ``load_check`` and ``usable_for_docs`` to ``result`` (returned).

        May be called again (a benchmark that saves its result after every case): each call reads the
        end anew and replaces what the previous one found."""
        if not self._started:
            self.start()
        seconds = max(_now() - self._wall, 1e-9)
        running = max(0.0, (_cpu_seconds() - self._cpu) / seconds)  # this process's threads, on average
        own = running * (1.0 - math.exp(-seconds / 60.0))  # their share of the 1-minute average now
        self.end_load = load_averages()
        others = None
        found = []
        if self.end_load is not None:
            others = max(0.0, self.end_load[0] - own)
            if others > self.max_load:
                found.append(f"1-minute load average {self.end_load[0]:.2f} at the end, {others:.2f} without this "
                             f"run's own {own:.2f}, exceeds {self.max_load:g} ({self._threshold_words()})")
                if found != self.end_problems:  # said once, not at every save
                    self.log(f"{self.name}: {found[0]}: the result is marked unusable for the docs. To fix: "
                             f"{_fix(self.name)}.")
        elif _NO_LOAD not in self.start_problems:
            found.append(_NO_LOAD)
        self.end_problems = found
        self.record = {
            "start": self.start_load, "end": self.end_load, "cores": self.cores, "max_load": self.max_load,
            "per_core_default": PER_CORE, "seconds": seconds, "own_threads_running": running,
            "own_share_at_end": own, "end_without_own": others, "allow_busy": self.allow_busy,
            "passed": not self.problems, "problems": list(self.problems),
        }
        default = threshold(None, self.cores)  # the documents' threshold, whatever --max-load said
        quiet = (self.start_load is not None and others is not None and self.start_load[0] <= default
                 and others <= default)
        out = result if result is not None else {}
        out["load_check"] = self.record
        out["usable_for_docs"] = quiet and not self.problems
        return out

    def status(self) -> int:
        """0, or 3 when the run was busy without ``--allow-busy`` (the result was written, marked unusable)."""
        return BUSY_STATUS if self.problems and not self.allow_busy else 0


# --- the documents' side -------------------------------------------------------------------------------


def is_cpu_timing(data: Any) -> bool:
    """Whether a result file holds CPU timings (what a busy machine distorts)."""
    if not isinstance(data, dict):
        return False
    name = str(data.get("benchmark", ""))
    if name in ("rotate.bench", "random_bench"):  # both modes: only the CPU's
        return data.get("mode") == "cpu"
    return name in CPU_TIMING_BENCHMARKS


def load_checked(data: Any) -> bool:
    """Whether a result file records the load at its start and end (:class:`LoadGate`)."""
    return isinstance(data, dict) and isinstance(data.get("load_check"), dict)


def load_problem(data: Any) -> Optional[str]:
    """Why a result file must not be quoted by the documents (marked unusable, or taken on a busy machine
    at the default threshold, 0.5 per core), or None. A file with neither the load check nor a load
    average has nothing to check (None); :func:`load_checked` tells those apart."""
    if not isinstance(data, dict):
        return None
    if data.get("usable_for_docs") is False:
        record = data.get("load_check") or {}
        return "marked unusable for the docs" + (f" ({'; '.join(record['problems'])})" if record.get("problems")
                                                 else "")
    record = data.get("load_check")
    if isinstance(record, dict):
        limit = threshold(None, int(record.get("cores") or 1))
        start, others = (record.get("start") or [None])[0], record.get("end_without_own")
        if start is None or others is None:
            return "no load average recorded at the start or the end"
        if start > limit:
            return f"1-minute load average {start:.2f} at the start, over {limit:g} ({PER_CORE} per core)"
        if others > limit:
            return f"1-minute load average {others:.2f} at the end (this run's own share taken off), over {limit:g}"
        return None
    env = data.get("environment") or data.get("provenance") or {}
    load, cpus = env.get("load_average"), env.get("cpus")
    if isinstance(data.get("load_average"), dict):  # random_bench before the check: its own start and end
        load = data["load_average"].get("start")  # (the end holds the run's own threads: not comparable)
    limit = threshold(None, int(cpus or 1))
    if load and cpus and load[0] > limit:
        return f"1-minute load average {load[0]:.2f} recorded, over {limit:g} ({PER_CORE} per core)"
    return None
