"""Pair values as the measurement's inputs: the plain Python values `pairs.py` builds (lists,
{column: list} dicts, numbers) become the pandas objects and NumPy-domain numbers a Tumult Core
measurement takes (`input_form`, `prepare`), and pairs are checked against the measurement's own
input domain and metric (`check_pairs`).
"""
from __future__ import annotations

from numbers import Real

import numpy as np

from ...errors import InvalidPairsError
from .domains import element_kind, is_a


def input_form(domain):
    """How plain pair values become the measurement's input: ("series", dtype),
    ("frame", ((column, dtype), ...)), ("dict", ((key, form), ...)), ("atom", dtype) or
    ("as is",). A picklable description of the input domain."""
    dtypes = {int: "int64", float: "float64", str: "object"}
    if is_a(domain, "PandasSeriesDomain"):
        return ("series", dtypes.get(element_kind(domain.element_domain)))
    if is_a(domain, "PandasDataFrameDomain"):
        return ("frame", tuple((c, dtypes.get(element_kind(s.element_domain)))
                               for c, s in domain.schema.items()))
    if is_a(domain, "DictDomain"):
        return ("dict", tuple((k, input_form(v)) for k, v in domain.key_to_domain.items()))
    kind = element_kind(domain)
    return ("atom", dtypes[kind]) if kind in (int, float) else ("as is",)


def prepare(form, data):
    """The measurement's input from a pair's plain value (pandas objects pass as they are):
    a list becomes a Series of the domain's dtype, a {column: list} dict a DataFrame with the
    schema's columns in order, a dict of plain values a dict of inputs, a number the domain's
    kind (a float for a float domain, as Tumult Core requires)."""
    import pandas as pd
    kind = form[0]
    if kind == "series" and not isinstance(data, pd.Series):
        return pd.Series(list(data), dtype=form[1])
    if kind == "frame" and not isinstance(data, pd.DataFrame):
        return pd.DataFrame({c: pd.Series(list(data[c]), dtype=t) for c, t in form[1]})
    if kind == "dict":
        return {k: prepare(inner, data[k]) for k, inner in form[1]}
    if kind == "atom" and isinstance(data, Real) and not isinstance(data, bool):
        return np.dtype(form[1]).type(data)  # the domain's carrier: np.int64, np.float64
    return data


def check_pairs(measurement, pairs, d_in, label) -> None:
    """Raise InvalidPairsError unless every input of every pair is in the measurement's input
    domain and each pair is at distance ≤ d_in by the input metric's own `distance` (when
    Tumult Core can measure it for this domain: otherwise only the domain is checked)."""
    domain, metric = measurement.input_domain, measurement.input_metric
    form = input_form(domain)
    for a, b in pairs:
        values = []
        for side in (a, b):
            try:
                value = prepare(form, side)
                domain.validate(value)
            except Exception as exc:
                raise InvalidPairsError(f"{side!r} is not in the input domain {domain} of "
                                        f"{label!r}: {str(exc).strip()}") from None
            values.append(value)
        try:
            distance = metric.distance(values[0], values[1], domain)
        except Exception:  # Tumult Core cannot measure it here: the domain check stands
            continue
        if not metric.compare(distance, d_in):
            raise InvalidPairsError(f"the pair ({a!r}, {b!r}) is at distance {distance} under "
                                    f"{metric}, more than d_in={d_in!r} of {label!r}: pass "
                                    "pairs at distance at most d_in, or a larger d_in")
