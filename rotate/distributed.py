"""In-place rolls of arrays sharded over the ranks of a torch.distributed group.

Every rank calls these functions together, like any collective. The
communication goes through ``torch.distributed`` point-to-point
(``batch_isend_irecv``: NCCL between GPUs, gloo between CPU processes); the
local passes are :func:`rotate.roll` on each shard (the GPU backend for CUDA
tensors, the CPU backend for CPU tensors through a zero-copy numpy view).

* :func:`roll` — a global array split along ``axis`` over the ranks of a
  group, each rank holding one contiguous piece (even or uneven splits).
* :func:`roll_dtensor` — a ``torch.distributed.tensor.DTensor`` sharded along
  the rolled dimension (``Shard(d)``) or replicated; ``rotate.roll`` calls it
  for DTensors.
* :func:`plan` — what a call would do: algorithm, bytes each rank sends,
  staging and scratch bytes.

The algorithm (docs/distributed.md, "Distributed rolls"): each stage rolls
every shard locally, then exchanges contiguous ranges whose positions are the
same on the sending and the receiving side, in rounds of at most
``staging_bytes`` per rank; a rank copies a received chunk into place only
after the chunk it replaces has been sent. A stage that fits one round (a
shift within a shard, up to the staging size) packs what leaves before the
local pass and exchanges it while the local pass runs. Extra memory per rank: the
staging (default 64 MiB, never more than the shard; twice that when the
shard is not split along its first axis and chunks must be packed) plus the
local roll's scratch (GPU: the larger of 1% of the shard and 16 MiB; CPU:
8 MiB).

Checks run collectively first: one ``all_gather`` of each rank's shift,
shard length, shape, dtype and options, so a rank that passes another shift,
dtype or shape makes every rank raise the same ``ValueError`` instead of
hanging or corrupting data.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Any, List, Optional, Sequence, SupportsIndex, Union, overload

import numpy as np

from . import _api
from ._core import arrays as _arrays
from ._schedules import exchange
from ._api import ArrayT, IntOrInts, plan as local_plan, roll as local_roll
from ._core.validate import as_index, normalize_axis

DEFAULT_STAGING_BYTES = 64 << 20

__all__ = ["roll", "roll_dtensor", "plan", "DistPlan", "DEFAULT_STAGING_BYTES"]


@dataclass(frozen=True)
class DistPlan:
    """What a distributed roll does, seen from one rank.

    Attributes
    ----------
    algorithm : str
        ``"none"``, ``"local"`` (no communication), ``"even-within-shard"``,
        ``"even-across-shards"``, ``"uneven-within-shard"`` or ``"uneven-steps"``.
    shift : int
        The global shift reduced modulo the global length.
    lengths : tuple of int
        Every rank's shard length along the rolled axis.
    rank : int
        This rank's index in the group.
    stages : int
        Local pass + exchange rounds (1 except for ``uneven-steps``).
    rounds : int
        Exchange rounds this rank takes part in, over all stages.
    bytes_sent : tuple of int
        Bytes each rank sends (received bytes are equal, rank by rank).
    staging_bytes : int
        Staging this rank allocates for receiving (plus ``pack_bytes``).
    pack_bytes : int
        Staging for packing strided chunks before sending (0 when the shard is
        split along its first non-trivial axis).
    local_scratch_bytes : int
        The largest scratch of this rank's local rolls (``rotate.plan``).
    details : dict
        More about the call: ``chunk_bytes``, ``rows``, ``element_bytes``,
        ``overlapped_stages``, the process group's ``backend`` and the
        shard's ``device``.
    """

    algorithm: str
    shift: int
    lengths: tuple[int, ...]
    rank: int
    stages: int
    rounds: int
    bytes_sent: tuple[int, ...]
    staging_bytes: int
    pack_bytes: int
    local_scratch_bytes: int
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def extra_bytes(self) -> int:
        """Temporary memory of this rank: staging, packing and local scratch."""
        return self.staging_bytes + self.pack_bytes + self.local_scratch_bytes


def roll(local_shard: ArrayT, shift: SupportsIndex, group: Any = None, *, axis: Optional[SupportsIndex] = None,
         global_lengths: Optional[Sequence[SupportsIndex]] = None,
         staging_bytes: Optional[SupportsIndex] = None) -> ArrayT:
    """Roll a sharded array in place, collectively: numpy.roll of the global array.

    The global array is the concatenation, in group-rank order, of every
    rank's ``local_shard`` along ``axis``; its other dimensions must be equal
    on every rank. Afterwards each rank's shard holds its part of
    ``numpy.roll(global, shift, axis)``. Every rank of ``group`` must call it
    with the same ``shift``, ``axis``, ``global_lengths`` and
    ``staging_bytes``.

    Parameters
    ----------
    local_shard : torch.Tensor or numpy.ndarray
        This rank's piece, C-contiguous: a CUDA tensor with NCCL, a CPU tensor
        or numpy array with gloo. Empty pieces are allowed.
    shift : int
        Positions to move elements toward larger global indices.
    group : ProcessGroup, optional
        Default: the default process group.
    axis : int or None
        The split (and rolled) axis of the shards. Default None, as in
        ``numpy.roll`` and ``rotate.roll``: the global array, split along
        axis 0, rolls flattened (for 1-D shards the same as ``axis=0``).
    global_lengths : sequence of int, optional
        Every rank's length along ``axis`` (axis 0 when ``axis`` is None), in
        rank order. Default: gathered (the call gathers the shapes anyway, to
        check them).
    staging_bytes : int, optional
        Receive staging per rank (default 64 MiB, never more than the shard);
        larger means fewer rounds.

    Returns
    -------
    torch.Tensor or numpy.ndarray
        ``local_shard`` itself (the same object), holding its part of the
        rolled global array.

    Raises
    ------
    RuntimeError
        No initialised ``torch.distributed`` process group.
    TypeError
        Non-integer ``shift``, ``axis``, ``global_lengths`` or
        ``staging_bytes``; a ``local_shard`` that is not a torch tensor, numpy
        array or CUDA array with DLPack.
    ValueError
        A read-only, 0-d or non-C-contiguous shard, or one that requires
        grad; ``staging_bytes < 1``; ``global_lengths`` that do not match the
        shards; a process outside ``group``; and, on every rank, any rank
        whose arguments (shift, axis, dtype, device type, the shard's other
        dimensions, options) differ from rank 0's or were rejected there.
    numpy.exceptions.AxisError
        ``axis`` out of range.

    Notes
    -----
    Collective: every rank of ``group`` must call it. The checks run
    collectively first (one ``all_gather`` of each rank's arguments and
    shapes), so bad or mismatched arguments make every rank raise, nothing
    moved, instead of one rank hanging. Each stage rolls every shard
    locally with :func:`rotate.roll`, then exchanges contiguous ranges with
    ``batch_isend_irecv`` in rounds of at most ``staging_bytes`` per rank.
    Extra memory per rank is the staging (twice that where chunks must be
    packed) plus the local roll's scratch; :func:`plan` gives both.

    See Also
    --------
    plan : What this call does on this rank: algorithm, bytes sent, memory.
    roll_dtensor : The same for a DTensor (``rotate.roll`` calls it).
    rotate.roll : The local, single-process roll.

    Examples
    --------
    A group of one process (gloo, in-process store) shows the call; with
    more ranks each passes its own shard:

    >>> import numpy as np, torch.distributed as dist, rotate.distributed
    >>> dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    >>> shard = np.arange(6)
    >>> rotate.distributed.roll(shard, 2)
    array([4, 5, 0, 1, 2, 3])
    >>> dist.destroy_process_group()

    Under ``torchrun --nproc_per_node=2`` (NCCL, one GPU a rank), rank 0
    holding ``[0, 1, 2]`` and rank 1 ``[3, 4, 5]``, rank 0 ends with
    ``[4, 5, 0]`` and rank 1 with ``[1, 2, 3]``:

    >>> import torch                                             # doctest: +SKIP
    >>> dist.init_process_group("nccl")                          # doctest: +SKIP
    >>> rank = dist.get_rank()                                   # doctest: +SKIP
    >>> torch.cuda.set_device(rank)                              # doctest: +SKIP
    >>> shard = torch.arange(3, device="cuda") + 3 * rank        # doctest: +SKIP
    >>> rotate.distributed.roll(shard, 2)                        # doctest: +SKIP
    tensor([4, 5, 0], device='cuda:0')
    """
    ctx = _prepare(local_shard, shift, group, axis, global_lengths, staging_bytes)
    _execute(ctx)
    _arrays.mark_written(local_shard)
    return local_shard


@overload
def plan(local_shard: np.ndarray, shift: Optional[IntOrInts] = None, group: Any = None, *,
         axis: Optional[IntOrInts] = None, global_lengths: Optional[Sequence[SupportsIndex]] = None,
         staging_bytes: Optional[SupportsIndex] = None) -> DistPlan: ...


@overload  # a torch tensor's plan is a DistPlan; a DTensor rolled along several sharded dimensions gives a list
def plan(local_shard: Any, shift: Optional[IntOrInts] = None, group: Any = None, *,
         axis: Optional[IntOrInts] = None, global_lengths: Optional[Sequence[SupportsIndex]] = None,
         staging_bytes: Optional[SupportsIndex] = None) -> Union[DistPlan, List[DistPlan]]: ...


def plan(local_shard: Any, shift: Optional[IntOrInts] = None, group: Any = None, *,
         axis: Optional[IntOrInts] = None, global_lengths: Optional[Sequence[SupportsIndex]] = None,
         staging_bytes: Optional[SupportsIndex] = None) -> Union[DistPlan, List[DistPlan]]:
    """What :func:`roll` (or, for a DTensor, :func:`roll_dtensor`) would do on this rank.

    Collective like the call itself (it gathers and checks the same
    metadata), but moves nothing. ``axis`` as for the call (default None:
    the flattened global array; the plan's lengths then count elements).

    Parameters
    ----------
    local_shard : torch.Tensor, numpy.ndarray or DTensor
        This rank's shard, as for :func:`roll`; or a DTensor, as for
        :func:`roll_dtensor`.
    shift : int or sequence of ints
        As for :func:`roll` (for a DTensor: as for :func:`rotate.roll`).
    group : ProcessGroup, optional
        As for :func:`roll` (ignored for a DTensor: its mesh gives the groups).
    axis : int or None
        As for :func:`roll` (default None: the flattened global array, whose
        lengths then count elements); for a DTensor as for
        :func:`rotate.roll` (None: the flattened tensor).
    global_lengths : sequence of int, optional
        As for :func:`roll`.
    staging_bytes : int, optional
        As for :func:`roll`.

    Returns
    -------
    DistPlan
        This rank's view: ``algorithm``, the reduced ``shift``, every rank's
        shard ``lengths``, ``stages``, ``rounds``, ``bytes_sent`` by every
        rank, and the memory it allocates (``staging_bytes``, ``pack_bytes``,
        ``local_scratch_bytes``; ``extra_bytes`` sums them). For a DTensor
        rolled along several sharded dimensions, a list with one plan each.

    Raises
    ------
    RuntimeError, TypeError, ValueError, numpy.exceptions.AxisError
        Whatever :func:`roll` (or :func:`roll_dtensor`) would raise for the
        same arguments, on every rank alike.

    Notes
    -----
    The plan depends on every rank's shard length, the shift, the element
    size and the staging bound, so every rank computes the same schedule;
    ``staging_bytes``, ``pack_bytes`` and ``local_scratch_bytes`` are this
    rank's own.

    See Also
    --------
    roll, roll_dtensor : The calls this plans.
    rotate.plan : The plan of a local roll.

    Examples
    --------
    >>> import numpy as np, torch.distributed as dist, rotate.distributed
    >>> dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    >>> p = rotate.distributed.plan(np.zeros(1000, np.float32), 10)
    >>> p.algorithm, p.shift, p.lengths, p.bytes_sent      # one rank: nothing to send
    ('local', 10, (1000,), (0,))
    >>> dist.destroy_process_group()
    """
    if _is_dtensor(local_shard):
        return _dtensor_call(local_shard, shift, axis, staging_bytes, execute=False)
    ctx = _prepare(local_shard, shift, group, axis, global_lengths, staging_bytes)
    return ctx.plan


def roll_dtensor(dt: ArrayT, shift: IntOrInts, axis: Optional[IntOrInts] = None, *,
                 staging_bytes: Optional[SupportsIndex] = None) -> ArrayT:
    """Roll a DTensor in place with numpy.roll's semantics; collective over its mesh.

    ``rotate.roll(dt, shift, axis)`` calls this for DTensors. A dimension
    that no mesh dimension shards rolls locally on every rank (no
    communication); a dimension sharded (``Shard(d)``) along one mesh
    dimension rolls with :func:`roll` over that mesh dimension's group.
    ``axis=None`` rolls the flattened tensor: it must be unsharded or sharded
    along dimension 0 only. ``Partial`` placements and a dimension sharded
    over several mesh dimensions are refused.

    Parameters
    ----------
    dt : torch.distributed.tensor.DTensor
        A DTensor with ``Shard(d)`` and ``Replicate()`` placements and a
        C-contiguous local shard.
    shift : int or sequence of ints
        As for :func:`rotate.roll`.
    axis : int or sequence of ints, optional
        As for :func:`rotate.roll`; None (default) rolls the flattened tensor.
    staging_bytes : int, optional
        Receive staging per rank for the sharded dimensions, as for :func:`roll`.

    Returns
    -------
    DTensor
        ``dt`` itself, rolled in place (its local shards hold their parts of
        the rolled global tensor).

    Raises
    ------
    ValueError
        ``Partial`` placements; a dimension sharded over several mesh
        dimensions; ``axis=None`` with a dimension other than 0 sharded; a
        local shard that is not C-contiguous; and whatever :func:`roll`
        raises for a sharded dimension.
    TypeError
        Non-integer ``shift`` or ``axis``.
    numpy.exceptions.AxisError
        ``axis`` out of range.

    Notes
    -----
    Collective over the DTensor's device mesh: every rank must call it. All
    parts are planned and checked before any byte moves.

    See Also
    --------
    roll : The collective roll of one split axis.
    plan : What a call would do (pass the DTensor).
    rotate.roll : Calls this for DTensors.

    Examples
    --------
    >>> import torch, torch.distributed as dist, rotate
    >>> from torch.distributed.tensor import Shard, distribute_tensor, init_device_mesh
    >>> dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    >>> mesh = init_device_mesh("cpu", (1,))
    >>> dt = distribute_tensor(torch.arange(8), mesh, [Shard(0)])
    >>> rotate.roll(dt, 3).full_tensor()
    tensor([5, 6, 7, 0, 1, 2, 3, 4])
    >>> dist.destroy_process_group()
    """
    _dtensor_call(dt, shift, axis, staging_bytes, execute=True)
    _arrays.mark_written(dt)
    return dt


# --- internals -------------------------------------------------------------

def _torch():
    import torch
    return torch


def _dist():
    import torch.distributed as dist
    return dist


def _is_dtensor(a: Any) -> bool:
    import sys
    mod = sys.modules.get("torch.distributed.tensor")
    cls = getattr(mod, "DTensor", None) if mod is not None else None
    return cls is not None and isinstance(a, cls)


def _as_tensor(a: Any):
    """A torch tensor sharing ``a``'s memory (numpy arrays, torch tensors, CUDA arrays)."""
    torch = _torch()
    if isinstance(a, torch.Tensor):
        return a
    if isinstance(a, np.ndarray):
        return torch.from_numpy(a)
    if hasattr(a, "__dlpack__"):
        return torch.from_dlpack(a)
    if hasattr(a, "__cuda_array_interface__"):
        return torch.as_tensor(a, device="cuda")
    raise TypeError(
        f"local_shard must be a torch tensor, a numpy array or a CUDA array with DLPack, "
        f"got {type(a).__name__}"
    )


def _numpy_view(t):
    """A zero-copy numpy view of CPU tensor ``t``; dtypes numpy lacks travel as same-size integers."""
    torch = _torch()
    t = t.detach()
    try:
        return t.numpy()
    except TypeError:
        same_size = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
        if t.element_size() not in same_size:
            raise
        return t.view(same_size[t.element_size()]).numpy()


@dataclass
class _Ctx:
    tensor: Any  # the local shard as a torch tensor, viewed (A, L, B)
    original: Any  # what the caller passed (rotated through rotate.roll when numpy/torch)
    group: Any
    rank: int
    lengths: tuple
    rows: int  # A
    elem_bytes: int  # B * itemsize
    stages: tuple
    chunk_bytes: int
    staging: int
    pack: int
    plan: DistPlan
    overlapped: tuple  # per stage: exchange runs during the local pass (one round, sent from a packed copy)


_ERRORS = {1: "invalid local input", 2: "global_lengths"}


def _meta_device(group):
    dist = _dist()
    torch = _torch()
    backend = str(dist.get_backend(group))
    if "nccl" in backend and torch.cuda.is_available():
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def _crc(value: Any) -> int:
    return zlib.crc32(repr(value).encode())


#: Shifts in [-_EXACT, _EXACT) are sent exactly as two int64 words; a rank with a larger one makes every
#: rank also compare the shifts reduced modulo the global length (a second gather), so no two different
#: rolls ever pass the check.
_EXACT = 1 << 124


def _split_shift(shift: int) -> tuple[int, int, int]:
    """Three int64 words: (lo, hi) equal for two shifts in [-2**124, 2**124) iff the shifts are, and a
    flag that the shift lies beyond (then (lo, hi) alone prove nothing: see :func:`_check_big_shifts`)."""
    lo = shift % (1 << 62)
    hi = max(-(1 << 62), min(1 << 62, shift >> 62))
    return lo, hi, int(not -_EXACT <= shift < _EXACT)


def _check_big_shifts(shift: int, total: int, world: int, group, device) -> None:
    """Every rank's shift modulo the global length ``total``, gathered and compared (collective)."""
    torch = _torch()
    mine = torch.tensor([shift % total if total else 0], dtype=torch.int64, device=device)
    gathered = [torch.empty_like(mine) for _ in range(world)]
    _dist().all_gather(gathered, mine, group=group)
    values = [int(g.item()) for g in gathered]
    differ = [r for r in range(world) if values[r] != values[0]]
    if differ:
        raise ValueError(
            f"rotate.distributed.roll: every rank must pass the same shift, but rank(s) {differ} differ "
            f"from rank 0 (modulo the global length {total}); nothing was moved"
        )


def _prepare(local_shard, shift, group, axis, global_lengths, staging_bytes) -> _Ctx:
    torch = _torch()
    dist = _dist()
    if not dist.is_available() or not dist.is_initialized():
        raise RuntimeError(
            "rotate.distributed needs an initialised torch.distributed process group; "
            "call torch.distributed.init_process_group first (every rank)"
        )
    world = dist.get_world_size(group)
    rank = dist.get_rank(group)
    if rank < 0:
        raise ValueError("this process is not a member of group; call it only on the group's ranks")

    # Local checks first, but never raise before the gather: the other ranks would hang in it.
    error = None
    fields = [0] * 13
    try:
        shift = as_index(shift, "shift")
        if staging_bytes is None:
            staging_bytes = DEFAULT_STAGING_BYTES
        staging_bytes = as_index(staging_bytes, "staging_bytes")
        if staging_bytes < 1:
            raise ValueError(f"staging_bytes must be >= 1, got {staging_bytes}")
        if isinstance(local_shard, np.ndarray) and not local_shard.flags.writeable:
            raise ValueError("local_shard is a read-only numpy array; rotate works in place, so pass a writeable one")
        t = _as_tensor(local_shard)
        if t.ndim == 0:
            raise ValueError("local_shard must have at least one dimension, got a 0-d array")
        # axis=None (numpy.roll's default): the shards split along axis 0, and the global array,
        # flattened, is the concatenation of the flattened shards: a 1-D roll of (1, size, 1) views.
        flat = axis is None
        axis = 0 if flat else normalize_axis(as_index(axis, "axis"), t.ndim)
        if not t.is_contiguous():
            raise ValueError(
                f"local_shard must be C-contiguous (shape {tuple(t.shape)}, strides {t.stride()}); "
                f"roll a contiguous tensor, e.g. x = t.contiguous(), then copy back"
            )
        if t.requires_grad:
            raise ValueError("local_shard requires grad; an in-place roll would bypass autograd: pass t.detach()")
        shape = tuple(t.shape)
        rows = int(np.prod(shape[:axis], dtype=np.int64))
        inner = int(np.prod(shape[axis + 1:], dtype=np.int64))
        length = shape[axis]
        lengths_crc = -1
        if global_lengths is not None:
            global_lengths = tuple(as_index(x, "global_lengths") for x in global_lengths)
            if len(global_lengths) != world or global_lengths[rank] != length or min(global_lengths) < 0:
                raise ValueError(
                    f"global_lengths must list every rank's shard length along axis {axis} "
                    f"({world} ranks; this rank {rank} has {length}), got {list(global_lengths)}"
                )
            lengths_crc = _crc(global_lengths)
            if flat:
                global_lengths = tuple(x * inner for x in global_lengths)
        if flat:
            length, inner = length * inner, 1
        lo, hi, big = _split_shift(shift)
        fields = [0, lo, hi, length, rows, inner * t.element_size(), _crc(str(t.dtype)),
                  _crc(shape[:axis] + shape[axis + 1:]), lengths_crc, min(staging_bytes, 1 << 62),
                  -1 if flat else axis,
                  _crc(t.device.type), big]
    except Exception as exc:  # reported to every rank after the gather
        error = exc
        fields[0] = 1

    device = _meta_device(group)
    mine = torch.tensor(fields, dtype=torch.int64, device=device)
    gathered = [torch.empty_like(mine) for _ in range(world)]
    dist.all_gather(gathered, mine, group=group)
    table = [g.tolist() for g in gathered]
    bad = [r for r in range(world) if table[r][0] != 0]
    if error is not None:
        raise error
    if bad:
        raise ValueError(f"rotate.distributed.roll: rank(s) {bad} of the group rejected their arguments "
                         f"(see the error raised there); nothing was moved")
    big = any(row[12] for row in table)  # then shifts compare modulo the global length, below
    names = [] if big else [(1, "shift"), (2, "shift")]
    names += [(10, "axis"), (11, "device type (all CPU or all CUDA)"),
             (6, "dtype"), (4, "shard shape (dimensions other than axis)"),
             (5, "shard shape (dimensions other than axis)"), (7, "shard shape (dimensions other than axis)"),
             (8, "global_lengths"), (9, "staging_bytes")]
    for col, name in names:
        values = [row[col] for row in table]
        if len(set(values)) > 1:
            differ = [r for r in range(world) if values[r] != values[0]]
            raise ValueError(
                f"rotate.distributed.roll: every rank must pass the same {name}, but rank(s) "
                f"{differ} differ from rank 0; nothing was moved"
            )
    lengths = global_lengths if global_lengths is not None else tuple(row[3] for row in table)
    if tuple(row[3] for row in table) != tuple(lengths):
        raise ValueError(f"rotate.distributed.roll: global_lengths {list(lengths)} do not match the "
                         f"shards' lengths {[row[3] for row in table]}; nothing was moved")
    if big:  # every rank sees the flag, so every rank gathers again
        _check_big_shifts(shift, sum(lengths), world, group, device)
        shift %= max(1, sum(lengths))

    elem_bytes = fields[5]
    algorithm, stages = exchange.build(lengths, shift)
    if rows * elem_bytes == 0:  # the other dimensions are empty: nothing to move
        algorithm, stages = "none", ()
    ways_in = max([sum(1 for m in st.moves if m.dst == r) for st in stages for r in range(world)] or [1])
    shard_bytes = max(lengths) * rows * elem_bytes if lengths else 0
    # Two staging slots on CUDA (the copy-in of round t overlaps the transfer of round t + 1).
    slots = 2 if t.device.type == "cuda" else 1
    budget = max(1, min(staging_bytes, max(1, shard_bytes)))
    chunk_bytes = max(1, budget // (slots * max(1, ways_in)))
    view = t.view(rows, length, inner)
    pack = 0
    staging = 0
    rounds = 0
    # A stage whose every move (on every rank: the decision must be the same everywhere) is one
    # chunk sends its data from a packed copy taken *before* the local pass, so the exchange
    # runs while the local pass does (the same messages, only the local order differs).
    overlapped = tuple(
        bool(st.moves) and all(len(exchange.chunks(rows, 0, m.length * elem_bytes, chunk_bytes)) == 1
                               for m in st.moves)
        for st in stages)
    for st, early in zip(stages, overlapped):
        mine_in = [m for m in st.moves if m.dst == rank]
        mine_out = [m for m in st.moves if m.src == rank]
        if mine_in or mine_out:
            per = [exchange.chunks(rows, m.dst_off * elem_bytes, (m.dst_off + m.length) * elem_bytes,
                                     chunk_bytes) for m in mine_in]
            rounds += max(len(c) for c in per) if per else 0
            staging = max(staging, sum(max((r1 - r0) * (c1 - c0) for r0, r1, c0, c1 in c) for c in per))
            if rows > 1 or early:
                pack = max(pack, staging)
    sent = [0] * world
    for st in stages:
        for m in st.moves:
            sent[m.src] += m.length * rows * elem_bytes
    scratch = 0
    if length and rows * inner and any(st.local_shifts[rank] % length for st in stages):
        target = _local_target(view)
        for st in stages:
            if st.local_shifts[rank] % length:
                try:
                    p = local_plan(target, st.local_shifts[rank], axis=1)
                    scratch = max(scratch, sum(s.scratch_bytes for s in p.steps))
                except Exception:  # the GPU planner is unavailable: report what we know
                    scratch = max(scratch, -1)
    staging *= slots
    pack *= slots
    dplan = DistPlan(algorithm, shift % sum(lengths) if sum(lengths) else 0, tuple(lengths), rank,
                     len(stages), rounds, tuple(sent), staging, pack, scratch,
                     details={"chunk_bytes": chunk_bytes, "rows": rows, "element_bytes": elem_bytes,
                              "overlapped_stages": sum(overlapped),
                              "backend": str(dist.get_backend(group)), "device": str(t.device)})
    return _Ctx(view, local_shard, group, rank, tuple(lengths), rows, elem_bytes, stages,
                chunk_bytes, staging, pack, dplan, overlapped)


def _local_target(view):
    """What rotate.roll rolls for this rank's (A, L, B) view: numpy for CPU, the tensor for CUDA."""
    if view.device.type == "cpu":
        return _numpy_view(view)
    return view


def _execute(ctx: _Ctx) -> None:
    torch = _torch()
    dist = _dist()
    if not ctx.stages:
        return
    view = ctx.tensor
    rank = ctx.rank
    length = view.shape[1]
    cuda = view.device.type == "cuda"
    as_bytes: Any = view.reshape(ctx.rows, -1).view(torch.uint8) if view.numel() else None
    global_rank = (lambda r: dist.get_global_rank(ctx.group, r)) if ctx.group is not None else (lambda r: r)
    nbuf = 2 if cuda else 1
    bufs = [torch.empty(ctx.staging // nbuf, dtype=torch.uint8, device=view.device)
            for _ in range(nbuf)] if ctx.staging else []
    packs = [torch.empty(ctx.pack // nbuf, dtype=torch.uint8, device=view.device)
             for _ in range(nbuf)] if ctx.pack else []
    main: Any = torch.cuda.current_stream(view.device) if cuda else None
    side: Any = torch.cuda.Stream(view.device) if cuda else None
    done: list[Any] = [None] * nbuf
    target = _local_target(view) if view.numel() else None
    eb = ctx.elem_bytes
    with torch.no_grad():
        for st, early in zip(ctx.stages, ctx.overlapped):
            s = st.local_shifts[rank]
            outgoing = [m for m in st.moves if m.src == rank]
            incoming = [m for m in st.moves if m.dst == rank]
            if early and (outgoing or incoming):
                _overlapped_stage(ctx, as_bytes, target, s, outgoing, incoming, bufs[0], packs[0], global_rank)
                continue
            if length and s % length and target is not None:
                local_roll(target, s, axis=1)
            if not outgoing and not incoming:
                continue
            out_chunks = [exchange.chunks(ctx.rows, m.src_off * eb, (m.src_off + m.length) * eb, ctx.chunk_bytes)
                          for m in outgoing]
            in_chunks = [exchange.chunks(ctx.rows, m.dst_off * eb, (m.dst_off + m.length) * eb, ctx.chunk_bytes)
                         for m in incoming]
            n_rounds = max(len(c) for c in out_chunks + in_chunks)
            for t in range(n_rounds):
                slot = t % nbuf
                if cuda and done[slot] is not None:
                    main.wait_event(done[slot])  # the copy that last read this staging slot has finished
                ops = []
                pack_at = 0
                for m, cs in zip(outgoing, out_chunks):
                    if t >= len(cs):
                        continue
                    r0, r1, c0, c1 = cs[t]
                    src = as_bytes[r0:r1, c0:c1]
                    if not src.is_contiguous():
                        n = (r1 - r0) * (c1 - c0)
                        packed = packs[slot][pack_at:pack_at + n].view(r1 - r0, c1 - c0)
                        packed.copy_(src)
                        src = packed
                        pack_at += n
                    ops.append(dist.P2POp(dist.isend, src, global_rank(m.dst), ctx.group))
                landing = []
                at = 0
                for m, cs in zip(incoming, in_chunks):
                    if t >= len(cs):
                        continue
                    r0, r1, c0, c1 = cs[t]
                    n = (r1 - r0) * (c1 - c0)
                    buf = bufs[slot][at:at + n].view(r1 - r0, c1 - c0)
                    at += n
                    ops.append(dist.P2POp(dist.irecv, buf, global_rank(m.src), ctx.group))
                    landing.append((as_bytes[r0:r1, c0:c1], buf))
                works = dist.batch_isend_irecv(ops) if ops else []
                if cuda:
                    if packs:  # the next pack into this slot must wait for these sends
                        for w in works:
                            w.wait()
                    with torch.cuda.stream(side):
                        for w in works:
                            w.wait()  # the side stream waits for this round's sends and receives
                        for dst, buf in landing:
                            dst.copy_(buf)
                        ev = torch.cuda.Event()
                        ev.record(side)
                        done[slot] = ev
                else:
                    for w in works:
                        w.wait()
                    for dst, buf in landing:
                        dst.copy_(buf)
            if cuda:
                main.wait_stream(side)  # the next local pass and the caller see every copy
        if cuda:
            for b in bufs + packs:
                b.record_stream(side)


def _overlapped_stage(ctx, as_bytes, target, shift, outgoing, incoming, recv_buf, send_buf, global_rank) -> None:
    """One-round stage: pack what leaves (from its place before the local pass), start the exchange,
    run the local pass meanwhile, then copy what arrived into place.

    Sends read the packed copy and receives land in staging, so the local pass, which rewrites the
    whole shard, touches neither; the copy-in waits for both.
    """
    dist = _dist()
    eb = ctx.elem_bytes
    length = ctx.tensor.shape[1]
    rows = ctx.rows
    s = shift % length if length else 0
    ops = []
    at = 0
    for m in outgoing:
        width = m.length * eb
        packed = send_buf[at:at + rows * width].view(rows, width)
        at += rows * width
        # After the local roll, position p holds what is now at (p - s) mod L.
        first = (m.src_off - s) % length
        head = min(m.length, length - first)
        packed[:, :head * eb].copy_(as_bytes[:, first * eb:(first + head) * eb])
        if head < m.length:
            packed[:, head * eb:].copy_(as_bytes[:, :(m.length - head) * eb])
        ops.append(dist.P2POp(dist.isend, packed, global_rank(m.dst), ctx.group))
    landing = []
    at = 0
    for m in incoming:
        width = m.length * eb
        buf = recv_buf[at:at + rows * width].view(rows, width)
        at += rows * width
        ops.append(dist.P2POp(dist.irecv, buf, global_rank(m.src), ctx.group))
        landing.append((as_bytes[:, m.dst_off * eb:(m.dst_off + m.length) * eb], buf))
    works = dist.batch_isend_irecv(ops)
    if s and target is not None:
        local_roll(target, s, axis=1)
    for w in works:
        w.wait()
    for dst, buf in landing:
        dst.copy_(buf)


def _dtensor_call(dt, shift, axis, staging_bytes, execute: bool):
    """Check and plan every part of a DTensor roll, then (if execute) run it."""
    torch = _torch()
    dist = _dist()
    from torch.distributed.tensor import Replicate, Shard
    from ._core.validate import broadcast_shifts, as_index_tuple

    mesh = dt.device_mesh
    placements = tuple(dt.placements)
    shape = tuple(dt.shape)
    with torch.no_grad():
        local = dt.to_local()
    for p in placements:
        if type(p) not in (Shard, Replicate):
            raise ValueError(
                f"rotate.roll supports DTensors with Shard(d) and Replicate() placements, got "
                f"{placements}; redistribute first (e.g. dt.redistribute(placements=[Shard(0)]))"
            )
    sharded = {}
    for mesh_dim, p in enumerate(placements):
        if isinstance(p, Shard):
            d = p.dim % len(shape)
            if d in sharded:
                raise ValueError(
                    f"dimension {d} is sharded over several mesh dimensions ({placements}); "
                    f"rotate.roll rolls a dimension sharded over one mesh dimension"
                )
            sharded[d] = mesh_dim
    if not local.is_contiguous():
        raise ValueError("the DTensor's local shard must be C-contiguous; make it so before rolling")
    group_shifts: dict[int, int]  # sharded dimension -> shift
    local_shifts: dict[Optional[int], int]  # dimension (None: the flattened tensor) -> shift
    if axis is None:
        if any(d != 0 for d in sharded):
            raise ValueError(
                f"axis=None rolls the flattened DTensor, which is one split array only when no "
                f"dimension but 0 is sharded; got placements {placements}. Give an axis"
            )
        total = sum(as_index_tuple(shift, "shift"))
        local = local.view(-1)
        if 0 in sharded:
            group_shifts, local_shifts = {0: total}, {}
        else:
            group_shifts, local_shifts = {}, {None: total}
    else:
        shifts = broadcast_shifts(shift, axis, len(shape))
        local_shifts = {d: s for d, s in shifts.items() if d not in sharded}
        group_shifts = {d: s for d, s in shifts.items() if d in sharded}
    # Plan (and so check, collectively) every part before anything moves.
    ctxs = []
    for d, s in sorted(group_shifts.items()):
        group = mesh.get_group(sharded[d])
        if dist.get_rank(group) != mesh.get_local_rank(sharded[d]):
            raise AssertionError("internal error: group rank and mesh coordinate differ")
        ctxs.append(_prepare(local, s, group, d, None, staging_bytes))
    target = _local_target(local) if local_shifts else None
    if local_shifts:
        axes = list(local_shifts)
        ax: Any = None if axes == [None] else axes
        sh = local_shifts[None] if ax is None else [local_shifts[a] for a in axes]
        lp = local_plan(target, sh, axis=ax)
    if execute:
        if local_shifts:
            local_roll(target, sh, axis=ax)
        for ctx in ctxs:
            _execute(ctx)
    if ctxs:
        return ctxs[0].plan if len(ctxs) == 1 else [ctx.plan for ctx in ctxs]
    return DistPlan("local", 0, (), dist.get_rank(), 1 if lp.steps else 0, 0, (), 0, 0,
                    sum(s.scratch_bytes for s in lp.steps), details={"local_plan": lp})


_api.register_dtensor_roll(roll_dtensor)
