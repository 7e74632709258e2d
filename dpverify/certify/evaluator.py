"""Counting chosen events on certifying chunks: the per-chunk evaluator the sampler runs
inside each worker. It needs of an event only `hits`, `threshold_counts` and `model.score`,
and of a probe its candidate and grid."""
from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import numpy as np

from ..sampling.encoding import Encoded

if TYPE_CHECKING:
    from ..attacks import Candidate, Probe

PROBE_STRIDE = 4  # probes' grids are counted on every 4th certifying output


class PairEvaluator:
    """Counts, in one certifying chunk, how often each chosen event of one pair occurs.

    `curves[i]`, where given, is a grid of thresholds event i is counted at too (for its
    trade-off curve). `probes` are counted at their grids only, on every `stride`-th output.
    The default, PROBE_STRIDE, is for stages that also certify: a binary search per output and
    grid is far dearer than drawing the output, and at the stage before last a quarter of the
    certifying sample is already as large as the search sample's selection half. The stages of
    a measurement run that certify nothing use stride 1: there the grids are all there is to
    count.
    """

    def __init__(self, events: list[Candidate], probes: Sequence[Probe] = (),
                 curves: Sequence[np.ndarray | None] | None = None,
                 stride: int = PROBE_STRIDE, segment: int | None = None):
        self.events = list(events)
        self.probes = list(probes)
        self.curves = list(curves) if curves is not None else [None] * len(self.events)
        self.stride = stride
        # runs per segment: a coupled chunk is counted per segment (one row each), so that the
        # parent can sum segments into blocks (counting.certifying_counts); None: one row
        self.segment = segment

    def __call__(self, enc: Encoded) -> np.ndarray:
        """Counts of each event, a 0 per probe, then the counts at each threshold of every
        event's curve grid and of every probe's grid (`counting.PairPlan` reads this layout),
        then how many outputs the probes were counted on; with a `segment`, one such row per
        segment of the chunk. A model shared by several events (directions, thresholds) is
        scored once per chunk."""
        probes = [p.candidate for p in self.probes]
        thinned = bool(probes) and self.stride > 1
        sub = enc.take(slice(None, None, self.stride)) if thinned else enc
        rows, segments = self._segments(len(enc))
        sub_rows = rows[::self.stride] if rows is not None and thinned else rows
        event_scores = self._scores(self.events, self.curves, enc)
        hits = [_tally(c.hits(enc, s), rows, segments)
                for c, s in zip(self.events, event_scores)]
        counts = [np.stack(hits, axis=1) if hits else np.zeros((segments, 0), np.int64),
                  np.zeros((segments, len(probes)), np.int64)]
        counts += [np.atleast_2d(c.threshold_counts(g, enc, s, rows, segments))
                   for c, g, s in zip(self.events, self.curves, event_scores) if g is not None]
        scores = self._scores(probes, [p.grid for p in self.probes], sub)
        counts += [np.atleast_2d(c.threshold_counts(p.grid, sub, s, sub_rows, segments))
                   for c, p, s in zip(probes, self.probes, scores)]
        counted_on = np.ones(len(sub), bool) if probes else np.zeros(len(sub), bool)
        counts.append(_tally(counted_on, sub_rows, segments)[:, None])
        table = np.concatenate(counts, axis=1).astype(np.int64)
        return table if self.segment is not None else table[0]

    def _segments(self, size: int):
        """(each output's segment, or None for one segment; how many segments). A chunk that
        is one segment (a block of a whole chunk) is counted without segment labels."""
        if self.segment is None or size <= self.segment:
            return None, 1
        return np.arange(size) // self.segment, -(-size // self.segment)

    @staticmethod
    def _scores(candidates: list[Candidate], grids: list, enc: Encoded) -> list:
        """Each candidate's model scores on enc, computed once per shared model; None where a
        model serves one candidate without a grid (hits() may then take a faster path)."""
        shared: dict = {}
        for c in candidates:
            shared[id(c.model)] = shared.get(id(c.model), 0) + 1
        cache: dict = {}
        out = []
        for c, grid in zip(candidates, grids):
            if shared[id(c.model)] == 1 and grid is None:
                out.append(None)
                continue
            if id(c.model) not in cache:
                cache[id(c.model)] = c.model.score(enc)
            out.append(cache[id(c.model)])
        return out


def _tally(hit: np.ndarray, segment_of: np.ndarray | None, segments: int) -> np.ndarray:
    """How many outputs are in the event, per segment (`segment_of`: each output's; None: one
    segment)."""
    if segment_of is None:
        return np.array([np.count_nonzero(hit)], np.int64)
    return np.bincount(segment_of[np.asarray(hit, bool)], minlength=segments).astype(np.int64)
