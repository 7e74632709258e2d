"""ρ-zCDP claims (Bun & Steinke, TCC 2016): certified lower bounds on ρ, and the (ε, δ) audit of
the claim's conversion (docs/theory.md §8).

ρ-zCDP: D_α(M(D) ‖ M(D')) ≤ ρ·α for every α > 1 and every ordered neighbouring pair, D_α the
Rényi divergence (Mironov 2017). `audit_zcdp` spends the error budget α_err = 1 − confidence in
two halves; by the union bound a mechanism that satisfies its claim is flagged with probability
at most α_err in all:

- Rényi part (α_err/2). On a SEARCH sample only, every learned score model
  (`attacks.learn_models`), threshold and direction defines a two-cell partition {S, S^c}; the cell P
  favours is oriented as S, and the event whose planned certified curve max_α D_α^LB/α is
  largest is kept (that is, the largest planned excess (D_α − ρα)/α, which does not depend on
  the claim). A FRESH certifying sample counts S under both inputs; two one-sided
  Clopper–Pearson bounds p ≥ p_L and q ≤ q_U, each at level α_err/4, hold jointly with
  probability ≥ 1 − α_err/2. Whenever they hold,
  D_α(M(D) ‖ M(D')) ≥ D_α(Bern(p) ‖ Bern(q)) ≥ D_α(Bern(p_L) ‖ Bern(q_U)) for EVERY α > 1 at
  once (post-processing, then monotonicity: `renyi_curve_lower`), so the maximum of the
  certified curve over the order grid needs no correction across orders:
  rho_lower_bound = max_α D_α^LB/α is a certified lower bound on the smallest ρ the
  mechanism satisfies, and "violation" when it exceeds the claimed ρ.
- Implied part (α_err/2). ρ-zCDP implies (ρ + 2√(ρ ln(1/δ)), δ)-DP (Bun & Steinke 2016,
  Prop. 1.3); the ordinary `dpverify.audit` checks that claim at confidence 1 − α_err/2.

`delta` is the δ of that implied claim (default 1e-6). Pairs at group distance k are audited
against k²ρ (group privacy of zCDP, Bun & Steinke 2016).
"""
from .audit import audit_zcdp
from .maths import (DEFAULT_DELTA, ORDERS, certified_rho, error_split, implied_epsilon,
                    planned_rho, renyi_curve_lower, validate_delta)
from .result import ZcdpAuditResult
from ..renyi import renyi_bernoulli

__all__ = ["audit_zcdp", "ZcdpAuditResult", "implied_epsilon", "renyi_bernoulli",
           "renyi_curve_lower", "certified_rho", "planned_rho", "error_split", "validate_delta",
           "DEFAULT_DELTA", "ORDERS"]
