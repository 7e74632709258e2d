"""Scores linear in the numeric coordinates.

- `Coordinate`: one numeric coordinate, giving half-lines {x_j ≥ t} and {x_j ≤ t};
- `LinearScore`: a linear discriminant over the numeric coordinates, for small shifts spread
  over many coordinates.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..sampling.encoding import Encoded
from .base import MAX_COORDINATES, ScoreModel


@dataclass
class Coordinate(ScoreModel):
    """s(o) = output[index]: the events are half-lines of one coordinate (NaN where absent)."""

    index: int
    kind: str = "half-line"

    def score(self, enc):
        return enc.column(self.index)

    def describe(self, sign, threshold):
        op = "≥" if sign > 0 else "≤"
        return f"output[{self.index}] {op} {sign * threshold:.6g}"


def learn_coordinates(a: Encoded, b: Encoded) -> list[Coordinate]:
    """A half-line model for each of the first MAX_COORDINATES coordinates that is present and
    not constant on the pooled learning sample."""
    models = []
    for j in range(min(a.X.shape[1], b.X.shape[1], MAX_COORDINATES)):
        col = np.concatenate([a.X[:, j], b.X[:, j]])
        col = col[~np.isnan(col)]
        if len(col) and col.min() < col.max():
            models.append(Coordinate(j))
    return models


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
        w = (", ".join(f"{x:.3g}" for x in self.weights[:6])
             + (", …" if len(self.weights) > 6 else ""))
        return f"linear score Σ w_j·output[j] {rel} {sign * threshold:.6g} (w = {w})"


def learn_linear_score(a: Encoded, b: Encoded) -> LinearScore | None:
    """`LinearScore` with w_j = (mean_a − mean_b)_j / pooled variance_j over the first
    MAX_COORDINATES coordinates (absent = 0); None for fewer than 2 coordinates or w = 0."""
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
