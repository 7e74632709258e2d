"""Choosing each model's events: thresholds planned for the bound a certifying sample will give.

A model learned on one half of the search sample scores the other half (the selection half,
`score_selection`); every threshold t of {sign · s ≥ t} is then judged by the bound a certifying
sample of the planned size is expected to certify with its rates, shrunk a few standard errors
so that the winner's curse does not pick a threshold whose rate was merely lucky
(stats.expected_bound_and_method; on a paired search sample, with paired standard errors:
stats.expected_paired_bound_and_method). So no fixed probability floor caps the bound, and the
certifying sample is never seen here (docs/theory.md §2).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import NamedTuple

import numpy as np

from ..sampling.encoding import Encoded
from ..stats import (coupled_block_size, expected_bound_and_method,
                     expected_paired_bound_and_method, paired_log_ratio_variance)
from .base import ScoreModel
from ..certify.certificates import Certificate
from .events import Candidate, Tuning, holds_everywhere, tuning_index

SEARCH_SHRINK_Z = 2.0  # search rates are shrunk this many standard errors before planning
# ...but only this many when ranking pairs (`Candidate.potential`): a pair whose best event is
# rare would otherwise lose to pairs with frequent, weaker events long before its rate is known
PROMISE_SHRINK_Z = 1.0
# Re-choosing a threshold on the previous stage's certifying counts (`retune`): those counts are
# fresh (the model was not fitted on them) and, from the stage before last at the default
# budget on, at least as large as the search sample's selection half, so a milder shrink than
# the search's 2σ, but only thresholds whose event was hit at least TUNING_MIN_HITS times under
# the favoured input.
TUNING_SHRINK_Z = 1.5
TUNING_MIN_HITS = 100
# ...or, for a one-sided hedge (a candidate tracked because the search saw it under P only), a
# threshold with no hit under Q and at least this many under P. The floor guards against lucky
# tail picks among a grid of continuous scores; a hedge's split replicated on fresh counts, 16
# to 0, is not luck against a ratio of e (its conditional chance is at most (e/(1 + e))^16 <
# 0.007), and a leak hidden in a rare event (attacks/atoms.py) is seen only so often there.
ONE_SIDED_MIN_HITS = 16
# On a paired sample a threshold's ratio is known so well that the planner's pick among
# thousands of thresholds is ruled by their estimates' noise (the winner's curse) more than by
# their certifying precision; paired estimates are shrunk this many more standard errors.
PAIRED_EXTRA_Z = 1.0
ALL_DISTINCT_UP_TO = 4096  # a sample of at most this many scores offers every one as threshold


@dataclass
class ScoredModel:
    """A learned model with its scores on the selection half of the search sample, sorted
    ascending (NaN, "never in the event", left out; m_a and m_b still count it): all that
    `best_events` needs to choose thresholds for any certifying size. On a paired search sample
    (row i of both inputs drawn from one seed) also the sorted row-wise minimum and maximum of
    the two scores: #{min ≥ t} counts the rows in {s ≥ t} under both inputs, #{max ≤ t} those in
    {s ≤ t}, which is what the paired standard error needs (stats.paired_log_ratio_variance)."""

    model: ScoreModel
    sorted_a: np.ndarray
    sorted_b: np.ndarray
    m_a: int
    m_b: int
    sorted_min: np.ndarray | None = None
    sorted_max: np.ndarray | None = None


def _sorted_present(scores: np.ndarray) -> np.ndarray:
    """The scores that are not NaN, ascending (numpy sorts NaN last, and its binary search
    places NaN there too: one sort, no masked copy)."""
    ordered = np.sort(scores)
    return ordered[:np.searchsorted(ordered, np.nan, side="left")]


def score_selection(model: ScoreModel, sel_a: Encoded, sel_b: Encoded,
                    paired: bool = False) -> ScoredModel:
    """`model`'s sorted scores on the selection half (a ~ M(D), b ~ M(D')); `paired`: row i of
    both shares its random numbers, so the row-wise minimum and maximum are kept too."""
    s_a, s_b = model.score(sel_a), model.score(sel_b)
    if not (paired and len(s_a) == len(s_b)):
        return ScoredModel(model, _sorted_present(s_a), _sorted_present(s_b), len(s_a), len(s_b))
    # np.minimum/np.maximum propagate NaN: a row outside every event under one input is
    # never in an event under both
    return ScoredModel(model, _sorted_present(s_a), _sorted_present(s_b), len(s_a), len(s_b),
                       _sorted_present(np.minimum(s_a, s_b)),
                       _sorted_present(np.maximum(s_a, s_b)))


def candidate_thresholds(sorted_a: np.ndarray, sorted_b: np.ndarray) -> np.ndarray:
    """Thresholds to try, ascending: every distinct finite value when there are few, else each
    sample's order statistics on a grid that is dense in both tails (where the large ratios
    live)."""
    parts = []
    for v in (sorted_a, sorted_b):
        v = v[np.isfinite(v)]
        if v.size == 0:
            continue
        m = v.size
        if m <= ALL_DISTINCT_UP_TO:
            parts.append(v)
            continue
        tail = np.geomspace(1.0, m / 2, 256)
        idx = np.concatenate([tail, np.linspace(0, m - 1, 513), m - 1 - tail])
        parts.append(v[np.clip(idx.astype(np.int64), 0, m - 1)])
    if not parts:
        return np.empty(0)
    return np.unique(np.concatenate(parts))


def count_at_least(sorted_values: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """#{v ≥ t} for each threshold t, over ascending `sorted_values`."""
    return len(sorted_values) - np.searchsorted(sorted_values, thresholds, side="left")


