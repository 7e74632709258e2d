"""Reference mechanisms with exactly known privacy curves (theory.md §3).

Laplace, Gaussian (classic calibration) and k-ary randomized response, all in batched form
``f(data, rng, size)``: every call returns ``size`` independent outputs, shape (size,), and draws
all of its randomness from ``rng``.
"""
from __future__ import annotations

import math

import numpy as np

from dpverify import region

from ._common import declare, doc


# --------------------------------------------------------------------------------------------
# Laplace
# --------------------------------------------------------------------------------------------

def make_laplace(epsilon, sensitivity=1.0, claim=None, name="laplace"):
    """Laplace mechanism (Dwork, McSherry, Nissim, Smith, TCC 2006): D + Lap(sensitivity/epsilon).

    ``data`` is a real number; the output is a float array of shape (size,).
    Neighbours: the pair (0, sensitivity). The mechanism is epsilon-DP; ``claim`` (default
    ``epsilon``) is what the decorator declares, so ``claim < epsilon`` builds a broken entry.
    Exact curve: δ(ε') = 1 − e^{(ε' − ε)/2} for ε' ≤ ε (theory.md §3).
    """
    sensitivity = float(sensitivity)
    scale = sensitivity / float(epsilon)
    claimed = epsilon if claim is None else claim

    def laplace(data, rng, size):
        return float(data) + rng.laplace(0.0, scale, size=size)

    return declare(laplace, epsilon=claimed, pairs=[(0.0, sensitivity)], name=name,
                   exact_tradeoff=region.laplace_tradeoff(sensitivity / scale),
                   doc=doc(f"Laplace mechanism: D + Lap({scale:g}), sensitivity {sensitivity:g}. "
                           "Output: float array (size,).", claimed, epsilon))


# --------------------------------------------------------------------------------------------
# Gaussian
# --------------------------------------------------------------------------------------------

def gaussian_sigma(epsilon, delta, sensitivity=1.0):
    """Classic calibration σ = Δ·√(2 ln(1.25/δ))/ε (Dwork & Roth 2014, Thm A.1; valid for ε < 1)."""
    return float(sensitivity) * math.sqrt(2.0 * math.log(1.25 / delta)) / float(epsilon)


def _phi(x):
    """Standard normal CDF, accurate in the lower tail."""
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


def gaussian_delta(epsilon, mu):
    """Exact δ(ε) of the Gaussian mechanism with μ = Δ/σ (Balle & Wang, ICML 2018; theory.md §3)."""
    return _phi(mu / 2 - epsilon / mu) - math.exp(epsilon) * _phi(-mu / 2 - epsilon / mu)


def gaussian_true_epsilon(sigma, delta, sensitivity=1.0):
    """Smallest ε with δ(ε) ≤ delta for the Gaussian mechanism (bisection on the exact curve)."""
    mu = float(sensitivity) / float(sigma)
    lo, hi = 0.0, 1.0
    while gaussian_delta(hi, mu) > delta:
        hi *= 2.0
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        if gaussian_delta(mid, mu) > delta:
            lo = mid
        else:
            hi = mid
    return hi


def make_gaussian(epsilon, delta, sensitivity=1.0, name="gaussian"):
    """Gaussian mechanism with the classic calibration (Dwork & Roth 2014, Thm A.1).

    Output D + N(0, σ²) with σ = Δ√(2 ln(1.25/δ))/ε: a float array of shape (size,).
    Claim (epsilon, delta). The calibration is only proven for epsilon < 1; at larger epsilon the
    claim is not guaranteed, so such an instance is not a known-correct zoo entry.
    Neighbours: the pair (0, sensitivity). The true epsilon reported in the instance docstring is
    the smallest ε' with δ(ε') ≤ delta on the exact curve (pure-DP epsilon is infinite).
    """
    sensitivity = float(sensitivity)
    sigma = gaussian_sigma(epsilon, delta, sensitivity)

    def gaussian(data, rng, size):
        return float(data) + rng.normal(0.0, sigma, size=size)

    return declare(gaussian, epsilon=epsilon, delta=delta, pairs=[(0.0, sensitivity)], name=name,
                   exact_tradeoff=region.gaussian_tradeoff(sensitivity / sigma),
                   doc=doc(f"Gaussian mechanism, classic calibration: D + N(0, {sigma:.6g}²). "
                           "Output: float array (size,).", epsilon,
                           gaussian_true_epsilon(sigma, delta, sensitivity), claim_delta=delta,
                           notes="True epsilon is the smallest epsilon at the claimed delta on "
                                 "the exact Balle-Wang curve; pure-DP epsilon is infinite."))


