"""The CPU backend (numba ``@njit`` kernels on a team of Python threads). Private: reach it through
rotate.roll/rotate/plan/roll_rows/fftshift.

Modules: ``planner`` (which schedule, its lanes, scratch and traffic), ``params`` (one frozen type a
kind of step), ``runners`` (each type's runner, ``ROW_RUNNERS``), ``kernels`` (the serial loops a
lane runs), ``threads`` (how many lanes a call may use), ``lanes`` (``roll_rows`` and one-pass
multi-axis rolls). Two entry points do the work, each with a ``plan_*`` twin that reports what it
would do without doing it:

* ``runners.rotate_rows_inplace`` / ``planner.plan_rows`` -- ``rows`` consecutive
  segments of ``seg`` unsigned words, each rotated left by ``k``.
* ``runners.roll_strided`` / ``planner.plan_strided`` -- ``numpy.roll`` along one axis
  of an array with arbitrary (also negative) strides and any fixed-size dtype.

Algorithms (``d = min(k, seg - k)``)
------------------------------------
``buffered-shift``
    ``d`` fits the scratch budget: save the ``d`` words that wrap around, memmove
    the other ``seg - d`` words by ``d``, put the saved words back.  Traffic is
    ``2*seg + 2*chunks*d`` words, i.e. about one memcpy.  The memmove is split
    into ``chunks`` parallel pieces; a piece's source overlaps the *next*
    piece's destination by ``d`` words (the seam), so every piece's seam is
    saved before any piece moves, and each piece fills its last ``d`` words from
    its neighbour's saved seam (cyclically, so the wrap-around is the same code).
``block-swap`` / ``block-swap+buffered-shift``
    ``d`` is too large to buffer: Gries--Mills block swaps.  Each swap exchanges
    the shorter block with the far end of the longer one (so the shorter block
    lands in its final place) and leaves a smaller rotation of the remainder.
    Swaps run tile by tile through a ``tile_bytes`` cache-resident tile per
    lane, tiles spread over the lanes.  The reduction stops as soon as the
    remaining ``d`` fits the budget and finishes with ``buffered-shift``; a
    rotation by exactly half is a single swap.  Array traffic is at most 2x a
    memcpy (``4*m`` words per swap of ``m``; the tile adds ``2*m`` L1 traffic,
    counted in ``bytes_moved``).
``block-swap+fused-shift``
    When the last swap would leave a shift by a small ``e = |n - 2k|``, that
    swap and the shift are fused into one pass (every word read and written
    once; seams between lanes and the ``e`` unpaired words saved first).
    Near ``seg/2`` this is ~1x memcpy instead of ~1.5x.  Scratch
    ``lanes * (e + tile)`` words, within the same budget.
``chain-serial`` / ``chain-lanes`` / ``chain-rows``
    ``d`` too large to buffer (block swaps planned, but a single half swap):
    the GPU's chain schedule (``rotate._schedules.chain``: the same plan table
    format, tiles walked in chain order ``j, j + p, j + 2p, ...``), on one
    lane, with each row's chain positions cut into one run a lane, or
    (many rows) each lane walking its own rows. Lanes
    share nothing: every byte a lane reads that another lane writes is
    pre-read into scratch (all lanes, a phase of its own) before any lane
    writes (the next phase), so lanes never wait. Within a lane every tile is
    read into a ring of ``chain_ring`` tile buffers before the tile
    ``chain_ring - 1`` items back is written, so every reader classed
    ``SELF`` or ``RING`` has its bytes before they are overwritten, and the
    ``PRE`` bytes come from scratch. The planner picks the tile and chain
    step (``q``, ``q + 1`` or a short lattice vector's) that cost least:
    structured shifts pre-read a few KiB, random ones about ``sqrt(n T)``
    bytes a lane. One pass: every byte read and written once, against
    1.33-1.5x for block swaps and a shift.
``small-rows-copy``
    Rows of at most ``small_row_bytes``: copy the row twice into a per-lane
    scratch row and write the window at ``k`` back, one loop each (unsigned
    indices, compile-time counts for 2-8 words); rows are split over lanes.
    Avoids per-row call overhead for e.g. 10**6 rows of 8 words.
``small-rows-word-rotate``
    Rows of 2, 4 or 8 bytes made of narrower words (8 uint8, 2 float32): each
    row is one wider word, rotated by a bit rotation in a register; no scratch.

Many rows of larger segments are spread over lanes (each row rotated serially
with the algorithms above); few long rows are rotated one after another, each
using all lanes.

Strided arrays (``roll_strided``) are viewed as a grid of ``L`` rows (the roll
axis) by columns (all other element positions, and the words inside each
element).  Columns are taken in batches along the smallest-stride direction and
each batch is rolled with ``strided-buffered-shift`` (save ``d`` rows of the
batch, shift, restore) or, when even one column's ``d`` words exceed the
budget, ``strided-reversal`` (triple reversal by row swaps, no scratch, about
2x the traffic).  Words are the widest unsigned type (8, 4, 2 or 1 bytes)
dividing the itemsize and every stride, so bool, datetime, structured and
odd-sized (3, 10, 12 ...) dtypes all work without Python objects.

Scratch bound
-------------
Every call allocates at most ``min(scratch_bytes, max_scratch_bytes)`` bytes of
scratch (the tuning's ``scratch_bytes``, 8 MiB), whatever the array size, plus
O(ndim + log(seg)) integers of bookkeeping; the one exception, where the caller
gave no bound, is a one-pass multi-axis roll whose blocks need more (up to the
tuning's ``multiaxis_default_share`` of the array instead of a pass per axis).  The budget is split evenly between
lanes; when it cannot hold even one lane's scratch, the step falls back to
``reversal`` (three in-place reversals, no scratch, about 2x the traffic), so
any bound, 0 included, is met.  Those sizes are fields of the CPU tuning
policy (``rotate/_backends/cpu/tuning.py``), read at plan time: tests shrink them with
``rotate._backends.cpu.tuning.override`` to reach the large-``d`` and many-seam paths on
small arrays.

Threads
-------
Lanes are independent pieces of work run by a team of Python threads
(``rotate._backends.cpu.team``) on serial ``nogil`` kernels; their number is the tuning's
``lanes`` (default: ``numba.get_num_threads()``, which ``numba.set_num_threads``
changes) capped so that each lane gets at least ``min_lane_bytes`` of work.
A schedule with phases (seams saved before anything moves) runs one kernel a
phase. The result never depends on the number of lanes or threads;
``plan_*`` report scratch and traffic for the lane count in force when they
are called. No numba parallel region is entered, so no threading layer's
limits apply (workqueue's one region at a time, GNU OpenMP in a forked
child), and a first call compiles serial code only (two to three times
faster than ``parallel=True`` kernels: ``docs/results/cold-start-cpu.json``).

Different arrays may be rolled from different threads at once; one array
must not be rolled (or read) from two threads at once, as with any in-place
operation.
"""
