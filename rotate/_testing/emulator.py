"""A CPU emulator of the GPU chain schedule, for testing it under hostile interleavings.

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

from .._schedules import chain as S
from .._schedules import gries_mills
from .._schedules import walks as SW

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


# --- the row-cycles schedule (rotate/_backends/cuda/kernels/cycles.py: cycle_kernel) -----------------


def _drive_blocks(live: dict, pending: list, land, policy: str, rng, counter: list, blocks: int, stuck) -> None:
    """Run the row-cycles emulators' blocks to the end, interleaved as ``policy`` says.

    ``live`` maps a block to its program (a generator yielding ``"go"`` or
    ``"wait"``); ``pending`` holds copies in flight, one of which ``land``
    lands at random moments (always when every block is waiting, or none is
    left). ``policy`` picks the block that moves: ``random``, ``highest``,
    ``lowest`` or ``newest`` (the latest ticket first). Raises ``Deadlock``
    with ``stuck()`` when every block has waited for long with no copy in
    flight.
    """
    idle = 0
    while live or pending:
        if pending and (not live or rng.random() < 0.3 or idle > blocks):
            land(pending.pop(rng.randrange(len(pending))))
            idle = 0
            continue
        order = sorted(live)
        if policy == "random":
            b = rng.choice(order)
        elif policy == "highest":
            b = order[-1]
        elif policy == "lowest":
            b = order[0]
        else:  # newest: the block that took the latest ticket moves first
            b = order[(counter[0] + idle) % len(order)]
        try:
            state = next(live[b])
        except StopIteration:
            del live[b]
            idle = 0
            continue
        idle = idle + 1 if state == "wait" else 0
        if idle > 50 * blocks + 100 and not pending:
            raise Deadlock(stuck())


def emulate_row_cycles(data: np.ndarray, lead: tuple, lead_shifts: tuple, row_shift: int, piece: int,
                       blocks: int, policy: str = "random", seed: int = 0) -> np.ndarray:
    """Roll ``data`` (``R`` rows of ``seg`` bytes, uint8) as the row-cycles kernel does, under a hostile scheduler.

    Runs the kernel's own index math (``segment_table``, ``source_row``) and
    its protocol with ``blocks`` virtual blocks: pre-read tickets copy a cut
    cycle's first row to scratch and publish a flag; walk tickets stage the
    segment's first row (one-segment cycles) and each step's source row
    with asynchronous copies that land (read memory) whenever the scheduler
    picks, in any order, at the latest when the block waits for them (as
    ``cp.async.wait_group`` does: a group and every older group of the
    block; the saved first row is the oldest); a step writes its row,
    rolled right by ``row_shift`` bytes, once its source has landed. Raises
    ``Deadlock`` if no block can move while work remains. Returns the result.
    """
    from .._schedules.rowperm import MAX_LEAD, source_row
    from .._backends.cuda.kernels.cycles import segment_table

    rng = random.Random(seed)
    mem = data.copy()
    dims = (1,) * (MAX_LEAD - len(lead)) + tuple(lead)
    offs = (0,) * (MAX_LEAD - len(lead_shifts)) + tuple(lead_shifts)
    table = segment_table(tuple(lead), tuple(lead_shifts), piece)
    nseg = len(table) // 3
    scratch: dict = {}
    flags: set = set()
    counter = [0]
    pending: list = []  # (block, key, read, order): copies in flight; ``read()`` runs when one lands
    landed: dict = {}
    issued = [0]

    def source(d):
        return int(source_row(d, *dims, *offs))

    def copy(block, key, read):
        issued[0] += 1
        pending.append((block, key, read, issued[0]))

    def arrived(block, key):
        """``cp.async.wait_group``: a group has landed once it and every older group of the block have."""
        if (block, key) not in landed:
            return False
        order = landed[(block, key)][1]
        return not any(p[0] == block and p[3] < order for p in pending)

    def block_program(b):
        while True:
            ticket = counter[0]
            counter[0] += 1
            yield "go"
            if ticket >= 2 * nseg:
                return
            if ticket < nseg:  # a pre-read: waits for nothing but its own copy
                if table[3 * ticket + 2] != ticket:
                    first = int(table[3 * ticket])
                    copy(b, ("pre", ticket), lambda first=first: mem[first].copy())
                    while not arrived(b, ("pre", ticket)):
                        yield "wait"
                    scratch[ticket] = landed.pop((b, ("pre", ticket)))[0]
                    flags.add(ticket)
                    yield "go"
                continue
            g = ticket - nseg
            d, steps, following = (int(x) for x in table[3 * g:3 * g + 3])
            whole = following == g
            if whole:
                copy(b, ("saved", g), lambda d=d: mem[d].copy())
            else:
                while g not in flags:
                    yield "wait"
            src = source(d)

            def stage(key, row, last):
                if not last:
                    copy(b, key, lambda row=row: mem[row].copy())
                elif not whole:
                    while following not in flags:
                        yield "wait"
                    copy(b, key, lambda: scratch[following].copy())

            yield from stage(("step", g, 0), src, steps == 1)
            for step in range(steps):
                after = source(src)
                if step + 1 < steps:
                    yield from stage(("step", g, step + 1), after, step + 2 == steps)
                key = ("saved", g) if whole and step == steps - 1 else ("step", g, step)
                while not arrived(b, key):
                    yield "wait"
                mem[d] = np.roll(landed.pop((b, key))[0], row_shift)
                yield "go"
                d, src = src, after

    def land(entry):
        b, key, read, order = entry
        landed[(b, key)] = (read(), order)

    live = {b: block_program(b) for b in range(blocks)}
    _drive_blocks(live, pending, land, policy, rng, counter, blocks,
                  lambda: f"row-cycles: blocks {sorted(live)} all wait; flags {sorted(flags)} of {nseg}")
    return mem


def emulate_lane_swaps(lane: np.ndarray, k: int, save: int, panel: int, head: int, late: bool) -> np.ndarray:
    """One lane of ``lane-swaps`` (``rotate._backends.cuda.kernels.lane_swaps.swap_kernel``) rotated left by ``k`` bytes, on the CPU.

    Walks the kernel's steps with its index math (``swap_step``,
    ``saved_rotation``, ``tile_dest`` on a lane ``head`` bytes past a 16-byte
    boundary). Each panel (a swap pair, or a move panel) is staged one panel
    ahead of the one being written, as the kernel's copies are; an
    asynchronous copy may read memory at any time until it is waited for, so
    ``late`` reads each staged panel after the panel before it was written
    (``late=False``: at once). Both must equal ``numpy.roll``: a panel whose
    source overlaps the previous panel's destination gives different bytes.
    Returns the rotated lane (a copy).
    """
    x = np.array(lane, copy=True)

    def pipeline(items):
        """Write each item's moves ``(src, dst, count)`` from bytes staged one item ahead."""
        read = lambda item: [x[s:s + c].copy() for s, _, c in item]  # noqa: E731
        staged = read(items[0]) if items else None
        for i, item in enumerate(items):
            ahead = read(items[i + 1]) if i + 1 < len(items) and not late else None
            for (_, d, c), data in zip(item, staged):
                x[d:d + c] = data
            staged = read(items[i + 1]) if i + 1 < len(items) and late else ahead

    lo, n = 0, len(x)
    while k != 0 and min(k, n - k) > save:
        a, b, m, lo, n, k = gries_mills.swap_step(lo, n, k)
        grid = (head + a) & 15
        tiles = [S.tile_dest(m, grid, panel, j) for j in range(S.tile_count(m, grid, panel))]
        pipeline([[(a + x0, b + x0, x1 - x0), (b + x0, a + x0, x1 - x0)] for x0, x1 in tiles])
    if k != 0:
        save_at, count, src, dst, length, put = gries_mills.saved_rotation(lo, n, k)
        saved = x[save_at:save_at + count].copy()  # its group is the oldest: landed before any write
        grid = (head + dst) & 15
        tiles = [S.tile_dest(length, grid, panel, j) for j in range(S.tile_count(length, grid, panel))]
        if dst > src:  # moving up: walk the panels downwards
            tiles.reverse()
        pipeline([[(src + x0, dst + x0, x1 - x0)] for x0, x1 in tiles])
        x[put:put + count] = saved
    return x


