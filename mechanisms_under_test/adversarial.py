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
- ``make_repeated_laplace``, ``make_tiled_response``, ``make_shared_noise_laplace``,
  ``make_call_subsampled_laplace``: each run meets its claim, but the batch is not independent
  runs (repeated, tiled or shared draws, a coin per call): an audit must refuse them.
- ``make_signed_zero``, ``make_int_or_float``: one law over the reals spelled two ways (0-DP).
- ``make_curator_laplace``: not correct: Laplace at its claim that releases its input in the
  clear on a rare run (ε = ∞), the leak an audit must find (the "curator attack").
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


# Batches whose outputs are not independent draws. Every single run of each meets its claim
# exactly, but the batched form f(data, rng, size) breaks its contract ("size independent
# outputs"): an audit must refuse them (ContractError), never report a violation.

def make_repeated_laplace(epsilon=1.0, repeat=2, name="repeated_laplace"):
    """data + Laplace(1/ε) on the pair (0, 1), each draw serving `repeat` consecutive outputs
    of the batch (np.repeat). Each run is exactly ε-DP; the batch is not `size` independent
    runs. Output: float array (size,)."""

    def repeated_laplace(data, rng, size):
        draws = rng.laplace(0.0, 1.0 / epsilon, size=-(-size // repeat))
        return float(data) + np.repeat(draws, repeat)[:size]

    return declare(repeated_laplace, epsilon=epsilon, pairs=[(0, 1)], name=name,
                   doc=doc(f"Laplace, each draw repeated {repeat} times in the batch. "
                           "Output: float array (size,).", epsilon, epsilon))


def make_tiled_response(epsilon=1.0, tiles=2, name="tiled_response"):
    """Binary randomized response (truth with probability e^ε/(1 + e^ε)) on the pair (1, 0),
    the batch being `tiles` copies of size/tiles draws (np.tile). Each run is exactly ε-DP.
    Output: int64 array (size,)."""
    keep = math.exp(epsilon) / (1.0 + math.exp(epsilon))

    def tiled_response(data, rng, size):
        truth = rng.random(-(-size // tiles)) < keep
        answers = np.where(truth, int(data), 1 - int(data)).astype(np.int64)
        return np.tile(answers, tiles)[:size]

    return declare(tiled_response, epsilon=epsilon, pairs=[(1, 0)], name=name,
                   doc=doc(f"Randomized response, the batch tiled {tiles} times. "
                           "Output: int64 array (size,).", epsilon, epsilon))


def make_shared_noise_laplace(epsilon=1.0, shared=0.96, name="shared_noise_laplace"):
    """data + L + G on the pair (0, 1): L ~ Laplace(1/ε) drawn once per call and shared by the
    batch, G ~ N(0, s²) fresh per output with s² chosen so that L holds `shared` of the
    variance. Each run is a post-processing of the Laplace mechanism, so ε-DP. Output: float
    array (size,)."""
    laplace_variance = 2.0 / epsilon ** 2
    sigma = math.sqrt(laplace_variance * (1.0 - shared) / shared)

    def shared_noise_laplace(data, rng, size):
        return float(data) + rng.laplace(0.0, 1.0 / epsilon) + rng.normal(0.0, sigma, size)

    return declare(shared_noise_laplace, epsilon=epsilon, pairs=[(0, 1)], name=name,
                   doc=doc(f"Laplace shared by the batch plus fresh Gaussian noise ({shared:.0%} "
                           "of the variance shared). Output: float array (size,).",
                           epsilon, epsilon))


def make_call_subsampled_laplace(epsilon=2.0, rate=0.1, name="call_subsampled_laplace"):
    """Poisson-subsampled Laplace: the record (data ∈ {0, 1}) enters with probability `rate`,
    then Laplace(1/ε) noise; the subsampling coin is drawn once per call and shared by the
    batch. Each run is exactly ε'-DP, ε' = log(1 + rate·(e^ε − 1)) (amplification by
    subsampling, tight for this pair), which is the claim. Output: float array (size,)."""
    amplified = math.log1p(rate * math.expm1(epsilon))

    def call_subsampled_laplace(data, rng, size):
        included = rng.random() < rate
        return float(data) * included + rng.laplace(0.0, 1.0 / epsilon, size)

    return declare(call_subsampled_laplace, epsilon=amplified, pairs=[(1, 0)], name=name,
                   doc=doc(f"Laplace subsampled at rate {rate:g}, one coin per call. "
                           "Output: float array (size,).", amplified, amplified))


# The same law over the real numbers on both inputs, spelled differently: 0-DP, so any event
# certified against them is a false alarm, unless the audit compares bit patterns
# (floating_point=True), which it is not told to.

def make_signed_zero(name="signed_zero"):
    """(1 − 2·data)·G with G uniform on {−1, 0, 1}, on the pair (0, 1): on D′ = 1 the zero
    comes out as −0.0. The same law over the reals on both inputs, so 0-DP (claimed at ε = 0.5).
    Output: float array (size,)."""

    def signed_zero(data, rng, size):
        return (1.0 - 2.0 * int(data)) * rng.integers(-1, 2, size).astype(np.float64)

    return declare(signed_zero, epsilon=0.5, pairs=[(0, 1)], name=name,
                   doc=doc("Uniform on {-1, 0, 1}, the zero signed by the input. "
                           "Output: float array (size,).", 0.5, 0.0))


def make_int_or_float(name="int_or_float"):
    """A uniform digit 0–9 on both inputs of the pair (0, 1), returned as Python ints on D and
    as floats on D′: one law over the reals, 0-DP (claimed at ε = 0.5). Output: list (size,)."""

    def int_or_float(data, rng, size):
        digits = rng.integers(0, 10, size).tolist()
        return [float(d) for d in digits] if data else digits

    return declare(int_or_float, epsilon=0.5, pairs=[(0, 1)], name=name,
                   doc=doc("A digit, as int on D and float on D'. Output: list (size,).",
                           0.5, 0.0))


# A leak hidden in a rare event (Wang et al., arXiv 2411.16516, the "curator attack"): every
# other run meets the claim exactly, so only the rare event can show the violation.

def make_curator_laplace(epsilon=1.0, leak=1e-4, name=None):
    """data + Laplace(1/ε) on the pair (1, 0), except that in a fraction `leak` of runs the
    output is `data` itself, exactly: an atom seen under one input only, so ε = ∞ however rare
    it is. Claimed at ε. Output: float array (size,)."""

    def curator_laplace(data, rng, size):
        out = data + rng.laplace(0.0, 1.0 / epsilon, size)
        out[rng.random(size) < leak] = data
        return out

    what = f"in 1 run of {1 / leak:,.0f}" if leak > 0 else "never (a correct Laplace)"
    return declare(curator_laplace, epsilon=epsilon, pairs=[(1.0, 0.0)],
                   name=name or f"curator_laplace_{leak:g}",
                   doc=doc(f"Laplace that releases its input {what}. Output: float array "
                           "(size,).", epsilon, math.inf if leak > 0 else epsilon))
