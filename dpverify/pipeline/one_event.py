"""One event chosen on search samples and counted on fresh ones: the audits of claims that a
single two-cell partition tests at every point at once (ρ-zCDP: every Rényi order,
docs/theory.md §8; a trade-off curve or privacy profile: every test, docs/theory.md §9).

    search_events      per score model and direction, the oriented threshold event a planning
                       function (search counts only) rates best
    certify_event      fresh, independent runs of the chosen event under both inputs
    event_witness      the evidence: pair, event, counts, the two one-sided bounds

A caller picks the best of `search_events` over its pairs and certifies it once, so no
correction over the events tried is needed: the certifying sample never saw the choice.
"""
from __future__ import annotations

from typing import Callable, Iterator, NamedTuple

import numpy as np

from ..attacks import Candidate, count_at_least, learn_models
from ..certify.certificates import SUPPORT_MISMATCH_HITS
from ..certify.evaluator import PairEvaluator
from ..mechanism import Mechanism
from ..result import TWO_BOUNDS, Witness
from ..sampling import CERTIFY, Sampler, checked_search_samples, split_into_chunks
from ..sampling.encoding import Encoded
from ..stats import certified_epsilon, cp_lower, cp_upper, plug_in_epsilon

MAX_THRESHOLDS = 4096   # thresholds per score model tried on the search sample

# plan(k_p, m_p, k_q, m_q) -> planned figure per threshold (arrays of oriented search counts:
# k_p of m_p under P, k_q of m_q under Q); larger is better
Plan = Callable[[np.ndarray, int, np.ndarray, int], np.ndarray]


class Event(NamedTuple):
    cand: Candidate         # S = {score ≥ threshold} on its pair, P = M(D) in direction 0
    complement: bool        # certify S^c, the cell P favoured on the search sample
    planned: float          # the plan's figure (search data only)


class Counted(NamedTuple):
    event: Event | None     # None: no score separated any sample
    k_p: int                # hits of the oriented event in n fresh runs under P
    k_q: int                # ... and under Q
    runs: int               # mechanism runs in all (search and certifying)


def search_events(pair: int, a: Encoded, b: Encoded, plan: Plan,
                  floating_point: bool = False) -> Iterator[Event]:
    """Per learned score model and direction, the oriented threshold event with the largest
    planned figure. Models are learned on one half of the search sample and thresholds chosen
    on the other. {s ≥ t} and its complement are one partition, so one sign suffices; the cell
    P favours on the search sample is the one certified."""
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
            planned = plan(kp_o, mp, kq_o, mq)
            i = int(np.argmax(planned))
            cand = Candidate(pair, direction, model, 1, float(thresholds[i]), 0.0,
                             (int(kp_o[i]), mp, int(kq_o[i]), mq))
            yield Event(cand, bool(flip[i]), float(planned[i]))


def certify_event(sampler: Sampler, event: Event, n: int) -> tuple[int, int]:
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


def best_event_counted(mech: Mechanism, pair_list: list, n: int, search_runs: int, plan: Plan,
                       seed: int, n_jobs: int, backend: str | None,
                       deadline: float | None) -> Counted:
    """Search (`search_runs` per input and pair) → the event with the best plan over all pairs
    → its counts on n fresh runs per input. `seed`, `n_jobs`, `backend` and `deadline` (a
    `time.perf_counter()` instant, or None) go to the `Sampler`."""
    with Sampler(mech, pair_list, seed, n_jobs=n_jobs, backend=backend,
                 deadline=deadline) as sampler:
        search = checked_search_samples(sampler, min(search_runs, n))
        best = None
        for p in range(len(pair_list)):
            for event in search_events(p, search[p, 0], search[p, 1], plan,
                                       mech.floating_point):
                if best is None or event.planned > best.planned:
                    best = event
        if best is None:
            return Counted(None, 0, 0, int(sampler.runs.sum()))
        k_p, k_q = certify_event(sampler, best, n)
        return Counted(best, k_p, k_q, int(sampler.runs.sum()))


def event_witness(pair_list: list, event: Event, k_p: int, k_q: int, n: int,
                  level: float) -> Witness:
    """The evidence of `event` hit k_p and k_q times in n runs under P and Q, each bound at
    error `level`; its ε fields are the δ = 0 two-bound certificate on the same two bounds."""
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
