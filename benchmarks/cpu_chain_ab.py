"""CPU: chain-serial against the block swaps it replaces, alternating, 256 MiB (medians of 5).

    python benchmarks/cpu_chain_ab.py [threads]

Each repetition flushes 1 GiB, then times np.copyto and, for uint8 and float64
at shifts n/3, n/2 + 3 and n/4 + 3, the block-swap plan (chain tiles switched
off) and the chain-serial plan, alternating so that the host's slow and fast
phases hit both alike. Result: docs/results/cpu-chain-ab-*.log.
"""

import sys
import time

import numba
import numpy as np

import rotate
from rotate._tuning import cpu as cpu_tuning

SHIFTS = {"n/3": lambda size: size // 3, "n/2+3": lambda size: size // 2 + 3, "n/4+3": lambda size: size // 4 + 3}


def main(argv):
    if argv:
        numba.set_num_threads(int(argv[0]))
    n = 256 << 20
    a = np.random.default_rng(0).integers(0, 255, n, dtype=np.uint8)
    b = np.empty_like(a)
    flush = np.ones(1 << 30, np.uint8)

    def once(fn):
        np.add(flush, 1, out=flush)
        t = time.perf_counter()
        fn()
        return (time.perf_counter() - t) * 1e3

    tiles = cpu_tuning.current().chain_tile_bytes
    res = {}
    for _ in range(5):
        res.setdefault("copyto", []).append(once(lambda: np.copyto(b, a)))
        for dtype in ("uint8", "float64"):
            x = a.view(dtype)
            for label, shift_of in SHIFTS.items():
                k = shift_of(x.size)
                for chain_tiles in ((), tiles):
                    with cpu_tuning.override(chain_tile_bytes=chain_tiles):
                        expected = np.roll(x, k) if not res.get("checked") else None
                        p = rotate.plan(x, k)
                        ms = once(lambda: rotate.roll(x, k))
                        if expected is not None:
                            assert np.array_equal(x.view(np.uint8), expected.view(np.uint8)), (dtype, label, p)
                            rotate.roll(x, -k)
                        res.setdefault((dtype, label, p.steps[0].algorithm), []).append(ms)
        res["checked"] = True
    res.pop("checked")
    copy = np.median(res.pop("copyto"))
    print(f"numba threads {numba.get_num_threads()}, 256 MiB, np.copyto median {copy:.1f} ms")
    for key, values in res.items():
        print(f"{key}: median {np.median(values):.1f} ms = {np.median(values) / copy:.2f}x copyto; "
              f"min {min(values):.1f} max {max(values):.1f}")


if __name__ == "__main__":
    main(sys.argv[1:])