def expected_bounds(kp, mp, kq, mq, variance, n, delta, level, shrink_z, chunk_size):
    """Expected certified bound at n and the ratio-test choice, per threshold with k_p of m_p
    and k_q of m_q hits: from independent rates shrunk `shrink_z` standard errors, or, on a
    paired sample (`variance`: each estimate's paired variance), shrunk PAIRED_EXTRA_Z more,
    with the coupled certificate planned where a chunk size is given (a threshold one input
    never hit has no paired estimate, and keeps the independent shrink)."""
    if variance is None:
        return expected_bound_and_method(kp, mp, kq, mq, n, delta, level, shrink_z)
    return expected_paired_bound_and_method(kp, kq, mp, n, delta, level,
                                            shrink_z + PAIRED_EXTRA_Z, variance,
                                            coupled_block_size(n, chunk_size)
                                            if chunk_size else 0, unpaired_shrink_z=shrink_z)


class Sweep(NamedTuple):
    """One (sign, direction) sweep of a model's thresholds with their counts on the selection
    half: k_p of m_p under P, k_q of m_q under Q, k_both of the paired rows in both (or None)."""

    sign: int
    direction: int
    thresholds: np.ndarray
    k_p: np.ndarray
    m_p: int
    k_q: np.ndarray
    m_q: int
    k_both: np.ndarray | None


def threshold_sweeps(scored: ScoredModel) -> list[Sweep]:
    """The four (sign, direction) sweeps of a scored model. The sign −1 order is the reversed,
    negated sign +1 one, so each score is sorted once; direction 1 swaps the two inputs."""
    m_a, m_b = scored.m_a, scored.m_b
    paired = scored.sorted_min is not None
    sweeps = []
    for sign in (1, -1):
        va, vb = ((scored.sorted_a, scored.sorted_b) if sign > 0
                  else (-scored.sorted_a[::-1], -scored.sorted_b[::-1]))
        thresholds = candidate_thresholds(va, vb)
        if thresholds.size == 0:
            continue
        ka = count_at_least(va, thresholds)
        kb = count_at_least(vb, thresholds)
        kab = (None if not paired else count_at_least(
            scored.sorted_min if sign > 0 else -scored.sorted_max[::-1], thresholds))
        sweeps += [Sweep(sign, 0, thresholds, ka, m_a, kb, m_b, kab),
                   Sweep(sign, 1, thresholds, kb, m_b, ka, m_a, kab)]
    return sweeps


