"""Neighbouring input pairs.

The generators here reproduce the input patterns StatDP uses (Ding et al., CCS 2018; theory.md §5).
Every generator yields each pair in both orders. The engine audits every pair in both directions
anyway, so it collapses (D, D') and (D', D) into one unordered pair and draws each input's samples
once.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
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

    StatDP's patterns (Ding et al., CCS 2018) against the base (1, …, 1): the one-differ pairs
    plus (2, 0, …, 0), (0, 2, …, 2), (2, …, 2, 0, …, 0) half-half, (2, …, 2), (0, …, 0), and the
    "X" pair (1, …, 1, 0, …, 0) vs (0, …, 0, 1, …, 1). The four patterns with one odd coordinate
    also appear with it last, (1, …, 1, 0), (1, …, 1, 2), (0, …, 0, 2), (2, …, 2, 0): a
    mechanism that reads its answers in order (SVT) treats the first and the last answer
    differently. On SVT4 (ε = 0.1, 10 queries) the output ⊥⁹⊤ on (1, …, 1) vs (2, …, 2, 0) has
    log-ratio 0.1749 at probability 0.0085, against 0.1725 at 0.0167 for ⊥⁵⊤ on the half-half
    pair, the best on StatDP's patterns; at 5·10^7 runs per input the first certifies ~0.173,
    the second ~0.171 (true ε 0.175). Both orders of every pair are listed.
    """
    n = _check_length(length)
    base = np.ones(n)
    half = n // 2 if n > 1 else 1
    patterns = []
    for first, rest in [(0, 1), (2, 1), (2, 0), (0, 2)]:
        v = np.full(n, float(rest)); v[0] = first
        patterns.append(v)
    if n > 1:
        for last, rest in [(0, 1), (2, 1), (2, 0), (0, 2)]:
            v = np.full(n, float(rest)); v[-1] = last
            patterns.append(v)
    hh = np.zeros(n); hh[:half] = 2
    patterns += [hh, np.full(n, 2.0), np.zeros(n)]
    pairs = [(base, p) for p in patterns]
    x1 = np.zeros(n); x1[:half] = 1
    x2 = np.zeros(n); x2[n - half:] = 1
    if not np.array_equal(x1, x2):
        pairs.append((x1, x2))
    return _with_swaps(pairs)


RELATIONS = ("one_differ", "all_differ")


@dataclass(frozen=True)
class PairSearch:
    """An input domain to search for neighbouring pairs, instead of a fixed list.

    Inputs are vectors of `length` values in [low, high] (integers when `integer`); neighbours
    differ under `relation`: "one_differ" (one coordinate moves by at most 1) or "all_differ"
    (every coordinate moves by at most 1, i.e. sensitivity-1 queries). `dpverify.audit` first
    runs `dpverify.input_search.find_pairs` on it (on samples kept apart from the audit's own),
    then audits the `keep` pairs found. Build one with `dpverify.pairs.search(...)`.
    """

    length: int
    low: float
    high: float
    relation: str = "all_differ"
    candidates: int = 64
    rounds: int = 4
    integer: bool = False
    keep: int = 4
    samples: int | None = None

    @property
    def distance(self) -> int:
        return 1  # the pairs searched for are neighbours

    @property
    def step(self) -> float:
        """How far a coordinate moves between neighbours: 1, or the whole range if narrower."""
        return min(1.0, self.high - self.low)


def _check_count(name, value, minimum, hint):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise InvalidPairsError(f"{name} must be an integer ≥ {minimum}, got {value!r} ({hint})")
    return int(value)


def search(length: int, low: float, high: float, relation: str = "all_differ",
           candidates: int = 64, rounds: int = 4, integer: bool = False, keep: int = 4,
           samples: int | None = None) -> PairSearch:
    """Search the domain [low, high]^length for the neighbouring pairs that leak the most.

    Pass the result as `pairs=`, to `@dpverify.mechanism` or `dpverify.audit`. The audit first
    scores StatDP's patterns moved into the domain plus `candidates` random pairs, then for
    `rounds` rounds perturbs the best ones (move a coordinate, change which coordinates differ,
    push values to the bounds), each pair scored by the bound its best event promises on a small
    search sample (`samples` runs per input; default 2^14 batched, 2^10 scalar). The `keep` best
    pairs are then audited as usual. The pairs are chosen on samples independent of the
    certifying ones, so the audit's false-alarm guarantee is unchanged.
    """
    n = _check_length(length)
    try:
        lo, hi = float(low), float(high)
    except (TypeError, ValueError):
        raise InvalidPairsError(f"low and high must be numbers, got {low!r}, {high!r}") from None
    if not (math.isfinite(lo) and math.isfinite(hi)) or not hi > lo:
        raise InvalidPairsError(f"the domain [low, high] = [{low!r}, {high!r}] must be finite with "
                                "high > low, e.g. search(length=5, low=0, high=10)")
    if relation not in RELATIONS:
        raise InvalidPairsError(f"relation must be one of {', '.join(map(repr, RELATIONS))}, got "
                                f"{relation!r}: 'one_differ' moves one coordinate by at most 1, "
                                "'all_differ' every coordinate (sensitivity-1 queries)")
    if integer and not (lo.is_integer() and hi.is_integer()):
        raise InvalidPairsError(f"integer=True needs whole-number bounds, got low={low!r}, "
                                f"high={high!r}")
    candidates = _check_count("candidates", candidates, 1, "random pairs drawn at the start")
    rounds = _check_count("rounds", rounds, 0, "rounds of local search; 0 for random search only")
    keep = _check_count("keep", keep, 1, "how many of the best pairs the audit certifies on")
    if samples is not None:
        samples = _check_count("samples", samples, 64, "search runs per input and candidate pair")
    return PairSearch(n, lo, hi, relation, candidates, rounds, bool(integer), keep, samples)


def _same(a, b) -> bool:
    try:
        return bool(np.array_equal(np.asarray(a, dtype=object), np.asarray(b, dtype=object)))
    except Exception:
        return a is b


def normalize(pairs: Iterable) -> list[tuple]:
    """Check the user's pairs and collapse both orders of a pair into one unordered pair.

    Raises InvalidPairsError for an empty list or an element that is not a 2-tuple.
    """
    if isinstance(pairs, PairSearch):
        raise InvalidPairsError(
            "this audit takes a list of pairs, not a search domain: "
            "pairs=dpverify.pairs.search(...) is searched by dpverify.audit() for (epsilon, delta) "
            "claims; elsewhere pass the pairs dpverify.input_search.find_pairs(mechanism, space) "
            "returns")
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