def walk_plan(n: int, k: int, head: int, tile_max: int, max_tiles: int, reach: int, share: int, save: int,
              pool_left: int = 0):
    """What ``lane-walks`` (``rotate._backends.cuda.kernels.walks.walk_kernel``) does with one lane of ``n`` bytes rotated left
    by ``k``: ``("none",)``, ``("swaps", pre_bytes)`` (the lane would have too many tiles, or its pre-reads,
    ``pre_bytes``, exceed both the block's ``share`` of scratch and the ``pool_left`` bytes left in the
    launch's pool, which the kernel's pool counter takes all the same), or
    ``("walk", tile_bytes, chain, spans, offsets, total)`` with each tile's pre-read span and its offset
    in the lane's scratch (the pool's when ``total > share``). The kernel decides with the same functions
    in the same order."""
    if k == 0:
        return ("none",)
    tile_bytes, chain, total = SW.walk_decision(n, k, head, tile_max, max_tiles, reach, share, pool_left)
    if tile_bytes == 0:
        return ("swaps", total)
    m = S.tile_count(n, head, tile_bytes)
    g, length, inv = S.chain_shape(m, S.chain_step(m, chain))
    spans = [SW.walk_span(n, k, head, tile_bytes, m, g, length, inv, reach, w) for w in range(m)]
    offsets = list(np.cumsum([0] + [max(hi - lo, 0) for lo, hi in spans[:-1]]))
    return ("walk", tile_bytes, chain, spans, offsets, total)


