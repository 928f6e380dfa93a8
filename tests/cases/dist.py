"""One rank of the distributed tests: every case on a gloo group of CPU processes.

tests/distributed/test_distributed.py starts ``world`` copies of this script (loopback
only, a file:// rendezvous) and reads each rank's JSON report from stdout:
``{"rank": r, "cases": n, "failures": [...]}``. Run by hand:

    for r in 0 1 2; do PYTHONPATH=. python tests/cases/dist.py 3 $r /tmp/rdv & done; wait
"""

import json
import os
import sys
import traceback
from datetime import timedelta

import numpy as np
import torch
import torch.distributed as dist

import rotate
import rotate.distributed as rd

DTYPES = [torch.uint8, torch.int16, torch.float32, torch.float64, torch.complex128, torch.bfloat16, torch.bool]


def global_array(n, dtype, seed, trailing=()):
    """Random, never zeros: bytes from a seeded generator, viewed as dtype."""
    g = torch.Generator().manual_seed(seed)
    itemsize = torch.empty((), dtype=dtype).element_size()
    count = n * int(np.prod(trailing, dtype=np.int64))
    raw = torch.randint(1, 256, (count * itemsize,), generator=g, dtype=torch.uint8)
    if dtype == torch.bool:
        return (raw % 2 == 1).reshape(n, *trailing)
    return raw.view(dtype).reshape(n, *trailing)


