"""Where does the chain kernel lose its last points to memcpy (an Nsight Compute profile of one roll)?

Backs: the profiles behind docs/results/ncu-chain-4082604-summary.txt and
ncu-pipeline-2007fe3-long-shifts-summary.txt (docs/design.md, docs/performance.md).

A minimal target for Nsight Compute: roll 1 GiB of uint8 by 3 (or a gate shift label), a few times.

    python benchmarks/probes/ncu_target.py [size_bytes [shift_label]] [knob=value ...]

``knob=value`` arguments override planner settings (``chain_decode=direct``),
so a profile can be taken of a configuration that is not the default.

    ncu --clock-control none --launch-skip 1 --launch-count 1 --section SpeedOfLight \
        --section WarpStateStats python benchmarks/probes/ncu_target.py
"""

import sys

import numpy as np
from numba import cuda

import rotate
from rotate import bench
from rotate._backends.cuda import tuning as cuda_tuning

positional = [a for a in sys.argv[1:] if "=" not in a]
knobs = dict(a.split("=", 1) for a in sys.argv[1:] if "=" in a)
_RUN_TUNING = cuda_tuning.override(**knobs)  # for the whole run (held: dropped, it would be undone)
_RUN_TUNING.__enter__()
size = int(positional[0]) if positional else 1 << 30
shift = bench.shift_elements(positional[1], size, 1) if len(positional) > 1 else 3
dev = cuda.to_device(np.random.default_rng(0).integers(0, 256, size, dtype=np.uint8))
for _ in range(3):
    rotate.roll(dev, shift)
cuda.synchronize()
print("plan:", rotate.plan(dev, shift))
