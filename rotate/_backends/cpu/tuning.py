"""The CPU backend's tuning policy (rotate/_backends/cpu/ and rotate/_backends/cpu/lanes.py plan from it).

Every value here is a planner's choice; ``docs/tuning.md`` ("CPU") says why
each is what it is. Values the compiled kernels bake in at compile time are
not here (they cannot follow an override): they are the kernels' own
constants.
"""

from __future__ import annotations

import dataclasses
from typing import Optional, Tuple

from ..._core.tuning import Policies, Policy


@dataclasses.dataclass(frozen=True)
class CpuTuning(Policy):
    #: Total scratch one call may allocate, split between lanes (a caller's max_scratch_bytes tightens it).
    scratch_bytes: int = 8 << 20
    #: Block-swap tile per lane: small enough to stay in L1/L2 while it is bounced.
    tile_bytes: int = 16 << 10
    #: Rows up to this size are rotated by a copy loop instead of memmove calls.
    small_row_bytes: int = 256
    #: A lane (a thread's share) needs this much work to pay for waking a thread.
    min_lane_bytes: int = 1 << 20
    #: Lanes (threads) a call uses; None: numba's thread count, less the cores other processes keep busy.
    lanes: Optional[int] = None
    #: Plans use no more threads than other processes leave free (/proc/loadavg); the test suite turns it
    #: off so its plans do not depend on what else runs.
    adapt_to_load: bool = True
    #: The chain (chain-serial on one lane, chain-lanes on several): tile sizes tried (16 KiB tiles ran
    #: n/3 about 20% slower than 64 KiB ones on one thread; smaller ones pre-read less on random shifts),
    #: and the ring of tiles read ahead of the write.
    chain_tile_bytes: Tuple[int, ...] = (64 << 10, 32 << 10, 16 << 10)
    chain_ring: int = 4
    #: Chain steps tried a tile size beyond ``q`` and ``q + 1``: those of the shortest lattice vectors
    #: (rotate/_schedules/free_lanes.py), which keep a random shift's pre-reads near
    #: sqrt(n T) bytes a lane where ``q`` and ``q + 1`` pre-read up to half the row.
    chain_tries: int = 6
    #: What the chain planner charges an item (a tile) in bytes of traffic, against three bytes a
    #: pre-read byte: a smaller tile pre-reads less but walks more items (16 KiB tiles cost about
    #: 0.5 us an item more than 64 KiB ones on one thread, docs/tuning.md).
    chain_item_bytes: int = 8192
    #: What the chain planner charges a byte its walk keeps in the ring (read ahead of its writer in the
    #: lane: copied row -> ring -> row, two in-cache copies more than a straight one), in bytes of traffic
    #: against three a pre-read byte; ``chain_ring_samples`` tiles estimate those bytes a candidate.
    chain_ring_byte_cost: int = 1
    chain_ring_samples: int = 64
    #: The chain copies a piece whose writer comes later in its lane straight from the row when it writes
    #: the item, not through the ring (unless those copies would alias at 4 KiB): one copy, not two.
    chain_direct: bool = True
    #: Spare scratch bytes that let chain-serial place its ring away from 4 KiB aliasing with the row,
    #: for tiles of at least that size; the plan hands the kernel what it kept.
    alias_slack: int = 4096
    #: roll_rows: contiguous lanes up to this many bytes go to the short-lane kernels (word rotation in a
    #: register, or a copy loop through the thread's scratch row) rather than memmove calls.
    small_lane_bytes: int = 256
    #: roll_rows' short lanes of two words or more: shifts reduced this many lanes ahead into scratch.
    shift_block: int = 64
    #: roll_rows: contiguous lanes up to this many bytes that fit the scratch row go through it whole
    #: (memcpy out, two memcpys back: the lane stays in cache between them).
    copy_lane_bytes: int = 16 << 10
    #: roll_rows' byte-window lanes of 8 up to this many bytes are built as two words in registers
    #: (9 B lanes: 4.0 ns a lane in registers, 5.2 ns through scratch); two words hold at most 16 bytes.
    two_words_max: int = 16
    #: roll_rows' lanes of at least this many whole 4- or 8-byte words go to the byte windows (doubled
    #: through scratch in 16-byte copies) instead of the word loop of funnel shifts; 0: never.
    window_min_words: int = 4
    #: A multi-axis roll whose innermost rolled axis, rolled alone, is a roll of rows of at most this
    #: many bytes (``small-rows-registers``) takes that axis in a pass of its own: the one pass would cut
    #: every such row into pieces of a few bytes (docs/tuning.md, "CPU: multi-axis rolls").
    split_inner_row_bytes: int = 64
    #: ... on arrays of at least this many bytes: below it the one pass takes microseconds, and a second
    #: pass only adds a kernel for a first call to compile (a (3, 4) fftshift's first call 1.2 -> 2.2 s).
    split_min_bytes: int = 1 << 20
    #: ``multi-axis-cycles`` walks its cycles a block (everything after the first rolled axis) at a time, each
    #: block a random access: blocks under this many bytes wait on memory latency more than they move, and
    #: the roll takes a pass an axis instead (docs/tuning.md, "CPU: multi-axis rolls").
    cycle_min_block_bytes: int = 1024
    #: Where the caller gave no max_scratch_bytes and a block of the first rolled axis passes
    #: ``scratch_bytes``, ``multi-axis-cycles`` may take up to this share of the array for its blocks
    #: rather than leave that axis a pass of its own (as the GPU's ``chain_default_share``).
    multiaxis_default_share: float = 1 / 8

    def __post_init__(self) -> None:
        self._seal()

    __hash__ = Policy._cached_hash


DEFAULT = CpuTuning()

policies = Policies("CPU", lambda hardware: DEFAULT)
#: The policy plans are made with now (the default, with the override's fields).
current = policies.current
#: ``with override(tile_bytes=64): ...``: the one way tests and probes change CPU tuning.
override = policies.override
