"""Neighbouring inputs for a Tumult Core measurement, built from its input domain and metric at
distance exactly d_in (docs/theory.md §7). `build_pairs` picks a builder by (domain, metric);
each returns [(D, D'), ...] or None when it cannot build inputs of that domain (then the caller
is asked for pairs=).

Inputs are plain Python values, so that they print in a witness and go into JSON: a number for
a NumPy domain, a list for a pandas Series, a {column: list} dict for a pandas DataFrame, a dict
for a DictDomain. `draws.py` turns them into the pandas objects the measurement takes.

Series and data frames differ in size where the input metric puts inputs of different sizes at
a finite distance (SymmetricDifference), as Tumult Core's own `distance` says
(`sizes_may_differ`); under HammingDistance they keep one size and records are replaced.

Corners by default: the empty dataset against one record, a record whose value no other record
has, records at both bounds (the bounds a component was given: NoisyQuantile's `lower`/`upper`,
a transformation's clamp; `records.record_hints`).
"""
from __future__ import annotations

import math
from fractions import Fraction

from ...errors import InvalidPairsError
from .domains import element_kind, is_a
from .inputs import input_form, prepare
from .records import describe, record_hints

ATOM_SHIFT = -100  # the second atom pair sits here: a value away from zero, and negative


def as_fraction(d) -> Fraction:
    """A distance (int, Fraction, ExactNumber, sympy number) as a Fraction; an irrational one
    rounded down to a float's exact value, so a pair built from it stays within d."""
    try:
        return Fraction(str(getattr(d, "expr", d)))
    except (TypeError, ValueError):
        from tmlt.core.utils.exact_number import ExactNumber
        return Fraction(ExactNumber(d).to_float(round_up=False))


def _float_within(x: float, d: Fraction) -> float:
    """The float nearest x + d that is at most d away from x (exact arithmetic)."""
    y = float(Fraction(x) + d)
    while abs(Fraction(y) - Fraction(x)) > d:
        y = math.nextafter(y, x)
    return y


def _whole(d: Fraction, what: str) -> int:
    if d.denominator != 1:
        raise InvalidPairsError(f"{what} has neighbours only at whole distances, not d_in={d}; "
                                "pass a whole d_in")
    return int(d)


def _atom_pairs(kind, d: Fraction) -> list:
    """(x, x + d_in) at x = 0 and at x = ATOM_SHIFT (NumPy domains are unbounded)."""
    if kind is int:
        k = _whole(d, "an integer domain")
        return [(0, k), (ATOM_SHIFT, ATOM_SHIFT + k)]
    return [(0.0, _float_within(0.0, d)), (float(ATOM_SHIFT), _float_within(ATOM_SHIFT, d))]


def _record_values(kind, bounds):
    """(lo, hi): the records' bounds a component was given (inside them, for integers), else
    (0, 1); for strings ("a", "b")."""
    if kind is str:
        return "a", "b"
    lo, hi = bounds if bounds is not None else (0, 1)
    if kind is int:
        return math.ceil(lo), math.floor(hi)
    return float(lo), float(hi)


def _base(kind, lo, hi) -> list:
    """Two records inside (lo, hi) where there is room (at a third and two thirds): a record
    added at a bound then has a value no other record has, and shifts the ranks a quantile
    reads."""
    if kind is str:
        return ["a", "b"]
    if kind is int:
        return [lo + round((hi - lo) / 3), lo + round(2 * (hi - lo) / 3)]
    return [lo + (hi - lo) / 3, lo + 2 * (hi - lo) / 3]


def _added_pairs(kind, bounds, k: int) -> list:
    """Datasets k records apart by adding (SymmetricDifference): the empty dataset against k
    records at the bound of largest magnitude (a sum's sensitivity), and two inner records
    with k records added at the upper bound, and at the lower bound. For strings: a category
    no other record has, and one that is already there."""
    if kind is str:
        base = _base(str, None, None)
        return [([], ["a"] * k), (base, base + ["c"] * k), (base, base + ["a"] * k)]
    lo, hi = _record_values(kind, bounds)
    far = lo if abs(lo) > abs(hi) else hi
    base = _base(kind, lo, hi)
    return [([], [far] * k), (base, base + [hi] * k), (base, base + [lo] * k)]


