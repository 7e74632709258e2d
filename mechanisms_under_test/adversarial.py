"""Correct mechanisms shaped to stress the certificates: each meets its claim exactly (or, for
the Gaussian scale mixture, at the δ computed from its exact privacy profile), so every
violation an audit reports on one of them is a false alarm. Used by scripts/adversarial.py
(reports/adversarial.md); kept out of ``ZOO``.

- ``make_rare_atom``: the whole privacy loss sits on one output of probability ≤ 10⁻³.
- ``make_gaussian_scale_mixture``: a heavy-tailed privacy loss (σ drawn per run), claimed at
  its exact δ(ε).
- ``make_unaligned_laplace``: draws a different number of values on D and D′, so runs drawn on
  a shared seed do not line up.
- ``make_clipped_sum``: a clipped sum whose tight pairs input search must find.
"""
from __future__ import annotations

import math

import numpy as np
from scipy.integrate import quad
from scipy.stats import norm

import dpverify

from ._common import declare, doc

ATOM = -1  # the rare output of make_rare_atom


def make_rare_atom(epsilon=1.0, atom=1e-3, name="rare_atom"):
    """Outputs ATOM with probability `atom` on D = 0 and `atom`·e^{−ε} on D′ = 1, otherwise a
    uniform digit 0–9 on both. The event {ATOM} has ratio e^ε exactly; every other event's
    ratio is (1 − atom·e^{−ε})/(1 − atom) < e^ε either way. Exactly ε-DP, tight only on a
    rare event. Output: int64 array (size,)."""
    if not 0 < atom <= 1e-2:
        raise ValueError(f"atom must be in (0, 0.01], got {atom!r}")
    rates = (atom, atom * math.exp(-epsilon))

    def rare_atom(data, rng, size):
        leak = rng.random(size) < rates[int(data)]
        digits = rng.integers(0, 10, size=size, dtype=np.int64)
        return np.where(leak, ATOM, digits)

    return declare(rare_atom, epsilon=epsilon, pairs=[(0, 1)], name=name,
                   doc=doc(f"A rare exactly tight atom of probability {atom:g}. "
                           "Output: int64 array (size,).", epsilon, epsilon))


def mixture_delta(epsilon, sigmas, weights, shift=1.0) -> float:
    """Exact δ(ε) = ∫ (f₀ − e^ε f₁)₊ of the Gaussian scale mixture f_d(x) = Σ w_i φ((x − d)/σ_i)/σ_i
    (theory.md §1.3), by adaptive quadrature (error below 10⁻¹¹). By the mixture's symmetry
    the other order gives the same δ."""
    w = np.asarray(weights, dtype=float) / np.sum(weights)
    s = np.asarray(sigmas, dtype=float)

    def gap(x):
        f0 = np.sum(w * norm.pdf(x, 0.0, s))
        f1 = np.sum(w * norm.pdf(x, shift, s))
        return max(f0 - math.exp(epsilon) * f1, 0.0)

    edges = [-np.inf, -20.0 * s.max(), -1.0, 0.0, 0.5, 1.0, 20.0 * s.max(), np.inf]
    return float(sum(quad(gap, a, b, limit=400, epsabs=1e-13)[0]
                     for a, b in zip(edges[:-1], edges[1:])))


def make_gaussian_scale_mixture(epsilon=1.0, sigmas=(0.5, 1.0, 3.0), weights=(1, 1, 1),
                                name="gaussian_scale_mixture"):
    """Releases data + σ·N(0, 1) with σ drawn per run from `sigmas` (probabilities ∝ `weights`),
    on the pair (0, 1). Its privacy loss is unbounded and heavy-tailed (the small σ's tails);
    the claim is (ε, δ(ε)) at the exact δ of `mixture_delta`, so the claim is tight. Output:
    float array (size,)."""
    w = np.asarray(weights, dtype=float) / np.sum(weights)
    s = np.asarray(sigmas, dtype=float)
    delta = mixture_delta(epsilon, s, w)

    def gaussian_scale_mixture(data, rng, size):
        scale = s[rng.choice(len(s), size=size, p=w)]
        return float(data) + scale * rng.standard_normal(size)

    return declare(gaussian_scale_mixture, epsilon=epsilon, delta=delta, pairs=[(0.0, 1.0)],
                   name=name,
                   doc=doc(f"Gaussian scale mixture, σ ∈ {tuple(s.tolist())}, claimed at its "
                           "exact δ(ε). Output: float array (size,).", epsilon, epsilon,
                           claim_delta=delta))


def make_unaligned_laplace(epsilon=1.0, name="unaligned_laplace"):
    """Laplace(1/ε) noise on data ∈ {0, 1}, drawn as the last of 1 + data values per run: on D′
    a run consumes twice the random numbers of D, so runs drawn from one shared seed are not
    the same noise. Exactly ε-DP (sensitivity 1). Output: float array (size,)."""

    def unaligned_laplace(data, rng, size):
        draws = rng.laplace(0.0, 1.0 / epsilon, size=(size, 1 + int(data)))
        return float(data) + draws[:, -1]

    return declare(unaligned_laplace, epsilon=epsilon, pairs=[(0, 1)], name=name,
                   doc=doc("Laplace drawing a different number of values on D and D'. "
                           "Output: float array (size,).", epsilon, epsilon))


def make_clipped_sum(epsilon=1.0, length=5, high=4.0, name="clipped_sum"):
    """sum(clip(data, 0, 1)) + Laplace(1/ε) over the domain [0, high]^length, neighbours moving
    one record by at most 1 ("one_differ"): sensitivity 1, so exactly ε-DP, but tight only on
    pairs whose moved record crosses all of [0, 1], which input search
    (`dpverify.pairs.search`) has to find; elsewhere the two inputs give the same law.
    Output: float array (size,)."""

    def clipped_sum(data, rng, size):
        return float(np.sum(np.clip(data, 0.0, 1.0))) + rng.laplace(0.0, 1.0 / epsilon, size)

    return declare(clipped_sum, epsilon=epsilon,
                   pairs=dpverify.pairs.search(length=length, low=0.0, high=high,
                                               relation="one_differ"),
                   name=name,
                   doc=doc(f"Clipped sum over [0, {high:g}]^{length} behind input search. "
                           "Output: float array (size,).", epsilon, epsilon))