def best_events(scored: ScoredModel, pair: int, n_certify: int, delta: float, level: float,
                n_final: int, chunk_size: int = 0) -> list[Candidate]:
    """For each direction, the threshold maximising the expected certified bound on the
    selection half at this stage's certifying size; `potential` records the best at the final
    size. The four (sign, direction) threshold sweeps are planned in one call per figure: on the
    small samples of the first stages, per-call overhead, not arithmetic, is what search costs.
    On a paired selection sample the rates are shrunk by paired standard errors and the
    coupled certificate is planned too (`chunk_size`: the certifying chunk, which sets its
    blocks; 0 plans independent certificates only)."""
    sweeps = threshold_sweeps(scored)
    if not sweeps:
        return []
    paired = scored.sorted_min is not None
    kp = np.concatenate([w.k_p for w in sweeps])
    kq = np.concatenate([w.k_q for w in sweeps])
    mp = np.concatenate([np.full(len(w.thresholds), w.m_p) for w in sweeps])
    mq = np.concatenate([np.full(len(w.thresholds), w.m_q) for w in sweeps])
    variance = (paired_log_ratio_variance(kp, kq, np.concatenate([w.k_both for w in sweeps]))
                if paired else None)
    expected, ratio = expected_bounds(kp, mp, kq, mq, variance, n_certify, delta, level,
                                      SEARCH_SHRINK_Z, chunk_size)
    promised = potentials(kp, mp, kq, mq, n_final, delta, level,
                          np.cumsum([0] + [len(w.thresholds) for w in sweeps]),
                          cautious=expected if n_final == n_certify else None,
                          variance=variance, chunk_size=chunk_size)
    return (_best_per_direction(scored.model, pair, sweeps, expected, ratio, promised)
            + one_sided_events(scored.model, pair, sweeps, expected, ratio))


ONE_SIDED_MIN_SEARCH_HITS = 3  # a one-sided event was seen at least this often under P


def one_sided_events(model, pair, sweeps, expected, ratio) -> list[Candidate]:
    """Per direction, the threshold with the most hits under P among those with none under Q
    and at least ONE_SIDED_MIN_SEARCH_HITS under P, as a `one_sided` candidate. A leak hidden in
    a rare event (1 run in 10^4; docs/method.md, "Rare leaks") shows on the selection half as a
    dozen hits to none: the planner's shrink, rightly cautious with so few, ranks it below any
    frequent event, so it is offered apart, for a tracked place (`pipeline.selection.
    one_sided_hedges`) where a larger fresh sample can rank it."""
    best: dict = {}
    stop = 0
    for w in sweeps:
        start, stop = stop, stop + len(w.thresholds)
        k_p, k_q = np.asarray(w.k_p), np.asarray(w.k_q)
        k = np.where((k_q == 0) & (k_p >= ONE_SIDED_MIN_SEARCH_HITS), k_p, -1)
        i = int(np.argmax(k))
        if k[i] < 0 or (w.direction in best and k[i] <= best[w.direction].search_counts[0]):
            continue
        best[w.direction] = Candidate(pair, w.direction, model, w.sign, float(w.thresholds[i]),
                                      float(expected[start + i]),
                                      (int(k_p[i]), w.m_p, 0, w.m_q), -np.inf,
                                      certificate=Certificate.independent(ratio[start + i]),
                                      one_sided=True)
    return [best[d] for d in sorted(best)]


def _best_per_direction(model, pair, sweeps, expected, ratio, promised) -> list[Candidate]:
    """Per direction, the event of the sweep threshold with the largest expected bound (the
    first such sweep on ties), with the largest potential of that direction's sweeps. An event
    holding every selection output of both inputs tests nothing (its ratio is 1 whatever the
    mechanism; certified, its resolution is none, theory.md §2.11): it is picked only in a
    direction that offers no other threshold."""
    best: dict = {}  # direction → ((informative, expected bound), candidate)
    stop = 0
    for w, potential in zip(sweeps, promised):
        start, stop = stop, stop + len(w.thresholds)
        here = expected[start:stop]
        informative = ~holds_everywhere(w.k_p, w.m_p, w.k_q, w.m_q) & (here > -np.inf)
        i = int(np.argmax(np.where(informative, here, -np.inf) if informative.any() else here))
        key = (bool(informative[i]), here[i])
        held = best.get(w.direction)
        if held is None or key > held[0]:
            best[w.direction] = key, Candidate(
                pair, w.direction, model, w.sign, float(w.thresholds[i]), float(here[i]),
                (int(w.k_p[i]), w.m_p, int(w.k_q[i]), w.m_q),
                potential if held is None else max(potential, held[1].potential),
                certificate=Certificate.independent(ratio[start + i]))
        elif potential > held[1].potential:
            best[w.direction] = held[0], replace(held[1], potential=potential)
    return [best[d][1] for d in sorted(best)]


