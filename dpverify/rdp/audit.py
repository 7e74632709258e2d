"""Auditing an (α, ρ)-RDP claim (docs/theory.md §8; docs/zcdp.md): one event chosen on a search
sample, counted on a fresh one (`pipeline.one_event`, as the zCDP audit chooses its event), its
two-cell Rényi divergence bounded below over the Clopper–Pearson box."""
from __future__ import annotations

import time

import numpy as np

from .. import pairs as pairs_module
from ..mechanism import as_mechanism
from ..options import default_divergence_samples
from ..pipeline.one_event import best_event_counted, event_witness
from ..pipeline.request import validate_options
from ..renyi import balle_epsilon, renyi_bernoulli, renyi_lower_bound, validate_rdp
from ..stats import cp_lower, cp_upper, wilson_bounds
from .result import RenyiAuditResult

RDP_SEARCH_SAMPLES = 1 << 17
PLAN_Z = 2.0   # planning: the search rates' Wilson intervals, this many standard errors wide


def planned_divergence(k_p, m_p, k_q, m_q, alpha: float) -> np.ndarray:
    """Planning proxy from search counts only (never certifies): D_α of two cells at the corner
    of the rates' Wilson intervals nearest the diagonal, 0 where the intervals overlap. The
    counts are oriented (S is the cell P favours), so that corner is (p_low, q_high)."""
    p_low, p_high = wilson_bounds(k_p, m_p, PLAN_Z)
    q_low, q_high = wilson_bounds(k_q, m_q, PLAN_Z)
    planned = np.where((p_low <= q_high) & (q_low <= p_high), 0.0,
                       renyi_bernoulli(p_low, q_high, alpha))
    return np.where(np.isfinite(planned), planned, 0.0)


def audit_rdp(mechanism, rdp=None, pairs=None, confidence=0.95, samples=None, seed=0,
              n_jobs=-1, backend=None, implied_delta=1e-5, time_limit=None) -> RenyiAuditResult:
    """Audit an (α, ρ)-RDP claim: the event with the best planned divergence over every pair,
    score model and direction is chosen on a search sample, counted on n fresh runs per input,
    and its two-cell Rényi divergence bounded below over the Clopper–Pearson box
    (renyi.renyi_lower_bound). The box's four bounds each get (1 − confidence)/4, so a
    mechanism meeting its claim is flagged with probability at most 1 − confidence."""
    started = time.perf_counter()
    mech = as_mechanism(mechanism)
    alpha_r, rho = validate_rdp(rdp if rdp is not None else mech.rdp)
    confidence = validate_options(confidence, samples, seed, 1, n_jobs)
    pair_list = pairs_module.normalize(pairs if pairs is not None else mech.pairs)
    n = int(samples or default_divergence_samples(mech))
    level = (1.0 - confidence) / 4
    deadline = None if time_limit is None else time.monotonic() + float(time_limit)

    def plan(k_p, m_p, k_q, m_q):
        return planned_divergence(k_p, m_p, k_q, m_q, alpha_r)

    counted = best_event_counted(mech, pair_list, n, RDP_SEARCH_SAMPLES, plan, seed, n_jobs,
                                 backend, deadline)
    witness, lower, box = None, 0.0, None
    if counted.event is not None:
        k_p, k_q = counted.k_p, counted.k_q
        box = (float(cp_lower(k_p, n, level)), float(cp_upper(k_p, n, level)),
               float(cp_lower(k_q, n, level)), float(cp_upper(k_q, n, level)))
        lower = renyi_lower_bound(*box, alpha_r)
        witness = event_witness(pair_list, counted.event, k_p, k_q, n, level)
    return RenyiAuditResult(
        mechanism=mech.name, verdict="violation" if lower > rho else "pass", alpha=alpha_r,
        claimed_rho=rho, rho_lower_bound=float(lower), confidence=confidence,
        implied_epsilon=balle_epsilon(alpha_r, rho, implied_delta), implied_delta=implied_delta,
        witness=witness, samples=counted.runs, seconds=time.perf_counter() - started,
        seed=int(seed), box=box)
