"""Helpers shared by the zoo modules."""
from __future__ import annotations

import math

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
