"""The anytime-valid test of an ordinary audit: bets placed on search rows before they are drawn
(docs/method.md, "Testing by betting while searching"; docs/theory.md §2.12).

The search draws its rows in rounds. Before a round, the test places bets: events learned on
every earlier row (`attacks.bets`), each with a share of the wealth and a bet per tested claim.
When the round's rows arrive they first settle the bets, then join the search sample. The
wealth of the test of each claim ε′ (`certify.betting.claim_grid`) is a non-negative
supermartingale under "M is (ε′, δ)-DP on every pair", however the events, shares, bets and
rows per pair were chosen, because each was fixed before the rows it is settled on. So an audit
may stop at the first round whose wealth reaches 1/α_bet, at a time limit or on Ctrl-C, and the
chance of a false alarm is still at most α_bet.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.special import logsumexp

from ..attacks.bets import BET_SHRINK_Z, Offer
from ..certify.betting import (claim_grid, joint_counts, log_wealth_factor, planned_bets,
                               step_down_bound)
from ..sampling import Sampler
from .search import Search, round_key, round_sizes, round_steps

# None of these touches soundness: any choice made before the rows it is settled on keeps the
# test valid. The figures behind them are in reports/detection.md (docs/method.md).
BETTING_SHARE = 0.5     # the share of an ordinary audit's α spent by the betting test
BETS_PER_ROUND = 4      # the wealth is spread over at most this many events a round
RECORD_WEIGHT = 1.0     # how strongly a pair's losing record cuts its share of the wealth
FEWEST_ROWS_SHARE = 64  # a pair that offers no bet still gets 1/64 of a round's rows


@dataclass
class Stream:
    """What one pair in one order has been bet on: the joint-outcome counts of its events over
    the rounds it was settled on (their sum is the rounds), and the log-growth a unit bet
    through it earned at the claim."""

    counts: np.ndarray = field(default_factory=lambda: np.zeros(4, np.int64))
    log_gain: float = 0.0
    event: object = None   # the latest event bet on


@dataclass
class PlacedBet:
    """An offer taken for the next round: its share of the wealth and its stake per claim."""

    offer: Offer
    share: float
    bets: np.ndarray  # λ at each claim of the grid


class BettingTest:
    """The wealth of the tests of every claim in `grid` (from the claimed ε up), the bets placed
    for the next round, and what each pair and order was bet on."""

    def __init__(self, epsilon: float, delta: float, alpha: float, progress=None):
        self.epsilon, self.delta, self.alpha = epsilon, delta, alpha
        self.grid = claim_grid(epsilon)
        self.log_wealth = np.zeros(len(self.grid))
        self.crossed = np.zeros(len(self.grid), bool)
        self.placed: list[PlacedBet] = []
        self.streams: dict = {}
        self.rows = 0  # rounds settled, summed over pairs
        # (rows settled so far, wealth of the test of the claim) after each round
        self.path: list = [(0, 1.0)]
        self.progress = progress  # a progress.Progress shown the wealth after every round

    # ---- before a round -------------------------------------------------------------------

    def place(self, offers: list[Offer]) -> None:
        """Bet on the round drawn next: the BETS_PER_ROUND offers expected to grow fastest,
        with shares of the wealth proportional to that growth, and at each claim of the grid
        the bet planned for it (0 where the event is not expected to beat that claim)."""
        # only offers of positive weight: a record of heavy losses can underflow to 0
        weight = {id(o): w for o in offers if (w := o.growth * self._record_of(o)) > 0}
        offers = sorted((o for o in offers if id(o) in weight), key=lambda o: -weight[id(o)])
        offers = offers[:BETS_PER_ROUND]
        total = sum(weight[id(o)] for o in offers)
        self.placed = [PlacedBet(o, weight[id(o)] / total,
                                 planned_bets(o.rates, o.rounds, self.grid, self.delta,
                                              BET_SHRINK_Z)[0])
                       for o in offers]

    def _record_of(self, offer: Offer) -> float:
        """How far the bets of the offer's pair and order have kept their promise: e^(loss)
        of a unit bet through them so far, 1 if they have not lost (RECORD_WEIGHT applied to
        the log). Planned growth is measured on the rows that chose the event, and so
        flattered by the choice; what the bets then earned on rows drawn afterwards is not."""
        s = self.streams.get((offer.event.pair, offer.event.direction))
        if s is None:
            return 1.0
        return math.exp(RECORD_WEIGHT * min(s.log_gain, 0.0))

    def rows_for(self, pairs: list[int], size: int) -> dict:
        """Rows per pair for the next round of `size`: a pair whose best bet grows at a share g
        of the leading pair's gets max(g, floor) of the rows (all get `size` before any bet is
        placed), in whole pairs of rows (the search's two halves). The floor, the share that
        keeps exploring, is 1/FEWEST_ROWS_SHARE while the wealth is at most 1 and falls as the
        wealth grows above 1 (1/(FEWEST_ROWS_SHARE · wealth)): once bets are winning on rows
        drawn after they were chosen, the runs go to finishing them."""
        growth = {p: 0.0 for p in pairs}
        for b in self.placed:
            if b.offer.event.pair in growth:
                growth[b.offer.event.pair] = max(growth[b.offer.event.pair], b.offer.growth)
        lead = max(growth.values(), default=0.0)
        if lead <= 0:
            return {p: size for p in pairs}
        floor = 1.0 / (FEWEST_ROWS_SHARE * max(1.0, self.e_value))
        share = {p: max(g / lead, floor) for p, g in growth.items()}
        return {p: max(2, int(size * share[p]) // 2 * 2) for p in pairs}

    # ---- when the round's rows arrive ------------------------------------------------------

    def settle(self, rows: dict) -> None:
        """Settle the placed bets on the round's rows, `rows`: pair → (outputs of D, of D′),
        row i of both one round. Rows of a pair with no bet change nothing."""
        if not rows:
            return
        self.rows += sum(len(d) for d, _ in rows.values())
        if not self.placed:
            self.path.append((self.rows, self.e_value))
            return
        # the round's wealth factor Σ share·e^gain (+ the unbet share), summed in logs: a bet
        # that wins big on a long round can pass the largest float
        unbet = 1.0 - sum(b.share for b in self.placed)
        terms = [np.full(len(self.grid), math.log(unbet) if unbet > 0 else -np.inf)]
        for b in self.placed:
            event = b.offer.event
            if event.pair not in rows:
                terms.append(np.full(len(self.grid), math.log(b.share)))
                continue
            d, d_prime = rows[event.pair]
            favoured, other = (d, d_prime) if event.direction == 0 else (d_prime, d)
            counts = joint_counts(event.hits(favoured), event.hits(other))
            gain = log_wealth_factor(counts, b.bets, self.grid, self.delta)
            terms.append(math.log(b.share) + gain)
            self._record(event, counts, float(gain[0]))
        self.log_wealth += np.maximum(logsumexp(np.vstack(terms), axis=0), math.log(1e-300))
        self.crossed |= self.log_wealth >= math.log(1.0 / self.alpha)
        self.path.append((self.rows, self.e_value))
        if self.progress is not None:
            self.progress.show_evidence(self.e_value, 1.0 / self.alpha)

    def _record(self, event, counts: np.ndarray, gain: float) -> None:
        s = self.streams.setdefault((event.pair, event.direction), Stream())
        s.counts = s.counts + counts
        s.log_gain += gain
        s.event = event

    # ---- what it shows ----------------------------------------------------------------------

    @property
    def violation(self) -> bool:
        return bool(self.crossed[0])

    @property
    def e_value(self) -> float:
        """The wealth of the test of the claim itself (1 at the start)."""
        with np.errstate(over="ignore"):  # past the largest float it is inf, as it should be
            return float(np.exp(self.log_wealth[0]))

    def lower_bound(self) -> float:
        """The certified bound: the step-down over the grid (`certify.betting.step_down_bound`)."""
        return step_down_bound(self.grid, self.crossed)

    def best_stream(self):
        """(pair, direction) and `Stream` of the pair and order that earned most, or None."""
        if not self.streams:
            return None
        key = max(self.streams, key=lambda k: self.streams[k].log_gain)
        return key, self.streams[key]


def bet_and_draw(test: BettingTest, search: Search, sampler: Sampler, j: int, n_j: int,
                 cap: int) -> bool:
    """The betting step of stage j: its search runs drawn in rounds (`search.round_sizes`),
    each under seed keys of its own (`search.round_key`). A round's rows per pair follow the
    bets (`BettingTest.rows_for`), settle the bets placed before they were drawn, step by
    step, and join the search sample; then the models learned on the sample so far place the
    next round's bets (`Search.offers`). True once the test has proved a violation (the draw
    stops there)."""
    for r, size in enumerate(round_sizes(n_j)):
        rows = search.round_rows(test.rows_for(search.active, size), cap)
        if not rows:
            return False
        for step, step_rows in enumerate(round_steps(rows)):
            drawn = search.draw_rows(sampler, step_rows, round_key(j, r, step))
            test.settle({p: (drawn[p, 0], drawn[p, 1]) for p in step_rows})
            if test.violation:
                return True
        test.place(search.offers(sampler, test))
    return False
