"""What a benchmark result was measured with: commit, versions, machine, every knob.

Every result file in docs/results/ carries this block, so a number in the
docs can be traced to the code and the settings that produced it.
"""

from __future__ import annotations

import dataclasses
import os
import platform
import subprocess
from pathlib import Path
from typing import Any

import numpy as np


def git_commit() -> str:
    """The checkout's commit (with ``-dirty`` when it has uncommitted changes), or "unknown".

    ``ROTATE_GIT_COMMIT`` names it where the tree is a copy without git
    (a benchmark machine that gets the working tree only).
    """
    if os.environ.get("ROTATE_GIT_COMMIT"):
        return os.environ["ROTATE_GIT_COMMIT"]
    root = Path(__file__).resolve().parents[1]
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True,
                              timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return head + ("-dirty" if dirty else "")
    except Exception:
        return "unknown"


def _version(module: str) -> Any:
    try:
        mod = __import__(module)
    except Exception:
        return None
    return getattr(mod, "__version__", "unknown")


def _package_version(dist: str) -> Any:
    try:
        from importlib.metadata import version

        return version(dist)
    except Exception:
        return None


def cpu_knobs() -> dict:
    """numba's threads and the CPU tuning policy in force (every field; an override shows here)."""
    from ._backends.cpu import threads
    from ._backends.cpu import tuning

    return {
        "numba_threads": threads.num_threads(),
        "numba_threading_layer": _threading_layer(),
        "tuning": dataclasses.asdict(tuning.current()),
    }


def _threading_layer() -> Any:
    import numba

    try:
        return numba.threading_layer()
    except ValueError:  # no parallel region has run yet
        return numba.config.THREADING_LAYER


def gpu_knobs() -> dict:
    """The GPU tuning policy in force (every field), the device and the driver."""
    out: dict = {}
    try:
        from numba import cuda

        from ._backends.cuda import device as gpu

        out["tuning"] = dataclasses.asdict(gpu.policy())
        dev = cuda.get_current_device()
        name = dev.name
        out["gpu"] = name.decode() if isinstance(name, bytes) else str(name)
        out["compute_capability"] = list(dev.compute_capability)
        out["multiprocessors"] = gpu.device_shape(gpu._device_id())[0]
        try:
            out["cuda_driver_version"] = list(cuda.cudadrv.driver.driver.get_version())
        except Exception as exc:
            out["cuda_driver_version"] = f"unknown ({type(exc).__name__})"
        try:
            out["cuda_runtime_version"] = list(cuda.runtime.get_version())
        except Exception:
            out["cuda_runtime_version"] = None
    except Exception as exc:
        out["error"] = f"{type(exc).__name__}: {exc}"[:300]
    return out


def environment(gpu: bool = False) -> dict:
    """The provenance block: commit, versions, machine and knobs (GPU ones when ``gpu``)."""
    env = {
        "git_commit": git_commit(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        "versions": {
            "numpy": np.__version__,
            "numba": _version("numba"),
            "numba-cuda": _package_version("numba-cuda"),
            "torch": _package_version("torch"),
            "cupy": _package_version("cupy") or _package_version("cupy-cuda12x") or _package_version("cupy-cuda13x"),
        },
        "cpu_knobs": cpu_knobs(),
    }
    if gpu:
        env["gpu_knobs"] = gpu_knobs()
    return env
