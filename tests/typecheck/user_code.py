"""A user's code, as their type checker reads it: what each public function returns.

``python -m mypy`` checks this file with the packages (pyproject.toml's [tool.mypy]); .ci/run checks
it again against the installed wheel, from outside the source tree, which is what ``py.typed`` is
for. ``assert_type`` fails when a type differs, ``Any`` included, so a public function whose
annotations are lost fails here; a ``# type: ignore`` that mypy finds unneeded fails too
(warn_unused_ignores), which makes the lines marked "not Any" assert that a wrong use is caught.
``tests/api/test_typing.py`` also runs ``run()``, so every call below is one the package accepts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

import rotate
import rotate.distributed
import waveops
import waveops.amdgpu
import waveops.cpu
import waveops.spirv
import waveops.vulkan

if TYPE_CHECKING:
    from typing_extensions import assert_type
else:
    def assert_type(value, _type):
        return value


def run() -> None:
    """Calls on small numpy arrays: the checker sees their types, the test runs them."""
    x: npt.NDArray[np.float64] = np.arange(12.0)
    m: npt.NDArray[np.int32] = np.arange(6, dtype=np.int32).reshape(2, 3)

    assert_type(rotate.roll(x, 1), npt.NDArray[np.float64])  # roll returns the array it was given
    assert_type(rotate.roll(m, (1, -1), axis=(0, 1)), npt.NDArray[np.int32])
    assert_type(rotate.roll(m, np.int64(2), axis=np.intp(1), max_scratch_bytes=0), npt.NDArray[np.int32])
    assert_type(rotate.roll(x, np.array([1, 2])), npt.NDArray[np.float64])
    rolled: np.ndarray = rotate.roll(np.zeros(3), 1)
    not_a_str: str = rotate.roll(np.zeros(3), 1)  # type: ignore[assignment]  # not Any
    assert_type(rotate.rotate(x, 3), int)
    assert_type(rotate.plan(x, 3), rotate.Plan)
    assert_type(rotate.plan(x, middle=3).steps, tuple[rotate.Step, ...])
    assert_type(rotate.plan(x, 3).bytes_moved, int)
    assert_type(rotate.roll_rows(m, [1, -1]), npt.NDArray[np.int32])
    assert_type(rotate.roll_rows(m, np.array([1, 2, 3]), axis=0), npt.NDArray[np.int32])
    assert_type(rotate.plan_roll_rows(m, 1), rotate.Plan)
    assert_type(rotate.fftshift(x), npt.NDArray[np.float64])
    assert_type(rotate.ifftshift(m, axes=[0, 1]), npt.NDArray[np.int32])
    assert_type(rotate.release_scratch(), int)
    assert_type(rotate.warmup(dtypes=[], functions=("roll",), gpu=False, progress=False), int)
    assert_type(rotate.__version__, str)
    try:
        rotate.roll(x, 1.5)  # type: ignore[arg-type]  # refused by the checker, as by the call
    except TypeError:
        pass
    try:
        rotate.roll(x, 1, axis=5)
    except rotate.AxisError as exc:
        assert_type(exc, rotate.AxisError)

    lanes: npt.NDArray[np.int32] = np.arange(8, dtype=np.int32)
    assert_type(waveops.cpu.rotate(lanes, 1, width=4), npt.NDArray[np.int32])
    assert_type(waveops.cpu.rotate(lanes, np.zeros(8, np.int64), width=4), npt.NDArray[np.int32])
    assert_type(waveops.cpu.lane_ids(8, width=4), npt.NDArray[np.int32])
    assert_type(waveops.cpu.width(), int)
    assert_type(waveops.cpu.simd_width_for("haswell", "+avx2"), int)
    assert_type(waveops.source_lane(5, 1, 4), int)
    assert_type(waveops.cuda_available(), bool)
    assert_type(waveops.__version__, str)
    assert_type(waveops.spirv.rotate_module("float32", width=8), list[int])
    assert_type(waveops.spirv.to_bytes([waveops.spirv.MAGIC]), bytes)
    assert_type(waveops.spirv.find_tool("spirv-val"), "str | None")
    assert_type(waveops.amdgpu.rotate_kernel_ir("float32", arch="gfx942"), str)
    assert_type(waveops.vulkan.loader_available(), bool)


class MyArray:
    """Any array type a backend takes (a CuPy array, a torch tensor, a DTensor) comes back as itself."""


def any_array_type(a: MyArray, shard: npt.NDArray[np.float32]) -> None:
    """Typed, never run: it needs a GPU array or a process group."""
    assert_type(rotate.roll(a, 3, stream=None), MyArray)
    assert_type(rotate.fftshift(a), MyArray)
    assert_type(rotate.roll_rows(a, 1), MyArray)
    assert_type(rotate.distributed.roll(shard, 5, axis=0), npt.NDArray[np.float32])
    assert_type(rotate.distributed.roll_dtensor(a, 1), MyArray)
    assert_type(rotate.distributed.plan(shard, 5), rotate.distributed.DistPlan)
    assert_type(rotate.distributed.plan(shard, 5).extra_bytes, int)


def kernel_body(value: float, i: int) -> None:
    """The device functions as a kernel calls them (typed, never run: they need a GPU)."""
    assert_type(waveops.rotate(value, 1), float)
    assert_type(waveops.rotate(i, -3, width=8), int)
    assert_type(waveops.lane_id(), int)
    assert_type(waveops.width(), int)


def vulkan_device(x: npt.NDArray[np.float32]) -> None:
    """Typed, never run: it needs a Vulkan driver."""
    with waveops.vulkan.Device() as dev:
        assert_type(dev.rotate(x, 1, width=8), npt.NDArray[np.float32])
        assert_type(dev.best_lowering(), str)