def potentials(kp, mp, kq, mq, n_final, delta, level, bounds, cautious=None, variance=None,
               chunk_size=0) -> list[float]:
    """What a score promises at the final size, to rank pairs, for each sweep of thresholds
    kp[bounds[i]:bounds[i+1]]: the best expected bound over its thresholds, shrunk by
    SEARCH_SHRINK_Z standard errors, or by PROMISE_SHRINK_Z only where at least
    TUNING_MIN_HITS outputs are in the event (with a handful of hits, a far-tail threshold
    shrunk by one standard error still promises nearly anything). `cautious`: the
    SEARCH_SHRINK_Z figures at n_final when the caller already has them; `variance`: the
    paired variances of a paired sample (`expected_bounds`)."""
    if cautious is None:
        cautious = expected_bounds(kp, mp, kq, mq, variance, n_final, delta, level,
                                   SEARCH_SHRINK_Z, chunk_size)[0]
    enough = np.asarray(kp) >= TUNING_MIN_HITS
    hopeful = np.full(len(kp), -np.inf)
    if enough.any():
        hopeful[enough] = expected_bounds(kp[enough], mp[enough], kq[enough], mq[enough],
                                          None if variance is None else variance[enough],
                                          n_final, delta, level, PROMISE_SHRINK_Z, chunk_size)[0]
    out = []
    for start, stop in zip(bounds[:-1], bounds[1:]):
        best = float(np.max(cautious[start:stop]))
        if enough[start:stop].any():
            best = float(max(best, np.max(hopeful[start:stop][enough[start:stop]])))
        out.append(best)
    return out


def pair_events(pair: int, learned: list[ScoredModel], n_certify: int, delta: float,
                level: float, n_final: int | None = None,
                chunk_size: int = 0) -> list[Candidate]:
    """Each learned model's best event per direction for a certifying sample of n_certify
    (`chunk_size`: see `best_events`)."""
    return [c for scored in learned
            for c in best_events(scored, pair, n_certify, delta, level, n_final or n_certify,
                                 chunk_size)]


def retune(cand: Candidate, tuning: Tuning, n_certify: int, delta: float, level: float,
           chunk_size: int = 0) -> Candidate:
    """The candidate with its threshold re-chosen on its tuning counts: the one whose expected
    certified bound at n_certify is largest (on paired counts, planned as `best_events` plans
    a paired search: paired standard errors, and the coupled certificate with `chunk_size`)."""
    thresholds, k_p, k_q, m_p, m_q, variance = tuning = Tuning(*tuning)
    expected, ratio = expected_bounds(k_p, m_p, k_q, m_q, variance if m_p == m_q else None,
                                      n_certify, delta, level, TUNING_SHRINK_Z, chunk_size)
    everything = holds_everywhere(k_p, m_p, k_q, m_q)
    if not everything.all():  # the whole output space tests nothing (`_best_per_direction`)
        expected = np.where(everything, -np.inf, expected)
    enough = np.asarray(k_p) >= TUNING_MIN_HITS
    if cand.one_sided:  # tracked because it was seen under P only: so may its threshold be
        enough |= (np.asarray(k_q) == 0) & (np.asarray(k_p) >= ONE_SIDED_MIN_HITS)
    if enough.any():  # a tail threshold resting on a few dozen hits is mostly luck
        expected = np.where(enough, expected, -np.inf)
    i = int(np.argmax(expected))
    # `potential` stays the search-sample figure, so pairs are ranked on an equal footing
    # `search_counts` also stay: they decide when search has converged (pipeline.search.precise_enough)
    return replace(cand, threshold=float(thresholds[i]), expected_epsilon=float(expected[i]),
                   tuning=tuning,
                   certificate=Certificate.independent(ratio[i]))


# Tail rungs (`tail_rungs`): where a tracked event's log-ratio is still climbing into the tail,
# the last stage also certifies a few rarer thresholds of its family, as hedges.
TAIL_CLIMB_SPAN = 16.0  # the climb is measured from the threshold with ~16× the pick's hits
TAIL_CLIMB_Z = 3.0  # ...and must exceed this many standard errors of the difference
TAIL_PICK_MAX_Q_HITS = 100  # rungs only where the pick rests on fewer tuning hits under Q
TAIL_RUNGS = 3  # rarer thresholds certified beside the pick, at most
TAIL_RUNG_STEP = 2.5  # each rung expects this many times fewer hits under P than the one before
TAIL_RUNG_MIN_HITS = 150  # ...and at least this many on the certifying sample


