"""What the GPU planners read: the device (its ordinal, shape, capability, cooperative launches) and
the tuning policy in force for it, with the small sizing rules several schedules share."""

from __future__ import annotations

import functools

from numba import cuda

from . import tuning
from .kernels.memops import SIMULATED


NEWEST_CAPABILITY = (99, 0)


def policy() -> tuning.CudaTuning:
    """The tuning policy plans are made with: the current device's, with the override's fields."""
    return tuning.current(device_capability(_device_id()))


@functools.lru_cache(maxsize=None)
def device_shape(device_id: int = 0):
    """(multiprocessors, shared memory per multiprocessor) of the current device."""
    dev = cuda.get_current_device()
    sms = getattr(dev, "MULTIPROCESSOR_COUNT", 2)
    smem = getattr(dev, "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR", 228 * 1024)
    return int(sms), int(smem)


@functools.lru_cache(maxsize=None)
def device_capability(device_id: int = 0) -> tuple:
    """The compute capability of the current device, ``(major, minor)``.

    Under the CUDA simulator (which reports 5.2 but runs every kernel
    variant) and where no device answers (planning without a GPU), the
    newest is assumed.
    """
    if SIMULATED:
        return NEWEST_CAPABILITY
    try:
        return tuple(int(v) for v in cuda.get_current_device().compute_capability)
    except Exception:
        return NEWEST_CAPABILITY


def _device_id() -> int:
    """The current CUDA device's ordinal.

    Asked of the driver directly (``cuCtxGetDevice``): numba's
    ``get_current_device`` takes an uncached path when another library (torch,
    CuPy) made the context, which the profile of a 4 KiB roll showed as a
    quarter of its host time (twice a call). Falls back to numba.
    """
    if not SIMULATED:
        try:
            err, device = _ctx_get_device()()
            if int(err) == 0:
                return int(device)
        except Exception:
            pass
    try:
        return int(cuda.get_current_device().id)
    except Exception:
        return 0


@functools.lru_cache(maxsize=1)
def _ctx_get_device():
    from cuda.bindings import driver

    return driver.cuCtxGetDevice


def cooperative_launch() -> bool:
    """Whether chain plans may be co-resident: a real GPU (the simulator runs blocks one after another),
    the tuning's ``co_resident``, and a cuda.core that launches cooperatively (``is_cooperative``)."""
    if SIMULATED or not policy().co_resident:
        return False
    return _cooperative_config()


@functools.lru_cache(maxsize=1)
def _cooperative_config() -> bool:
    try:
        from cuda.core import LaunchConfig

        LaunchConfig(grid=1, block=32, is_cooperative=True)
        return True
    except Exception:
        return False


def default_cap(rows: int, seg: int) -> int:
    return max(rows * seg // policy().scratch_fraction, policy().min_scratch)


class DefaultBound(int):
    """``default_cap``'s bound, marked as one the caller did not give: a schedule may take more where that
    saves a pass (the chain, up to ``chain_default_share`` of the array); a bound the caller gave is kept."""


def lane_unit(itemsize: int, head0: int) -> int:
    """The widest unit (1..16 bytes, a power of two) items and the array's 16-byte offset are made of."""
    unit = 16
    while unit > 1 and (itemsize % unit or head0 % unit):
        unit //= 2
    return unit


def lane_writer(default: str) -> str:
    """the tuning's ``lane_writer``, checked, or ``default`` when it is None."""
    writer = policy().lane_writer or default
    if writer not in ("runs", "gather", "windows"):
        raise ValueError(f"GPU setting lane_writer must be 'runs', 'gather', 'windows' or None, got {writer!r}")
    return writer


def blocks_for_smem(smem: int, threads: int, registers: int = 0) -> int:
    """Blocks an SM holds by shared memory, threads and (given a thread's ``registers``) the register file."""
    _, smem_per_sm = device_shape(_device_id())
    by_registers = 65536 // (registers * threads) if registers else 32
    return max(1, min(smem_per_sm // (smem + 1024), 2048 // threads, by_registers, 32))


def pow2_dividing(value: int, most: int = 8) -> int:
    """The widest power of two up to ``most`` that divides ``value`` (0: ``most``)."""
    width = most
    while width > 1 and value % width:
        width //= 2
    return width
