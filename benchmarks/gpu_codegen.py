"""Print the chain kernel's resource use and SASS instruction mix (run on a GPU machine).

    python benchmarks/gpu_codegen.py [knob=value ...]

The kernel is the one the planner picks for a 1 MiB uint8 roll by 3 (the
default variant: pipelined on compute capability 9.0+); ``knob=value``
overrides planner settings (``chain_variant=single tile_bytes=16384``).
(Without a GPU, ptxas from the nvidia-cuda-nvcc wheel on the PTX of
``cuda.compile_ptx(kernel.py_func, (int64,) * 15, cc=(9, 0))`` gives the
register count and spills too.)
"""

import re
import sys

import numpy as np
from numba import cuda

import rotate
from rotate._cuda import launch, planner
from rotate._tuning import cuda as cuda_tuning

knobs = {k: int(v) if v.lstrip("-").isdigit() else v for k, v in (a.split("=", 1) for a in sys.argv[1:])}
with cuda_tuning.override(**knobs):
    data = cuda.to_device(np.arange(1 << 20, dtype=np.uint8))
    rotate.roll(data, 3)  # compile
    details = rotate.plan(data, 3).steps[0].details
config = launch._chain_config(details)
kernel, _ = launch._compiled_chain(*config)
compiled = kernel.compile("void(" + ", ".join(["int64"] * 15) + ")")
print("chain_kernel(tile_bytes, threads, buffers, min_blocks, control_warp, direct_decode, pipeline, bulk_stores) =",
      config, "block", details["block"])
print("registers per thread:", compiled.regs_per_thread)
print("local memory per thread:", compiled.local_mem_per_thread)
print("shared memory per block:", compiled.shared_mem_per_block)
print("max blocks per SM (occupancy):",
      compiled.max_cooperative_grid_blocks(details["block"]) / cuda.get_current_device().MULTIPROCESSOR_COUNT)
try:
    sass = compiled.inspect_sass()
except Exception as exc:  # nvdisasm missing
    print("no SASS:", exc)
else:
    for op in ("LDG.E.128", "STG.E.128", "LDS.128", "STS.128", "SHF", "LDL", "STL", "ATOM", "MEMBAR", "BAR.SYNC",
               "UBLKCP", "SYNCS"):
        print(f"{op:>10}: {len(re.findall(re.escape(op), sass))}")
