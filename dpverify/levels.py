"""A witness's test at other levels than it was given (docs/theory.md §2.14): whether it still
shows a violation with every level scaled (`holds_at`), the least scaling at which it does
(`evidence_level`, the marginal test's figure), and its p-value at any test ε (`claim_pvalue`,
the report's p-value picture). Recomputed from the counts, blocks or e-value the witness
carries, with its own certificate; the pictures use them without reaching into the pipeline.
"""
from __future__ import annotations

import math

from .certificate_ids import BETTING_KINDS, COUPLED, RATIO_TEST
from .stats import certified_epsilon, coupled_epsilon_bound, ratio_epsilon_bound

SMALLEST_FACTOR = 1e-12  # evidence_level's search stops here: stronger evidence reads as ≤ α·this


def holds_at(witness, claim: float, delta: float, factor: float) -> bool:
    """Whether `witness` still shows ε > `claim` with its level multiplied by `factor`,
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


def least_factor(witness, claim: float, delta: float, largest: float) -> float:
    """The least level factor f in [SMALLEST_FACTOR, `largest`] at which `witness` still shows
    ε > `claim` (`holds_at` at f = `largest` is the caller's to check), by bisection on ln f to
    1%, from above: the factor returned always holds."""
    if holds_at(witness, claim, delta, SMALLEST_FACTOR):
        return SMALLEST_FACTOR
    low, high = math.log(SMALLEST_FACTOR), math.log(largest)
    while high - low > 0.01:
        mid = (low + high) / 2
        if holds_at(witness, claim, delta, math.exp(mid)):
            high = mid
        else:
            low = mid
    return math.exp(high)


def evidence_level(witness, claim: float, delta: float, alpha: float) -> float:
    """α·f for the least factor f ≤ 1 at which `witness` still shows ε > `claim` with every
    level multiplied by f (`holds_at`): how often, at most, a mechanism meeting its claim gives
    a violation this strong. The betting test's is α/(e·α_bet) (Ville: the wealth reaches e
    with probability ≤ 1/e); the others' is found by bisection on ln f, to 1%."""
    if witness.certificate in BETTING_KINDS:
        return min(alpha, alpha / (witness.e_value * witness.betting_alpha))
    return alpha * least_factor(witness, claim, delta, 1.0)


def claim_pvalue(witness, test_epsilon: float, delta: float, alpha: float) -> float:
    """The p-value of "ε′-DP on the witness's event" for ε′ = `test_epsilon`, by the witness's
    own certificate: α·f for the least factor f at which `holds_at` still shows ε > ε′ (its
    levels scaled so they sum to α·f), and 1 when no level up to ½ per bound shows it. At the
    claimed ε it is below α exactly when the witness certifies a violation, so a picture of it
    agrees with the verdict. Not defined for the betting test (it tests the claim alone)."""
    if witness.certificate in BETTING_KINDS:
        raise ValueError("a betting witness tests the claimed ε only; it has no p-value curve")
    per_bound = witness.level if witness.certificate not in (COUPLED, RATIO_TEST) \
        else 2 * witness.level
    largest = min(1.0 / alpha, 0.5 / per_bound)
    if not holds_at(witness, test_epsilon, delta, largest):
        return 1.0
    # searched below 1 when it holds at 1, so a violation's p-value is never rounded up past α
    top = 1.0 if holds_at(witness, test_epsilon, delta, 1.0) else largest
    return min(1.0, alpha * least_factor(witness, test_epsilon, delta, top))