def split(lengths, world, n):
    return lengths if lengths is not None else [n // world + (r < n % world) for r in range(world)]


def same(a, b):
    """Bit-for-bit equality (random bytes viewed as floats include NaNs)."""
    return a.shape == b.shape and a.dtype == b.dtype and torch.equal(a.contiguous().view(torch.uint8), b.contiguous().view(torch.uint8))


def gather(local, lengths, rank, like):
    """The global array from every rank's piece (gloo: byte-wise all_reduce of zero-padded copies)."""
    start = sum(lengths[:rank])
    whole = torch.zeros_like(like)
    whole[start:start + lengths[rank]] = local
    as_bytes = whole.view(torch.uint8)
    dist.all_reduce(as_bytes)
    return whole


class Report:
    def __init__(self, rank):
        self.rank, self.cases, self.failures = rank, 0, []

    def check(self, name, fn):
        self.cases += 1
        try:
            fn()
        except Exception:
            self.failures.append(f"{name}: {traceback.format_exc(limit=6)}")


def plain_case(rank, world, lengths, shift, dtype, trailing=(), staging=None, give_lengths=False, seed=0,
               axis="default"):
    """``axis="default"`` passes none: numpy.roll's None, the flattened global array (for 1-D shards the
    same as axis 0)."""
    n = sum(lengths)
    full = global_array(n, dtype, seed, trailing)
    start = sum(lengths[:rank])
    local = full[start:start + lengths[rank]].clone()
    kwargs = {"staging_bytes": staging} if staging else {}
    if give_lengths:
        kwargs["global_lengths"] = lengths
    if axis != "default":
        kwargs["axis"] = axis
    out = rd.roll(local, shift, **kwargs)
    assert out is local
    # The oracle: torch.roll of the gathered result must equal torch.roll of the original.
    got = gather(local, lengths, rank, full)
    if axis in ("default", None):
        want = torch.roll(full, shift % full.numel() if full.numel() else 0)  # no dims: flattened
    else:
        want = torch.roll(full, shift % n if n else 0, axis)
    assert same(got, want), f"lengths {lengths} shift {shift} dtype {dtype}: {got.flatten()[:12]} != {want.flatten()[:12]}"
    p = rd.plan(local, shift, **kwargs)
    expected = sum(p.bytes_sent)
    assert p.bytes_sent[rank] >= 0 and expected >= 0


def run_plain(rep, rank, world):
    even = [5] * world
    uneven = [3 + (2 * r) % 5 for r in range(world)]  # 3, 5, 4, 6 ...
    with_empty = [4] * (world - 1) + [0]
    tiny = [1] + [6] * (world - 1)
    for lengths in (even, uneven, with_empty, tiny):
        n = sum(lengths)
        shifts = sorted({0, 1, 2, -1, -3, n - 1, n, n + 2, -n - 2, 3 * n + 1, lengths[0] + 1,
                         n // 2, n // 2 + 1, 2 * max(lengths) + 1, -(2 * max(lengths) + 1), 10 ** 20 + 7})
        for shift in shifts:
            rep.check(f"plain {lengths} {shift}", lambda: plain_case(rank, world, lengths, shift, torch.float32))
    # Chunking: staging of a few bytes forces many rounds; odd staging sizes cut elements.
    for staging in (1, 7, 24):
        for shift in (2, 7, -9, 11):
            rep.check(f"staging {staging} {shift}", lambda: plain_case(rank, world, [9] * world, shift, torch.int16, staging=staging))
            rep.check(f"staging uneven {staging} {shift}", lambda: plain_case(rank, world, uneven, shift, torch.float64, staging=staging))
    for dtype in DTYPES:
        rep.check(f"dtype {dtype}", lambda: plain_case(rank, world, uneven, 4, dtype, seed=3))
        rep.check(f"dtype {dtype} across", lambda: plain_case(rank, world, even, 2 * 5 + 3, dtype, seed=4))
    # Both exchange paths run: one round overlapped with the local pass, and chunked rounds.
    def both_paths():
        x = global_array(9, torch.float32, 8)
        assert rd.plan(x, 2).details["overlapped_stages"] == 1
        chunked = rd.plan(x, 2, staging_bytes=4)
        assert chunked.details["overlapped_stages"] == 0 and chunked.rounds == 2
    rep.check("both exchange paths", both_paths)
    # A shard with trailing dimensions: elements of several bytes per row.
    rep.check("trailing", lambda: plain_case(rank, world, uneven, 7, torch.float32, trailing=(3, 2), staging=10,
                                             axis=0))
    # Without axis, N-D shards roll as numpy.roll(global, shift) does: flattened (not along axis 0).
    for shift in (7, 1, -13, 10 ** 20 + 7):
        rep.check(f"trailing, default axis, {shift}",
                  lambda: plain_case(rank, world, uneven, shift, torch.float32, trailing=(3, 2), staging=10))
        rep.check(f"trailing, axis=None, lengths given, {shift}",
                  lambda: plain_case(rank, world, uneven, shift, torch.int16, trailing=(5,), give_lengths=True,
                                     axis=None))
    def default_is_flattened():  # the default is not axis 0 on 2-D shards (the old default)
        full = global_array(4 * world, torch.float32, 11, (3,))
        local = full[4 * rank:4 * rank + 4].clone()
        rd.roll(local, 1)
        assert same(local, torch.roll(full, 1)[4 * rank:4 * rank + 4])
        assert not same(local, torch.roll(full, 1, 0)[4 * rank:4 * rank + 4])
        assert rd.plan(local, 1).lengths == tuple([12] * world)  # elements of the flattened shards
        assert rd.plan(local, 1, axis=0).lengths == tuple([4] * world)
    rep.check("default axis: flattened", default_is_flattened)
    rep.check("global_lengths", lambda: plain_case(rank, world, uneven, 6, torch.int16, give_lengths=True))
    # numpy shards on gloo ranks roll too, zero-copy.
    def numpy_shard():
        full = np.arange(7 * world, dtype=np.int32) + 1
        local = full[7 * rank:7 * rank + 7].copy()
        assert rd.roll(local, 9) is local
        assert np.array_equal(local, np.roll(full, 9)[7 * rank:7 * rank + 7])
    rep.check("numpy shard", numpy_shard)


def expect_error(exc_types, fragment, fn, before, after):
    try:
        fn()
    except exc_types as e:
        assert fragment in str(e) or fragment == "", f"message {e!r} lacks {fragment!r}"
        assert same(before, after()), "the shard changed although the call raised"
        return
    raise AssertionError("no error raised")


def run_errors(rep, rank, world):
    lengths = [6] * world
    def shard():
        return global_array(6, torch.float32, 10 + rank)
    def other_shift():
        x = shard(); before = x.clone()
        expect_error(ValueError, "shift", lambda: rd.roll(x, 5 if rank == world - 1 else 4), before, lambda: x)
    rep.check("error: another shift", other_shift)
    def huge_shifts():  # beyond 2**124 the two-word exchange alone cannot tell them apart
        x = shard(); before = x.clone()
        expect_error(ValueError, "shift", lambda: rd.roll(x, 2 ** 130 if rank == 0 else 2 ** 131), before, lambda: x)
        # the same huge shift on every rank (and one equal to it modulo the global length) rolls
        assert rd.roll(x, 2 ** 130 + (6 * world if rank else 0)) is x
        full = torch.cat([global_array(6, torch.float32, 10 + r) for r in range(world)])
        assert same(x, torch.roll(full, (2 ** 130) % (6 * world))[6 * rank:6 * rank + 6])
    rep.check("error: shifts above 2**124 that differ", huge_shifts)
    def autograd_version():  # a shard autograd saved: backward() must see the roll, as for torch's own ops
        w = torch.ones(6, requires_grad=True); x = shard(); y = (w * x).sum()
        rd.roll(x, 1)
        try:
            y.backward()
        except RuntimeError as e:
            assert "modified by an inplace operation" in str(e)
        else:
            raise AssertionError("backward() used the rolled shard silently")
    rep.check("autograd: a saved shard's version bumped", autograd_version)
    def other_dtype():
        x = shard() if rank else shard().double(); before = x.clone()
        expect_error(ValueError, "dtype", lambda: rd.roll(x, 3), before, lambda: x)
    rep.check("error: another dtype", other_dtype)
    def other_shape():
        x = torch.ones(6, 3 if rank else 2); before = x.clone()
        expect_error(ValueError, "shape", lambda: rd.roll(x, 3), before, lambda: x)
    rep.check("error: another trailing shape", other_shape)
    def bad_lengths():
        x = shard(); before = x.clone()
        gl = lengths if rank else [7] * world
        expect_error(ValueError, "", lambda: rd.roll(x, 3, global_lengths=gl), before, lambda: x)
    rep.check("error: global_lengths that lie", bad_lengths)
    def float_shift():
        x = shard(); before = x.clone()
        expect_error((TypeError, ValueError), "", lambda: rd.roll(x, 1.5 if rank == 0 else 1), before, lambda: x)
    rep.check("error: a float shift on one rank", float_shift)
    def other_staging():
        x = shard(); before = x.clone()
        expect_error(ValueError, "staging_bytes", lambda: rd.roll(x, 3, staging_bytes=64 + rank), before, lambda: x)
    rep.check("error: another staging_bytes", other_staging)
    def non_contiguous():
        x = torch.ones(6, 4)[:, ::2]; before = x.clone()
        expect_error(ValueError, "contiguous", lambda: rd.roll(x, 3), before, lambda: x.clone())
    rep.check("error: non-contiguous shard", non_contiguous)
    def too_uneven():
        x = global_array(200 if rank != 1 else 1, torch.float32, 5); before = x.clone()
        expect_error(ValueError, "too uneven", lambda: rd.roll(x, 100), before, lambda: x)
    rep.check("error: too uneven a split for the shift", too_uneven)
    # After all that, the group still works: nobody hung and nobody is out of step.
    rep.check("group still in step", lambda: plain_case(rank, world, lengths, 7, torch.float32))


def run_dtensor(rep, rank, world):
    try:
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.tensor import Replicate, Shard, distribute_tensor
    except ImportError:
        return
    mesh = init_device_mesh("cpu", (world,))

    def case(shape, placements, shift, axis, dtype=torch.float32, on=mesh):
        full = global_array(shape[0], dtype, 20, shape[1:])
        dt = distribute_tensor(full.clone(), on, placements)  # Replicate may keep the storage
        local_before = dt.to_local()
        out = rotate.roll(dt, shift, axis)
        assert out is dt
        assert dt.to_local().data_ptr() == local_before.data_ptr(), "the local shard was replaced, not rolled in place"
        want = torch.roll(full, shift, axis) if axis is not None else torch.roll(full, shift)
        got = dt.full_tensor()
        assert same(got, want), f"{shape} {placements} {shift} {axis}"
        plans = rd.plan(dt, shift, axis=axis)
        axes = () if axis is None else axis if isinstance(axis, tuple) else (axis,)
        rolled = {p.dim % len(shape) for p in placements if isinstance(p, Shard)} & {a % len(shape) for a in axes}
        if len(rolled) > 1:  # one plan a sharded dimension rolled, each a DistPlan (not the internal context)
            assert isinstance(plans, list) and len(plans) == len(rolled), (placements, axis, plans)
            assert all(isinstance(p, rd.DistPlan) for p in plans), plans
        else:
            assert isinstance(plans, rd.DistPlan), (placements, axis, plans)

    for n in (4 * world, 4 * world + 1, 3 * world - 1):  # even, uneven (torch.chunk), with an empty shard
        for shift in (1, -2, 5, n // 2 + 1, -n - 3):
            rep.check(f"dtensor 1-D {n} {shift}", lambda: case((n,), [Shard(0)], shift, 0))
    rep.check("dtensor 2-D shard 0 along 0", lambda: case((2 * world + 1, 3), [Shard(0)], 3, 0))
    rep.check("dtensor 2-D shard 1 along 1", lambda: case((3, 2 * world + 1), [Shard(1)], -4, 1, torch.int32))
    rep.check("dtensor 2-D shard 0 along 1 (local)", lambda: case((2 * world, 5), [Shard(0)], 2, 1))
    rep.check("dtensor 2-D both axes", lambda: case((2 * world, 5), [Shard(0)], (3, -1), (0, 1)))
    rep.check("dtensor axis=None, shard 0", lambda: case((2 * world + 1, 3), [Shard(0)], 7, None))
    rep.check("dtensor replicated", lambda: case((2 * world, 3), [Replicate()], 5, 0))
    if world == 4:
        mesh2 = init_device_mesh("cpu", (2, 2), mesh_dim_names=("a", "b"))
        rep.check("dtensor 2x2 mesh along 0", lambda: case((6, 7), [Shard(0), Shard(1)], 3, 0, on=mesh2))
        rep.check("dtensor 2x2 mesh along 1", lambda: case((6, 7), [Shard(0), Shard(1)], -5, 1, on=mesh2))
        rep.check("dtensor 2x2 mesh replicate", lambda: case((6, 7), [Replicate(), Shard(1)], 4, 1, on=mesh2))
        rep.check("dtensor 2x2 mesh both axes", lambda: case((6, 7), [Shard(0), Shard(1)], (3, -5), (0, 1), on=mesh2))


def main():
    world, rank, rdv = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    dist.init_process_group("gloo", init_method=f"file://{rdv}", rank=rank, world_size=world,
                            timeout=timedelta(seconds=60))
    rep = Report(rank)
    run_plain(rep, rank, world)
    run_errors(rep, rank, world)
    run_dtensor(rep, rank, world)
    dist.barrier()
    dist.destroy_process_group()
    print(json.dumps({"rank": rank, "cases": rep.cases, "failures": rep.failures}), flush=True)


if __name__ == "__main__":
    main()
    # The report is out and the group destroyed; skip interpreter teardown, where gloo's
    # threads sometimes abort ("terminate called without an active exception", exit -6)
    # after every check passed. A failure inside main() still exits non-zero above.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
