"""The result of auditing a curve claim (`audit_curve`)."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..kinds import CURVE
from ..result import (INCONCLUSIVE_ADVICE, OWN_RANDOMNESS_NOTE, HasOutcome, Witness,
                      divergence_measured, jsonable)
from ..curve_claim import GDP, CurveClaim
from ..tradeoff import (DELTA_GRID, EPSILON_GRID, claim_reached, delta_lower, epsilon_lower_at,
                    gdp_mu_lower)



@dataclass(frozen=True)
class CurveAuditResult(HasOutcome):
    """Outcome of auditing a curve claim (μ-GDP, f-DP or a privacy profile).

    One event S, chosen on search runs, was counted on fresh ones: p = P[M(D) ∈ S] ≥ `p_lower`
    and q = P[M(D′) ∈ S] ≤ `q_upper`, jointly with probability ≥ `confidence`. Seen as a test
    of D′ against D, its errors are α ≤ q_upper and β ≤ 1 − p_lower. verdict "violation": that
    corner lies below the claimed curve, β_max < f(α_max), so with probability ≥ `confidence`
    the mechanism does not meet the claim. Every figure here is read off the same box, so they
    all hold together at `confidence` (docs/theory.md §9.3). "pass": no violation found at
    this budget, not a proof of privacy.
    """

    kind: ClassVar[str] = CURVE

    mechanism: str
    verdict: str
    claim: CurveClaim
    confidence: float
    p_lower: float
    q_upper: float
    witness: Witness | None
    samples: int
    seconds: float
    seed: int
    reference_delta: float = 1e-5
    randomness: str = "rng"

    # -- what the box proves ------------------------------------------------------------------
    @property
    def alpha(self) -> float:
        """The test's certified false-positive rate bound: α ≤ q_upper."""
        return self.q_upper

    @property
    def beta(self) -> float:
        """The test's certified false-negative rate bound: β ≤ 1 − p_lower."""
        return 1.0 - self.p_lower

    @property
    def claimed_beta(self) -> float:
        """f(α) at the certified α: the least β the claim allows there."""
        return float(self.claim.tradeoff(self.alpha))

    @property
    def mu_lower_bound(self) -> float:
        """Certified μ: the mechanism is μ′-GDP for no μ′ below it (maths.gdp_mu_lower)."""
        return float(gdp_mu_lower(self.p_lower, self.q_upper))

    @property
    def epsilon_lower_bound(self) -> float:
        """Certified ε at `reference_delta` (maths.epsilon_lower_at)."""
        return epsilon_lower_at(self.p_lower, self.q_upper, self.reference_delta)

    @property
    def claimed_epsilon(self) -> float:
        """The claim's ε at `reference_delta`."""
        return self.claim.epsilon_at(self.reference_delta)

    @property
    def claimed_delta(self) -> float:
        return self.reference_delta

    def delta_curves(self, epsilons=EPSILON_GRID) -> tuple[np.ndarray, np.ndarray]:
        """(certified δ lower bound, claimed δ) at each ε of `epsilons`."""
        e = np.asarray(epsilons, float)
        return (delta_lower(self.p_lower, self.q_upper, e),
                np.asarray(self.claim.profile(e), float))

    @property
    def worst_epsilon(self) -> tuple[float, float, float]:
        """(ε, certified δ, claimed δ) where the certified δ most exceeds the claimed one."""
        certified, claimed = self.delta_curves()
        i = int(np.argmax(certified - claimed))
        return float(EPSILON_GRID[i]), float(certified[i]), float(claimed[i])

    @property
    def reached(self) -> tuple[float, float, float, float]:
        """(ratio, δ, certified ε, claim's ε) at the δ where the certified ε is the largest
        share of the claim's ε (`maths.claim_reached`): above 1 a violation at that δ."""
        ratio, index = claim_reached(self.p_lower, self.q_upper, self.claim.epsilons_at_deltas)
        i = int(index[0])
        certified = epsilon_lower_at(self.p_lower, self.q_upper, float(DELTA_GRID[i]))
        return (float(ratio[0]), float(DELTA_GRID[i]), certified,
                float(self.claim.epsilons_at_deltas[i]))

    # -- what callers written for AuditResult read --------------------------------------------
    @property
    def conclusive(self) -> bool:
        """A violation, or a pass that measured at least half the claim: a certified μ of
        half the claimed μ (GDP), else a certified ε at some δ of half the claim's ε at that
        δ (`reached`; docs/fdp.md)."""
        if self.verdict == "violation":
            return True
        if self.claim.kind == GDP:
            return divergence_measured(self.mu_lower_bound, self.claim.mu)
        return divergence_measured(self.reached[0], 1.0)  # a ratio to the claim's ε

    @property
    def interrupted(self) -> bool:
        """One stage: Ctrl-C stops it with KeyboardInterrupt (what the command line reads)."""
        return False

    @property
    def reproducible(self) -> bool:
        return self.randomness == "rng"

    @property
    def support_mismatch(self) -> bool:
        return self.witness is not None and self.witness.support_mismatch

    @property
    def curves(self):
        return None

    @property
    def resolution(self) -> float:
        """Curve audits state no resolution (their conclusive rule is `reached`): ∞."""
        return math.inf

    # -- text ----------------------------------------------------------------------------------
    def claim_text(self) -> str:
        return self.claim.text()

    def certified_clause(self) -> str:
        """What the box certifies, in the claim's own terms."""
        test = (f"a test with α ≤ {self.alpha:.4g}, β ≤ {self.beta:.4g} (the claim allows "
                f"β ≥ {self.claimed_beta:.4g} there)")
        if self.claim.kind == GDP:
            return f"certified μ ≥ {self.mu_lower_bound:.4g}: {test}"
        if self.verdict == "violation":
            eps, certified, claimed = self.worst_epsilon
            return (f"{test}; at ε = {eps:.3g} certified δ ≥ {certified:.4g} against the "
                    f"claim's {claimed:.4g}")
        _, delta, certified, claimed = self.reached
        return (f"{test}; nearest the claim: certified ε ≥ {certified:.4g} at δ = {delta:.3g}, "
                f"where the claim's ε is {claimed:.4g}")

    def reference_clause(self) -> str:
        return (f"certified ε ≥ {self.epsilon_lower_bound:.4g} at δ = "
                f"{self.reference_delta:g} (the claim's ε there: {self.claimed_epsilon:.4g})")

    def headline(self) -> str:
        return (f"{self.word()} {self.mechanism}: claimed {self.claim_text()}, "
                f"{self.certified_clause()} at confidence {self.confidence:g}")

    def summary(self) -> str:
        lines = [f"{self.word():<10} {self.mechanism}: claimed {self.claim_text()}, "
                 f"{self.certified_clause()}, at confidence {self.confidence:g}",
                 f"           {self.reference_clause()}"]
        if not self.conclusive:
            lines.append("           this budget could not have caught a gross violation: "
                         "certified less than half the claim; " + INCONCLUSIVE_ADVICE)
        if self.witness is not None:
            lines += self.witness.summary_lines()
        lines.append(f"           {self.samples:,} mechanism runs, {self.seconds:.2f} s, "
                     f"seed {self.seed}")
        if not self.reproducible:
            lines.append(OWN_RANDOMNESS_NOTE)
        return "\n".join(lines)

    def as_dict(self) -> dict:
        eps, certified, claimed = self.worst_epsilon
        return jsonable({
            "kind": self.kind, "mechanism": self.mechanism, "verdict": self.verdict,
            "conclusive": self.conclusive, "outcome": self.outcome,
            "claimed": {**self.claim.as_dict(), "text": self.claim_text(),
                        "epsilon_at_reference_delta": self.claimed_epsilon,
                        "reference_delta": self.reference_delta},
            "confidence": self.confidence,
            "test": {"alpha_upper": self.alpha, "beta_upper": self.beta,
                     "claimed_beta": self.claimed_beta},
            "mu_lower_bound": self.mu_lower_bound,
            "epsilon_lower_bound": self.epsilon_lower_bound,
            "worst_epsilon": {"epsilon": eps, "certified_delta": certified,
                              "claimed_delta": claimed},
            "reached": dict(zip(("ratio", "delta", "certified_epsilon", "claimed_epsilon"),
                                self.reached)),
            "p_lower": self.p_lower, "q_upper": self.q_upper,
            "samples": self.samples, "seconds": self.seconds, "seed": self.seed,
            "witness": self.witness.as_dict() if self.witness else None,
            "interrupted": False, "randomness": self.randomness,
            "reproducible": self.reproducible})

