"""A CPU emulator of the GPU short schedule, for testing it under hostile interleavings.

It runs exactly the ticket decoding and wait ranges the CUDA kernel runs
(the ``rotate._schedule`` functions), with ``blocks`` virtual resident
blocks whose steps a scheduler interleaves in any order: at random, always
the highest ticket first, always the lowest, or the most recently drawn.
Each block does what a kernel block does (``rotate._cuda._kernels``):

    the seam is copied to scratch before any block starts (its own launch)
    fill the ring: draw ``buffers - 1`` tickets, start their copies
    loop: the oldest ticket's copies have landed -> publish it "read done"
          -> take the ticket drawn ahead, draw another, start the taken
          ticket's copies -> wait for the readers of the
          oldest tile's destination -> write the oldest tile

A started copy *lands* (reads memory as it is at that moment) at any later
step the scheduler picks, as an asynchronous copy may. Data moves byte by
byte (the kernel's 16-byte over-copy only reads bytes it discards). The
emulator raises ``Deadlock`` when no block can move while work remains, and
``ScheduleError`` when a ticket waits for a ticket that is not smaller than
its own (the invariant docs/design.md proves). Tests compare the result
with ``numpy.roll``.
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
    ring: list = field(default_factory=list)     # tickets whose copies were started, oldest first
    ahead: int = -1                              # drawn, not yet started
    landed: dict = field(default_factory=dict)   # ticket -> {position: byte}
    phase: str = "fill"


def emulate(data: np.ndarray, rows: int, n: int, k: int, head0: int, tile_bytes: int,
            blocks: int, policy: str = "random", seed: int = 0, buffers: int = 4) -> np.ndarray:
    """Rotate each of ``rows`` segments of ``data`` (uint8) left by ``k``, as the GPU would.

    Returns the rotated copy; ``data`` is left untouched.
    """
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {POLICIES}, got {policy!r}")
    mem = data.copy()
    per_row = S.tickets_per_row(n, tile_bytes)
    total = rows * per_row
    seam_row = S.align_up(S.max_seam_span(n, k))
    scratch = np.full(rows * seam_row, 0xA5, np.uint8)  # poisoned
    seam_lo, seam_hi = S.seam_bounds(n, k)
    for row in range(rows):  # the seam launch, before the tiles
        head = S.row_head(head0, row, n)
        origin = S.seam_origin(n, k, head)
        for pos in range(seam_lo, seam_hi):
            scratch[row * seam_row + pos - origin] = mem[row * n + pos]
    done = set()
    counter = [0]
    rng = random.Random(seed)
    state = [_Block() for _ in range(blocks)]

    def draw():
        t = counter[0]
        counter[0] += 1
        return t

    def decode(t):
        row = t // per_row
        head = S.row_head(head0, row, n)
        return row, row * per_row, head, S.decode_ticket(n, k, head, tile_bytes, t - row * per_row)

    def land(t):
        """Ticket t's copies execute: read its source as memory holds it now."""
        row, base, head, j = decode(t)
        buffer = {}
        if j >= 0:
            x0, xs, x1 = S.tile_parts(n, k, head, tile_bytes, j)
            left = S.is_left(n, k)
            origin = S.seam_origin(n, k, head)
            for x in range(x0, x1):
                src = x + k if x < xs else x + k - n
                if (x >= xs) if left else (x < xs):
                    buffer[x] = scratch[row * seam_row + src - origin]
                else:
                    buffer[x] = mem[row * n + src]
        return buffer

    def pending(b):
        return [t for t in b.ring if t < total and t not in b.landed]

    def advance(b: _Block) -> bool:
        if b.phase == "fill":
            b.ring = [draw() for _ in range(buffers - 1)]
            b.ahead = draw()
            b.phase = "top"
            return True
        if b.phase == "exit":
            return False
        t = b.ring[0]
        if t >= total:
            b.phase = "exit"
            return True
        row, base, head, j = decode(t)
        if b.phase == "top":  # wait for the oldest copies, publish, draw, start
            if t not in b.landed:
                return False
            done.add(t)
            b.ring.append(b.ahead)
            if b.ahead < total:
                b.ahead = draw()
            b.phase = "wait_write"
            return True
        if b.phase == "wait_write":
            if j >= 0:
                lo, hi = S.waits_before_write(n, k, head, tile_bytes, j)
                if lo <= hi and base + hi >= t:
                    raise ScheduleError(f"ticket {t} waits for tickets {base + lo}..{base + hi}")
                if not all(base + x in done for x in range(lo, hi + 1)):
                    return False
            b.phase = "write"
            return True
        if b.phase == "write":
            for x, value in b.landed.pop(t).items():
                mem[row * n + x] = value
            b.ring.pop(0)
            b.phase = "top"
            return True
        raise AssertionError(b.phase)

    def step(b: _Block) -> bool:
        """One action of block ``b``; a started copy lands now with probability 1/2,
        or when the block can do nothing else."""
        waiting = pending(b)
        if waiting and rng.random() < 0.5:
            t = rng.choice(waiting)
            b.landed[t] = land(t)
            return True
        if advance(b):
            return True
        if waiting:
            b.landed[waiting[0]] = land(waiting[0])
            return True
        return False

    while True:
        live = [b for b in state if b.phase != "exit"]
        if not live:
            break
        if policy == "random":
            order = live[:]
            rng.shuffle(order)
        else:
            first = lambda b: b.ring[0] if b.ring else -1  # noqa: E731
            key = {"highest": lambda b: -first(b), "lowest": first,
                   "newest": lambda b: -(b.ring[-1] if b.ring else -1)}[policy]
            order = sorted(live, key=key)
        if not any(step(b) for b in order):
            raise Deadlock(
                f"no block can move: n={n} k={k} head0={head0} tile_bytes={tile_bytes} "
                f"blocks={blocks} rings {[b.ring for b in live]} phases {[b.phase for b in live]}"
            )
    return mem
