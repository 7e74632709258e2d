"""Mechanisms that draw their noise from a generator of their own, not from ``rng``.

Declared with ``randomness="own"``: the audit cannot seed them, so the same seed need not give
the same result. Kept out of ``ZOO`` (whose entries all draw from ``rng``, so that every zoo
audit is reproducible); used by the calibration of the own-randomness path.
"""
from __future__ import annotations

import random

import numpy as np

import dpverify

from ._common import doc
from .basic import rr_keep_probability


def python_uniforms(size: int) -> np.ndarray:
    """`size` uniforms on [0, 1) with 53 random bits each, from Python's `random` module (its
    Mersenne Twister, seeded by `random.seed`), drawn as one byte string rather than a call each."""
    words = np.frombuffer(random.randbytes(8 * size), dtype=np.uint64)
    return (words >> np.uint64(11)).astype(np.float64) * 2.0 ** -53


def make_randomized_response_python_random(epsilon, name="randomized_response_python_random"):
    """Binary randomized response whose coins come from Python's `random` module: the bit is
    kept with probability e^ε/(1 + e^ε). Exactly ε-DP on the pair (0, 1), as
    `basic.make_randomized_response(epsilon)`, but its noise is not drawn from ``rng``."""
    keep = rr_keep_probability(epsilon, 2)

    def randomized_response_python_random(data, rng, size):
        kept = python_uniforms(size) < keep
        return np.where(kept, int(data), 1 - int(data)).astype(np.int64)

    randomized_response_python_random.__doc__ = doc(
        f"Binary randomized response on Python's random module, keep probability {keep:.6g}.",
        epsilon, epsilon)
    return dpverify.mechanism(epsilon=epsilon, pairs=[(0, 1)], name=name,
                              randomness="own")(randomized_response_python_random)
