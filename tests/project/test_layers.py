"""The package's layering, from its import graph (every import statement, function-level ones too).

No import cycles, and the public modules (the front door) never name a backend: they validate, plan
through the backend registry and hand the plan to whichever backend recognised the array.
"""

from __future__ import annotations

import ast
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGES = ("rotate", "waveops")
# The front door: validate, consult the plan cache, hand the plan to a backend.
PUBLIC = ("rotate", "rotate._api", "rotate.rows", "rotate._warmup", "rotate.warmup", "rotate.distributed")
# What the front door may not import: the backends' own modules and their kernels.
BACKEND_MODULES = re.compile(r"^rotate\._backends\.(cpu|cuda)(\..*)?$")
# The layers, lowest first (docs/design.md): a module may import its own layer and those below it.
LAYERS = ("rotate._core", "rotate._schedules", "rotate._backends", "rotate._testing")


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


def _layer(name: str):
    return next((i for i, layer in enumerate(LAYERS) if name == layer or name.startswith(layer + ".")), None)


def test_layers_import_downwards():
    """``_core`` imports nothing else of the package, ``_schedules`` only ``_core``, the backends those two,
    the emulator those three; nothing of these layers imports the public modules above them."""
    graph = import_graph()
    upward = []
    for name, deps in graph.items():
        if not name.startswith("rotate."):
            continue
        mine = _layer(name)
        if mine is None:
            continue
        for dep in deps:
            theirs = _layer(dep)
            if theirs is None or theirs > mine:
                upward.append((name, dep))
    assert not upward, upward
    assert {n.rpartition(".")[0] for n in graph if _layer(n) is not None and n.count(".") == 2} <= set(LAYERS)


def test_the_layer_check_sees_an_upward_import(monkeypatch):
    graph = import_graph()
    graph["rotate._core.plan"] = graph["rotate._core.plan"] | {"rotate._backends.cpu.planner"}
    monkeypatch.setattr(__import__(__name__), "import_graph", lambda: graph)
    try:
        test_layers_import_downwards()
    except AssertionError as error:
        assert "rotate._backends.cpu.planner" in str(error)
    else:
        raise AssertionError("an upward import passed")


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
        assert not re.search(r"""["']rotate\._backends\.(cpu|cuda)""", source), f"{name} names a backend module in a string"


# Module-level constants the planners' modules may hold: what the code's structure needs (op codes, layout,
# registries), what a compiled kernel bakes in (it cannot follow an override), or host-side cache limits.
# Anything else a planner chooses with is a field of a backend's tuning policy, rotate/_backends/*/tuning.py (issue #31: the plan key is derived from
# the tuning objects, and a module constant would fall outside it).
PLANNER_MODULE_CONSTANTS = {
    "rotate/_backends/cuda/device.py": {"NEWEST_CAPABILITY"},
    "rotate/_backends/cuda/registry.py": {"SCHEDULES", "LONG_LANES", "RUNNERS", "LANE_RUNNERS"},
    "rotate/_backends/cuda/schedules/__init__.py": {"ONE_SHIFT", "LONG_LANES", "MODULES"},
    "rotate/_backends/cuda/schedules/chain.py": {"RUNS"},
    "rotate/_backends/cuda/schedules/block_swap.py": {"RUNS"},
    "rotate/_backends/cuda/schedules/reversal.py": {"RUNS"},
    "rotate/_backends/cuda/schedules/half_swaps.py": {"RUNS"},
    "rotate/_backends/cuda/schedules/row_lanes.py": {"RUNS"},
    "rotate/_backends/cuda/schedules/row_strips.py": {"RUNS"},
    "rotate/_backends/cuda/schedules/row_cycles.py": {"RUNS", "CYCLE_VARIANTS"},
    "rotate/_backends/cuda/schedules/lane_panels.py": {"LANE_RUNS"},
    "rotate/_backends/cuda/schedules/lane_walks.py": {"LANE_RUNS"},
    "rotate/_backends/cuda/schedules/lane_swaps.py": {"LANE_RUNS"},
    "rotate/_backends/cuda/schedules/lane_chains.py": {"RUNS", "MAX_CHAIN_RUNS"},
    "rotate/_backends/cuda/schedules/column_panels.py": {"LANE_RUNS"},
    "rotate/_backends/cuda/schedules/multi_axis.py": set(),
    "rotate/_backends/cpu/kernels.py": {"_SWAP", "_SHIFT", "_SWAP_SHIFT", "_STRIDED_SHIFT", "_STRIDED_REVERSAL", "_U"},
    "rotate/_backends/cpu/threads.py": {"_BUSY_TTL", "_LOADAVG", "_CORES"},
    "rotate/_backends/cpu/runners.py": {"_WORDS", "ROW_RUNNERS"},
    "rotate/_backends/cpu/planner.py": {"_INTERPRET_TILES", "_INTERPRET_SECONDS"},  # interpreted or compiled: the same plan
    "rotate/_backends/cpu/lanes.py": {"SMALL_ROW_WORDS", "_LANE_ROW", "_LANE_SMALL", "_LANE_STRIDED", "_LANE_COPY", "_LANE_BYTES",
                        "WINDOW_BYTES", "_U", "_EXACT", "_CHECK_BLOCK", "GROUP_LANES", "_NO_MASKS",
                        "_SHORT_ONE_WORD", "_SHORT_WORDS", "_SHORT_FUNNEL", "_BYTE_WINDOW", "_BYTE_GROUPED",
                        "_BYTE_TWO_WORDS", "_BYTE_SHUFFLED", "_BYTE_DOUBLED"},
    "rotate/_backends/cuda/runtime.py": {"MAX_STREAM_REFS", "MAX_CACHED_STREAMS", "MAX_DEVICE_TABLES"},
    "rotate/_backends/cuda/lane_args.py": set(),
    "rotate/_backends/cpu/backend.py": set(),
    "rotate/_backends/cuda/backend.py": set(),
}


