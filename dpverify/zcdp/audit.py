"""`audit_zcdp`: the Rényi part and the implied (ε, δ) audit (docs/theory.md §8)."""
from __future__ import annotations

import time
from typing import NamedTuple

import numpy as np

from .. import pairs as pairs_module
from ..errors import InvalidClaimError
from ..mechanism import as_mechanism, validate_zcdp
from ..pipeline import AuditRun, build_request
from ..options import default_divergence_samples
from ..pipeline.one_event import best_event_counted, event_witness
from ..pipeline.request import validate_options
from ..result import Witness
from ..stats import cp_lower, cp_upper
from .maths import (ORDERS, SEARCH_SAMPLES, SEED_TAG, certified_rho,
                    error_split, implied_epsilon, planned_rho, renyi_curve_lower, validate_delta)
from .result import ZcdpAuditResult


def audit_zcdp(mechanism, rho=None, pairs=None, confidence=0.95, samples=None, seed=0,
               n_jobs=-1, backend=None, time_limit=None, delta=None) -> ZcdpAuditResult:
    """Audit a ρ-zCDP claim (default: `@dpverify.mechanism(zcdp=...)`) on neighbouring pairs.

    Two parts, each with half of α_err = 1 − confidence, so the false-alarm rate on a
    mechanism that satisfies its claim is ≤ 1 − confidence overall (union bound; module
    docstring, docs/theory.md §8):
    1. Rényi: one event chosen on search samples, counted on fresh ones; two Clopper–Pearson
       bounds at α_err/4 each give a lower bound on D_α at every order of `ORDERS` jointly;
       `rho_lower_bound` = max_α D_α^LB/α is flagged when it exceeds ρ.
    2. Implied (ε, δ): `dpverify.audit` at ε = ρ + 2√(ρ ln(1/δ)) (Bun & Steinke 2016,
       Prop. 1.3), confidence 1 − α_err/2. `delta`: that claim's δ, default 1e-6.
    `samples`: certifying runs per input of each part (Rényi default 2^20 batched / 2^17
    scalar; the implied audit's default is the engine's). Mechanisms with their own randomness
    are fine: the Rényi part never shares seeds between D and D'.
    """
    started = time.perf_counter()
    mech = as_mechanism(mechanism)
    rho, delta = _claim(mech, rho, delta)
    confidence = validate_options(confidence, samples, seed, 1, n_jobs)
    if time_limit is not None and not (float(time_limit) > 0):
        raise InvalidClaimError(f"time_limit must be a positive number of seconds, got "
                                f"{time_limit!r}")
    deadline = None if time_limit is None else time.monotonic() + float(time_limit)
    given = pairs if pairs is not None else mech.pairs
    distance = int(getattr(given, "distance", 1))
    search_runs = 0
    if isinstance(given, pairs_module.PairSearch):  # chosen on samples of their own
        from .input_search import find_pairs
        given = find_pairs(mech, given, seed, n_jobs, backend, deadline, 0.0,
                           error_split(confidence)[0])
        search_runs = given.runs
    pair_list = pairs_module.normalize(given)
    target = rho * distance ** 2
    eps = implied_epsilon(target, delta)
    level, implied_confidence = error_split(confidence)
    n = int(samples or default_divergence_samples(mech))
    part = _renyi_part(mech, pair_list, n, level, _renyi_seed(seed), n_jobs, backend, deadline)
    implied = AuditRun(mech, build_request(
        mech, pairs=list(pair_list), epsilon=eps, delta=delta, confidence=implied_confidence,
        samples=samples, seed=seed, n_jobs=n_jobs, backend=backend,
        time_limit=_time_left(deadline))).run()
    rho_lb, alpha = certified_rho(ORDERS, part.lower)
    violated = rho_lb > target or implied.verdict == "violation"
    return ZcdpAuditResult(
        mechanism=mech.name, verdict="violation" if violated else "pass", claimed_rho=rho,
        rho_lower_bound=rho_lb, alpha=alpha, orders=tuple(map(float, ORDERS)),
        renyi_lower=tuple(map(float, part.lower)), implied_epsilon=eps, implied_delta=delta,
        implied=implied, confidence=confidence, witness=part.witness,
        samples=part.runs + search_runs + implied.samples,
        seconds=time.perf_counter() - started, seed=int(seed), randomness=mech.randomness,
        distance=distance)


def _claim(mech, rho, delta) -> tuple[float, float]:
    if rho is None:
        rho = mech.zcdp
    if rho is None:
        raise InvalidClaimError(f"no zCDP claim for {mech.name!r}: pass rho= or declare it with "
                                "@dpverify.mechanism(zcdp=...)")
    return validate_zcdp(rho), validate_delta(delta)


def _renyi_seed(seed: int) -> int:
    """The Rényi part's root seed: derived from the audit's, so its samples are drawn apart from
    the implied audit's (which uses the seed itself, as `dpverify audit --epsilon` would)."""
    return int(np.random.SeedSequence([int(seed), SEED_TAG]).generate_state(1)[0])


def _time_left(deadline):
    """Seconds left for the implied audit (a tiny positive number once the time is up, so that
    the engine raises its AuditTimeoutError at its first chunk)."""
    return None if deadline is None else max(deadline - time.monotonic(), 1e-3)


class _RenyiPart(NamedTuple):
    lower: np.ndarray       # certified D_α lower bound at each of ORDERS
    witness: Witness | None
    runs: int


def _renyi_part(mech, pair_list, n, level, seed, n_jobs, backend, deadline) -> _RenyiPart:
    """Search → choose one event by its planned certified ρ (`planned_rho`) → count it on
    fresh, independent samples → certified curve (pipeline.one_event)."""
    def plan(k_p, m_p, k_q, m_q):
        return planned_rho(k_p, m_p, k_q, m_q, n, level)

    counted = best_event_counted(mech, pair_list, n, SEARCH_SAMPLES, plan, seed, n_jobs,
                                 backend, deadline)
    if counted.event is None:
        return _RenyiPart(np.zeros(len(ORDERS)), None, counted.runs)
    lower = renyi_curve_lower(float(cp_lower(counted.k_p, n, level)),
                              float(cp_upper(counted.k_q, n, level)), ORDERS)
    witness = event_witness(pair_list, counted.event, counted.k_p, counted.k_q, n, level)
    return _RenyiPart(lower, witness, counted.runs)
