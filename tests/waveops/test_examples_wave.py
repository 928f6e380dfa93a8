"""The waveops examples: CPU twins against numpy, scripts runnable, kernels compile.

The CUDA halves of the examples run in tests/waveops/test_waveops_gpu.py (marked
``gpu``); here their kernels are compiled to PTX without a GPU so a typing
error cannot wait for the GPU run to show up.
"""

import importlib.util
import os
import subprocess
import sys

import numpy as np
import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = os.path.join(REPO, "examples")
NAMES = ["wave_stencil", "wave_window_sum", "wave_scan", "wave_tile"]


def load(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(EXAMPLES, name + ".py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize(
    "name, argv",
    [
        ("wave_stencil", ["--n", "1001"]),
        ("wave_stencil", ["--n", "3"]),
        ("wave_stencil", ["--n", "64"]),
        ("wave_window_sum", ["--n", "1001", "--k", "5"]),
        ("wave_window_sum", ["--n", "40", "--k", "32"]),
        ("wave_window_sum", ["--n", "7", "--k", "1"]),
        ("wave_scan", ["--n", "1024"]),
        ("wave_scan", ["--n", "256", "--width", "8"]),
        ("wave_scan", ["--n", "64", "--width", "1"]),
        ("wave_tile", ["--tiles", "37", "--delta", "-3", "--skew", "1"]),
        ("wave_tile", ["--tiles", "5", "--registers", "3", "--delta", "100", "--skew", "0"]),
    ],
)
def test_example_cpu_twin(name, argv, capsys):
    assert load(name).main(argv + ["--cpu-only"]) == 0
    out = capsys.readouterr().out
    assert "software wave" in out and "== numpy" in out


@pytest.mark.slow  # each script in a fresh interpreter (seconds on 2 cores); CI runs it with -m slow
@pytest.mark.parametrize("name", NAMES)
def test_example_runs_as_a_script(name):
    # From a directory other than the repo root, without installing: the
    # examples must find waveops themselves.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    r = subprocess.run(
        [sys.executable, os.path.join(EXAMPLES, name + ".py"), "--cpu-only"],
        capture_output=True, text=True, cwd=EXAMPLES, env=env,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "== numpy" in r.stdout


def test_stencil_twin_edges():
    ex = load("wave_stencil")
    x = np.arange(10.0) ** 2  # second difference of x^2 is 2 everywhere
    for w in (4, 8, 32):
        np.testing.assert_array_equal(ex.cpu_twin(x, 1.0, w), np.full(8, 2.0))


# ---------------------------------------------------------------------------
# The CUDA kernels compile (PTX, no GPU needed).


@pytest.fixture
def no_gpu_cc90(monkeypatch):
    pytest.importorskip("numba.cuda")
    from numba.cuda.core import config

    if config.ENABLE_CUDASIM:
        pytest.skip("the CUDA simulator cannot compile PTX")
    from cases.compiler import require_compiler

    require_compiler(module_level=False)
    import numba.cuda.dispatcher as dispatcher

    class Dev:
        compute_capability = (9, 0)

    monkeypatch.setattr(dispatcher, "get_current_device", lambda: Dev())


def _kernels():
    from numba.cuda import types as T

    f64, i64, f32 = T.float64, T.int64, T.float32
    return [
        ("wave_stencil", lambda m: m.stencil_kernel, (f64[::1], f64[::1], f64), 2),
        ("wave_window_sum", lambda m: m.window_sum_kernel, (i64[::1], i64[::1], i64), None),
        ("wave_scan", lambda m: m.make_scan_kernel("add"), (i64[::1], i64[::1], i64), 2),
        ("wave_scan", lambda m: m.make_scan_kernel("max"), (f32[::1], f32[::1], i64), 1),
        ("wave_tile", lambda m: m.tile_kernel, (f64[:, :, ::1], f64[:, :, ::1], i64, i64), None),
    ]


@pytest.mark.parametrize("case", range(5))
def test_example_kernels_compile(no_gpu_cc90, case):
    from numba import cuda

    name, get, sig, shuffles = _kernels()[case]
    ptx, _ = cuda.compile_ptx(get(load(name)), sig, cc=(9, 0))
    assert "shfl.sync.idx.b32" in ptx
    if shuffles is not None:  # loops with a run-time trip count vary
        assert ptx.count("shfl.sync.idx.b32") >= shuffles
    assert ".local" not in ptx
