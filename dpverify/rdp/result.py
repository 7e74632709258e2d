"""The result of an (α, ρ)-RDP audit (`dpverify.rdp.audit_rdp`)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..evidence import lower_bound_text
from ..kinds import RDP
from ..result import INCONCLUSIVE_ADVICE, HasOutcome, Witness, divergence_measured, jsonable


@dataclass(frozen=True)
class RenyiAuditResult(HasOutcome):
    """Outcome of auditing an (α, ρ)-RDP claim: verdict "violation" when the certified lower
    bound on D_α(M(D) ‖ M(D')) exceeds ρ on some pair (order as in `witness`)."""

    mechanism: str
    verdict: str
    alpha: float
    claimed_rho: float
    rho_lower_bound: float
    confidence: float
    implied_epsilon: float     # (ε, δ) the claim implies by Balle et al. 2020, at implied_delta
    implied_delta: float
    witness: Witness | None
    samples: int
    seconds: float
    seed: int
    # the witness's Clopper–Pearson box (p_low, p_high, q_low, q_high), each bound at
    # (1 − confidence)/4: `rho_lower_bound` is the least two-cell D_α over it
    box: tuple | None = None
    kind: ClassVar[str] = RDP

    @property
    def conclusive(self) -> bool:
        """A violation, or a pass whose certified D_α reaches half the claimed ρ."""
        return (self.verdict == "violation"
                or divergence_measured(self.rho_lower_bound, self.claimed_rho))

    @property
    def interrupted(self) -> bool:
        """An RDP audit is one stage; Ctrl-C stops it with KeyboardInterrupt (what the command
        line reads of every result)."""
        return False

    def summary(self) -> str:
        bound = lower_bound_text(self.rho_lower_bound, self.claimed_rho)  # rounded down
        head = (f"{self.word():<10} {self.mechanism}: "
                f"claimed (α={self.alpha:g}, ρ={self.claimed_rho:g})-RDP "
                f"[⇒ (ε={self.implied_epsilon:.3g}, δ={self.implied_delta:g})], certified "
                f"D_α ≥ {bound} at confidence {self.confidence:g}")
        lines = [head]
        if not self.conclusive:
            lines.append("           this budget could not have caught a gross violation: "
                         f"certified D_α below half the claimed ρ; {INCONCLUSIVE_ADVICE}")
        if self.witness is not None:
            lines += self.witness.summary_lines()
        lines.append(f"           {self.samples:,} mechanism runs, {self.seconds:.2f} s, "
                     f"seed {self.seed}")
        return "\n".join(lines)

    def as_dict(self) -> dict:
        return jsonable({
            "kind": self.kind, "mechanism": self.mechanism, "verdict": self.verdict,
            "conclusive": self.conclusive, "outcome": self.outcome,
            "claimed": {"rdp_alpha": self.alpha, "rdp_rho": self.claimed_rho,
                        "implied_epsilon": self.implied_epsilon,
                        "implied_delta": self.implied_delta},
            "rho_lower_bound": self.rho_lower_bound, "confidence": self.confidence,
            "samples": self.samples, "seconds": self.seconds, "seed": self.seed,
            "box": self.box, "witness": self.witness.as_dict() if self.witness else None})
