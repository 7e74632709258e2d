"""What OpenDP records about the objects it builds, read for the adapter: the bare type name of a
domain, metric or measure; the constructor calls that built a measurement (from its
`__opendp_dict__`); a readable name made of those calls; and the constructor arguments that say
which records hit the sensitivity (the hints `pairs.py` builds neighbouring inputs from).
"""
from __future__ import annotations

import re


def type_name(obj) -> str:
    """The bare type name of an OpenDP domain, metric or measure: "VectorDomain", "L1Distance",
    "Approximate<MaxDivergence>" (Rust paths such as opendp::domains:: dropped)."""
    text = re.sub(r"[A-Za-z_]\w*::", "", str(obj.type))
    return text if text.startswith("Approximate") else text.split("<")[0]


def constructor_steps(obj) -> list[tuple[str, str, dict]]:
    """The constructor calls (function, module, kwargs) that built `obj`, in the order they
    apply to the data: chains (make_chain_*) are flattened, transformation0 first."""
    record = getattr(obj, "__opendp_dict__", None)
    if not isinstance(record, dict) or "__function__" not in record:
        return []
    function, kwargs = record["__function__"], record.get("__kwargs__", {})
    if function.startswith("make_chain_"):
        parts = sorted(kwargs.items(), key=lambda kv: kv[0][-1])  # "...0" applies first
        return [step for _, part in parts for step in constructor_steps(part)]
    return [(function, record.get("__module__", ""), kwargs)]


def _short(value) -> str | None:
    """A constructor argument worth showing in a name (numbers, strings, short sequences)."""
    if isinstance(value, (bool, int, float, str)):
        return repr(value)
    if isinstance(value, (list, tuple)) and all(isinstance(v, (int, float, str)) for v in value):
        text = repr(tuple(value) if isinstance(value, tuple) else list(value))
        return text if len(text) <= 40 else text[:37] + "..."
    return None


# constructor arguments left out of names: the domain, metric and measure, type arguments
_UNNAMED = ("input_domain", "input_metric", "output_measure", "MO", "T", "TO", "TOA", "TIA")


def _calls(obj) -> str:
    """The constructor calls of `obj` joined by >>, measurements given to a combinator nested:
    "make_zCDP_to_approxDP(make_gaussian(scale=1.0))"; "" when OpenDP kept no record."""
    calls = []
    for function, _, kwargs in constructor_steps(obj):
        shown = []
        for key, value in kwargs.items():
            inner = _calls(value) if key not in _UNNAMED else ""
            text = inner or (_short(value) if value is not None and value is not False else None)
            if key not in _UNNAMED and text is not None:
                shown.append(text if inner else f"{key}={text}")
        calls.append(f"{function}({', '.join(shown)})")
    return " >> ".join(calls)


def describe(measurement) -> str:
    """A readable name: "opendp:make_clamp(bounds=(0.0, 1.0)) >> make_sum() >> make_laplace(
    scale=1.0)", or "opendp measurement <measure>" when OpenDP does not say how it was built."""
    calls = _calls(measurement)
    return f"opendp:{calls}" if calls else f"opendp measurement {measurement.output_measure}"


def sensitivity_hints(measurement) -> dict:
    """Values the constructors were given that tell which records hit the sensitivity: the
    first transformation's `bounds` (a clamp), `categories`, quantile `candidates` and a
    `threshold`; the first occurrence in application order wins."""
    hints: dict = {}
    for _, module, kwargs in constructor_steps(measurement):
        for key in ("bounds", "categories", "candidates", "threshold"):
            value = kwargs.get(key)
            if value is None or key in hints:
                continue
            if key == "bounds" and module != "transformations":
                continue  # e.g. make_geometric's bounds bound the noise, not the records
            hints[key] = value
    return hints
