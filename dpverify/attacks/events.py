"""Candidate events S = {sign · s(o) ≥ t} and the threshold grids counted around them.

A `Candidate` is what the search hands to certification: one pair, one direction, one score
model and one threshold, chosen on the search sample and counted on a fresh certifying sample
(docs/theory.md §2). A `Probe` is a candidate whose threshold a later stage chooses: a stage
counts it at every threshold of a grid (`tuning_grid`), and the counts become its `Tuning`. A
certified event may be counted at a grid of thresholds too, for the trade-off curve
(`curve_grid`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ..certify.certificates import Certificate
from ..sampling.encoding import Encoded
from .base import ScoreModel

TUNING_GRID_SAMPLE = 1 << 17  # search outputs the tuning grid's quantiles are taken from


class Tuning(NamedTuple):
    """A tracked candidate's threshold grid counted on fresh samples (the stages that counted
    it, `pooled_tuning`): k_p of m_p draws under P and k_q of m_q under Q at each threshold;
    `variance`, when the samples were drawn in paired blocks (common random numbers), the
    paired variance of each threshold's log-ratio estimate (stats.paired_variance_from_blocks,
    pooled by `pooled_paired_variance`), else None (independent samples)."""

    thresholds: np.ndarray
    k_p: np.ndarray
    k_q: np.ndarray
    m_p: int
    m_q: int
    variance: np.ndarray | None = None


def pooled_tuning(earlier: Tuning | None, fresh: Tuning) -> Tuning:
    """A grid's counts over all the tuning samples it was counted on: `fresh`, the latest
    stage's, plus `earlier`, the sum of the stages before it, where both counted the same
    thresholds the same way (both in paired blocks, or both independently). Every one of those
    samples was drawn before the stages that certify the events they tune, so pooling keeps the
    certificates sound (docs/method.md, "Time budgets"). A paired sample is not pooled with an
    independent one: the independent counts' noise would outweigh the pairing's gain (with a
    fifth of the hits they add about a fifth of 1/k_p + 1/k_q, several times a paired
    variance), so the fresh counts are kept alone."""
    if (earlier is None or not np.array_equal(earlier.thresholds, fresh.thresholds)
            or (earlier.variance is None) != (fresh.variance is None)):
        return fresh
    k_p = np.asarray(earlier.k_p) + np.asarray(fresh.k_p)
    k_q = np.asarray(earlier.k_q) + np.asarray(fresh.k_q)
    variance = (None if fresh.variance is None
                else pooled_paired_variance(earlier, fresh, k_p, k_q))
    return Tuning(fresh.thresholds, k_p, k_q, earlier.m_p + fresh.m_p, earlier.m_q + fresh.m_q,
                  variance)


def pooled_paired_variance(earlier: Tuning, fresh: Tuning, k_p, k_q) -> np.ndarray:
    """Var ln(K_p/K_q) of pooled paired counts K = k_earlier + k_fresh, by the delta method:
    the samples are independent of each other, so each adds its own paired variance times the
    square of its share w of the hits (w²·v); a sample without a hit at a threshold adds
    nothing there. Inf where the pooled counts lack a hit under either input."""
    K_p, K_q = np.maximum(k_p, 1), np.maximum(k_q, 1)
    total = np.zeros(np.shape(k_p), dtype=float)
    for part in (earlier, fresh):
        w = (np.asarray(part.k_p) / K_p + np.asarray(part.k_q) / K_q) / 2
        with np.errstate(invalid="ignore"):
            total += np.where(w > 0, w ** 2 * np.asarray(part.variance, dtype=float), 0.0)
    return np.where((k_p > 0) & (k_q > 0), total, np.inf)


def holds_everywhere(k_p, m_p, k_q, m_q):
    """Whether an event counted k_p of m_p times under P and k_q of m_q under Q held every
    output of both: the whole output space, which tests nothing (elementwise)."""
    return (np.asarray(k_p) == m_p) & (np.asarray(k_q) == m_q)


@dataclass
class Candidate:
    """An event S = {sign · s(o) ≥ threshold} for one pair, tested in one direction.

    direction 0: P = M(D), Q = M(D');  direction 1: P = M(D'), Q = M(D).
    """

    pair: int
    direction: int
    model: ScoreModel
    sign: int
    threshold: float
    expected_epsilon: float
    search_counts: tuple  # (k_p, m_p, k_q, m_q) on the selection half of the search sample
    potential: float = -np.inf  # best expected bound of this model at the final sample size
    tuning: Tuning | None = None  # threshold-tuning counts on a fresh sample (`retune`)
    # how the event will be certified: the ratio test or two bounds are chosen with the
    # threshold, on the same search or tuning counts; the coupled t-test on a pilot drawn before
    # the certifying sample (certify.pilot.choose_coupling)
    certificate: Certificate = Certificate.TWO_BOUNDS
    # a hedge, not a pick: the threshold seen most often under P among those never seen under
    # Q on the selection half (`planning.one_sided_events`), tracked apart from the ranking
    one_sided: bool = False

    @property
    def whole_space(self) -> bool:
        """Whether the event held every output of both inputs where its threshold was chosen
        (its tuning counts, else the search's selection half): it tests nothing, its ratio
        being 1 whatever the mechanism, and certified it has no resolution (theory.md §2.11)."""
        if self.tuning is not None:
            i = tuning_index(self)
            t = self.tuning
            return bool(holds_everywhere(t.k_p[i], t.m_p, t.k_q[i], t.m_q))
        return bool(holds_everywhere(*self.search_counts))

    def hits(self, enc: Encoded, score: np.ndarray | None = None) -> np.ndarray:
        """Which outputs fall in the event; `score`: the model's scores of enc, if known (else
        the model's `fast_hits` shortcut is tried before scoring)."""
        if score is None:
            hit = self.model.fast_hits(enc, self.sign, self.threshold)
            if hit is not None:
                return hit
        with np.errstate(invalid="ignore"):
            return self.sign * (self.model.score(enc) if score is None else score) >= self.threshold

    def describe(self) -> str:
        return self.model.describe(self.sign, self.threshold)

    def signed_scores(self, enc: Encoded, score: np.ndarray | None = None) -> np.ndarray:
        """sign · s(o) per output, −∞ where the score is NaN (never in the event)."""
        s = self.model.score(enc) if score is None else score
        return np.where(np.isnan(s), -np.inf, self.sign * s)

    def threshold_counts(self, grid: np.ndarray, enc: Encoded, score: np.ndarray | None = None,
                         segment_of: np.ndarray | None = None, segments: int = 1) -> np.ndarray:
        """#{sign·s ≥ t} for every t of the ascending `grid`; with `segment_of` (each output's
        segment, 0 … segments − 1), one row of those counts per segment."""
        width = len(grid) + 1
        idx = np.searchsorted(grid, self.signed_scores(enc, score), side="right")
        if segment_of is not None:
            idx = idx + segment_of * width
        per_segment = np.bincount(idx, minlength=segments * width).reshape(segments, width)
        tail = np.cumsum(per_segment[:, ::-1], axis=1)[:, ::-1]
        return tail[:, 1:] if segment_of is not None else tail[0, 1:]


@dataclass(frozen=True, eq=False)
class Probe:
    """A candidate a stage counts at every threshold of `grid` instead of certifying it: the
    counts choose its threshold for a later stage (`Tuning`, docs/method.md, "Choosing the
    events")."""

    candidate: Candidate
    grid: np.ndarray

    @property
    def pair(self) -> int:
        return self.candidate.pair


def tuning_index(cand: Candidate) -> int:
    """The index, in the candidate's tuning grid, of the threshold it was (re)tuned to."""
    return int(np.argmin(np.abs(np.asarray(cand.tuning.thresholds) - cand.threshold)))


def curve_grid(cand: Candidate, a: Encoded, b: Encoded, points: int = 48) -> np.ndarray:
    """Thresholds for a trade-off curve, from SEARCH data: quantiles of the pooled signed score,
    dense in both tails, plus the event's own threshold."""
    v = np.concatenate([cand.signed_scores(a), cand.signed_scores(b)])
    v = v[np.isfinite(v)]
    if v.size == 0:
        return np.array([cand.threshold])
    tail = np.geomspace(1e-4, 0.5, points // 3)
    levels = np.unique(np.concatenate([tail, np.linspace(0, 1, points // 3), 1 - tail]))
    return np.unique(np.concatenate([np.quantile(v, levels), [cand.threshold]]))


def tuning_grid(cand: Candidate, a: Encoded, b: Encoded, points: int = 160) -> np.ndarray:
    """Thresholds to re-count on a larger tuning sample: every distinct signed score when there
    are few, else pooled quantiles of the search sample, dense in the favoured tail (where the
    events a large certifying sample can use live), plus the event's own threshold."""
    step = max(1, (len(a) + len(b)) // TUNING_GRID_SAMPLE)  # a thinned sample is plenty
    v = np.concatenate([cand.signed_scores(a.take(slice(None, None, step))),
                        cand.signed_scores(b.take(slice(None, None, step)))])
    v = v[np.isfinite(v)]
    if v.size == 0:
        return np.array([cand.threshold])
    distinct = np.unique(v)
    if distinct.size <= points:
        return np.unique(np.concatenate([distinct, [cand.threshold]]))
    tail = 1 - np.geomspace(2.0 / v.size, 0.5, points // 2)
    levels = np.unique(np.concatenate([tail, np.linspace(0, 1, points // 4)]))
    return np.unique(np.concatenate([np.quantile(v, levels), [cand.threshold]]))
