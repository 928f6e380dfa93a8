"""The ``lane-walks`` kernel: ``roll_rows`` of long lanes in one pass (docs/design.md "Lane walks").

``walk_kernel``: a block owns a lane at a time, chooses a tile size and
chain step on the device as ``walks.walk_choose`` does, pre-reads the
spans its ring cannot hold into scratch and walks the tiles in chain order
through a ring of tile buffers. No block waits for another.
"""

from __future__ import annotations

import functools
import os

from numba import cuda, int32, int64, uint32, uint64

from ...._schedules import chain as S
from ...._schedules import walks
from ..tuning import HOPPER as _HOPPER
from .common import _write_moved, block_ticket, leave_launch, wait_copies_left
from .cycles import run_vecs
from .lane_swaps import _swap_lane, save_capacity, swap_smem_bytes
from .memops import SIMULATED, atomic_add_u64, commit_copies, copy16_async, load16_shared, load_i64, store16
from .panels import PANEL_BYTES, THREADS, buffer_vecs

#: ``lane-walks``: the most pieces an item's source has (runs of one writer tile; the wrap adds one).
WALK_PIECES = 4
#: Descriptor fields: the item's piece count and ring reach, then per piece destination ``[xl, xh)``,
#: the source's aligned lane position, buffer slot, vectors, scratch or lane, and the position the copy
#: starts at (lane bytes from the array's start, or scratch bytes).
W_PIECES, W_REACH = 0, 1
W_HEADER = 2
W_XL, W_XH, W_SRC_AL, W_SLOT, W_VECS, W_SCRATCH, W_POS = range(7)
W_PIECE = 7
W_FIELDS = W_HEADER + WALK_PIECES * W_PIECE
#: The walk kernel's factory defaults: the tuning policy's tiles (``WALK_TILE_BYTES`` down to half of it),
#: tiles a lane may have and buffers; and its wide tiles (rotate/_backends/cuda/tuning.py, docs/tuning.md "lane-walks").
WALK_TILE_BYTES = _HOPPER.default_walk_tile_bytes
WALK_MAX_TILES = _HOPPER.default_walk_max_tiles
WALK_WIDE_TILE_BYTES = _HOPPER.walk_wide_tile_bytes
WALK_WIDE_MAX_TILES = _HOPPER.walk_wide_max_tiles
WALK_BUFFERS = _HOPPER.default_walk_buffers


def walk_buffer_vecs(tile_bytes: int) -> int:
    """Vectors a walk buffer holds: a tile plus two over-copied vectors a piece, and a spare."""
    return tile_bytes // 16 + 2 * WALK_PIECES + 1


def walk_smem_bytes(tile_bytes: int = WALK_TILE_BYTES, buffers: int = WALK_BUFFERS,
                    max_tiles: int = WALK_MAX_TILES, panel_bytes: int = PANEL_BYTES, save_bytes: int = None,
                    threads: int = THREADS) -> int:
    """Dynamic shared memory of ``walk_kernel``: its buffers and five tables of ``max_tiles`` words
    (positions, tiles, first writers, span starts, scratch offsets) and the threads' picks, or the swap fallback's panels and saved side, whichever
    is more (they are never live at once)."""
    walk = 16 * buffers * walk_buffer_vecs(tile_bytes) + 20 * max_tiles + 8 + 16 * threads
    save = walk_save_bytes(panel_bytes) if save_bytes is None else save_bytes
    return max(walk, swap_smem_bytes(panel_bytes, save))


def walk_save_bytes(panel_bytes: int = PANEL_BYTES) -> int:
    """The saved side of ``walk_kernel``'s swap fallback: what two panel buffers hold (the walk takes
    lanes whose small side is larger, so this only sets which lanes skip the walk)."""
    return save_capacity(2 * buffer_vecs(panel_bytes))