def test_every_schedule_module_is_listed():
    """A new schedule module must be listed above (and so looked at for tuning of its own)."""
    listed = {path for path in PLANNER_MODULE_CONSTANTS if path.startswith("rotate/_backends/cuda/schedules/")}
    found = {str(path.relative_to(ROOT)) for path in (ROOT / "rotate/_backends/cuda/schedules").glob("*.py")}
    assert found == listed


def test_planners_hold_no_tuning_of_their_own():
    """A new module constant in a planner's module is a tuning value outside the plan key: add it to
    the backend's tuning.py (and docs/tuning.md) instead, or, if it is layout or a compiled-in kernel constant, to the
    list above with that reason."""
    found = {}
    for path in PLANNER_MODULE_CONSTANTS:
        names = set()
        for node in ast.parse((ROOT / path).read_text()).body:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
                node, ast.AnnAssign) else []
            targets = [e for t in targets for e in (t.elts if isinstance(t, ast.Tuple) else [t])]  # A, B = 0, 1
            names |= {t.id for t in targets if isinstance(t, ast.Name) and t.id.lstrip("_").isupper()}
        found[path] = names
    assert found == PLANNER_MODULE_CONSTANTS


def _params_types(module) -> set:
    from rotate._core.plan import Params

    return {c for c in vars(module).values()
            if isinstance(c, type) and issubclass(c, Params) and c.__module__ == module.__name__}


def test_steps_run_from_typed_params():
    """Issue #31, rule 2: each algorithm's parameters are a frozen dataclass, and the backends find a
    step's runner by that type; no runner module reads a step's ``details`` dict or branches on its
    algorithm name."""
    from dataclasses import is_dataclass

    from rotate._backends.cpu import lanes as cpu_lanes, params, runners
    from rotate._backends.cuda import registry, schedules

    gpu = set().union(*(_params_types(module) for module in schedules.MODULES))
    cpu = _params_types(params) | _params_types(cpu_lanes)
    for kind in gpu | cpu:
        assert is_dataclass(kind) and kind.__dataclass_params__.frozen, kind
    concrete_gpu = {k for k in gpu if not k.__name__.startswith("_")}
    assert concrete_gpu == set(registry.RUNNERS) | set(registry.LANE_RUNNERS)
    lanes = {cpu_lanes.LanesParams, cpu_lanes.ShortLanesParams, cpu_lanes.ByteLanesParams}  # rotate._backends.cpu.lanes.run_lanes
    bases = {params.RowsParams, params.RowsChainParams}
    assert cpu - bases - lanes - {params.StridedParams} == set(runners.ROW_RUNNERS)  # strided: cpu.runners.run_strided
    gpu_modules = [f"rotate/_backends/cuda/schedules/{m.__name__.rpartition('.')[2]}.py" for m in schedules.MODULES]
    for path in ("rotate/_backends/cuda/registry.py", *gpu_modules, "rotate/_backends/cpu/planner.py", "rotate/_backends/cpu/runners.py", "rotate/_backends/cpu/lanes.py",
                 "rotate/_backends/cpu/backend.py",
                 "rotate/_backends/cuda/backend.py"):
        source = (ROOT / path).read_text()
        assert ".details" not in source and "details[" not in source, f"{path} reads Step.details"
        assert not re.search(r"""RUNNERS\[[^\]]*algorithm""", source), f"{path} looks runners up by name"
        assert not re.search(r"\.algorithm\s*(==|!=|in\b|not\s+in\b)|\.algorithm\.startswith", source), \
            f"{path} branches on a step's algorithm name, not on its params type"


def test_a_gpu_schedule_lives_in_one_module():
    """Issue #31, rule 4: each schedule module holds its params types, its planner and its runner, and is
    registered in the one ordered list (``rotate/_backends/cuda/schedules/__init__.py``); the registry runs what the
    modules declare and nothing else."""
    import inspect

    from rotate._backends.cuda import registry, schedules

    assert {p.__name__.rpartition(".")[2] + ".py" for p in schedules.MODULES} | {"__init__.py"} == \
        {path.name for path in (ROOT / "rotate/_backends/cuda/schedules").glob("*.py")}
    for module in schedules.MODULES:
        types = _params_types(module)
        runs = {**getattr(module, "RUNS", {}), **getattr(module, "LANE_RUNS", {})}
        planners = [f for name, f in vars(module).items() if name.startswith("plan") and inspect.isfunction(f)
                    and f.__module__ == module.__name__]
        assert planners, f"{module.__name__} has no planner"
        if module is schedules.multi_axis:  # chooses among the others' steps; no kernel of its own
            assert not types and not runs
            continue
        assert {t for t in types if not t.__name__.startswith("_")} == set(runs), module.__name__
        for run in runs.values():
            assert run.__module__ in (module.__name__, registry.__name__), (module.__name__, run)
    registered = [plan for _, plan in schedules.ONE_SHIFT + schedules.LONG_LANES]
    assert registry.SCHEDULES == list(schedules.ONE_SHIFT) and registry.LONG_LANES == list(schedules.LONG_LANES)
    assert all(plan.__module__ in {m.__name__ for m in schedules.MODULES} for plan in registered)
