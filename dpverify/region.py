"""Pure maths of the privacy region (theory.md §1, §3): no IO, no sampling.

A test that decides "D or D'" from one output has false-positive rate α (it says D on a D'
output) and false-negative rate β. (ε, δ)-DP holds iff every test stays inside
R(ε, δ) = {α + e^ε β ≥ 1 − δ and e^ε α + β ≥ 1 − δ} (Kairouz, Oh, Viswanath, ICML 2015),
i.e. above the trade-off function f_{ε,δ}(α) = max{0, 1 − δ − e^ε α, e^{−ε}(1 − δ − α)}.
"""
from __future__ import annotations

import math

import numpy as np
from scipy.stats import norm


def boundary(alpha, epsilon: float, delta: float = 0.0):
    """f_{ε,δ}(α): the smallest β an (ε, δ)-DP mechanism allows at false-positive rate α."""
    alpha = np.asarray(alpha, dtype=float)
    return np.maximum.reduce([np.zeros_like(alpha), 1 - delta - math.exp(epsilon) * alpha,
                              math.exp(-epsilon) * (1 - delta - alpha)])


def box_outside(alpha_high, beta_high, epsilon: float, delta: float = 0.0):
    """True where a confidence box [·, α_high] × [·, β_high] lies wholly outside R(ε, δ): even
    its most favourable corner (α_high, β_high) breaks one of the two inequalities."""
    a = np.asarray(alpha_high, dtype=float)
    b = np.asarray(beta_high, dtype=float)
    e = math.exp(epsilon)
    return (a + e * b < 1 - delta) | (e * a + b < 1 - delta)


def laplace_tradeoff(mu: float):
    """Exact trade-off of Laplace with Δ/b = μ on the pair (0, Δ) (theory.md §3)."""
    def curve(alpha):
        a = np.clip(np.asarray(alpha, dtype=float), 0.0, 1.0)
        low = 1 - math.exp(mu) * a
        mid = math.exp(-mu) / (4 * np.maximum(a, 1e-300))
        high = math.exp(-mu) * (1 - a)
        return np.where(a < math.exp(-mu) / 2, low, np.where(a <= 0.5, mid, high))
    return curve


def gaussian_tradeoff(mu: float):
    """G_μ(α) = Φ(Φ⁻¹(1 − α) − μ), μ = Δ₂/σ (Dong, Roth, Su 2019; theory.md §3)."""
    def curve(alpha):
        a = np.clip(np.asarray(alpha, dtype=float), 0.0, 1.0)
        return norm.cdf(norm.ppf(1 - a) - mu)
    return curve


def randomized_response_tradeoff(epsilon: float, k: int = 2):
    """k-ary randomized response with keep probability e^ε/(e^ε + k − 1), outputs 0 vs 1: the
    optimal tests reject on {0}, then on everything but {1}, so the curve is piecewise linear
    through (0, 1), (q, 1 − p), (1 − p, q), (1, 0) with p = e^ε/(e^ε + k − 1), q = 1/(e^ε + k − 1)."""
    p = math.exp(epsilon) / (math.exp(epsilon) + k - 1)
    q = 1 / (math.exp(epsilon) + k - 1)

    def curve(alpha):
        return np.interp(np.asarray(alpha, dtype=float), [0, q, 1 - p, 1], [1, 1 - p, q, 0])
    return curve
