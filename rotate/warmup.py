"""``python -m rotate.warmup``: compile the common calls' kernels now, with a line per step.

Run it where the kernels will be used (numba caches the CPU's on disk, so a
container image's build or a deploy step is a good place)::

    python -m rotate.warmup                       # float32 and float64, every function, the GPU if present
    python -m rotate.warmup --dtypes uint8,complex64 --functions roll,fftshift --no-gpu

From Python, call :func:`rotate.warmup` (the same function). Importing this
module leaves ``rotate.warmup`` callable: the module calls the function.
"""

from __future__ import annotations

import argparse
import sys
import types
from typing import Any, List, Optional

from ._warmup import DEFAULT_DTYPES, FUNCTIONS
from ._warmup import warmup as _warmup


def main(argv: Optional[List[str]] = None) -> int:
    """The command line: parse ``argv``, run :func:`rotate.warmup`, print what it compiled."""
    parser = argparse.ArgumentParser(prog="python -m rotate.warmup", description=__doc__.splitlines()[0])
    parser.add_argument("--dtypes", default=",".join(DEFAULT_DTYPES),
                        help="comma-separated dtypes (default: %(default)s; a dtype warms every dtype of its size)")
    parser.add_argument("--functions", default=",".join(FUNCTIONS), help="comma-separated (default: %(default)s)")
    gpu = parser.add_mutually_exclusive_group()
    gpu.add_argument("--gpu", dest="gpu", action="store_true", default=None, help="also the GPU's kernels (the default "
                     "when a CUDA GPU is usable)")
    gpu.add_argument("--no-gpu", dest="gpu", action="store_false", help="the CPU's kernels only")
    parser.add_argument("--no-cpu", dest="cpu", action="store_false", help="the GPU's kernels only")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    args = parser.parse_args(argv)
    try:
        compiled = _warmup(dtypes=[d for d in args.dtypes.split(",") if d],
                           functions=[f for f in args.functions.split(",") if f],
                           gpu=args.gpu, cpu=args.cpu, progress=not args.quiet)
    except (TypeError, ValueError) as exc:
        parser.error(str(exc))
    print(f"rotate.warmup: {compiled} kernels compiled (the rest were cached)")
    return 0


class _CallableModule(types.ModuleType):
    """This module, callable as :func:`rotate.warmup` (importing it rebinds ``rotate.warmup`` to it)."""

    def __call__(self, *args: Any, **kwargs: Any) -> int:
        return _warmup(*args, **kwargs)


if __name__ == "__main__":
    sys.exit(main())
else:
    sys.modules[__name__].__class__ = _CallableModule
