"""CUDA kernels of ``column-panels``: ``roll_rows`` along an axis that is not contiguous in memory.

Lanes along axis ``a`` of a C-ordered array of shape ``(outer, n, inner)``
are columns: item ``j`` of lane ``(o, i)`` sits at row ``j`` of block ``o``,
``pitch = inner * itemsize`` bytes after item ``j - 1``. A block takes a
*strip*: the same ``strip`` bytes of every one of a block's ``n`` rows, so
each lane it holds is whole. It reads the strip row by row into its panel,
waits at a barrier, and writes each row back, every unit (the widest power of
two up to 8 bytes that items and the array's address are made of) from its
lane's source row ``(j - shift) mod n``. Rows are read and written in
``word``-byte words (the widest power of two up to 8 that the pitch and the
address allow, a unit or several side by side), so a warp moves whole row
segments: every byte read once and written once, one launch, in place.

* ``panel_kernel``: the panel in shared memory (strips of ``n`` rows that
  fit a block's budget);
* ``staged_kernel``: longer lanes; the block's slot of global scratch holds
  the strip lane by lane (each unit column's rows back to back), filled and
  read back through a tile of rows in shared memory, so both sides move in
  runs of 32 units: twice the traffic of the panel, all of it coalesced.

Strips are disjoint and no block waits for another, so any order and any
residency finishes. A strip is at most a block's threads wide (in words); a
thread keeps one word position of the strip and takes every
``threads // strip``-th row, holding ``unroll`` words (the planner's) between
its loads and its stores, so a warp has several loads in flight and no index is divided in
the loops.
"""

from __future__ import annotations

import functools

from numba import cuda, int64, uint8, uint16, uint32, uint64

from .memops import SIMULATED

#: Units of a strip whose shifts a block keeps in shared memory (a strip of 512 bytes of 1-byte items).
MAX_STRIP_UNITS = 512

_WORD_TYPES = {1: uint8, 2: uint16, 4: uint32, 8: uint64}


