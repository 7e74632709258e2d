"""An (ε, δ) audit's options, validated by `dpverify.options` (the checks the CLI, gate and
pytest plugin share), with the claim that applies to its pairs."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..compose import group_claim
from ..errors import InvalidClaimError
from ..mechanism import Mechanism, validate_claim
from ..options import (check_certify_per_stage, check_confidence, check_jobs, check_samples,
                       check_resolution, check_seconds, check_seed, check_time_limit,
                       default_samples)

BUDGET_SAMPLES_FACTOR = 16  # a measurement run's time budget may buy up to 16× the default runs


def validate_options(confidence, samples, seed, certify_per_stage, n_jobs=-1) -> float:
    """The options every audit takes, checked as the CLI, gate and plugin check them
    (`dpverify.options`); returns the confidence as a float."""
    confidence = check_confidence(confidence)
    check_samples(samples)
    check_seed(seed)
    check_certify_per_stage(certify_per_stage)
    check_jobs(n_jobs)
    return confidence


@dataclass(frozen=True)
class AuditRequest:
    """What `AuditRun` audits and how: the claim (ε, δ) that applies to the pairs (the
    group-privacy claim for pairs k steps apart), the pairs as given (a list, a generator of
    `dpverify.pairs`, or a `PairSearch`), and the options of `dpverify.audit`, validated."""

    epsilon: float
    delta: float
    pairs: Any
    confidence: float
    samples: int
    seed: int
    n_jobs: int
    backend: str | None
    certify_per_stage: int
    time_limit: float | None
    progress: bool | None
    curves: bool
    stop_early: bool
    floating_point: bool
    seconds: float | None
    confirm: bool = False
    proof_only: bool = False
    resolution: float | None = None  # a pass's resolution target, × the claim (None: none)


def _claim(mech, epsilon, delta, pairs):
    """The (ε, δ) claim to audit on `pairs`, validated."""
    eps = epsilon if epsilon is not None else mech.epsilon
    if eps is None:
        raise InvalidClaimError(f"no epsilon claimed for {mech.name!r}: pass epsilon= to audit() "
                                "or declare it with @dpverify.mechanism(epsilon=...)")
    return validate_claim(eps, delta if delta is not None else mech.delta)


def _group_claim(eps, dlt, distance):
    """Pairs k steps apart: the claim that applies is the group-privacy one (theory.md §1)."""
    if distance <= 1:
        return eps, dlt
    eps, dlt = group_claim(eps, dlt, distance)
    if dlt >= 1:
        raise InvalidClaimError(f"the group-privacy claim at distance {distance} has "
                                f"δ = {dlt:.3g} ≥ 1: nothing to audit")
    return eps, dlt


def build_request(mech: Mechanism, pairs=None, epsilon=None, delta=None, confidence=0.95, samples=None,
                  seed=0, n_jobs=-1, backend=None, certify_per_stage=2, time_limit=None,
                  progress=None, curves=False, stop_early=True, floating_point=None,
                  seconds=None, confirm=False, proof_only=False,
                  resolution=None) -> AuditRequest:
    """Validate `dpverify.audit`'s options for mechanism `mech` (errors in the order a user
    meets them: claim, options, group claim, budget, time limit) and fill in the defaults
    declared with `@dpverify.mechanism`; backend, progress and curves are taken as they are.
    The defaults are `dpverify.audit`'s (tests/test_options.py checks
    that they agree with it and with the options table)."""
    eps, dlt = _claim(mech, epsilon, delta, pairs)
    confidence = validate_options(confidence, samples, seed, certify_per_stage, n_jobs)
    given_pairs = pairs if pairs is not None else mech.pairs
    eps, dlt = _group_claim(eps, dlt, getattr(given_pairs, "distance", 1))
    if seconds is not None:
        seconds = check_seconds(seconds)
    if samples is None:  # a measurement run's budget may buy more runs than the default; an
        # ordinary audit's only stops it sooner
        measuring = seconds is not None and not stop_early
        samples = default_samples(mech) * (BUDGET_SAMPLES_FACTOR if measuring else 1)
    return AuditRequest(
        epsilon=eps, delta=dlt, pairs=given_pairs, confidence=confidence, samples=int(samples),
        seed=seed, n_jobs=n_jobs, backend=backend, certify_per_stage=certify_per_stage,
        time_limit=None if time_limit is None else check_time_limit(time_limit),
        stop_early=stop_early,
        floating_point=bool(mech.floating_point if floating_point is None else floating_point),
        seconds=seconds, progress=progress, curves=curves, confirm=bool(confirm),
        proof_only=bool(proof_only),
        resolution=None if resolution is None else check_resolution(resolution))