@functools.lru_cache(maxsize=None)
def walk_kernel(threads: int = THREADS, buffers: int = WALK_BUFFERS, tile_bytes: int = WALK_TILE_BYTES,
                max_tiles: int = WALK_MAX_TILES, panel_bytes: int = PANEL_BYTES, min_blocks: int = 1):
    """``kernel(data, shifts, scratch, counters, rows, seg, n, item, shift_stride, head0, share, pool,
    save_bytes)``.

    ``roll_rows`` of lanes beyond a block's shared memory in one pass
    (``lane-walks``, docs/design.md "Lane walks"): a block owns a lane at a
    time (lanes by ticket, ``counters[0]``) and

    1. picks a tile size (``tile_bytes`` down to half) and chain step: each
       thread estimates its share of the candidates
       (``walks.walk_estimate``), the block takes the cheapest;
    2. lays out the walk in shared memory, the block's threads a share of
       the tiles each: every tile's chain position and every position's
       tile, first writer and ring reach (``walk_reach``), every tile's
       pre-read span (``walk_span``: bytes whose reader comes more than
       ``buffers - 1`` items after their writer) and its offset in the
       block's ``share`` bytes of ``scratch`` (block ``b``'s at
       ``b * share``), or, for spans over the share, in the ``pool`` bytes
       after the blocks' shares (``counters[1]``: the pool's bytes asked for so far);
    3. copies the spans to scratch, then walks the tiles in chain order
       through ``buffers`` tile buffers: the copies of item ``i + buffers - 1``
       start before item ``i`` writes; item ``i`` waits for its own copies
       and for those of its farthest look-ahead reader, then writes its tile
       realigned in registers (``_write_moved``). The first warp decodes
       the items ahead from the tables, with no division.

    A lane with no candidate, or whose spans fit neither its share nor what
    is left of the pool, runs ``lane-swaps``' steps instead (``_swap_lane``;
    its saved side ``save_bytes``). No block waits for another. The last
    block out rewinds the counters (``leave_launch``).
    """
    from .common import _copy_vectors

    swap_lane = _swap_lane(threads, panel_bytes)
    copy_vectors = _copy_vectors(threads)
    # With two warps or more, the first warp leaves the writes to the others: its first threads decode
    # the items ahead while they write (a decode is serial, dependent shared-memory work).
    control = 32 if threads >= 64 else 0
    writers = threads - control
    write_moved = _write_moved(writers, -(-(tile_bytes // 16 + 1) // writers))
    reach = buffers - 1
    buf_vecs = walk_buffer_vecs(tile_bytes)
    # Words of the dynamic shared memory after the buffers: five tables of max_tiles words.
    t_rank = 4 * buffers * buf_vecs       # tile -> chain position
    t_tile = t_rank + max_tiles           # position -> tile
    t_first = t_tile + max_tiles          # position -> first writer tile * 4 + ring reach
    t_lo = t_first + max_tiles            # tile -> pre-read span start (lane position)
    t_off = t_lo + max_tiles              # tile -> span size, then its scratch offset
    pick0 = (t_off + max_tiles + 1) // 2  # int64 words: each thread's pick, then the scan's partial sums
    # Thread t < decoders decodes item i + buffers + t at every decoders-th item i (in parallel: one
    # decode is serial, dependent shared-memory work), so descriptors cover the items written, in flight
    # and decoded ahead.
    decoders = 8 if control else 1
    slots = buffers + decoders
    shuffles = threads % 32 == 0 and not SIMULATED  # reductions by warp shuffles (the simulator has none)
    group = min(32, threads)  # threads copying one span (a warp)
    if buffers < 2 or buffers > 4:
        raise ValueError(f"walk_kernel takes 2 to 4 buffers, got {buffers}")
    if threads % group:
        raise ValueError(f"walk_kernel needs whole warps (or fewer threads), got {threads}")
    jit_options = {} if SIMULATED else {"launch_bounds": (threads, min_blocks) if min_blocks > 1 else threads}
    if not SIMULATED and os.environ.get("ROTATE_LINEINFO") == "1":
        jit_options["lineinfo"] = True  # Nsight Compute's source view (benchmarks/probes/ncu_target.py)

    @cuda.jit(device=True)
    def choose(pick, scores, n, k, head, tile_lo, tile_hi, share, tid):
        """The block's cheapest candidate index (-1: none), as ``walks.walk_choose`` finds it: every
        tile size's ``walk_residue_score`` once into ``scores`` (shared memory), a thread a pick (its
        chunk's size from the scores, then ``walk_size_cost``), then the least (cost, index)."""
        best = int64(-1)
        best_index = int64(-1)
        sizes = walks.walk_sizes(tile_lo, tile_hi)
        for size in range(int64(tid), sizes, threads):
            scores[size] = walks.walk_residue_score(n, k, head, tile_hi - 16 * size)
        cuda.syncthreads()
        width = walks.walk_chunk(sizes)
        for candidate in range(int64(tid), walks.walk_picks(tile_lo, tile_hi), threads):
            first = (candidate // walks.WALK_CHAINS) * width
            size = int64(-1)
            least = int64(-1)
            for at in range(first, min(sizes, first + width)):  # walk_chunk_size's rule: first least wins
                score = scores[at]
                if least < 0 or score < least:
                    least = score
                    size = at
            cost, index = walks.walk_size_cost(n, k, head, tile_hi, size, candidate % walks.WALK_CHAINS, reach, share)
            if index >= 0 and (best_index < 0 or cost < best or (cost == best and index < best_index)):
                best = cost
                best_index = index
        if shuffles:  # the warp's least first, then thread 0 over the warps'
            for delta in (16, 8, 4, 2, 1):
                cost = cuda.shfl_down_sync(0xFFFFFFFF, best, delta)
                index = cuda.shfl_down_sync(0xFFFFFFFF, best_index, delta)
                if index >= 0 and (best_index < 0 or cost < best or (cost == best and index < best_index)):
                    best = cost
                    best_index = index
            if tid % 32 == 0:
                pick[tid // 32] = best
                pick[threads + tid // 32] = best_index
            count = threads // 32
        else:
            pick[tid] = best
            pick[threads + tid] = best_index
            count = threads
        cuda.syncthreads()
        if tid == 0:
            for t in range(1, count):
                cost = pick[t]
                index = pick[threads + t]
                if index >= 0 and (best_index < 0 or cost < best or (cost == best and index < best_index)):
                    best = cost
                    best_index = index
            pick[0] = best_index
        cuda.syncthreads()
        chosen = pick[0]
        cuda.syncthreads()  # pick is reused
        return chosen

    @cuda.jit(device=True)
    def layout(smi, pick, n, k, head, tile, m, p, g, length, inv, tid):
        """The walk's tables; returns the span bytes in all (each tile's size turned into its offset)."""
        for position in range(int64(tid), m, threads):
            j = S.tile_at(m, p, g, length, position)
            smi[t_rank + j] = int32(position)
            smi[t_tile + position] = int32(j)
        cuda.syncthreads()  # every position is known: reaches read them
        for position in range(int64(tid), m, threads):
            j = int64(smi[t_tile + position])
            x0, x1 = S.tile_dest(n, head, tile, j)
            z = x0 + k
            if z >= n:
                z -= n
            first = S.tile_of(head, tile, z)
            smi[t_first + position] = int32(4 * first + walks.walk_reach(n, k, head, tile, smi, t_rank, position, j,
                                                                      reach))
        per = (m + threads - 1) // threads
        lo_w = tid * per
        hi_w = min(m, lo_w + per)
        subtotal = int64(0)
        for w in range(lo_w, hi_w):
            lo, hi = walks.walk_span(n, k, head, tile, m, g, length, inv, reach, w)
            size = hi - lo if lo < hi else int64(0)
            smi[t_lo + w] = int32(lo)
            smi[t_off + w] = int32(size)
            subtotal += size
        if shuffles:  # an inclusive scan in each warp, thread 0 over the warps' sums
            lane_id = tid % 32
            inclusive = subtotal
            for delta in (1, 2, 4, 8, 16):
                below = cuda.shfl_up_sync(0xFFFFFFFF, inclusive, delta)
                if lane_id >= delta:
                    inclusive += below
            if lane_id == 31:
                pick[tid // 32] = inclusive
            cuda.syncthreads()
            if tid == 0:
                running = int64(0)
                for t in range(threads // 32):
                    part = pick[t]
                    pick[t] = running
                    running += part
                pick[threads] = running
            cuda.syncthreads()
            offset = pick[tid // 32] + inclusive - subtotal
        else:
            pick[tid] = subtotal
            cuda.syncthreads()
            if tid == 0:
                running = int64(0)
                for t in range(threads):
                    part = pick[t]
                    pick[t] = running
                    running += part
                pick[threads] = running
            cuda.syncthreads()
            offset = pick[tid]
        for w in range(lo_w, hi_w):
            size = smi[t_off + w]
            smi[t_off + w] = int32(offset)
            offset += size
        total = pick[threads]
        cuda.syncthreads()
        return total

    @cuda.jit(device=True)
    def decode(desc, d, smi, position, n, k, head, tile, row_pos, share_pos):
        """Thread 0: item ``position``'s tile and pieces (runs of one writer; consecutive lane runs joined)
        into descriptor slot ``d``, from the tables (``_schedule.source_run``'s runs, walked writer by
        writer instead of divided out)."""
        j = int64(smi[t_tile + position])
        packed = int64(smi[t_first + position])
        writer = packed >> 2
        desc[d, W_REACH] = packed & 3
        x0, x1 = S.tile_dest(n, head, tile, j)
        z = x0 + k
        if z >= n:
            z -= n
        x = x0
        count = 0
        slot = int64(0)
        z_next = int64(-1)
        while x < x1:
            wx0, wx1 = S.tile_dest(n, head, tile, writer)
            end = x + (wx1 - z)
            if end > x1:
                end = x1
            late = int64(smi[t_rank + writer]) + reach < position
            if not late and z == z_next:
                piece = W_HEADER + (count - 1) * W_PIECE  # the lane run goes on: one piece, one write
                x_lo = desc[d, piece + W_XL]
                vecs = run_vecs(head, z - (x - x_lo), end - x_lo)
                slot += vecs - desc[d, piece + W_VECS]
                desc[d, piece + W_XH] = end
                desc[d, piece + W_VECS] = vecs
            else:
                piece = W_HEADER + count * W_PIECE
                z_al = S.align_down(head + z) - head
                vecs = run_vecs(head, z, end - x)
                desc[d, piece + W_XL] = x
                desc[d, piece + W_XH] = end
                desc[d, piece + W_SRC_AL] = z_al
                desc[d, piece + W_SLOT] = slot
                desc[d, piece + W_VECS] = vecs
                if late:
                    desc[d, piece + W_SCRATCH] = 1
                    desc[d, piece + W_POS] = (share_pos + int64(smi[t_off + writer]) + z_al
                                              - int64(smi[t_lo + writer]))
                else:
                    desc[d, piece + W_SCRATCH] = 0
                    desc[d, piece + W_POS] = row_pos + z_al
                slot += vecs
                count += 1
            z_next = -1 if late else z + (end - x)
            z += end - x
            if z == wx1:  # the next run reads the next writer tile (the last tile ends the lane: wrap)
                writer += 1
                if z == n:
                    z = 0
                    writer = 0
            x = end
        desc[d, W_PIECES] = count

    @cuda.jit(device=True)
    def start_copies(sm32, buf, desc, d, data, scratch, tid):
        for q in range(desc[d, W_PIECES]):
            piece = W_HEADER + q * W_PIECE
            if desc[d, piece + W_SCRATCH]:
                copy_vectors(sm32, buf + desc[d, piece + W_SLOT], scratch, desc[d, piece + W_POS],
                             desc[d, piece + W_VECS], tid)
            else:
                copy_vectors(sm32, buf + desc[d, piece + W_SLOT], data, desc[d, piece + W_POS],
                             desc[d, piece + W_VECS], tid)

    @cuda.jit(device=True)
    def write_item(sm32, buf, desc, d, data, row_pos, head, n, k, tid):
        for q in range(desc[d, W_PIECES]):
            piece = W_HEADER + q * W_PIECE
            x = desc[d, piece + W_XL]
            delta = k if x + k < n else k - n
            write_moved(sm32, buf + desc[d, piece + W_SLOT], desc[d, piece + W_SRC_AL], data, row_pos, head, x,
                        desc[d, piece + W_XH], delta, tid)

    @cuda.jit(device=True)
    def span_tile(smi, m, w, v):
        """The tile whose span holds scratch vector ``v``, from tile ``w`` on (offsets ascend)."""
        while w + 1 < m and int64(smi[t_off + w + 1]) <= 16 * v:
            w += 1
        return w

    @cuda.jit(device=True)
    def span_source(smi, row_pos, w, v):
        """Where scratch vector ``v`` of tile ``w``'s span lies in ``data``."""
        return row_pos + int64(smi[t_lo + w]) + 16 * v - int64(smi[t_off + w])

    @cuda.jit(device=True)
    def pre_read_spans(sm32, data, scratch, smi, row_pos, lane_scratch, m, total, tid):
        """Copy every tile's span to its scratch offset. The spans back to back are one run of vectors,
        staged through the tile buffers (free before the walk) a ring's worth at a time: thread ``t``
        starts the asynchronous copies of vectors ``t, t + threads, ...`` of the round, finding each
        one's tile by walking the offsets forward, then stores what landed (coalesced). A round keeps
        the whole ring in flight: a lane's only reads then, so latency, not bandwidth, sets this phase."""
        vecs = total >> 4
        ring = buffers * buf_vecs
        w = int64(0)
        base = int64(0)
        while base < vecs:
            count = min(ring, vecs - base)
            for v in range(base + tid, base + count, threads):
                w = span_tile(smi, m, w, v)
                copy16_async(sm32, 4 * (v - base), data, span_source(smi, row_pos, w, v))
            commit_copies()
            wait_copies_left(0)
            cuda.syncthreads()
            for v in range(base + tid, base + count, threads):
                a0, a1, a2, a3 = load16_shared(sm32, 4 * (v - base))
                store16(scratch, lane_scratch + 16 * v, a0, a1, a2, a3)
            cuda.syncthreads()  # the ring is staged again
            base += count

    @cuda.jit(**jit_options)
    def kernel(data, shifts, scratch, counters, rows, seg, n, item, shift_stride, head0, share, pool, save_bytes):
        sm32 = cuda.shared.array(0, uint32)
        smi = cuda.shared.array(0, int32)
        picks = cuda.shared.array(0, int64)
        pick = picks[pick0:pick0 + 2 * threads]
        desc = cuda.shared.array((slots, W_FIELDS), int64)
        ctrl = cuda.shared.array(2, int64)
        tid = cuda.threadIdx.x
        share_pos = int64(cuda.blockIdx.x) * share
        pool0 = int64(cuda.gridDim.x) * share  # the pool follows the blocks' shares
        tile_lo, tile_hi = walks.walk_tile_range(seg, tile_bytes, max_tiles)
        while True:
            # Lanes by ticket, not grid-strided: a block held up by a costly lane takes fewer.
            lane = block_ticket(ctrl, counters, 0, tid)
            if lane >= rows:
                break
            s = load_i64(shifts, lane * shift_stride) % n  # Python's modulo: in [0, n)
            if s == 0:
                continue
            row_pos = lane * seg
            head = (head0 + row_pos) & 15
            k = (n - s) * item  # right by s items: left by n - s
            walk = tile_lo <= tile_hi
            index = int64(-1)
            if walk:
                # The scores sit in the tile buffers: free until the pre-reads.
                index = choose(pick, picks, seg, k, head, tile_lo, tile_hi, share, tid)
                walk = index >= 0
            tile = int64(0)
            m = int64(0)
            total = int64(0)
            lane_scratch = share_pos
            if walk:
                tile, chain = walks.walk_candidate(seg, k, head, tile_hi, index)
                m = S.tile_count(seg, head, tile)
                p = S.chain_step(m, chain)
                g, length, inv = S.chain_shape(m, p)
                total = layout(smi, pick, seg, k, head, tile, m, p, g, length, inv, tid)
                if total > share:
                    # Over the block's share: the pre-reads go to the launch's pool if it still has
                    # room. Bytes are taken once, in ticket order; a lane they do not fit keeps its add
                    # (handing bytes back after another lane added past them would hand them out twice).
                    if tid == 0:
                        used = int64(atomic_add_u64(counters, 1, uint64(total)))
                        ctrl[1] = pool0 + used if used + total <= pool else int64(-1)
                    cuda.syncthreads()  # ctrl[1] is written again only after the next lane's ticket
                    lane_scratch = ctrl[1]
                    walk = lane_scratch >= 0
            if not walk:
                swap_lane(sm32, data, row_pos, head, seg, k, save_bytes, tid)
                cuda.syncthreads()
                continue
            pre_read_spans(sm32, data, scratch, smi, row_pos, lane_scratch, m, total, tid)
            if tid < decoders:
                for position in range(int64(tid), min(buffers, m), decoders):
                    decode(desc, position % slots, smi, position, seg, k, head, tile, row_pos, lane_scratch)
            cuda.syncthreads()  # the spans are in scratch before any copy reads them; the first items decoded
            for position in range(min(reach, m)):
                start_copies(sm32, (position % buffers) * buf_vecs, desc, position % slots, data, scratch, tid)
                commit_copies()
            for position in range(m):
                ahead = position + reach
                if ahead < m:
                    start_copies(sm32, (ahead % buffers) * buf_vecs, desc, ahead % slots, data, scratch, tid)
                commit_copies()  # one group an item, empty or not: the counts below hold
                d = position % slots
                wait_copies_left(reach - desc[d, W_REACH])
                cuda.syncthreads()
                if tid >= control:
                    write_item(sm32, (position % buffers) * buf_vecs, desc, d, data, row_pos, head, seg, k,
                               tid - control)
                following = position + buffers + tid
                if tid < decoders and position % decoders == 0 and following < m:
                    # Its slot held item following - slots <= position - 1: written already.
                    decode(desc, following % slots, smi, following, seg, k, head, tile, row_pos, lane_scratch)
                cuda.syncthreads()  # this buffer is staged again, the decoded items are read
        if tid == 0:
            leave_launch(counters)

    return kernel
