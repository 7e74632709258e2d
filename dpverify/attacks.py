"""Attacks: learn a score s(o) ≈ ln p(o)/q(o) on SEARCH samples and pick events {±s ≥ t}.

Neyman–Pearson: the most powerful test of D against D' at any level thresholds the likelihood
ratio, so every attack here estimates (a monotone transform of) it:

- `KeyLikelihoodRatio`: discrete outputs (indices, ⊤/⊥ vectors, tuples) ordered by their
  smoothed plug-in ratio (n_D(o) + ½)/(n_D'(o) + ½);
- `DiscretePartRatio`: the same ratio over the few-valued coordinates of a mixed output (⊤/⊥
  flags beside released values), whose whole outputs never repeat;
- `PartsLikelihoodRatio`: that ratio plus the ratio of which other coordinates are present
  (exact for independent parts);
- `Coordinate`: one numeric coordinate, giving half-lines {x_j ≥ t} and {x_j ≤ t};
- `LinearScore`: a linear discriminant over the numeric coordinates, for small shifts spread
  over many coordinates;
- `BinnedLikelihoodRatio`: per output skeleton (⊥ pattern, length), the skeleton's ratio plus,
  for each numeric coordinate, the ratio of its quantile bin (naive Bayes: exact for independent
  coordinates; for one coordinate these are likelihood-ratio-ordered bins, which catch ratios
  that are not monotone in the output).

Models are learned on one half of the search sample and thresholds chosen on the other half by
the bound a certifying sample of the planned size is expected to give (stats.
expected_certified_epsilon; on a paired search sample, with paired standard errors:
stats.expected_paired_bound_and_method), so no fixed probability floor caps the bound. The
certifying sample is never seen here.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import NamedTuple

import numpy as np

from .encoding import Encoded, row_hash
from .stats import (coupled_block_size, expected_bound_and_method,
                    expected_paired_bound_and_method, paired_log_ratio_variance)

SMOOTHING = 0.5
MAX_COORDINATES = 32
MAX_SKELETONS = 32
# Re-choosing a threshold on the previous stage's certifying counts (`retune`): those counts are
# fresh (the model was not fitted on them) and, from the stage before last at the default
# budget on, at least as large as the search sample's selection half, so a milder shrink than
# the search's 2σ, but only thresholds whose event was hit at least TUNING_MIN_HITS times under
# the favoured input.
TUNING_SHRINK_Z = 1.5
SEARCH_SHRINK_Z = 2.0  # search rates are shrunk this many standard errors before planning
# ...but only this many when ranking pairs (`Candidate.potential`): a pair whose best event is
# rare would otherwise lose to pairs with frequent, weaker events long before its rate is known
PROMISE_SHRINK_Z = 1.0
# On a paired sample (engine.PAIRED_SEARCH) a threshold's ratio is known so well that the
# planner's pick among thousands of thresholds is ruled by their estimates' noise (the winner's
# curse) more than by their certifying precision; paired estimates are shrunk this many more
# standard errors. Laplace(10) at 2^20 runs per input, seeds 0-3: the bound's gap to the true
# 0.1 was 0.0003-0.0025 with no extra shrink, 0.0000-0.0006 with 0.5 or 1 (0.0002-0.0010 before
# pairing); SVT6 and SVT34Parallel (30 s, seeds 0-2) moved within their seed noise from 0.5 to 1.
PAIRED_EXTRA_Z = 1.0
TUNING_MIN_HITS = 100
TUNING_GRID_SAMPLE = 1 << 17  # search outputs the tuning grid's quantiles are taken from
FEW_KEYS = 8  # a discrete event listing at most this many outputs is counted by key equalities
FEW_COLUMN_VALUES = 16  # a coordinate with at most this many values is part of the discrete part
FEW_OUTPUTS = 64  # outputs with at most this many values get the discrete models only (learn_models)


def bin_index(edges: np.ndarray, x: np.ndarray) -> np.ndarray:
    """searchsorted(edges, x, 'right') = #{edges ≤ x}; for a few edges (bits, small counts) as a
    sum of comparisons, which is several times faster than numpy's binary search. NaN → 0 by
    comparison but len(edges) by search: callers mask NaN themselves."""
    if len(edges) <= 4:
        idx = np.zeros(len(x), dtype=np.intp)
        for e in edges:
            idx += x >= e
        return idx
    return np.searchsorted(edges, x, side="right")


def _log_ratio(c_p, n_p, c_q, n_q, k):
    """Smoothed ln of the ratio of two categorical frequency estimates (add-½ on k cells)."""
    return (np.log((c_p + SMOOTHING) / (n_p + SMOOTHING * k))
            - np.log((c_q + SMOOTHING) / (n_q + SMOOTHING * k)))


class ScoreModel:
    """A score function of encoded outputs; NaN means "never in the event"."""

    kind = "score"

    def score(self, enc: Encoded) -> np.ndarray:
        raise NotImplementedError

    def describe(self, sign: int, threshold: float) -> str:
        raise NotImplementedError


@dataclass
class Coordinate(ScoreModel):
    index: int
    kind: str = "half-line"

    def score(self, enc):
        return enc.column(self.index)

    def describe(self, sign, threshold):
        op = "≥" if sign > 0 else "≤"
        return f"output[{self.index}] {op} {sign * threshold:.6g}"


@dataclass
class KeyLikelihoodRatio(ScoreModel):
    keys: np.ndarray          # sorted int64 output keys seen while learning
    log_ratio: np.ndarray     # smoothed ln n_D(o)/n_D'(o) per key
    examples: dict = field(default_factory=dict)  # key → a readable example output
    counts: tuple = ()        # (n_D(o), n_D'(o)) per key on the learning half, for the loss view
    kind: str = "discrete likelihood ratio"
    subject = "output"        # what the keys are of, for `describe`

    def privacy_loss(self, sign: int) -> dict:
        """Plug-in privacy-loss distribution L = ln p(o)/q(o) under the favoured input (sign +1:
        D), from the learning half of the search sample: an estimate, not a bound. "of" names
        what o is: the whole output, or for `DiscretePartRatio` its discrete part, whose loss
        is that of a post-processing and so a lower view of the output's."""
        c_p, c_q = self.counts if sign > 0 else self.counts[::-1]
        seen = c_p > 0
        with np.errstate(divide="ignore"):
            loss = np.log(c_p[seen] / c_p.sum()) - np.log(c_q[seen] / max(c_q.sum(), 1))
        order = np.argsort(loss)
        return {"loss": loss[order].tolist(), "probability": (c_p[seen] / c_p.sum())[order].tolist(),
                "of": self.subject}

    def keys_of(self, enc: Encoded) -> np.ndarray:
        """The key each output is ordered by: here the whole output's."""
        return enc.keys

    def score(self, enc):
        keys = self.keys_of(enc)
        pos = np.searchsorted(self.keys, keys)
        pos = np.minimum(pos, len(self.keys) - 1)
        found = self.keys[pos] == keys
        return np.where(found, self.log_ratio[pos], 0.0)

    def fast_hits(self, enc: Encoded, sign: int, threshold: float):
        """The event {sign·s ≥ t} as key equalities instead of a key search per output: the same
        event, several times cheaper when it holds (or leaves out) at most FEW_KEYS outputs, as
        the best events of few-valued outputs do (SVT, noisy max). None otherwise."""
        with np.errstate(invalid="ignore"):
            chosen = sign * self.log_ratio >= threshold
        unseen_in = sign * 0.0 >= threshold   # a key not seen while learning scores 0
        listed = self.keys[~chosen] if unseen_in else self.keys[chosen]
        if len(listed) > FEW_KEYS:
            return None
        keys = self.keys_of(enc)
        hit = np.zeros(len(enc), dtype=bool)
        for k in listed:
            hit |= keys == k
        return ~hit if unseen_in else hit

    def describe(self, sign, threshold):
        chosen = sign * self.log_ratio >= threshold
        n = int(chosen.sum())
        shown = [self.examples[k] for k in self.keys[chosen][np.argsort(-sign * self.log_ratio[chosen])][:5]
                 if k in self.examples]
        text = f"{self.subject} is one of {n} discrete values ordered by likelihood ratio"
        if shown:
            text += " (e.g. " + "; ".join(shown) + (" …" if n > len(shown) else "") + ")"
        if sign * 0.0 >= threshold:
            text += ", or a value never seen while searching"
        return text


