"""Marginal violations and their confirmation on fresh runs (docs/method.md, "Marginal
violations and confirmation"; docs/theory.md §2.14).

*Marginal.* An audit's false-alarm rate on a correct mechanism is at most α = 1 − confidence.
Its witness is *firm* when it would still certify a violation with every level it was given
multiplied by α (the betting test: an e-value of at least 1/(α_bet·α)). Every level scaling by
α scales the union bound behind the audit by α, so an exactly tight mechanism produces a firm
violation in at most α² of its audits — at most α of its false alarms. A violation that is not
firm is *marginal*: a tight mechanism reaches it in up to 1 − confidence of its audits.

*Confirmation.* The witness's event, fixed before any of them is drawn, is counted again on
fresh runs of its pair, in looks of growing size (`looks`), each a test of the one event at
α/L (L looks, a union bound). The violation is confirmed at the first look whose bound beats
the claim. A correct mechanism is flagged only if the audit false-alarms (≤ α) and then a look
on runs independent of it does too (≤ α): at most α² overall, the same as a firm violation.
"""
from __future__ import annotations

from ..result import BETTING, COUPLED, RATIO_TEST, Witness
from ..stats import certified_epsilon, coupled_epsilon_bound, ratio_epsilon_bound

FIRST_LOOK_RUNS = 1024  # the fewest runs per input of the first look
LOOK_GROWTH = 4         # each look counts the event on 4× as many runs per input as the last


def looks(first: int, most: int, growth: int = LOOK_GROWTH) -> list[int]:
    """The cumulative runs per input at each look: `first` (at least FIRST_LOOK_RUNS), then
    ×`growth` each look, the last one exactly `most` (only `most` when first ≥ most). Fixed by
    the witness's sample size and the audit's budget, before any confirming run is drawn."""
    first = max(FIRST_LOOK_RUNS, int(first))
    if first >= most:
        return [int(most)]
    sizes = [first]
    while sizes[-1] * growth < most:
        sizes.append(sizes[-1] * growth)
    return sizes + [int(most)]


def look_level(alpha: float, n_looks: int) -> float:
    """The per-bound level of each look's certificate: α/L per look (union bound over L looks),
    split over the two Clopper–Pearson bounds of the two-bound certificate (the ratio test is
    run at twice it, `certify.event_bound`)."""
    return alpha / n_looks / 2


def holds_at(witness: Witness, claim: float, delta: float, factor: float) -> bool:
    """Whether `witness` still shows ε > `claim` with its level multiplied by `factor` (≤ 1),
    recomputed from the counts it carries with its own certificate (docs/theory.md §2.14)."""
    if witness.certificate == BETTING:
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


def is_marginal(witness: Witness | None, claim: float, delta: float, alpha: float) -> bool:
    """A violation that would not hold with every level multiplied by α: an exactly tight
    mechanism reaches it in up to α of its audits (module docstring). False without a
    violation."""
    if witness is None or not witness.epsilon_lower_bound > claim:
        return False
    return not holds_at(witness, claim, delta, alpha)

