"""Every example script, and ``python -m rotate.demo``, runs to completion (exit status 0).

``examples/wave_*.py`` have their own tests (tests/waveops/test_examples_wave.py). Any
other script in examples/ is picked up here automatically; scripts that accept
``--cpu-only`` get it, so they run on machines without a GPU.
"""

from __future__ import annotations

import glob
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = os.path.join(REPO, "examples")
TIMEOUT_S = 60


def example_scripts():
    paths = sorted(glob.glob(os.path.join(EXAMPLES, "*.py")))
    return [p for p in paths if not os.path.basename(p).startswith(("wave_", "_"))]


def run(argv, cwd=REPO):
    env = dict(os.environ)
    env["PYTHONPATH"] = REPO + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    try:
        return subprocess.run(argv, capture_output=True, text=True, cwd=cwd, env=env, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"{' '.join(argv)} ran longer than {TIMEOUT_S} s\nstdout:\n{e.stdout}\nstderr:\n{e.stderr}")


def accepts_cpu_only(path):
    with open(path, encoding="utf-8") as f:
        return "--cpu-only" in f.read()


SCRIPTS = example_scripts()


@pytest.mark.parametrize(
    "path",
    SCRIPTS or [pytest.param(None, marks=pytest.mark.skip(
        reason="examples/ has no scripts besides wave_*.py (tested in test_examples_wave.py); nothing to run"))],
    ids=[os.path.basename(p) for p in SCRIPTS] or ["no-examples"],
)
@pytest.mark.slow  # each script in a fresh interpreter; CI runs it with -m slow
def test_example_script_runs(path):
    argv = [sys.executable, path] + (["--cpu-only"] if accepts_cpu_only(path) else [])
    r = run(argv, cwd=EXAMPLES)  # from another directory: the script must not rely on the cwd
    assert r.returncode == 0, f"{' '.join(argv)} exited {r.returncode}\nstdout:\n{r.stdout}\nstderr:\n{r.stderr}"


DEMO = os.path.join(REPO, "rotate", "demo.py")


@pytest.mark.skipif(not os.path.exists(DEMO), reason="rotate/demo.py does not exist yet")
@pytest.mark.parametrize("extra", [[], ["--cpu"]], ids=["default-backend", "cpu"])
def test_rotate_demo_runs(extra):
    argv = [sys.executable, "-m", "rotate.demo", "--size", "8M"] + extra
    r = run(argv)
    out = f"stdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    assert r.returncode == 0, f"{' '.join(argv)} exited {r.returncode}\n{out}"
    assert "%" in r.stdout, f"the demo should report its speed as a percentage of memcpy\n{out}"
    assert "numpy.roll" in r.stdout, f"the demo should say it checked the result against numpy.roll\n{out}"
