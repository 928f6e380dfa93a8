"""The documentation site (docs/, Sphinx) and the public docstrings it is generated from.

The site builds with warnings as errors (docs/conf.py also makes numpydoc check every documented
function's sections), every relative link and anchor of the built HTML resolves, and the API pages
document every public name with its signature. Those tests need the ``docs`` extra (sphinx,
numpydoc, myst-parser: ``pip install -e ".[docs]"``) and are skipped without it, unless
ROTATE_REQUIRE_DOCS=1 (CI), where a missing package fails them. The other tests (the docstrings'
sections and citations, the examples page, the checker's own checks) need nothing extra.
tools/check_docs_site.py runs the same build and link checks, then loads the pages in headless
chromium (CI runs it); the docstrings' examples run in tests/project/test_docs.py.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import check_docs_site as site  # noqa: E402

REQUIRE = os.environ.get("ROTATE_REQUIRE_DOCS") == "1"


def _need(*modules: str) -> None:
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        if REQUIRE:
            pytest.fail(f"ROTATE_REQUIRE_DOCS=1 but {missing} are not installed (pip install -e '.[docs]')")
        pytest.skip(f"{missing} not installed (pip install -e '.[docs]')")


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """The site, built once for this module's tests (a fresh directory: every page is read and written)."""
    _need("sphinx", "numpydoc", "myst_parser", "sphinx_copybutton")
    out = tmp_path_factory.mktemp("html")
    problems = site.build(out)
    assert not problems, "\n".join(problems)
    return out


# --- the built site -----------------------------------------------------------------------------------

def test_site_builds_with_warnings_as_errors(built):
    assert (built / "index.html").exists() and (built / "api" / "rotate.html").exists()


def test_every_relative_link_and_anchor_resolves(built):
    broken, checked, _ = site.check_links(built)
    assert checked > 100 and not broken, broken


@pytest.mark.parametrize("page", sorted(site.API_PAGES))
def test_api_pages_document_every_public_name_with_its_signature(built, page):
    assert site.check_api_dom(page, (built / page).read_text(encoding="utf-8")) == []


def test_index_links_every_section(built):
    assert site.check_index_dom((built / "index.html").read_text(encoding="utf-8")) == []


def test_changelog_page_renders_the_changelog(built):
    """docs/changelog.md includes ../CHANGELOG.md; a checkout without one gets a placeholder page."""
    page = site._text((built / "changelog.html").read_text(encoding="utf-8"))
    changelog = ROOT / "CHANGELOG.md"
    if changelog.exists():
        first = next(line.lstrip("#").strip() for line in changelog.read_text().splitlines() if line.strip())
        assert first in page
    else:
        assert "no CHANGELOG.md" in page


# --- the checker can fail -----------------------------------------------------------------------------

def test_link_check_reports_missing_files_and_anchors(tmp_path):
    (tmp_path / "a.html").write_text('<html><body id="top"><a href="b.html#here">b</a>'
                                     '<a href="b.html#gone">x</a><a href="c.html">c</a>'
                                     '<a href="#top">t</a><a href="https://example.org/">e</a></body></html>')
    (tmp_path / "b.html").write_text('<html><body><p id="here">b</p></body></html>')
    broken, checked, external = site.check_links(tmp_path)
    assert checked == 4 and external == 1
    assert len(broken) == 2 and any("gone" in b for b in broken) and any("c.html" in b for b in broken)


def test_api_check_reports_a_missing_name_and_a_wrong_signature():
    import rotate

    names = [f'<dt id="rotate.{n}"></dt>' for n in rotate.__all__ if n != "roll_rows"]
    names.append('<p>rotate.roll(a, shift)</p>')
    problems = site.check_api_dom("api/rotate.html", '<div id="module-rotate">' + "".join(names) + "</div>")
    assert any("rotate.roll_rows is public" in p for p in problems)
    assert any("rotate.roll(a, shift, axis=None" in p for p in problems)


# --- the docstrings -----------------------------------------------------------------------------------

MODULES = ["rotate", "rotate.distributed", "waveops", "waveops.cpu", "waveops.amdgpu", "waveops.spirv",
           "waveops.vulkan"]


