"""Run the CUDA kernels' logic under numba's CUDA simulator, in a subprocess.

The simulator must be switched on before numba.cuda is first imported, so
these cases run in their own interpreter (tests/cases/sim.py) and CI needs
no GPU. On a GPU machine the same kernels are tested for real in test_gpu.py.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("numba.cuda")

HERE = Path(__file__).parent
SIM = HERE.parent / "cases" / "sim.py"  # run as a script, tests/ on its path


def _groups() -> dict:
    """tests/cases/sim.py's GROUPS, read without importing it (it must run under the simulator)."""
    import ast

    tree = ast.parse((SIM).read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "GROUPS":
            return ast.literal_eval(node.value)
    raise AssertionError("tests/cases/sim.py has no GROUPS")


@pytest.mark.slow
@pytest.mark.parametrize("group", sorted(_groups()))
def test_kernels_under_the_cuda_simulator(group):
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", PYTHONPATH=str(SIM.parents[1]))
    result = subprocess.run([sys.executable, str(SIM), group], env=env,
                            capture_output=True, text=True, timeout=1200)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-6000:]


def test_every_simulator_check_is_in_a_group():
    """A check function cases/sim.py defines but no group lists would never run."""
    import ast

    tree = ast.parse((SIM).read_text())
    defined = [n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("check_")]
    listed = [name for group in _groups().values() for name in group]
    assert sorted(defined) == sorted(listed)
