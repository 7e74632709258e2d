"""`audit_zcdp`: the Rényi part and the implied (ε, δ) audit (docs/theory.md §8)."""
from __future__ import annotations

import time
from typing import NamedTuple

import numpy as np

from .. import pairs as pairs_module
from ..certify.certificates import SUPPORT_MISMATCH_HITS
from ..attacks import Candidate, count_at_least, learn_models
from ..certify.evaluator import PairEvaluator
from ..sampling.encoding import Encoded
from ..errors import InvalidClaimError
from ..mechanism import as_mechanism, validate_zcdp
from ..pipeline import AuditRun, build_request
from ..options import default_divergence_samples
from ..pipeline.request import validate_options
from ..result import TWO_BOUNDS, Witness
from ..sampling import CERTIFY, Sampler, checked_search_samples, split_into_chunks
from ..stats import certified_epsilon, cp_lower, cp_upper, plug_in_epsilon
from .maths import (MAX_THRESHOLDS, ORDERS, SEARCH_SAMPLES, SEED_TAG, certified_rho,
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


class _Event(NamedTuple):
    cand: Candidate         # S = {score ≥ threshold} on its pair, P = M(D) in direction 0
    complement: bool        # certify S^c, the cell P favoured on the search sample
    planned: float          # planned certified ρ (search data only)


def _renyi_part(mech, pair_list, n, level, seed, n_jobs, backend, deadline) -> _RenyiPart:
    """Search → choose one event → count it on fresh, independent samples → certified curve."""
    m = min(SEARCH_SAMPLES, n)
    with Sampler(mech, pair_list, seed, n_jobs=n_jobs, backend=backend,
                 deadline=deadline) as sampler:
        search = checked_search_samples(sampler, m)
        best = None
        for p in range(len(pair_list)):
            for event in _events(p, search[p, 0], search[p, 1], n, level, mech.floating_point):
                if best is None or event.planned > best.planned:
                    best = event
        if best is None:
            return _RenyiPart(np.zeros(len(ORDERS)), None, int(sampler.runs.sum()))
        k_p, k_q = _certifying_counts(sampler, best, n)
        runs = int(sampler.runs.sum())
    lower = renyi_curve_lower(float(cp_lower(k_p, n, level)), float(cp_upper(k_q, n, level)),
                              ORDERS)
    return _RenyiPart(lower, _witness(pair_list, best, k_p, k_q, n, level), runs)


def _events(pair, a: Encoded, b: Encoded, n: int, level: float, floating_point=False):
    """Per learned score model and direction, the oriented threshold event with the largest
    planned certified ρ (`planned_rho`). Models are learned on one half of the search sample
    and thresholds chosen on the other, as in pipeline.rdp.rdp_candidates. {s ≥ t} and its
    complement are one partition, so one sign suffices; the cell P favours is certified."""
    learn_a, sel_a = a.take(slice(0, None, 2)), a.take(slice(1, None, 2))
    learn_b, sel_b = b.take(slice(0, None, 2)), b.take(slice(1, None, 2))
    for model in learn_models(learn_a, learn_b, floating_point):
        probe = Candidate(pair, 0, model, 1, 0.0, 0.0, (0, 1, 0, 1))
        va, vb = np.sort(probe.signed_scores(sel_a)), np.sort(probe.signed_scores(sel_b))
        thresholds = np.unique(np.concatenate([va[np.isfinite(va)], vb[np.isfinite(vb)]]))
        if thresholds.size == 0:
            continue
        if thresholds.size > MAX_THRESHOLDS:
            thresholds = np.unique(np.quantile(thresholds, np.linspace(0, 1, MAX_THRESHOLDS)))
        ka, kb = count_at_least(va, thresholds), count_at_least(vb, thresholds)
        for direction, (kp, mp, kq, mq) in enumerate([(ka, len(va), kb, len(vb)),
                                                      (kb, len(vb), ka, len(va))]):
            flip = kp * mq < kq * mp            # P favours S^c here
            kp_o, kq_o = np.where(flip, mp - kp, kp), np.where(flip, mq - kq, kq)
            planned = planned_rho(kp_o, mp, kq_o, mq, n, level)
            i = int(np.argmax(planned))
            cand = Candidate(pair, direction, model, 1, float(thresholds[i]), 0.0,
                             (int(kp_o[i]), mp, int(kq_o[i]), mq))
            yield _Event(cand, bool(flip[i]), float(planned[i]))


def _certifying_counts(sampler, event: _Event, n: int) -> tuple[int, int]:
    """Hits of the oriented event in n fresh runs under P and under Q (independent chunks: no
    seed is shared between the inputs, so this holds for mechanisms with own randomness)."""
    cand = event.cand
    tasks = [t for s in (0, 1) for t in split_into_chunks(
        n, sampler.chunk_size, pair=cand.pair, side=s, stage=2, purpose=CERTIFY)]
    counts = np.zeros(2, dtype=np.int64)
    for task, c in zip(tasks, sampler.run(tasks, {cand.pair: PairEvaluator([cand])})):
        counts[task.side] += c[0]
    k_p, k_q = int(counts[cand.direction]), int(counts[1 - cand.direction])
    return (n - k_p, n - k_q) if event.complement else (k_p, k_q)


def _witness(pair_list, event: _Event, k_p, k_q, n, level) -> Witness:
    """The evidence; its ε fields are the δ = 0 two-bound certificate on the same two bounds."""
    cand = event.cand
    first, second = pair_list[cand.pair]
    D, D_prime = (first, second) if cand.direction == 0 else (second, first)
    text = cand.describe()
    return Witness(
        D=D, D_prime=D_prime, event=f"NOT [{text}]" if event.complement else text,
        attack=cand.model.kind, count_D=int(k_p), samples_D=int(n), count_D_prime=int(k_q),
        samples_D_prime=int(n), p_lower=float(cp_lower(k_p, n, level)),
        q_upper=float(cp_upper(k_q, n, level)),
        epsilon_lower_bound=float(certified_epsilon(k_p, n, k_q, n, 0.0, level)),
        epsilon_estimate=plug_in_epsilon(k_p, n, k_q, n, 0.0), stage=2,
        support_mismatch=bool(k_q == 0 and k_p >= SUPPORT_MISMATCH_HITS),
        certificate=TWO_BOUNDS)
