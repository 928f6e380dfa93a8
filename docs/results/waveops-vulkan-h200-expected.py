# Run here (not on the device): inputs and waveops.cpu.rotate results for a subgroup of 32.
import numpy as np, waveops, sys
rng = np.random.default_rng(20261202)
x32 = rng.integers(0, 2**32, 4096, dtype=np.uint64).astype(np.uint32)
x32[:8] = np.array([0x7FC00001, 0x80000000, 0x7F800000, 0xFF800001, 0, 0xFFFFFFFF, 1, 0x00000001], np.uint32)
x64 = rng.integers(0, 2**63, 2048, dtype=np.uint64) * np.uint64(2) + rng.integers(0, 2, 2048, dtype=np.uint64)
d32 = rng.integers(-2**31, 2**31, 4096, dtype=np.int64)
d64 = rng.integers(-2**31, 2**31, 2048, dtype=np.int64)
DELTAS = [1, 0xFFFFFFFF, 5, 2**31 + 3, 33]
WIDTHS = [None, 1, 2, 4, 8, 16, 32]
S = 32
out = dict(x32=x32, x64=x64, d32=d32, d64=d64, deltas=np.array(DELTAS, np.uint64))
for name, x, dl in (("u32", x32, d32), ("u64", x64, d64)):
    for w in WIDTHS:
        for d in DELTAS:
            out[f"exp_{name}_w{w}_d{d}"] = waveops.cpu.rotate(x, d, width=w or S)
        out[f"exp_{name}_w{w}_perlane"] = waveops.cpu.rotate(x, dl, width=w or S)
np.savez_compressed(sys.argv[1], **out)
print(len(out), "arrays")
