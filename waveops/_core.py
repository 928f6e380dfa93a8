"""The backend-independent part of the wave rotate.

A *wave* is a group of lanes that execute together (a CUDA warp of 32, an
AMD wavefront of 64, the SIMD lanes of a CPU vector register).  ``rotate``
is defined once, here, on top of three backend *seams*:

``lane_id()``
    This lane's index in its wave, ``0 <= lane_id() < width()``.
``width()``
    The wave width (32 on NVIDIA, 64 on AMD CDNA, the SIMD width on a CPU).
``shuffle_idx(value, src_lane)``
    Indexed shuffle: return ``value`` as held by lane ``src_lane`` of the
    same wave, with a per-lane (divergent) ``src_lane``.

``make_rotate`` builds a backend's ``rotate`` from its ``lane_id`` and
``shuffle_idx``; the only arithmetic is `source_lane`.  A backend whose
indexed shuffle is cheaper to reach another way (AMD's ``ds_bpermute``,
SPIR-V's ``OpGroupNonUniformRotateKHR``) overrides ``rotate`` instead and
keeps the same contract.

Nothing here imports numba or numba-cuda: the functions are plain Python
that each backend compiles with its own decorator.
"""

__all__ = ["source_lane", "make_rotate", "is_pow2"]


def source_lane(lane: int, delta: int, width: int) -> int:
    """Lane read by ``lane`` in a rotate by ``delta`` within groups of ``width``.

    Lanes are split into aligned groups of ``width`` lanes (``width`` a power
    of two); lane ``lane`` reads lane ``(lane + delta) mod width`` of its own
    group.  Two's-complement ``&`` makes the modulo correct for negative and
    oversized ``delta`` without a division, so the same expression serves
    every backend and integer width.

    Parameters
    ----------
    lane : int
        The reading lane (any non-negative integer: a lane id or a flat index).
    delta : int
        Rotation distance, any integer.
    width : int
        Group width, a power of two.

    Returns
    -------
    int
        The source lane, in the same group as ``lane``.

    Raises
    ------
    TypeError
        Non-integer arguments (``&`` is not defined for them).

    Notes
    -----
    Every backend's rotate (CUDA, the CPU software wave, the AMD and SPIR-V
    lowerings) computes exactly this lane, so they agree bit for bit.  A
    ``width`` that is not a power of two gives a lane, but not a rotation.

    See Also
    --------
    waveops.rotate : The CUDA device function that reads this lane.
    waveops.cpu.rotate : The CPU software wave.

    Examples
    --------
    >>> from waveops import source_lane
    >>> [source_lane(l, 1, 4) for l in range(8)]
    [1, 2, 3, 0, 5, 6, 7, 4]
    >>> [source_lane(l, -1, 4) for l in range(4)]
    [3, 0, 1, 2]
    >>> source_lane(5, 4 * 1000 + 2, 4)
    7
    """
    return (lane & ~(width - 1)) | ((lane + delta) & (width - 1))


def make_rotate(lane_id, shuffle_idx, to_lane_int, default_width):
    """Build a backend's per-lane ``rotate`` from its seams.

    Parameters
    ----------
    lane_id : callable
        Backend seam ``lane_id() -> int32``, jit-callable.
    shuffle_idx : callable
        Backend seam ``shuffle_idx(value, src_lane) -> value``, jit-callable.
    to_lane_int : callable
        Converts a ``delta`` of any integer type to the lane integer type,
        wrapping (only the low bits matter), so that mixed signed/unsigned
        64-bit deltas never promote to float in numba's typing.
    default_width : int
        The backend's wave width, the default of ``width``.

    Returns
    -------
    callable
        ``rotate(value, delta, width=default_width)``; the backend compiles
        it (e.g. returns it from an ``@overload``).  It is the
        formula of `source_lane` written out, because backends compile
        closures over jit-callable seams but not over plain Python helpers.
    """

    def rotate(value, delta, width=default_width):
        lane = lane_id()
        d = to_lane_int(delta)
        w = to_lane_int(width)
        src = (lane & ~(w - 1)) | ((lane + d) & (w - 1))
        return shuffle_idx(value, src)

    return rotate


def is_pow2(n):
    """True when the integer ``n`` is a positive power of two.

    >>> [n for n in range(-2, 70) if is_pow2(n)]
    [1, 2, 4, 8, 16, 32, 64]
    """
    return n > 0 and (n & (n - 1)) == 0