@dataclass
class DiscretePartRatio(KeyLikelihoodRatio):
    """The per-output likelihood ratio of a mixed output's DISCRETE PART: the few-valued
    coordinates (flags, ⊤/⊥ answers, counts; absent = its own value), the continuous ones
    ignored. A function of the output, so any event of it is an event of the output; for a
    product of a discrete and a continuous mechanism (SVT34Parallel: SVT4's ⊤/⊥ answers beside
    SVT3's released values) it orders the discrete mechanism's outputs exactly, where the
    whole-output key never repeats and the naive-Bayes binned ratio treats dependent ⊤/⊥
    answers as independent. Each coordinate's value is read as the nearest value seen while
    learning (midpoint edges), so float32 search data and float64 certifying data get the
    same keys."""

    columns: tuple = ()       # the few-valued coordinates
    edges: tuple = ()         # per column: midpoints between its learned values
    kind: str = "discrete-part likelihood ratio"

    @property
    def subject(self) -> str:
        return f"discrete part ({_columns_text(self.columns)}, – = absent)"

    def keys_of(self, enc: Encoded) -> np.ndarray:
        return _discrete_part_keys(enc, self.columns, self.edges)


@dataclass
class PartsLikelihoodRatio(ScoreModel):
    """A mixed output's two parts, scored apart and summed: the discrete part's per-output
    ratio (`DiscretePartRatio`) plus the ratio of the other coordinates' absent pattern (which
    of them are released: SVT3's ⊤ positions beside SVT4's answers). Exact in the two parts'
    ratios when they are independent (SVT34Parallel: separate noise), where one key over both
    rarely repeats and the binned ratio splits the discrete part into independent bins. The
    other coordinates' values are left out: binned per coordinate they add more learning noise
    than ratio at the tail thresholds these events sit at (SVT3's releases carry Lap(c/ε₂)
    noise)."""

    discrete: DiscretePartRatio
    patterns: np.ndarray       # sorted int64 hashes of the other coordinates' absent pattern
    pattern_ratio: np.ndarray  # smoothed ln ratio of each pattern
    rest_columns: tuple
    kind: str = "parts likelihood ratio"

    def score(self, enc):
        pattern = _absent_pattern(enc, self.rest_columns)
        pos = np.minimum(np.searchsorted(self.patterns, pattern), len(self.patterns) - 1)
        rest = np.where(self.patterns[pos] == pattern, self.pattern_ratio[pos], 0.0)
        return self.discrete.score(enc) + rest

    def describe(self, sign, threshold):
        rel = "≥" if sign > 0 else "≤"
        return (f"log-likelihood ratio of the discrete part ({_columns_text(self.discrete.columns)})"
                f" + that of which other coordinates are present {rel} {sign * threshold:.4g}")


def _columns_text(columns, most: int = 12) -> str:
    """"output[10, 11, …]": the coordinates a part model reads, for `describe`."""
    more = ", …" if len(columns) > most else ""
    return f"output[{', '.join(map(str, columns[:most]))}{more}]"


def _absent_pattern(enc: Encoded, columns) -> np.ndarray:
    """A hash of which of the coordinates `columns` each output lacks (NaN)."""
    return row_hash(np.isnan(enc.X[:, list(columns)]))


def _discrete_part_keys(enc: Encoded, columns, edges) -> np.ndarray:
    """Row keys of the coded discrete part: per column the index of the nearest learned value,
    len(values) where absent (NaN), hashed as one int8 row."""
    code = np.empty((len(enc), len(columns)), dtype=np.int8)
    for i, (j, e) in enumerate(zip(columns, edges)):
        x = enc.column(j)
        code[:, i] = np.where(np.isnan(x), len(e) + 1, bin_index(e, x))
    return row_hash(code)


