"""The GPU chain schedule emulated, for testing it under hostile interleavings.

It runs exactly the hooks the CUDA kernel runs (``rotate._schedules.chain``: the
pre-read layout, ``tile_at``, ``source_run``, ``reader_run``, ``classify``),
with ``blocks`` virtual resident blocks whose actions a scheduler
interleaves in any order: at random, or always the block holding the
highest, lowest or newest item first. Each block does what a kernel block
does (``rotate._backends.cuda.kernels.chain.chain_kernel``)::

    take pre-read tickets until none are left: copy the spans, publish them
        (taking and copying are separate steps, so other blocks decode
        meanwhile; once every ticket is finished, ``pre_reads_finished``,
        no pre-read flag is checked, as in the kernel)
    decode the first ``buffers`` items (decoding an item waits for the
        pre-reads of the scratch pieces it reads), start the copies of the
        first ``buffers - 1``; the last is the item decoded ahead
    loop: the oldest item's copies have landed -> publish it "read done"
          -> start the copies of the item decoded ahead
          -> wait for the oldest tile's readers as ``classify`` says
             (WAIT: their flags; RING: this block's copies up to the
             farthest ring reader's, the table's ``ring_reach``; PRE: the
             tile's pre-read)
          -> write the oldest tile
          -> next item: decode it (the item decoded ahead)

A started copy *lands* (reads memory as it is at that moment) at any later
step the scheduler picks, as an asynchronous copy may. Data moves byte by
byte. The emulator raises ``Deadlock`` when no block can move while work
remains and ``ScheduleError`` when a wait points at an item that is not
lexicographically earlier. Tests compare the result with ``numpy.roll``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import numpy as np

from ..._schedules import chain as S

POLICIES = ("random", "highest", "lowest", "newest")


class Deadlock(RuntimeError):
    """No block can make progress, yet work remains."""


class ScheduleError(AssertionError):
    """A wait pointed at an item that is not earlier than the waiting one."""


@dataclass
class _Block:
    ring: list = field(default_factory=list)     # items (row, key, tile) whose copies were started, oldest first
    decoded: list = field(default_factory=list)  # items decoded whose copies have not started
    drawn: object = None                         # the item being decoded (drawn, waiting for pre-reads)
    items: list = field(default_factory=list)    # control warp: every item decoded, in order (None: the end)
    end: object = None                           # control warp: the index of the end, once decoded
    cleared: int = 0                             # control warp: items whose readers have their bytes
    written: int = 0                             # control warp: items written
    started_prime: int = 0                       # control warp: the ring's first items started
    landed: dict = field(default_factory=dict)   # key -> {position: byte}
    lane: int = -1
    step: int = 0
    phase: str = "pre"
    pre_ticket: int = -1                         # the pre-read ticket taken, copied at a later step
    issued: int = 0                              # pipeline: items whose copies the producer started
    stop: object = None                          # pipeline: the end, once the producer has seen it
    current: int = 0                             # pipeline: the item the producer is at
    stage: int = 0                               # pipeline: 0 or 1, which of its two steps comes next
    freed: int = 0                               # pipeline: items the decoder may decode (slots free)


def plan_rows(rows, n, k, head0, tile_bytes, chain=None, lane_steps=None, buffers=2, co_resident=False):
    """The pre-read table and per-row scratch the planner would build (all heads the rows take)."""
    if chain is None:
        chain = max(1, k // tile_bytes)
    m_max = S.max_tiles(n, tile_bytes)
    if lane_steps is None:
        lane_steps = max(1, S.ceil_div(m_max, 3))
    heads = [head0] if rows == 1 or n % 16 == 0 else list(range(16))
    stride = S.table_stride(m_max)
    table = np.zeros(stride * len(heads), np.int64)
    row_bytes = 0
    for index, head in enumerate(heads):
        head_bytes = S.layout_pre_reads(n, k, head, tile_bytes, chain, lane_steps, buffers, int(co_resident), table,
                                          stride * index)
        assert head_bytes >= 0, "a tile has more runs than the kernel decodes"
        row_bytes = max(row_bytes, head_bytes)
    return chain, lane_steps, table, S.align_up(row_bytes), len(heads)


def emulate(data: np.ndarray, rows: int, n: int, k: int, head0: int, tile_bytes: int,
            blocks: int, policy: str = "random", seed: int = 0, buffers: int = 2,
            chain=None, lane_steps=None, control_warp: bool = False, pipeline: bool = False,
            co_resident: bool = False) -> np.ndarray:
    """Rotate each of ``rows`` segments of ``data`` (uint8) left by ``k``, as the GPU would.

    ``control_warp``: run the control-warp variant of the kernel instead,
    whose blocks are two agents the scheduler interleaves (``cw_control``,
    ``cw_data``). ``pipeline``: the pipelined variant, three agents a block
    (``pl_decoder``, ``pl_producer``, ``pl_data``). ``co_resident``: the
    plan a cooperative launch runs (``classify``'s co-resident rule: waits on
    later lanes at earlier steps); it finishes only with a block for every
    lane, and the emulator then checks waits against ``(step, lane)`` order.

    Returns the rotated copy; ``data`` is left untouched.
    """
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {POLICIES}, got {policy!r}")
    T = tile_bytes
    chain, lane_steps, table, scratch_row, n_heads = plan_rows(rows, n, k, head0, T, chain, lane_steps, buffers,
                                                                 co_resident)
    mem = data.copy()
    scratch = np.full(rows * scratch_row, 0xA5, np.uint8)  # poisoned
    m_max = S.max_tiles(n, T)
    lanes_row = S.lanes_per_row(n, T, lane_steps)
    total_lanes = rows * lanes_row
    stride = S.table_stride(m_max)
    pre_row = S.pre_tickets_per_row(table, m_max, n_heads)
    read_done = set()     # (row, tile)
    pre_done = set()      # (row, tile)
    counters = [0, 0, 0]  # lane tickets, pre-read tickets taken, pre-read tickets finished
    rng = random.Random(seed)
    state = [_Block() for _ in range(blocks)]

    def geometry(row):
        head = S.row_head(head0, row, n)
        m = S.tile_count(n, head, T)
        p = S.chain_step(m, chain)
        g, length, inv = S.chain_shape(m, p)
        return head, m, g, length, inv

    def entry(row, w):
        head = S.row_head(head0, row, n)
        base = S.table_stride(m_max) * (head if n_heads > 1 else 0) + S.TILE_FIELDS * w
        return int(table[base + S.T_OFFSET]), int(table[base + S.T_LO]), int(table[base + S.T_VECS])

    def reach_of(row, key):
        """The item's ring reach, as the kernel reads it from the plan table."""
        head = S.row_head(head0, row, n)
        base = S.table_stride(m_max) * (head if n_heads > 1 else 0) + S.TILE_FIELDS * m_max
        return S.item_ring_reach(int(table[base + (key[0] - row * lanes_row) * lane_steps + key[1]]))

    def wait_order(key):
        """The order waits must point down: ``(lane, step)``, or ``(step, lane)`` for a co-resident plan."""
        return (key[1], key[0]) if co_resident else key

    def key_of(row, tile):
        head, m, g, length, inv = geometry(row)
        pos = S.position_of(m, g, length, inv, tile)
        return (row * lanes_row + pos // lane_steps, pos % lane_steps)

    def next_item(b):
        """The block's next item (row, key, tile), or None."""
        if b.lane >= total_lanes:
            return None
        b.step += 1
        while True:
            if b.lane >= 0 and b.step < lane_steps:
                row = b.lane // lanes_row
                head, m, g, length, inv = geometry(row)
                position = (b.lane - row * lanes_row) * lane_steps + b.step
                if position < m:
                    return row, (b.lane, b.step), S.tile_at(m, S.chain_step(m, chain), g, length, position)
            if co_resident and b.lane >= 0:  # one lane a block (the kernel's ``one_lane``)
                b.lane = total_lanes
                return None
            b.lane = counters[0]
            counters[0] += 1
            b.step = 0
            if b.lane >= total_lanes:
                return None

    def pieces(row, tile):
        """Source pieces (x, xe, z, from_scratch, writer) of an item, as describe() decodes them."""
        head, m, g, length, inv = geometry(row)
        x0, x1 = S.tile_dest(n, head, T, tile)
        out = []
        x = x0
        while x < x1:
            w, z, xe = S.source_run(n, k, head, T, x, x1)
            kind = S.classify(m, g, length, inv, lane_steps, buffers, int(co_resident), tile, w)
            out.append((x, xe, z, kind == S.PRE, w))
            x = xe
        return out

    def pre_reads_finished():
        """The kernel's shortcut: once every ticket is finished, no pre-read flag is polled."""
        return S.pre_reads_finished(counters[2], rows * pre_row)

    def can_describe(row, tile):
        return pre_reads_finished() or all((row, w) in pre_done for _, _, _, pre, w in pieces(row, tile) if pre)

    def land(row, tile):
        buffer = {}
        for x, xe, z, pre, w in pieces(row, tile):
            offset, lo, vecs = entry(row, w) if pre else (0, 0, 0)
            if pre and (offset < 0 or not lo <= z or z + (xe - x) > lo + 16 * vecs):
                raise ScheduleError(f"tile {tile} (row {row}) reads bytes {z}..{z + xe - x} of tile {w} from "
                                    f"scratch, but the plan pre-reads {lo}..{lo + 16 * vecs} there (offset {offset})")
            for i in range(xe - x):
                if pre:
                    buffer[x + i] = scratch[row * scratch_row + offset + (z + i - lo)]
                else:
                    buffer[x + i] = mem[row * n + z + i]
        return buffer

    def waits_clear(b, row, key, tile, kinds=(S.WAIT, S.RING, S.PRE), ring=None):
        """Whether the oldest item may write now, as far as ``kinds`` go (raises on a wait that points
        forward). ``ring``: the block's started items from this one on (default: ``b.ring``)."""
        ring = b.ring if ring is None else ring
        head, m, g, length, inv = geometry(row)
        x0, x1 = S.tile_dest(n, head, T, tile)
        z = x0
        while z < x1:
            reader, ze = S.reader_run(n, k, head, T, z, x1)
            kind = S.classify(m, g, length, inv, lane_steps, buffers, int(co_resident), reader, tile)
            if kind not in kinds:
                pass
            elif kind == S.WAIT:
                if not wait_order(key_of(row, reader)) < wait_order(key):
                    raise ScheduleError(f"item {key} (row {row}, tile {tile}) waits for tile {reader} "
                                        f"at {key_of(row, reader)}")
                if (row, reader) not in read_done:
                    return False
            elif kind == S.RING:
                reach = reach_of(row, key)
                if not any(item[0] == row and item[2] == reader for item in ring[1:reach + 1]):
                    raise ScheduleError(f"item {key} (row {row}, tile {tile}) counts on tile {reader} "
                                        f"being among the {reach} items after it in its ring, which holds {ring}")
                if any(item[1] not in b.landed for item in ring[:reach + 1]):
                    return False
            elif kind == S.PRE:
                if not pre_reads_finished() and (row, tile) not in pre_done:
                    return False
            z = ze
        return True

    def pending(b):
        return [item for item in b.ring if item[1] not in b.landed]

    def advance(b: _Block) -> bool:
        if b.phase == "pre":  # up to pre_group large spans or PRE_TICKET_ENTRIES small ones a ticket, as the kernel
            ticket = counters[1]
            counters[1] += 1
            if ticket >= rows * pre_row:
                b.phase = "fill"  # every ticket is taken; some may still be copying in other blocks
                return True
            b.pre_ticket = ticket
            b.phase = "pre-copy"
            return True
        if b.phase == "pre-copy":  # copy the ticket's spans, publish each, count the ticket finished
            row, index = S.pre_ticket(b.pre_ticket, pre_row)
            head = S.row_head(head0, row, n)
            base = stride * (head if n_heads > 1 else 0)
            listed = base + S.pre_list(m_max)
            first, end = S.pre_ticket_entries(index, int(table[listed]), int(table[base + S.pre_big(m_max)]),
                                              int(table[base + S.pre_group_at(m_max)]))
            for e in range(first, end):
                w = int(table[listed + 1 + e])
                offset, lo, vecs = entry(row, w)
                for i in range(16 * vecs):  # over-copied bytes outside the row are never read back
                    if 0 <= lo + i < n:
                        scratch[row * scratch_row + offset + i] = mem[row * n + lo + i]
                pre_done.add((row, w))
            counters[2] += 1
            b.phase = "pre"
            return True
        if b.phase in ("fill", "describe"):  # draw the next item and decode it (may wait for pre-reads)
            if b.drawn is None:
                b.drawn = next_item(b)
                if b.drawn is None:
                    b.drawn = False  # none left
            if b.drawn is not False:
                row, key, tile = b.drawn
                if not can_describe(row, tile):
                    return False
                b.decoded.append(b.drawn)
            exhausted = b.drawn is False
            b.drawn = None
            if b.phase == "fill" and not exhausted and len(b.decoded) < buffers:
                return True
            if b.phase == "fill":
                b.ring.extend(b.decoded[:buffers - 1])  # their copies start
                del b.decoded[:buffers - 1]
            b.phase = "top" if b.ring else "exit"
            return True
        if b.phase == "exit":
            return False
        row, key, tile = b.ring[0]
        if b.phase == "top":
            if key not in b.landed:
                return False
            read_done.add((row, tile))
            b.ring.extend(b.decoded)  # the item decoded ahead: its copies start
            b.decoded.clear()
            b.phase = "wait"
            return True
        if b.phase == "wait":
            if not waits_clear(b, row, key, tile):
                return False
            for x, value in b.landed.pop(key).items():
                mem[row * n + x] = value
            b.ring.pop(0)
            b.phase = "describe"
            return True
        raise AssertionError(b.phase)

    # --- the control-warp variant (chain_kernel(control_warp=True)) -----------
    # b.items: every item the control agent decoded, in order (None: the end);
    # b.ring: the items whose copies the data agent started and has not
    # written (the oldest first); counters as the kernel's ``seq``.

    def decode_next(b: _Block) -> bool:
        """Draw the block's next item and decode it into ``b.items`` (None: the end), unless it must
        wait for a pre-read (then False, and the drawn item is kept for the next try)."""
        if b.drawn is None:
            b.drawn = next_item(b) or False
        if b.drawn is False:
            b.end = len(b.items)
            b.items.append(None)
        else:
            row, key, tile = b.drawn
            if not can_describe(row, tile):
                return False
            b.items.append(b.drawn)
        b.drawn = None
        return True

    def cw_control(b: _Block) -> bool:
        """One action of the control warp: decode ahead, else clear the oldest uncleared item's waits."""
        decoded = len(b.items)
        if b.end is None and decoded - b.written < 2 * buffers:
            return decode_next(b)
        if b.cleared < decoded and (b.end is not None or decoded >= b.cleared + buffers):
            if b.cleared == b.end:
                return False  # done
            row, key, tile = b.items[b.cleared]
            if not waits_clear(b, row, key, tile, kinds=(S.WAIT, S.PRE)):
                return False  # the kernel spins here: no decoding meanwhile
            b.cleared += 1
            return True
        return False

    def cw_ready(b, index):
        """The data agent may use item ``index``'s descriptor (or knows it is past the end)."""
        return len(b.items) > index or (b.end is not None and b.end <= index)

    def cw_start(b, index):
        if b.end is None or index < b.end:
            b.ring.append(b.items[index])

    def cw_data(b: _Block) -> bool:
        """One action of the data warps."""
        if b.phase in ("pre", "pre-copy"):
            return advance(b)
        if b.phase in ("fill", "describe"):  # prime: the first buffers - 1 items' copies
            if b.started_prime == buffers - 1:
                b.phase = "top"
                return True
            if not cw_ready(b, b.started_prime):
                return False
            cw_start(b, b.started_prime)
            b.started_prime += 1
            return True
        if b.phase == "exit":
            return False
        i = b.written
        if b.end == i:
            b.phase = "exit"
            return True
        row, key, tile = b.ring[0]
        if b.phase == "top":
            if key not in b.landed:
                return False
            read_done.add((row, tile))
            b.phase = "ahead"
            return True
        if b.phase == "ahead":
            if not cw_ready(b, i + buffers - 1) or b.cleared <= i:
                return False
            cw_start(b, i + buffers - 1)
            b.phase = "wait"
            return True
        if b.phase == "wait":
            if not waits_clear(b, row, key, tile, kinds=(S.RING,)):
                return False
            for x, value in b.landed.pop(key).items():
                mem[row * n + x] = value
            b.ring.pop(0)
            b.written += 1
            b.phase = "top"
            return True
        raise AssertionError(b.phase)

    # --- the pipelined variant (chain_kernel(pipeline=True)) ------------------
    # b.items: every item the decoder decoded, in order (None: the end); b.ring:
    # the items whose copies the producer started and the data threads have
    # not written (the oldest first); b.current/b.stage: the producer's place.

    def pl_decoder(b: _Block) -> bool:
        """Decode the next item once its descriptor slot is free (the item ``buffers + 1`` before it written)."""
        j = len(b.items)
        if b.end is not None or j >= max(b.freed, buffers + 1):
            return False
        if j > buffers and b.written < j - buffers:
            raise ScheduleError(f"item {j} is decoded into the slot of item {j - buffers - 1}, not written yet")
        return decode_next(b)

    def pl_issue(b: _Block, j: int) -> bool:
        """The producer starts item ``j``'s copies (once decoded), or learns it is the end."""
        if len(b.items) <= j:
            return False
        if b.items[j] is None:
            b.stop = j
        else:
            if len(b.ring) >= buffers:
                raise ScheduleError(f"item {j} starts its copies into a buffer whose item {b.ring[0]} "
                                    f"is not written yet")
            b.ring.append(b.items[j])
        b.issued = j + 1
        return True

    def pl_producer(b: _Block) -> bool:
        """One step of the producer: the first copies, then per item ``c`` its clear and the next issue."""
        if b.issued < buffers - 1 and b.stop is None:
            return pl_issue(b, b.issued)
        c = b.current
        if b.stop is not None and c > b.stop or len(b.items) <= c:
            return False
        item = b.items[c]
        issue_first = item is not None and reach_of(item[0], item[1]) >= buffers - 1
        if (b.stage == 0) == issue_first:  # start the copies of item c + buffers - 1
            ahead = c + buffers - 1
            if b.stop is None and b.issued <= ahead:
                if c >= 1 and b.written < c:
                    return False  # item c - 1 (the buffer's last) not written yet
                b.freed = max(b.freed, c + buffers + 1)
                if not pl_issue(b, ahead):
                    return False
        else:  # clear item c
            if item is not None:
                row, key, tile = item
                if key not in b.landed:
                    return False
                read_done.add((row, tile))
                ring = [i for i in b.ring if i[1] >= key]
                if not waits_clear(b, row, key, tile, ring=ring):
                    return False
            b.cleared = c + 1
        b.stage += 1
        if b.stage == 2:
            b.stage = 0
            b.current += 1
        return True

    def pl_data(b: _Block) -> bool:
        """The data threads: write item ``b.written`` once cleared."""
        if b.phase in ("pre", "pre-copy"):
            return advance(b)
        i = b.written
        if b.phase == "exit" or b.cleared <= i:
            return False
        if b.items[i] is None:
            b.phase = "exit"
            return True
        row, key, tile = b.ring[0]
        for x, value in b.landed.pop(key).items():
            mem[row * n + x] = value
        b.ring.pop(0)
        b.written += 1
        return True

    def step(b: _Block) -> bool:
        """One action of block ``b``; a started copy lands now with probability 1/2,
        or when the block can do nothing else. Copies start once their item is in the ring."""
        started = pending(b)
        if started and rng.random() < 0.5:
            row, key, tile = rng.choice(started)
            b.landed[key] = land(row, tile)
            return True
        if pipeline:
            agents = [pl_decoder, pl_producer, pl_data] if b.phase not in ("pre", "pre-copy") else [pl_data]
            rng.shuffle(agents)
            if any(agent(b) for agent in agents):
                return True
        elif control_warp:
            agents = [cw_control, cw_data] if b.phase not in ("pre", "pre-copy") else [cw_data]
            rng.shuffle(agents)
            if any(agent(b) for agent in agents):
                return True
        elif advance(b):
            return True
        if started:
            row, key, tile = started[0]
            b.landed[key] = land(row, tile)
            return True
        return False

    while True:
        live = [b for b in state if b.phase != "exit" or (control_warp and not pipeline and b.cleared != b.end)]
        if not live:
            break
        if policy == "random":
            order = live[:]
            rng.shuffle(order)
        else:
            first = lambda b: b.ring[0][1] if b.ring else (-1, -1)  # noqa: E731
            key = {"highest": lambda b: tuple(-v for v in first(b)), "lowest": first,
                   "newest": lambda b: tuple(-v for v in (b.ring[-1][1] if b.ring else (-1, -1)))}[policy]
            order = sorted(live, key=key)
        if not any(step(b) for b in order):
            raise Deadlock(
                f"no block can move: n={n} k={k} head0={head0} tile_bytes={T} blocks={blocks} "
                f"rings {[b.ring for b in live]} phases {[b.phase for b in live]}"
            )
    if counters[0] < total_lanes:  # a co-resident plan with fewer blocks than lanes: lanes nobody walked
        raise Deadlock(f"lanes {counters[0]}..{total_lanes - 1} were never drawn: a co-resident plan needs one block "
                       f"a lane, got {blocks}")
    return mem