def _replaced_pairs(kind, bounds, k: int) -> list:
    """Datasets of k + 1 records with k of them replaced (HammingDistance): records at the
    lower bound replaced by records at the upper bound (strings: by a new category)."""
    if kind is str:
        return [(["a"] * (k + 1), ["c"] * k + ["a"])]
    lo, hi = _record_values(kind, bounds)
    return [([lo] * (k + 1), [hi] * k + [lo])]


def _record_count(metric, d: Fraction) -> int:
    k = math.floor(d)
    if k < 1:
        raise InvalidPairsError(f"{metric} counts whole records: d_in={d} has no neighbours; "
                                "pass d_in ≥ 1")
    return k


_ONE_RECORD = {int: 0, float: 0.0, str: "a"}


def _empty_and_one_record(domain):
    """Plain values of an empty input and of a one-record input of a pandas Series or
    DataFrame domain, or None for another domain (or an element type without pairs)."""
    if is_a(domain, "PandasSeriesDomain"):
        kind = element_kind(domain.element_domain)
        return None if kind is None else ([], [_ONE_RECORD[kind]])
    if is_a(domain, "PandasDataFrameDomain"):
        kinds = {c: element_kind(s.element_domain) for c, s in domain.schema.items()}
        if None in kinds.values():
            return None
        return {c: [] for c in kinds}, {c: [_ONE_RECORD[k]] for c, k in kinds.items()}
    return None


def sizes_may_differ(domain, metric) -> bool:
    """Whether `metric` puts inputs of different sizes at a finite distance, as Tumult Core's
    own `distance` measures the empty input against a one-record input of the domain:
    SymmetricDifference counts records added or removed (1); HammingDistance, SumOf and
    RootSumOfSquared compare records position by position and are infinite between sizes.
    Asked of the library, so that the size of a dataset is audited wherever its metric makes
    it private. False when the metric cannot measure the two: then datasets keep one size."""
    probe = _empty_and_one_record(domain)
    if probe is None:
        return False
    form = input_form(domain)
    try:
        distance = metric.distance(prepare(form, probe[0]), prepare(form, probe[1]), domain)
        return bool(distance.is_finite)
    except Exception:  # a metric Tumult Core cannot apply to these two inputs
        return False


def _series_record_pairs(domain, metric, d, hints):
    """Series k records apart: records added where sizes may differ (`sizes_may_differ`),
    else replaced."""
    kind = element_kind(domain.element_domain)
    if kind is None:
        return None
    k = _record_count(metric, d)
    build = _added_pairs if sizes_may_differ(domain, metric) else _replaced_pairs
    return build(kind, hints.get("bounds"), k)


