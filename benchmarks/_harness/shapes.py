"""Seeded shapes no threshold was tuned on: sides log-uniform, snapped to powers of two, primes near them
and powers of two plus or minus one (random_bench.py's draw, and soak.py's)."""

from __future__ import annotations

import math

#: The longest side drawn (one side may exceed it to reach a total: a 1-D array of 1 GiB).
MAX_SIDE = 1 << 17


def is_prime(n: int) -> bool:
    """Deterministic Miller-Rabin (exact below 3.3e24, far beyond any side here)."""
    if n < 2:
        return False
    small = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37)
    for p in small:
        if n % p == 0:
            return n == p
    d, r = n - 1, 0
    while d % 2 == 0:
        d, r = d // 2, r + 1
    for a in small:
        x = pow(a, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(r - 1):
            x = x * x % n
            if x == n - 1:
                break
        else:
            return False
    return True


def prime_near(x: int, lo: int, hi: int) -> int:
    p = max(x, 2)
    while not is_prime(p):
        p += 1
    if p <= hi:
        return p
    p = min(x, hi)
    while p >= 2 and not is_prime(p):
        p -= 1
    return p if p >= lo else x


def log_uniform(rng, lo: float, hi: float) -> int:
    """An integer log-uniform in [lo, hi] (lo >= 1)."""
    if hi <= lo:
        return int(lo)
    return int(min(hi, max(lo, math.floor(math.exp(rng.uniform(math.log(lo), math.log(hi + 1)))))))


def snap(rng, x: int, lo: int, hi: int) -> int:
    """``x`` as drawn (45%), or the power of two nearest to it (25%), a prime near it (15%), or that power
    of two plus or minus one (15%); kept in [lo, hi]."""
    r = rng.random()
    if r < 0.45 or x < 1:
        return x
    power = 1 << max(0, round(math.log2(x)))
    if r < 0.70:
        y = power
    elif r < 0.85:
        y = prime_near(x, lo, hi)
    else:
        y = power + (1 if rng.random() < 0.5 else -1)
    return y if lo <= y <= hi else x


def draw_shape(rng, ndim: int, elements: int, lo_e: int, hi_e: int, last=None) -> tuple:
    """``ndim`` sides whose product is about ``elements`` (within [lo_e, hi_e] elements): the sides drawn
    one by one, log-uniform from 1 to 2**17 within what the total leaves, and snapped, then one side at a
    random axis fixed to hit the total. ``last``: the last side, given (roll_rows' lane length)."""
    free = list(range(ndim - (last is not None)))
    fixed = int(rng.choice(free))
    sides = [1] * ndim
    product = 1
    if last is not None:
        sides[-1] = last
        product = last
    for axis in rng.permutation(free):
        if axis == fixed:
            continue
        room = max(1, elements // product)
        side = snap(rng, log_uniform(rng, 1, min(MAX_SIDE, room)), 1, min(MAX_SIDE, room))
        sides[axis] = side
        product *= side
    low = max(1, -(-lo_e // product))
    high = max(1, hi_e // product)
    side = min(high, max(low, round(elements / product)))
    snapped = snap(rng, side, low, high)
    sides[fixed] = snapped
    return tuple(int(s) for s in sides)
