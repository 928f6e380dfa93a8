"""The row-cycles schedules emulated: the three-row kernel (``cycle_kernel``) and the chunked one for long
rows (``cycle_stream_kernel``), with their protocol under a hostile scheduler of virtual blocks."""

from __future__ import annotations

import random

import numpy as np

from .chain import Deadlock

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
    from ..._schedules.rowperm import MAX_LEAD, source_row
    from ..._backends.cuda.kernels.cycles import segment_table

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
    from ..._schedules.rowperm import MAX_LEAD, source_row
    from ..._backends.cuda.kernels.cycles import chunk_span, chunks_per_row, segment_table, source_run

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
