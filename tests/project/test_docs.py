"""The examples in README.md, docs/getting-started.md and the public docstrings run as written;
docs/results holds only what the docs cite (listed in its MANIFEST.md); docs/tuning.md gives the
code's values. (The documentation site itself: tests/project/test_docs_site.py.)"""

import doctest
import fnmatch
import importlib
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_readme_examples():
    result = doctest.testfile(str(ROOT / "README.md"), module_relative=False, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def test_getting_started_examples():
    result = doctest.testfile(str(ROOT / "docs" / "getting-started.md"), module_relative=False,
                              optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


#: Every module with public functions (the API reference's pages). Their docstrings' examples run on
#: the CPU; GPU-only ones are marked ``# doctest: +SKIP``.
DOCTEST_MODULES = ["rotate", "rotate._api", "rotate.rows", "rotate._warmup", "waveops", "waveops._core",
                   "waveops.cpu", "waveops.amdgpu", "waveops.spirv", "waveops.vulkan"]


@pytest.mark.parametrize("name", DOCTEST_MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def _required(*variables):
    return any(os.environ.get(v) == "1" for v in variables)


def test_cuda_device_function_docstring_examples():
    """waveops.rotate/lane_id/width live in waveops._cuda, which needs numba-cuda (the test extra has it)."""
    if importlib.util.find_spec("numba.cuda") is None and not _required("ROTATE_REQUIRE_DOCS"):
        pytest.skip("numba-cuda is not installed")
    from numba.cuda.core import config

    if config.ENABLE_CUDASIM:
        pytest.skip("under the CUDA simulator waveops' device functions are stubs")
    result = doctest.testmod(importlib.import_module("waveops._cuda"), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def test_distributed_docstring_examples():
    """rotate.distributed's examples run a one-process gloo group: in a child process (they initialise
    torch.distributed and import torch.distributed.tensor, which this process should not carry on)."""
    if importlib.util.find_spec("torch") is None:
        if _required("ROTATE_REQUIRE_TORCH", "ROTATE_REQUIRE_DOCS"):
            pytest.fail("torch is required here (ROTATE_REQUIRE_TORCH/ROTATE_REQUIRE_DOCS) but not installed")
        pytest.skip("torch is not installed (pip install -e '.[dist]')")
    code = ("import doctest, sys, rotate.distributed as m; r = doctest.testmod(m, optionflags=doctest.ELLIPSIS); "
            "print(r); sys.exit(1 if r.failed or not r.attempted else 0)")
    env = dict(os.environ, PYTHONPATH=str(ROOT) + (os.pathsep + os.environ["PYTHONPATH"]
                                                   if os.environ.get("PYTHONPATH") else ""))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, f"{r.stdout}\n{r.stderr[-4000:]}"


def test_readme_starts_with_the_two_commands():
    lines = [l for l in (ROOT / "README.md").read_text().splitlines() if l.startswith("python3 -m venv")]
    assert len(lines) >= 2
    assert "rotate.demo" in lines[0] and "pytest" in lines[1]
    ci = (ROOT / ".ci" / "run").read_text()
    assert lines[1].split("#")[0].strip() in ci, "CI must run README's test command"


# --- docs/results: only what the docs cite, each listed in the manifest ----------------------------

RESULTS = ROOT / "docs" / "results"
MANIFEST = RESULTS / "MANIFEST.md"
#: The documents that may cite a result file (the archived journal does not count).
CITING_DOCS = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]
#: A result file named in prose: ``docs/results/NAME`` anywhere, or a bare ``NAME`` in backticks.
RESULT_REF = re.compile(r"docs/results/([\w.{},*<>-]+\.(?:jsonl?|log|txt|py|sh|csv\.gz|png))"
                        r"|`([\w.-]+\.(?:jsonl?|log|txt|csv\.gz|png))`")


def _result_files():
    return sorted(p.name for p in RESULTS.iterdir() if p.is_file() and p != MANIFEST)


def _citers(name):
    pattern = re.compile(r"(?<![\w.-])" + re.escape(name) + r"(?![\w.-])")
    return [str(doc.relative_to(ROOT)) for doc in CITING_DOCS if pattern.search(doc.read_text())]


def _manifest():
    rows = {}
    for line in MANIFEST.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[0].startswith("`") and cells[0].endswith("`"):
            rows[cells[0].strip("`")] = cells
    return rows


def test_every_result_file_is_in_the_manifest_and_cited_by_a_doc():
    files, rows = _result_files(), _manifest()
    assert sorted(rows) == files, (f"not in docs/results/MANIFEST.md: {sorted(set(files) - set(rows))}; "
                                   f"listed but absent: {sorted(set(rows) - set(files))}")
    uncited = [name for name in files if not _citers(name)]
    assert not uncited, f"result files no doc cites (cite them, or delete them: git keeps them): {uncited}"
    for name, (_, commit, question, cited_by) in rows.items():
        assert commit and question, name
        assert sorted(c.strip() for c in cited_by.split(",")) == sorted(_citers(name)), \
            f"MANIFEST.md's 'cited by' for {name} is stale: {_citers(name)}"


def _references(text):
    for match in RESULT_REF.finditer(text):
        yield match.group(1) or match.group(2)


def test_every_cited_result_file_exists():
    """Docs and the package's comments name only result files that are committed (a pattern: at least one)."""
    files = _result_files()
    missing = []
    for source in [*CITING_DOCS, *sorted((ROOT / "rotate").rglob("*.py"))]:
        for name in _references(source.read_text()):
            if "<" in name:
                continue  # a placeholder in a command line: the file a run would write
            if name not in files and not fnmatch.filter(files, re.sub(r"\{[^}]*\}", "*", name)):
                missing.append(f"{source.relative_to(ROOT)}: {name}")
    assert not missing, f"cited but not in docs/results/: {missing}"


TUNING_ROW = re.compile(r"^\| `((?:rotate|cpu|cuda)\.[\w.]+?)` \| `([^`]+)` \|", re.M)


def _tuning_default(name: str):
    """``cpu.x`` / ``cuda.x``: a field of the CPU policy or of the CUDA policy for sm_90 and newer;
    ``rotate.module.NAME``: a module constant."""
    import rotate._backends.cpu.tuning as cpu_tuning
    import rotate._backends.cuda.tuning as cuda_tuning

    owner, _, attr = name.rpartition(".")
    if owner == "cpu":
        return getattr(cpu_tuning.DEFAULT, attr)
    if owner == "cuda":
        return getattr(cuda_tuning.HOPPER, attr)
    return getattr(importlib.import_module(owner), attr)


def test_tuning_values_equal_the_code():
    """Each row of docs/tuning.md names a tuning field or a kernel constant and its value."""
    rows = TUNING_ROW.findall((ROOT / "docs" / "tuning.md").read_text())
    assert len(rows) > 50
    wrong = []
    for name, value in rows:
        actual = _tuning_default(name)
        if actual != eval(value, {"__builtins__": {}}):  # a literal, or one like 16 << 10
            wrong.append(f"{name}: tuning.md says {value}, the code has {actual!r}")
    assert not wrong, wrong


def test_every_tuning_field_has_a_row():
    """docs/tuning.md says why each value of both tuning objects is what it is: no field without a row."""
    import dataclasses

    import rotate._backends.cpu.tuning as cpu_tuning
    import rotate._backends.cuda.tuning as cuda_tuning

    listed = {name for name, _ in TUNING_ROW.findall((ROOT / "docs" / "tuning.md").read_text())}
    fields = {f"cpu.{f.name}" for f in dataclasses.fields(cpu_tuning.CpuTuning)}
    fields |= {f"cuda.{f.name}" for f in dataclasses.fields(cuda_tuning.CudaTuning)}
    assert not fields - listed, f"tuning fields without a row in docs/tuning.md: {sorted(fields - listed)}"


# --- CPU results quoted only from a quiet machine (issue #36) ---------------------------------------

#: CPU results README.md or docs/performance.md cite that predate the load check (rotate/bench_env.py):
#: each recorded one load average (cpu_bench.py's at the start, call_overhead.py's and rows_bench.py's at
#: the end, none at both), so a busy start or end cannot be ruled out. Re-measure each on a quiet machine
#: with this tree's benchmark and delete it from this list: the test then requires the check to pass.
KNOWN_UNCHECKED_CPU_RESULTS: set = set()  # every cited CPU result records its load check now


def _cpu_result(name: str, data) -> bool:
    """A CPU timing: a CPU benchmark's result, or any result not from a GPU machine (a ``-h200`` name or GPU
    knobs) -- so a new kind of CPU result counts without a list to update."""
    from rotate import bench_env

    if bench_env.is_cpu_timing(data):
        return True
    env = (data.get("environment") or data.get("provenance") or {}) if isinstance(data, dict) else {}
    return not re.search(r"-h200", name) and "gpu_knobs" not in env and "gpu" not in env


def test_cited_cpu_results_passed_the_load_check():
    """Every CPU timing README.md and docs/performance.md cite was taken on a quiet machine: its load check
    passed (1-minute load average at most 0.5 per core at the start and, the run's own threads taken off,
    at the end), or it is one of the known unchecked files above."""
    import json

    from rotate import bench_env

    cited = set()
    for doc in (ROOT / "README.md", ROOT / "docs" / "performance.md"):
        cited.update(name for name in _references(doc.read_text()) if name.endswith(".json"))
    checked, failed = [], []
    for name in sorted(cited):
        path = RESULTS / name
        if not path.exists():
            continue  # test_every_cited_result_file_exists says so
        data = json.loads(path.read_text())
        if not _cpu_result(name, data):
            continue
        problem = bench_env.load_problem(data)
        if name in KNOWN_UNCHECKED_CPU_RESULTS:
            assert not bench_env.load_checked(data), f"{name} records the load check now: drop it from the list"
        elif not bench_env.load_checked(data):
            failed.append(f"{name}: no load check recorded (measured before rotate/bench_env.py?)")
        checked.append(name)
        if problem is not None:
            failed.append(f"{name}: {problem}")
    assert not failed, "cited CPU results from a busy machine: " + "; ".join(failed)
    assert KNOWN_UNCHECKED_CPU_RESULTS <= set(checked), "a known unchecked file is no longer cited: drop it"
