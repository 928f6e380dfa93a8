"""Where the chain kernel's time goes: stripped twins of its pipeline, timed beside it.

``python benchmarks/chain_anatomy.py --json out.json`` (GPU). Timing kernels
only (racy: no flags order their reads and writes, so their output is
wrong); each walks the chain order of an aligned shift of ``q`` tiles with
the tile arithmetic done by thread 0 and adds one piece of the real kernel
at a time:

* ``regs``: the probes' shape: load a tile into registers, barrier, store it;
* ``ring``: the chain kernel's loop: ``cp.async`` into a ring of two shared
  buffers, the same three barriers an item, aligned 16-byte stores;
* ``ring+realign``: the same, stored through ``store_realigned`` with the
  source 3 bytes off the grid (the misaligned shifts' path);
* ``ring+realign+flags``: thread 0 also publishes each item's flag and polls
  one (its own, so it never waits long: the cost of a round trip an item).

Then the real kernel (``rotate.roll``) at the gate's shifts, and memcpy, all
in one run, % of memcpy.
"""

from __future__ import annotations

import argparse
import json
import math

from numba import cuda, int64, uint32, uint64

from rotate import _schedule as S
from rotate import bench
from rotate._cuda._kernels import store_realigned
from rotate._cuda._memops import (atomic_add_u64, commit_copies, copies_waiter, copy16_async, load16,
                                  load16_shared, load_acquire, store16, store_relaxed, store_u64)

wait_all = copies_waiter(0)


def make_regs(tile_bytes, threads, min_blocks):
    vecs = tile_bytes // 16
    per_thread = vecs // threads

    @cuda.jit(launch_bounds=(threads, min_blocks))
    def kernel(data, counters, m, q, g, length, lane_steps, total_lanes):
        ctrl = cuda.shared.array(2, int64)
        tid = cuda.threadIdx.x
        while True:
            if tid == 0:
                ctrl[0] = int64(atomic_add_u64(counters, 0, uint64(1)))
            cuda.syncthreads()
            lane = ctrl[0]
            cuda.syncthreads()
            if lane >= total_lanes:
                break
            for step in range(lane_steps):
                j = S.tile_at(m, q, g, length, lane * lane_steps + step)
                src = j + q
                if src >= m:
                    src -= m
                w0 = cuda.local.array(16, uint32)
                w1 = cuda.local.array(16, uint32)
                w2 = cuda.local.array(16, uint32)
                w3 = cuda.local.array(16, uint32)
                for u in range(per_thread):
                    words = load16(data, src * tile_bytes + 16 * (tid + u * threads))
                    w0[u] = words[0]
                    w1[u] = words[1]
                    w2[u] = words[2]
                    w3[u] = words[3]
                cuda.syncthreads()
                for u in range(per_thread):
                    store16(data, j * tile_bytes + 16 * (tid + u * threads), w0[u], w1[u], w2[u], w3[u])
        if tid == 0:
            if atomic_add_u64(counters, 1, uint64(1)) == cuda.gridDim.x - 1:
                store_u64(counters, 0, uint64(0))
                store_u64(counters, 1, uint64(0))

    return kernel


@cuda.jit(device=True)
def draw(items, srcs, state, slot, counters, m, q, g, length, lane_steps, total_lanes):
    """Thread 0: the block's next (lane, step) (``state``), its tile into ``items[slot]`` (-1: none left)
    and the tile it reads, ``q`` ahead, into ``srcs[slot]``."""
    lane = state[0]
    step = state[1] + 1
    if step >= lane_steps:
        lane = int64(atomic_add_u64(counters, 0, uint64(1)))
        step = 0
    state[0] = lane
    state[1] = step
    if lane < total_lanes:
        j = S.tile_at(m, q, g, length, lane * lane_steps + step)
        items[slot] = j
        src = j + q
        srcs[slot] = src - m if src >= m else src
    else:
        items[slot] = -1


