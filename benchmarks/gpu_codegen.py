"""Print the chain kernel's resource use and SASS instruction mix (run on a GPU machine).

    python benchmarks/gpu_codegen.py [tile_bytes threads buffers min_blocks]

(Without a GPU, ptxas from the nvidia-cuda-nvcc wheel on the PTX of
``cuda.compile_ptx(kernel.py_func, (int64,) * 15, cc=(9, 0))`` gives the
register count and spills too.)
"""

import re
import sys

import numpy as np
from numba import cuda

import rotate
from rotate._cuda import _kernels, planner

tile, threads, buffers, min_blocks = ((int(a) for a in sys.argv[1:5]) if len(sys.argv) > 4 else
                                      (_kernels.TILE_BYTES, _kernels.THREADS, _kernels.BUFFERS, 3))
with planner.override(tile_bytes=tile, threads=threads, buffers=buffers, min_blocks=min_blocks):
    rotate.roll(cuda.to_device(np.arange(1 << 20, dtype=np.uint8)), 3)  # compile
kernel = _kernels.chain_kernel(tile, threads, buffers, min_blocks)
compiled = kernel.compile("void(" + ", ".join(["int64"] * 15) + ")")
print(f"tile_bytes={tile} threads={threads} buffers={buffers}")
print("registers per thread:", compiled.regs_per_thread)
print("local memory per thread:", compiled.local_mem_per_thread)
print("shared memory per block:", compiled.shared_mem_per_block)
print("max blocks per SM (occupancy):", compiled.max_cooperative_grid_blocks(threads) / cuda.get_current_device().MULTIPROCESSOR_COUNT)
try:
    sass = compiled.inspect_sass()
except Exception as exc:  # nvdisasm missing
    print("no SASS:", exc)
else:
    for op in ("LDG.E.128", "STG.E.128", "LDS.128", "STS.128", "SHF", "LDL", "STL", "ATOM", "MEMBAR", "BAR.SYNC"):
        print(f"{op:>10}: {len(re.findall(re.escape(op), sass))}")
