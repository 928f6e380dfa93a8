"""The package's layering, from its import graph (every import statement, function-level ones too).

No import cycles, and the public modules (the front door) never name a backend: they validate, plan
through the backend registry and hand the plan to whichever backend recognised the array.
"""

from __future__ import annotations

import ast
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGES = ("rotate", "waveops")
# The front door: validate, consult the plan cache, hand the plan to a backend.
PUBLIC = ("rotate", "rotate._api", "rotate.rows")
# What the front door may not import: the backends' own modules and their kernels.
BACKEND_MODULES = re.compile(r"^rotate\.(_cpu|_rows|_rowperm|_cuda(\..*)?|_backends\.(cpu|cuda))$")


def _module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _exists(name: str) -> bool:
    base = ROOT / name.replace(".", "/")
    return base.with_suffix(".py").exists() or (base / "__init__.py").exists()


def import_graph() -> dict:
    graph = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            name = _module_name(path)
            here = name if path.name == "__init__.py" else name.rpartition(".")[0]
            deps = set()
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ImportFrom):
                    if node.level:
                        parts = here.split(".")
                        parts = parts[:len(parts) - (node.level - 1)]
                        target = ".".join(parts + ([node.module] if node.module else []))
                    else:
                        target = node.module or ""
                    for alias in node.names:  # "from . import x" imports the module x when there is one
                        full = f"{target}.{alias.name}"
                        deps.add(full if _exists(full) else target)
                elif isinstance(node, ast.Import):
                    deps.update(alias.name for alias in node.names)
            graph[name] = {d for d in deps if d.split(".")[0] in PACKAGES and d != name}
    return graph


def cycles(graph: dict) -> list:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, found, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in graph:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycles():
    assert cycles(import_graph()) == []


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_public_modules_never_name_a_backend():
    graph = import_graph()
    for name in PUBLIC:
        assert name in graph, name
        bad = sorted(d for d in graph[name] if BACKEND_MODULES.match(d))
        assert not bad, f"{name} imports backend modules {bad}: go through rotate._backends"
        source = (ROOT / (name.replace(".", "/") + ("/__init__.py" if name == "rotate" else ".py"))).read_text()
        assert not re.search(r"""\.name\s*[!=]=\s*["'](cpu|cuda)["']""", source), f"{name} branches on a backend"
