"""The pure maths of curve claims (docs/theory.md §9; audited by dpverify.fdp): f-DP and μ-GDP (Dong, Roth & Su, JRSS-B
2022), privacy profiles δ(ε), the conversions between them, and what one certified event box
proves about each.

Conventions. An event S on the ordered pair (D, D') has p = P[M(D) ∈ S], q = P[M(D') ∈ S]; as
a test of D′ against D that rejects on S, its errors are α = q and β = 1 − p. A claim allows the
point when β ≥ f(α), i.e. p ≤ 1 − f(q). The audit's box is p ≥ p_low, q ≤ q_high (two one-sided
Clopper–Pearson bounds); every figure below is a function of that box alone.
"""
from __future__ import annotations

import math

import numpy as np
from scipy.stats import norm

# ε at which a privacy profile is read (its values in between only ever loosen the curve the
# audit tests, see `profile_tradeoff`): steps of 0.005 up to 4, 0.04 up to 20, 0.5 up to 64
EPSILON_GRID = np.unique(np.concatenate([np.linspace(0.0, 4.0, 801), np.linspace(4.0, 20.0, 401),
                                         np.linspace(20.0, 64.0, 89)]))
# δ at which certified ε is compared with the claim's ε (planning, the conclusive rule, reports)
DELTA_GRID = np.geomspace(1e-12, 0.99, 241)
# α at which a trade-off function is read to give its profile (reports and the conclusive rule
# only; the verdict reads f at the certified point itself)
ALPHA_GRID = np.unique(np.concatenate([[0.0], np.geomspace(1e-12, 1e-3, 400),
                                       np.linspace(1e-3, 1.0, 2000)]))


def gdp_tradeoff(mu: float, alpha):
    """G_μ(α) = Φ(Φ⁻¹(1 − α) − μ): the trade-off of N(0, 1) against N(μ, 1) (theory.md §9.1)."""
    a = np.clip(np.asarray(alpha, dtype=float), 0.0, 1.0)
    return norm.cdf(norm.isf(a) - mu)


def gdp_profile(mu: float, epsilon):
    """δ(ε) of μ-GDP: Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2) (Dong, Roth & Su 2022, Cor. 2.13;
    theory.md §9.1), the second term in logs so that large ε neither overflows nor loses δ."""
    e = np.asarray(epsilon, dtype=float)
    first = norm.cdf(-e / mu + mu / 2)
    second = np.exp(e + norm.logcdf(-e / mu - mu / 2))
    return np.clip(first - second, 0.0, 1.0)


def gdp_mu_lower(p_low, q_high):
    """Certified μ: Φ⁻¹(p_low) − Φ⁻¹(q_high), or 0 when p_low ≤ q_high. μ-GDP means
    Φ⁻¹(p) − Φ⁻¹(q) ≤ μ for every event, and the left side only shrinks as p falls to p_low and
    q rises to q_high, so any μ the mechanism meets is at least this (theory.md §9.3)."""
    p, q = np.asarray(p_low, float), np.asarray(q_high, float)
    with np.errstate(invalid="ignore"):
        mu = norm.ppf(p) - norm.ppf(q)
    return np.where(p > q, np.nan_to_num(mu, nan=0.0, posinf=np.inf), 0.0)


def profile_tradeoff(epsilons, deltas, alpha):
    """The trade-off function a profile promises, read on its grid:
    f(α) = max_i max{0, 1 − δ_i − e^{ε_i} α, e^{−ε_i}(1 − δ_i − α)} (Dong, Roth & Su 2022,
    Prop. 2.12, the sup over ε taken on the grid). Fewer ε can only lower f, so a test against
    it flags nothing the whole profile would allow (theory.md §9.2)."""
    a = np.asarray(alpha, dtype=float)
    eps = np.asarray(epsilons, float)
    dlt = np.asarray(deltas, float)
    flat = a.reshape(-1, 1)
    first = 1.0 - dlt - np.exp(eps) * flat
    second = np.exp(-eps) * (1.0 - dlt - flat)
    out = np.maximum(np.maximum(first, second).max(axis=1), 0.0)
    return out.reshape(a.shape)


