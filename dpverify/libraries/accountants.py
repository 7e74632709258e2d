"""Privacy accountants' curves as claims (dpverify.fdp; docs/fdp.md): what Google's
`dp_accounting` says a composition of events costs, read as a whole privacy profile δ(ε).

    import dp_accounting, dpverify
    from dpverify.libraries.accountants import dp_accounting_profile
    step = dp_accounting.PoissonSampledDpEvent(0.1, dp_accounting.GaussianDpEvent(1.0))
    claim = dp_accounting_profile(dp_accounting.SelfComposedDpEvent(step, 10))
    dpverify.audit(my_dpsgd, profile=claim)

The accountant's own numbers are the claim, read at the ε grid of `dpverify.tradeoff`
(`get_delta` at each ε); nothing is re-derived. The PLD accountant is pessimistic by design
(its discretisation rounds δ up), so a mechanism its event describes exactly meets the curve.
OpenDP measurements give their profiles through `opendp.from_measurement(...,
whole_profile=True)`.
"""
from __future__ import annotations

from ..curve_claim import CurveClaim, profile_claim
from ..errors import InvalidClaimError
from . import require

ACCOUNTANTS = ("pld", "rdp")
RELATIONS = {"add_or_remove_one": "ADD_OR_REMOVE_ONE", "replace_one": "REPLACE_ONE",
             "replace_special": "REPLACE_SPECIAL"}


def require_dp_accounting():
    """Import dp_accounting, or raise a DpVerifyError saying how to install it."""
    return require("dp_accounting", "accountants", "dp-accounting 0.4-0.6")


def dp_accounting_profile(event, accountant: str = "pld",
                          neighboring_relation: str = "add_or_remove_one",
                          value_discretization_interval: float = 1e-4,
                          name: str | None = None) -> CurveClaim:
    """The privacy profile `dp_accounting` gives `event` (a DpEvent, e.g. T self-composed
    Poisson-subsampled Gaussian steps), as a curve claim.

    `event` may also be an accountant that has composed its events already (anything with
    `get_delta(epsilon)`, e.g. a `PLDAccountant`). `accountant`: "pld" (the privacy-loss
    distribution accountant, tight up to its discretisation) or "rdp" (Rényi accounting, an
    upper bound that is looser). `neighboring_relation`: "add_or_remove_one" (the default of
    both accountants), "replace_one" or "replace_special". The claim holds for pairs of
    neighbours under that relation: give the audit such pairs.
    """
    dpa = require_dp_accounting()
    if hasattr(event, "get_delta"):
        composed, label = event, name or type(event).__name__
    else:
        composed = _accountant(dpa, accountant, neighboring_relation,
                               value_discretization_interval)
        if not composed.supports(event):
            raise InvalidClaimError(f"dp_accounting's {accountant} accountant cannot account "
                                    f"for {event} under {neighboring_relation}")
        composed.compose(event)
        label = name or f"dp_accounting's {accountant.upper()} accountant for {event}"

    def delta_of(epsilon):
        return float(composed.get_delta(float(epsilon)))
    return profile_claim(delta_of, name=label)


def _accountant(dpa, kind: str, relation: str, interval: float):
    if kind not in ACCOUNTANTS:
        raise InvalidClaimError(f"accountant must be one of {', '.join(ACCOUNTANTS)}, got "
                                f"{kind!r}")
    if relation not in RELATIONS:
        raise InvalidClaimError(f"neighboring_relation must be one of {', '.join(RELATIONS)}, "
                                f"got {relation!r}")
    neighbours = getattr(dpa.NeighboringRelation, RELATIONS[relation])
    if kind == "pld":
        from dp_accounting.pld import pld_privacy_accountant
        return pld_privacy_accountant.PLDAccountant(
            neighboring_relation=neighbours, value_discretization_interval=interval)
    from dp_accounting.rdp import rdp_privacy_accountant
    return rdp_privacy_accountant.RdpAccountant(neighboring_relation=neighbours)


__all__ = ["dp_accounting_profile", "require_dp_accounting", "ACCOUNTANTS", "RELATIONS"]
