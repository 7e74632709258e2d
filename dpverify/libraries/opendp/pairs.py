"""Neighbouring inputs for an OpenDP measurement, built from its input domain and metric at
distance exactly d_in (docs/theory.md §7). `build_pairs` picks a builder by (domain, metric);
each builder returns [(D, D'), ...], or None when it cannot build inputs of that domain's
values (then the caller is asked for pairs=).
"""
from __future__ import annotations

import math
import re

import numpy as np

from ...errors import InvalidPairsError
from .records import describe, sensitivity_hints, type_name

UNSIGNED_FREE = 5  # base value of vectors under L∞ distance, in units of d_in


def _atom_type(carrier):
    """The Python type of an OpenDP atom type: f32/f64 → float, i*/u* → int, String, bool;
    None for anything else."""
    carrier = str(carrier)
    if carrier in ("String", "bool"):
        return str if carrier == "String" else bool
    if re.fullmatch(r"[fiu](8|16|32|64|128|size)", carrier):
        return float if carrier[0] == "f" else int
    return None


def _atom_info(domain):
    """(Python type, bounds or None) of an AtomDomain, or None for another domain."""
    if type_name(domain) != "AtomDomain":
        return None
    kind = _atom_type(domain.carrier_type)
    try:
        bounds = domain.bounds
    except Exception:  # OpenDP has no bounds for strings and bools
        bounds = None
    return None if kind is None else (kind, bounds)


def _record_values(kind, bounds, hints):
    """Two record values (lo, hi): the categories a pipeline counts, the domain's bounds, a
    clamp's bounds, the quantile candidates' range, else (0, 1) / (False, True) / ("a", "b")."""
    categories = hints.get("categories")
    if categories:
        return categories[0], categories[-1]
    if kind is bool:
        return False, True
    if kind is str:
        return "a", "b"
    bounds = bounds or hints.get("bounds")
    if bounds is None and hints.get("candidates"):
        bounds = (min(hints["candidates"]), max(hints["candidates"]))
    lo, hi = bounds if bounds is not None else (0, 1)
    return kind(lo), kind(hi)


def _base_records(kind, lo, hi, hints) -> list:
    """The dataset records are added to: (lo, hi); for a quantile, two records between the
    middle candidates, so an added record moves some candidates' scores up and others down
    (the case the exponential mechanism's 2Δ/scale bound is about)."""
    candidates = sorted(hints.get("candidates") or [])
    if kind is float and len(candidates) >= 3:
        m = len(candidates) // 2
        return [(candidates[m - 1] + candidates[m]) / 2, (candidates[m] + candidates[m + 1]) / 2]
    return [lo, hi] if lo != hi else [lo]


UNBOUNDED_METRICS = ("SymmetricDistance", "InsertDeleteDistance")  # records added/removed
REPLACE_METRICS = ("ChangeOneDistance", "HammingDistance")  # records changed in place


def sizes_may_differ(domain, metric) -> bool:
    """Whether two datasets of a VectorDomain at a finite distance under `metric` may differ
    in length, as OpenDP defines its metrics: SymmetricDistance and InsertDeleteDistance count
    records added or removed (unbounded DP), so yes, unless the domain fixes its `size`;
    ChangeOneDistance and HammingDistance count records changed between datasets of one length
    (OpenDP requires a sized domain for them), and an Lp distance between vectors of different
    lengths is infinite. Read from the domain's `size` and the metric's type, so that a leak
    of the dataset's length is audited wherever the length is private."""
    return domain.size is None and type_name(metric) in UNBOUNDED_METRICS


def _record_pairs(domain, metric, d_in, hints):
    """Datasets (vectors of records) at d_in: where lengths may differ (`sizes_may_differ`),
    d_in records added, with the corners of `_corner_pairs` (the empty dataset among them);
    otherwise d_in records replaced (ChangeOneDistance / HammingDistance), or d_in // 2 (a
    sized domain under symmetric distance). The records are the values at the bounds: adding
    the one of largest magnitude hits a bounded sum's sensitivity."""
    info = _atom_info(domain.element_domain)
    if info is None:
        return None
    kind, bounds = info
    lo, hi = _record_values(kind, bounds, hints)
    numeric = kind in (int, float)
    far, near = (lo, hi) if numeric and abs(lo) > abs(hi) else (hi, lo)
    size = domain.size
    if not sizes_may_differ(domain, metric):
        changes = d_in if type_name(metric) in REPLACE_METRICS else d_in // 2
        if changes < 1:
            raise InvalidPairsError(
                f"a dataset of fixed size {size} has no neighbour at {metric} {d_in}: records "
                "can only be replaced, which is distance 2; pass d_in=2")
        n = size or changes + 1
        base = [near] * n
        return [(base, [far] * min(changes, n) + [near] * max(n - changes, 0))]
    base = _base_records(kind, lo, hi, hints)
    added = [far] + ([near] if near != far and (not numeric or lo < 0 < hi) else [])
    pairs = [(list(base), base + [value] * d_in) for value in added]
    return pairs + _corner_pairs(kind, far, base, hints, d_in)


