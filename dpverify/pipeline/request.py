"""An (ε, δ) audit's options, validated once, with the claim that applies to its pairs."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..compose import group_claim
from ..errors import InvalidClaimError
from ..mechanism import validate_claim

DEFAULT_SAMPLES_BATCHED = 1 << 22
DEFAULT_SAMPLES_SCALAR = 1 << 17
BUDGET_SAMPLES_FACTOR = 16  # with a time budget, the default last stage may grow to 16× its size


def default_samples(mech) -> int:
    """The certifying runs per input at the last stage when `audit` is given no `samples`: what
    the mechanism declared (`@dpverify.mechanism(samples=...)`, set by the library adapters),
    else DEFAULT_SAMPLES_BATCHED for the batched form and DEFAULT_SAMPLES_SCALAR for the
    scalar one."""
    if mech.samples is not None:
        return mech.samples
    return DEFAULT_SAMPLES_BATCHED if mech.batched else DEFAULT_SAMPLES_SCALAR


def default_divergence_samples(mech) -> int:
    """Runs per input for a zCDP or RDP audit's fresh sample when none are given: what the
    mechanism declared, else a quarter of the (ε, δ) default for the batched form (it counts one
    event, not K per stage) and the scalar default for the scalar one."""
    return mech.samples or (DEFAULT_SAMPLES_BATCHED // 4 if mech.batched
                            else DEFAULT_SAMPLES_SCALAR)


def validate_budget(seconds, stop_early) -> float:
    if stop_early:
        raise InvalidClaimError("seconds= is the time budget of a measurement run: pass "
                                "stop_early=False as well (to bound an ordinary audit's time, "
                                "use time_limit=)")
    try:
        seconds = float(seconds)
    except (TypeError, ValueError):
        raise InvalidClaimError(f"seconds must be a positive number, got {seconds!r}")
    if not (seconds > 0 and math.isfinite(seconds)):
        raise InvalidClaimError(f"seconds must be a positive number, got {seconds!r} (e.g. 60)")
    return seconds


def validate_options(confidence, samples, seed, certify_per_stage) -> float:
    try:
        confidence = float(confidence)
    except (TypeError, ValueError):
        raise InvalidClaimError(f"confidence must be a number in (0, 1), got {confidence!r}")
    if not (0.0 < confidence < 1.0):
        raise InvalidClaimError(f"confidence must be in (0, 1), got {confidence!r} (e.g. 0.95)")
    if samples is not None and (not isinstance(samples, (int, np.integer)) or samples < 100):
        raise InvalidClaimError(f"samples must be an integer ≥ 100 (runs per input), got {samples!r}")
    if not isinstance(seed, (int, np.integer)) or seed < 0:
        raise InvalidClaimError(f"seed must be a non-negative integer, got {seed!r}")
    if not isinstance(certify_per_stage, int) or certify_per_stage < 1:
        raise InvalidClaimError("certify_per_stage must be a positive integer")
    return confidence


def validate_time_limit(time_limit) -> float | None:
    if time_limit is not None and not (float(time_limit) > 0):
        raise InvalidClaimError(f"time_limit must be a positive number of seconds, got "
                                f"{time_limit!r}")
    return None if time_limit is None else float(time_limit)


@dataclass(frozen=True)
class AuditRequest:
    """What `AuditRun` audits and how: the claim (ε, δ) that applies to the pairs (the
    group-privacy claim for pairs k steps apart), the pairs as given (a list, a generator of
    `dpverify.pairs`, or a `PairSearch`), and the options of `dpverify.audit`, validated."""

    epsilon: float
    delta: float
    pairs: Any
    confidence: float = 0.95
    samples: int = DEFAULT_SAMPLES_BATCHED
    seed: int = 0
    n_jobs: int = -1
    backend: str | None = None
    certify_per_stage: int = 2
    time_limit: float | None = None
    progress: bool | None = None
    curves: bool = False
    stop_early: bool = True
    floating_point: bool = False
    seconds: float | None = None


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


def build_request(mech, pairs=None, epsilon=None, delta=None, confidence=0.95, samples=None,
                  seed=0, certify_per_stage=2, time_limit=None, stop_early=True,
                  floating_point=None, seconds=None, **passed) -> AuditRequest:
    """Validate `dpverify.audit`'s options for mechanism `mech` (errors in the order a user
    meets them: claim, options, group claim, budget, time limit) and fill in the defaults
    declared with `@dpverify.mechanism`. `passed`: options taken as they are (n_jobs, backend,
    progress, curves)."""
    eps, dlt = _claim(mech, epsilon, delta, pairs)
    confidence = validate_options(confidence, samples, seed, certify_per_stage)
    given_pairs = pairs if pairs is not None else mech.pairs
    eps, dlt = _group_claim(eps, dlt, getattr(given_pairs, "distance", 1))
    if seconds is not None:
        seconds = validate_budget(seconds, stop_early)
    if samples is None:
        samples = default_samples(mech) * (BUDGET_SAMPLES_FACTOR if seconds is not None else 1)
    return AuditRequest(
        epsilon=eps, delta=dlt, pairs=given_pairs, confidence=confidence, samples=int(samples),
        seed=seed, certify_per_stage=certify_per_stage,
        time_limit=validate_time_limit(time_limit), stop_early=stop_early,
        floating_point=bool(mech.floating_point if floating_point is None else floating_point),
        seconds=seconds, **passed)
