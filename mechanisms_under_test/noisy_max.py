"""Report Noisy Max over n counting queries (theory.md §4; Dwork & Roth 2014 §3.3; the four
variants are the ReportNoisyMax1-4 benchmarks of Ding et al. CCS 2018 and Bichsel et al. S&P 2021).

``data`` is the vector of the n query answers; noise of scale 2/ε is added to each answer;
neighbours may move every answer by up to 1 (``dpverify.pairs.all_differ(length=5)``).

- RNM1: Laplace noise, output the argmax index: ε-DP. Output int64 array (size,).
- RNM2: exponential noise, output the argmax index: ε-DP. Output int64 array (size,).
- RNM3: Laplace noise, output the max noisy VALUE: true ε = nε/2. Output float array (size,).
- RNM4: exponential noise, output the max noisy VALUE: true ε = ∞, because the support
  [max qᵢ, ∞) moves with the input. Output float array (size,).
"""
from __future__ import annotations

import math

import numpy as np

from dpverify.pairs import all_differ

from ._common import declare, doc


def _query_vector(data, n_queries):
    """The query answers q(D) as a float vector of length n_queries."""
    q = np.asarray(data, dtype=float).reshape(-1)
    if q.shape != (n_queries,):
        raise ValueError(f"noisy max expects {n_queries} query answers, got shape {np.shape(data)}")
    return q


def _noisy_answers(q, rng, size, scale, noise):
    """q + noise for ``size`` samples: float (size, n); noise is "laplace" or "exponential"."""
    shape = (size, q.shape[0])
    if noise == "laplace":
        return q + rng.laplace(0.0, scale, size=shape)
    return q + rng.exponential(scale=scale, size=shape)


def _make_rnm(number, noise, release, true_eps, epsilon, n_queries, name):
    """Build RNM<number>: ``noise`` in {"laplace", "exponential"}, ``release`` in {"argmax", "max"}."""
    scale = 2.0 / epsilon

    def rnm(data, rng, size):
        noisy = _noisy_answers(_query_vector(data, n_queries), rng, size, scale, noise)
        if release == "argmax":
            return np.argmax(noisy, axis=1).astype(np.int64)
        return noisy.max(axis=1)

    rnm.__name__ = rnm.__qualname__ = name
    output = ("int64 array (size,) of argmax indices" if release == "argmax"
              else "float array (size,) of the max noisy value")
    title = (f"Report Noisy Max {number}: {noise} noise of scale 2/eps = {scale:g} on "
             f"{n_queries} queries, releases the {release}. Output: {output}.")
    return declare(rnm, epsilon=epsilon, pairs=all_differ(length=n_queries), name=name,
                   doc=doc(title, epsilon, true_eps))


def make_rnm1(epsilon=0.1, n_queries=5, name="rnm1"):
    """RNM1: Laplace noise Lap(2/ε), argmax index. Claim ε; true ε (Dwork & Roth 2014, Claim 3.9)."""
    return _make_rnm(1, "laplace", "argmax", epsilon, epsilon, n_queries, name)


def make_rnm2(epsilon=0.1, n_queries=5, name="rnm2"):
    """RNM2: exponential noise Exp(scale 2/ε), argmax index. Claim ε; true ε (theory.md §4)."""
    return _make_rnm(2, "exponential", "argmax", epsilon, epsilon, n_queries, name)


def make_rnm3(epsilon=0.1, n_queries=5, name="rnm3"):
    """RNM3: Laplace noise Lap(2/ε), releases the max noisy value. Claim ε; true nε/2."""
    return _make_rnm(3, "laplace", "max", n_queries * epsilon / 2, epsilon, n_queries, name)


def make_rnm4(epsilon=0.1, n_queries=5, name="rnm4"):
    """RNM4: exponential noise, releases the max noisy value. Claim ε; true ∞ (moving support)."""
    return _make_rnm(4, "exponential", "max", math.inf, epsilon, n_queries, name)


rnm1 = make_rnm1()
rnm2 = make_rnm2()
rnm3 = make_rnm3()
rnm4 = make_rnm4()
