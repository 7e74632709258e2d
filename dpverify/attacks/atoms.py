"""Atoms: exact values that repeat inside outputs that otherwise do not.

A leak can hide in a rare event: a mechanism that meets its claim on almost every run and
releases its input in the clear on 1 run in 10^4 (the "curator attack" on black-box auditors,
Wang et al., arXiv 2411.16516) has ε = ∞, yet its leaked outputs are too rare to move any
half-line or quantile bin. What gives them away is that they repeat: a continuous output
almost never takes the same value twice, while an atom (a value of positive probability) does.

`AtomRatio` makes each value that repeats at least ATOM_REPEATS times in the pooled learning
sample a cell of its own, in each numeric coordinate (as stored: the search keeps float32, so
values equal to about 7 significant digits are one value) and, for outputs of more than one
coordinate or none, in the whole output's key. s(o) is the sum of the smoothed log-ratios
(attacks/ratios.py) of the atoms o holds, 0 for an output holding none. A coordinate most of
whose values repeat is discrete and left to the per-output and discrete-part models.

Like every model, its events are a deterministic function of the output (the value rounded as
the search stored it, compared for equality), so it changes which violations are found, never
the false-alarm rate (docs/method.md, "Search").
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..sampling.encoding import Encoded
from .base import MAX_COORDINATES, ScoreModel
from .ratios import lookup_log_ratio, smoothed_log_ratio

ATOM_REPEATS = 3        # a value is an atom once the pooled learning sample holds it this often
MOSTLY_ATOMS = 0.5      # a view where more than this share of values repeat is discrete
MAX_ATOMS = 1 << 12     # at most this many atoms per view, the most frequent


@dataclass
class AtomView:
    """The atoms of one view of the output: `column` j of X (rounded to `dtype`), or the whole
    output's key (column None)."""

    column: int | None
    dtype: np.dtype | None
    values: np.ndarray       # sorted atom values (or keys)
    log_ratio: np.ndarray    # smoothed ln n_D(v)/n_D'(v) per atom
    counts: tuple            # (n_D(v), n_D'(v)) per atom on the learning half

    def labels(self, enc: Encoded) -> np.ndarray:
        if self.column is None:
            return enc.keys
        return enc.column(self.column).astype(self.dtype, copy=False)

    def name(self) -> str:
        return "output" if self.column is None else f"output[{self.column}]"

    def text(self, v) -> str:
        return f"key {int(v):#x}" if self.column is None else f"{float(v):.7g}"


@dataclass
class AtomRatio(ScoreModel):
    """s(o) = Σ over views of the log-ratio of the atom o holds there (0 where none)."""

    views: list
    kind: str = "repeated exact values"

    def score(self, enc):
        out = np.zeros(len(enc))
        for view in self.views:
            out += lookup_log_ratio(view.values, view.log_ratio, view.labels(enc))
        return out

    def describe(self, sign, threshold):
        if sign * 0.0 >= threshold:
            return (f"no repeated exact value favouring the other input (signed log-ratio below "
                    f"{threshold:.3g}; {self.kind})")
        parts = []
        for view in self.views:
            chosen = sign * view.log_ratio >= threshold
            if not chosen.any():
                continue
            order = np.argsort(-sign * view.log_ratio[chosen])
            shown = [view.text(v) for v in view.values[chosen][order][:3]]
            more = " …" if chosen.sum() > len(shown) else ""
            parts.append(f"{view.name()} is one of {int(chosen.sum())} repeated value(s) "
                         f"({', '.join(shown)}{more})")
        body = " or ".join(parts) if parts else "a combination of repeated values"
        return f"{body} (log-ratio sum ≥ {threshold:.3g}; {self.kind})"


def _repeated(ascending: np.ndarray) -> tuple[np.ndarray, int]:
    """The distinct values found at least twice in an ascending array (NaN never equals one),
    and how many entries equal the one before them."""
    twice = ascending[1:] == ascending[:-1]
    return np.unique(ascending[1:][twice]), int(twice.sum())


def _atoms(labels_a: np.ndarray, labels_b: np.ndarray, mostly: float = MOSTLY_ATOMS):
    """(values, counts under a, counts under b) of the labels repeated ATOM_REPEATS times or
    more in the pooled sample (NaN never counts); None when there are none, or when more than
    `mostly` of either sample's labels repeat a label before them (a discrete view). A label
    seen ATOM_REPEATS ≥ 3 times pooled is seen twice in one sample, so two sorts of the
    samples find every candidate; the counts are read off the sorted samples."""
    sorted_a, sorted_b = np.sort(labels_a), np.sort(labels_b)
    found_a, repeats_a = _repeated(sorted_a)
    found_b, repeats_b = _repeated(sorted_b)
    if repeats_a > mostly * len(labels_a) or repeats_b > mostly * len(labels_b):
        return None
    values = np.union1d(found_a, found_b)
    c_a = (np.searchsorted(sorted_a, values, side="right")
           - np.searchsorted(sorted_a, values, side="left"))
    c_b = (np.searchsorted(sorted_b, values, side="right")
           - np.searchsorted(sorted_b, values, side="left"))
    keep = np.flatnonzero(c_a + c_b >= ATOM_REPEATS)
    if len(keep) > MAX_ATOMS:
        keep = np.sort(keep[np.argsort(-(c_a + c_b)[keep], kind="stable")[:MAX_ATOMS]])
    if len(keep) == 0:
        return None
    return values[keep], c_a[keep], c_b[keep]


def _view(column, dtype, labels_a, labels_b) -> AtomView | None:
    """The atoms of one view and their smoothed log-ratios; None without an informative one."""
    found = _atoms(labels_a, labels_b)
    if found is None:
        return None
    values, c_a, c_b = found
    ratio = smoothed_log_ratio(c_a, len(labels_a), c_b, len(labels_b), len(values) + 1)
    if not np.any(ratio != 0):
        return None
    return AtomView(column, dtype, values, ratio, (c_a, c_b))


def learn_atom_ratio(a: Encoded, b: Encoded) -> AtomRatio | None:
    """`AtomRatio` learned on (a ~ M(D), b ~ M(D')): atoms of each of the first MAX_COORDINATES
    coordinates that is not discrete, and of the whole output when it has other than one
    coordinate. None when nothing repeats."""
    views = []
    d = min(a.X.shape[1], b.X.shape[1], MAX_COORDINATES)
    for j in range(d):
        view = _view(j, a.X.dtype, a.X[:, j], b.X[:, j])
        if view is not None:
            views.append(view)
    if a.X.shape[1] != 1:
        view = _view(None, None, a.keys, b.keys)
        if view is not None:
            views.append(view)
    return AtomRatio(views) if views else None