def _public_functions():
    """(qualified name, function) for every public function and public method of a public class."""
    out = []
    for module_name in MODULES:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            if module_name == "waveops" and name in ("rotate", "lane_id", "width"):
                continue  # CUDA device functions: below, from their module (without numba-cuda: stubs)
            obj = getattr(module, name)
            if inspect.isfunction(obj):
                out.append((f"{module_name}.{name}", obj))
            elif inspect.isclass(obj) and obj.__module__ == module_name:
                for attr, member in vars(obj).items():
                    if inspect.isfunction(member) and not attr.startswith("_") and attr != "close":
                        out.append((f"{module_name}.{name}.{attr}", member))
    if importlib.util.find_spec("numba.cuda") is not None:
        cuda = importlib.import_module("waveops._cuda")
        out += [(f"waveops.{n}", getattr(cuda, n)) for n in ("rotate", "lane_id", "width")]
    return out


PUBLIC = _public_functions()
#: rotate's own functions also say what they raise and how they behave (the README's promises).
FULL = re.compile(r"^rotate\.")


@pytest.mark.parametrize("qualname,func", PUBLIC, ids=[q for q, _ in PUBLIC])
def test_public_docstring_has_every_section(qualname, func):
    _need("numpydoc")
    from numpydoc.docscrape import FunctionDoc

    doc = FunctionDoc(func)
    params = [p for p in inspect.signature(func).parameters.values() if p.name != "self"]
    documented = {n.strip() for p in doc["Parameters"] for n in p.name.split(",")}
    assert doc["Summary"], f"{qualname}: no summary line"
    assert documented == {p.name for p in params}, f"{qualname}: Parameters documents {documented}"
    required = ["Returns", "See Also", "Examples"] + (["Raises", "Notes"] if FULL.match(qualname) else [])
    missing = [s for s in required if not doc[s]]
    assert not missing, f"{qualname}: no {missing} section"


@pytest.mark.parametrize("name", ["roll", "roll_rows", "fftshift", "ifftshift"])
def test_in_place_functions_return_their_argument_not_a_new_ndarray(name):
    """They return ``a`` itself (a torch tensor or device array included), so their Returns must say so."""
    _need("numpydoc")
    from numpydoc.docscrape import FunctionDoc

    import rotate

    (ret,) = FunctionDoc(getattr(rotate, name))["Returns"]
    assert "ndarray" not in ret.type and "``a`` itself" in " ".join(ret.desc), ret


#: Names in capitals that a docstring may cite: the packages' public constants and environment variables.
ENV_PREFIXES = ("NUMBA_", "WAVEOPS_", "ROTATE_", "CUDA_", "VK_", "NCCL_", "TORCH_")
CAPS = re.compile(r"(?<![\w.])_?[A-Z][A-Z0-9]*_[A-Z0-9_]+\b")


def test_docstrings_cite_no_private_names_or_journals():
    """Public functions' docstrings, and the module docstrings the API pages show."""
    public_constants = {name for m in MODULES for name in importlib.import_module(m).__all__ if name.isupper()}
    bad = []
    for qualname, func in PUBLIC + [(m, importlib.import_module(m)) for m in MODULES]:
        doc = inspect.getdoc(func) or ""
        for name in CAPS.findall(doc):
            if name not in public_constants and not name.startswith(ENV_PREFIXES):
                bad.append(f"{qualname}: cites the constant {name}")
        for pattern in (r"\b(?:rotate|waveops)\._\w+", r"\b(?:rotate|waveops)/_\w+", r"archive/", r"journal"):
            bad += [f"{qualname}: cites {m!r}" for m in re.findall(pattern, doc)]
    assert not bad, bad


def test_every_example_script_is_on_the_examples_page():
    page = (ROOT / "docs" / "examples.md").read_text()
    missing = [p.name for p in sorted((ROOT / "examples").glob("*.py"))
               if f"{{literalinclude}} ../examples/{p.name}" not in page]
    assert not missing, f"docs/examples.md does not show {missing}"
