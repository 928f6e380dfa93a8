"""In-place array rotation at memory-bandwidth speed, on GPUs and CPUs.

``roll(a, shift, axis)`` has numpy.roll's semantics and ``rotate(a, middle)``
std::rotate's, but both work in place: no second array is allocated, every
byte is read once and written once. numpy arrays run on the CPU backend
(numba); CUDA device arrays (numba, CuPy, PyTorch, anything with
``__cuda_array_interface__`` or DLPack) run on the GPU backend (numba-cuda),
on the caller's stream. ``plan`` says what a call would do.

>>> import numpy as np, rotate
>>> rotate.roll(np.arange(5), 1)
array([4, 0, 1, 2, 3])
"""

from ._api import plan, roll, rotate
from ._plan import Plan, Step
from ._validate import AxisError
from .rows import fftshift, ifftshift, plan_roll_rows, roll_rows

__all__ = ["roll", "rotate", "plan", "Plan", "Step", "AxisError", "roll_rows", "plan_roll_rows", "fftshift",
           "ifftshift"]
__version__ = "0.1.0"
