"""The examples in README.md and in the public docstrings run as written."""

import doctest
from pathlib import Path

import pytest

import rotate
import rotate._api
import rotate.rows
import waveops

ROOT = Path(__file__).resolve().parent.parent


def test_readme_examples():
    result = doctest.testfile(str(ROOT / "README.md"), module_relative=False, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


@pytest.mark.parametrize("module", [rotate, rotate._api, rotate.rows, waveops])
def test_docstring_examples(module):
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0


def test_readme_starts_with_the_two_commands():
    lines = [l for l in (ROOT / "README.md").read_text().splitlines() if l.startswith("python3 -m venv")]
    assert len(lines) >= 2
    assert "rotate.demo" in lines[0] and "pytest" in lines[1]
    ci = (ROOT / ".ci" / "run").read_text()
    assert lines[1].split("#")[0].strip() in ci, "CI must run README's test command"
