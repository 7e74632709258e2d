"""The result of a zCDP audit."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..kinds import ZCDP
from ..result import (INCONCLUSIVE_ADVICE, OWN_RANDOMNESS_NOTE, AuditResult, HasOutcome,
                      Witness, divergence_measured, jsonable)


@dataclass(frozen=True)
class ZcdpAuditResult(HasOutcome):
    """Outcome of auditing a ρ-zCDP claim (`audit_zcdp`).

    verdict "violation": with probability ≥ `confidence` the mechanism is not ρ-zCDP — either
    its certified `rho_lower_bound` exceeds the claim (k²ρ for pairs at group distance k) or
    the implied (ε, δ) audit (`implied`) certified a violation. "pass": neither at this budget,
    not a proof of privacy. `renyi_lower[i]` is the certified lower bound on D_{orders[i]} on
    the witness's pair, all orders jointly; `alpha` the order where D_α^LB/α is largest.
    """

    kind: ClassVar[str] = ZCDP

    mechanism: str
    verdict: str
    claimed_rho: float
    rho_lower_bound: float
    alpha: float
    orders: tuple
    renyi_lower: tuple
    implied_epsilon: float
    implied_delta: float
    implied: AuditResult
    confidence: float
    witness: Witness | None
    samples: int
    seconds: float
    seed: int
    randomness: str = "rng"
    distance: int = 1   # group distance of the pairs: the claim audited is distance²·ρ

    # -- what callers written for AuditResult read ------------------------------------------
    @property
    def conclusive(self) -> bool:
        """A violation, or a pass that could have caught a gross violation: the implied
        (ε, δ) audit is conclusive, or the certified ρ reaches half the claim (docs/zcdp.md)."""
        return (self.verdict == "violation" or self.implied.conclusive
                or divergence_measured(self.rho_lower_bound, self.effective_rho))

    @property
    def effective_rho(self) -> float:
        """The ρ the pairs are audited against: k²ρ at group distance k."""
        return self.claimed_rho * self.distance ** 2

    @property
    def rho_violated(self) -> bool:
        return self.rho_lower_bound > self.effective_rho

    @property
    def reproducible(self) -> bool:
        return self.randomness == "rng"

    @property
    def interrupted(self) -> bool:
        return self.implied.interrupted

    @property
    def support_mismatch(self) -> bool:
        return self.witness is not None and self.witness.support_mismatch

    @property
    def claimed_epsilon(self) -> float:
        """The implied claim's ε (what gate/plugin code written for (ε, δ) audits shows)."""
        return self.implied_epsilon

    @property
    def claimed_delta(self) -> float:
        return self.implied_delta

    @property
    def epsilon_lower_bound(self) -> float:
        """The implied (ε, δ) audit's certified ε."""
        return self.implied.epsilon_lower_bound

    @property
    def resolution(self) -> float:
        return self.implied.resolution

    @property
    def curves(self):
        return None

    @property
    def divergence_at_alpha(self) -> float:
        """The certified D_α lower bound at the reported order `alpha`."""
        if not self.orders or math.isnan(self.alpha):
            return 0.0
        return float(self.renyi_lower[int(np.argmin(np.abs(np.asarray(self.orders)
                                                           - self.alpha)))])

    # -- text --------------------------------------------------------------------------------
    def claim_text(self) -> str:
        group = (f" (pairs {self.distance} apart: {self.effective_rho:g}-zCDP)"
                 if self.distance > 1 else "")
        return f"ρ={self.claimed_rho:g}-zCDP{group}"

    def rho_clause(self) -> str:
        return (f"certified ρ ≥ {self.rho_lower_bound:.4g} (D_α ≥ "
                f"{self.divergence_at_alpha:.4g} at α = {self.alpha:.3g})")

    def implied_clause(self) -> str:
        i = self.implied
        word = i.word() if i.outcome == "violation" else i.outcome
        return (f"implied (ε={self.implied_epsilon:.4g}, δ={self.implied_delta:g})-DP audit: "
                f"{word}, certified ε ≥ {i.epsilon_lower_bound:.4g} at confidence "
                f"{i.confidence:g}")

    def headline(self) -> str:
        """The verdict line, without the padding of `summary`."""
        word = self.word()
        return (f"{word} {self.mechanism}: claimed {self.claim_text()}, {self.rho_clause()} at "
                f"confidence {self.confidence:g}; {self.implied_clause()}")

    def summary(self) -> str:
        lines = [f"{self.word():<10} {self.mechanism}: claimed {self.claim_text()}, "
                 f"{self.rho_clause()} at confidence {self.confidence:g}",
                 f"           {self.implied_clause()}"]
        if not self.conclusive:
            lines.append(f"           this budget could not have caught a gross violation: "
                         f"certified ρ below half the claim and the implied audit "
                         f"inconclusive; {INCONCLUSIVE_ADVICE}")
        if self.witness is not None:
            lines += self.witness.summary_lines()
        lines.append(f"           {self.samples:,} mechanism runs ({self.implied.samples:,} in "
                     f"the implied audit), {self.seconds:.2f} s, seed {self.seed}"
                     + ("  [INTERRUPTED]" if self.interrupted else ""))
        if not self.reproducible:
            lines.append(OWN_RANDOMNESS_NOTE)
        return "\n".join(lines)

    def as_dict(self) -> dict:
        return jsonable({
            "kind": self.kind, "mechanism": self.mechanism, "verdict": self.verdict,
            "conclusive": self.conclusive, "outcome": self.outcome,
            "claimed": {"zcdp_rho": self.claimed_rho, "implied_epsilon": self.implied_epsilon,
                        "implied_delta": self.implied_delta},
            "rho_lower_bound": self.rho_lower_bound, "alpha": self.alpha,
            "group_distance": self.distance, "confidence": self.confidence,
            "samples": self.samples, "seconds": self.seconds, "seed": self.seed,
            "witness": self.witness.as_dict() if self.witness else None,
            "implied": self.implied.as_dict(),
            "renyi": {"orders": list(self.orders), "lower_bounds": list(self.renyi_lower)},
            "interrupted": self.interrupted, "randomness": self.randomness,
            "reproducible": self.reproducible})
