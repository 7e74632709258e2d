"""Noisy histograms over bin counts (theory.md §4; the NoisyHist1/2 benchmarks of Ding et al.
CCS 2018 and Bichsel et al. S&P 2021).

``data`` is the vector of bin counts; neighbours change ONE count by at most 1
(``dpverify.pairs.one_differ(length=5)``): feeding all-differ pairs would wrongly flag
NoisyHist1 (theory.md §5). Output: float array (size, n_bins).

- NoisyHist1 adds Lap(1/ε) to each count: ε-DP.
- NoisyHist2 adds Lap(ε) (the scale is inverted): true ε = 1/ε, a violation only when ε < 1.
"""
from __future__ import annotations

import numpy as np

from dpverify.pairs import one_differ

from ._common import declare, doc


def _counts(data, n_bins):
    """The bin counts as a float vector of length n_bins."""
    h = np.asarray(data, dtype=float).reshape(-1)
    if h.shape != (n_bins,):
        raise ValueError(f"noisy histogram expects {n_bins} bin counts, got shape {np.shape(data)}")
    return h


def _make_hist(number, scale, true_eps, epsilon, n_bins, name):
    def noisy_hist(data, rng, size):
        return _counts(data, n_bins) + rng.laplace(0.0, scale, size=(size, n_bins))

    noisy_hist.__name__ = noisy_hist.__qualname__ = name
    title = (f"NoisyHist{number}: Lap({scale:g}) added to each of {n_bins} bin counts. "
             "Output: float array (size, n_bins).")
    return declare(noisy_hist, epsilon=epsilon, pairs=one_differ(length=n_bins), name=name,
                   doc=doc(title, epsilon, true_eps))


def make_noisy_hist1(epsilon=0.1, n_bins=5, name="noisy_hist1"):
    """NoisyHist1: Lap(1/ε) per bin (Dwork et al. 2006). Claim ε; true ε."""
    return _make_hist(1, 1.0 / epsilon, epsilon, epsilon, n_bins, name)


def make_noisy_hist2(epsilon=0.1, n_bins=5, name="noisy_hist2"):
    """NoisyHist2: Lap(ε) per bin, an inverted scale. Claim ε; true 1/ε (10 at ε = 0.1)."""
    return _make_hist(2, float(epsilon), 1.0 / epsilon, epsilon, n_bins, name)


noisy_hist1 = make_noisy_hist1()
noisy_hist2 = make_noisy_hist2()
