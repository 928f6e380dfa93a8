"""Every benchmark the README names draws a plot (issue #32, "benchmarks for people"): from a result file
through its own command line (``--from RUN.json --plot out.png``, measuring nothing), the committed results
in docs/results/ (GPU runs included, on a machine without a GPU) or a small file built here where none is
committed. Each PNG must be a readable grid: at most three columns, a sensible size, the peers on the same
axes and the reference lines named. benchmarks/_harness/plots.py draws them all; no timing is asserted."""

from __future__ import annotations

import copy
import importlib.util
import json
from pathlib import Path

import pytest

matplotlib = pytest.importorskip("matplotlib")
import matplotlib.image  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks"
RESULTS = ROOT / "docs" / "results"
PNG = b"\x89PNG\r\n\x1a\n"

#: (benchmark, committed result, series that must be drawn, reference lines that must be named)
COMMITTED = [
    ("cpu_bench", "cpu-bench.json", ["rotate (in place)", "np.roll + copy back", "std::rotate (g++ -O3)"],
     ["np.copyto (memcpy), one thread"]),
    ("cpu_bench", "cpu-bench-1thread.json", ["rotate (in place)", "np.roll + copy back", "std::rotate (g++ -O3)"],
     ["np.copyto (memcpy), one thread"]),
    ("call_overhead", "cpu-call-overhead.json", ["rotate.roll", "np.roll"], []),
    ("rows_bench", "cpu-rows-bench.json", ["rotate (in place)", "np.take_along_axis", "np.fft.fftshift"],
     ["np.copyto (memcpy), same bytes", "the gate: 2x np.copyto's time"]),
    ("rows_gpu_bench", "gpu-rows-65d666e-h200.json",
     ["rotate (in place)", "torch.gather (out of place)", "cupy.take_along_axis (out of place)",
      "torch.fft.fftshift (out of place)", "cupy.roll (out of place)"],
     ["memcpy (100%); no in-place ceiling recorded in this file"]),
    ("wave_bench", "wave-bench-h200.json", ["waveops.rotate", "raw shfl_sync", "shared-memory stencil"], []),
    ("cold_start", "cold-start-cpu.json",
     ["first call, empty numba cache (compiles)", "first call, cache filled (loads from disk)"],
     ["issue #32 bound (2 s)"]),
]


@pytest.fixture
def load(monkeypatch):
    """A benchmark's module, loaded as its script runs (benchmarks/ on sys.path, for _harness)."""
    monkeypatch.syspath_prepend(str(ROOT))
    monkeypatch.syspath_prepend(str(BENCH))

    def loader(name):
        spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    return loader


def readable(png: Path) -> tuple:
    """(width, height) of a PNG matplotlib reads back; a grid of at most three 5-inch columns."""
    assert png.read_bytes()[:8] == PNG
    height, width = matplotlib.image.imread(png).shape[:2]
    assert 450 <= width <= 1600 and 380 <= height <= 1600, (width, height)
    return width, height


def replot(bench, data: dict, tmp_path) -> dict:
    """``data`` written as a result file and drawn through the benchmark's command line (``--from``); what
    its ``plot`` draws from it."""
    path = tmp_path / "result.json"
    path.write_text(json.dumps(data))
    assert bench.main(["--from", str(path), "--plot", str(tmp_path / "cli.png")]) == 0
    size = readable(tmp_path / "cli.png")
    drawn = bench.plot(data, tmp_path / "direct.png", path)
    assert drawn["size_px"] == size
    return drawn


# The first in the fast suite, every other committed result under -m slow (a second or two each).
@pytest.mark.parametrize("name, result, series, references",
                         [pytest.param(*c, marks=() if i < 1 else pytest.mark.slow) for i, c in enumerate(COMMITTED)],
                         ids=[f"{c[0]}:{c[1]}" for c in COMMITTED])
def test_each_benchmark_plots_its_committed_result(name, result, series, references, load, tmp_path, capsys):
    bench = load(name)
    png = tmp_path / "out.png"
    assert bench.main(["--from", str(RESULTS / result), "--plot", str(png)]) == 0
    assert f"wrote {png}" in capsys.readouterr().out
    width, height = readable(png)
    # What it drew: the same call the entry point made, with the commit and machine in the title.
    data = json.loads((RESULTS / result).read_text())
    drawn = bench.plot(data, tmp_path / "again.png", RESULTS / result)
    assert drawn["size_px"] == (width, height)
    rows, columns = drawn["grid"]
    assert columns <= 3 and rows * columns >= len(drawn["panels"]) > (rows - 1) * columns
    assert set(series) <= set(drawn["series"]), drawn["series"]
    assert drawn["series"][0].startswith(("rotate", "waveops", "first call, empty"))  # rotate first: blue
    assert set(references) <= set(drawn["references"]), drawn["references"]


def test_the_title_names_the_results_commit_and_machine(load):
    plots = load("cpu_bench").plots
    data = json.loads((RESULTS / "cpu-bench.json").read_text())
    assert plots.source(RESULTS / "cpu-bench.json", data) == (
        "docs/results/cpu-bench.json (2 cpus, Linux-6.18.44-fc-v1045-x86_64, commit aaf7a92a8498-dirty)")
    gpu = json.loads((RESULTS / "gpu-rows-65d666e-h200.json").read_text())
    assert "NVIDIA H200" in plots.source("x.json", gpu) and "commit 65d666e" in plots.source("x.json", gpu)
    busy = dict(data, usable_for_docs=False)
    assert plots.source("run.json", busy).endswith("[busy machine: not for the docs]")
    assert plots.commit({}) == "commit not recorded"


