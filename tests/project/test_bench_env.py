"""Issue #36 item 3: benchmarks refuse a busy machine (``rotate/bench_env.py``), the load faked.

The gate reads ``os.getloadavg()`` at the start and the end of a run: over the threshold (0.5 per core,
or ``--max-load``) at the start it refuses to run (exit status 3, a message naming the load and the fix)
unless ``--allow-busy``, which marks the result ``"usable_for_docs": false``; at the end the run's own
threads are taken off first. ``load_problem`` is what the docs generators ask of a result file.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rotate import bench_env

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def machine(monkeypatch):
    """A fake machine: ``machine.load`` is what os.getloadavg returns, ``machine.cores`` os.cpu_count, and the
    run's wall clock and CPU seconds advance by ``machine.tick(seconds, cpu_seconds)``."""

    class Machine:
        load = (0.1, 0.1, 0.1)
        cores = 2
        wall = 1000.0
        cpu = 5.0

        def tick(self, seconds, cpu_seconds=0.0):
            self.wall += seconds
            self.cpu += cpu_seconds

    m = Machine()
    monkeypatch.setattr(os, "getloadavg", lambda: m.load)
    monkeypatch.setattr(os, "cpu_count", lambda: m.cores)
    monkeypatch.setattr(bench_env, "_now", lambda: m.wall)
    monkeypatch.setattr(bench_env, "_cpu_seconds", lambda: m.cpu)
    return m


def parse(*argv):
    parser = argparse.ArgumentParser()
    bench_env.add_arguments(parser)
    return parser.parse_args(list(argv))


def test_quiet_machine_runs_and_is_usable(machine):
    gate = bench_env.LoadGate.from_args(parse(), name="bench")
    machine.tick(30)
    result = gate.finish({"rows": []})
    assert result["usable_for_docs"] is True and gate.status() == 0
    record = result["load_check"]
    assert record["start"] == [0.1, 0.1, 0.1] and record["end"] == [0.1, 0.1, 0.1]
    assert record["cores"] == 2 and record["max_load"] == 1.0 and record["passed"] is True
    assert bench_env.load_problem(result) is None and bench_env.load_checked(result)


def test_busy_start_refuses_with_the_load_and_the_fix(machine, capsys):
    machine.load = (1.3, 0.9, 0.5)  # over 0.5 per core on 2 cores
    with pytest.raises(SystemExit) as exc:
        bench_env.LoadGate.from_args(parse(), name="call_overhead.py")
    assert exc.value.code == bench_env.BUSY_STATUS
    message = capsys.readouterr().err
    assert "refusing to run" in message and "1.30" in message and "0.5 per core on 2 cores" in message
    assert "--allow-busy" in message and "uptime" in message


def test_threshold_scales_with_cores(machine):
    machine.load, machine.cores = (3.9, 3.9, 3.9), 8  # 0.49 per core: quiet
    bench_env.LoadGate.from_args(parse())
    machine.cores = 7  # 0.56 per core: busy
    with pytest.raises(SystemExit):
        bench_env.LoadGate.from_args(parse())


def test_allow_busy_runs_and_marks_the_result_unusable(machine, capsys):
    machine.load = (2.5, 2.0, 1.0)
    gate = bench_env.LoadGate.from_args(parse("--allow-busy"), name="bench")
    machine.tick(10)
    result = gate.finish({})
    assert result["usable_for_docs"] is False and gate.status() == 0
    assert "2.50 at the start" in result["load_check"]["problems"][0]
    assert "marked unusable" in bench_env.load_problem(result)
    assert "--allow-busy" in capsys.readouterr().err


def test_max_load_overrides_the_threshold(machine):
    machine.load = (1.5, 1.0, 1.0)
    gate = bench_env.LoadGate.from_args(parse("--max-load", "2"))
    assert gate.max_load == 2.0
    result = gate.finish({})
    assert gate.status() == 0 and result["load_check"]["passed"] is True
    # The documents keep the default threshold whatever --max-load a run was given.
    assert result["usable_for_docs"] is False
    assert "marked unusable" in bench_env.load_problem(result)
    assert "over 1" in bench_env.load_problem(dict(result, usable_for_docs=True))
    machine.load = (0.3, 0.3, 0.3)
    with pytest.raises(SystemExit):
        bench_env.LoadGate.from_args(parse("--max-load", "0.2"))


def test_busy_end_marks_the_result_and_fails_the_run(machine, capsys):
    gate = bench_env.LoadGate.from_args(parse(), name="bench")
    machine.tick(120, cpu_seconds=120)  # one thread of ours for two minutes
    own = 1.0 * (1 - math.exp(-2))
    machine.load = (own + 1.2, 1.0, 0.5)  # others: 1.2 on 2 cores
    result = gate.finish({})
    assert result["usable_for_docs"] is False and gate.status() == bench_env.BUSY_STATUS
    record = result["load_check"]
    assert record["own_share_at_end"] == pytest.approx(own) and record["end_without_own"] == pytest.approx(1.2)
    assert "at the end" in capsys.readouterr().err
    assert bench_env.load_problem(result)