def emulate_lane_walk(lane: np.ndarray, k: int, head: int, tile_max: int, max_tiles: int, reach: int,
                      share: int, save: int, panel: int = 16 * 1024, pool_left: int = 0):
    """One lane of ``lane-walks`` rotated left by ``k`` bytes on the CPU: ``(rotated copy, plan)``.

    Runs the kernel's walk with its index math: pre-read spans copied to
    scratch first, then the tiles in chain order, the copies of each item
    started ``reach`` items before it writes (the kernel's ring of
    ``reach + 1`` buffers). An asynchronous copy may read the lane at any
    moment until the first wait that covers it (the writing of the item
    itself, or of an earlier item whose ring reach reaches it), so each copy
    is taken when it starts and checked unchanged when it must have landed:
    a ``RING`` reader the writer did not wait for, or an array piece whose
    writer came first, fails here. Lanes the walk does not take run
    ``emulate_lane_swaps``.
    """
    n = len(lane)
    plan = walk_plan(n, k, head, tile_max, max_tiles, reach, share, save, pool_left)
    if plan[0] == "none":
        return np.array(lane, copy=True), plan
    if plan[0] == "swaps":
        return emulate_lane_swaps(lane, k, save, panel, head, late=True), plan
    _, tile_bytes, chain, spans, offsets, total = plan
    x = np.array(lane, copy=True)
    m = S.tile_count(n, head, tile_bytes)
    p = S.chain_step(m, chain)
    g, length, inv = S.chain_shape(m, p)
    rank = np.empty(m, np.int64)
    for position in range(m):
        rank[S.tile_at(m, p, g, length, position)] = position
    scratch = {}
    for w, (lo, hi) in enumerate(spans):
        if lo < hi:
            lo_c, hi_c = max(lo, 0), min(hi, n)  # the span's vectors over-reach the lane's ends
            scratch[w] = (lo_c, x[lo_c:hi_c].copy())

    def sources(position):
        """``[(x_lo, x_hi, z, from_scratch)]`` and the bytes as the copy takes them now."""
        tile = S.tile_at(m, p, g, length, position)
        x0, x1 = S.tile_dest(n, head, tile_bytes, tile)
        pieces, data = [], []
        at = x0
        while at < x1:
            writer, z, end = S.source_run(n, k, head, tile_bytes, at, x1)
            late = rank[writer] + reach < position
            lo_w, hi_w = spans[writer]
            if late and not (lo_w <= z and z + (end - at) <= hi_w):  # a span may hold early pieces too
                raise ScheduleError(f"lane-walks: piece [{at}, {end}) of tile {tile} from tile {writer}: "
                                    f"pre-read {late}, span {spans[writer]}")
            pieces.append((at, end, z, late))
            if late:
                lo_c, held = scratch[writer]
                data.append(held[z - lo_c:z - lo_c + end - at].copy())
            else:
                data.append(x[z:z + end - at].copy())
            at = end
        return tile, x0, x1, pieces, data

    in_flight = {}
    for position in range(min(reach, m)):
        in_flight[position] = sources(position)
    for position in range(m):
        if position + reach < m:
            in_flight[position + reach] = sources(position + reach)
        tile = S.tile_at(m, p, g, length, position)
        farthest = SW.walk_reach(n, k, head, tile_bytes, rank, 0, position, tile, reach)
        for landed in range(position, position + farthest + 1):  # the copies this write waits for
            if landed in in_flight and in_flight[landed][0] is not None:
                _, _, _, pieces, data = in_flight[landed]
                for (lo, hi, z, late), held in zip(pieces, data):
                    if not late and not np.array_equal(x[z:z + hi - lo], held):
                        raise ScheduleError(f"lane-walks: item {landed}'s copy of [{z}, {z + hi - lo}) changed "
                                            f"before it landed (written before item {position})")
                in_flight[landed] = (None,) + in_flight[landed][1:]
        _, x0, x1, pieces, data = in_flight.pop(position)
        for (lo, hi, z, late), held in zip(pieces, data):
            x[lo:hi] = held
    return x, plan


