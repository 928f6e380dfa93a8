"""First calls compile (issue #32): the one-time notice on the "rotate" logger, and rotate.warmup.

The notice is checked in this process on throwaway functions that claim to be the package's (cheap to
compile), and end to end in a fresh process with an empty numba cache (a real kernel, the notice on stderr
through Python's last-resort handler). warmup is checked in a fresh process: after it, a battery of calls
compiles nothing and loads nothing (no compile event, no new overload on any of the package's dispatchers).
"""

from __future__ import annotations

import json
import logging
import os
import pathlib
import subprocess
import sys
import types

import numpy as np
import pytest
from numba import njit

import rotate
from rotate._core import compile_notice as _compile_notice

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _probe(module="rotate._notice_probe", name="probe"):
    """A new numba function defined in ``module``: its first call compiles (cheaply)."""
    namespace = {"__name__": module}
    exec(f"def {name}(x):\n    return x * 3 + 1\n", namespace)
    return njit(namespace[name])


@pytest.fixture
def fresh_notice(monkeypatch):
    """This process as if nothing had been told yet."""
    monkeypatch.setattr(_compile_notice, "_told", set())


def _notices(caplog):
    return [r for r in caplog.records if r.name == "rotate" and r.levelno == logging.WARNING]


def test_the_first_compile_logs_the_notice_once_then_each_compile_at_info(fresh_notice, caplog):
    caplog.set_level(logging.INFO, logger="rotate")
    assert _probe(name="first")(2) == 7
    assert _probe(name="second")(2) == 7
    notices = _notices(caplog)
    assert [r.getMessage() for r in notices] == [_compile_notice.NOTICES["cpu"]]
    assert "rotate.warmup()" in notices[0].getMessage() and "setLevel(logging.ERROR)" in notices[0].getMessage()
    compiled = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert len(compiled) == 2 and all("rotate._notice_probe." in m and " s" in m for m in compiled), compiled


def test_the_notice_comes_before_the_compile(fresh_notice, caplog, monkeypatch):
    order = []
    monkeypatch.setattr(_compile_notice.logger, "warning", lambda message: order.append("notice"))
    namespace = {"__name__": "rotate._notice_probe"}
    exec("def probe(x):\n    return x + 1\n", namespace)
    compiled = njit(namespace["probe"])
    original = compiled._compiler.compile

    def compile_and_record(*args, **kwargs):
        order.append("compile")
        return original(*args, **kwargs)

    monkeypatch.setattr(compiled._compiler, "compile", compile_and_record)
    compiled(1)
    assert order == ["notice", "compile"]


def test_the_logger_level_silences_the_notice(fresh_notice, caplog):
    caplog.set_level(logging.ERROR, logger="rotate")
    _probe(name="silenced")(1)
    assert _notices(caplog) == []
    assert _compile_notice._told == {"cpu"}  # told (to nobody): not again later


def test_other_packages_compiles_say_nothing(fresh_notice, caplog):
    caplog.set_level(logging.DEBUG, logger="rotate")
    _probe(module="someone_else", name="theirs")(1)
    assert [r for r in caplog.records if r.name == "rotate"] == []
    assert _compile_notice._told == set()


def test_warmups_compiles_are_counted_not_announced(fresh_notice, caplog):
    caplog.set_level(logging.INFO, logger="rotate")
    with _compile_notice.counting() as compiled:
        _probe(name="counted")(1)
    assert [(target, name.rsplit(".", 1)[1]) for target, name, _ in compiled] == [("cpu", "counted")]
    assert _notices(caplog) == [] and _compile_notice._told == set()
    _probe(name="after")(1)  # a call's compile after warmup is told
    assert len(_notices(caplog)) == 1


def test_a_gpu_kernels_first_compile_is_told_once(fresh_notice, caplog):
    caplog.set_level(logging.INFO, logger="rotate")
    kernel = types.SimpleNamespace(overloads={}, py_func=_probe(name="gpu").py_func)
    for _ in range(2):
        with _compile_notice.gpu_compiling(kernel):
            pass
    assert [r.getMessage() for r in _notices(caplog)] == [_compile_notice.NOTICES["cuda"]]
    caplog.clear()
    kernel.overloads = {("int64",): object()}  # compiled: nothing to say
    with _compile_notice.gpu_compiling(kernel):
        pass
    assert caplog.records == []