def test_the_runs_own_threads_are_not_a_busy_machine(machine):
    """Two threads of ours for a minute raise the 1-minute average by 2 * (1 - 1/e): not other processes."""
    gate = bench_env.LoadGate.from_args(parse())
    machine.tick(60, cpu_seconds=120)
    machine.load = (0.1 + 2 * (1 - math.exp(-1)), 1.0, 0.5)
    result = gate.finish({})
    assert result["usable_for_docs"] is True and gate.status() == 0
    assert result["load_check"]["end_without_own"] == pytest.approx(0.1)


def test_no_load_average_is_never_usable(machine, monkeypatch):
    def missing():
        raise OSError("no load average")

    monkeypatch.setattr(os, "getloadavg", missing)
    gate = bench_env.LoadGate.from_args(parse())
    result = gate.finish({})
    assert result["usable_for_docs"] is False and result["load_check"]["start"] is None


def test_load_problem_of_older_files():
    """Files from before the gate: only their one recorded load average can be checked."""
    assert bench_env.load_problem({"environment": {"load_average": [0.8, 1, 1], "cpus": 2}}) is None
    assert "5.60" in bench_env.load_problem({"environment": {"load_average": [5.6, 1, 1], "cpus": 2}})
    assert bench_env.load_problem({"environment": {}}) is None
    assert not bench_env.load_checked({"environment": {"load_average": [0.8, 1, 1], "cpus": 2}})
    assert bench_env.is_cpu_timing({"benchmark": "call_overhead"})
    assert bench_env.is_cpu_timing({"benchmark": "rotate.bench", "mode": "cpu"})
    assert not bench_env.is_cpu_timing({"benchmark": "rotate.bench", "mode": "gpu"})
    assert not bench_env.is_cpu_timing({"benchmark": "busy_bench"})  # loads the machine on purpose


# Two scripts in the fast suite, the other four (a fresh interpreter each) under -m slow.
@pytest.mark.parametrize("script", ["benchmarks/call_overhead.py", "benchmarks/cpu_bench.py",
                                    *(pytest.param(s, marks=pytest.mark.slow) for s in (
                                        "benchmarks/rows_bench.py", "benchmarks/cold_start.py",
                                        "benchmarks/probes/cpu_aliasing.py", "benchmarks/probes/rows_shift_dtypes.py"))])
def test_benchmarks_take_the_gate(script, tmp_path):
    """Each CPU benchmark that writes results refuses a busy machine before it measures or writes anything
    (here: a threshold no machine meets)."""
    out = tmp_path / "out.json"
    proc = subprocess.run([sys.executable, script, "--max-load", "-1", "--json", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == bench_env.BUSY_STATUS, proc.stdout + proc.stderr
    assert "refusing to run" in proc.stderr and not out.exists()


def test_rotate_bench_cpu_takes_the_gate(tmp_path):
    out = tmp_path / "out.json"
    proc = subprocess.run([sys.executable, "-m", "rotate.bench", "--cpu", "--quick", "--max-load", "-1", "--json",
                           str(out)], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == bench_env.BUSY_STATUS, proc.stdout + proc.stderr
    assert "refusing to run" in proc.stderr and not out.exists()


def test_call_overhead_result_records_the_check(tmp_path):
    """A short run with a threshold every machine meets writes the check into its result."""
    out = tmp_path / "out.json"
    proc = subprocess.run([sys.executable, "benchmarks/call_overhead.py", "--no-gpu", "--number", "20",
                           "--repeats", "2", "--max-load", "1e9", "--json", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads(out.read_text())
    assert result["load_check"]["max_load"] == 1e9 and result["load_check"]["passed"] is True
    assert result["usable_for_docs"] is (bench_env.load_problem(dict(result, usable_for_docs=True)) is None)
    assert len(result["load_check"]["start"]) == 3 and len(result["load_check"]["end"]) == 3


def test_finish_again_replaces_the_end(machine):
    """A benchmark that saves after every case calls finish() each time: the latest end counts."""
    gate = bench_env.LoadGate.from_args(parse(), name="bench")
    machine.load = (1.6, 1.0, 1.0)
    assert gate.finish({})["usable_for_docs"] is False and gate.status() == bench_env.BUSY_STATUS
    machine.load = (0.2, 0.5, 0.5)
    result = gate.finish({})
    assert result["usable_for_docs"] is True and gate.status() == 0 and result["load_check"]["problems"] == []
