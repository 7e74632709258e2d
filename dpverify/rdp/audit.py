"""Auditing an (α, ρ)-RDP claim (docs/theory.md §8; docs/zcdp.md): one event chosen on a search
sample, counted on a fresh one, its two-cell Rényi divergence bounded below over the
Clopper–Pearson box."""
from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from .. import pairs as pairs_module
from ..attacks import Candidate, count_at_least, learn_models
from ..certify import Certificate, witness_of
from ..certify.evaluator import PairEvaluator
from ..mechanism import as_mechanism
from ..renyi import balle_epsilon, renyi_bernoulli, renyi_lower_bound, validate_rdp
from ..sampling import CERTIFY, Sampler, checked_search_samples, split_into_chunks
from ..stats import cp_lower, cp_upper, wilson_bounds
from ..options import default_divergence_samples
from ..pipeline.request import validate_options
from .result import RenyiAuditResult

RDP_SEARCH_SAMPLES = 1 << 17


def audit_rdp(mechanism, rdp=None, pairs=None, confidence=0.95, samples=None, seed=0,
              n_jobs=-1, backend=None, implied_delta=1e-5, time_limit=None) -> RenyiAuditResult:
    """Audit an (α, ρ)-RDP claim: one event per pair and direction is chosen on a search sample
    (learned scores, as for ε), the best is counted on a fresh sample, and its two-cell Rényi
    divergence is bounded below over the Clopper–Pearson box (renyi.renyi_lower_bound). The
    four interval bounds each get (1 − confidence)/4, so the false-alarm rate is ≤ 1 − confidence.
    """
    started = time.perf_counter()
    mech = as_mechanism(mechanism)
    alpha_r, rho = validate_rdp(rdp if rdp is not None else mech.rdp)
    confidence = validate_options(confidence, samples, seed, 1, n_jobs)
    pair_list = pairs_module.normalize(pairs if pairs is not None else mech.pairs)
    n = int(samples or default_divergence_samples(mech))
    level = (1.0 - confidence) / 4
    m = min(RDP_SEARCH_SAMPLES, n)
    deadline = None if time_limit is None else time.monotonic() + float(time_limit)
    with Sampler(mech, pair_list, seed, n_jobs=n_jobs, backend=backend,
                 deadline=deadline) as sampler:
        search = checked_search_samples(sampler, m)
        best = None  # (planned bound, candidate)
        for p in range(len(pair_list)):
            for cand, planned in rdp_candidates(p, search[p, 0], search[p, 1], alpha_r, n,
                                                 level):
                if best is None or planned > best[0]:
                    best = (planned, cand)
        witness, lower, box = None, 0.0, None
        if best is not None:
            cand = best[1]
            evaluators = {cand.pair: PairEvaluator([cand])}
            tasks = [t for s in (0, 1) for t in split_into_chunks(
                n, sampler.chunk_size, pair=cand.pair, side=s, stage=2, purpose=CERTIFY)]
            counts = np.zeros(2, dtype=np.int64)
            for task, c in zip(tasks, sampler.run(tasks, evaluators)):
                counts[task.side] += c[0]
            k_p, k_q = counts[cand.direction], counts[1 - cand.direction]
            box = (float(cp_lower(k_p, n, level)), float(cp_upper(k_p, n, level)),
                   float(cp_lower(k_q, n, level)), float(cp_upper(k_q, n, level)))
            lower = renyi_lower_bound(*box, alpha_r)
            # fixed sample sizes here: the witness's ε shown with the two-bound certificate
            witness = witness_of(pair_list, replace(cand, certificate=Certificate.TWO_BOUNDS), k_p, n, k_q, n,
                                 0.0, level, 2)
        runs = sampler.runs
    return RenyiAuditResult(
        mechanism=mech.name, verdict="violation" if lower > rho else "pass", alpha=alpha_r,
        claimed_rho=rho, rho_lower_bound=float(lower), confidence=confidence,
        implied_epsilon=balle_epsilon(alpha_r, rho, implied_delta), implied_delta=implied_delta,
        witness=witness, samples=int(runs.sum()), seconds=time.perf_counter() - started,
        seed=int(seed), box=box)


def rdp_candidates(pair, a, b, alpha_r, n, level):
    """For each learned score and direction, the threshold whose two-cell D_α is largest at the
    box corner nearest the diagonal (Wilson, 2 standard errors): a cheap planning proxy."""
    learn_a, sel_a = a.take(slice(0, None, 2)), a.take(slice(1, None, 2))
    learn_b, sel_b = b.take(slice(0, None, 2)), b.take(slice(1, None, 2))
    for model in learn_models(learn_a, learn_b):
        for sign in (1, -1):
            probe = Candidate(pair, 0, model, sign, 0.0, 0.0, (0, 1, 0, 1))
            va, vb = np.sort(probe.signed_scores(sel_a)), np.sort(probe.signed_scores(sel_b))
            thresholds = np.unique(np.concatenate([va[np.isfinite(va)], vb[np.isfinite(vb)]]))
            if thresholds.size == 0:
                continue
            if thresholds.size > 4096:
                thresholds = np.quantile(thresholds, np.linspace(0, 1, 4096))
            ka, kb = count_at_least(va, thresholds), count_at_least(vb, thresholds)
            for direction, (kp, mp, kq, mq) in enumerate([(ka, len(va), kb, len(vb)),
                                                            (kb, len(vb), ka, len(va))]):
                p_lo, p_hi = wilson_bounds(kp, mp, 2.0)
                q_lo, q_hi = wilson_bounds(kq, mq, 2.0)
                p_near = np.where(kp / mp >= kq / mq, p_lo, p_hi)
                q_near = np.where(kp / mp >= kq / mq, q_hi, q_lo)
                planned = np.where((p_lo <= q_hi) & (q_lo <= p_hi), 0.0,
                                   renyi_bernoulli(p_near, q_near, alpha_r))
                planned = np.where(np.isfinite(planned), planned, 0.0)
                i = int(np.argmax(planned))
                yield (Candidate(pair, direction, model, sign, float(thresholds[i]), 0.0,
                                 (int(kp[i]), mp, int(kq[i]), mq)), float(planned[i]))
