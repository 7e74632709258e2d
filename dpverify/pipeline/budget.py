"""Time-budgeted measurement runs: when a stage becomes the last one, and how large it is.

A measurement run (`audit(stop_early=False)`) certifies at its last stage only; the stages
before it spend no α and only choose and tune events. With `audit(seconds=T)` the run does not
fix its last stage in advance: before each stage it projects, from the stages already run
(`SearchTimes`, `CountingCost`), whether this stage and a last stage 4× larger both fit in the
time left. If they do, the stage runs as planned. If not, a tuning stage (search converged)
shrinks to what the time left buys for it and a last stage 4× its size (`shrunk_stage_size`);
a stage too small for that, or one that still searches, becomes the last. Once its search has
chosen its events, its size is what the remaining time buys for counting those
events on their pairs (`TimeBudget.fill_last`), at the rate a short timing pilot measures on
runs of its own: at least its planned size, at most the run's sample cap. The plan's own last
stage, when every stage before it ran, is sized the same way (at most its plan, and no less
than the stage before it).

Soundness does not depend on any of this: the sizes are a function of wall-clock times of
earlier stages and of the pilot, whose runs are drawn under their own seeds and discarded, so
they are independent of the certifying sample's counts, and the last stage certifies with all of α
whatever its size (`stats.final_stage_alphas`). Reproducibility does: the same seed may give
other sizes, hence other bounds, on a slower or busier machine.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field


@dataclass(frozen=True)
class CountingCost:
    """How long a stage's counting pass took: `n` runs per input for `pairs` pairs, `candidates`
    events or tracked models scored on every output, `wall` seconds in all, of which its chunks
    spent `draw` seconds drawing and encoding, `evaluate` seconds scoring and counting, and,
    within that, `grid` seconds counting tracked grids (summed over parallel chunks, so only
    their proportions are used). Drawing is projected per pair: inputs that several pairs
    share are drawn once (`sampling.shared`), and a projection assumes other pairs share
    inputs as these did."""

    n: int
    pairs: int
    candidates: float  # a grid counted on every k-th output counts 1/k
    wall: float
    draw: float
    evaluate: float
    grid: float = 0.0

    @property
    def per_run(self) -> float:
        """Wall seconds per run per input of this pass: what another pass like it costs."""
        return self.wall / self.n

    def seconds_per_run(self, pairs: int, candidates: float, grids: bool = True) -> float:
        """Projected wall seconds per run per input of a pass over `pairs` pairs scoring
        `candidates` events, with or without this pass's grids: drawing scales with the
        pairs, scoring with the candidates (a last stage counts events, no grids)."""
        busy = self.draw + self.evaluate
        if busy <= 0:
            return self.per_run
        draw_share = self.draw / busy
        grid_share = min(self.grid, self.evaluate) / busy
        score_share = 1 - draw_share - grid_share
        return self.per_run * (draw_share * pairs / max(self.pairs, 1)
                          + score_share * candidates / max(self.candidates, 1e-12)
                          + (grid_share if grids else 0.0))


def last_stage_size(remaining: float, search_this: float, search_last: float,
                    seconds_per_run: float, last_seconds_per_run: float, planned: int,
                    next_planned: int) -> int | None:
    """Before a stage of `planned` runs per input whose successor would have `next_planned`:
    None when this stage (its search, then counting at `seconds_per_run`) and a last stage
    after it (its search, then counting at `last_seconds_per_run`) fit in `remaining` seconds;
    else the size of a last stage run now: what the remaining time buys after this stage's
    search, clipped to [planned, next_planned]. A stage never shrinks below its plan: a budget
    that is too tight is overrun by about one stage rather than certifying on fewer runs than
    its events were tuned for."""
    if remaining <= 0:
        return planned
    this = search_this + seconds_per_run * planned
    last = search_last + last_seconds_per_run * next_planned
    if this + last <= remaining:
        return None
    if last_seconds_per_run <= 0:
        return next_planned
    affordable = (remaining - search_this) / last_seconds_per_run
    if not math.isfinite(affordable):
        return planned
    return int(min(max(affordable, planned), next_planned))


def shrunk_stage_size(remaining: float, seconds_per_run: float, last_seconds_per_run: float,
                      planned: int, least: int, growth: int) -> int | None:
    """When a tuning stage of `planned` runs (one that counts tracked grids, its search done)
    and a last stage `growth`× larger do not both fit in `remaining` seconds: the size t at which
    it still runs, with a last stage of `growth`·t runs after it, counting at `seconds_per_run`
    and `last_seconds_per_run`; at most `planned`, and None when t would not reach `least`
    (`least_tuning_stage`), too few new runs to repay a stage (it then becomes the last).
    The size shrinks continuously with the time left, so a slower machine loses runs of both
    stages in proportion instead of a whole tuning stage (docs/method.md, "Time budgets")."""
    per_run = seconds_per_run + growth * last_seconds_per_run
    if per_run <= 0 or remaining <= 0:
        return None
    t = remaining / per_run
    if not (math.isfinite(t) and t >= least):
        return None
    return int(min(t, planned))


def least_tuning_stage(previous: int, resolution_limited: bool) -> int:
    """The fewest runs a shrunk tuning stage must have to repay its cost, after a stage of
    `previous` runs. Its counts are added to those of the stages before (`pooled_tuning`), so
    `previous` runs at least double the tuning sample, and that repays where the leading pick
    is held by the tuning sample's resolution (`resolution_limited`: its ratio still climbs
    into a tail the counts cannot rank, `attacks.planning.unresolved_climb`). Where it is not
    (a plateau, a discrete event) more tuning rarely moves the pick and the runs are worth more
    to the last stage: twice `previous` (docs/method.md, "Time budgets")."""
    return previous if resolution_limited else 2 * previous


def search_rows(kept: dict, cap: int, sizes: tuple) -> tuple:
    """(pairs, rows) to be learned at each of the next stages, for pairs whose search samples
    hold `kept` runs per input and grow by each stage's size up to `cap`: a pair is learned
    again (on both inputs' rows) at every stage that adds to its sample, and never after its
    sample is complete (its models are kept)."""
    out = []
    kept = dict(kept)
    for n in sizes:
        pairs = rows = 0
        for p, k in kept.items():
            if k < cap:
                kept[p] = min(cap, k + n)
                pairs += 1
                rows += 2 * kept[p]
        out.append((pairs, rows))
    return tuple(out)


@dataclass
class SearchTimes:
    """Seconds the search stages took against the pairs and rows they learned, to project the
    next ones. Per pair, a search costs a fixed part (models, thresholds) plus a part
    proportional to its rows, so the projection extends the line through the last two stages'
    (rows, seconds) per pair — never below the last stage's seconds per pair, and never above
    the lowest seconds per row any stage had, times the rows (a small stage's fixed part, or
    one stage slowed by a busy machine, would inflate that)."""

    history: list = field(default_factory=list)  # (pairs, rows, seconds) per search stage

    def add(self, pairs: int, rows: int, seconds: float) -> None:
        if pairs and rows:
            self.history.append((pairs, rows, seconds))

    def project(self, pairs: int, rows: int) -> float:
        if not (pairs and rows and self.history):
            return 0.0
        p1, r1, t1 = self.history[-1]
        proportional = min(t / r for _, r, t in self.history) * rows
        if len(self.history) < 2:
            return proportional
        p0, r0, t0 = self.history[-2]
        x0, y0, x1, y1 = r0 / p0, t0 / p0, r1 / p1, t1 / p1
        x = rows / pairs
        if x1 <= x0 or y1 <= y0:
            return proportional
        per_pair = y1 + (y1 - y0) / (x1 - x0) * (x - x1)
        return min(proportional, pairs * max(per_pair, y1))


LAST_SEARCH_SHARE = 0.5  # the most of the time left a last stage's search may be projected to take
EARLY = 0.25  # the share of the budget before which only a stage that cannot fit ends the run
SEARCH_SHARE = 0.4  # the share of the budget after which search stops learning and stages tune


class TimeBudget:
    """The clock of one measurement run with `audit(seconds=...)`: what the stages so far cost,
    and the decisions taken from it (`last_size` before a stage, `fill_last` once the last
    stage's events are known)."""

    def __init__(self, seconds: float, started: float):
        self.seconds = seconds
        self.started = started      # time.perf_counter() at the audit's start
        self.search = SearchTimes()
        self.counting: CountingCost | None = None  # the latest stage's counting pass
        self.ceiling: int | None = None  # the size the last stage may grow to, once decided

    def remaining(self) -> float:
        return self.seconds - (time.perf_counter() - self.started)

    def last_size(self, planned: int, next_planned: int, search_now: tuple,
                  search_next: tuple, last_pairs: int, last_events: int,
                  cap: int | None = None) -> int | None:
        """None to run the coming stage as planned, else its size as the last stage
        (`last_stage_size`); search_now/next: (pairs, rows) it and its successor would learn.
        Once a stage is made the last, `fill_last` may grow it up to `cap` (the run's sample
        cap; default `next_planned`): the decision rests on projections from one moment of a
        possibly busy machine, the growth on the time really left once the events are known."""
        if self.counting is None:
            return None
        remaining = self.remaining()
        search_this = self.search.project(*search_now)
        if (self.seconds - remaining < self.seconds * EARLY
                and search_this + self.counting.per_run * planned <= remaining):
            # projections from the first, smallest stages are the least reliable (fixed costs,
            # a moment of a busy machine): before a quarter of the budget is spent, a stage
            # that fits runs as planned
            return None
        this = search_this + self.counting.per_run * planned
        search_last = self.search.project(*search_next)
        if (self.search_spent(after=this)
                or search_last > LAST_SEARCH_SHARE * (remaining - this)):
            search_last = 0.0  # the last stage will not search (`search_spent`, or skipped)
        size = last_stage_size(
            remaining, search_this, search_last, self.counting.per_run,
            self.counting.seconds_per_run(last_pairs, last_events, grids=False), planned,
            next_planned)
        if size is not None:
            self.ceiling = max(next_planned, cap or 0)
        return size

    def shrunk_size(self, planned: int, least: int, growth: int, last_pairs: int,
                    last_events: int, measured: float | None = None) -> int | None:
        """After `last_size` ended the run at a tuning stage of `planned` runs: the smaller size,
        at least `least` (`least_tuning_stage`), at which it may still run with a last stage
        `growth`× larger after it (`shrunk_stage_size`), else None. `measured`: the last
        stage's seconds per run per input timed on a pilot of its likely events; without it,
        projected from the stage before."""
        if self.counting is None:
            return None
        last_rate = (measured if measured is not None and measured > 0
                     else self.counting.seconds_per_run(last_pairs, last_events, grids=False))
        return shrunk_stage_size(self.remaining(), self.counting.per_run, last_rate, planned,
                                 least, growth)

    def search_spent(self, after: float = 0.0) -> bool:
        """Whether SEARCH_SHARE of the budget is spent (`after` seconds from now): search then
        stops learning, and the stages left tune and certify the events it found."""
        return self.seconds - self.remaining() + after > SEARCH_SHARE * self.seconds

    def search_crowds_out_counting(self, search_now: tuple) -> bool:
        """Whether the last stage's own search, learning `search_now` = (pairs, rows), is
        projected to take more than LAST_SEARCH_SHARE of the time left. A last stage then
        certifies the events tuned on the stage before's fresh sample instead of searching
        again: a bound's margin shrinks as 1/√runs, so the better model a last search may learn
        rarely repays a search that leaves counting less than half of the time
        (docs/scaling.md, "Time budgets")."""
        return self.search.project(*search_now) > LAST_SEARCH_SHARE * self.remaining()

    def size_without_search(self, planned: int, pairs: int, events: int) -> int:
        """A last stage's size when it skips its search (after `last_size` made it the last):
        what the time left buys for counting `events` on `pairs` pairs, at least `planned`
        and at most the size the last stage may grow to: `fill_last`'s projection, taken before
        the stage rather than once its events are known."""
        return self.fill_last(planned, pairs, events)

    def fill_last(self, size: int, pairs: int, events: int, measured: float | None = None,
                  least: int | None = None) -> int:
        """The last stage's size once its search is done and its events are chosen: grown to
        what the time left buys for the pairs and events it really counts (the decision
        before the stage had to assume the most pairs its events could come from).
        `measured`: seconds per run per input of counting exactly those events, timed on a
        pilot (`certify.pilot.pilot`); without it the rate is projected from the stage before
        (`CountingCost.seconds_per_run`), which counted other candidates and tracked grids and
        can be off by 2× either way (docs/scaling.md, "Time budgets"). So with a measured rate
        the stage may also shrink to what the time left buys, though never below `least` (the
        pipeline passes the size of the stage before it): its events then
        certify on fewer runs than their thresholds were planned for, the bound a little less
        tight but the budget kept. Without one it never shrinks: the projection alone is too
        rough to take runs away on."""
        if self.counting is None or self.ceiling is None:
            return size
        known = measured is not None and measured > 0
        rate = measured if known else self.counting.seconds_per_run(pairs, events, grids=False)
        if not rate > 0:
            return size
        floor = min(least, size) if known and least is not None else size
        return int(min(max(self.remaining() / rate, floor), self.ceiling))
