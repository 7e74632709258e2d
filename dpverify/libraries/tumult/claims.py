"""The claim of a Tumult Core measurement (docs/theory.md §7): `d_in` as an exact number in its
input metric, then `measurement.privacy_function(d_in)` read by output measure as ε, (ε, δ) or
ρ-zCDP.

Tumult Core states its claims as exact numbers (`ExactNumber`, sympy expressions such as 1/3 or
sqrt(2)/4). They become floats rounded UP, by Tumult Core's own `to_float(round_up=True)`: the
float audited is never below the library's figure, so a claim that holds exactly also holds as
read, and a violation of the float is a violation of the exact claim.
"""
from __future__ import annotations

import math
from fractions import Fraction

from ...errors import InvalidClaimError, InvalidPairsError
from ...mechanism import validate_claim, validate_zcdp

DEFAULT_DELTA = 1e-6  # δ at which a zCDP measurement converted to approximate DP is read


def exact(value):
    """A number as Tumult Core takes it: ints stay ints, a float becomes the exact rational it
    stores (Tumult Core refuses floats, which rarely mean the value they are written as)."""
    if isinstance(value, bool):
        raise TypeError("a distance is a number, not a bool")
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"a distance must be finite, got {value!r}")
        return int(value) if value.is_integer() else Fraction(value)
    return value


def convert_distance(measurement, d_in, label):
    """d_in as an exact number valid for the measurement's input metric (a dict of them for a
    DictMetric: a single number applies to every key). Raises InvalidPairsError otherwise."""
    from tmlt.core.utils.exact_number import ExactNumber
    metric = measurement.input_metric
    keys = getattr(metric, "key_to_metric", None)
    try:
        if keys is not None:
            d_in = {key: exact(d_in[key] if isinstance(d_in, dict) else d_in) for key in keys}
            metric.validate(d_in)
            positive = any(ExactNumber(v) > 0 for v in d_in.values())
        else:
            d_in = exact(d_in)
            metric.validate(d_in)
            positive = ExactNumber(d_in) > 0
    except (TypeError, ValueError, KeyError) as exc:
        raise InvalidPairsError(f"d_in={d_in!r} is not a distance of {label!r}'s input metric "
                                f"{metric}: {str(exc).strip()}") from None
    if not positive:
        raise InvalidPairsError(f"d_in must be a positive distance for {label!r}, got "
                                f"{d_in!r}: at distance 0 there is nothing to audit")
    return d_in


def to_float_up(value) -> float:
    """An ExactNumber (or int, Fraction) as a float ≥ it: for a rational value the smallest
    such float; otherwise (sqrt(2), π, ∞) Tumult Core's own to_float(round_up=True)."""
    try:
        exact_value = Fraction(str(getattr(value, "expr", value)))
    except (TypeError, ValueError, ZeroDivisionError):
        to_float = getattr(value, "to_float", None)
        return float(to_float(round_up=True)) if to_float else float(value)
    nearest = float(exact_value)
    return nearest if Fraction(nearest) >= exact_value else math.nextafter(nearest, math.inf)


def _privacy_function(measurement, d_in, label):
    """measurement.privacy_function(d_in), with Tumult Core's refusals as InvalidClaimError."""
    try:
        return measurement.privacy_function(d_in)
    except NotImplementedError:
        raise
    except Exception as exc:
        raise InvalidClaimError(f"Tumult Core could not compute the privacy of {label!r} at "
                                f"d_in={d_in!r}: {str(exc).strip()}; check d_in, or state the "
                                "claim yourself: from_measurement(measurement, epsilon=..., "
                                "delta=...)") from None


ZCDP_EPSILON_PLACES = 4  # decimals of the ε a zCDP-to-approximate-DP relation is asked about