def strip_count(pitch_words: int, strip_words: int) -> int:
    """Strips a row is cut into (the last may be narrower)."""
    return -(-pitch_words // strip_words)


@functools.lru_cache(maxsize=None)
def _shift_reader(word: int, unit: int, threads: int):
    """``strip_shifts``: the device function both kernels read a strip's shifts with."""

    @cuda.jit(device=True)
    def strip_shifts(shifts, stride, rot, o, x0, units, lanes_per_row, itemsize, n, tid):
        """Each unit column's shift, reduced to ``[0, n)``, into ``rot`` (the strip's units from byte
        ``x0 * word`` of a row)."""
        i = tid
        while i < units:
            lane = o * lanes_per_row + (x0 * word + i * unit) // itemsize
            s = shifts[lane * stride] % n
            if s < 0:
                s += n
            rot[i] = s
            i += threads

    return strip_shifts


@functools.lru_cache(maxsize=None)
def _bodies(word: int, unit: int, threads: int, unroll: int):
    """The panel kernel's device functions, for ``word``-byte words of ``unit``-byte units."""
    if word % unit or word not in _WORD_TYPES or unit not in _WORD_TYPES:
        raise ValueError(f"column-panels needs word and unit of 1, 2, 4 or 8 bytes, the unit dividing the word; "
                         f"got word {word}, unit {unit}")
    wtype = _WORD_TYPES[word]
    per = word // unit
    unit_bits = 8 * unit
    unit_mask = uint64((1 << unit_bits) - 1)

    strip_shifts = _shift_reader(word, unit, threads)

    @cuda.jit(device=True)
    def load_strip(words, panel, base, pitch_w, sw, n, tid):
        """The strip's rows into ``panel`` (``sw`` words a row): a thread keeps one word of the row and
        takes every ``threads // sw``-th row, ``unroll`` loads in flight before it stores them."""
        rpp = threads // sw
        if tid < rpp * sw:
            j = tid // sw
            x = tid - j * sw
            at = base + j * pitch_w + x
            p = j * sw + x
            while j < n:
                buf = cuda.local.array(unroll, wtype)
                for r in range(unroll):
                    if j + r * rpp < n:
                        buf[r] = words[at + r * rpp * pitch_w]
                for r in range(unroll):
                    if j + r * rpp < n:
                        panel[p + r * rpp * sw] = buf[r]
                j += unroll * rpp
                at += unroll * rpp * pitch_w
                p += unroll * rpp * sw

    @cuda.jit(device=True)
    def gathered(panel, rot, j, x, sw, n):
        """Word ``x`` of output row ``j``: each unit from its lane's source row."""
        if per == 1:
            src = j - rot[x]
            if src < 0:
                src += n
            return panel[src * sw + x]
        value = uint64(0)
        for k in range(per):
            src = j - rot[x * per + k]
            if src < 0:
                src += n
            value |= uint64(panel[src * sw + x]) & (unit_mask << uint64(k * unit_bits))
        return wtype(value)

    @cuda.jit(device=True)
    def store_strip(words, panel, rot, base, pitch_w, sw, n, tid):
        """Every row of the strip back, rolled lane by lane (the threads' rows and words as loaded)."""
        rpp = threads // sw
        if tid < rpp * sw:
            j = tid // sw
            x = tid - j * sw
            at = base + j * pitch_w + x
            while j < n:
                buf = cuda.local.array(unroll, wtype)
                for r in range(unroll):
                    if j + r * rpp < n:
                        buf[r] = gathered(panel, rot, j + r * rpp, x, sw, n)
                for r in range(unroll):
                    if j + r * rpp < n:
                        words[at + r * rpp * pitch_w] = buf[r]
                j += unroll * rpp
                at += unroll * rpp * pitch_w

    @cuda.jit(device=True)
    def roll_strips(words, panel, shifts, stride, outer, n, pitch_w, strip_w, lanes_per_row, itemsize, rot):
        """Strips by block, grid-stride: each one's shifts, its rows in, a barrier, its rows out."""
        tid = int64(cuda.threadIdx.x)
        strips = (pitch_w + strip_w - 1) // strip_w
        item = int64(cuda.blockIdx.x)
        while item < outer * strips:
            o = item // strips
            x0 = (item - o * strips) * strip_w
            sw = min(strip_w, pitch_w - x0)
            base = o * n * pitch_w + x0
            strip_shifts(shifts, stride, rot, o, x0, sw * per, lanes_per_row, itemsize, n, tid)
            load_strip(words, panel, base, pitch_w, sw, n, tid)
            cuda.syncthreads()  # the whole strip read (and its shifts known) before any row is written
            store_strip(words, panel, rot, base, pitch_w, sw, n, tid)
            cuda.syncthreads()  # the panel and shifts free for the next strip
            item += cuda.gridDim.x

    return wtype, roll_strips


@functools.lru_cache(maxsize=None)
def panel_kernel(word: int, unit: int, threads: int, unroll: int = 4):
    """``kernel(words, shifts, stride, outer, n, pitch_w, strip_w, lanes_per_row, itemsize)``: strips in
    shared memory (dynamic: ``n * strip_w`` words; ``word``-typed arrays, sizes in words)."""
    wtype, roll_strips = _bodies(word, unit, threads, unroll)
    jit_options = {} if SIMULATED else {"launch_bounds": threads}

    @cuda.jit(**jit_options)
    def kernel(words, shifts, stride, outer, n, pitch_w, strip_w, lanes_per_row, itemsize):
        panel = cuda.shared.array(0, wtype)
        rot = cuda.shared.array(MAX_STRIP_UNITS, int64)
        roll_strips(words, panel, shifts, stride, outer, n, pitch_w, strip_w, lanes_per_row, itemsize, rot)

    return kernel


def staged_tile_rows(threads: int, strip_w: int, unroll: int) -> int:
    """Rows of a staged strip's tile: what the block's threads load in one round of ``unroll`` words each,
    in whole warps' worth (a warp moves 32 rows of one unit column between the tile and the slot)."""
    rows = (threads // strip_w) * unroll
    return -(-rows // 32) * 32


def staged_smem_bytes(threads: int, strip_w: int, word: int, unit: int, unroll: int) -> int:
    """The staged kernel's tile: ``staged_tile_rows`` rows of the strip's units, each row one unit longer
    (so a warp's 32 rows of one unit column fall in different banks)."""
    return staged_tile_rows(threads, strip_w, unroll) * (strip_w * (word // unit) + 1) * unit


@functools.lru_cache(maxsize=None)
def staged_kernel(word: int, unit: int, threads: int, unroll: int = 4):
    """``kernel(words, slots, shifts, stride, outer, n, pitch_w, strip_w, lanes_per_row, itemsize, tile_rows)``:
    strips staged in each block's slot of ``slots`` (``unit``-typed, ``n * strip_w * word / unit`` units a
    block), lane-major: each unit column's ``n`` rows back to back, so the strip goes in and comes back out
    in runs of a warp's 32 rows (through a tile in shared memory, ``tile_rows`` rows of the strip)."""
    if word % unit or word not in _WORD_TYPES or unit not in _WORD_TYPES:
        raise ValueError(f"column-panels needs word and unit of 1, 2, 4 or 8 bytes, the unit dividing the word; "
                         f"got word {word}, unit {unit}")
    wtype, utype = _WORD_TYPES[word], _WORD_TYPES[unit]
    per = word // unit
    unit_bits = 8 * unit
    unit_mask = uint64((1 << unit_bits) - 1)
    warps = threads // 32
    shifts_of = _shift_reader(word, unit, threads)
    jit_options = {} if SIMULATED else {"launch_bounds": threads}

    @cuda.jit(device=True)
    def tile_in(words, tile, base, pitch_w, sw, j0, rows, tid):
        """Rows ``j0 .. j0 + rows`` of the strip into the tile as units (a thread's words as in the panel
        kernel)."""
        rpp = threads // sw
        if tid < rpp * sw:
            jl = tid // sw
            x = tid - jl * sw
            stride_u = sw * per + 1
            while jl < rows:
                buf = cuda.local.array(unroll, wtype)
                for r in range(unroll):
                    if jl + r * rpp < rows:
                        buf[r] = words[base + (j0 + jl + r * rpp) * pitch_w + x]
                for r in range(unroll):
                    if jl + r * rpp < rows:
                        at = (jl + r * rpp) * stride_u + x * per
                        for k in range(per):
                            tile[at + k] = utype((uint64(buf[r]) >> uint64(k * unit_bits)) & unit_mask)
                jl += unroll * rpp

    @cuda.jit(device=True)
    def tile_out(words, tile, base, pitch_w, sw, j0, rows, tid):
        """The tile's rows back to rows ``j0 .. j0 + rows`` of the strip, units joined into words."""
        rpp = threads // sw
        if tid < rpp * sw:
            jl = tid // sw
            x = tid - jl * sw
            stride_u = sw * per + 1
            while jl < rows:
                at = jl * stride_u + x * per
                value = uint64(0)
                for k in range(per):
                    value |= uint64(tile[at + k]) << uint64(k * unit_bits)
                words[base + (j0 + jl) * pitch_w + x] = wtype(value)
                jl += rpp

    @cuda.jit(**jit_options)
    def kernel(words, slots, shifts, stride, outer, n, pitch_w, strip_w, lanes_per_row, itemsize, tile_rows):
        tile = cuda.shared.array(0, utype)
        rot = cuda.shared.array(MAX_STRIP_UNITS, int64)
        tid = int64(cuda.threadIdx.x)
        lane = tid % 32
        warp = tid // 32
        slot = int64(cuda.blockIdx.x) * n * strip_w * per
        strips = (pitch_w + strip_w - 1) // strip_w
        item = int64(cuda.blockIdx.x)
        while item < outer * strips:
            o = item // strips
            x0 = (item - o * strips) * strip_w
            sw = min(strip_w, pitch_w - x0)
            base = o * n * pitch_w + x0
            units = sw * per
            stride_u = units + 1
            shifts_of(shifts, stride, rot, o, x0, units, lanes_per_row, itemsize, n, tid)
            # In: each tile of rows to the slot, unit column by unit column (a warp: 32 rows of one column).
            j0 = int64(0)
            while j0 < n:
                rows = min(tile_rows, n - j0)
                tile_in(words, tile, base, pitch_w, sw, j0, rows, tid)
                cuda.syncthreads()
                u = warp
                while u < units:
                    jl = lane
                    while jl < rows:
                        slots[slot + u * n + j0 + jl] = tile[jl * stride_u + u]
                        jl += 32
                    u += warps
                cuda.syncthreads()  # the tile free for the next rows
                j0 += tile_rows
            # Out: each tile of rows from its lanes' source rows in the slot (runs of 32 but at a wrap).
            j0 = int64(0)
            while j0 < n:
                rows = min(tile_rows, n - j0)
                u = warp
                while u < units:
                    jl = lane
                    while jl < rows:
                        src = j0 + jl - rot[u]
                        if src < 0:
                            src += n
                        tile[jl * stride_u + u] = slots[slot + u * n + src]
                        jl += 32
                    u += warps
                cuda.syncthreads()
                tile_out(words, tile, base, pitch_w, sw, j0, rows, tid)
                cuda.syncthreads()  # the tile free for the next rows
                j0 += tile_rows
            item += cuda.gridDim.x

    return kernel