def make_ring(tile_bytes, threads, min_blocks, realign, flags_mode):
    vecs = tile_bytes // 16
    buf_vecs = vecs + 2
    smem_words = 4 * 2 * buf_vecs
    write_iters = -(-vecs // threads)

    @cuda.jit(launch_bounds=(threads, min_blocks))
    def kernel(data, flags, counters, m, q, g, length, lane_steps, total_lanes, epoch):
        smem = cuda.shared.array(smem_words, uint32, alignment=16)
        items = cuda.shared.array(2, int64)  # tile of each slot, -1: none
        srcs = cuda.shared.array(2, int64)
        state = cuda.shared.array(2, int64)  # thread 0: lane, step
        tid = cuda.threadIdx.x
        shift = 3 if realign else 0

        if tid == 0:
            state[0] = -1
            state[1] = lane_steps
            draw(items, srcs, state, 0, counters, m, q, g, length, lane_steps, total_lanes)
        cuda.syncthreads()
        if items[0] >= 0:
            for v in range(tid, vecs + 1, threads):
                copy16_async(smem, 4 * v, data, srcs[0] * tile_bytes + 16 * v)
        commit_copies()
        oldest = 0
        free = 1
        while items[oldest] >= 0:
            wait_all()
            cuda.syncthreads()
            if tid == 0:
                if flags_mode:
                    store_relaxed(flags, items[oldest], uint32(epoch))
                draw(items, srcs, state, free, counters, m, q, g, length, lane_steps, total_lanes)
            cuda.syncthreads()
            if items[free] >= 0:
                for v in range(tid, vecs + 1, threads):
                    copy16_async(smem, 4 * (free * buf_vecs + v), data, srcs[free] * tile_bytes + 16 * v)
            commit_copies()
            if tid == 0 and flags_mode:
                while load_acquire(flags, items[oldest]) != epoch:
                    pass
            cuda.syncthreads()
            dest = items[oldest] * tile_bytes
            for u in range(write_iters):
                v = tid + u * threads
                if v < vecs:
                    w = 4 * (oldest * buf_vecs + v)
                    if realign:
                        store_realigned(smem, w, shift, data, dest + 16 * v)
                    else:
                        words = load16_shared(smem, w)
                        store16(data, dest + 16 * v, words[0], words[1], words[2], words[3])
            free = oldest
            oldest = 1 - oldest
        if tid == 0:
            if atomic_add_u64(counters, 1, uint64(1)) == cuda.gridDim.x - 1:
                store_u64(counters, 0, uint64(0))
                store_u64(counters, 1, uint64(0))

    return kernel


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--size-mib", type=int, default=1024)
    parser.add_argument("--qs", default="1,4,64,1024")
    parser.add_argument("--shifts", default="3,1MiB+5,n/3,n/2+1,n-7")
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--rolls-only", action="store_true", help="skip the twins: time rotate.roll only")
    parser.add_argument("--dtypes", default="uint8")
    parser.add_argument("--json")
    args = parser.parse_args(argv)

    import cupy

    import rotate

    stream = cuda.default_stream()
    size = args.size_mib << 20
    time_it, memcpy_ms, keep = bench.memcpy_baseline(size, args.repeat)
    sms = cuda.get_current_device().MULTIPROCESSOR_COUNT
    pool = cupy.random.randint(0, 256, size + 4096, dtype=cupy.uint8)
    flags_array = cupy.zeros(1 << 20, cupy.uint32)
    counters_array = cupy.zeros(4, cupy.uint64)
    data, flags, counters = (int(a.data.ptr) for a in (pool, flags_array, counters_array))
    rows = []

    def record(name, ms, **extra):
        row = dict(name=name, ms=ms, memcpy_ms=memcpy_ms, pct=100 * memcpy_ms / ms, **extra)
        rows.append(row)
        print(f"{name:>40} {ms:.3f} ms {row['pct']:5.1f}%  {extra}", flush=True)

    record("memcpy", memcpy_ms)
    epoch = [1]
    for tile_bytes, per_sm in () if args.rolls_only else ((32768, 3), (16384, 4), (16384, 6)):
        m = size // tile_bytes
        grid = sms * per_sm
        variants = [("regs", make_regs(tile_bytes, 256, per_sm), False)]
        if per_sm <= 4 or tile_bytes <= 16384:
            variants += [("ring", make_ring(tile_bytes, 256, per_sm, False, False), True),
                         ("ring+realign", make_ring(tile_bytes, 256, per_sm, True, False), True),
                         ("ring+realign+flags", make_ring(tile_bytes, 256, per_sm, True, True), True)]
        for q in [int(v) for v in args.qs.split(",")]:
            g = math.gcd(q, m)
            length = m // g
            lane_steps = -(-m // grid)
            total_lanes = -(-m // lane_steps)
            for name, kernel, ringed in variants:
                if ringed:
                    def call(kernel=kernel):
                        epoch[0] += 1
                        kernel[grid, 256, stream](data, flags, counters, m, q, g, length, lane_steps, total_lanes,
                                                  epoch[0])
                else:
                    def call(kernel=kernel):
                        kernel[grid, 256, stream](data, counters, m, q, g, length, lane_steps, total_lanes)
                ms = time_it(call, args.repeat)
                record(name, ms, tile_bytes=tile_bytes, per_sm=per_sm, q=q)
    del pool
    pool = cupy.random.randint(0, 256, size, dtype=cupy.uint8)
    for dtype in args.dtypes.split(","):
        x = pool.view(dtype)
        for label in args.shifts.split(","):
            s = bench.shift_elements(label, x.size, x.itemsize)
            p = rotate.plan(x, s)
            expected = cupy.roll(x, s)
            rotate.roll(x, s)
            ok = bool(cupy.array_equal(x, expected))
            del expected
            ms = time_it(lambda: rotate.roll(x, s), args.repeat)
            step = p.steps[0]
            record(f"rotate.roll {dtype} {label}", ms, algorithm=p.algorithm, ok=ok,
                   details={k: v for k, v in step.details.items() if not k.startswith("_")
                            and isinstance(v, (int, float, str, bool))})
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(dict(rows=rows), fh, indent=1, default=str)


if __name__ == "__main__":
    main()