def _spread(kind, d: Fraction, l2: bool):
    """Two coordinate moves whose L1 (l2: L2) norm is at most d and as close to it as the
    type allows, or None (whole numbers rarely have an L2 norm of exactly d)."""
    if kind is int:
        return None if l2 or d < 2 else (int(d) // 2, int(d) - int(d) // 2)
    if l2:
        step = float(d) / math.sqrt(2)
        while 2 * Fraction(step) ** 2 > d * d:
            step = math.nextafter(step, 0.0)
        return step, step
    first = _float_within(0.0, d / 2)
    return first, _float_within(0.0, d - Fraction(first))


def _series_moved_pairs(domain, metric, d, hints):
    """Series of three numbers at SumOf / RootSumOfSquared(AbsoluteDifference) distance d_in
    (AddNoiseToSeries): one value moved by d_in, and the move spread over two values."""
    kind = element_kind(domain.element_domain)
    if kind not in (int, float) or not is_a(metric.inner_metric, "AbsoluteDifference"):
        return None
    zero = kind(0)
    one = _whole(d, "an integer series") if kind is int else _float_within(0.0, d)
    pairs = [([zero] * 3, [one, zero, zero])]
    spread = _spread(kind, d, is_a(metric, "RootSumOfSquared"))
    if spread is not None:
        pairs.append(([zero] * 3, [spread[0], spread[1], zero]))
    return pairs


def _frame_pairs(domain, metric, d, hints):
    """Data frames (as {column: list}) k rows apart, built column by column as for a Series
    (`_added_pairs` where sizes may differ, else `_replaced_pairs`), each column with the
    bounds of its own aggregation (AggregateByColumn), else the measurement's."""
    k = _record_count(metric, d)
    build = _added_pairs if sizes_may_differ(domain, metric) else _replaced_pairs
    columns = {}
    for column, series in domain.schema.items():
        kind = element_kind(series.element_domain)
        if kind is None:
            return None
        bounds = hints["columns"].get(column, hints.get("bounds"))
        columns[column] = build(kind, bounds, k)
    count = min(len(p) for p in columns.values())
    return [tuple({c: columns[c][i][side] for c in columns} for side in (0, 1))
            for i in range(count)]


def _dict_pairs(domain, metric, d, hints):
    """Dicts whose values are neighbours at the distance d_in gives each key (a key at
    distance 0 keeps one value on both sides); the i-th pair takes each key's i-th pair."""
    per_key = {}
    for key, inner_domain in domain.key_to_domain.items():
        inner_metric, inner_d = metric.key_to_metric[key], as_fraction(d[key])
        built = _pairs_for(inner_domain, inner_metric, inner_d or Fraction(1), hints)
        if not built:
            return None
        per_key[key] = built if inner_d else [(a, a) for a, _ in built]
    count = max(len(p) for p in per_key.values())
    return [tuple({key: pairs[i % len(pairs)][side] for key, pairs in per_key.items()}
                  for side in (0, 1)) for i in range(count)]


def _pairs_for(domain, metric, d, hints):
    """The builder for (domain, metric), called; None when there is none."""
    if element_kind(domain) in (int, float) and is_a(metric, "AbsoluteDifference"):
        return _atom_pairs(element_kind(domain), as_fraction(d))
    if is_a(domain, "PandasSeriesDomain"):
        if is_a(metric, "SymmetricDifference") or is_a(metric, "HammingDistance"):
            return _series_record_pairs(domain, metric, as_fraction(d), hints)
        if is_a(metric, "SumOf") or is_a(metric, "RootSumOfSquared"):
            return _series_moved_pairs(domain, metric, as_fraction(d), hints)
    if is_a(domain, "PandasDataFrameDomain") and (is_a(metric, "SymmetricDifference")
                                                  or is_a(metric, "HammingDistance")):
        return _frame_pairs(domain, metric, as_fraction(d), hints)
    if is_a(domain, "DictDomain") and is_a(metric, "DictMetric") and isinstance(d, dict):
        return _dict_pairs(domain, metric, d, hints)
    return None


def _distinct(pairs: list) -> list:
    """The pairs without repeats (two bounds that coincide give the same pair twice)."""
    seen, out = set(), []
    for pair in pairs:
        if repr(pair) not in seen:
            seen.add(repr(pair))
            out.append(pair)
    return out


def build_pairs(measurement, d_in=1, label=None) -> list:
    """Neighbouring pairs [(D, D'), ...] at distance d_in (already converted by
    `claims.convert_distance`) built from the measurement's input domain and metric:

    - NumPy integer / float domain, AbsoluteDifference: (x, x + d_in) at x = 0 and -100;
    - pandas Series, SymmetricDifference (sizes may differ, as the metric's own distance
      says: `sizes_may_differ`): the empty series against d_in records at the bound of
      largest magnitude; two inner records against them plus d_in records at the upper
      bound, and at the lower bound (strings: a new category, an existing one);
    - pandas Series, HammingDistance (one size): d_in records at the lower bound replaced by
      the upper;
    - pandas Series, SumOf / RootSumOfSquared(AbsoluteDifference): three numbers, one moved by
      d_in, and the move spread over two;
    - pandas DataFrame, SymmetricDifference / HammingDistance: rows built column by column as
      for a Series, each column with its own aggregation's bounds;
    - DictDomain, DictMetric: each key's pairs at its own distance, side by side.

    Bounds are those the measurement's components were given (`records.record_hints`), else
    (0, 1). Raises InvalidPairsError naming the measurement, its domain and metric otherwise.
    """
    label = label or describe(measurement)
    domain, metric = measurement.input_domain, measurement.input_metric
    pairs = _pairs_for(domain, metric, d_in, record_hints(measurement))
    if not pairs:
        raise InvalidPairsError(
            f"cannot build neighbouring pairs for {label!r}: its input domain {domain} with "
            f"metric {metric} is not one dpverify.libraries.tumult knows; pass "
            f"pairs=[(D, D_prime), ...] of inputs at distance at most d_in={d_in!r}")
    return _distinct(pairs)
