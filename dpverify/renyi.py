"""Rényi-DP claims (Mironov 2017): certified lower bounds on D_α from a two-cell partition.

D_α(P‖Q) = 1/(α−1) · ln E_Q[(p/q)^α]. Post-processing cannot increase it, so any event S gives
D_α(P‖Q) ≥ D_α(Bern(P(S)) ‖ Bern(Q(S))). For α > 1, (p, q) ↦ p^α q^{1−α} + (1−p)^α (1−q)^{1−α}
is jointly convex (a sum of perspectives of t ↦ t^α), so its minimum over the Clopper–Pearson
box [p_L, p_U] × [q_L, q_U] is 0 when the box meets the diagonal and otherwise lies on the box's
edge, where a bounded one-dimensional convex minimisation finds it: that minimum is a lower
bound on D_α holding whenever both intervals do (confidence ≥ 1 − 4·level).
"""
from __future__ import annotations

import math

import numpy as np
from scipy.optimize import minimize_scalar

from .errors import InvalidClaimError


def validate_rdp(rdp) -> tuple[float, float]:
    try:
        alpha, rho = (float(x) for x in rdp)
    except (TypeError, ValueError):
        raise InvalidClaimError(f"rdp must be (alpha, rho), got {rdp!r}") from None
    if not alpha > 1 or not rho > 0 or math.isinf(alpha):
        raise InvalidClaimError(f"an RDP claim needs a finite alpha > 1 and rho > 0, got {rdp!r}")
    return alpha, rho


def renyi_bernoulli(p, q, alpha):
    """D_α(Bern(p) ‖ Bern(q)) = ln(p^α q^{1−α} + (1−p)^α (1−q)^{1−α})/(α − 1) (Mironov 2017),
    in log space so that large orders neither overflow nor underflow (the direct form gives
    +inf at α = 256 for p = 0.5, q = 10⁻³, where the value is 6.21). +inf where q = 0 < p or
    q = 1 > p. Broadcasts over p, q and α."""
    p, q, a = np.broadcast_arrays(np.asarray(p, float), np.asarray(q, float),
                                  np.asarray(alpha, float))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        first = np.where(p > 0, a * np.log(p) + (1 - a) * np.log(q), -np.inf)
        second = np.where(p < 1, a * np.log1p(-p) + (1 - a) * np.log1p(-q), -np.inf)
        out = np.logaddexp(first, second) / (a - 1)
    return np.maximum(np.where(np.isnan(out), np.inf, out), 0.0)


def renyi_lower_bound(p_low, p_high, q_low, q_high, alpha: float) -> float:
    """min of D_α(Bern(p)‖Bern(q)) over the box (see module docstring)."""
    if p_low <= q_high and q_low <= p_high:  # the box meets p = q
        return 0.0
    edges = [("p", p_low, q_low, q_high), ("p", p_high, q_low, q_high),
             ("q", q_low, p_low, p_high), ("q", q_high, p_low, p_high)]
    best = math.inf
    for fixed, value, lo, hi in edges:
        def f(x, fixed=fixed, value=value):
            p, q = (value, x) if fixed == "p" else (x, value)
            return float(renyi_bernoulli(p, q, alpha))
        ends = min(f(lo), f(hi))
        if hi > lo:
            res = minimize_scalar(f, bounds=(lo, hi), method="bounded",
                                  options={"xatol": 1e-12 * max(hi, 1e-300)})
            ends = min(ends, float(res.fun))
        best = min(best, ends)
    return best


def balle_epsilon(alpha: float, rho: float, delta: float) -> float:
    """(ε, δ) implied by (α, ρ)-RDP: ε = ρ + ln((α−1)/α) − (ln δ + ln α)/(α−1)
    (Balle et al., AISTATS 2020; theory.md §1)."""
    return rho + math.log((alpha - 1) / alpha) - (math.log(delta) + math.log(alpha)) / (alpha - 1)