# --- the chunked row-cycles schedule (rotate/_backends/cuda/kernels/cycles.py: cycle_stream_kernel) ---------


def _vector_pieces(head: int, a: int, n: int):
    """Bytes ``[a, a + n)`` of a row starting at phase ``head``, cut where 16-byte vectors end (one copy each)."""
    x = a
    while x < a + n:
        end = min(a + n, x + 16 - (head + x) % 16)
        yield x, end
        x = end


def emulate_row_cycles_chunked(data: np.ndarray, lead: tuple, lead_shifts: tuple, row_shift: int, piece: int,
                               blocks: int, chunk: int, ring: int, head0: int = 0, first_rows_in_smem: bool = True,
                               policy: str = "random", seed: int = 0, *, saved_first: bool = True,
                               wait_pending: int = None) -> np.ndarray:
    """Roll ``data`` (``R`` rows of ``seg`` bytes, uint8) as ``cycle_stream_kernel`` does, under a hostile scheduler.

    The kernel's index math (``segment_table``, ``source_row``,
    ``chunk_span``, ``source_run``) and protocol with ``blocks`` virtual
    blocks: pre-read tickets copy first rows that are not kept in shared
    memory to scratch and publish a flag; a walk stages each (step, chunk)
    unit's source runs into ring buffer ``u % ring`` as one copy group,
    ``ring - 1`` units ahead of writing, and before writing unit ``u`` waits
    as ``cp.async.wait_group(ring - 1)`` does: every group of the block but
    the newest ``ring - 1`` has landed. Each 16-byte vector copy lands
    (reads memory, fills its buffer bytes) whenever the scheduler picks
    before that. Ring buffers start poisoned, so a write from a copy that
    has not landed is wrong. ``head0`` sets where chunks fall (they are
    16-byte aligned in memory).

    ``saved_first=False`` (the saved first row staged after the ring's
    first units) and ``wait_pending`` (the wait's count, ``ring - 1`` in the
    kernel) exist to show the tests catch a broken ordering.
    """
    from .._schedules.rowperm import MAX_LEAD, source_row
    from .._backends.cuda.kernels.cycles import chunk_span, chunks_per_row, segment_table, source_run

    rng = random.Random(seed)
    rows, seg = data.shape
    mem = data.reshape(-1).copy()
    wait_pending = ring - 1 if wait_pending is None else wait_pending
    dims = (1,) * (MAX_LEAD - len(lead)) + tuple(lead)
    offs = (0,) * (MAX_LEAD - len(lead_shifts)) + tuple(lead_shifts)
    table = segment_table(tuple(lead), tuple(lead_shifts), piece)
    nseg = len(table) // 3
    chunks = chunks_per_row(seg, chunk)
    scratch: dict = {}
    flags: set = set()
    counter = [0]
    pending: list = []  # (block, group, land): one vector copy each; ``land()`` reads memory and fills a buffer
    groups = {b: [] for b in range(blocks)}  # each block's groups in issue order: [id, copies in flight]
    buffers = {b: [np.full(chunk, 0xA5, np.uint8) for _ in range(ring)] for b in range(blocks)}
    saved = {b: np.full(seg, 0x5A, np.uint8) for b in range(blocks)}

    def source(d):
        return int(source_row(d, *dims, *offs))

    def head_of(row):
        return (head0 + row * seg) % 16

    def commit(b, copies):
        """One copy group of block ``b``: ``copies`` are ``(read, fill)`` pairs, in flight until they land."""
        group = [len(groups[b]), len(copies)]
        groups[b].append(group)
        for read, fill in copies:
            pending.append((b, group, lambda read=read, fill=fill: fill(read())))

    def waited(b, allowed):
        """``cp.async.wait_group(allowed)``: every group but the newest ``allowed`` has landed."""
        older = groups[b][:-allowed] if allowed else groups[b]
        return all(group[1] == 0 for group in older)

    def run_copies(b, target, at, get_row, head, a, n):
        """Copies of row bytes ``[a, a + n)`` (the row's current bytes from ``get_row()``) into
        ``target[at:at + n]``, one a vector."""
        out = []
        for x0, x1 in _vector_pieces(head, a, n):
            def read(x0=x0, x1=x1):
                return get_row()[x0:x1].copy()

            def fill(values, x0=x0, x1=x1):
                target[at + x0 - a:at + x1 - a] = values
            out.append((read, fill))
        return out

    def row_reader(row):
        return lambda: mem[row * seg:(row + 1) * seg]

    def block_program(b):
        while True:
            ticket = counter[0]
            counter[0] += 1
            yield "go"
            if ticket >= 2 * nseg:
                return
            if ticket < nseg:
                if table[3 * ticket + 2] != ticket or not first_rows_in_smem:
                    first = int(table[3 * ticket])
                    slot = np.empty(seg, np.uint8)
                    commit(b, run_copies(b, slot, 0, row_reader(first), head_of(first), 0, seg))
                    while not waited(b, 0):
                        yield "wait"
                    scratch[ticket] = slot
                    flags.add(ticket)
                    yield "go"
                continue
            g = ticket - nseg
            d, steps, following = (int(x) for x in table[3 * g:3 * g + 3])
            whole = following == g and first_rows_in_smem
            if not whole:
                while g not in flags:
                    yield "wait"

            def stage_saved():
                commit(b, run_copies(b, saved[b], 0, row_reader(d), head_of(d), 0, seg))

            def stage_unit(u):
                """Stage unit ``u`` into buffer ``u % ring`` (a generator: the last step may wait for a flag)."""
                step, k = divmod(u, chunks)
                if step >= steps:
                    commit(b, [])  # empty groups keep the count
                    return
                row = d
                for _ in range(step):
                    row = source(row)
                src = source(row)
                lo, hi = chunk_span(k, chunk, seg, head_of(row))
                last = step == steps - 1
                if lo >= hi or (last and whole):
                    commit(b, [])
                    return
                a, len_a = source_run(lo, hi, row_shift, seg)
                if last:
                    if k == 0:
                        while following not in flags:
                            yield "wait"
                    get = (lambda: scratch[following])
                else:
                    get = row_reader(src)
                buf = buffers[b][u % ring]
                commit(b, run_copies(b, buf, 0, get, head_of(src), a, len_a) +
                       run_copies(b, buf, len_a, get, head_of(src), 0, hi - lo - len_a))

            if whole and saved_first:
                stage_saved()
            for u in range(ring - 1):
                yield from stage_unit(u)
            if whole and not saved_first:
                stage_saved()
            row, src = d, source(d)
            for u in range(steps * chunks):
                yield from stage_unit(u + ring - 1)
                while not waited(b, wait_pending):
                    yield "wait"
                step, k = divmod(u, chunks)
                lo, hi = chunk_span(k, chunk, seg, head_of(row))
                if lo < hi:
                    a, len_a = source_run(lo, hi, row_shift, seg)
                    if whole and step == steps - 1:
                        window = np.concatenate([saved[b][a:a + len_a], saved[b][:hi - lo - len_a]])
                    else:
                        window = buffers[b][u % ring][:hi - lo]
                    mem[row * seg + lo:row * seg + hi] = window
                yield "go"
                if k == chunks - 1:
                    row, src = src, source(src)

    def land(entry):
        _, group, copy_lands = entry
        copy_lands()
        group[1] -= 1

    live = {b: block_program(b) for b in range(blocks)}
    _drive_blocks(live, pending, land, policy, rng, counter, blocks,
                  lambda: f"chunked row-cycles: blocks {sorted(live)} all wait; flags {sorted(flags)} of {nseg}")
    return mem.reshape(rows, seg)


