"""The benchmarks a user runs: ``python -m rotate.bench`` and benchmarks/wave_bench.py on a machine without a
GPU, their progress line, and the plot drawn from committed result files (no GPU needed)."""

import importlib.util
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rotate import bench

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "docs" / "results"
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


class Terminal(io.StringIO):
    def isatty(self):
        return True


# --- the progress line --------------------------------------------------------------------------------

def test_progress_gives_case_i_of_n_and_the_time_left_from_the_work_done():
    clock, out = Clock(), io.StringIO()
    progress = bench.Progress([1, 1, 2], stream=out, clock=clock)
    progress.step("first")
    clock.now += 10  # the first case (weight 1) took 10 s: 3 units are left, the current one included
    progress.step("second")
    clock.now += 10
    progress.step("third")  # 20 s for 2 units: the last case (2 units) about 20 s
    clock.now += 25
    progress.finish()
    lines = out.getvalue().splitlines()
    assert lines[0] == "[1/3] first: 0s so far, time left unknown until a case has finished"
    assert lines[1] == "[2/3] second: 10s so far, about 30s left"
    assert lines[2] == "[3/3] third: 20s so far, about 20s left"
    assert lines[3] == "[3/3] done in 45s"


def test_progress_leaves_the_first_case_out_once_a_second_has_finished():
    """The first case compiles: 100 s, then 10 s a case; the estimate follows the 10 s."""
    clock, out = Clock(), io.StringIO()
    progress = bench.Progress([1] * 5, stream=out, clock=clock)
    progress.step("1")
    clock.now += 100
    progress.step("2")
    clock.now += 10
    progress.step("3")
    clock.now += 10
    progress.step("4")
    lines = out.getvalue().splitlines()
    assert lines[1].endswith("1m40s so far, about 6m40s left")  # only the first case to go by: 4 x 100 s
    assert lines[2].endswith("1m50s so far, about 30s left")
    assert lines[3].endswith("2m00s so far, about 20s left")


def test_progress_durations_read_as_minutes_and_hours():
    assert [bench._duration(s) for s in (0, 59.4, 61, 3599, 3600 * 2 + 60 * 5)] == ["0s", "59s", "1m01s", "59m59s",
                                                                                     "2h05m"]


def test_progress_on_a_terminal_is_one_line_redrawn_under_the_results(capsys):
    clock, out = Clock(), Terminal()
    progress = bench.Progress([1, 1], stream=out, clock=clock)
    log = progress.log(print)
    progress.step("a")
    log("result a")
    clock.now += 3
    progress.step("b")
    progress.finish()
    text = out.getvalue()
    assert "\n" not in text.replace("done in 3s\n", "")  # redrawn in place, never scrolled
    assert text.count("\r\x1b[K") >= 4  # cleared before the result, redrawn after it, at each step, at the end
    assert "[2/2] b: 3s so far, about 3s left" in text
    assert capsys.readouterr().out == "result a\n"


def test_progress_off_writes_nothing():
    out = io.StringIO()
    progress = bench.Progress([1], stream=out, enabled=False)
    progress.step("x")
    progress.log(lambda *a: None)("y")
    progress.finish()
    assert out.getvalue() == ""


def test_cases_are_the_ones_the_runs_time():
    assert bench.cases([2, 4096], ["uint8", "complex128"], ["3", "n/3"]) == [
        (2, "uint8", "3"), (2, "uint8", "n/3"),  # 2 bytes of complex128: no element, skipped as run() skips it
        (4096, "uint8", "3"), (4096, "uint8", "n/3"), (4096, "complex128", "3"), (4096, "complex128", "n/3")]


# --- python -m rotate.bench on the CPU -----------------------------------------------------------------

def _bench(args, tmp_path):
    code = ("import sys, rotate.bench as b; rc = b.main(sys.argv[1:]); "
            "print('CUDA planner imported:', 'rotate._backends.cuda.registry' in sys.modules); sys.exit(rc)")
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=ENV,
                          cwd=tmp_path, timeout=900)


