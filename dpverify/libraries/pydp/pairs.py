"""Neighbouring inputs for pydp objects, built from what each one says about its inputs.

- Numerical mechanisms (`value_pairs`): two values `sensitivity` apart (LaplaceMechanism's
  `sensitivity`, GaussianMechanism's `l2_sensitivity`), as floats or as whole numbers.
- Algorithms (`algorithm_pairs`): one privacy unit added or removed. A unit contributes
  `linf_sensitivity` records to each of `l0_sensitivity` partitions (pydp's contribution limits;
  pydp trusts the caller to enforce them), so with l0 = 1 a dataset is a list of records and
  with l0 > 1 a tuple of l0 lists, one per partition. The corners: the empty dataset against one
  unit at either bound, and a dataset of BASE_RECORDS records at one bound against the same
  plus one unit at the other bound (the largest move of a sum, mean, variance or quantile).
  Count ignores values: the empty dataset and BASE_RECORDS records against one unit more.
- Partition selection (`partition_pairs`): a partition's user count n against n + 1 in each of
  the `max_partitions_contributed` partitions a unit touches: 0 against 1 (the partition
  appears: δ; with a pre-threshold t, which drops both, t − 1 against t), and where keeping
  starts (the keep probability the strategy reports, probability_of_keep, first reaches 0.1)
  and becomes likely (first reaches 1/2: there dropping the partition is the rare event).
"""
from __future__ import annotations

import math

from ...errors import InvalidPairsError

BASE_RECORDS = 3  # records of the non-empty dataset of a pair


def value_pairs(sensitivity, dtype: str, label: str) -> list:
    """[(0, s)]: two inputs the sensitivity apart; with dtype "int", whole numbers at the
    largest whole distance ≤ s."""
    s = float(sensitivity)
    if not (s > 0 and math.isfinite(s)):
        raise InvalidPairsError(f"{label} has sensitivity {sensitivity!r}: neighbouring inputs "
                                "would be equal; pass pairs=[(x, x2), ...]")
    if dtype == "float":
        return [(0.0, s)]
    if dtype != "int":
        raise InvalidPairsError(f"dtype must be 'float' or 'int' (the type of the values "
                                f"passed to add_noise), got {dtype!r}")
    if s < 1:
        raise InvalidPairsError(f"{label}: whole numbers at most {s} apart are equal; use "
                                "dtype='float' or pass pairs=")
    return [(0, int(math.floor(s)))]


def contribution_limits(algorithm) -> tuple[int, int]:
    """(l0, linf) of an algorithm instance: partitions a unit touches and records it adds to
    each. Percentile takes neither (pydp reports 'Not set'): one record in one partition."""
    limits = []
    for attribute in ("l0_sensitivity", "linf_sensitivity"):
        value = getattr(algorithm, attribute, 1)
        limits.append(int(value) if isinstance(value, (int, float)) else 1)
    return limits[0], limits[1]


def _cast(dtype: str):
    return float if dtype == "float" else int


def _in_partitions(pairs: list, l0: int) -> list:
    """With l0 > 1 each dataset becomes a tuple of l0 partitions, the unit in every one."""
    if l0 == 1:
        return pairs
    return [(tuple(list(a) for _ in range(l0)), tuple(list(b) for _ in range(l0)))
            for a, b in pairs]


def algorithm_pairs(name: str, kwargs: dict, algorithm, label: str) -> list:
    """Datasets one privacy unit apart at the corners of the algorithm's bounds (see the module
    docstring); `algorithm` is the built instance (its contribution limits and dtype)."""
    l0, linf = contribution_limits(algorithm)
    cast = _cast(getattr(algorithm, "dtype", kwargs.get("dtype", "int")))
    n = BASE_RECORDS
    if name == "Count":
        zero = cast(0)
        return _in_partitions([([], [zero] * linf), ([zero] * n, [zero] * (n + linf))], l0)
    lower, upper = kwargs.get("lower_bound"), kwargs.get("upper_bound")
    if lower is None or upper is None:
        raise InvalidPairsError(f"{label} has no lower_bound/upper_bound: pydp then infers the "
                                "bounds from the data (with part of epsilon), and there are no "
                                "bounds to put records at; pass the bounds or pairs=[(D, D2), "
                                "...]")
    lo, hi = cast(lower), cast(upper)
    if not lo < hi:
        raise InvalidPairsError(f"{label}: lower_bound {lower!r} must be below upper_bound "
                                f"{upper!r} (as {cast.__name__}s)")
    pairs = [([], [hi] * linf), ([], [lo] * linf),
             ([lo] * n, [lo] * n + [hi] * linf), ([hi] * n, [hi] * n + [lo] * linf)]
    return _in_partitions(pairs, l0)


KEEP_LEVELS = (0.1, 0.5)  # keep probabilities whose first count makes a pair (see above)


def _first_kept_with(strategy, probability: float, start: int, limit: int = 1 << 20) -> int:
    """The smallest count n ≥ start that the strategy keeps with at least `probability` (as
    its probability_of_keep reports; a larger count is kept at least as often)."""
    n = max(start, 1)
    while strategy.probability_of_keep(n) < probability:
        n *= 2
        if n > limit:
            raise InvalidPairsError(f"the strategy keeps no partition of up to {limit} users "
                                    f"with probability {probability}; pass pairs=")
    low = max(start, n // 2)
    while low < n:  # bisection: p(low - 1) < probability <= p(n)
        mid = (low + n) // 2
        if strategy.probability_of_keep(mid) >= probability:
            n = mid
        else:
            low = mid + 1
    return n


def partition_pairs(strategy, label: str) -> list:
    """User counts one privacy unit apart, in each partition the unit touches (see the module
    docstring); a count when the unit touches one partition, else a tuple of counts."""
    first = 0
    while strategy.probability_of_keep(first + 1) == 0.0:  # a pre-threshold: nothing below it
        first += 1
        if first > 1 << 20:
            raise InvalidPairsError(f"{label} keeps no partition of up to 2^20 users; pass "
                                    "pairs=")
    counts = [(first, first + 1)]  # 0 against 1, unless a pre-threshold drops both
    for level in KEEP_LEVELS:
        n = _first_kept_with(strategy, level, first + 1)
        counts.append((n - 1, n))
    counts = list(dict.fromkeys(counts))
    m = int(strategy.max_partitions_contributed)
    if m == 1:
        return counts
    return [((a,) * m, (b,) * m) for a, b in counts]
