"""Bets for the anytime-valid test (docs/method.md, "Testing by betting while searching").

A learned model's threshold sweep on the selection half of the search sample gives, for each
event {sign · s ≥ t}, its hits under D, under D′ and (on a paired sample) under both. From
those the bet planner (`certify.betting.planned_bets`) estimates how fast a bet on the event
would grow the test's wealth per round; the best event of each pair and direction is the bet
offered for the rounds drawn next. The bets are chosen on rows drawn before the rows they are
settled on, so any choice keeps the test valid; a poor one only costs wealth.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..certify.betting import outcome_rates, planned_bets
from .events import Candidate
from .planning import ScoredModel, threshold_sweeps

BET_SHRINK_Z = 2.0  # standard errors the payoff's mean is shrunk by when planning a bet
MIN_BET_HITS = 3    # an event seen fewer times under the favoured input is not bet on


@dataclass(frozen=True)
class Offer:
    """A bet on `event`, as planned: its joint-outcome `rates` estimated on `rounds` earlier
    rounds, and the log-growth per round `growth` a bet at the claim is expected to earn."""

    event: Candidate
    rates: np.ndarray
    rounds: int
    growth: float


def best_offers(scored: ScoredModel, pair: int, epsilon: float, delta: float) -> list[Offer]:
    """Per direction, the threshold of this model whose bet is expected to grow fastest (none
    where no threshold is expected to grow at all)."""
    paired = scored.sorted_min is not None
    best: dict = {}
    for w in threshold_sweeps(scored):
        m = min(w.m_p, w.m_q)
        if m == 0:
            continue
        rates = outcome_rates(w.k_p * (m / w.m_p), w.k_q * (m / w.m_q),
                              w.k_both if paired else None, m)
        _, growth = planned_bets(rates, m, epsilon, delta, BET_SHRINK_Z)
        growth = np.where(np.asarray(w.k_p) >= MIN_BET_HITS, growth, 0.0)
        i = int(np.argmax(growth))
        if growth[i] <= 0 or (w.direction in best and growth[i] <= best[w.direction].growth):
            continue
        event = Candidate(pair, w.direction, scored.model, w.sign, float(w.thresholds[i]),
                          float("nan"), (int(w.k_p[i]), w.m_p, int(w.k_q[i]), w.m_q))
        best[w.direction] = Offer(event, rates[i], m, float(growth[i]))
    return [best[d] for d in sorted(best)]


def pair_offers(pair: int, learned: list[ScoredModel], epsilon: float,
                delta: float) -> list[Offer]:
    """The best offer of each direction over the pair's learned models."""
    best: dict = {}
    for scored in learned:
        for offer in best_offers(scored, pair, epsilon, delta):
            d = offer.event.direction
            if d not in best or offer.growth > best[d].growth:
                best[d] = offer
    return [best[d] for d in sorted(best)]
