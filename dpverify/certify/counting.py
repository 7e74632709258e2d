"""The certifying sample's counts (docs/method.md, "How a violation is certified").

A stage counts its chosen events on fresh runs (purpose CERTIFY), Poisson(n) runs per input so
that the conditional ratio test is exact, or, for a pair certified on common random numbers, in
blocks of runs that both inputs draw from common seeds. The same pass counts the probes'
threshold grids, which choose the next stage's thresholds, and the events' curve grids.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .certificates import Certificate
from .evaluator import PROBE_STRIDE, PairEvaluator
from ..sampling import CERTIFY, EachUse, poisson_sample_size, shared_draws, split_into_chunks
from ..stats import coupled_segment


class PairPlan(NamedTuple):
    """What a certifying pass counts on one pair: its `events`, each also at the thresholds of
    its curve grid where `curves` has one (None: the event alone), and its `probes` at their
    grids. A count vector (`PairEvaluator`) holds the events, a 0 per probe, the curve grids,
    the probes' grids, and how many outputs the probes were counted on."""

    events: list
    curves: list
    probes: list

    def _grid_start(self, before: int) -> int:
        """Where, in a count vector, the grid counted after `before` others begins."""
        grids = [g for g in self.curves if g is not None] + [p.grid for p in self.probes]
        return len(self.events) + len(self.probes) + sum(len(g) for g in grids[:before])

    def curve_span(self, i: int) -> slice | None:
        """Event i's curve-grid counts in a count vector (None: it has no curve grid)."""
        if self.curves[i] is None:
            return None
        start = self._grid_start(sum(g is not None for g in self.curves[:i]))
        return slice(start, start + len(self.curves[i]))

    def probe_span(self, k: int) -> slice:
        """Probe k's grid counts in a count vector."""
        start = self._grid_start(sum(g is not None for g in self.curves) + k)
        return slice(start, start + len(self.probes[k].grid))


class StageCounts(NamedTuple):
    """What a certifying pass counted.

    by_pair: pair → `PairPlan` counted on it; counts: (pair, side) → count vector (layout in
    `PairPlan`); runs: (pair, side) → runs drawn; blocks: (pair, side) → per-block count
    vectors (coupled pairs only)."""

    by_pair: dict
    counts: dict
    runs: dict
    blocks: dict


def _grouped_by_pair(events, curves, probes) -> dict:
    by_pair: dict = {}
    for c, g in zip(events, curves):
        plan = by_pair.setdefault(c.pair, PairPlan([], [], []))
        plan.events.append(c)
        plan.curves.append(g)
    for p in probes:
        by_pair.setdefault(p.pair, PairPlan([], [], [])).probes.append(p)
    return by_pair


def certifying_counts(sampler, seed, events, probes, j, n_j, stride=PROBE_STRIDE,
                      coupled=frozenset(), block=0, curves=None) -> StageCounts:
    """Count `events` on fresh samples of stage key j, Poisson(n_j) runs per input
    (`poisson_sample_size`: what the ratio test needs; the two-bound certificate holds given any
    sizes). A pair in `coupled` instead draws ceil(n_j/block) blocks of `block` runs per input,
    from chunks that both inputs draw from one seed each, counted per segment and summed into
    blocks (`_blocks_of`; a block may cross a chunk boundary). Chunks are cut the same way at
    any n_j, so a smaller stage draws a prefix of a larger one's runs. An input of several pairs
    is drawn once and counted for each (`sampling.shared_draws`). `probes`' grids are counted on
    every `stride`-th output of the same pass; `curves[i]`, where given, is a grid event i is
    counted at too."""
    curves = [None] * len(events) if curves is None else curves
    by_pair = _grouped_by_pair(events, curves, probes)
    segment = coupled_segment(block, sampler.chunk_size) if block else None
    pair_evaluators = {p: PairEvaluator(plan.events, plan.probes, plan.curves, stride=stride,
                                        segment=segment if p in coupled else None)
                       for p, plan in by_pair.items()}
    draws = shared_draws(sampler.inputs, by_pair, coupled)
    evaluators = {(d.pair, d.side): EachUse([pair_evaluators[p] for p, _ in d.uses])
                  for d in draws}
    drawn = {d: (-(-n_j // block) * block if d.coupled
                 else poisson_sample_size(seed, n_j, d.pair, d.side, j)) for d in draws}
    tasks = [(d, t) for d in draws
             for t in split_into_chunks(drawn[d], sampler.chunk_size, pair=d.pair, side=d.side,
                                        stage=j, purpose=CERTIFY, coupled=d.coupled,
                                        seed_pair=d.seed_pair)]
    runs = {use: drawn[d] for d in draws for use in d.uses}
    counts = {use: 0 for use in runs}
    segments: dict = {}
    for (d, _), per_use in zip(tasks, sampler.run([t for _, t in tasks], evaluators)):
        for use, c in zip(d.uses, per_use):
            if d.coupled:
                segments.setdefault(use, []).append(c)
                c = c.sum(axis=0)
            counts[use] = counts[use] + c
    blocks = {use: _blocks_of(np.concatenate(rows), block // segment)
              for use, rows in segments.items()}
    return StageCounts(by_pair, counts, runs, blocks)


def _blocks_of(per_segment: np.ndarray, segments_per_block: int) -> np.ndarray:
    """Per-block count vectors: consecutive rows of `per_segment` (the segments in drawing
    order) summed `segments_per_block` at a time."""
    width = per_segment.shape[1]
    return per_segment.reshape(-1, segments_per_block, width).sum(axis=1)


def curve_counts(plan: PairPlan, i: int, counts_p, counts_q, n_p, n_q, fraction):
    """Event i's curve-grid counts, with what `curves.privacy_curves_of` needs to plot them;
    None if it has no curve grid."""
    span = plan.curve_span(i)
    if span is None:
        return None
    cand = plan.events[i]
    return {"thresholds": plan.curves[i], "k_p": counts_p[span], "k_q": counts_q[span],
            "n_p": n_p, "n_q": n_q, "k_event": (counts_p[i], counts_q[i]), "fraction": fraction,
            "ratio_test": cand.certificate is Certificate.RATIO_TEST,
            "privacy_loss": cand.model.privacy_loss(cand.sign)}