@dataclass
class BinnedLikelihoodRatio(ScoreModel):
    skeletons: np.ndarray      # sorted int64 skeleton hashes
    skeleton_ratio: np.ndarray  # ln ratio of each skeleton
    coordinate_tables: list    # per skeleton: list of (coordinate, edges, ln ratio per bin)
    kind: str = "binned likelihood ratio"

    def score(self, enc):
        if len(self.skeletons) == 1:  # fixed-shape outputs: no per-skeleton lookups needed
            found = enc.struct == self.skeletons[0]
            pos = np.zeros(len(enc), dtype=np.int64)
            out = np.where(found, self.skeleton_ratio[0], 0.0)
        else:
            out = np.zeros(len(enc))
            pos = np.minimum(np.searchsorted(self.skeletons, enc.struct), len(self.skeletons) - 1)
            found = self.skeletons[pos] == enc.struct
            out[found] = self.skeleton_ratio[pos[found]]
        with_tables = [s for s, tables in enumerate(self.coordinate_tables) if tables]
        if len(self.skeletons) > 1 and with_tables:  # each skeleton's rows, by one sort
            groups = _rows_by_group(np.where(found, pos, len(self.skeletons)),
                                    len(self.skeletons) + 1)
        for s in with_tables:
            tables = self.coordinate_tables[s]
            if len(self.skeletons) == 1:
                rows = slice(None) if found.all() else np.flatnonzero(found)
            else:
                rows = groups[s]
            if not isinstance(rows, slice) and rows.size == 0:
                continue
            for j, edges, ratio in tables:
                x = enc.column(j)[rows]
                contribution = ratio[bin_index(edges, x)]
                # an absent coordinate (NaN) contributes nothing
                out[rows] += np.where(np.isnan(x), 0.0, contribution)
        return out

    def intervals(self, sign: int, threshold: float):
        """With one skeleton and one binned coordinate, {sign·s ≥ t} is a union of bins: return
        it as merged half-open intervals [lo, hi) of that coordinate (bin b of
        searchsorted(edges, x, 'right') is [edges[b−1], edges[b])), else None."""
        if len(self.skeletons) != 1 or len(self.coordinate_tables[0]) != 1:
            return None
        j, edges, ratio = self.coordinate_tables[0][0]
        chosen = sign * (self.skeleton_ratio[0] + ratio) >= threshold
        bounds = np.concatenate([[-np.inf], edges, [np.inf]])
        merged: list[list[float]] = []
        for b in np.flatnonzero(chosen):
            lo, hi = bounds[b], bounds[b + 1]
            if merged and merged[-1][1] == lo:
                merged[-1][1] = hi
            else:
                merged.append([lo, hi])
        return j, [(lo, hi) for lo, hi in merged]

    def fast_hits(self, enc: Encoded, sign: int, threshold: float):
        """The event {sign·s ≥ t} by interval comparisons instead of a bin search per output (the
        same event, about 10× cheaper); None when the score is not one-dimensional."""
        spec = self.intervals(sign, threshold)
        if spec is None:
            return None
        j, intervals = spec
        x = enc.column(j)
        hit = np.zeros(len(enc), dtype=bool)
        for lo, hi in intervals:
            hit |= (x >= lo) & (x < hi)
        absent = np.isnan(x)
        if absent.any():  # an absent coordinate scores the skeleton's ratio alone
            hit[absent] = sign * self.skeleton_ratio[0] >= threshold
        found = enc.struct == self.skeletons[0]
        if not found.all():  # an unseen skeleton scores 0
            hit[~found] = sign * 0.0 >= threshold
        return hit

    def describe(self, sign, threshold):
        spec = self.intervals(sign, threshold)
        if spec is not None:
            j, intervals = spec
            parts = [f"[{lo:.6g}, {hi:.6g})" for lo, hi in intervals[:6]]
            return (f"output[{j}] in " + " ∪ ".join(parts) + (" ∪ …" if len(intervals) > 6 else "")
                    + " (likelihood-ratio-ordered bins)")
        n_coords = sum(len(t) for t in self.coordinate_tables)
        rel = "≥" if sign > 0 else "≤"
        return (f"outputs whose estimated log-likelihood ratio between the two inputs is {rel} "
                f"{sign * threshold:.4g} (learned over {len(self.skeletons)} output shape(s) "
                f"and {n_coords} binned coordinate(s); the outputs listed show what it selects)")


@dataclass
class LinearScore(ScoreModel):
    """s(o) = Σ_j w_j x_j over numeric coordinates (absent ones count 0), with w the diagonal
    linear-discriminant direction (mean_D − mean_D')/variance learned on search data. Exact
    likelihood-ratio order for independent Gaussian coordinates, and the right statistic when a
    small shift is spread over many coordinates (e.g. many noisy releases of one value)."""

    weights: np.ndarray
    kind: str = "linear score"

    def score(self, enc):
        d = min(enc.X.shape[1], len(self.weights))
        x, w = enc.X[:, :d], self.weights[:d]
        if np.isnan(x[:64]).any():  # absent coordinates are common (⊥ outputs): zero them all
            return np.einsum("ij,j->i", np.nan_to_num(x, nan=0.0), w)
        s = np.einsum("ij,j->i", x, w)
        absent = np.isnan(s)  # the few rows with an absent coordinate: again, with it as 0
        if absent.any():
            s[absent] = np.einsum("ij,j->i", np.nan_to_num(x[absent], nan=0.0), w)
        return s

    def describe(self, sign, threshold):
        rel = "≥" if sign > 0 else "≤"
        w = ", ".join(f"{x:.3g}" for x in self.weights[:6]) + (", …" if len(self.weights) > 6 else "")
        return f"linear score Σ w_j·output[j] {rel} {sign * threshold:.6g} (w = {w})"


def learn_linear_score(a: Encoded, b: Encoded) -> LinearScore | None:
    d = min(a.X.shape[1], b.X.shape[1], MAX_COORDINATES)
    if d < 2:
        return None
    xa = np.nan_to_num(a.X[:, :d].astype(np.float64), nan=0.0)
    xb = np.nan_to_num(b.X[:, :d].astype(np.float64), nan=0.0)
    var = (xa.var(axis=0) + xb.var(axis=0)) / 2
    ok = var > 0
    if not ok.any():
        return None
    w = np.zeros(d)
    w[ok] = (xa.mean(axis=0) - xb.mean(axis=0))[ok] / var[ok]
    return LinearScore(w) if np.any(w != 0) else None


@dataclass
class CoordinateSum(ScoreModel):
    """Naive Bayes over coordinates: s(o) = Σ_j r_j(bin of z_j), z = (x − μ)·Wᵀ.

    - W is the inverse Cholesky factor of the pooled covariance when the coordinates are
      correlated (it decorrelates them in order: running sums become their increments), else
      the identity. Summing per-coordinate log-ratios is the exact log-likelihood ratio when the
      z_j are independent, e.g. independent noise on each query or increment.
    - r_j is the smoothed log-ratio of z_j's side of its pooled median; an absent coordinate
      (⊥, NaN) is a cell of its own, so ⊥/abort flags and released values are scored together.
    - The voting variant (label "vote") keeps only the sign of each r_j: its score counts the
      coordinates on their favoured side, which for many weak coordinates (each log-ratio known
      only roughly from search data) orders outputs better than the noisy weights.
    """

    mean: np.ndarray
    transform: np.ndarray | None
    edges: list      # per coordinate: its one split point (NaN: nothing above it)
    ratios: list     # per coordinate: log-ratios below, at or above the split, and absent
    label: str
    kind: str = "coordinate sum"
    # the score as a weighted count over all coordinates at once:
    # (splits, Σ_j below_j, above_j − below_j, absent_j − below_j)
    _split: tuple = field(init=False, repr=False, default=())

    def __post_init__(self):
        r = np.array([np.asarray(r_j, dtype=float) for r_j in self.ratios])  # (d, 3)
        self._split = (np.array([e[0] for e in self.edges]), float(r[:, 0].sum()),
                       r[:, 1] - r[:, 0], r[:, 2] - r[:, 0])

    def features(self, enc: Encoded) -> np.ndarray:
        d = len(self.mean)
        if enc.X.shape[1] >= d:
            x = enc.X[:, :d]
        else:
            x = np.full((len(enc), d), np.nan, dtype=enc.X.dtype)
            x[:, :enc.X.shape[1]] = enc.X
        if self.transform is None:
            return x
        return _decorrelate(x, self.mean, self.transform)

    def score(self, enc):
        z = self.features(enc)
        splits, below, step_above, step_absent = self._split
        # NaN compares False, i.e. "below"; absent coordinates are then moved to their cell
        out = below + np.einsum("ij,j->i", z >= splits.astype(z.dtype), step_above)
        absent = np.isnan(z)
        if absent.any():
            out += np.einsum("ij,j->i", absent, step_absent)
        return out

    def describe(self, sign, threshold):
        rel = "≥" if sign > 0 else "≤"
        return (f"{self.label}: Σ_j per-coordinate log-ratio {rel} {sign * threshold:.4g} "
                f"over {len(self.edges)} coordinate(s)")


