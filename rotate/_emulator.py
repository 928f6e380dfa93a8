"""A CPU emulator of the GPU short schedule, for testing it under hostile interleavings.

It runs exactly the ticket decoding and wait ranges the CUDA kernel runs
(the ``rotate._schedule`` functions), with ``blocks`` virtual resident
blocks whose steps a scheduler interleaves in any order: at random, always
the highest ticket first, always the lowest, or the most recently drawn.
Each block does what a kernel block does, phase by phase:

    source landed -> publish "read done", draw a ticket ahead -> wait for
    the seam chunks the next ticket reads -> start the next ticket's
    copies -> wait for the readers of its destination -> write this tile

Data moves byte by byte (the kernel's 16-byte over-copy only reads bytes it
discards). The emulator raises ``Deadlock`` when no block can move while
work remains, and ``ScheduleError`` when a ticket waits for a ticket that is
not smaller than its own (the invariant docs/design.md proves). Tests
compare the result with ``numpy.roll``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import numpy as np

from . import _schedule as S

POLICIES = ("random", "highest", "lowest", "newest")


class Deadlock(RuntimeError):
    """No block can make progress, yet tickets remain."""


class ScheduleError(AssertionError):
    """A ticket waited for a ticket that is not earlier than its own."""


@dataclass
class _Block:
    ticket: int = -1       # the ticket whose data is (or will be) in the current buffer
    next_ticket: int = -1  # read into the other buffer while this one is written
    ahead: int = -1        # drawn one round ahead of being started
    phase: str = "draw"
    pending: list = field(default_factory=list)  # issued reads not yet landed: [(ticket, buffer)]
    buffers: dict = field(default_factory=dict)  # ticket -> {position: byte}


def emulate(data: np.ndarray, rows: int, n: int, k: int, head0: int, tile_bytes: int,
            blocks: int, policy: str = "random", seed: int = 0) -> np.ndarray:
    """Rotate each of ``rows`` segments of ``data`` (uint8) left by ``k``, as the GPU would.

    Returns the rotated copy; ``data`` is left untouched. The phases are the
    kernel's (``rotate._cuda._kernels.short_kernel``), and an issued read
    lands at any later step the scheduler picks, as an asynchronous copy may.
    """
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {POLICIES}, got {policy!r}")
    mem = data.copy()
    chunk_slots = S.ceil_div(S.max_seam_span(n, k), tile_bytes)
    per_row = S.tickets_per_row(n, k, tile_bytes)
    total = rows * per_row
    seam_row = S.align_up(S.max_seam_span(n, k))
    scratch = np.full(rows * seam_row, 0xA5, np.uint8)  # poisoned
    done = set()
    counter = [0]
    rng = random.Random(seed)
    state = [_Block() for _ in range(blocks)]

    def draw():
        t = counter[0]
        counter[0] += 1
        return t

    def ready(t, lo, hi, base):
        if lo <= hi and base + hi >= t:
            raise ScheduleError(f"ticket {t} waits for tickets {base + lo}..{base + hi}")
        return all(base + x in done for x in range(lo, hi + 1))

    def decode(t):
        row = t // per_row
        local = t - row * per_row
        head = S.row_head(head0, row, n)
        kind, index = S.decode_ticket(n, k, head, tile_bytes, chunk_slots, local)
        return row, row * per_row, head, kind, index

    def read_ready(t):
        row, base, head, kind, index = decode(t)
        if kind != 1:
            return True
        lo, hi = S.waits_before_read(n, k, head, tile_bytes, chunk_slots, index)
        return ready(t, lo, hi, base)

    def land(t):
        """The copies of ticket t execute: read its source as memory holds it now."""
        row, base, head, kind, index = decode(t)
        rp = row * n
        buffer = {}
        if kind == 0:
            lo, hi = S.seam_bounds(n, k)
            origin = S.seam_origin(n, k, head)
            for off in range(index * tile_bytes, (index + 1) * tile_bytes):
                if lo <= origin + off < hi:
                    buffer[off] = mem[rp + origin + off]
        elif kind == 1:
            x0, xs, x1 = S.tile_parts(n, k, head, tile_bytes, index)
            left = S.is_left(n, k)
            origin = S.seam_origin(n, k, head)
            for x in range(x0, x1):
                src = x + k if x < xs else x + k - n
                if (x >= xs) if left else (x < xs):
                    buffer[x] = scratch[row * seam_row + src - origin]
                else:
                    buffer[x] = mem[rp + src]
        return buffer

    def step(b: _Block) -> bool:
        """Advance block ``b`` by one action if it can; True if it moved.

        An issued read lands now with probability 1/2, or when the block can
        do nothing else.
        """
        if b.pending and rng.random() < 0.5:
            t = b.pending.pop(0)
            b.buffers[t] = land(t)
            return True
        if advance(b):
            return True
        if b.pending:
            t = b.pending.pop(0)
            b.buffers[t] = land(t)
            return True
        return False

    def advance(b: _Block) -> bool:
        if b.phase == "draw":  # the block's first ticket, and one ahead
            b.ticket = draw()
            b.phase = "issue_first" if b.ticket < total else "exit"
            return True
        if b.phase == "issue_first":
            if not read_ready(b.ticket):
                return False
            b.pending.append(b.ticket)
            b.ahead = draw()
            b.phase = "landed"
            return True
        if b.phase == "exit":
            return False
        row, base, head, kind, index = decode(b.ticket)
        if b.phase == "landed":  # wait_copies + barrier
            if b.ticket in b.pending:
                b.pending.remove(b.ticket)
                b.buffers[b.ticket] = land(b.ticket)
            if kind == 0:
                for off, value in b.buffers[b.ticket].items():
                    scratch[row * seam_row + off] = value
            done.add(b.ticket)
            if b.ahead < 0:
                b.ahead = draw()
            b.next_ticket, b.ahead = b.ahead, (draw() if b.ahead < total else b.ahead)
            b.phase = "wait_next_read"
            return True
        if b.phase == "wait_next_read":
            if b.next_ticket < total:
                if not read_ready(b.next_ticket):
                    return False
                b.pending.append(b.next_ticket)
            b.phase = "wait_write"
            return True
        if b.phase == "wait_write":
            if kind == 1:
                t_lo, t_hi, c_lo, c_hi = S.waits_before_write(n, k, head, tile_bytes, chunk_slots, index)
                if not (ready(b.ticket, t_lo, t_hi, base) and ready(b.ticket, c_lo, c_hi, base)):
                    return False
            b.phase = "write"
            return True
        if b.phase == "write":
            if kind == 1:
                for x, value in b.buffers[b.ticket].items():
                    mem[row * n + x] = value
            del b.buffers[b.ticket]
            b.ticket = b.next_ticket
            b.phase = "landed" if b.ticket < total else "exit"
            return True
        raise AssertionError(b.phase)

    while True:
        live = [b for b in state if b.phase != "exit" or b.pending]
        if not live:
            break
        if policy == "random":
            order = live[:]
            rng.shuffle(order)
        else:
            key = {"highest": lambda b: -b.ticket, "lowest": lambda b: b.ticket,
                   "newest": lambda b: -max(b.ticket, b.next_ticket)}[policy]
            order = sorted(live, key=key)
        if not any(step(b) for b in order):
            raise Deadlock(
                f"no block can move: n={n} k={k} head0={head0} tile_bytes={tile_bytes} "
                f"blocks={blocks} tickets {[b.ticket for b in live]} phases {[b.phase for b in live]}"
            )
    return mem