def _python(code: str, cache_dir, **env):
    environment = dict(os.environ, NUMBA_CACHE_DIR=str(cache_dir), NUMBA_NUM_THREADS="2",
                       PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]), **env)
    result = subprocess.run([sys.executable, "-c", code], env=environment, capture_output=True, text=True,
                            timeout=1200, cwd=ROOT)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    return result


FIRST_CALLS = """
import logging, numpy as np, rotate
{setup}
rotate.roll(np.arange(10), 3)
rotate.roll(np.arange(10, dtype=np.int32), 3)  # another kernel compiles: no second notice
print("rolled")
"""


@pytest.mark.slow  # three fresh interpreters, one compiling cold (7 s on 2 cores); CI runs it with -m slow
def test_a_cold_first_call_tells_the_user_on_stderr_once_and_a_warm_one_does_not(tmp_path):
    notice = _compile_notice.NOTICES["cpu"]
    cold = _python(FIRST_CALLS.format(setup=""), tmp_path)
    assert cold.stderr.count(notice) == 1, cold.stderr
    warm = _python(FIRST_CALLS.format(setup=""), tmp_path)  # the kernels come from the disk cache
    assert notice not in warm.stderr, warm.stderr
    silenced = _python(FIRST_CALLS.format(setup="logging.getLogger('rotate').setLevel(logging.ERROR)"),
                       tmp_path / "other")
    assert "rolled" in silenced.stdout and notice not in silenced.stderr, silenced.stderr


AFTER_WARMUP = """
import json, sys
import numpy as np, numba
from numba.core import event, registry
import rotate
from rotate._schedules import chain, free_lanes
from rotate._backends.cpu import lanes as cpu_lanes
from rotate._backends.cpu import tuning as cpu_tuning

DTYPES, FUNCTIONS = {dtypes!r}, {functions!r}
compiled = rotate.warmup(dtypes=DTYPES, functions=FUNCTIONS, gpu=False, progress=False)
IDLE = cpu_tuning.override(adapt_to_load=False)  # the calls below plan as on an idle machine, as warmup did
IDLE.__enter__()  # (held: a generator context dropped unreferenced would be closed, undoing it)


def dispatchers():
    found = {{}}
    for name, module in list(sys.modules.items()):
        if name.startswith("rotate"):
            for key, value in vars(module).items():
                if isinstance(value, registry.CPUDispatcher):
                    found[name + "." + key] = value
    for index, value in enumerate(chain.compiled_table_builders()):
        found["table_builders." + str(index)] = value
    for index, value in enumerate(free_lanes.compiled_free_builders()):
        found["free_builders." + str(index)] = value
    for key, value in cpu_lanes.built_kernels.items():  # the kernels a kind of lane's factory built
        found["built." + repr(key)] = value
    return found


before = {{key: len(d.overloads) for key, d in dispatchers().items()}}
events = []


class Listener(event.Listener):
    def on_start(self, ev):
        events.append(ev.data["dispatcher"].py_func.__qualname__)

    def on_end(self, ev):
        pass


event.register("numba:compile", Listener())
rng = np.random.default_rng(1)
for dtype in map(np.dtype, DTYPES):
    for threads in (2, 1):
        numba.set_num_threads(threads)
        if "roll" in FUNCTIONS:
            for n in (1, 5, 10, 100, 1000, 12345, 1 << 20, 3 << 20):
                a = rng.random(n).astype(dtype)
                for shift in (1, 7, n // 3, n // 2, n // 2 + 1, -5):
                    rotate.roll(a, shift)
                rotate.roll(a[::3], 2)
                rotate.rotate(a, n // 4)
        for shape in ((3, 4), (5, 7), (100, 3), (1000, 16), (4096, 256), (512, 2048), (256, 4, 6),
                      (1 << 16, 2), (1 << 16, 8), (1 << 15, 5)):
            a = rng.random(shape).astype(dtype)
            if "fftshift" in FUNCTIONS:
                rotate.fftshift(a)
                rotate.ifftshift(a)
                rotate.roll(a, (1, 2), axis=(0, 1))
            if "roll" in FUNCTIONS:
                rotate.roll(a, 1, axis=-1)
                rotate.roll(a, 1, axis=0)
            if "roll_rows" in FUNCTIONS:
                rotate.roll_rows(a, rng.integers(-9, 9, a.shape[:-1]))
                rotate.roll_rows(a, 3)
                rotate.roll_rows(a, rng.integers(-9, 9, a.shape[1:]), axis=0)
after = {{key: len(d.overloads) for key, d in dispatchers().items()}}
grew = {{key: (before.get(key, 0), count) for key, count in after.items() if count != before.get(key, 0)}}
print(json.dumps({{"compiled": compiled, "events": events, "grew": grew}}))
"""