def test_call_overhead_draws_the_gpu_peers_where_the_file_has_them(load, tmp_path):
    """The committed CPU run has no GPU rows: a file with them gets a GPU panel, rotate beside torch.roll and
    cupy.roll per array kind, a failed peer marked n/a, and the launch floor's line."""
    data = json.loads((RESULTS / "cpu-call-overhead.json").read_text())
    data["gpu"] = [{"case": "rotate.roll (numba array)", "bytes": 4096, "us_per_call": 10.5},
                   {"case": "rotate.roll (torch tensor)", "bytes": 4096, "us_per_call": 10.9},
                   {"case": "rotate.roll (cupy array)", "bytes": 4096, "us_per_call": 10.2},
                   {"case": "torch.roll", "bytes": 4096, "us_per_call": 7.1},
                   {"case": "cupy.roll", "bytes": 4096, "error": "ImportError: no cupy"},
                   {"case": "torch x.add_(1) (a launch floor)", "bytes": 4096, "us_per_call": 4.2}]
    drawn = replot(load("call_overhead"), data, tmp_path)
    assert drawn["panels"] == ["CPU (numpy arrays)", "GPU (4 KiB arrays)"] and drawn["grid"] == (1, 2)
    assert drawn["series"] == ["rotate.roll", "np.roll", "the array library's roll"]
    assert drawn["references"] == ["torch x.add_(1): a kernel launch"]


def test_rows_gpu_bench_draws_the_in_place_ceiling_where_the_file_records_one(load, tmp_path):
    data = json.loads((RESULTS / "gpu-rows-65d666e-h200.json").read_text())
    data["cases"] = data["cases"][:3] + [{"case": 3, "error": "OutOfMemoryError: ..."}]  # a failed case is left out
    data["cases"][0]["peers"]["cupy.take_along_axis"] = {"error": "OutOfMemoryError: ..."}  # drawn as n/a
    data["in_place_ceiling_pct"] = 92.0
    drawn = replot(load("rows_gpu_bench"), data, tmp_path)
    assert drawn["panels"] == ["roll_rows"] and drawn["references"] == ["memcpy (100%)", "in-place ceiling (92%)"]


def test_wave_bench_plots_a_cpu_run(load, tmp_path):
    """No CPU run of wave_bench is committed: a small one in its format, with the environment block runs
    write now."""
    rows = [{"bench": "software wave", "case": f"float32 w32 delta {d} (default)", "impl": impl, "ms": ms,
             "Glanes_per_s": 0.26 / ms, "vs_numpy": 1.0, "bit_identical_to_numpy": True}
            for d in (3, 5) for impl, ms in (("numpy (2-D view)", 1.0), ("waveops.cpu.rotate", 0.5))]
    rows += [{"bench": "3-point stencil", "case": "float64 n=2^18", "impl": impl, "ms": ms, "GB_per_s": 4.2 / ms,
              "vs_waveops": 1.0, "matches_numpy": True}
             for impl, ms in (("waveops stencil (CPU twin, w32)", 1.0), ("numpy slices", 0.8))]
    data = {"meta": {"device": "CPU (x86_64, 2 cpus)", "mode": "cpu", "reps": 1, "inner": 1},
            "environment": {"git_commit": "0123456789abcdef0123", "cpus": 2, "platform": "Linux-6-x86_64"},
            "rows": rows}
    drawn = replot(load("wave_bench"), data, tmp_path)
    assert drawn["panels"] == ["software wave", "3-point stencil"]
    assert drawn["series"][0] == "waveops.cpu.rotate"


def test_replotting_measures_nothing_and_leaves_the_docs_alone(load, tmp_path):
    doc = ROOT / "docs" / "perf-cpu.md"
    before = doc.read_bytes()
    data = copy.deepcopy(json.loads((RESULTS / "cpu-rows-bench.json").read_text()))
    for row in data["rows"]:
        row["ms"] *= 3  # numbers no doc holds
    path = tmp_path / "rows.json"
    path.write_text(json.dumps(data))
    assert load("rows_bench").main(["--from", str(path), "--plot", str(tmp_path / "r.png")]) == 0
    assert doc.read_bytes() == before
    readable(tmp_path / "r.png")


def test_a_file_of_another_benchmark_or_no_plot_is_refused(load, tmp_path, capsys):
    bench = load("cpu_bench")
    assert bench.main(["--from", str(RESULTS / "cpu-call-overhead.json"), "--plot", str(tmp_path / "x.png")]) == 1
    assert "not a result of benchmarks/cpu_bench.py" in capsys.readouterr().err
    assert not (tmp_path / "x.png").exists()
    with pytest.raises(SystemExit) as exc:
        bench.main(["--from", str(RESULTS / "cpu-bench.json")])
    assert exc.value.code == 2 and "give --plot" in capsys.readouterr().err


def test_long_case_lists_split_into_panels_of_at_most_most(load):
    plots = load("cold_start").plots
    panels = plots.split("f", list("abcdefghij"), {"s": list(range(10))}, most=4)
    assert [p.title for p in panels] == ["f (1/3)", "f (2/3)", "f (3/3)"]
    assert [p.categories for p in panels] == [list("abcd"), list("efgh"), list("ij")]
    assert [p.series["s"] for p in panels] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert [plots.size_label(n) for n in (12, 4096, 3 << 29, 1310720000)] == ["12 B", "4 KiB", "1.5 GiB",
                                                                              "1.22 GiB"]
