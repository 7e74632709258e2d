"""The search split: samples that only choose events, never certify them (docs/method.md,
"Search"). Each active pair's search sample grows stage by stage up to a memory-bounded cap;
models are learned on one half (`attacks.learn_pair`) and candidate events ranked on the other
(`attacks.pair_events`)."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from joblib import Parallel, delayed

from ..attacks import Candidate, learn_pair, pair_events
from ..attacks.bets import pair_offers
from ..sampling.encoding import Encoded
from ..sampling import SEARCH, Sampler, return_freed_memory, split_into_chunks
from ..sampling.chunks import ROUND_KEY_BASE
from .selection import by_promise
from .settings import DEFAULT_SETTINGS, Settings


@dataclass
class Chosen:
    """What one stage's search found."""

    events: list        # the K events this stage certifies
    candidates: list    # every candidate, best first (for pruning pairs)
    data: dict          # pair → (search outputs of D, of D'), for grids
    one_sided: list = field(default_factory=list)  # events seen under one input only (hedges)


def precise_enough(best: Candidate, precision: float) -> bool:
    """Whether search may stop: the best event is informative (expected bound > 0) and its
    log-ratio is known to ±`precision` and to a tenth of its size (one standard error,
    sqrt(1/k_p + 1/k_q), on the selection half of the search sample); a weak effect keeps
    searching while other pairs and events may still beat it."""
    k_p, m_p, k_q, m_q = best.search_counts
    if not (best.expected_epsilon > 0 and k_p > 0 and k_q > 0):
        return False
    log_ratio = math.log((k_p / m_p) / (k_q / m_q))
    return math.sqrt(1 / k_p + 1 / k_q) <= min(precision, 0.1 * log_ratio)


def most_promising_pairs(candidates: list[Candidate], how_many: int) -> list[int]:
    """The pairs whose events promise the highest bound at the final sample size, best first."""
    pairs: list[int] = []
    for c in sorted(candidates, key=lambda c: -c.potential):
        if c.pair not in pairs:
            pairs.append(c.pair)
        if len(pairs) == how_many:
            break
    return pairs


