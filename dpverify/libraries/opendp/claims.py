"""The claim of an OpenDP measurement (docs/theory.md §7): `d_in` converted to the type its input
metric measures in, then `measurement.map(d_in)` read by output measure as ε, (ε, δ) or ρ-zCDP.
"""
from __future__ import annotations

import math

from ...errors import InvalidClaimError, InvalidPairsError
from ...mechanism import validate_claim, validate_zcdp
from .. import require_opendp
from .records import type_name

DEFAULT_DELTA = 1e-6  # δ at which a privacy profile (SmoothedMaxDivergence) is read


def convert_distance(measurement, d_in, label):
    """d_in in the type the input metric measures in: an int for record counts (symmetric
    distance), a float for f64 sensitivities, a (l0, lp, l∞) triple for partition metrics
    (an integer k becomes (k, k, k)). Raises InvalidPairsError when it cannot be."""
    dtype = str(measurement.input_metric.distance_type)
    parts = [p.strip() for p in dtype.strip("()").split(",")]

    def one(value, kind):
        number = float(value)
        if not (number > 0 and math.isfinite(number)):
            raise InvalidPairsError(f"d_in must be a positive finite distance, got {value!r} "
                                    f"for {label!r}")
        if kind[0] in "iu":
            if not number.is_integer():
                raise InvalidPairsError(f"d_in must be a whole number for {label!r}, whose "
                                        f"metric {measurement.input_metric} counts in {kind}")
            return int(number)
        return number
    try:
        if len(parts) > 1:
            values = d_in if isinstance(d_in, (tuple, list)) else [d_in] * len(parts)
            if len(values) != len(parts):
                raise InvalidPairsError(f"d_in for {label!r} is a {dtype} triple, got {d_in!r}")
            return tuple(one(v, k) for v, k in zip(values, parts))
        return one(d_in, parts[0])
    except (TypeError, ValueError) as exc:
        if isinstance(exc, InvalidPairsError):
            raise
        raise InvalidPairsError(f"d_in must be a number for {label!r} (metric "
                                f"{measurement.input_metric}), got {d_in!r}") from None


def _map(measurement, d_in, label):
    """measurement.map(d_in), with OpenDP's refusal turned into an InvalidClaimError."""
    try:
        return measurement.map(d_in)
    except Exception as exc:
        raise InvalidClaimError(f"OpenDP could not map d_in={d_in!r} through {label!r}: "
                                f"{str(exc).strip()}; check d_in, or state the claim yourself: "
                                "from_measurement(measurement, epsilon=..., delta=...)") from None


def read_claim(measurement, d_in, delta, label) -> dict:
    """{"epsilon", "delta", "zcdp"} read from the measurement at d_in (see `from_measurement`).

    `delta`: where the claim is a privacy profile, the δ to read ε at (default DEFAULT_DELTA);
    ignored for a zCDP claim (the δ of the (ε, δ) claim audited beside ρ is
    dpverify.audit's `delta=`, default 1e-6). A claim dpverify cannot audit (ε = 0: no
    neighbours at this d_in) raises InvalidClaimError naming the measurement.
    """
    try:
        return _read_claim(measurement, d_in, delta, label)
    except InvalidClaimError as exc:
        if label in str(exc):
            raise
        raise InvalidClaimError(f"{label!r} at d_in={d_in!r}: {exc}") from None


def read_profile(measurement, d_in, label):
    """The whole privacy profile of the measurement at d_in, as a curve claim (dpverify.fdp):
    a SmoothedMaxDivergence measurement's profile.delta(ε) (plus δ₀ for an Approximate one),
    or a zCDP measurement's through OpenDP's own make_zCDP_to_approxDP. Never re-derived:
    OpenDP's numbers are the claim."""
    from ...curve_claim import profile_claim
    dp = require_opendp()
    measure = type_name(measurement.output_measure)
    if measure in ("ZeroConcentratedDivergence", "Approximate<ZeroConcentratedDivergence>"):
        measurement = dp.c.make_zCDP_to_approxDP(measurement)
        measure = type_name(measurement.output_measure)
    if measure not in ("SmoothedMaxDivergence", "Approximate<SmoothedMaxDivergence>"):
        raise InvalidClaimError(f"{label!r} has no privacy profile: its output measure "
                                f"{measurement.output_measure} is not SmoothedMaxDivergence or "
                                "zCDP; read its (ε, δ) claim instead (whole_profile=False)")
    value = _map(measurement, d_in, label)
    profile, floor = value if isinstance(value, tuple) else (value, 0.0)

    def delta_of(epsilon):
        return min(1.0, float(profile.delta(float(epsilon))) + float(floor))
    return profile_claim(delta_of, name=f"OpenDP's {label} at d_in={d_in}")


def _read_claim(measurement, d_in, delta, label) -> dict:
    """read_claim, by output measure."""
    dp = require_opendp()
    measure = type_name(measurement.output_measure)
    if measure == "MaxDivergence":
        eps, dlt = validate_claim(_map(measurement, d_in, label), 0.0)
        return {"epsilon": eps, "delta": dlt, "zcdp": None}
    if measure == "ZeroConcentratedDivergence":
        rho = validate_zcdp(_map(measurement, d_in, label))
        return {"epsilon": None, "delta": 0.0, "zcdp": rho}
    if measure == "Approximate<MaxDivergence>":
        eps, dlt = validate_claim(*_map(measurement, d_in, label))
        return {"epsilon": eps, "delta": dlt, "zcdp": None}
    target = DEFAULT_DELTA if delta is None else float(delta)
    if measure == "Approximate<ZeroConcentratedDivergence>":
        measurement = dp.c.make_zCDP_to_approxDP(measurement)  # OpenDP's own conversion
        measure = type_name(measurement.output_measure)
    if measure in ("SmoothedMaxDivergence", "Approximate<SmoothedMaxDivergence>"):
        value = _map(measurement, d_in, label)
        profile, floor = value if isinstance(value, tuple) else (value, 0.0)
        try:
            eps = profile.epsilon(target)
        except Exception as exc:
            raise InvalidClaimError(f"the privacy profile of {label!r} has no ε at δ = "
                                    f"{target:g}: {str(exc).strip()}; pass a larger delta=")
        eps, dlt = validate_claim(eps, target + floor)
        return {"epsilon": eps, "delta": dlt, "zcdp": None}
    raise InvalidClaimError(
        f"cannot read a claim from {label!r}: its output measure {measurement.output_measure} "
        "is not MaxDivergence, ZeroConcentratedDivergence, SmoothedMaxDivergence or an "
        "Approximate one of those; state the claim yourself: from_measurement(measurement, "
        "epsilon=..., delta=...)")
