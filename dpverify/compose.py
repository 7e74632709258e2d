"""Claims of composed and grouped mechanisms (docs/theory.md §1), and mechanisms
built by composition, so a pipeline can be audited against the theorem's claim.

- Sequential composition of (εᵢ, δᵢ)-DP mechanisms on the same data: (Σεᵢ, Σδᵢ).
- Parallel composition over disjoint parts of the data: (max εᵢ, max δᵢ).
- Group privacy, inputs at distance k: (kε, k·e^{(k−1)ε}·δ).
"""
from __future__ import annotations

import math

import numpy as np

from .errors import InvalidClaimError
from .mechanism import Mechanism, as_mechanism, mechanism


def sequential_claim(claims) -> tuple[float, float]:
    """(Σε, Σδ) of mechanisms run one after the other on the same data."""
    claims = [(float(e), float(d)) for e, d in claims]
    return sum(e for e, _ in claims), sum(d for _, d in claims)


def parallel_claim(claims) -> tuple[float, float]:
    """(max ε, max δ) of mechanisms run on disjoint parts of the data."""
    claims = [(float(e), float(d)) for e, d in claims]
    return max(e for e, _ in claims), max(d for _, d in claims)


def group_claim(epsilon: float, delta: float, k: int) -> tuple[float, float]:
    """(kε, k·e^{(k−1)ε}·δ): what an (ε, δ)-DP mechanism guarantees for inputs at distance k."""
    if not isinstance(k, (int, np.integer)) or k < 1:
        raise InvalidClaimError(f"the distance k must be a positive integer, got {k!r}")
    return k * epsilon, k * math.exp((k - 1) * epsilon) * delta


def _claim_of(m: Mechanism) -> tuple[float, float]:
    if m.epsilon is None:
        raise InvalidClaimError(f"{m.name!r} declares no epsilon: decorate it with "
                                "@dpverify.mechanism(epsilon=...) before composing")
    return m.epsilon, m.delta


def _run_all(parts, inputs, rng, size):
    outs = [np.asarray(m.fn(x, rng, size)).reshape(size, -1) for m, x in zip(parts, inputs)]
    return np.column_stack(outs)


def sequential(*mechanisms, pairs=None, name: str | None = None) -> Mechanism:
    """One batched mechanism that runs every part on the same input and releases all outputs
    (as columns), declared with the sequential-composition claim (Σε, Σδ). The parts must be
    batched with numeric outputs. Pairs default to the first part's."""
    parts = [as_mechanism(m) for m in mechanisms]
    if not parts or not all(m.batched for m in parts):
        raise InvalidClaimError("sequential() composes batched mechanisms f(data, rng, size)")
    eps, delta = sequential_claim(_claim_of(m) for m in parts)

    def composed(data, rng, size):
        return _run_all(parts, [data] * len(parts), rng, size)

    return mechanism(epsilon=eps, delta=delta, pairs=pairs if pairs is not None else parts[0].pairs,
                     name=name or "sequential(" + ", ".join(m.name for m in parts) + ")")(composed)


def parallel(mechanisms, parts_of, pairs=None, name: str | None = None) -> Mechanism:
    """One batched mechanism that runs mechanism i on `parts_of(data)[i]` (disjoint parts of the
    data) and releases all outputs, declared with the parallel-composition claim (max ε, max δ)."""
    parts = [as_mechanism(m) for m in mechanisms]
    if not parts or not all(m.batched for m in parts):
        raise InvalidClaimError("parallel() composes batched mechanisms f(data, rng, size)")
    eps, delta = parallel_claim(_claim_of(m) for m in parts)

    def composed(data, rng, size):
        return _run_all(parts, parts_of(data), rng, size)

    return mechanism(epsilon=eps, delta=delta, pairs=pairs,
                     name=name or "parallel(" + ", ".join(m.name for m in parts) + ")")(composed)