# --- the CPU's chain-lanes: lanes that share nothing, under any interleaving -------------------------

#: Orders ``emulate_free_lanes`` runs the lanes in: one after another, the last first, item by item in a
#: random interleaving, and round robin.
FREE_POLICIES = ("in-order", "reverse", "random", "round-robin")


class RaceError(AssertionError):
    """A lane read row bytes that a lane had already overwritten."""


def _free_lane_actions(row, scratch, written, n, k, tile_bytes, ring, table, m_max, ring_at, first, end, direct):
    """Lane ``[first, end)`` of ``rotate._backends.cpu.kernels._chain_walk``, an action at a time (a generator): each item's
    read into the ring, each write back (``direct``: ``SELF`` pieces of other tiles straight from the row),
    exactly as the runner orders them, byte by byte."""
    items = S.TILE_FIELDS * m_max

    def read_row(z, count, tile):
        if written[z:z + count].any():
            raise RaceError(f"tile {tile} read row bytes {z}..{z + count} after a write")
        return row[z:z + count].copy()

    for position in range(first, end + ring - 1):
        if position < end:
            packed = int(table[items + position])
            tile = S.item_tile(packed)
            x0, x1 = S.tile_dest(n, 0, tile_bytes, tile)
            slot = ring_at + ((position - first) % ring) * tile_bytes - x0
            x = x0
            run = 0
            while x < x1:
                w, z, stop = S.source_run(n, k, 0, tile_bytes, x, x1)
                count = stop - x
                kind = S.kind_at(S.item_piece_kinds(packed), run)
                if kind == S.PRE:
                    entry = S.TILE_FIELDS * w
                    src = int(table[entry + S.T_OFFSET]) + z - int(table[entry + S.T_LO])
                    scratch[slot + x:slot + x + count] = scratch[src:src + count]
                elif not direct or kind != S.SELF or w == tile:
                    scratch[slot + x:slot + x + count] = read_row(z, count, tile)
                run += 1
                x = stop
            yield
        oldest = position - (ring - 1)
        if oldest >= first:
            packed = int(table[items + oldest])
            tile = S.item_tile(packed)
            x0, x1 = S.tile_dest(n, 0, tile_bytes, tile)
            slot = ring_at + ((oldest - first) % ring) * tile_bytes - x0
            x = x0
            run = 0
            while x < x1:
                w, z, stop = S.source_run(n, k, 0, tile_bytes, x, x1)
                if direct and S.kind_at(S.item_piece_kinds(packed), run) == S.SELF and w != tile:
                    row[x:stop] = read_row(z, stop - x, tile)
                else:
                    row[x:stop] = scratch[slot + x:slot + stop]
                run += 1
                x = stop
            written[x0:x1] = True
            yield


