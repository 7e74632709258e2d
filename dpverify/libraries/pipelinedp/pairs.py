"""Neighbouring datasets for a PipelineDP computation: add or remove one privacy unit with
all its contributions (docs/theory.md §7), up to the contribution limits the params declare.

Datasets are tuples of rows (privacy_id, partition_key, value): the user's rows with their
DataExtractors applied once, here (`canonical_rows`), so that the runs need no user code and
pickle. The corners (`corner_pairs`), each a dataset D and D with one more unit u:

    new     u contributes to P partitions no other unit has (private selection: the partition
            selection's δ); with public partitions, to the P public ones with fewest units
    high    u contributes C rows at the upper value bound to each of the P partitions with the
            most units (padded with new ones): the metrics' sensitivity
    low     the same at the lower bound (only when the metrics read values)
    empty   the empty dataset against u alone (at the upper bound, in new or public partitions)
    remove  D against D without its heaviest unit, when that unit exceeds the limits (it
            exercises the library's contribution bounding)

P = max_partitions_contributed and C = max_contributions_per_partition; with
max_contributions = M instead, u's M rows go to one partition (high, low, empty) or to M
partitions (new).
"""
from __future__ import annotations

from collections import Counter, defaultdict

from ...errors import InvalidPairsError

CORNERS = ("new", "high", "low", "empty", "remove")
VALUE_METRICS = ("SUM", "MEAN", "VARIANCE")  # metrics whose result reads the values


def canonical_rows(dataset, extractors, label: str) -> tuple:
    """The dataset as a tuple of (privacy_id, partition_key, value) rows: `extractors` (a
    pipeline_dp.DataExtractors) applied to each row, or, without extractors, rows that already
    are (privacy_id, partition_key[, value]) tuples."""
    rows = []
    for row in dataset:
        if extractors is not None:
            value = (extractors.value_extractor(row)
                     if extractors.value_extractor is not None else None)
            rows.append((extractors.privacy_id_extractor(row),
                         extractors.partition_extractor(row), value))
        elif isinstance(row, (tuple, list)) and len(row) in (2, 3):
            rows.append((row[0], row[1], row[2] if len(row) == 3 else None))
        else:
            raise InvalidPairsError(f"{label}: without extractors= each row must be "
                                    f"(privacy_id, partition_key[, value]), got {row!r}")
    return tuple(rows)


def sort_keys(keys) -> list:
    """Partition keys in a fixed order: by value within each type, types by name."""
    try:
        return sorted(keys, key=lambda k: (type(k).__name__, k))
    except TypeError:  # keys of one type that do not compare (e.g. mixed tuples)
        return sorted(keys, key=repr)


def _fresh(existing, count: int, prefix: str) -> list:
    """`count` values not in `existing`: the next integers when every existing one is an int,
    else strings prefix0, prefix1, ..."""
    existing = set(existing)
    if existing and all(type(v) is int for v in existing):
        start = max(existing) + 1
        return list(range(start, start + count))
    out, i = [], 0
    while len(out) < count:
        if f"{prefix}{i}" not in existing:
            out.append(f"{prefix}{i}")
        i += 1
    return out