def _decorrelate(x: np.ndarray, mean: np.ndarray, transform: np.ndarray) -> np.ndarray:
    """(x − μ)·Wᵀ. einsum rather than BLAS: OpenBLAS's threads make this tall, thin product
    several times slower on a busy machine, and the audit is already parallel over chunks."""
    return np.einsum("ij,kj->ik", x - mean.astype(x.dtype), transform.astype(x.dtype))


def _whitening(x: np.ndarray) -> np.ndarray | None:
    """Inverse Cholesky factor of the covariance of x when coordinates are correlated (some
    |correlation| > 0.1) and the covariance is well conditioned, else None."""
    cov = np.cov(x, rowvar=False)
    sd = np.sqrt(np.diag(cov))
    if np.any(sd <= 0):
        return None
    corr = cov / np.outer(sd, sd)
    if np.max(np.abs(corr - np.eye(len(sd)))) <= 0.1:
        return None
    try:
        chol = np.linalg.cholesky(cov)
    except np.linalg.LinAlgError:
        return None
    return np.linalg.inv(chol)


def learn_coordinate_sums(a: Encoded, b: Encoded) -> list[CoordinateSum]:
    """Coordinate-sum scores for multivariate outputs: weighted, voting and shrunk-weight
    two-bin versions on the raw (or, if correlated, decorrelated) coordinates."""
    d = min(a.X.shape[1], b.X.shape[1], MAX_COORDINATES)
    if d < 2:
        return []
    xa, xb = a.X[:, :d], b.X[:, :d]
    pooled = np.concatenate([xa, xb])
    mean = np.zeros(d)
    transform = None
    if not np.isnan(pooled).any():
        transform = _whitening(pooled)
        if transform is not None:
            mean = pooled.mean(axis=0)
            xa, xb = _decorrelate(xa, mean, transform), _decorrelate(xb, mean, transform)
            pooled = np.concatenate([xa, xb])
    # two bins per coordinate (split at the pooled median); finer bins on raw coordinates are
    # `BinnedLikelihoodRatio`'s job
    prefix = "decorrelated " if transform is not None else ""
    tables = [_coordinate_table(xa[:, j], xb[:, j], pooled[:, j]) for j in range(d)]
    edges = [t[0] for t in tables]
    ratios = [t[1] for t in tables]
    models = [CoordinateSum(mean, transform, edges, ratios, prefix + "2-bin likelihood-ratio sum"),
              # the same bins, voting: only the sign of each coordinate's log-ratio counts
              CoordinateSum(mean, transform, edges, [np.sign(r) for r in ratios], prefix + "vote")]
    present = np.array([not np.isnan(e[0]) for e in edges])
    shrunk = shrink_split_contrasts(ratios, np.array([t[2] for t in tables]), present)
    if shrunk is not None:
        models.append(CoordinateSum(mean, transform, edges, shrunk,
                                    prefix + "shrunk 2-bin likelihood-ratio sum"))
    return models


def shrink_to_common_effect(estimates: np.ndarray, variances: np.ndarray) -> np.ndarray | None:
    """Empirical-Bayes shrinkage of d ≥ 4 noisy estimates θ_j (sampling variances v_j) towards
    their common mean, under the random-effects model θ_j ~ N(μ, τ² + v_j) (DerSimonian &
    Laird, Control. Clin. Trials 7, 1986; the James–Stein idea with unequal variances):
    τ̂² = max(0, (Q − (d − 1)) / (Σw − Σw²/Σw)) with w = 1/v and Q = Σ w_j (θ_j − θ̄_w)²; then
    θ̂_j = μ̂ + τ̂²/(τ̂² + v_j)·(θ_j − μ̂), μ̂ the mean weighted by 1/(τ̂² + v_j). When the spread
    of the estimates is no more than their noise, they are pulled to the common mean; when it is
    much larger, they stay almost as they are. None for fewer than 4 estimates."""
    d = len(estimates)
    if d < 4:
        return None
    w = 1.0 / variances
    centre = np.sum(w * estimates) / w.sum()
    q = float(np.sum(w * (estimates - centre) ** 2))
    tau2 = max(0.0, (q - (d - 1)) / (w.sum() - np.sum(w ** 2) / w.sum()))
    mu = np.sum(estimates / (tau2 + variances)) / np.sum(1.0 / (tau2 + variances))
    return mu + tau2 / (tau2 + variances) * (estimates - mu)


def shrink_split_contrasts(ratios: list, variances: np.ndarray, present: np.ndarray) -> list | None:
    """Per-coordinate cell log-ratios with each coordinate's contrast "at or above its split
    minus below it" shrunk across the coordinates that were ever present
    (`shrink_to_common_effect`); absent cells keep their learned contrast. Only contrasts
    matter: a constant per coordinate does not change how a coordinate sum orders outputs.
    Many weak coordinates of about the same effect (e.g. 20 queries each with ε = 0.005) are
    learned from the search sample with noise as large as their effect; the shrunk weights are
    then nearly equal, as the true ones are. None when fewer than 4 coordinates were present."""
    r = np.array([np.asarray(r_j, dtype=float) for r_j in ratios])  # (d, 3)
    contrast = r[:, 1] - r[:, 0]
    shrunk = shrink_to_common_effect(contrast[present], np.asarray(variances)[present])
    if shrunk is None:
        return None
    contrast = contrast.copy()
    contrast[present] = shrunk
    return [np.array([0.0, c, absent - below]) for c, (below, _, absent) in zip(contrast, r)]


def _coordinate_table(xa: np.ndarray, xb: np.ndarray, pooled: np.ndarray):
    """One coordinate's median split (NaN when the coordinate is always absent, so that nothing
    is above it), the smoothed log-ratio of its cells: below, at or above the median, and
    "absent" (NaN), with 0 for cells seen in neither sample, and the sampling variance of the
    contrast "above minus below" (delta method: 1/c over the four counts involved, each + ½)."""
    present = pooled[~np.isnan(pooled)]
    edges = np.array([np.median(present) if present.size else np.nan])
    k = 3

    def cells(x):  # below the split, at or above it (NaN compares False), absent
        absent = np.count_nonzero(np.isnan(x))
        above = np.count_nonzero(x >= edges[0])
        return np.array([len(x) - absent - above, above, absent])

    ca, cb = cells(xa), cells(xb)
    ratio = _log_ratio(ca, len(xa), cb, len(xb), k)
    variance = float(np.sum(1.0 / (ca[:2] + SMOOTHING)) + np.sum(1.0 / (cb[:2] + SMOOTHING)))
    return edges, np.where(ca + cb > 0, ratio, 0.0), variance