def emulate_free_lanes(row, k, tile_bytes, ring, table, scratch_row, lane_steps, lanes, policy="random",
                       seed=0, direct=False):
    """Run ``chain-lanes`` (or ``chain-serial``: one lane) on the bytes ``row`` (rotated left by ``k``, in
    place) from its plan table, the lanes interleaved as ``policy`` says (``FREE_POLICIES``).

    The pre-read phase copies each lane's share of the listed spans (``_chain_pre_part``'s split, the lanes
    in a random order), then the lanes' walks run with no waits (``direct``: as the runner's ``direct``
    option copies), an action at a time in the policy's order:
    whatever order threads run them in must give ``numpy.roll``'s bytes. Scratch starts poisoned (0xA5);
    a read of row bytes after any lane wrote them raises ``RaceError``. Returns the scratch.
    """
    n = len(row)
    m_max = S.max_tiles(n, tile_bytes)
    m = S.tile_count(n, 0, tile_bytes)
    rng = random.Random(seed)
    total = scratch_row - 16
    lane_bytes = ring * tile_bytes
    scratch = np.full(scratch_row + lanes * lane_bytes, 0xA5, np.uint8)
    listed = S.pre_list(m_max)
    shares = list(range(lanes))
    rng.shuffle(shares)
    for lane in shares:
        lo, hi = total * lane // lanes, total * (lane + 1) // lanes
        for i in range(int(table[listed])):
            entry = S.TILE_FIELDS * int(table[listed + 1 + i])
            offset = int(table[entry + S.T_OFFSET])
            if lo <= offset < hi:
                start = int(table[entry + S.T_LO])
                stop = min(n, start + 16 * int(table[entry + S.T_VECS]))
                scratch[offset:offset + stop - start] = row[start:stop]
    written = np.zeros(n, bool)
    walks = [_free_lane_actions(row, scratch, written, n, k, tile_bytes, ring, table, m_max,
                                scratch_row + lane * lane_bytes, lane * lane_steps, min(m, (lane + 1) * lane_steps),
                                direct)
             for lane in range(lanes)]
    live = list(range(lanes))
    if policy == "reverse":
        live.reverse()
    turn = 0
    while live:
        if policy == "random":
            pick = rng.randrange(len(live))
        elif policy == "round-robin":
            pick = turn % len(live)
            turn += 1
        elif policy in ("in-order", "reverse"):
            pick = 0
        else:
            raise ValueError(f"unknown policy {policy!r}")
        try:
            next(walks[live[pick]])
        except StopIteration:
            live.pop(pick)
    return scratch