def _unseen_value(values) -> str:
    """A string that is none of `values`: "c", "d", ... (the first free one), else "unseen"."""
    taken = set(values)
    return next((chr(c) for c in range(ord("a"), ord("z") + 1) if chr(c) not in taken),
                "unseen")


def _corner_pairs(kind, far, base, hints, d_in) -> list:
    """The corners of add-or-remove neighbours that change what the output looks like: the
    empty dataset against d_in records at the far bound (a count, mean or quantile of nothing),
    and, for strings, d_in records of a value that neither dataset's other records nor the
    declared categories have (a new group, or the null category of a count by categories)."""
    corners = [([], [far] * d_in)]
    if kind is str:
        unseen = _unseen_value(list(base) + list(hints.get("categories") or []))
        corners.append((list(base), list(base) + [unseen] * d_in))
    return corners


def _atom_absolute_pairs(domain, metric, d_in, hints):
    """(x, x + d_in) for x = 0 and 100, or at both ends of a bounded domain."""
    info = _atom_info(domain)
    if info is None or info[0] not in (int, float):
        return None
    kind, bounds = info
    d = kind(d_in)
    if bounds is None:
        return [(kind(0), kind(0) + d), (kind(100), kind(100) + d)]
    lo, hi = kind(bounds[0]), kind(bounds[1])
    if hi - lo <= d:
        return [(lo, hi)]
    return [(lo, lo + d), (hi - d, hi)]


def _atom_discrete_pairs(domain, metric, d_in, hints):
    """Two different values (any two are at discrete distance 1): (False, True), the first
    two categories of randomized response, or (0, 1)."""
    info = _atom_info(domain)
    if info is None:
        return None
    kind, bounds = info
    categories = hints.get("categories")
    if categories and len(categories) > 1:
        return [(categories[0], categories[1])]
    lo, hi = _record_values(kind, bounds, {})
    return [(lo, hi)]


def _bitvector_pairs(domain, metric, d_in, hints):
    """Two bit vectors of the domain's maximum weight m with disjoint ones (packed bytes,
    as numpy uint8 arrays): the first m bits set against the next m."""
    match = re.search(r"weight=(\d+)", str(domain))
    weight = int(match.group(1)) if match else 1
    bits = 8 * math.ceil(2 * weight / 8)
    a, b = np.zeros(bits, dtype=np.uint8), np.zeros(bits, dtype=np.uint8)
    a[:weight], b[weight:2 * weight] = 1, 1
    return [(np.packbits(a), np.packbits(b))]


def _spread(kind, metric, d):
    """Two shifts whose L1 (or L2) norm is exactly d (at most d after rounding), or None."""
    if metric == "L1Distance":
        first = kind(d / 2) if kind is float else d // 2
        return (first, d - first) if first else None
    if kind is int:
        return None  # no two whole numbers have an L2 norm of d in general
    step = d / math.sqrt(2)
    while math.hypot(step, step) > d:  # rounding must not push the pair past d_in
        step = math.nextafter(step, 0.0)
    return step, step


def _shifted(base, shifts, bounds):
    """base + shifts, each coordinate clipped into the element bounds (if any)."""
    out = list(base)
    for i, s in enumerate(shifts):
        out[i] = out[i] + s
        if bounds is not None:
            out[i] = min(max(out[i], bounds[0]), bounds[1])
    return out


def _vector_lp_pairs(domain, metric, d_in, hints):
    """Vectors of the domain's size (else 3) at L1 / L2 distance d_in: one coordinate moved
    by d_in, and the move spread over two coordinates."""
    info = _atom_info(domain.element_domain)
    if info is None or info[0] not in (int, float):
        return None
    kind, bounds = info
    n, d = domain.size or 3, kind(d_in)
    base = [kind(bounds[0]) if bounds is not None else kind(0)] * n
    pairs = [(base, _shifted(base, [d], bounds))]
    spread = _spread(kind, type_name(metric), d)
    if spread is not None and n > 1:
        pairs.append((base, _shifted(base, spread, bounds)))
    return pairs


def _vector_linf_pairs(domain, metric, d_in, hints):
    """Score vectors (size, else 4) at L∞ distance d_in, as noisy max / top-k read them: one
    score up and the others down, one down and the others up (only one side moving when the
    metric is monotonic)."""
    info = _atom_info(domain.element_domain)
    if info is None or info[0] not in (int, float):
        return None
    kind, bounds = info
    n, d = domain.size or 4, kind(d_in)
    base = [kind(UNSIGNED_FREE * d)] * n  # room below for d_in downward moves
    if bounds is not None:
        base = [min(max(base[0], bounds[0]), bounds[1])] * n
    if "monotonic" in str(metric):
        patterns = [[d] + [0] * (n - 1), [0] + [d] * (n - 1)]
    else:
        patterns = [[d] + [-d] * (n - 1), [-d] + [d] * (n - 1)]
    return [(base, _shifted(base, [kind(s) for s in p], bounds)) for p in patterns]