class Limits:
    """What one privacy unit may contribute, read from AggregateParams or
    SelectPartitionsParams: `spread` partitions with `per` rows each, or (max_contributions
    mode) `total` rows in all; and the value bounds when the metrics read values."""

    def __init__(self, params):
        total = getattr(params, "max_contributions", None)
        self.total = total
        self.spread = total if total else params.max_partitions_contributed
        self.per = 1 if total else (getattr(params, "max_contributions_per_partition", 1) or 1)
        metrics = [m.name for m in getattr(params, "metrics", None) or []]
        self.bounds = None  # (high, low) values, when the result reads them
        if any(m in VALUE_METRICS for m in metrics):
            if getattr(params, "max_value", None) is not None:
                self.bounds = (params.max_value, params.min_value)
            elif getattr(params, "max_sum_per_partition", None) is not None:
                self.bounds = (params.max_sum_per_partition, params.min_sum_per_partition)
        self.reads_values = self.bounds is not None

    def unit(self, uid, keys, value, one_partition=False) -> tuple:
        """The rows of a unit contributing to `keys` up to the limits: `per` rows per key;
        with max_contributions, `total` rows in keys[0] (`one_partition`) or one row per key."""
        if self.total and one_partition:
            return tuple((uid, keys[0], value) for _ in range(self.total))
        return tuple((uid, k, value) for k in keys for _ in range(self.per))

    def exceeded_by(self, rows) -> bool:
        """Whether these rows of one unit exceed the limits."""
        per_key = Counter(pk for _, pk, _ in rows)
        if self.total:
            return len(rows) > self.total
        return len(per_key) > self.spread or max(per_key.values()) > self.per


def _units_per_partition(rows) -> dict:
    units = defaultdict(set)
    for pid, pk, _ in rows:
        units[pk].add(pid)
    return {pk: len(u) for pk, u in units.items()}


def corner_pairs(params, rows: tuple, public_partitions=None, corners=None,
                 label: str = "pipeline_dp") -> dict:
    """{corner name: (D, D2)} for the corners in `corners` (default: every one that applies;
    see the module docstring). Each D2 adds one privacy unit to D (or removes one)."""
    limits = Limits(params)
    wanted = CORNERS if corners is None else tuple(corners)
    unknown = set(wanted) - set(CORNERS)
    if unknown:
        raise InvalidPairsError(f"{label}: corners must be among {CORNERS}, got "
                                f"{sorted(unknown)}")
    units = _units_per_partition(rows)
    public = None if public_partitions is None else sort_keys(set(public_partitions))
    uid = _fresh({pid for pid, _, _ in rows}, 1, "new-unit")[0]
    n = 1 if limits.total else limits.spread  # partitions the added unit reaches
    busiest = sort_keys(units)  # partitions by units, most first (ties in key order)
    busiest.sort(key=lambda k: -units[k])
    if public is None:
        new_keys = _fresh(set(units), limits.spread, "new-partition-")
        top = (busiest + new_keys)[:n]
    else:
        if not public:
            raise InvalidPairsError(f"{label}: public_partitions is empty")
        new_keys = sorted(public, key=lambda k: units.get(k, 0))[:limits.spread]
        top = sorted(public, key=lambda k: -units.get(k, 0))[:n]
    high = None if limits.bounds is None else limits.bounds[0]  # None: values unread
    out = {}
    if "new" in wanted:
        out["new"] = (rows, rows + limits.unit(uid, new_keys, high))
    if "high" in wanted and rows:
        out["high"] = (rows, rows + limits.unit(uid, top, high, one_partition=True))
    if "low" in wanted and rows and limits.reads_values and limits.bounds[1] != high:
        out["low"] = (rows, rows + limits.unit(uid, top, limits.bounds[1], one_partition=True))
    if "empty" in wanted and rows:
        keys = new_keys if public is None else public[:n]
        out["empty"] = ((), limits.unit(uid, keys, high, one_partition=True))
    if "remove" in wanted and rows:
        heaviest = max(_rows_per_unit(rows).items(), key=lambda kv: len(kv[1]))
        if limits.exceeded_by(heaviest[1]):
            out["remove"] = (rows, tuple(r for r in rows if r[0] != heaviest[0]))
    seen = set()  # a corner equal to an earlier one (e.g. one public partition) is dropped
    out = {k: pair for k, pair in out.items() if not (pair in seen or seen.add(pair))}
    if not out:
        raise InvalidPairsError(f"{label}: none of the corners {list(wanted)} applies to this "
                                "dataset; pass pairs=[(D, D2), ...]")
    return out


def _rows_per_unit(rows) -> dict:
    per_unit = defaultdict(list)
    for row in rows:
        per_unit[row[0]].append(row)
    return per_unit
