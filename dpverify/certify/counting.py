"""The certifying sample's counts (docs/method.md, "How a violation is certified").

A stage counts its chosen events on fresh runs (purpose CERTIFY), Poisson(n) runs per input so
that the conditional ratio test is exact, or, for a pair certified on common random numbers, in
blocks of runs that both inputs draw from common seeds. The same pass counts the tracked
candidates' threshold grids, which choose the next stage's thresholds.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .certificates import Certificate
from .evaluator import PROBE_STRIDE, PairEvaluator
from ..sampling import CERTIFY, EachUse, poisson_sample_size, shared_draws, split_into_chunks
from ..stats import coupled_segment


class StageCounts(NamedTuple):
    """What a certifying pass counted.

    by_pair: pair → (events, probes) counted on it; counts: (pair, side) → count vector (the
    events, then the probes' grids, then the probe sample size; see `PairEvaluator`); runs:
    (pair, side) → runs drawn; blocks: (pair, side) → per-block count vectors (coupled pairs
    only)."""

    by_pair: dict
    counts: dict
    runs: dict
    blocks: dict


def _grouped_by_pair(events, probes) -> dict:
    by_pair: dict = {}
    for c in events:
        by_pair.setdefault(c.pair, ([], []))[0].append(c)
    for c in probes:
        by_pair.setdefault(c.pair, ([], []))[1].append(c)
    return by_pair


def certifying_counts(sampler, seed, events, probes, j, n_j, stride=PROBE_STRIDE,
                      coupled=frozenset(), block=0) -> StageCounts:
    """Count `events` on fresh samples of stage key j, Poisson(n_j) runs per input
    (`poisson_sample_size`: what the ratio test needs; the two-bound certificate holds given any
    sizes). A pair in `coupled` instead draws ceil(n_j/block) blocks of `block` runs per input,
    from chunks that both inputs draw from one seed each, counted per segment and summed into
    blocks (`_blocks_of`; a block may cross a chunk boundary). Chunks are cut the same way at
    any n_j, so a smaller stage draws a prefix of a larger one's runs. An input of several pairs
    is drawn once and counted for each (`sampling.shared_draws`). `probes`' grids are counted on
    every `stride`-th output of the same pass."""
    by_pair = _grouped_by_pair(events, probes)
    segment = coupled_segment(block, sampler.chunk_size) if block else None
    pair_evaluators = {p: PairEvaluator(ev + pr, probe_start=len(ev), stride=stride,
                                        segment=segment if p in coupled else None)
                       for p, (ev, pr) in by_pair.items()}
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


def grid_slice(cands, i, counts_p, counts_q):
    """Candidate i's grid counts (k_p, k_q) out of its pair's count vectors (events come first)."""
    start = len(cands) + sum(len(c.grid) for c in cands[:i] if c.grid is not None)
    stop = start + len(cands[i].grid)
    return counts_p[start:stop], counts_q[start:stop]


def grid_counts(cands, i, counts_p, counts_q, n_p, n_q, fraction):
    """The witness's grid counts, with what `curves.privacy_curves_of` needs to plot them."""
    cand = cands[i]
    if cand.grid is None:
        return None
    k_p, k_q = grid_slice(cands, i, counts_p, counts_q)
    return {"thresholds": cand.grid, "k_p": k_p, "k_q": k_q,
            "n_p": n_p, "n_q": n_q, "k_event": (counts_p[i], counts_q[i]), "fraction": fraction,
            "ratio_test": cand.certificate is Certificate.RATIO_TEST,
            "privacy_loss": cand.model.privacy_loss(cand.sign)}