FLOAT_COORDINATES = 4
_MANTISSA = np.uint64((1 << 52) - 1)


def float_bit_pattern(x: np.ndarray) -> np.ndarray:
    """Per value: (sign, biased exponent, trailing zero bits of the 52-bit mantissa) packed in an
    int64; −1 for NaN (absent). Sums rounded in floating point land on coarser grids than their
    parts (x + n lies on the grid of max(|x|, |n|)), so which patterns occur depends on the
    input: Mironov (CCS 2012), theory.md §6."""
    x = np.ascontiguousarray(x, dtype=np.float64)
    bits = x.view(np.uint64)
    sign = bits >> np.uint64(63)
    exponent = (bits >> np.uint64(52)) & np.uint64(0x7FF)
    mantissa = bits & _MANTISSA
    with np.errstate(over="ignore"):
        lowest = mantissa & (~mantissa + np.uint64(1))
    with np.errstate(divide="ignore"):
        zeros = np.where(mantissa > 0, np.log2(lowest.astype(np.float64)), 52.0).astype(np.int64)
    key = (sign.astype(np.int64) << 20) | (exponent.astype(np.int64) << 6) | zeros
    return np.where(np.isnan(x), -1, key)


@dataclass
class FloatBitPattern(ScoreModel):
    """Likelihood ratio of one coordinate's float bit pattern (`float_bit_pattern`): events such
    as "output[0] lies in [1/4, 1/2) with an odd mantissa", which a textbook floating-point
    Laplace can produce from one input and never from its neighbour."""

    index: int
    keys: np.ndarray
    log_ratio: np.ndarray
    kind: str = "float bit pattern"

    def score(self, enc):
        key = float_bit_pattern(enc.column(self.index))
        pos = np.minimum(np.searchsorted(self.keys, key), len(self.keys) - 1)
        return np.where(self.keys[pos] == key, self.log_ratio[pos], 0.0)

    def describe(self, sign, threshold):
        chosen = np.flatnonzero(sign * self.log_ratio >= threshold)
        shown = []
        for k in self.keys[chosen][np.argsort(-sign * self.log_ratio[chosen])][:3]:
            if k < 0:
                shown.append("absent")
                continue
            negative, exponent, zeros = k >> 20, (k >> 6) & 0x7FF, k & 63
            low = 2.0 ** (int(exponent) - 1023)
            shown.append(f"{'−' if negative else ''}[{low:.3g}, {2 * low:.3g}) with "
                         f"{int(zeros)} trailing zero bit(s)")
        return (f"output[{self.index}]'s float bit pattern (sign, binade, trailing zero bits of "
                f"the mantissa) is one of {len(chosen)} ordered by likelihood ratio (e.g. "
                + "; ".join(shown) + ")")


def learn_float_bit_patterns(a: Encoded, b: Encoded) -> list[FloatBitPattern]:
    models = []
    for j in range(min(a.X.shape[1], b.X.shape[1], FLOAT_COORDINATES)):
        keys, inverse = np.unique(np.concatenate([float_bit_pattern(a.X[:, j]),
                                                  float_bit_pattern(b.X[:, j])]),
                                  return_inverse=True)
        if len(keys) < 2:
            continue
        c_a = np.bincount(inverse[:len(a)], minlength=len(keys))
        c_b = np.bincount(inverse[len(a):], minlength=len(keys))
        models.append(FloatBitPattern(j, keys, _log_ratio(c_a, len(a), c_b, len(b), len(keys) + 1)))
    return models


def _readable(enc: Encoded, i: int) -> str | None:
    """Output i's numbers, or None when it has none (a string, bool or None output, which the
    encoding keeps only as a hash: the witness's examples show those as they are)."""
    x = enc.X[i]
    x = x[~np.isnan(x)]
    if not len(x):
        return None
    return "(" + ", ".join(f"{v:.4g}" for v in x[:10]) + (", …" if len(x) > 10 else "") + ")"


def learn_key_ratio(a: Encoded, b: Encoded) -> KeyLikelihoodRatio:
    keys, inverse = np.unique(np.concatenate([a.keys, b.keys]), return_inverse=True)
    c_a = np.bincount(inverse[:len(a)], minlength=len(keys))
    c_b = np.bincount(inverse[len(a):], minlength=len(keys))
    ratio = _log_ratio(c_a, len(a), c_b, len(b), len(keys) + 1)
    both = Encoded.concat([a, b])
    first = np.unique(inverse, return_index=True)[1]
    examples = {}
    if both.X.shape[1] <= 16 and len(keys) <= 4096:
        examples = {int(keys[u]): _readable(both, i) for u, i in zip(range(len(keys)), first)}
        examples = {k: v for k, v in examples.items() if v is not None}
    return KeyLikelihoodRatio(keys, ratio, examples, (c_a, c_b))


def learn_discrete_part_ratio(a: Encoded, b: Encoded,
                              probe: int = 4096) -> DiscretePartRatio | None:
    """`DiscretePartRatio` of a mixed output: its coordinates that take at most
    FEW_COLUMN_VALUES values on a probe of each input's first `probe` outputs, when at least
    one other coordinate takes more (outputs that are all few-valued repeat whole and get
    `learn_key_ratio`) and the coded parts repeat (at most a quarter distinct). None else."""
    d = min(a.X.shape[1], b.X.shape[1], MAX_COORDINATES)
    head = np.concatenate([a.X[:probe, :d], b.X[:probe, :d]])
    columns, edges = [], []
    for j in range(d):
        col = head[:, j]
        values = np.unique(col[~np.isnan(col)])
        if 0 < len(values) <= FEW_COLUMN_VALUES:
            columns.append(j)
            edges.append((values[1:] + values[:-1]) / 2)
    if not columns or len(columns) == d:
        return None
    columns, edges = tuple(columns), tuple(edges)
    keys_a = _discrete_part_keys(a, columns, edges)
    keys_b = _discrete_part_keys(b, columns, edges)
    keys, inverse = np.unique(np.concatenate([keys_a, keys_b]), return_inverse=True)
    if not 2 <= len(keys) <= (len(a) + len(b)) / 4:
        return None
    c_a = np.bincount(inverse[:len(a)], minlength=len(keys))
    c_b = np.bincount(inverse[len(a):], minlength=len(keys))
    ratio = _log_ratio(c_a, len(a), c_b, len(b), len(keys) + 1)
    examples = {}
    if len(keys) <= 4096:
        both = np.concatenate([a.X[:, list(columns)], b.X[:, list(columns)]])
        first = np.unique(inverse, return_index=True)[1]
        examples = {int(keys[u]): "(" + ", ".join("–" if np.isnan(v) else f"{v:.4g}"
                                                   for v in both[i][:12]) + ")"
                    for u, i in enumerate(first)}
    return DiscretePartRatio(keys, ratio, examples, (c_a, c_b), columns=columns, edges=edges)