def tuning_log_ratio(tuning: Tuning, i: int) -> tuple[float, float]:
    """ln((k_p/m_p)/(k_q/m_q)) at grid index i, with its variance: paired where the counts were
    paired, else 1/k_p + 1/k_q. Both counts must be positive."""
    k_p, k_q = float(tuning.k_p[i]), float(tuning.k_q[i])
    paired = tuning.variance is not None and tuning.m_p == tuning.m_q
    scale = tuning.m_q / tuning.m_p
    return (np.log(k_p / k_q * scale),
            float(tuning.variance[i]) if paired else 1 / k_p + 1 / k_q)


def _nearest(k_p: np.ndarray, allowed: np.ndarray, target: float) -> int | None:
    """The allowed grid index whose count is nearest `target` on a log scale, or None."""
    idx = np.flatnonzero(allowed)
    if idx.size == 0:
        return None
    return int(idx[np.argmin(np.abs(np.log(k_p[idx] / target)))])


def unresolved_climb(tuning: Tuning, i: int) -> bool:
    """Whether threshold i is where the tuning sample's resolution, not a plateau of the ratio,
    stopped the plan: fewer than TAIL_PICK_MAX_Q_HITS hits under Q there (a plateau's best
    threshold is its most frequent one, with hits to spare), and a log-ratio above the one at
    the threshold with about TAIL_CLIMB_SPAN× its hits under P by more than TAIL_CLIMB_Z
    standard errors (the two variances added: nested events' estimates are positively
    correlated, so this overstates the difference's error and errs towards no climb)."""
    k_p, k_q = np.asarray(tuning.k_p), np.asarray(tuning.k_q)
    if not (k_p[i] > 0 and 0 < k_q[i] * tuning.m_p / tuning.m_q < TAIL_PICK_MAX_Q_HITS):
        return False
    f = _nearest(k_p, (k_p >= 2 * k_p[i]) & (k_q > 0), TAIL_CLIMB_SPAN * k_p[i])
    if f is None:
        return False
    (r_i, v_i), (r_f, v_f) = (tuning_log_ratio(tuning, j) for j in (i, f))
    return bool(r_i - r_f > TAIL_CLIMB_Z * np.sqrt(v_i + v_f))


def tail_rungs(cand: Candidate, n_certify: int, delta: float, level: float,
               chunk_size: int = 0) -> list[Candidate]:
    """Rarer thresholds of a re-tuned candidate's family to certify beside it, when its tuning
    counts show the log-ratio still climbing into the tail (`unresolved_climb`). There a
    certifying sample n_certify/m_p times the tuning sample resolves events far rarer than the
    tuning counts can rank (under Q they hold a handful of hits or none), and the best of them
    can certify much more than the pick (docs/method.md, "Choosing the events", tail rungs).
    Up to TAIL_RUNGS grid thresholds, each expecting TAIL_RUNG_STEP× fewer hits under P than
    the last and at least TAIL_RUNG_MIN_HITS at n_certify. They are chosen on tuning counts
    only, before the certifying sample is drawn, and each takes its own share of α: the union
    bound holds as for any stage's events."""
    tuning = cand.tuning
    if tuning is None:
        return []
    i = tuning_index(cand)
    if not unresolved_climb(tuning, i):
        return []
    k_p = np.asarray(tuning.k_p, dtype=float)
    growth = n_certify / tuning.m_p
    expected, ratio = expected_bounds(k_p, tuning.m_p, tuning.k_q, tuning.m_q,
                                      tuning.variance if tuning.m_p == tuning.m_q else None,
                                      n_certify, delta, level, TUNING_SHRINK_Z, chunk_size)
    rungs, last = [], i
    for step in range(1, TAIL_RUNGS + 1):
        allowed = (k_p > 0) & (k_p < k_p[last]) & (k_p * growth >= TAIL_RUNG_MIN_HITS)
        j = _nearest(k_p, allowed, k_p[i] / TAIL_RUNG_STEP ** step)
        if j is None:
            break
        rungs.append(replace(cand, threshold=float(tuning.thresholds[j]),
                             expected_epsilon=float(expected[j]),
                             certificate=Certificate.independent(ratio[j])))
        last = j
    return rungs
