"""The binned likelihood ratio: naive Bayes over an output's shape and its numeric coordinates.

Per output skeleton (⊥ pattern, length), the skeleton's ratio plus, for each numeric
coordinate, the ratio of its quantile bin. Exact for independent coordinates; for one
coordinate these are likelihood-ratio-ordered bins, which catch ratios that are not monotone
in the output.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..sampling.encoding import Encoded
from .base import MAX_COORDINATES, ScoreModel
from .ratios import bin_index, cell_counts, locate, log_ratio_by_value, smoothed_log_ratio

MAX_SKELETONS = 32  # coordinates are binned within this many of the most frequent skeletons
MIN_BINNED_OUTPUTS = 40  # a skeleton, or a coordinate within it, is binned from this many outputs


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
            pos, found = locate(self.skeletons, enc.struct)
            out[found] = self.skeleton_ratio[pos[found]]
        for rows, tables in self._rows_with_tables(pos, found):
            for j, edges, ratio in tables:
                x = enc.column(j)[rows]
                contribution = ratio[bin_index(edges, x)]
                # an absent coordinate (NaN) contributes nothing
                out[rows] += np.where(np.isnan(x), 0.0, contribution)
        return out

    def _rows_with_tables(self, pos: np.ndarray, found: np.ndarray):
        """(rows, coordinate tables) of each learned skeleton that has tables and rows: the
        rows as a slice when they are all of them, else as ascending indices."""
        with_tables = [s for s, tables in enumerate(self.coordinate_tables) if tables]
        if len(self.skeletons) > 1 and with_tables:  # each skeleton's rows, by one sort
            groups = _rows_by_group(np.where(found, pos, len(self.skeletons)),
                                    len(self.skeletons) + 1)
        for s in with_tables:
            if len(self.skeletons) == 1:
                rows = slice(None) if found.all() else np.flatnonzero(found)
            else:
                rows = groups[s]
            if not isinstance(rows, slice) and rows.size == 0:
                continue
            yield rows, self.coordinate_tables[s]

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


def _quantile_edges(values: np.ndarray, n_bins: int) -> np.ndarray:
    """The distinct inner quantiles splitting `values` into n_bins equally full bins."""
    return np.unique(np.quantile(values, np.linspace(0, 1, n_bins + 1)[1:-1]))


def _rows_by_group(group: np.ndarray, n_groups: int) -> list[np.ndarray]:
    """For group labels 0..n_groups−1, the ascending row indices of each group (one stable sort
    instead of one full comparison per group)."""
    order = np.argsort(group, kind="stable")
    return np.split(order, np.cumsum(np.bincount(group, minlength=n_groups))[:-1])


def _coordinate_tables(a: Encoded, b: Encoded, rows_a, rows_b, n_outputs: int) -> list:
    """(coordinate, edges, ln ratio per bin) for each coordinate of one skeleton's outputs
    (rows_a of a, rows_b of b; n_outputs of them) that is present often enough to bin, in
    about n^(1/3)/2 quantile bins of the pooled values (2 to 32)."""
    n_bins = int(np.clip(round(n_outputs ** (1 / 3) / 2), 2, 32))
    tables = []
    for j in range(min(a.X.shape[1], b.X.shape[1], MAX_COORDINATES)):
        xa = a.X[rows_a, j]
        xb = b.X[rows_b, j]
        xa, xb = xa[~np.isnan(xa)], xb[~np.isnan(xb)]
        if len(xa) + len(xb) < MIN_BINNED_OUTPUTS:
            continue
        edges = _quantile_edges(np.concatenate([xa, xb]), n_bins)
        if len(edges) == 0:
            continue
        ca, cb = cell_counts(np.searchsorted(edges, xa, side="right"),
                             np.searchsorted(edges, xb, side="right"), len(edges) + 1)
        tables.append((j, edges, smoothed_log_ratio(ca, len(xa), cb, len(xb), len(edges) + 1)))
    return tables


def learn_binned_ratio(a: Encoded, b: Encoded) -> BinnedLikelihoodRatio | None:
    """`BinnedLikelihoodRatio` learned on (a ~ M(D), b ~ M(D')): the ratio of every skeleton,
    and coordinate tables for the MAX_SKELETONS most frequent ones seen at least
    MIN_BINNED_OUTPUTS times. None for one skeleton with nothing to bin."""
    skeletons = log_ratio_by_value(a.struct, b.struct)
    n_sk = len(skeletons.values)
    counts = skeletons.counts_a + skeletons.counts_b
    frequent = set(np.argsort(-counts)[:MAX_SKELETONS].tolist())
    groups = _rows_by_group(skeletons.inverse, n_sk) if n_sk > 1 else None
    tables = []
    for s in range(n_sk):
        if not (s in frequent and counts[s] >= MIN_BINNED_OUTPUTS):
            tables.append([])
            continue
        if groups is None:
            rows_a, rows_b = slice(None), slice(None)
        else:
            rows = groups[s]
            rows_a, rows_b = rows[rows < len(a)], rows[rows >= len(a)] - len(a)
        tables.append(_coordinate_tables(a, b, rows_a, rows_b, counts[s]))
    if n_sk == 1 and not tables[0]:
        return None
    return BinnedLikelihoodRatio(skeletons.values, skeletons.log_ratio, tables)