def _map_types(domain):
    """(key type, value type) of a MapDomain, read from its carrier HashMap<K, V>."""
    match = re.fullmatch(r"HashMap<\s*(\w+)\s*,\s*(\w+)\s*>", str(domain.carrier_type))
    if not match:
        return None, None
    return _atom_type(match.group(1)), _atom_type(match.group(2))


def _map_keys(key_type, hints, count):
    """`count` keys of the map: the categories given to the pipeline, else "a", "b", ... / 0,
    1, ..."""
    categories = list(hints.get("categories") or [])
    if len(categories) >= count:
        return categories[:count]
    if key_type is str:
        return [chr(ord("a") + i) for i in range(count)]
    return None if key_type is not int else list(range(count))


def _map_lp_pairs(domain, metric, d_in, hints):
    """Maps with the same three keys whose values are at L1 / L2 distance d_in (as vectors)."""
    key_type, value_type = _map_types(domain)
    keys = _map_keys(key_type, hints, 3)
    if keys is None or value_type not in (int, float):
        return None
    d = value_type(d_in)
    base = {k: value_type(0) for k in keys}
    pairs = [(base, {**base, keys[0]: d})]
    spread = _spread(value_type, type_name(metric), d)
    if spread is not None:
        pairs.append((base, {**base, keys[0]: spread[0], keys[1]: spread[1]}))
    return pairs


def _map_partition_pairs(domain, metric, d_in, hints):
    """Maps of partitions under L01Inf / L02Inf distance (l0, lp, l∞) = d_in: one partition
    added with value v = min(lp, l∞), and one partition's value moved by v. The partitions
    present in both sit at the mechanism's threshold when it has one (where release is a
    coin flip), else at v."""
    key_type, value_type = _map_types(domain)
    keys = _map_keys(key_type, hints, 3)
    if keys is None or value_type not in (int, float):
        return None
    v = value_type(min(d_in[1], d_in[2]))
    level = value_type(hints["threshold"]) if hints.get("threshold") is not None else v
    base = {keys[0]: level, keys[1]: level}
    return [(base, {**base, keys[2]: v}), (base, {**base, keys[0]: level + v})]


_BUILDERS = {
    ("AtomDomain", "AbsoluteDistance"): _atom_absolute_pairs,
    ("AtomDomain", "DiscreteDistance"): _atom_discrete_pairs,
    ("BitVectorDomain", "DiscreteDistance"): _bitvector_pairs,
    ("VectorDomain", "L1Distance"): _vector_lp_pairs,
    ("VectorDomain", "L2Distance"): _vector_lp_pairs,
    ("VectorDomain", "LInfDistance"): _vector_linf_pairs,
    ("VectorDomain", "SymmetricDistance"): _record_pairs,
    ("VectorDomain", "InsertDeleteDistance"): _record_pairs,
    ("VectorDomain", "ChangeOneDistance"): _record_pairs,
    ("VectorDomain", "HammingDistance"): _record_pairs,
    ("MapDomain", "L1Distance"): _map_lp_pairs,
    ("MapDomain", "L2Distance"): _map_lp_pairs,
    ("MapDomain", "L01InfDistance"): _map_partition_pairs,
    ("MapDomain", "L02InfDistance"): _map_partition_pairs,
}


def build_pairs(measurement, d_in=1, label=None) -> list:
    """Neighbouring pairs [(D, D'), ...] at distance d_in (already converted by
    `convert_distance`) built from the measurement's input domain and metric:

    - atom domain, AbsoluteDistance: (x, x + d_in) at x = 0 and 100, or at the domain's ends;
    - atom domain, DiscreteDistance: two different values (randomized response: categories);
    - bit vectors, DiscreteDistance: two vectors of the maximum weight with disjoint ones;
    - vector domain, L1 / L2: one coordinate moved by d_in, and the move spread over two;
    - vector domain, L∞: one score up and the rest down, one down and the rest up;
    - vector domain, Symmetric / InsertDelete / ChangeOne / Hamming distance: where lengths
      may differ (no fixed `size`, Symmetric / InsertDelete: `sizes_may_differ`) d_in records
      added at the bounds of the records (domain, clamp, categories), with the corners: the
      empty dataset against d_in records, and (strings) d_in records of a value no other
      record or category has; otherwise datasets of one length with records replaced;
    - map domain, L1 / L2: three keys, values moved as for vectors;
    - map domain, L01Inf / L02Inf: a partition added, and one partition's value moved.

    Raises InvalidPairsError naming the measurement, its domain and metric otherwise.
    """
    label = label or describe(measurement)
    domain, metric = measurement.input_domain, measurement.input_metric
    builder = _BUILDERS.get((type_name(domain), type_name(metric)))
    pairs = builder(domain, metric, d_in, sensitivity_hints(measurement)) if builder else None
    if not pairs:
        raise InvalidPairsError(
            f"cannot build neighbouring pairs for {label!r}: its input domain {domain} with "
            f"metric {metric} is not one dpverify.libraries.opendp knows; pass "
            f"pairs=[(D, D_prime), ...] of inputs at distance at most d_in={d_in!r}")
    return pairs
