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

import math

from ..result import BETTING_KINDS, COUPLED, RATIO_TEST, Witness
from ..stats import certified_epsilon, coupled_epsilon_bound, ratio_epsilon_bound

SMALLEST_FACTOR = 1e-12  # evidence_level's search stops here: stronger evidence reads as ≤ α·this


def holds_at(witness: Witness, claim: float, delta: float, factor: float) -> bool:
    """Whether `witness` still shows ε > `claim` with its level multiplied by `factor` (≤ 1),
    recomputed from the counts it carries with its own certificate (docs/theory.md §2.14)."""
    if witness.certificate in BETTING_KINDS:
        return witness.e_value >= 1.0 / (witness.betting_alpha * factor)
    level = witness.level * factor
    if witness.certificate == COUPLED:
        bound = coupled_epsilon_bound(witness.blocks_D, witness.blocks_D_prime,
                                      witness.block_size, delta, 2 * level)
    elif witness.certificate == RATIO_TEST:
        bound = ratio_epsilon_bound(witness.count_D, witness.count_D_prime, 2 * level)
    else:
        bound = certified_epsilon(witness.count_D, witness.samples_D, witness.count_D_prime,
                                  witness.samples_D_prime, delta, level)
    return bool(float(bound) > claim)


def evidence_level(witness: Witness, claim: float, delta: float, alpha: float) -> float:
    """α·f for the least factor f ≤ 1 at which `witness` still shows ε > `claim` with every
    level multiplied by f (`holds_at`): how often, at most, a mechanism meeting its claim gives
    a violation this strong. The betting test's is α/(e·α_bet) (Ville: the wealth reaches e
    with probability ≤ 1/e); the others' is found by bisection on ln f, to 1%."""
    if witness.certificate in BETTING_KINDS:
        return min(alpha, alpha / (witness.e_value * witness.betting_alpha))
    low, high = math.log(SMALLEST_FACTOR), 0.0   # holds at e^high, and is searched below
    if holds_at(witness, claim, delta, SMALLEST_FACTOR):
        return alpha * SMALLEST_FACTOR
    while high - low > 0.01:
        mid = (low + high) / 2
        if holds_at(witness, claim, delta, math.exp(mid)):
            high = mid
        else:
            low = mid
    return alpha * math.exp(high)


def is_marginal(witness: Witness | None, claim: float, delta: float, alpha: float) -> bool:
    """A violation that would not hold with every level multiplied by α: an exactly tight
    mechanism reaches it in up to α of its audits (module docstring). False without a
    violation."""
    if witness is None or not witness.epsilon_lower_bound > claim:
        return False
    return not holds_at(witness, claim, delta, alpha)

