"""The three certificates of an event and the witness built from a counted event
(docs/method.md#two-bounds-certificate, #ratio-test-certificate, #coupled-certificate)."""
from __future__ import annotations

import enum
import math

from ..result import BETTING, COUPLED, RATIO_TEST, TWO_BOUNDS, Witness
from ..stats import (certified_epsilon, coupled_epsilon_bound, cp_lower, cp_upper,
                     detectable_epsilon, plug_in_epsilon, ratio_epsilon_bound)

SUPPORT_MISMATCH_HITS = 20  # hits under D, none under D', from which ε is likely ∞


class Certificate(enum.Enum):
    """How an event's certifying counts become a bound; chosen before they are drawn. The values
    are the ids results carry (`Witness.certificate`, `dpverify.certificate_ids`)."""

    TWO_BOUNDS = TWO_BOUNDS   # Clopper–Pearson bounds on p and q, each at level (docs/theory.md §2)
    RATIO_TEST = RATIO_TEST   # conditional binomial test on Poisson counts, at 2·level (§2)
    COUPLED = COUPLED         # t-test over blocks drawn on shared seeds, at 2·level (§2)

    @classmethod
    def independent(cls, ratio_test) -> "Certificate":
        """The certificate of an event counted on independent samples: the ratio test where the
        planner expects it to certify more (δ = 0 only), else two bounds."""
        return cls.RATIO_TEST if ratio_test else cls.TWO_BOUNDS


def event_bound(cand, k_p, n_p, k_q, n_q, delta, level, blocks=None) -> float:
    """The certified bound of one event with the certificate chosen for it before its certifying
    sample was drawn: the coupled t-test on `blocks` = (per-block hits under P, under Q, runs
    per block) at 2·level, the conditional ratio test at 2·level (one bound each), else two
    Clopper–Pearson bounds at level."""
    if cand.certificate is Certificate.COUPLED:
        return float(coupled_epsilon_bound(*blocks, delta, 2 * level))
    if cand.certificate is Certificate.RATIO_TEST:
        return float(ratio_epsilon_bound(k_p, k_q, 2 * level))
    return float(certified_epsilon(k_p, n_p, k_q, n_q, delta, level))


def witness_of(pairs, cand, k_p, n_p, k_q, n_q, delta, level, stage, blocks=None) -> Witness:
    """The witness of candidate `cand` counted k_p of n_p times under D and k_q of n_q under D'
    at `stage`, certified at `level` per bound; `blocks` as for `event_bound`."""
    first, second = pairs[cand.pair]
    D, D_prime = (first, second) if cand.direction == 0 else (second, first)
    coupled = cand.certificate is Certificate.COUPLED
    return Witness(
        D=D, D_prime=D_prime, event=cand.describe(), attack=cand.model.kind,
        count_D=int(k_p), samples_D=int(n_p), count_D_prime=int(k_q), samples_D_prime=int(n_q),
        p_lower=float(cp_lower(k_p, n_p, level)), q_upper=float(cp_upper(k_q, n_q, level)),
        epsilon_lower_bound=event_bound(cand, k_p, n_p, k_q, n_q, delta, level, blocks),
        epsilon_estimate=plug_in_epsilon(k_p, n_p, k_q, n_q, delta), stage=stage,
        support_mismatch=bool(k_q == 0 and k_p >= SUPPORT_MISMATCH_HITS),
        certificate=cand.certificate.value, level=float(level),
        **({"blocks_D": tuple(int(k) for k in blocks[0]),
            "blocks_D_prime": tuple(int(k) for k in blocks[1]), "block_size": int(blocks[2])}
           if coupled else {}))


def betting_witness(pairs, test, stage: int, certificate: str = BETTING):
    """(witness, event) of a betting test that found a violation (pipeline.betting): the pair
    and order whose bets earned most, its latest event, and its events' hits summed over the
    rounds it was bet on (`certificate`: CONFIRMING for a confirmation's one event). The bound
    is the test's step-down bound over its grid of claims; the
    Clopper–Pearson bounds on the summed counts, at α_bet/2 each, only describe the counts (the
    events changed between rounds, so they certify nothing)."""
    (pair, direction), stream = test.best_stream()
    first, second = pairs[pair]
    D, D_prime = (first, second) if direction == 0 else (second, first)
    only_d, only_d_prime, both, _ = (int(k) for k in stream.counts)
    k_p, k_q, n = only_d + both, only_d_prime + both, int(stream.counts.sum())
    level = test.alpha / 2
    event = stream.event
    return Witness(
        D=D, D_prime=D_prime, event=event.describe(), attack=event.model.kind,
        count_D=k_p, samples_D=n, count_D_prime=k_q, samples_D_prime=n,
        p_lower=float(cp_lower(k_p, n, level)), q_upper=float(cp_upper(k_q, n, level)),
        epsilon_lower_bound=test.lower_bound(),
        epsilon_estimate=plug_in_epsilon(k_p, n, k_q, n, test.delta), stage=stage,
        support_mismatch=bool(k_q == 0 and k_p >= SUPPORT_MISMATCH_HITS),
        certificate=certificate, level=float(level), e_value=test.e_value,
        betting_alpha=float(test.alpha),
        wealth_path=tuple((int(n), float(w)) for n, w in test.path)), event


def predicted_resolution(rate_p: float, rate_q: float, n: int, claim: float, delta: float,
                         level: float) -> float:
    """The resolution (`resolution`) a last stage of n runs per input would report on an event
    whose rates are rate_p under P and rate_q under Q (estimated on runs drawn before it): the
    same formula on the rarer of the event and its complement, at the sizes n, n."""
    mass = min(rate_p, 1.0 - rate_q)
    return detectable_epsilon(mass, n, n, claim, delta, level)


def resolution(claim: float, delta: float, witness: Witness | None) -> float:
    """The smallest true ε this budget would catch about half the time on an event as likely
    as the witness's: `stats.detectable_epsilon` at the witness's sample sizes and level, on the
    rarer of its event under D and the event's complement under D' (docs/theory.md §2.11). A
    near-certain event cannot show a large ratio, its complement can; one never seen, or rarer
    than δ, shows none (∞). ∞ without a witness."""
    if witness is None or witness.samples_D == 0 or witness.samples_D_prime == 0:
        return math.inf
    event = (witness.rate_D, witness.samples_D, witness.samples_D_prime)
    complement = (1.0 - witness.rate_D_prime, witness.samples_D_prime, witness.samples_D)
    mass, n_p, n_q = min(event, complement)
    return detectable_epsilon(mass, n_p, n_q, claim, delta, witness.level)