def _after_warmup(dtypes, functions):
    result = _python(AFTER_WARMUP.format(dtypes=dtypes, functions=functions), os.environ.get("NUMBA_CACHE_DIR", ""))
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_after_warmup_fftshifts_compile_and_load_nothing():
    found = _after_warmup(["float32"], ["fftshift"])
    assert found["events"] == [] and found["grew"] == {}, found


@pytest.mark.slow  # minutes on 2 cores when the kernels are not cached yet
def test_after_warmup_the_common_calls_compile_and_load_nothing():
    found = _after_warmup(["float32", "float64", "uint8"], list(rotate._warmup.FUNCTIONS))
    assert found["events"] == [] and found["grew"] == {}, found


def test_warmup_plans_as_on_an_idle_machine_and_restores_the_planners_setting(monkeypatch):
    from rotate._backends.cpu import threads as cpu_threads
    from rotate._backends.cpu import tuning as cpu
    from rotate._backends.cpu import warmup as cpu_warmup

    monkeypatch.setattr(cpu_threads, "_others_running", lambda threads: 64)  # every core busy
    seen = []
    monkeypatch.setattr(cpu_warmup, "_CPU", {"roll": lambda dtype, calls: seen.append(cpu.current().adapt_to_load)})
    with cpu.override(adapt_to_load=True):
        rotate.warmup(dtypes="float32", functions="roll", gpu=False, progress=False)
        assert cpu.current().adapt_to_load is True
    assert seen and not any(seen)


def test_warmup_twice_compiles_nothing_the_second_time():
    kwargs = dict(dtypes=[np.int16], functions=["roll"], gpu=False, progress=False)
    rotate.warmup(**kwargs)
    assert rotate.warmup(**kwargs) == 0


def test_warmup_reports_progress_to_a_callable():
    lines = []
    rotate.warmup(dtypes=["int16", np.uint16], functions=("roll",), gpu=False, progress=lines.append)
    assert lines[0].startswith("rotate.warmup: compiling the kernels of roll for int16, uint16 (CPU)")
    assert [line.split(":")[1].split("]")[0] for line in lines[1:3]] == [" [1/2", " [2/2"]
    assert lines[-1].startswith("rotate.warmup: done, ")


def test_warmup_refuses_what_it_cannot_warm_before_compiling_anything():
    with pytest.raises(TypeError, match="object"):
        rotate.warmup(dtypes=[object], progress=False)
    with pytest.raises(ValueError, match="roll, roll_rows, fftshift"):
        rotate.warmup(functions=["rol"], progress=False)
    if not rotate._warmup.gpu_usable():
        with pytest.raises(RuntimeError, match="gpu=True"):
            rotate.warmup(gpu=True, progress=False)
    assert rotate.warmup(dtypes=[], progress=False) == 0


def test_python_m_rotate_warmup_compiles_with_progress_and_says_how_many():
    """``python -m rotate.warmup`` (issue #32): progress lines on stderr, the count on stdout."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-m", "rotate.warmup", "--dtypes", "float32", "--functions", "roll",
                           "--no-gpu"], env=env, capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "RuntimeWarning" not in done.stderr  # rotate.warmup is not imported before it runs as __main__
    assert "roll" in done.stderr and "float32" in done.stderr
    assert "kernels compiled" in done.stdout
    bad = subprocess.run([sys.executable, "-m", "rotate.warmup", "--functions", "rolll", "--no-gpu"], env=env,
                         capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert bad.returncode == 2 and "rolll" in bad.stderr


def test_importing_the_warmup_module_leaves_rotate_warmup_callable():
    import importlib

    module = importlib.import_module("rotate.warmup")
    assert rotate.warmup is module or rotate.warmup is rotate._warmup.warmup
    assert rotate.warmup(dtypes=["float32"], functions=["roll"], gpu=False, progress=False) >= 0
    assert module(dtypes=["float32"], functions=["roll"], gpu=False, progress=False) == 0
