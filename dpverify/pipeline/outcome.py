"""What an (ε, δ) audit's run adds up to: the bound and witness its verdict stands on, and the
`AuditResult` assembled from the run's record (`pipeline.run.AuditRun`, read, never written)."""
from __future__ import annotations

import math
import time
from enum import Enum
from typing import TYPE_CHECKING

from ..certify import privacy_curves_of, resolution
from ..certify.confirm import evidence_level, is_marginal
from ..certify.reach import leak_reach
from ..result import AuditResult, Confirmation, Witness

if TYPE_CHECKING:
    from .run import AuditRun


class ExitReason(Enum):
    """Why an audit's loop ended."""

    FINISHED = "finished"               # every stage ran
    VIOLATION = "violation proved"      # by the betting test, or a stage's certificate
    BUDGET_SPENT = "budget spent"       # an ordinary audit's seconds= ran out
    INTERRUPTED = "interrupted"         # Ctrl-C: what was certified so far stands


def standing_witness(best: Witness | None,
                     confirmation: Confirmation | None) -> tuple[float, Witness | None]:
    """(bound, witness) the verdict stands on: the audit's best, or, once a confirmation ran,
    the smaller of the two bounds (a violation stands only if both tests show it, each valid
    on its own) with the witness that gave it; a confirmation stopped before a fresh round
    leaves nothing standing as evidence."""
    lower = best.epsilon_lower_bound if best is not None else -math.inf
    if confirmation is None:
        return lower, best
    if confirmation.witness is None:
        return min(lower, confirmation.bound), None
    if confirmation.bound < best.epsilon_lower_bound:
        best = confirmation.witness
    return min(lower, confirmation.bound), best


def violation_evidence_level(best: Witness | None, epsilon: float, delta: float,
                             alpha: float) -> float | None:
    """How often, at most, a mechanism meeting its claim gives a violation as strong as the
    audit's best (`certify.confirm.evidence_level`); None without one."""
    if best is None or not best.epsilon_lower_bound > epsilon:
        return None
    return evidence_level(best, epsilon, delta, alpha)


def audit_result(run: AuditRun, runs, search_runs: int, lower: float, best: Witness | None,
                 confirmation: Confirmation | None) -> AuditResult:
    """The result of `run`: `runs` drawn per (pair, side), `search_runs` spent by an input
    search, the standing bound `lower` and witness `best` (`standing_witness`)."""
    r = run.request
    alpha = 1.0 - r.confidence
    # an unconfirmed violation's curves would draw the audit's counts, which the fresh
    # runs overruled: a pass is not drawn as a violation
    unconfirmed = confirmation is not None and not confirmation.confirmed
    curves = (privacy_curves_of(run.best_curve, r.epsilon, r.delta, alpha)
              if r.curves and run.best_curve is not None and not unconfirmed else None)
    return AuditResult(
        mechanism=run.mech.name, verdict="violation" if lower > r.epsilon else "pass",
        claimed_epsilon=r.epsilon, claimed_delta=r.delta, epsilon_lower_bound=lower,
        confidence=r.confidence, witness=best, resolution=resolution(r.epsilon, r.delta, best),
        leak_reach=(leak_reach(run.leak_gates, r.confidence)
                    if run.leak_gates is not None and lower <= r.epsilon else math.inf),
        samples=int(runs.sum()) + search_runs, samples_per_side=int(runs.max()),
        seconds=time.perf_counter() - run.started, seed=int(r.seed),
        stages=tuple(run.stages), interrupted=run.exit is ExitReason.INTERRUPTED,
        budget_spent=run.exit is ExitReason.BUDGET_SPENT, curves=curves,
        randomness=run.mech.randomness,
        runs_per_pair=tuple(int(n) for n in runs.sum(axis=1)),
        marginal=confirmation is None and is_marginal(best, r.epsilon, r.delta, alpha),
        evidence_level=violation_evidence_level(run.best, r.epsilon, r.delta, alpha),
        confirmation=confirmation, event=run.best_event,
        proof_runs=None if run.proof_runs is None else run.proof_runs + search_runs,
        proof=run.proof if best is not run.proof else None,
        resolution_target=(None if r.resolution is None else r.resolution * r.epsilon))
