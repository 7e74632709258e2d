"""Neighbouring input pairs.

The generators here reproduce the input patterns StatDP uses (Ding et al., CCS 2018; theory.md §5).
Every generator yields each pair in both orders. The engine audits every pair in both directions
anyway, so it collapses (D, D') and (D', D) into one unordered pair and draws each input's samples
once.
"""
from __future__ import annotations

from typing import Iterable

import numpy as np

from .errors import InvalidPairsError


def _with_swaps(pairs):
    out = []
    for a, b in pairs:
        out.append((a, b))
        out.append((b, a))
    return out


class PairSet(list):
    """A list of (D, D') pairs that knows how far apart its inputs are (1 for neighbours).

    The engine audits pairs at distance k against the group-privacy claim (kε, k·e^{(k−1)ε}·δ).
    """

    def __init__(self, pairs=(), distance: int = 1):
        super().__init__(pairs)
        if not isinstance(distance, (int, np.integer)) or distance < 1:
            raise InvalidPairsError(f"distance must be a positive integer, got {distance!r}")
        self.distance = int(distance)


def at_distance(pairs, k: int) -> PairSet:
    """Declare that the inputs of these pairs are k neighbour steps apart (group privacy)."""
    return PairSet(list(pairs), distance=k)


def _check_length(length):
    if not isinstance(length, (int, np.integer)) or length < 1:
        raise InvalidPairsError(f"length must be a positive integer, got {length!r}")
    return int(length)


def one_differ(length: int, distance: int = 1):
    """Pairs that differ in ONE coordinate by at most 1 (e.g. histograms under add/remove-one).

    Base a = (1, …, 1); neighbours (0, 1, …, 1) and (2, 1, …, 1). Both orders are listed.
    With distance=k the first coordinate moves by k instead (base k, neighbours 0 and 2k): the
    pairs are then k neighbour steps apart and audited against the group-privacy claim.
    """
    n = _check_length(length)
    k = distance
    base = np.full(n, float(k))
    low = base.copy(); low[0] = 0
    high = base.copy(); high[0] = 2 * k
    return PairSet(_with_swaps([(base, low), (base, high)]), distance=k)


def all_differ(length: int):
    """Pairs in which EVERY coordinate may move by up to 1 (queries of sensitivity 1; SVT, noisy max).

    The one-differ pairs plus (2, 0, …, 0), (0, 2, …, 2), (2, …, 2, 0, …, 0) half-half, (2, …, 2),
    (0, …, 0) against the base (1, …, 1), and the "X" pair (1, …, 1, 0, …, 0) vs (0, …, 0, 1, …, 1).
    Both orders are listed.
    """
    n = _check_length(length)
    base = np.ones(n)
    half = n // 2 if n > 1 else 1
    patterns = []
    for first, rest in [(0, 1), (2, 1), (2, 0), (0, 2)]:
        v = np.full(n, float(rest)); v[0] = first
        patterns.append(v)
    hh = np.zeros(n); hh[:half] = 2
    patterns += [hh, np.full(n, 2.0), np.zeros(n)]
    pairs = [(base, p) for p in patterns]
    x1 = np.zeros(n); x1[:half] = 1
    x2 = np.zeros(n); x2[n - half:] = 1
    if not np.array_equal(x1, x2):
        pairs.append((x1, x2))
    return _with_swaps(pairs)


def _same(a, b) -> bool:
    try:
        return bool(np.array_equal(np.asarray(a, dtype=object), np.asarray(b, dtype=object)))
    except Exception:
        return a is b


def normalize(pairs: Iterable) -> list[tuple]:
    """Check the user's pairs and collapse both orders of a pair into one unordered pair.

    Raises InvalidPairsError for an empty list or an element that is not a 2-tuple.
    """
    if pairs is None:
        raise InvalidPairsError(
            "no neighbouring pairs given: pass pairs=[(D, D_prime), ...] to audit() or to "
            "@dpverify.mechanism, or a generator such as dpverify.pairs.all_differ(length=5)")
    try:
        items = list(pairs)
    except TypeError:
        raise InvalidPairsError(f"pairs must be a list of (D, D') tuples, got {type(pairs).__name__}")
    unique: list[tuple] = []
    for i, item in enumerate(items):
        if not isinstance(item, (tuple, list)) or len(item) != 2:
            raise InvalidPairsError(f"pairs[{i}] must be a (D, D') 2-tuple, got {item!r}")
        a, b = item
        if _same(a, b):
            raise InvalidPairsError(f"pairs[{i}] has D == D'; a neighbouring pair must differ")
        if any((_same(a, u) and _same(b, v)) or (_same(a, v) and _same(b, u)) for u, v in unique):
            continue
        unique.append((a, b))
    if not unique:
        raise InvalidPairsError("the pair list is empty: give at least one (D, D') pair")
    return unique
