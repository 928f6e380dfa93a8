"""Run the CUDA kernels' logic under numba's CUDA simulator, in a subprocess.

The simulator must be switched on before numba.cuda is first imported, so
these cases run in their own interpreter (tests/sim_cases.py) and CI needs
no GPU. On a GPU machine the same kernels are tested for real in test_gpu.py.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("numba.cuda")

HERE = Path(__file__).parent


def test_kernels_under_the_cuda_simulator():
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", PYTHONPATH=str(HERE.parent))
    result = subprocess.run([sys.executable, str(HERE / "sim_cases.py")], env=env,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-6000:]
