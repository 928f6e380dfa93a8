"""benchmarks/' layout (issue #31, rule 6), from each script's import graph (ast, every import statement).

The product benchmarks (benchmarks/*.py) answer a user's question through the public API only: they import
no private module of the packages (``rotate._*``, ``waveops._*``) and no private name of a public one;
whatever private they need goes through benchmarks/_harness/, which says why. Every probe
(benchmarks/probes/*.py) is headed with the open question it answers (its docstring's first line, a
question) and what it backs (a ``Backs:`` paragraph naming a docs/tuning.md value or a docs/results file).
benchmarks/README.md names every product benchmark and every probe.
"""

from __future__ import annotations

import ast
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks"
PACKAGES = ("rotate", "waveops")
PRODUCT = sorted(BENCH.glob("*.py"))
PROBES = sorted((BENCH / "probes").glob("*.py"))


def _private(name: str) -> bool:
    return any(part.startswith("_") and not part.startswith("__") for part in name.split("."))


def private_imports(path: pathlib.Path) -> list:
    """``module`` or ``module:name`` for every import of a private module or name of ``PACKAGES``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.split(".")[0] in PACKAGES and _private(a.name)]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            if node.module.split(".")[0] not in PACKAGES:
                continue
            if _private(node.module):
                found.append(node.module)
            found += [f"{node.module}:{a.name}" for a in node.names if _private(a.name)]
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            # ``from rotate import bench`` then ``bench._memcpy``: a private name all the same
            if node.value.id in ("rotate", "waveops", "bench", "bench_env", "rd", "distributed") \
                    and _private(node.attr):
                found.append(f"{node.value.id}.{node.attr}")
    return found


def test_there_are_product_benchmarks_and_probes():
    assert len(PRODUCT) >= 5 and len(PROBES) >= 5
    assert (BENCH / "_harness" / "__init__.py").exists()


@pytest.mark.parametrize("path", PRODUCT, ids=lambda p: p.name)
def test_product_benchmarks_use_the_public_api_only(path):
    bad = private_imports(path)
    assert not bad, f"{path.name} imports private {bad}: use the public API, or benchmarks/_harness/ with a why"


def test_the_check_sees_private_imports(tmp_path):
    script = tmp_path / "x.py"
    script.write_text("import rotate._backends.cpu\nfrom rotate import _provenance\nfrom rotate._backends.cuda import tuning as cuda\n"
                      "from waveops._core import rotate\nfrom rotate import bench\nbench._memcpy\n"
                      "from rotate import roll, bench_env\nimport numpy._core\n")
    assert private_imports(script) == ["rotate._backends.cpu", "rotate:_provenance", "rotate._backends.cuda", "waveops._core",
                                       "bench._memcpy"]


@pytest.mark.parametrize("path", PROBES, ids=lambda p: p.name)
def test_every_probe_is_headed_with_its_question(path):
    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    first = doc.split("\n", 1)[0]
    assert first.endswith("?"), f"{path.name}: the docstring's first line is not the question it answers"
    backs = re.search(r"^Backs: (.*?)(?:\n\n|\Z)", doc, re.M | re.S)
    assert backs, f"{path.name}: no 'Backs:' paragraph (the tuning value or result file it backs)"
    text = backs.group(1)
    assert "docs/tuning.md" in text or "docs/results/" in text, f"{path.name}: Backs names no value or result"
    for name in re.findall(r"docs/results/([\w*-]+(?:\.[\w*-]+)*)", text):
        assert list((ROOT / "docs" / "results").glob(name)), f"{path.name}: docs/results/{name} does not exist"


def test_benchmarks_readme_names_every_script():
    readme = (BENCH / "README.md").read_text()
    missing = [p.relative_to(BENCH).as_posix() for p in PRODUCT + PROBES
               if p.relative_to(BENCH).as_posix() not in readme]
    assert not missing, f"benchmarks/README.md does not name {missing}"