def learn_parts_ratio(a: Encoded, b: Encoded,
                      discrete: DiscretePartRatio) -> PartsLikelihoodRatio | None:
    """`PartsLikelihoodRatio`: `discrete` plus the smoothed ratio of the other coordinates'
    absent patterns; None when those never differ (nothing to add)."""
    rest = tuple(j for j in range(min(a.X.shape[1], b.X.shape[1])) if j not in discrete.columns)
    patterns, inverse = np.unique(np.concatenate([_absent_pattern(a, rest),
                                                  _absent_pattern(b, rest)]), return_inverse=True)
    if len(patterns) < 2:
        return None
    c_a = np.bincount(inverse[:len(a)], minlength=len(patterns))
    c_b = np.bincount(inverse[len(a):], minlength=len(patterns))
    ratio = _log_ratio(c_a, len(a), c_b, len(b), len(patterns) + 1)
    return PartsLikelihoodRatio(discrete, patterns, ratio, rest)


def _quantile_edges(values: np.ndarray, n_bins: int) -> np.ndarray:
    edges = np.unique(np.quantile(values, np.linspace(0, 1, n_bins + 1)[1:-1]))
    return edges


def _rows_by_group(group: np.ndarray, n_groups: int) -> list[np.ndarray]:
    """For group labels 0..n_groups−1, the ascending row indices of each group (one stable sort
    instead of one full comparison per group)."""
    order = np.argsort(group, kind="stable")
    return np.split(order, np.cumsum(np.bincount(group, minlength=n_groups))[:-1])


def learn_binned_ratio(a: Encoded, b: Encoded) -> BinnedLikelihoodRatio | None:
    pooled = np.concatenate([a.struct, b.struct])
    skeletons, inverse, counts = np.unique(pooled, return_inverse=True, return_counts=True)
    n_sk = len(skeletons)
    c_a = np.bincount(inverse[:len(a)], minlength=n_sk)
    c_b = counts - c_a
    sk_ratio = _log_ratio(c_a, len(a), c_b, len(b), n_sk + 1)
    tables = []
    frequent = set(np.argsort(-counts)[:MAX_SKELETONS].tolist())
    groups = _rows_by_group(inverse, n_sk) if n_sk > 1 else None
    for s, sk in enumerate(skeletons):
        coord_tables = []
        if s in frequent and counts[s] >= 40:
            if groups is None:
                rows_a, rows_b = slice(None), slice(None)
            else:
                rows = groups[s]
                rows_a, rows_b = rows[rows < len(a)], rows[rows >= len(a)] - len(a)
            n_bins = int(np.clip(round(counts[s] ** (1 / 3) / 2), 2, 32))
            for j in range(min(a.X.shape[1], b.X.shape[1], MAX_COORDINATES)):
                xa = a.X[rows_a, j]
                xb = b.X[rows_b, j]
                xa, xb = xa[~np.isnan(xa)], xb[~np.isnan(xb)]
                if len(xa) + len(xb) < 40:
                    continue
                edges = _quantile_edges(np.concatenate([xa, xb]), n_bins)
                if len(edges) == 0:
                    continue
                ca = np.bincount(np.searchsorted(edges, xa, side="right"), minlength=len(edges) + 1)
                cb = np.bincount(np.searchsorted(edges, xb, side="right"), minlength=len(edges) + 1)
                coord_tables.append((j, edges, _log_ratio(ca, len(xa), cb, len(xb), len(edges) + 1)))
        tables.append(coord_tables)
    if n_sk == 1 and not tables[0]:
        return None
    return BinnedLikelihoodRatio(skeletons, sk_ratio, tables)


def _outputs_repeat(a: Encoded, b: Encoded, probe: int = 4096) -> bool:
    """Discrete enough for a per-output ratio: at most a quarter of the outputs are distinct
    (checked on a probe first, so continuous outputs are never hashed in full)."""
    head = np.concatenate([a.take(slice(0, probe)).keys, b.take(slice(0, probe)).keys])
    if len(np.unique(head)) > len(head) / 4:
        return False
    return len(np.unique(np.concatenate([a.keys, b.keys]))) <= (len(a) + len(b)) / 4


def learn_models(a: Encoded, b: Encoded, floating_point: bool = False) -> list[ScoreModel]:
    """All score models worth trying for this pair, learned on (a ~ M(D), b ~ M(D')).
    `floating_point`: also the float-bit-pattern models (the claim covers exact float outputs).

    Outputs that take at most FEW_OUTPUTS values on the learning sample (SVT's ⊤/⊥ vectors,
    noisy max's index) get the per-output likelihood ratio, the half-lines and the linear score
    only: the binned ratio and the coordinate sums smooth continuous or many-valued coordinates,
    and on a handful of outputs, each seen often, they only re-order what the per-output ratio
    already orders (Neyman–Pearson), at most of SVT's search time.
    """
    models: list[ScoreModel] = []
    if floating_point and a.X.dtype == np.float64:
        models += learn_float_bit_patterns(a, b)
    few = False
    if _outputs_repeat(a, b):
        models.append(learn_key_ratio(a, b))
        few = len(models[-1].keys) <= FEW_OUTPUTS
    else:
        part = learn_discrete_part_ratio(a, b)
        if part is not None:
            models.append(part)
            parts = learn_parts_ratio(a, b, part)
            if parts is not None:
                models.append(parts)
    d = min(a.X.shape[1], b.X.shape[1], MAX_COORDINATES)
    for j in range(d):
        col = np.concatenate([a.X[:, j], b.X[:, j]])
        col = col[~np.isnan(col)]
        if len(col) and col.min() < col.max():
            models.append(Coordinate(j))
    binned = None if few else learn_binned_ratio(a, b)
    if binned is not None:
        models.append(binned)
    linear = learn_linear_score(a, b)
    if linear is not None:
        models.append(linear)
    if not few:
        models += learn_coordinate_sums(a, b)
    return models


def _candidate_thresholds(sorted_a: np.ndarray, sorted_b: np.ndarray) -> np.ndarray:
    """Thresholds to try: every distinct finite value when there are few, else each sample's
    order statistics on a grid that is dense in both tails (where the large ratios live)."""
    parts = []
    for v in (sorted_a, sorted_b):
        v = v[np.isfinite(v)]
        if v.size == 0:
            continue
        m = v.size
        if m <= 4096:
            parts.append(v)
            continue
        tail = np.geomspace(1.0, m / 2, 256)
        idx = np.concatenate([tail, np.linspace(0, m - 1, 513), m - 1 - tail])
        parts.append(v[np.clip(idx.astype(np.int64), 0, m - 1)])
    if not parts:
        return np.empty(0)
    return np.unique(np.concatenate(parts))


