"""Counting chosen events on certifying chunks: the per-chunk evaluator the sampler runs
inside each worker. It needs of a candidate only `hits`, `grid`, `grid_counts` and
`model.score`."""
from __future__ import annotations

import time
from typing import TYPE_CHECKING

import numpy as np

from ..sampling.encoding import Encoded

if TYPE_CHECKING:
    from ..attacks import Candidate

PROBE_STRIDE = 4  # tracked candidates' grids are counted on every 4th certifying output


class PairEvaluator:
    """Counts, in one certifying chunk, how often each chosen event of one pair occurs.

    Candidates from index `probe_start` on are tracked ones: only their threshold grids are
    counted, on every `stride`-th output. The default, PROBE_STRIDE, is for stages that also
    certify: a binary search per output and grid is far dearer than drawing the output, and at
    the stage before last a quarter of the certifying sample is already as large as the search
    sample's selection half. The stages of a measurement run that certify nothing use stride 1:
    there the grids are all there is to count.
    """

    def __init__(self, candidates: list[Candidate], probe_start: int | None = None,
                 stride: int = PROBE_STRIDE):
        self.candidates = candidates
        self.probe_start = len(candidates) if probe_start is None else probe_start
        self.stride = stride
        # seconds each chunk spent counting the tracked grids (after scoring), for time budgets;
        # list.append is atomic across threads (a process backend's copies are not seen)
        self.grid_seconds: list[float] = []

    def __call__(self, enc: Encoded) -> np.ndarray:
        """Counts of each event (0 for tracked candidates), then the counts at each threshold of
        every candidate with a grid, then how many outputs the tracked grids were counted on.
        A model shared by several events (directions, thresholds) is scored once per chunk."""
        events = self.candidates[:self.probe_start]
        probes = self.candidates[self.probe_start:]
        sub = (enc.take(slice(None, None, self.stride)) if probes and self.stride > 1
               else enc)
        event_scores = self._scores(events, enc)
        counts = [np.array([np.count_nonzero(c.hits(enc, s)) for c, s in zip(events, event_scores)]
                           + [0] * len(probes))]
        counts += [c.grid_counts(enc, s) for c, s in zip(events, event_scores)
                   if c.grid is not None]
        scores = self._scores(probes, sub)
        started = time.perf_counter()
        counts += [c.grid_counts(sub, s) for c, s in zip(probes, scores)]
        if probes:
            self.grid_seconds.append(time.perf_counter() - started)
        counts.append(np.array([len(sub) if probes else 0]))
        return np.concatenate(counts).astype(np.int64)

    @staticmethod
    def _scores(candidates: list[Candidate], enc: Encoded) -> list:
        """Each candidate's model scores on enc, computed once per shared model; None where a
        model serves one candidate without a grid (hits() may then take a faster path)."""
        shared: dict = {}
        for c in candidates:
            shared[id(c.model)] = shared.get(id(c.model), 0) + 1
        cache: dict = {}
        out = []
        for c in candidates:
            if shared[id(c.model)] == 1 and c.grid is None:
                out.append(None)
                continue
            if id(c.model) not in cache:
                cache[id(c.model)] = c.model.score(enc)
            out.append(cache[id(c.model)])
        return out
