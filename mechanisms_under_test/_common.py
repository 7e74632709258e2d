"""Helpers shared by the zoo modules."""
from __future__ import annotations

import math

import numpy as np

import dpverify


def fmt(x) -> str:
    """Format a number for a docstring line ("inf" for math.inf)."""
    x = float(x)
    return "inf" if math.isinf(x) else f"{x:.6g}"


def declare(fn, *, epsilon, delta=0.0, pairs, name, doc, exact_tradeoff=None, floating_point=False):
    """Give ``fn`` its per-instance docstring, then wrap it with ``@dpverify.mechanism``.

    The docstring is set on the function before decorating because the resulting
    ``dpverify.Mechanism`` is a frozen dataclass that copies ``__doc__`` at creation.
    """
    fn.__doc__ = doc
    return dpverify.mechanism(epsilon=epsilon, delta=delta, pairs=pairs, name=name,
                              exact_tradeoff=exact_tradeoff, floating_point=floating_point)(fn)


def doc(title: str, claim_eps, true_eps, claim_delta=0.0, notes: str = "") -> str:
    """Build a docstring with parseable "Claim:" and "True epsilon:" lines."""
    text = (f"{title}\n\n"
            f"Claim: epsilon = {fmt(claim_eps)}, delta = {fmt(claim_delta)}\n"
            f"True epsilon: {fmt(true_eps)}\n")
    if notes:
        text += "\n" + notes.strip() + "\n"
    return text


def laplace_noise(rng: np.random.Generator, scale: float, shape) -> np.ndarray:
    """Laplace(0, scale) draws as scale · E · S, E ~ Exp(1) by numpy's ziggurat and S a fair
    random sign, independent: the Laplace law exactly (|X| ~ Exp with mean `scale`, X symmetric).
    About twice as fast as ``Generator.laplace``, whose inverse CDF takes a logarithm per draw
    (11 draws per run: ~100 ns against ~220 ns on the benchmark machine)."""
    noise = rng.standard_exponential(size=shape)
    sign = rng.integers(0, 2, size=shape, dtype=np.int8)
    sign <<= 1
    sign -= 1
    noise *= sign
    noise *= scale
    return noise
