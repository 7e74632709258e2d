"""Coordinate sums: naive Bayes over two-bin coordinates, optionally decorrelated first.

For multivariate outputs whose signal is spread thinly over many coordinates (prefix sums,
many parallel noisy queries): each coordinate contributes the log-ratio of its side of the
pooled median, summed over coordinates. Weak, equal per-coordinate effects are learned with
noise about as large as the effect, so a voting and an empirical-Bayes shrunk variant are
learned too.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..sampling.encoding import Encoded
from .base import MAX_COORDINATES, ScoreModel
from .ratios import SMOOTHING, smoothed_log_ratio

DECORRELATE_ABOVE = 0.1  # coordinates are decorrelated when some |correlation| exceeds this


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
        """z: the first len(mean) coordinates (NaN where absent), decorrelated if learned so."""
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


def whitening(x: np.ndarray) -> np.ndarray | None:
    """W = L⁻¹ with LLᵀ the covariance of the rows of x, so that (x − μ)·Wᵀ has uncorrelated
    coordinates (running sums → their increments); None when the coordinates are already
    nearly uncorrelated (every |correlation| ≤ DECORRELATE_ABOVE), one is constant, or the
    covariance is not positive definite."""
    cov = np.cov(x, rowvar=False)
    sd = np.sqrt(np.diag(cov))
    if np.any(sd <= 0):
        return None
    corr = cov / np.outer(sd, sd)
    if np.max(np.abs(corr - np.eye(len(sd)))) <= DECORRELATE_ABOVE:
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
        transform = whitening(pooled)
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


def _coordinate_table(xa: np.ndarray, xb: np.ndarray, pooled: np.ndarray):
    """One coordinate's median split (NaN when the coordinate is always absent, so that nothing
    is above it), the smoothed log-ratio of its cells: below, at or above the median, and
    "absent" (NaN), with 0 for cells seen in neither sample, and the sampling variance of the
    contrast "above minus below" (delta method: 1/c over the four counts involved, each + ½)."""
    present = pooled[~np.isnan(pooled)]
    edges = np.array([np.median(present) if present.size else np.nan])

    def cells(x):  # below the split, at or above it (NaN compares False), absent
        absent = np.count_nonzero(np.isnan(x))
        above = np.count_nonzero(x >= edges[0])
        return np.array([len(x) - absent - above, above, absent])

    ca, cb = cells(xa), cells(xb)
    ratio = smoothed_log_ratio(ca, len(xa), cb, len(xb), 3)
    variance = float(np.sum(1.0 / (ca[:2] + SMOOTHING)) + np.sum(1.0 / (cb[:2] + SMOOTHING)))
    return edges, np.where(ca + cb > 0, ratio, 0.0), variance


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