def _zcdp_as_approx(measurement, d_in, delta, label):
    """(ε, δ) of a RhoZCDPToApproxDP measurement, which has a privacy relation but no privacy
    function: ε = ρ + 2√(ρ ln(1/δ)) (the conversion it implements; Bun & Steinke 2016,
    Proposition 1.3) from ρ read off the wrapped measurement, rounded UP to
    ZCDP_EPSILON_PLACES decimals, then confirmed by the measurement's own
    privacy_relation(d_in, (ε, δ)) (which solves the conversion in sympy: about a second
    with four decimals, minutes with more, hence the rounding)."""
    if not 0 < delta < 1:
        raise InvalidClaimError(f"delta must be in (0, 1) to read {label!r} as (ε, δ)-DP, got "
                                f"{delta!r}")
    rho = to_float_up(_privacy_function(measurement.zcdp_measurement, d_in, label))
    dlt = Fraction(str(delta))  # the decimal written, e.g. 1e-6 as 1/10^6
    eps = rho + 2 * math.sqrt(rho * math.log(1 / delta))
    scale = 10 ** ZCDP_EPSILON_PLACES
    eps = Fraction(math.ceil(math.nextafter(eps, math.inf) * scale), scale)
    if not measurement.privacy_relation(d_in, (eps, dlt)):
        raise InvalidClaimError(f"{label!r} does not satisfy (ε={float(eps)}, δ={delta}) at "
                                f"d_in={d_in!r} by its own privacy relation; state the claim "
                                "yourself: from_measurement(measurement, epsilon=..., delta=...)")
    return float(eps), float(dlt)


def read_claim(measurement, d_in, delta, label) -> dict:
    """{"epsilon", "delta", "zcdp"} read from the measurement at d_in (see `from_measurement`).

    By output measure: PureDP → ε (δ = 0); ApproxDP → (ε, δ); RhoZCDP → ρ (the δ of the (ε, δ)
    claim audited beside ρ is dpverify.audit's `delta=`). `delta` is only used where Tumult
    Core gives a privacy relation instead of a function (RhoZCDPToApproxDP: ε read at δ =
    `delta`, default DEFAULT_DELTA). Anything else raises InvalidClaimError naming the
    measurement.
    """
    measure = type(measurement.output_measure).__name__
    if getattr(measurement, "is_interactive", False):
        raise InvalidClaimError(f"{label!r} is interactive (it returns a queryable, not a "
                                "release): audit the measurements you would ask it to answer")
    try:
        if measure == "PureDP":
            eps = _privacy_function(measurement, d_in, label)
            return _claim(epsilon=to_float_up(eps), delta=0.0, label=label)
        if measure == "RhoZCDP":
            rho = to_float_up(_privacy_function(measurement, d_in, label))
            return {"epsilon": None, "delta": 0.0, "zcdp": _checked(validate_zcdp, label, rho)}
        if measure == "ApproxDP":
            try:
                eps, dlt = _privacy_function(measurement, d_in, label)
                eps, dlt = to_float_up(eps), to_float_up(dlt)
            except NotImplementedError:
                if type(measurement).__name__ != "RhoZCDPToApproxDP":
                    raise
                eps, dlt = _zcdp_as_approx(measurement, d_in, delta or DEFAULT_DELTA, label)
            return _claim(epsilon=eps, delta=dlt, label=label)
    except NotImplementedError as exc:
        raise InvalidClaimError(f"{label!r} has no privacy function ({str(exc).strip()}); "
                                "state the claim yourself: from_measurement(measurement, "
                                "epsilon=..., delta=...)") from None
    raise InvalidClaimError(
        f"cannot read a claim from {label!r}: its output measure {measurement.output_measure} "
        "is not PureDP, ApproxDP or RhoZCDP; state the claim yourself: "
        "from_measurement(measurement, epsilon=..., delta=...)")


def _checked(validate, label, *values):
    """validate(*values), its InvalidClaimError naming the measurement."""
    try:
        return validate(*values)
    except InvalidClaimError as exc:
        raise InvalidClaimError(f"{label!r}: {exc}") from None


def _claim(epsilon, delta, label) -> dict:
    if epsilon == math.inf:
        raise InvalidClaimError(f"{label!r} claims ε = ∞ (no noise: a scale of 0?), which "
                                "promises nothing to audit")
    eps, dlt = _checked(validate_claim, label, epsilon, delta)
    return {"epsilon": eps, "delta": dlt, "zcdp": None}
