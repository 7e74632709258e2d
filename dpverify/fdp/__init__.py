"""Claims that are whole curves (docs/theory.md §9, docs/fdp.md): μ-Gaussian DP and f-DP
(Dong, Roth & Su, JRSS-B 2022), and privacy profiles δ(ε) such as accountants report.

    dpverify/curve_claim.py   the claim, read once: CurveClaim (its f(α), its δ(ε), its ε
                              at a δ), as the decorator declares it
    dpverify/tradeoff.py      the pure maths: G_μ, GDP's profile, profile ↔ trade-off, what a
                              box certifies
    audit.py    audit_curve: one event chosen on search runs, counted on fresh ones, tested
                against the whole curve at once
    result.py   CurveAuditResult: the verdict and the figures in the claim's own terms

A violation is an event whose test (α = P[M(D′) ∈ S], β = P[M(D) ∉ S]) lies below the claimed
curve with both error rates bounded by Clopper–Pearson at (1 − confidence)/2 each. The curve
is tested at every point by the same box, so no correction over its points is needed.
"""
from .audit import REFERENCE_DELTA, audit_curve
from ..curve_claim import CurveClaim, curve_claim, gdp_claim, profile_claim, tradeoff_claim
from ..tradeoff import (delta_lower, epsilon_lower_at, gdp_mu_lower, gdp_profile, gdp_tradeoff,
                    profile_tradeoff, tradeoff_profile)
from .result import CurveAuditResult

__all__ = ["audit_curve", "CurveAuditResult", "CurveClaim", "curve_claim", "gdp_claim",
           "profile_claim", "tradeoff_claim", "gdp_tradeoff", "gdp_profile", "gdp_mu_lower",
           "profile_tradeoff", "tradeoff_profile", "delta_lower", "epsilon_lower_at",
           "REFERENCE_DELTA"]
