"""Candidate events S = {sign · s(o) ≥ t} and the threshold grids counted around them.

A `Candidate` is what the search hands to certification: one pair, one direction, one score
model and one threshold, chosen on the search sample and counted on a fresh certifying sample
(docs/theory.md §2). Its optional grid of thresholds is counted alongside, for the trade-off
curve (`curve_grid`) or to re-choose the threshold on fresh counts (`tuning_grid`, `Tuning`).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ..certify.certificates import Certificate
from ..sampling.encoding import Encoded
from .base import ScoreModel

TUNING_GRID_SAMPLE = 1 << 17  # search outputs the tuning grid's quantiles are taken from
# A tracked grid whose rarest threshold still holds this many expected hits under P on the
# stage that counts it next is extended past that threshold (`extended_grid`)...
EXTEND_MIN_HITS = 50
EXTEND_MOST_HALVINGS = 12  # ...by at most this many halvings of its expected hits


class Tuning(NamedTuple):
    """A tracked candidate's threshold grid counted on a fresh sample: k_p of m_p draws under P
    and k_q of m_q under Q at each threshold; `variance`, when the sample was drawn in paired
    blocks (common random numbers), the paired variance of each threshold's log-ratio estimate
    (stats.paired_variance_from_blocks), else None (independent samples)."""

    thresholds: np.ndarray
    k_p: np.ndarray
    k_q: np.ndarray
    m_p: int
    m_q: int
    variance: np.ndarray | None = None


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
    grid: np.ndarray | None = None  # thresholds whose counts give the trade-off curve (optional)
    tuning: Tuning | None = None  # threshold-tuning counts on a fresh sample (`retune`)
    # how the event will be certified: the ratio test or two bounds are chosen with the
    # threshold, on the same search or tuning counts; the coupled t-test on a pilot drawn before
    # the certifying sample (certify.pilot.choose_coupling)
    certificate: Certificate = Certificate.TWO_BOUNDS

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

    def grid_counts(self, enc: Encoded, score: np.ndarray | None = None,
                    segment_of: np.ndarray | None = None, segments: int = 1) -> np.ndarray:
        """#{sign·s ≥ t} for every t of the (ascending) grid; with `segment_of` (each output's
        segment, 0 … segments − 1), one row of those counts per segment."""
        width = len(self.grid) + 1
        idx = np.searchsorted(self.grid, self.signed_scores(enc, score), side="right")
        if segment_of is not None:
            idx = idx + segment_of * width
        per_segment = np.bincount(idx, minlength=segments * width).reshape(segments, width)
        tail = np.cumsum(per_segment[:, ::-1], axis=1)[:, ::-1]
        return tail[:, 1:] if segment_of is not None else tail[0, 1:]


def extended_grid(tuning: Tuning, n_next: int) -> np.ndarray:
    """A tracked grid for its next count of n_next runs per input, extended past its rarest
    threshold where the next count will still see that tail: the grid was taken from the search
    sample, whose tail ends far short of what a tuning sample 10-100 times larger resolves.
    Past the last threshold t_e (k_e hits of m_p), thresholds are placed where log k_p, extended
    linearly from the last threshold with 4·k_e hits, halves every two steps, until fewer than
    EXTEND_MIN_HITS hits are expected on n_next runs. A tail that falls faster than that (a
    support's edge) leaves the outer thresholds empty; one that falls slower leaves them too
    close, which costs only resolution. Chosen on counts of a sample before the next, so any
    choice among them is as sound as the grid's own (docs/method.md, "Choosing the events")."""
    t, k_p = np.asarray(tuning.thresholds, dtype=float), np.asarray(tuning.k_p, dtype=float)
    if t.size < 2 or not np.isfinite(t[-1]):
        return t
    k_edge, scale = k_p[-1], n_next / max(tuning.m_p, 1)
    halvings = (0 if k_edge <= 0 else
                min(EXTEND_MOST_HALVINGS, int(math.log2(k_edge * scale / EXTEND_MIN_HITS))))
    fuller = np.flatnonzero(k_p[:-1] >= 4 * k_edge)
    if halvings < 1 or fuller.size == 0 or not t[-1] > t[fuller[-1]]:
        return t
    a = fuller[-1]
    half_step = math.log(2.0) / 2 * (t[-1] - t[a]) / math.log(k_p[a] / k_edge)
    return np.concatenate([t, t[-1] + half_step * np.arange(1, 2 * halvings + 1)])


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
