"""A minimal Nsight Compute target for the rows kernels: one case of benchmarks/rows_gpu_bench.py, a few calls.

    python benchmarks/ncu_rows_target.py CASE_INDEX [knob=value ...]

``knob=value`` arguments override planner settings (Python literals).

    ncu --launch-skip 1 --launch-count 1 --section SpeedOfLight --section WarpStateStats \\
        python benchmarks/ncu_rows_target.py 0
"""

import ast
import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import rotate  # noqa: E402
from rotate._cuda import planner  # noqa: E402
from rotate._tuning import cuda as cuda_tuning
from rows_gpu_bench import CASES  # noqa: E402

positional = [a for a in sys.argv[1:] if "=" not in a]
_RUN_TUNING = cuda_tuning.override(**{k: ast.literal_eval(v) for k, v in (a.split("=", 1) for a in sys.argv[1:] if "=" in a)})
_RUN_TUNING.__enter__()  # for the whole run (held: dropped, it would be undone)
function, shape, dtype, extra = CASES[int(positional[0]) if positional else 0]

import cupy  # noqa: E402

x = cupy.asarray(np.random.default_rng(0).integers(0, 256, int(np.prod(shape)) * np.dtype(dtype).itemsize,
                                                   dtype=np.uint8)).view(dtype).reshape(shape)
if function == "roll_rows":
    shifts = cupy.asarray(np.random.default_rng(1).integers(-shape[-1], shape[-1], shape[:-1]), dtype=cupy.int64)
    call = lambda: rotate.roll_rows(x, shifts)  # noqa: E731
elif function == "fftshift":
    call = lambda: rotate.fftshift(x)  # noqa: E731
else:
    call = lambda: rotate.roll(x, *extra)  # noqa: E731
for _ in range(3):
    call()
cupy.cuda.runtime.deviceSynchronize()
print("case:", function, shape, dtype, extra)
