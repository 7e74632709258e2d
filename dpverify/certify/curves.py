"""The witness's privacy curves: trade-off boxes, certified δ(ε) and p-values against ε, from
the counts of its score at a grid of thresholds chosen on search data (docs/method.md,
"Pictures"; docs/theory.md §1–§2)."""
from __future__ import annotations

import math

import numpy as np

from ..region import box_outside
from ..result import PrivacyCurves
from ..stats import cp_lower, cp_upper, delta_lower_curve, epsilon_pvalue


def privacy_curves_of(grid: dict, epsilon: float, delta: float, alpha: float) -> PrivacyCurves:
    """Trade-off boxes, certified δ(ε) and p-values from the witness's grid counts.

    The witness's stage spent `fraction`·α on each of its bounds; the curves get the same share,
    split over the grid (Bonferroni), so all boxes and the whole δ(ε) curve hold jointly with
    probability ≥ 1 − 4·fraction·α per plot; the p-value is scaled by the same share.
    """
    n_p, n_q = grid["n_p"], grid["n_q"]
    k_p, k_q = np.asarray(grid["k_p"]), np.asarray(grid["k_q"])
    T = len(k_p)
    box_level = grid["fraction"] * alpha / T
    p_low, p_high = cp_lower(k_p, n_p, box_level), cp_upper(k_p, n_p, box_level)
    q_low, q_high = cp_lower(k_q, n_q, box_level), cp_upper(k_q, n_q, box_level)
    top = max(4 * epsilon, 1.0)
    eps_grid = np.linspace(0, top if math.isfinite(top) else 10.0, 41)
    kp_event, kq_event = grid["k_event"]
    pvalues = [min(1.0, epsilon_pvalue(kp_event, n_p, kq_event, n_q, e, delta,
                                       fraction=grid["fraction"],
                                       ratio_test=grid["ratio_test"])) for e in eps_grid]
    return PrivacyCurves(
        thresholds=tuple(map(float, grid["thresholds"])),
        alpha=tuple(k_q / n_q), beta=tuple(1 - k_p / n_p),
        alpha_low=tuple(q_low), alpha_high=tuple(q_high),
        beta_low=tuple(1 - p_high), beta_high=tuple(1 - p_low),
        outside=tuple(bool(x) for x in box_outside(q_high, 1 - p_low, epsilon, delta)),
        box_confidence=1 - 4 * T * box_level,
        epsilons=tuple(map(float, eps_grid)),
        delta_lower=tuple(map(float, delta_lower_curve(k_p, k_q, n_p, n_q, eps_grid,
                                                       2 * box_level))),
        pvalues=tuple(map(float, pvalues)), privacy_loss=grid["privacy_loss"])
