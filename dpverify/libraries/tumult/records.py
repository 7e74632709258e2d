"""What a Tumult Core object says about itself, read for the adapter: a readable name made of its
constructor arguments, the components it is built from (chains, compositions, converters,
per-column aggregations), and the record bounds those components were given (the hints
`pairs.py` builds neighbouring inputs from).

Tumult Core objects are plain Python classes that keep their constructor arguments as public
properties (`AddLaplaceNoise.scale`, `NoisyQuantile.lower`, `ChainTM.transformation`, ...), so
everything here is read from those properties; nothing is parsed from printed text.
"""
from __future__ import annotations

import inspect
from fractions import Fraction
from numbers import Real

# constructor arguments left out of names: the domain and metric (types, not parameters)
_UNNAMED = ("input_domain", "input_metric", "output_domain", "output_metric", "hint")


def _is_component(value) -> bool:
    """A Tumult Core measurement or transformation (checked by base class)."""
    from tmlt.core.measurements.base import Measurement
    from tmlt.core.transformations.base import Transformation
    return isinstance(value, (Measurement, Transformation))


def _public_properties(obj) -> list[str]:
    """Names of the public @property attributes of obj's class, base classes first."""
    names = []
    for klass in reversed(type(obj).__mro__):
        for name, attr in vars(klass).items():
            if isinstance(attr, property) and not name.startswith("_") and name not in names:
                names.append(name)
    return names


def constructor_arguments(obj) -> list[tuple[str, object]]:
    """(name, value) of each constructor argument obj keeps as a property of the same name, in
    the constructor's order (a getter that raises is skipped)."""
    try:
        params = list(inspect.signature(type(obj).__init__).parameters)[1:]
    except (TypeError, ValueError):
        return []
    available = set(_public_properties(obj))
    out = []
    for name in params:
        if name in available:
            try:
                out.append((name, getattr(obj, name)))
            except Exception:  # a property that cannot be read here says nothing to a name
                continue
    return out


def _show(value) -> str:
    """A constructor argument as it appears in a name."""
    if _is_component(value):
        return _describe(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {_show(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_show(v) for v in value) + "]"
    if isinstance(value, (bool, int, float, str)):
        return repr(value)
    if callable(value) and not isinstance(value, type):
        return getattr(value, "__qualname__", None) or type(value).__name__
    if type(value).__module__.startswith("tmlt.core.measures"):
        return type(value).__name__  # PureDP(), RhoZCDP(), ...
    return str(value)  # ExactNumber prints as its exact value: 1/2, sqrt(2), ...


def _describe(obj) -> str:
    """Name(arg=value, ...); chains (ChainTM, ChainTT) as their parts joined by |, the
    operator Tumult Core chains with."""
    name = type(obj).__name__
    if name == "ChainTM":
        return f"{_describe(obj.transformation)} | {_describe(obj.measurement)}"
    if name == "ChainTT":
        return f"{_describe(obj.transformation1)} | {_describe(obj.transformation2)}"
    args = [(k, v) for k, v in constructor_arguments(obj) if k not in _UNNAMED]
    if len(args) == 1 and _is_component(args[0][1]):  # wrappers: PureDPToApproxDP(Add...(...))
        return f"{name}({_show(args[0][1])})"
    return f"{name}(" + ", ".join(f"{k}={_show(v)}" for k, v in args) + ")"


def describe(measurement) -> str:
    """A readable name: "tumult:AddGeometricNoise(alpha=1)",
    "tumult:GetValue(key='x') | AddLaplaceNoise(scale=2)"."""
    return f"tumult:{_describe(measurement)}"


def components(obj):
    """obj and every measurement or transformation inside it, depth first in the order the
    data meets them (a chain's transformation before its measurement)."""
    yield obj
    for name in _public_properties(obj):
        if name in ("input_domain", "input_metric", "output_domain", "output_metric",
                    "output_measure"):
            continue
        try:
            value = getattr(obj, name)
        except Exception:
            continue
        values = value.values() if isinstance(value, dict) else (
            value if isinstance(value, (list, tuple)) else [value])
        for inner in values:
            if _is_component(inner):
                yield from components(inner)


def _number(value):
    """A bound as a Python number (ExactNumber and sympy values through Fraction), or None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, Real):
        return value
    try:
        return Fraction(str(getattr(value, "expr", value)))
    except (TypeError, ValueError, ZeroDivisionError):
        return None


def _bounds(obj):
    """(lower, upper) a component was given for its records (NoisyQuantile's clamp, a
    transformation's `lower`/`upper` or `bounds`), or None."""
    pair = (getattr(obj, "lower", None), getattr(obj, "upper", None))
    if pair[0] is None or pair[1] is None:
        bounds = getattr(obj, "bounds", None)
        if not isinstance(bounds, (tuple, list)) or len(bounds) != 2:
            return None
        pair = tuple(bounds)
    lo, hi = _number(pair[0]), _number(pair[1])
    return None if lo is None or hi is None or lo > hi else (lo, hi)


def record_hints(measurement) -> dict:
    """The record bounds the measurement's components were given: {"bounds": (lo, hi)} from
    the first component (in data order) that has them, and {"columns": {column: (lo, hi)}}
    for data frames aggregated column by column (AggregateByColumn)."""
    hints: dict = {"columns": {}}
    for part in components(measurement):
        if "bounds" not in hints and _bounds(part) is not None:
            hints["bounds"] = _bounds(part)
        per_column = getattr(part, "column_to_aggregation", None)
        if isinstance(per_column, dict):
            for column, aggregation in per_column.items():
                found = next((b for b in map(_bounds, components(aggregation)) if b), None)
                if found is not None:
                    hints["columns"].setdefault(column, found)
    return hints
