"""Marginal violations and their confirmation on fresh runs (docs/method.md, "Marginal
violations and confirmation"; docs/theory.md §2.14).

*Marginal.* An audit's false-alarm rate on a correct mechanism is at most α = 1 − confidence.
Its witness is *firm* when it would still certify a violation with every level it was given
multiplied by α (the betting test: an e-value of at least 1/(α_bet·α)). Every level scaling by
α scales the union bound behind the audit by α, so an exactly tight mechanism produces a firm
violation in at most α² of its audits — at most α of its false alarms. A violation that is not
firm is *marginal*: a tight mechanism reaches it in up to 1 − confidence of its audits.

The confirmation of a violation on fresh runs is `pipeline.confirm`.
"""
from __future__ import annotations

from ..levels import evidence_level, holds_at  # noqa: F401  (the audit's marginal test)
from ..result import Witness


def is_marginal(witness: Witness | None, claim: float, delta: float, alpha: float) -> bool:
    """A violation that would not hold with every level multiplied by α: an exactly tight
    mechanism reaches it in up to α of its audits (module docstring). False without a
    violation."""
    if witness is None or not witness.epsilon_lower_bound > claim:
        return False
    return not holds_at(witness, claim, delta, alpha)