def tradeoff_profile(f, epsilon, alphas=ALPHA_GRID):
    """δ(ε) = max_α (1 − f(α) − e^ε α) of a trade-off function f (Dong, Roth & Su 2022,
    Prop. 2.12), the max taken on `alphas`: at most the true δ, used for pictures and for the
    conclusive rule, never for the verdict (theory.md §9.2)."""
    e = np.atleast_1d(np.asarray(epsilon, dtype=float))
    a = np.asarray(alphas, float)
    beta = np.asarray(f(a), float)
    values = (1.0 - beta)[None, :] - np.exp(e)[:, None] * a[None, :]
    out = np.clip(values.max(axis=1), 0.0, 1.0)
    return out if np.ndim(epsilon) else float(out[0])


def delta_lower(p_low, q_high, epsilon):
    """Certified δ at ε from the box: any δ with which the mechanism is (ε, δ)-DP is at least
    max{0, p_low − e^ε q_high, (1 − q_high) − e^ε (1 − p_low)}: the event S in one order, its
    complement in the other (theory.md §9.3)."""
    e = np.exp(np.asarray(epsilon, dtype=float))
    return np.maximum.reduce([np.zeros_like(e), p_low - e * q_high,
                              (1.0 - q_high) - e * (1.0 - p_low)])


def epsilon_lower_at(p_low, q_high, delta: float) -> float:
    """Certified ε at δ from the box: the largest ε whose `delta_lower` exceeds δ, i.e.
    max{ln((p_low − δ)/q_high), ln((1 − q_high − δ)/(1 − p_low))}, 0 when neither is positive
    (theory.md §9.3)."""
    best = 0.0
    for top, bottom in ((p_low - delta, q_high), (1.0 - q_high - delta, 1.0 - p_low)):
        if top > 0:
            best = max(best, math.inf if bottom <= 0 else math.log(top / bottom))
    return best


def epsilon_lower_grid(p_low, q_high, deltas=DELTA_GRID) -> np.ndarray:
    """`epsilon_lower_at` for arrays of boxes (p_low, q_high) at every δ of `deltas`: shape
    (boxes, deltas)."""
    p = np.asarray(p_low, float).reshape(-1, 1)
    q = np.asarray(q_high, float).reshape(-1, 1)
    d = np.asarray(deltas, float).reshape(1, -1)
    with np.errstate(divide="ignore", invalid="ignore"):
        first = np.where(p - d > 0, np.log(p - d) - np.log(q), -np.inf)
        second = np.where(1 - q - d > 0, np.log(1 - q - d) - np.log(1 - p), -np.inf)
    return np.maximum(np.maximum(first, second), 0.0)


def claim_reached(p_low, q_high, claimed_epsilons, deltas=DELTA_GRID):
    """(ratio, index): per box, the largest certified ε at δ over the claim's ε at that δ,
    max over `deltas`, and the δ index where it is largest. Above 1 the box breaks the claim
    at that δ; 1/2 means half the claim measured. A claim of ε = 0 at δ (δ at or above its
    δ(0)) counts as broken by any positive certified ε there (ratio ∞)."""
    certified = epsilon_lower_grid(p_low, q_high, deltas)
    claimed = np.asarray(claimed_epsilons, float).reshape(1, -1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(claimed > 0, certified / claimed, np.where(certified > 0, np.inf, 0.0))
    index = np.argmax(ratio, axis=1)
    return ratio[np.arange(ratio.shape[0]), index], index


def wilson_corner(k_p, m_p, k_q, m_q, n: int, level: float, shrink_z: float = 1.0):
    """Planning proxy from search counts only (never certifies): the search rates shrunk
    `shrink_z` standard errors towards each other, then the bounds a certifying sample of n runs
    would give at `level`, both by Wilson's interval (p_low, q_high arrays)."""
    from .stats import wilson_bounds
    p_s = wilson_bounds(k_p, m_p, shrink_z)[0]
    q_s = wilson_bounds(k_q, m_q, shrink_z)[1]
    z = float(norm.isf(level))
    return wilson_bounds(p_s * n, n, z)[0], wilson_bounds(q_s * n, n, z)[1]
