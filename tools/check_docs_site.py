"""Build the documentation site and check it as a reader would get it.

    python tools/check_docs_site.py                  # build docs/_build/html (-W), check links, load pages in chromium
    python tools/check_docs_site.py --no-build       # check an existing build
    python tools/check_docs_site.py --no-browser     # build and link checks only

Three checks, each failing the run (exit status 1) with a list of what is wrong:

1. ``sphinx-build -W --keep-going -E -b html docs <out>``: every warning is an error
   (a broken cross-reference, a page outside every toctree, a numpydoc section missing
   from a public function's docstring: docs/conf.py lists the checks).
2. Links: every relative ``href``/``src`` of every built page names a file that exists,
   and every ``#fragment`` an id on the page it points to. Nothing reaches the network
   (``sphinx -b linkcheck`` would): external links are counted, not followed.
3. A browser: the site is served on localhost (python's http.server) and headless
   chromium loads the index and the API pages (``--dump-dom``, scripts run); the API
   pages' DOM must hold every public name of ``rotate``, ``rotate.distributed`` and
   ``waveops`` with its real signature, the index the links to every section.

Without chromium the browser check is skipped with a note, unless ROTATE_REQUIRE_DOCS=1
(CI), where a missing browser is a failure. ``CHROMIUM=/path`` picks the binary.
"""

from __future__ import annotations

import argparse
import functools
import html
import http.server
import importlib
import inspect
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
DEFAULT_OUT = DOCS / "_build" / "html"

#: The API pages and the modules whose public names (``__all__``) each must document.
API_PAGES = {
    "api/rotate.html": ["rotate"],
    "api/distributed.html": ["rotate.distributed"],
    "api/waveops.html": ["waveops", "waveops.cpu", "waveops.amdgpu", "waveops.spirv", "waveops.vulkan"],
}
#: Pages the index must link to (every section of the site).
INDEX_LINKS = ["getting-started.html", "examples.html", "waveops.html", "distributed.html", "api/index.html",
               "design.html", "tuning.html", "performance.html", "perf-cpu.html", "changelog.html",
               "contributing.html"]


def require_docs() -> bool:
    return os.environ.get("ROTATE_REQUIRE_DOCS") == "1"


# --- 1. build ---------------------------------------------------------------------------------------

def build(out: Path) -> list[str]:
    """Build the HTML site into ``out`` with warnings as errors; return the problems (empty: built)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    cmd = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-E", "-q", "-b", "html", str(DOCS), str(out)]
    r = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        return [f"{' '.join(cmd)} exited {r.returncode}:\n{r.stdout}{r.stderr}"]
    return []


# --- 2. links ---------------------------------------------------------------------------------------

class _Page(HTMLParser):
    """The ids a page defines and the links it makes."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.links: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        for key in ("id", "name"):
            if attrs.get(key):
                self.ids.add(attrs[key])
        for key in ("href", "src"):
            if attrs.get(key) is not None and tag in ("a", "link", "script", "img", "iframe", "source"):
                self.links.append(attrs[key])