@pytest.mark.slow  # a benchmark run end to end (seconds on 2 cores); CI runs it with -m slow
def test_cpu_benchmark_runs_checks_and_writes_json_and_a_plot(tmp_path):
    pytest.importorskip("matplotlib")
    r = _bench(["--cpu", "--sizes", "64K,1M", "--dtypes", "uint8,float64", "--shifts", "3,n/3", "--repeat", "1",
                "--flush-mib", "0", "--json", "out.json", "--plot", "out.png", "--allow-busy"], tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "CUDA planner imported: False" in r.stdout  # the CPU benchmark never reaches the GPU planner
    assert "[1/8] 64 KiB uint8 shift 3" in r.stderr and "[8/8] done in" in r.stderr and " left" in r.stderr
    data = json.loads((tmp_path / "out.json").read_text())
    assert data["benchmark"] == "rotate.bench" and data["format"] == 2 and data["mode"] == "cpu"
    assert data["environment"]["git_commit"] and data["environment"]["cpu_knobs"]
    assert len(data["load_check"]["start"]) == 3 and isinstance(data["usable_for_docs"], bool)  # (--allow-busy)
    rows = data["rows"]
    assert len(rows) == 8 and all(row["correct"] is True for row in rows)
    assert {(row["size_bytes"], row["dtype"], row["shift_label"]) for row in rows} == {
        (size, dtype, shift) for size in (64 << 10, 1 << 20) for dtype in ("uint8", "float64") for shift in ("3", "n/3")}
    for row in rows:
        assert row["ms"] > 0 and row["pct_memcpy"] > 0 and row["numpy_pct"] > 0 and row["algorithm"] != "noop"
    assert (tmp_path / "out.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # The file it wrote plots again, without running anything.
    r = _bench(["--from", "out.json", "--plot", "again.png"], tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    assert (tmp_path / "again.png").exists() and "64 KiB      uint8 shift       3" in r.stdout


def test_without_a_gpu_the_default_is_the_cpu_benchmark_and_it_says_so(tmp_path):
    if bench.gpu_available():
        pytest.skip("a GPU is here: the default is the GPU benchmark")
    r = _bench(["--sizes", "64K", "--dtypes", "uint8", "--shifts", "3", "--repeat", "1", "--flush-mib", "0",
                "--no-progress", "--allow-busy"], tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "no usable CUDA GPU: benchmarking the CPU backend" in r.stderr
    assert "[1/1]" not in r.stderr  # --no-progress
    assert "uint8 shift       3" in r.stdout and "CUDA planner imported: False" in r.stdout
    r = _bench(["--gpu", "--quick"], tmp_path)
    assert r.returncode == 1 and "--gpu: no usable CUDA GPU" in r.stderr


@pytest.mark.parametrize("flag", [["--tiles", "32768:256"], ["--set", "co_resident=False"], ["--profile"],
                                  ["--calls", "5"]])
def test_gpu_only_options_are_refused_on_the_cpu(flag, capsys):
    with pytest.raises(SystemExit) as exc:
        bench.main(["--cpu", *flag])
    assert exc.value.code == 2
    assert "GPU only" in capsys.readouterr().err


# --- plots from committed results (no GPU) -------------------------------------------------------------

def _tables():
    spec = importlib.util.spec_from_file_location("tables", ROOT / "tools" / "tables.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_gate_plot_is_a_readable_grid_with_the_peers(tmp_path):
    pytest.importorskip("matplotlib")
    tables = _tables()
    assert (RESULTS / tables.CHAIN_GATE_PLOT).exists()
    drawn = tables.draw_plot(tables.CHAIN_GATE_PLOT, tmp_path / "gate.png")
    assert drawn["grid"] == (2, 4)  # not one row of eight panels
    assert drawn["panels"] == list(tables.GATE_SHIFTS)
    assert drawn["dtypes"] == list(tables.GATE_DTYPES)
    assert drawn["sizes"] == [1 << 30, 4 << 30, 16 << 30]
    assert drawn["peers"] == ["cupy.roll (out of place)", "torch.roll (out of place)"]
    width, height = drawn["size_px"]
    assert width / height < 2.5 and width <= 2000
    # The committed PNG is this drawing (same size; pixels differ between matplotlib versions).
    import matplotlib.image

    assert matplotlib.image.imread(RESULTS / tables.CHAIN_GATE_PLOT).shape[:2] == (height, width)


def test_plots_from_files_of_other_references_are_refused():
    with pytest.raises(ValueError, match="different references"):
        bench.load_results([RESULTS / "gpu-e2e-chain-eee3343-h200.json", RESULTS / "cpu-bench.json"])


def test_cpu_bench_results_load_and_plot(tmp_path):
    pytest.importorskip("matplotlib")
    data = json.loads((RESULTS / "cpu-bench.json").read_text())
    rows, mode, sources = bench.load_results([RESULTS / "cpu-bench.json"])
    assert mode == "cpu-copyto" and len(rows) == sum(len(d["rows"]) for d in data["dtypes"].values())
    assert f"commit {data['environment']['git_commit'][:12]}" in sources[0]
    assert {"1", "3", "4097", "n/3", "n/2+3", "n-1"} <= {r["shift_label"] for r in rows}  # and any random shifts
    drawn = bench.plot(rows, tmp_path / "cpu.png", mode, sources)
    assert drawn["grid"][1] <= 4 and drawn["peers"] == ["np.roll + copy back"]


# --- benchmarks/wave_bench.py without a GPU ------------------------------------------------------------

def _wave_bench(tmp_path, *args, block_numba_cuda=False):
    code = ("import runpy, sys\n"
            + ("sys.modules['numba.cuda'] = None\n" if block_numba_cuda else "")
            + f"sys.argv = ['wave_bench.py', *{list(args)!r}]\n"
            f"runpy.run_path({str(ROOT / 'benchmarks' / 'wave_bench.py')!r}, run_name='__main__')\n")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=ENV, cwd=tmp_path,
                          timeout=900)


@pytest.mark.slow  # a benchmark run end to end (seconds on 2 cores); CI runs it with -m slow
def test_wave_bench_quick_times_the_cpu_software_wave(tmp_path):
    r = _wave_bench(tmp_path, "--quick", "--cpu", "--reps", "1", "--warmup", "1", "--inner", "1", "--json", "w.json")
    assert r.returncode == 0, r.stderr[-3000:]
    data = json.loads((tmp_path / "w.json").read_text())
    assert data["meta"]["mode"] == "cpu" and data["meta"]["simd_width"] in (4, 8, 16)
    wave = [row for row in data["rows"] if row["bench"] == "software wave"]
    assert wave and all(row["bit_identical_to_numpy"] for row in wave)
    assert any("w32" in row["case"] and "(default)" in row["case"] for row in wave)
    assert all(row["matches_numpy"] for row in data["rows"] if row["bench"] == "3-point stencil")
    assert "MISMATCH" not in r.stdout and "done in" in r.stderr and " left" in r.stderr


@pytest.mark.slow  # a benchmark run end to end in a subprocess (CI runs -m slow)
def test_wave_bench_runs_without_numba_cuda(tmp_path):
    r = _wave_bench(tmp_path, "--quick", "--reps", "1", "--warmup", "1", "--inner", "1", "--no-progress",
                    block_numba_cuda=True)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "no usable CUDA GPU" in r.stderr and "software wave" in r.stdout


# --- benchmarks/rows_gpu_bench.py without a GPU --------------------------------------------------------

def test_rows_gpu_bench_without_a_gpu_says_why_and_how_to_plot_instead(tmp_path):
    """A clear message and exit status 1, not a traceback from torch or a case list of CUDA errors."""
    if bench.gpu_available():
        pytest.skip("a GPU is here")
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "rows_gpu_bench.py"), "--only", "0", "--json",
                        "out.json"], capture_output=True, text=True, env=ENV, cwd=tmp_path, timeout=300)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "rows_gpu_bench.py times the GPU only: no usable CUDA GPU" in r.stderr and "--from RUN.json" in r.stderr
    assert "Traceback" not in r.stderr and not (tmp_path / "out.json").exists()


# --- the progress line of call_overhead.py, cold_start.py, rows_bench.py and rows_gpu_bench.py ---------

def _script(name, monkeypatch):
    """benchmarks/NAME.py loaded as its script runs (benchmarks/ on sys.path, for _harness)."""
    monkeypatch.syspath_prepend(str(ROOT))
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    spec = importlib.util.spec_from_file_location(f"bench_{name}", ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run_script(name, args, tmp_path):
    return subprocess.run([sys.executable, str(ROOT / "benchmarks" / f"{name}.py"), *args], capture_output=True,
                          text=True, env=ENV, cwd=tmp_path, timeout=300)


def _progress_lines(stderr):
    return [line for line in stderr.splitlines() if line.startswith("[")]


def test_call_overhead_shows_its_progress_and_no_progress_silences_it(tmp_path):
    quick = ["--no-gpu", "--number", "20", "--repeats", "2", "--allow-busy"]
    r = _run_script("call_overhead", quick, tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    lines = _progress_lines(r.stderr)
    assert lines[0].startswith("[1/3] 10 float64: ") and lines[2].startswith("[3/3] 100x100 float64, axis 1: ")
    assert " left" in lines[1] and lines[-1].startswith("[3/3] done in")
    # The results stay on stdout, the progress on stderr (a missed gate prints a list on stdout: "[" alone
    # would depend on the machine's load).
    assert "ratio" in r.stdout and not _progress_lines(r.stdout)
    r = _run_script("call_overhead", [*quick, "--no-progress"], tmp_path)
    assert r.returncode == 0 and not _progress_lines(r.stderr), r.stderr[-3000:]


def test_call_overhead_weighs_its_cases_by_calls_and_bytes(monkeypatch):
    bench = _script("call_overhead", monkeypatch)
    cpu = bench.weights(2000, 15, gpu=False)
    assert len(cpu) == len(bench.CPU_CASES) and cpu[0] < cpu[1] < cpu[2]  # 10, 4096, 100x100 float64
    assert bench.weights(20, 15, gpu=False)[0] < cpu[0]  # fewer calls, less time
    assert bench.weights(2000, 15, gpu=True)[:3] == cpu and len(bench.weights(2000, 15, gpu=True)) == 4


@pytest.mark.slow  # a benchmark run end to end (seconds on 2 cores); CI runs it with -m slow
def test_cold_start_shows_a_scenario_a_case(tmp_path):
    """One real scenario (two fresh processes compiling one small roll: a few seconds)."""
    r = _run_script("cold_start", ["--only", "small", "--allow-busy"], tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    assert _progress_lines(r.stderr)[0].startswith("[1/1] small, cold and warm: ")
    assert _progress_lines(r.stderr)[-1].startswith("[1/1] done in") and "small: first call" in r.stdout


def test_cold_start_progress_counts_the_scenarios_and_no_progress_silences_it(monkeypatch, capsys):
    """The wiring, without the fresh processes: each scenario one case of N, the time left after the first."""
    bench = _script("cold_start", monkeypatch)
    ran = []

    def run(code, cache):
        ran.append(code)
        return {"import_numba": 0.1, "import_rotate": 0.1, "first_call": 0.5,
                "compiles": [{"name": "f", "args": "()", "seconds": 0.4, "depth": 0, "start": 0.0}]}

    monkeypatch.setattr(bench, "run", run)
    assert bench.main(["--only", "small,rows,strided", "--allow-busy"]) in (0, bench.bench_env.BUSY_STATUS)
    out, err = capsys.readouterr()
    lines = _progress_lines(err)
    assert [line.split(":")[0] for line in lines] == ["[1/3] small, cold and warm", "[2/3] rows, cold and warm",
                                                      "[3/3] strided, cold and warm"] + [lines[-1].split(":")[0]]
    assert lines[-1].startswith("[3/3] done in") and " left" in lines[2]
    assert len(ran) == 6 and out.count("first call 0.50 s cold") == 3
    bench.main(["--only", "small,rows", "--allow-busy", "--no-progress"])
    out, err = capsys.readouterr()
    assert not _progress_lines(err) and out.count("first call 0.50 s cold") == 2


@pytest.mark.slow  # a benchmark run end to end (seconds on 2 cores); CI runs it with -m slow
def test_rows_bench_small_sizes_run_and_show_their_progress(tmp_path):
    """--mib below 4 used to give the 4 MiB rows case no row at all (a ZeroDivisionError in its traffic):
    now it has one. Three cases (--only) keep the run short on a cold numba cache."""
    quick = ["--mib", "1", "--only", "0,19,20", "--repeats", "1", "--flush-mib", "0", "--allow-busy"]
    r = _run_script("rows_bench", [*quick, "--json", "r.json"], tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    lines = _progress_lines(r.stderr)
    assert lines[0].startswith("[1/3] roll_rows rows of 4 B, uint8: ")
    assert lines[1].startswith("[2/3] roll_rows rows of 4194304 B, float32: ")
    assert lines[2].startswith("[3/3] fftshift 2-D, even sides, complex64: ") and " left" in lines[2]
    assert lines[-1].startswith("[3/3] done in")
    rows = json.loads((tmp_path / "r.json").read_text())["rows"]
    assert [r["shape"] for r in rows] == [[262144, 4], [1, 1 << 20], [512, 256]]
    assert "docs/perf-cpu.md left as it is" in r.stdout
    r = _run_script("rows_bench", [*quick, "--json", "r.json", "--no-progress"], tmp_path)
    assert r.returncode == 0 and not _progress_lines(r.stderr), r.stderr[-3000:]


def test_rows_bench_cases_hold_a_row_at_every_size_and_bad_arguments_are_refused(monkeypatch, tmp_path, capsys):
    bench = _script("rows_bench", monkeypatch)
    for mib in (1, 2, 3, 4, 256):
        cases = bench.cases(mib << 20)
        assert len(cases) == 24 and all(min(shape) >= 1 for _, shape, _, _ in cases), mib
        assert len(bench.weights(cases, 0)) == 24
    assert bench.weights(bench.cases(1 << 20), 0)[0] == (1 << 20) + bench.CASE_OVERHEAD_BYTES
    elsewhere = ["--json", str(tmp_path / "x.json")]
    for args, message in ((["--mib", "0", *elsewhere], "--mib: at least 1"),
                          (["--only", "24", *elsewhere], "--only: comma-separated case indices from 0 to 23"),
                          (["--only", "1"], "give --json elsewhere")):  # a partial run must not become the docs'
        with pytest.raises(SystemExit) as exc:
            bench.main([*args, "--allow-busy"])
        assert exc.value.code == 2 and message in capsys.readouterr().err
    assert not (tmp_path / "x.json").exists()


def test_rows_gpu_bench_progress_wiring_without_a_gpu(monkeypatch, capsys):
    """The case loop with the GPU's parts stubbed: a case a step, a failing case still counted, --no-progress
    silent, and a case --only does not know refused before anything runs."""
    cuda = pytest.importorskip("numba.cuda")
    bench = _script("rows_gpu_bench", monkeypatch)
    from _harness import timing

    monkeypatch.setattr(timing, "whole_call_timers", lambda cuda, stream: (None, None))
    monkeypatch.setattr(timing, "events_timer", lambda cuda, stream: None)
    monkeypatch.setattr(cuda, "default_stream", lambda: None)
    monkeypatch.setitem(sys.modules, "torch", type(sys)("torch"))
    sys.modules["torch"].cuda = type(sys)("torch.cuda")
    sys.modules["torch"].cuda.empty_cache = lambda: None
    monkeypatch.setattr(bench, "gpu_missing", lambda: None)

    def case(index, args, *rest):
        rest[-1](f"[{index}] timed")  # the log the progress line keeps clear of
        if index == 2:
            raise RuntimeError("out of memory")
        return {"case": index, "correct": True}

    monkeypatch.setattr(bench, "_case", case)
    assert bench.main(["--only", "0,1,2"]) == 1  # the failed case
    out, err = capsys.readouterr()
    lines = _progress_lines(err)
    assert lines[0].startswith("[1/3] case 0, roll_rows (262144, 1024) float32: ")
    assert lines[2].startswith("[3/3] case 2, roll_rows (16384, 16384) float32: ") and " left" in lines[2]
    assert lines[-1].startswith("[3/3] done in") and "[2] ('roll_rows'" in out and "RuntimeError" in out
    assert bench.main(["--only", "0", "--no-progress"]) == 0
    assert not _progress_lines(capsys.readouterr().err)
    assert bench.weights([0, 8]) == [(1 << 30) + bench.CASE_OVERHEAD_BYTES, (512 << 20) + bench.CASE_OVERHEAD_BYTES]
    with pytest.raises(SystemExit) as exc:
        bench.main(["--only", str(len(bench.CASES))])
    assert exc.value.code == 2 and "--only: no case" in capsys.readouterr().err
