"""The annotations a user's type checker reads: mypy passes on the public modules and on a user's code
(tests/typecheck/user_code.py, which pins each public function's return type), and that code runs."""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
USER_CODE = ROOT / "tests" / "typecheck" / "user_code.py"


def test_the_packages_are_marked_typed():
    for package in ("rotate", "waveops"):
        assert (ROOT / package / "py.typed").is_file(), f"{package}/py.typed is missing (PEP 561)"


@pytest.mark.slow  # .ci/run runs mypy itself too
def test_mypy_passes():
    if importlib.util.find_spec("mypy") is None:
        if os.environ.get("ROTATE_REQUIRE_MYPY") == "1":
            pytest.fail("mypy is not installed (it is in the test extra) and ROTATE_REQUIRE_MYPY=1")
        pytest.skip("mypy is not installed: pip install -e '.[test]'")
    # pyproject.toml's [tool.mypy] names the files; the repository root is where it is read.
    run = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr


def test_the_user_code_runs():
    spec = importlib.util.spec_from_file_location("user_code", USER_CODE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.run()