def _parse(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8", errors="replace"))
    return page


def check_links(out: Path) -> tuple[list[str], int, int]:
    """Every relative link of every page resolves (file and fragment). Returns (broken, checked, external)."""
    pages = {p: _parse(p) for p in sorted(out.rglob("*.html"))}
    broken, checked, external = [], 0, 0
    for path, page in pages.items():
        for link in page.links:
            parts = urlsplit(link)
            if parts.scheme or parts.netloc:
                external += parts.scheme in ("http", "https")
                continue  # http(s), mailto, data: not followed
            if not parts.path and not parts.fragment:
                continue
            checked += 1
            target = (path.parent / unquote(parts.path)).resolve() if parts.path else path
            if parts.path.endswith("/") or target.is_dir():
                target = target / "index.html"
            where = f"{path.relative_to(out)}: {link}"
            if not target.exists():
                broken.append(f"{where} (no file {target.relative_to(out) if out in target.parents else target})")
                continue
            if parts.fragment and target.suffix == ".html":
                ids = pages[target].ids if target in pages else _parse(target).ids
                if unquote(parts.fragment) not in ids:
                    broken.append(f"{where} (no id {parts.fragment!r} in {target.relative_to(out)})")
    return broken, checked, external


# --- public names and their signatures ----------------------------------------------------------------

def public_names(module_name: str) -> list[tuple[str, object]]:
    """``(qualified name, object)`` for each name in the module's ``__all__``."""
    sys.path.insert(0, str(ROOT))
    module = importlib.import_module(module_name)
    return [(f"{module_name}.{name}", getattr(module, name)) for name in module.__all__]


def rendered_signature(qualname: str, obj) -> str | None:
    """The signature as the site shows it (no annotations: docs/conf.py sets autodoc_typehints='none')."""
    if not (inspect.isfunction(obj) or inspect.isbuiltin(obj)):
        return None
    sig = inspect.signature(obj)
    params = [p.replace(annotation=inspect.Parameter.empty) for p in sig.parameters.values()]
    bare = sig.replace(parameters=params, return_annotation=inspect.Signature.empty)
    return f"{qualname}{bare}"


def _text(markup: str) -> str:
    """Visible text of HTML: tags dropped, entities decoded, whitespace collapsed."""
    text = html.unescape(re.sub(r"<[^>]+>", "", markup))
    return re.sub(r"\s+", " ", text.replace("\u00b6", " "))


def check_api_dom(page: str, dom: str) -> list[str]:
    """The DOM of an API page documents every public name of its modules, functions with their signatures."""
    problems = []
    text = _text(dom).replace("( ", "(").replace(" )", ")")
    for module_name in API_PAGES[page]:
        if f'id="module-{module_name}"' not in dom:
            problems.append(f"{page}: no section for module {module_name}")
        for qualname, obj in public_names(module_name):
            if f'id="{qualname}"' not in dom and f'id="module-{qualname}"' not in dom:
                problems.append(f"{page}: {qualname} is public (in __all__) but not documented there")
                continue
            sig = rendered_signature(qualname, obj)
            if sig is not None and re.sub(r"\s+", " ", sig) not in text:
                problems.append(f"{page}: the signature {sig} is not shown")
    return problems


def check_index_dom(dom: str) -> list[str]:
    missing = [link for link in INDEX_LINKS if f'href="{link}' not in dom]
    return [f"index.html: no link to {link}" for link in missing]


# --- 3. a browser -------------------------------------------------------------------------------------

def find_chromium() -> str | None:
    for name in (os.environ.get("CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # the server's request log would drown the report
        pass


def dump_dom(chromium: str, url: str, profile: str) -> str:
    cmd = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           f"--user-data-dir={profile}", "--dump-dom", url]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if r.returncode != 0 or "<html" not in r.stdout:
        raise RuntimeError(f"{' '.join(cmd)} exited {r.returncode} without a DOM:\n{r.stderr[-2000:]}")
    return r.stdout


def check_in_browser(out: Path, chromium: str) -> list[str]:
    """Serve ``out`` on localhost, load the index and the API pages in chromium, check their DOM."""
    handler = functools.partial(_Quiet, directory=str(out))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    problems = []
    try:
        with tempfile.TemporaryDirectory(prefix="docs-chromium-") as profile:
            index = dump_dom(chromium, base + "index.html", profile)
            problems += check_index_dom(index)
            for page in API_PAGES:
                problems += check_api_dom(page, dump_dom(chromium, base + page, profile))
            start = dump_dom(chromium, base + "getting-started.html", profile)
            if "rotate.roll" not in _text(start):
                problems.append("getting-started.html: the page did not render (no 'rotate.roll' in its text)")
    finally:
        server.shutdown()
        server.server_close()
    return problems


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"the HTML build (default {DEFAULT_OUT})")
    parser.add_argument("--no-build", action="store_true", help="check an existing build")
    parser.add_argument("--no-browser", action="store_true", help="skip the chromium check")
    args = parser.parse_args(argv)
    out = args.out.resolve()
    failed = False

    if not args.no_build:
        problems = build(out)
        print(f"build: {'FAILED' if problems else 'ok'} ({out})")
        for p in problems:
            print(p)
        if problems:
            return 1

    broken, checked, external = check_links(out)
    print(f"links: {checked} relative links checked, {len(broken)} broken; {external} external, not followed")
    for b in broken:
        print(f"  {b}")
    failed |= bool(broken)

    if args.no_browser:
        print("browser: skipped (--no-browser)")
    else:
        chromium = find_chromium()
        if chromium is None:
            print("browser: no chromium found (apt-get install chromium, or set CHROMIUM=)")
            failed |= require_docs()
        else:
            problems = check_in_browser(out, chromium)
            print(f"browser: {chromium}: index and {len(API_PAGES)} API pages loaded, "
                  f"{len(problems)} problems")
            for p in problems:
                print(f"  {p}")
            failed |= bool(problems)
    print("FAILED" if failed else "docs site ok")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
