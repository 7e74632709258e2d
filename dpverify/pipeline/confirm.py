"""A violation confirmed on fresh runs (`audit(confirm=True)`; certify.confirm, docs/method.md
"Marginal violations and confirmation").

The witness's event is fixed before any confirming run is drawn. Look l draws fresh runs of the
witness's pair under stage key CONFIRM_STAGE_KEY + l − 1 (Poisson sizes of equal means, so the
ratio test stays exact on the summed counts), adds their hits to the looks before, and
certifies the one event at α/L. The first look above the claim confirms the violation; the
looks stop there.
"""
from __future__ import annotations

from dataclasses import replace

from ..certify import Certificate, certifying_counts, witness_of
from ..certify.confirm import is_marginal, look_level, looks
from ..result import Confirmation, Witness
from ..sampling import CONFIRM_STAGE_KEY


class Confirming:
    """The confirmation of one witness; `result` is what it has shown so far (kept when Ctrl-C
    or a time budget stops it between looks)."""

    def __init__(self, request, pair_list, event, first: Witness):
        self.request, self.pair_list = request, pair_list
        # counted on independent runs: the ratio test where δ = 0, else two bounds
        certificate = (Certificate.RATIO_TEST if request.delta == 0
                       else Certificate.TWO_BOUNDS)
        self.event = replace(event, grid=None, certificate=certificate)
        alpha = 1.0 - request.confidence
        self.sizes = looks(first.samples_D, request.samples)
        self.level = look_level(alpha, len(self.sizes))
        self.result = Confirmation(
            confirmed=False, first=first, witness=None, looks=0,
            planned_looks=len(self.sizes), runs=0,
            first_marginal=is_marginal(first, request.epsilon, request.delta, alpha))

    def run(self, sampler) -> Confirmation:
        """Take the looks until one confirms the violation or all are spent."""
        r, e = self.request, self.event
        favoured, other = (e.pair, e.direction), (e.pair, 1 - e.direction)
        k_p = k_q = n_p = n_q = 0
        before = 0
        for look, size in enumerate(self.sizes, start=1):
            counted = certifying_counts(sampler, r.seed, [e], [], CONFIRM_STAGE_KEY + look - 1,
                                        size - before, stride=1)
            before = size
            k_p += int(counted.counts[favoured][0])
            k_q += int(counted.counts[other][0])
            n_p += int(counted.runs[favoured])
            n_q += int(counted.runs[other])
            witness = witness_of(self.pair_list, e, k_p, n_p, k_q, n_q, r.delta, self.level,
                                 look)
            confirmed = witness.epsilon_lower_bound > r.epsilon
            self.result = replace(self.result, confirmed=confirmed, witness=witness, looks=look,
                                  runs=n_p + n_q)
            if confirmed:
                break
        return self.result
