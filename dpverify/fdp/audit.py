"""`audit_curve`: one event against a whole curve claim (docs/theory.md §9.3)."""
from __future__ import annotations

import time

import numpy as np

from .. import pairs as pairs_module
from ..errors import InvalidClaimError, InvalidPairsError
from ..mechanism import as_mechanism
from ..options import default_divergence_samples
from ..pipeline.one_event import best_event_counted, event_witness
from ..pipeline.request import validate_options
from ..stats import cp_lower, cp_upper
from ..curve_claim import GDP, CurveClaim, gdp_claim
from ..tradeoff import claim_reached, gdp_mu_lower, wilson_corner
from .result import CurveAuditResult

SEARCH_SAMPLES = 1 << 17      # search runs per input and pair (at most the certifying size)
SEED_TAG = 0x66647021         # "fdp!": the curve audit draws apart from an (ε, δ) audit's runs
REFERENCE_DELTA = 1e-5        # δ at which the certified ε is shown beside the claim's
# planning: search rates are shrunk this many standard errors towards each other before the
# best of thousands of thresholds is taken, against the winner's curse: a rare event whose few
# search hits line up by chance would otherwise be kept over a score that certifies
PLAN_SHRINK_Z = 2.0


def audit_curve(mechanism, claim: CurveClaim | None = None, pairs=None, confidence=0.95,
                samples=None, seed=0, n_jobs=-1, backend=None, time_limit=None,
                reference_delta=REFERENCE_DELTA) -> CurveAuditResult:
    """Audit a curve claim (default: the one declared with `@dpverify.mechanism(gdp=...)`,
    `tradeoff=` or `profile=`) on neighbouring pairs.

    Every learned score model, threshold, direction and pair on SEARCH runs proposes an event;
    the one planned to lie furthest below the claimed curve is counted on n FRESH runs per input
    (`samples`, default 2^20 batched / 2^17 scalar). Two one-sided Clopper–Pearson bounds,
    p ≥ p_lower and q ≤ q_upper, each at level (1 − confidence)/2, hold jointly with
    probability ≥ `confidence`; "violation" when 1 − p_lower < f(q_upper). A mechanism meeting
    its claim is flagged with probability ≤ 1 − confidence whatever the curve, and all figures
    the result reports (certified μ, δ at every ε, ε at `reference_delta`) hold together,
    since they are read off the same box (docs/theory.md §9.3).
    """
    started = time.perf_counter()
    mech = as_mechanism(mechanism)
    claim = claim if claim is not None else mech.curve
    if claim is None:
        raise InvalidClaimError(f"no curve claim for {mech.name!r}: pass gdp=, tradeoff= or "
                                "profile=, or declare one with @dpverify.mechanism(gdp=...)")
    confidence = validate_options(confidence, samples, seed, 1, n_jobs)
    deadline = None if time_limit is None else time.monotonic() + float(time_limit)
    given = pairs if pairs is not None else mech.pairs
    claim = _at_distance(claim, int(getattr(given, "distance", 1)))
    pair_list = pairs_module.normalize(given)
    n = int(samples or default_divergence_samples(mech))
    level = (1.0 - confidence) / 2

    def plan(k_p, m_p, k_q, m_q):
        p_low, q_high = wilson_corner(k_p, m_p, k_q, m_q, n, level, PLAN_SHRINK_Z)
        return planned_margin(claim, p_low, q_high)

    counted = best_event_counted(mech, pair_list, n, SEARCH_SAMPLES, plan, _seed(seed),
                                 n_jobs, backend, deadline)
    p_low, q_high, witness = 0.0, 1.0, None
    if counted.event is not None:
        p_low = float(cp_lower(counted.k_p, n, level))
        q_high = float(cp_upper(counted.k_q, n, level))
        witness = event_witness(pair_list, counted.event, counted.k_p, counted.k_q, n, level)
    violated = (1.0 - p_low) < float(claim.tradeoff(q_high))
    return CurveAuditResult(
        mechanism=mech.name, verdict="violation" if violated else "pass", claim=claim,
        confidence=confidence, p_lower=p_low, q_upper=q_high, witness=witness,
        samples=counted.runs, seconds=time.perf_counter() - started, seed=int(seed),
        reference_delta=float(reference_delta), randomness=mech.randomness)


def planned_margin(claim: CurveClaim, p_low, q_high) -> np.ndarray:
    """How far past the claim a planned box would reach (larger is better; positive: a
    violation): certified μ − claimed μ for a GDP claim, else the largest ratio of certified ε
    to the claim's ε at the same δ, minus 1 (`maths.claim_reached`). Both are scale-free, so a
    near-certain event (p and q both near 1), which lies near every curve, never looks best."""
    if claim.kind == GDP:
        return gdp_mu_lower(p_low, q_high) - claim.mu
    return claim_reached(p_low, q_high, claim.epsilons_at_deltas)[0] - 1.0


def _at_distance(claim: CurveClaim, distance: int) -> CurveClaim:
    """The claim for pairs `distance` apart: kμ-GDP (Dong, Roth & Su 2022, group privacy);
    other curves have no general group form, so such pairs are refused."""
    if distance == 1:
        return claim
    if claim.kind == GDP:
        return gdp_claim(claim.mu * distance)
    raise InvalidPairsError(f"pairs {distance} apart need the claim that holds at that "
                            f"distance; give pairs of neighbours, or state the group's curve")


def _seed(seed: int) -> int:
    """The curve audit's root seed, derived from the audit's so that its runs are apart from
    those of an (ε, δ) audit with the same seed."""
    return int(np.random.SeedSequence([int(seed), SEED_TAG]).generate_state(1)[0])
