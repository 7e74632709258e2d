"""A violation confirmed on fresh runs (`audit(confirm=True)`; docs/method.md "Marginal
violations and confirmation", docs/theory.md §2.14).

The witness's event is fixed before any confirming run is drawn. Fresh rounds of its pair are
drawn (on shared seeds where the mechanism allows, as the search draws them) under stage keys
of their own, CONFIRM_STAGE_KEY + r, and settle a test by betting on that one event
(`pipeline.betting.BettingTest` at the audit's whole α): each round's bet is planned from the
joint outcomes of the rounds before it (the first from the audit's own counts), so the wealth
is a supermartingale under the claim and the confirmation may stop at the first round whose
wealth reaches 1/α. Rounds double from FIRST_ROUND rows up to ROUND_CAP, until the audit's
`samples` runs per input are spent.

A violation proved by betting and then measured is already tested again on fresh runs: when the
measurement's own bound is past the claim, it confirms the violation and no round is drawn
(`Confirming.by_measurement`).
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..attacks.bets import Offer
from ..certify import betting_witness
from ..certify.betting import outcome_rates
from ..certify.confirm import is_marginal
from ..result import BETTING, CONFIRMING, Confirmation, Witness
from ..sampling import CONFIRM_STAGE_KEY, SEARCH, Sampler, split_into_chunks
from ..sampling.encoding import Encoded
from .betting import BettingTest

FIRST_ROUND = 1024     # rows per input of the first confirming round
ROUND_CAP = 1 << 18    # rows per input of any one round (memory: a round's outputs are held)


def prior_rates(first: Witness, stream_counts=None) -> tuple[np.ndarray, int]:
    """(joint-outcome rates, rounds) the first round's bet is planned from: the betting test's
    joint counts of the witness's pair and order when it found the violation, else the
    witness's counts as if the two inputs' runs were independent."""
    if stream_counts is not None and first.certificate == BETTING:
        counts = np.asarray(stream_counts, float)
        return counts / counts.sum(), int(counts.sum())
    m = min(first.samples_D, first.samples_D_prime)
    rates = outcome_rates(first.rate_D * m, first.rate_D_prime * m, None, m)
    return np.clip(rates, 0.0, 1.0), m


class Confirming:
    """The confirmation of one witness; `result` is what it has shown so far (kept when Ctrl-C
    or a time budget stops it between rounds)."""

    def __init__(self, request, pair_list, event, first: Witness, paired: bool,
                 stream_counts=None):
        self.request, self.pair_list, self.event, self.paired = request, pair_list, event, paired
        alpha = 1.0 - request.confidence
        self.test = BettingTest(request.epsilon, request.delta, alpha)
        self.prior = prior_rates(first, stream_counts)
        self.result = Confirmation(
            confirmed=False, first=first, witness=None, rounds=0, runs=0,
            first_marginal=is_marginal(first, request.epsilon, request.delta, alpha))

    def by_measurement(self) -> Confirmation:
        """The audit's witness, the measurement of a violation the betting test proved, is
        confirmed as it stands: its events were chosen before any of the last stage's runs
        were drawn and certified on them at that stage's α/2, past the claim. No round of bets
        is drawn."""
        self.result = replace(self.result, confirmed=True, witness=self.result.first,
                              measured=True)
        return self.result

    def run(self, sampler: Sampler) -> Confirmation:
        """Draw and settle rounds until the wealth reaches 1/α or `samples` rows are spent."""
        most, drawn, size = self.request.samples, 0, FIRST_ROUND
        while drawn < most:
            rows = min(size, most - drawn, ROUND_CAP)
            self.test.place([Offer(self.event, *self._rates(), growth=1.0)])
            self.test.settle({self.event.pair: self._draw(sampler, rows,
                                                          self.result.rounds)})
            drawn += rows
            size *= 2
            witness, _ = betting_witness(self.pair_list, self.test, self.result.rounds + 1,
                                         CONFIRMING)
            self.result = Confirmation(
                confirmed=self.test.violation, first=self.result.first, witness=witness,
                rounds=self.result.rounds + 1, runs=2 * drawn,
                first_marginal=self.result.first_marginal)
            if self.test.violation:
                break
        return self.result

    def _rates(self) -> tuple[np.ndarray, int]:
        """The joint-outcome rates the next bet is planned from: the confirming rounds' own
        once there are any, else the prior."""
        stream = self.test.streams.get((self.event.pair, self.event.direction))
        if stream is None:
            return self.prior
        m = int(stream.counts.sum())
        return stream.counts / m, m

    def _draw(self, sampler, rows: int, r: int) -> tuple:
        """`rows` fresh runs of each input of the event's pair (round r): (D's, D′'s)."""
        p = self.event.pair
        tasks = [t for side in (0, 1)
                 for t in split_into_chunks(rows, sampler.chunk_size, pair=p, side=side,
                                            stage=CONFIRM_STAGE_KEY + r, purpose=SEARCH,
                                            coupled=self.paired)]
        parts: dict = {0: [], 1: []}
        for task, enc in zip(tasks, sampler.run(tasks)):
            parts[task.side].append(enc)
        return Encoded.concat(parts[0]), Encoded.concat(parts[1])