def count_at_least(sorted_values: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    return len(sorted_values) - np.searchsorted(sorted_values, thresholds, side="left")


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
    # certify with the one-bound ratio test (δ = 0, stats.ratio_epsilon_bound) instead of two
    # Clopper–Pearson bounds; chosen with the threshold, on the same search or tuning counts
    ratio_test: bool = False
    # certify on common random numbers (stats.coupled_epsilon_bound); chosen on a coupled pilot
    # drawn before the certifying sample (engine._choose_coupling)
    coupled: bool = False

    def hits(self, enc: Encoded, score: np.ndarray | None = None) -> np.ndarray:
        """Which outputs fall in the event; `score`: the model's scores of enc, if known."""
        fast = getattr(self.model, "fast_hits", None)
        if fast is not None and score is None:
            hit = fast(enc, self.sign, self.threshold)
            if hit is not None:
                return hit
        with np.errstate(invalid="ignore"):
            return self.sign * (self.model.score(enc) if score is None else score) >= self.threshold

    def describe(self) -> str:
        return self.model.describe(self.sign, self.threshold)

    def signed_scores(self, enc: Encoded, score: np.ndarray | None = None) -> np.ndarray:
        s = self.model.score(enc) if score is None else score
        return np.where(np.isnan(s), -np.inf, self.sign * s)

    def grid_counts(self, enc: Encoded, score: np.ndarray | None = None) -> np.ndarray:
        """#{sign·s ≥ t} for every t of the (ascending) grid."""
        idx = np.searchsorted(self.grid, self.signed_scores(enc, score), side="right")
        tail = np.cumsum(np.bincount(idx, minlength=len(self.grid) + 1)[::-1])[::-1]
        return tail[1:]


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


def retune(cand: Candidate, tuning: Tuning, n_certify: int, delta: float, level: float,
           chunk_size: int = 0) -> Candidate:
    """The candidate with its threshold re-chosen on its tuning counts: the one whose expected
    certified bound at n_certify is largest (on paired counts, planned as `best_events` plans
    a paired search: paired standard errors, and the coupled certificate with `chunk_size`)."""
    thresholds, k_p, k_q, m_p, m_q, variance = tuning = Tuning(*tuning)
    expected, ratio = _plan(k_p, m_p, k_q, m_q, variance if m_p == m_q else None, n_certify,
                            delta, level, TUNING_SHRINK_Z, chunk_size)
    enough = np.asarray(k_p) >= TUNING_MIN_HITS
    if enough.any():  # a tail threshold resting on a few dozen hits is mostly luck
        expected = np.where(enough, expected, -np.inf)
    i = int(np.argmax(expected))
    # `potential` stays the search-sample figure, so pairs are ranked on an equal footing
    # `search_counts` also stay: they decide when search has converged (engine._precise_enough)
    return replace(cand, threshold=float(thresholds[i]), expected_epsilon=float(expected[i]),
                   grid=None, tuning=tuning, ratio_test=bool(ratio[i]))


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
    s_a, s_b = model.score(sel_a), model.score(sel_b)
    if not (paired and len(s_a) == len(s_b)):
        return ScoredModel(model, _sorted_present(s_a), _sorted_present(s_b), len(s_a), len(s_b))
    # np.minimum/np.maximum propagate NaN: a row outside every event under one input is
    # never in an event under both
    return ScoredModel(model, _sorted_present(s_a), _sorted_present(s_b), len(s_a), len(s_b),
                       _sorted_present(np.minimum(s_a, s_b)),
                       _sorted_present(np.maximum(s_a, s_b)))


def _plan(kp, mp, kq, mq, variance, n, delta, level, shrink_z, chunk_size):
    """Expected bound and ratio-test choice per threshold: on a paired sample (`variance`: each
    estimate's paired variance) shrunk PAIRED_EXTRA_Z standard errors more, with the coupled
    certificate planned where a chunk size is given; else from independent rates."""
    if variance is None:
        return expected_bound_and_method(kp, mp, kq, mq, n, delta, level, shrink_z)
    return expected_paired_bound_and_method(kp, kq, mp, n, delta, level,
                                            shrink_z + PAIRED_EXTRA_Z, variance,
                                            coupled_block_size(n, chunk_size)
                                            if chunk_size else 0)


def best_events(scored: ScoredModel, pair: int, n_certify: int, delta: float, level: float,
                n_final: int, chunk_size: int = 0) -> list[Candidate]:
    """For each direction, the threshold maximising the expected certified bound on the
    selection half at this stage's certifying size; `potential` records the best at the final
    size. The sign −1 order is the reversed, negated sign +1 one: each score is sorted once.
    The four (sign, direction) threshold sweeps are planned in one call per figure: on the
    small samples of the first stages, per-call overhead, not arithmetic, is what search costs.
    On a paired selection sample the rates are shrunk by paired standard errors and the
    coupled certificate is planned too (`chunk_size`: the certifying chunk, which sets its
    blocks; 0 plans independent certificates only)."""
    model, m_a, m_b = scored.model, scored.m_a, scored.m_b
    paired = scored.sorted_min is not None
    sweeps = []   # (sign, direction, thresholds, k_p, m_p, k_q, m_q, k_both)
    for sign in (1, -1):
        va, vb = ((scored.sorted_a, scored.sorted_b) if sign > 0
                  else (-scored.sorted_a[::-1], -scored.sorted_b[::-1]))
        thresholds = _candidate_thresholds(va, vb)
        if thresholds.size == 0:
            continue
        ka = count_at_least(va, thresholds)
        kb = count_at_least(vb, thresholds)
        kab = (None if not paired else count_at_least(
            scored.sorted_min if sign > 0 else -scored.sorted_max[::-1], thresholds))
        sweeps += [(sign, 0, thresholds, ka, m_a, kb, m_b, kab),
                   (sign, 1, thresholds, kb, m_b, ka, m_a, kab)]
    if not sweeps:
        return []
    kp = np.concatenate([w[3] for w in sweeps])
    kq = np.concatenate([w[5] for w in sweeps])
    mp = np.concatenate([np.full(len(w[2]), w[4]) for w in sweeps])
    mq = np.concatenate([np.full(len(w[2]), w[6]) for w in sweeps])
    variance = (paired_log_ratio_variance(kp, kq, np.concatenate([w[7] for w in sweeps]))
                if paired else None)
    expected, ratio = _plan(kp, mp, kq, mq, variance, n_certify, delta, level, SEARCH_SHRINK_Z,
                            chunk_size)
    potentials = _potentials(kp, mp, kq, mq, n_final, delta, level,
                             np.cumsum([0] + [len(w[2]) for w in sweeps]),
                             cautious=expected if n_final == n_certify else None,
                             variance=variance, chunk_size=chunk_size)
    best = {0: None, 1: None}
    stop = 0
    for (sign, direction, thresholds, k_p, m_p, k_q, m_q, _), potential in zip(sweeps,
                                                                                potentials):
        start, stop = stop, stop + len(thresholds)
        i = int(np.argmax(expected[start:stop]))
        if best[direction] is None or expected[start + i] > best[direction].expected_epsilon:
            best[direction] = Candidate(pair, direction, model, sign, float(thresholds[i]),
                                        float(expected[start + i]),
                                        (int(k_p[i]), m_p, int(k_q[i]), m_q), potential,
                                        ratio_test=bool(ratio[start + i]))
        elif potential > best[direction].potential:
            best[direction].potential = potential
    return [best[d] for d in (0, 1) if best[d] is not None]


def _potentials(kp, mp, kq, mq, n_final, delta, level, bounds, cautious=None, variance=None,
                chunk_size=0) -> list[float]:
    """What a score promises at the final size, to rank pairs, for each sweep of thresholds
    kp[bounds[i]:bounds[i+1]]: the best expected bound over its thresholds, shrunk by
    SEARCH_SHRINK_Z standard errors, or by PROMISE_SHRINK_Z only where at least
    TUNING_MIN_HITS outputs are in the event (with a handful of hits, a far-tail threshold
    shrunk by one standard error still promises nearly anything). `cautious`: the
    SEARCH_SHRINK_Z figures at n_final when the caller already has them; `variance`: the
    paired variances of a paired sample (`_plan`)."""
    if cautious is None:
        cautious = _plan(kp, mp, kq, mq, variance, n_final, delta, level, SEARCH_SHRINK_Z,
                         chunk_size)[0]
    enough = np.asarray(kp) >= TUNING_MIN_HITS
    hopeful = np.full(len(kp), -np.inf)
    if enough.any():
        hopeful[enough] = _plan(kp[enough], mp[enough], kq[enough], mq[enough],
                                None if variance is None else variance[enough], n_final, delta,
                                level, PROMISE_SHRINK_Z, chunk_size)[0]
    out = []
    for start, stop in zip(bounds[:-1], bounds[1:]):
        best = float(np.max(cautious[start:stop]))
        if enough[start:stop].any():
            best = float(max(best, np.max(hopeful[start:stop][enough[start:stop]])))
        out.append(best)
    return out


def learn_pair(search_a: Encoded, search_b: Encoded, floating_point: bool = False,
               paired: bool = False) -> list[ScoredModel]:
    """Learn on even-indexed search samples and score the odd-indexed ones (the selection half,
    on which thresholds are chosen). `paired`: row i of both samples shares its random numbers
    (the engine's search draws them so), which the selection's joint counts then use."""
    learn_a, sel_a = search_a.take(slice(0, None, 2)), search_a.take(slice(1, None, 2))
    learn_b, sel_b = search_b.take(slice(0, None, 2)), search_b.take(slice(1, None, 2))
    return [score_selection(model, sel_a, sel_b, paired)
            for model in learn_models(learn_a, learn_b, floating_point)]


def pair_events(pair: int, learned: list[ScoredModel], n_certify: int, delta: float,
                level: float, n_final: int | None = None,
                chunk_size: int = 0) -> list[Candidate]:
    """Each learned model's best event per direction for a certifying sample of n_certify
    (`chunk_size`: see `best_events`)."""
    return [c for scored in learned
            for c in best_events(scored, pair, n_certify, delta, level, n_final or n_certify,
                                 chunk_size)]


def search_pair(pair: int, search_a: Encoded, search_b: Encoded, n_certify: int, delta: float,
                level: float, n_final: int | None = None,
                floating_point: bool = False) -> list[Candidate]:
    """Candidate events of one pair: `learn_pair`, then `pair_events`."""
    return pair_events(pair, learn_pair(search_a, search_b, floating_point), n_certify, delta,
                       level, n_final)


PROBE_STRIDE = 4  # tracked candidates' grids are counted on every 4th certifying output


class PairEvaluator:
    """Counts, in one certifying chunk, how often each chosen event of one pair occurs.

    Candidates from index `probe_start` on are tracked ones: only their threshold grids are
    counted, on every `stride`-th output. The default, PROBE_STRIDE, is for stages that also
    certify: a binary search per output and grid is far dearer than drawing the output, and at
    the stage before last a quarter of the certifying sample is already as large as the search
    sample's selection half. The stages of a measurement run that certify nothing use stride 1:
    there the grids are all there is to count.
    """

    def __init__(self, candidates: list[Candidate], probe_start: int | None = None,
                 stride: int = PROBE_STRIDE):
        self.candidates = candidates
        self.probe_start = len(candidates) if probe_start is None else probe_start
        self.stride = stride
        # seconds each chunk spent counting the tracked grids (after scoring), for time budgets;
        # list.append is atomic across threads (a process backend's copies are not seen)
        self.grid_seconds: list[float] = []

    def __call__(self, enc: Encoded) -> np.ndarray:
        """Counts of each event (0 for tracked candidates), then the counts at each threshold of
        every candidate with a grid, then how many outputs the tracked grids were counted on.
        A model shared by several events (directions, thresholds) is scored once per chunk."""
        events = self.candidates[:self.probe_start]
        probes = self.candidates[self.probe_start:]
        sub = (enc.take(slice(None, None, self.stride)) if probes and self.stride > 1
               else enc)
        event_scores = self._scores(events, enc)
        counts = [np.array([np.count_nonzero(c.hits(enc, s)) for c, s in zip(events, event_scores)]
                           + [0] * len(probes))]
        counts += [c.grid_counts(enc, s) for c, s in zip(events, event_scores)
                   if c.grid is not None]
        scores = self._scores(probes, sub)
        started = time.perf_counter()
        counts += [c.grid_counts(sub, s) for c, s in zip(probes, scores)]
        if probes:
            self.grid_seconds.append(time.perf_counter() - started)
        counts.append(np.array([len(sub) if probes else 0]))
        return np.concatenate(counts).astype(np.int64)

    @staticmethod
    def _scores(candidates: list[Candidate], enc: Encoded) -> list:
        """Each candidate's model scores on enc, computed once per shared model; None where a
        model serves one candidate without a grid (hits() may then take a faster path)."""
        shared: dict = {}
        for c in candidates:
            shared[id(c.model)] = shared.get(id(c.model), 0) + 1
        cache: dict = {}
        out = []
        for c in candidates:
            if shared[id(c.model)] == 1 and c.grid is None:
                out.append(None)
                continue
            if id(c.model) not in cache:
                cache[id(c.model)] = c.model.score(enc)
            out.append(cache[id(c.model)])
        return out