# --------------------------------------------------------------------------------------------
# Randomized response
# --------------------------------------------------------------------------------------------

def rr_keep_probability(epsilon, k=2):
    """Keep probability e^ε/(e^ε + k − 1) of k-ary randomized response (theory.md §3)."""
    e = math.exp(float(epsilon))
    return e / (e + k - 1)


def make_randomized_response(epsilon, k=2, name="randomized_response"):
    """k-ary randomized response (Warner 1965; k-RR of Kairouz, Oh, Viswanath 2014).

    ``data`` is an int in range(k). With probability e^ε/(e^ε + k − 1) the true value is
    released, otherwise a value drawn uniformly from the k − 1 other values. Output: int64 array
    of shape (size,). Neighbours: the pair (0, 1). Exactly epsilon-DP;
    δ(ε') = (e^ε − e^ε')₊/(e^ε + k − 1) (theory.md §3).
    """
    k = int(k)
    if k < 2:
        raise ValueError(f"randomized response needs k >= 2 values, got k={k}")
    keep = rr_keep_probability(epsilon, k)

    def randomized_response(data, rng, size):
        value = int(data)
        if not 0 <= value < k:
            raise ValueError(f"randomized response data must be in range({k}), got {data!r}")
        kept = rng.random(size) < keep
        # A shift of 1..k-1 (mod k) is uniform over the k-1 values other than `value`.
        other = (value + rng.integers(1, k, size=size)) % k
        return np.where(kept, value, other).astype(np.int64)

    return declare(randomized_response, epsilon=epsilon, pairs=[(0, 1)], name=name,
                   exact_tradeoff=region.randomized_response_tradeoff(epsilon, k),
                   doc=doc(f"{k}-ary randomized response, keep probability {keep:.6g}. "
                           "Output: int64 array (size,).", epsilon, epsilon))



# --------------------------------------------------------------------------------------------
# Two-sided geometric (discrete Laplace)
# --------------------------------------------------------------------------------------------

def make_geometric(epsilon, name="geometric"):
    """Two-sided geometric mechanism (Ghosh, Roughgarden, Sundararajan, STOC 2009), also called
    discrete Laplace: D + Z with P(Z = z) ∝ e^{−ε|z|} on the integers.

    ``data`` is an int; the output is an int64 array of shape (size,). Z is drawn as G1 − G2
    with G1, G2 iid geometric on {0, 1, …} with success probability 1 − e^{−ε}, which gives
    P(Z = z) = (1 − a)/(1 + a) · a^{|z|}, a = e^{−ε}. Neighbours: the pair (0, 1) (sensitivity
    1). Exactly epsilon-DP; its δ(ε') curve equals binary randomized response at epsilon
    (theory.md §3).
    """
    epsilon = float(epsilon)
    if not epsilon > 0:
        raise ValueError(f"the geometric mechanism needs epsilon > 0, got {epsilon!r}")
    p = -math.expm1(-epsilon)  # 1 − e^{−ε}, accurate for small ε

    def geometric(data, rng, size):
        # numpy's geometric counts trials up to the first success, on {1, 2, …}; the shifts to
        # {0, 1, …} (−1 on each draw) cancel in the difference.
        z = rng.geometric(p, size=size) - rng.geometric(p, size=size)
        return (int(data) + z).astype(np.int64)

    return declare(geometric, epsilon=epsilon, pairs=[(0, 1)], name=name,
                   doc=doc(f"Two-sided geometric (discrete Laplace) mechanism: D + Z, "
                           f"P(Z = z) ∝ exp(−{epsilon:g}|z|), sensitivity 1. "
                           "Output: int64 array (size,).", epsilon, epsilon))


laplace = make_laplace(0.1)
gaussian = make_gaussian(0.5, 1e-5)
randomized_response = make_randomized_response(0.5)
geometric = make_geometric(0.5)
