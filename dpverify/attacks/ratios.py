"""Counting outputs into cells and the smoothed log-ratio of the two inputs' cell frequencies.

Every likelihood-ratio model of this package is built the same way: give each output a cell
(its whole key, its discrete part, its float bit pattern, the bin of one coordinate), count the
cells under D and under D', and estimate ln p(cell)/q(cell) from the add-½ smoothed
frequencies, so that a cell seen under one input only gets a large but finite ratio. This
module holds that recipe once; the models differ only in how they assign cells.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

SMOOTHING = 0.5  # pseudo-count added to every cell (add-½)


def smoothed_log_ratio(c_p, n_p, c_q, n_q, k):
    """ln of the ratio of two categorical frequency estimates, each smoothed add-½ over k cells:
    ln[(c_p + ½)/(n_p + ½k)] − ln[(c_q + ½)/(n_q + ½k)], elementwise over the cells' counts."""
    return (np.log((c_p + SMOOTHING) / (n_p + SMOOTHING * k))
            - np.log((c_q + SMOOTHING) / (n_q + SMOOTHING * k)))


def cell_counts(cells_a: np.ndarray, cells_b: np.ndarray,
                n_cells: int) -> tuple[np.ndarray, np.ndarray]:
    """How many of each sample's outputs fall in each cell 0..n_cells−1."""
    return (np.bincount(cells_a, minlength=n_cells), np.bincount(cells_b, minlength=n_cells))


class ValueRatios(NamedTuple):
    """The distinct values of two samples' labels as cells (`log_ratio_by_value`)."""

    values: np.ndarray     # sorted distinct labels seen in either sample
    inverse: np.ndarray    # each pooled label's index into `values` (sample a's labels first)
    counts_a: np.ndarray   # per value: how often sample a has it
    counts_b: np.ndarray   # per value: how often sample b has it
    log_ratio: np.ndarray  # per value: the smoothed ln of a's frequency over b's


def log_ratio_by_value(labels_a: np.ndarray, labels_b: np.ndarray) -> ValueRatios:
    """Unique → count → smoothed log-ratio: each distinct label is a cell, plus one more cell for
    the labels seen in neither sample (which the models score 0)."""
    values, inverse = np.unique(np.concatenate([labels_a, labels_b]), return_inverse=True)
    n_a = len(labels_a)
    c_a, c_b = cell_counts(inverse[:n_a], inverse[n_a:], len(values))
    return ValueRatios(values, inverse, c_a, c_b,
                       smoothed_log_ratio(c_a, n_a, c_b, len(labels_b), len(values) + 1))


def locate(sorted_values: np.ndarray, query: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each query value: a position in `sorted_values` (clipped to the last one) and whether
    the value found there is the query's."""
    pos = np.minimum(np.searchsorted(sorted_values, query), len(sorted_values) - 1)
    return pos, sorted_values[pos] == query


def lookup_log_ratio(values: np.ndarray, log_ratio: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Each query label's learned log-ratio (`values` sorted), 0 for labels never seen while
    learning: no evidence either way."""
    pos, found = locate(values, query)
    return np.where(found, log_ratio[pos], 0.0)


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
