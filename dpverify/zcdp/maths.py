"""The pure maths of a zCDP audit (docs/theory.md §8)."""
from __future__ import annotations

import math

import numpy as np

from ..mechanism import ZCDP_DEFAULT_DELTA as DEFAULT_DELTA  # noqa: F401  (re-exported)
from ..mechanism import validate_zcdp_delta as validate_delta  # noqa: F401  (re-exported)
from ..renyi import renyi_bernoulli
from ..tradeoff import wilson_corner

# the Rényi orders the certified curve is evaluated at (fixed before any data is seen; the bound
# holds at all of them jointly, so the grid's size costs nothing)
ORDERS = np.geomspace(1.01, 256.0, 96)
SEARCH_SAMPLES = 1 << 17      # search runs per input and pair (at most the certifying size)
SHRINK_Z = 1.0                # planning: search rates shrunk this many standard errors together
SEED_TAG = 0x7A636470         # "zcdp": the Rényi part draws apart from the implied audit


def implied_epsilon(rho: float, delta: float) -> float:
    """ε of the (ε, δ)-DP that ρ-zCDP implies: ρ + 2·√(ρ·ln(1/δ)) (Bun & Steinke 2016,
    Prop. 1.3; docs/theory.md §8)."""
    return rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))


def error_split(confidence: float) -> tuple[float, float]:
    """(level of each of the Rényi part's two Clopper–Pearson bounds, confidence of the implied
    (ε, δ) audit): α_err/4 and 1 − α_err/2, α_err = 1 − confidence, so the two parts' error
    probabilities add up to α_err (union bound)."""
    alpha = 1.0 - confidence
    return alpha / 4.0, 1.0 - alpha / 2.0


def renyi_curve_lower(p_low, q_high, orders):
    """min of D_α(Bern(p) ‖ Bern(q)) over p ≥ p_low, q ≤ q_high, for every order at once:
    D_α(Bern(p_low) ‖ Bern(q_high)) when p_low > q_high, else 0.

    Why: h(p, q) = p^α q^{1−α} + (1−p)^α (1−q)^{1−α} is convex in each argument with its
    minimum 1 at p = q, so on {p > q} it grows with p and falls with q; the box's corner nearest
    the diagonal is its minimum (the same value `renyi.renyi_lower_bound` finds on the box
    [p_low, 1] × [0, q_high]). docs/theory.md §8."""
    p_low = np.asarray(p_low, float)
    q_high = np.asarray(q_high, float)
    return np.where(p_low > q_high, renyi_bernoulli(p_low, q_high, orders), 0.0)


def certified_rho(orders, lower) -> tuple[float, float]:
    """(max_α D_α^LB/α, the order attaining it): a lower bound on the smallest ρ for which
    D_α ≤ ρα at every α, since the curve holds at all orders jointly (docs/theory.md §8)."""
    ratio = np.asarray(lower, float) / np.asarray(orders, float)
    i = int(np.argmax(ratio))
    return float(ratio[i]), float(np.asarray(orders)[i])


def planned_rho(k_p, m_p, k_q, m_q, n: int, level: float, orders=ORDERS) -> np.ndarray:
    """Planning proxy, from search counts only (never certifies): the search rates are shrunk
    SHRINK_Z standard errors towards each other (Wilson), the Clopper–Pearson bounds a
    certifying sample of n runs would give at `level` are approximated by Wilson bounds at
    z = Φ⁻¹(1 − level), and the expected certified ρ is max_α of that corner's D_α/α.
    Vectorised over thresholds (k_p, k_q arrays)."""
    p_n, q_n = wilson_corner(k_p, m_p, k_q, m_q, n, level, SHRINK_Z)
    curve = renyi_curve_lower(p_n[:, None], q_n[:, None], np.asarray(orders)[None, :])
    return (curve / np.asarray(orders)[None, :]).max(axis=1)