def round_sizes(n_j: int) -> list[int]:
    """The rounds of a stage's n_j search rows per pair: an eighth, an eighth, a quarter and a
    half (a round doubles the rows before it, so each bet is settled on as many rows as its
    event was learned on), in whole pairs of rows."""
    parts = [n_j // 8, n_j // 8, n_j // 4]
    parts = [max(2, n // 2 * 2) for n in parts]
    return parts + [max(2, n_j - sum(parts))]


STEPS_PER_ROUND = 4        # a round's rows are settled in up to this many steps ...
LEAST_STEP_ROWS = 1 << 12  # ... of at least this many rows per pair


def round_steps(rows: dict) -> list[dict]:
    """A round's rows per pair cut into steps: the bets stay those of the round, but the wealth
    is checked after each step, so a violation stops the draw within the round (up to
    STEPS_PER_ROUND steps of at least LEAST_STEP_ROWS rows of the round's largest pair, in
    whole pairs of rows)."""
    steps = max(1, min(STEPS_PER_ROUND, max(rows.values()) // LEAST_STEP_ROWS))
    cut = {p: [n * (s + 1) // steps // 2 * 2 for s in range(steps)] for p, n in rows.items()}
    return [{p: c[s] - (c[s - 1] if s else 0) for p, c in cut.items()
             if c[s] - (c[s - 1] if s else 0) > 0} for s in range(steps)]


RELEARN_GROWTH = 1.5    # with no bet placed, a pair learns again once its sample has grown
RELEARN_FROM = 1 << 15  # 1.5× (samples of at least this many runs per input)


def round_key(j: int, r: int, step: int = 0) -> int:
    """The seed-stream stage key of stage j's round r, step `step`: distinct from every other
    round's and step's and, below the tuning and last stages' keys, from every certifying
    stage's."""
    return j * ROUND_KEY_BASE + r * STEPS_PER_ROUND + step


class Search:
    """The search samples of every pair and what was learned on them.

    `samples`: (pair, side) → encoded search outputs; `kept`: search runs per input so far, per
    pair; `active`: the pairs still searched; `learned`: pair → (sample sizes, models) of pairs
    whose sample reached its cap (reused, only thresholds re-chosen); `frozen`: search has
    converged, later stages certify the tracked events (`conclude`); `data`: the last stage's
    search outputs, pair → (D, D'). Only its own methods change them."""

    def __init__(self, n_pairs: int, floating_point: bool, paired: bool,
                 settings: Settings = DEFAULT_SETTINGS):
        self.samples: dict = {(p, s): [] for p in range(n_pairs) for s in (0, 1)}
        self.kept = np.zeros(n_pairs, dtype=np.int64)
        self.active = list(range(n_pairs))
        self.learned: dict = {}
        self.frozen = False
        self.data: dict = {}
        self.floating_point = floating_point
        self.paired = paired
        self.settings = settings
        # pair → (sample sizes, models or None, offers) when the betting rounds last learned it
        self.round_models: dict = {}

    def cap(self) -> int:
        """Runs per input a pair's search sample may hold: `search_cap`, less if the active
        pairs' samples would outgrow `search_memory_bytes`."""
        row_bytes = 16 + 4 * max((e.X.shape[1] for v in self.samples.values() for e in v),
                                 default=1)
        return min(self.settings.search_cap,
                   self.settings.search_memory_bytes // (row_bytes * 2 * len(self.active)))

    def draw(self, sampler, j: int, n_j: int, cap: int) -> None:
        """Stage j's search runs at once (an audit without a betting test): n_j more runs of
        every active pair, up to `cap`."""
        self._append(self._drawn(sampler, {p: min(n_j, max(cap - self.kept[p], 0))
                                           for p in self.active}, j))

    def round_rows(self, wanted: dict, cap: int) -> dict:
        """The rows a betting round draws per pair: what the bets ask for (`wanted`), up to
        `cap` runs per input in all; pairs with none left out."""
        rows = {p: min(n, max(cap - self.kept[p], 0)) for p, n in wanted.items()}
        return {p: n for p, n in rows.items() if n > 0}

    def draw_rows(self, sampler, rows: dict, stage_key: int) -> dict:
        """`rows[p]` new runs of each input of pair p under `stage_key`, added to the samples;
        returns them, (p, side) → encoded outputs, for the bets they settle."""
        drawn = self._drawn(sampler, rows, stage_key)
        self._append(drawn)
        return drawn

    def _drawn(self, sampler, rows: dict, stage_key: int) -> dict:
        """`rows[p]` new search runs of each input of pair p: (p, side) → encoded outputs."""
        tasks = [t for p, n in rows.items() for s in (0, 1)
                 for t in split_into_chunks(int(n), sampler.chunk_size, pair=p, side=s,
                                            stage=stage_key, purpose=SEARCH, coupled=self.paired)]
        drawn: dict = {}
        for task, enc in zip(tasks, sampler.run(tasks)):
            # float32 halves the memory; an event is whatever the chosen rule selects, so
            # rounding while searching cannot affect soundness (float-bit attacks need the bits)
            if not self.floating_point:
                enc.X = enc.X.astype(np.float32)
            drawn.setdefault((task.pair, task.side), []).append(enc)
        return {key: Encoded.concat(parts) for key, parts in drawn.items()}

    def _append(self, drawn: dict) -> None:
        """Add drawn outputs to the samples; they are joined only when read (`_sample`)."""
        for (p, s), enc in drawn.items():
            self.samples[p, s].append(enc)
            self.kept[p] += len(enc) if s == 0 else 0

    def _sample(self, p: int) -> tuple:
        """Pair p's search outputs of D and of D′, each side's parts joined once."""
        for s in (0, 1):
            if len(self.samples[p, s]) > 1:
                self.samples[p, s] = [Encoded.concat(self.samples[p, s])]
        return self.samples[p, 0][0], self.samples[p, 1][0]

    def offers(self, sampler, test) -> list:
        """The bets each searched pair offers on its sample so far (models learned on it are
        kept for the stage's ranking, `_models`). While no bet is placed anywhere, a pair
        whose sample holds at least RELEARN_FROM runs per input and has grown by less than
        RELEARN_GROWTH since its models were learned offers what it offered then: learning
        costs in proportion to the sample, a pair's sample grows by a third to a half a round,
        and a mechanism that meets its claim offers nothing round after round. Small samples,
        and every pair once any bet is placed, learn every round, so that evidence forming
        anywhere is noticed at once."""
        idle = not test.placed

        def offers(p):
            data = self._sample(p)
            sizes = (len(data[0]), len(data[1]))
            last = self.round_models.get(p)
            if (idle and last is not None and sizes[0] >= RELEARN_FROM
                    and sizes[0] < RELEARN_GROWTH * last[0][0]):
                return last[2]
            models = learn_pair(*data, self.floating_point, self.paired)
            found = pair_offers(p, models, test.epsilon, test.delta)
            # learned models hold their sorted scores (as large as the sample): kept for the
            # stage's ranking only once search is down to `active_pairs` pairs, as `_models`
            # keeps them; before that the ranking learns them again
            keep = models if len(self.active) <= self.settings.active_pairs else None
            self.round_models[p] = (sizes, keep, found)
            return found

        pairs = list(self.active)
        found = ([offers(p) for p in pairs] if len(pairs) == 1 else
                 Parallel(n_jobs=sampler.n_jobs, backend="threading")(
                     delayed(offers)(p) for p in pairs))
        return [o for per_pair in found for o in per_pair]

    def _models(self, p: int, data: dict, cap: int):
        """Pair p's learned models: reused if its sample has not grown since they were learned.
        They are kept for later stages only once search is down to `active_pairs` pairs
        (before that, pruning drops most of them unused)."""
        sizes = (len(data[p][0]), len(data[p][1]))
        if p in self.learned and self.learned[p][0] == sizes:
            return self.learned[p][1]
        kept = self.round_models.get(p)
        if kept is not None and kept[0] == sizes and kept[1] is not None:
            return kept[1]
        models = learn_pair(*data[p], self.floating_point, self.paired)
        if self.kept[p] >= cap and len(self.active) <= self.settings.active_pairs:
            self.learned[p] = (sizes, models)
        return models

    def stage(self, sampler: Sampler, j: int, n_j: int, n_final: int, delta: float,
              level: float, K: int, planned: int | None = None) -> Chosen:
        """Stage j of a search without a betting test: draw its runs (`draw`), then `choose`
        (its arguments)."""
        cap = self.begin_stage()
        self.draw(sampler, j, n_j, cap)
        return self.choose(sampler, n_j, n_final, delta, level, K, planned, cap)

    def begin_stage(self) -> int:
        """Free the last stage's search outputs (of pruned pairs too) and return the cap on
        each pair's sample, as it stands before the stage draws."""
        self.data = {}
        return self.cap()

    def choose(self, sampler: Sampler, n_j: int, n_final: int, delta: float, level: float,
               K: int, planned: int | None, cap: int) -> Chosen:
        """Learn attacks on the active pairs' samples and rank candidate events.

        Args:
            n_j: the stage's certifying runs per input.
            n_final: the last stage's, which a candidate's `potential` is planned at.
            level: the error each certified bound may have (its share of α).
            K: how many events the stage certifies.
            planned: the runs per input thresholds are planned for (None: n_j).
            cap: the most runs per input a pair's search sample may hold (`cap()`).
        """
        data = {p: self._sample(p) for p in self.active}
        return_freed_memory()

        def rank(p):
            return pair_events(p, self._models(p, data, cap), planned or n_j, delta,
                               level, n_final, sampler.chunk_size)

        # pairs are learned side by side on threads (numpy's sorts and reductions release the
        # GIL); results come back in pair order, so the candidates do not depend on n_jobs
        per_pair = ([rank(p) for p in self.active] if len(self.active) == 1 else
                    Parallel(n_jobs=sampler.n_jobs, backend="threading")(
                        delayed(rank)(p) for p in self.active))
        return_freed_memory()
        found = [c for per in per_pair for c in per]
        candidates = by_promise([c for c in found if not c.one_sided])
        one_sided = sorted((c for c in found if c.one_sided),
                           key=lambda c: -c.search_counts[0] / c.search_counts[1])
        self.data = data
        return Chosen(candidates[:K], candidates, data, one_sided)

    def conclude(self, j: int, pool: list[Candidate], best: Candidate | None) -> None:
        """After stage j's search: from stage `prune_after_stage` on, keep searching only the
        most promising pairs of `pool` (`prune`), and stop searching (`frozen`) once the `best`
        event's log-ratio is known precisely enough (`precise_enough`): later stages then tune
        and certify the tracked events."""
        if j < self.settings.prune_after_stage:
            return
        self.prune(pool)
        self.frozen = best is not None and precise_enough(best, self.settings.search_precision)

    def prune(self, pool: list[Candidate]) -> None:
        """Keep searching only the `active_pairs` pairs, of those still searched, whose events
        promise most; free the others' samples and models. A pair pruned before stays pruned
        even where a tracked candidate of it ranks high: its sample is gone, while `kept`
        still counts it."""
        still_searched = [c for c in pool if c.pair in self.active]
        self.active = (most_promising_pairs(still_searched, self.settings.active_pairs)
                       or self.active)
        for p in set(range(len(self.kept))) - set(self.active):
            self.samples[p, 0], self.samples[p, 1] = [], []
            self.learned.pop(p, None)
            self.round_models.pop(p, None)
