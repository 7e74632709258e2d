"""The stages of an audit: how many certifying runs each draws and how much of α it spends
(docs/method.md, "Stages and the spending of α"; docs/theory.md §2)."""
from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum

from ..sampling import LAST_STAGE_KEY, TUNING_STAGE_KEY
from ..stats import final_stage_alphas

# What a measurement run costs per certifying run per input, in units of the mechanism's own
# cost per run (`certify.pilot.seconds_per_run`): its stages before the last (a third of the
# last stage's runs), its search samples, learning and counting. Measured on the zoo at 2^16
# to 2^20 runs per input (docs/method.md, "Time budgets").
MEASUREMENT_COST = 8.0


def plan_stages(samples: int, first_stage: int = 1 << 10, growth: int = 4) -> list[int]:
    """Certifying sample sizes per input: samples/4^{J−1}, …, samples/4, samples (≥ 1024 each)."""
    sizes = [samples]
    while sizes[-1] // growth >= first_stage:
        sizes.append(sizes[-1] // growth)
    return sizes[::-1]


def samples_for_seconds(seconds: float, seconds_per_run: float, most: int, least: int) -> int:
    """The runs per input of a measurement run's last stage that `seconds` buy when the
    mechanism costs `seconds_per_run` per run on every input at once: the largest power of two
    with MEASUREMENT_COST · samples · seconds_per_run ≤ seconds, within [least, most].

    Args:
        seconds: the time left of the budget.
        seconds_per_run: wall seconds per run, all inputs drawn side by side (a pilot's).
        most: the cap (the request's `samples`); least: the smallest plan (one stage)."""
    if not seconds_per_run > 0:
        return most
    affordable = seconds / (MEASUREMENT_COST * seconds_per_run)
    if not affordable >= least:
        return least
    return int(min(most, 1 << int(math.log2(affordable))))


@dataclass(frozen=True)
class StagePlan:
    """What stage `index` (from 1) certifies: on `size` runs per input (a mean: Poisson sizes),
    spending `alpha` (0: it certifies nothing, only chooses and tunes the last stage's events),
    with events planned for `level` per bound; `last`: the schedule's last stage; `measuring`:
    a measurement run (stop_early=False), which certifies at its last stage only."""

    index: int
    size: int
    alpha: float
    level: float
    last: bool
    measuring: bool

    @property
    def certifies(self) -> bool:
        return self.alpha > 0

    @property
    def final_measurement(self) -> bool:
        """The one certifying stage of a measurement run."""
        return self.measuring and self.last


class Schedule:
    """The stage sizes and their α_j: the stages before the last spend nothing (their fresh
    samples choose and tune the last stage's events), the last spends what the betting test
    leaves (`stats.final_stage_alphas`): α − `betting_alpha`, where an ordinary audit's test by
    betting on the search rows spends `betting_alpha` (pipeline.betting; a measurement run has
    none)."""

    def __init__(self, samples: int, confidence: float, stop_early: bool, per_stage: int,
                 first_stage: int = 1 << 10, growth: int = 4, betting_alpha: float = 0.0):
        self._args = (confidence, stop_early, per_stage, first_stage, growth, betting_alpha)
        self.alpha = 1.0 - confidence - betting_alpha  # what the certifying stages spend
        self.stop_early = stop_early
        self.per_stage = per_stage  # K: the events a stage certifies
        self.sizes = plan_stages(int(samples), first_stage, growth)
        self.alphas = final_stage_alphas(self.alpha, len(self.sizes))

    def with_samples(self, samples: int) -> "Schedule":
        """The same schedule planned for `samples` runs per input at its last stage."""
        return Schedule(samples, *self._args)

    def measuring(self, samples: int) -> "Schedule":
        """The schedule ending at `samples` runs per input, as a measurement run's: its stages
        before the last track, its last certifies with the α this one's last stage has."""
        confidence, _, *rest = self._args
        return Schedule(samples, confidence, False, *rest)

    def ending_after(self, j: int, size: int) -> "Schedule":
        """This schedule's first j stages, then a last stage of `size` runs per input (a pass
        sized for its resolution target, `resolution_size`)."""
        ended = Schedule(size, *self._args)
        ended.sizes = self.sizes[:j] + [int(size)]
        ended.alphas = final_stage_alphas(ended.alpha, len(ended.sizes))
        return ended

    def __len__(self) -> int:
        return len(self.sizes)

    @property
    def final_size(self) -> int:
        return self.sizes[-1]

    @property
    def final_level(self) -> float:
        """The per-bound level of one of K events at the last stage."""
        return self.alphas[-1] / (2 * self.per_stage)

    def stage(self, j: int) -> StagePlan:
        """Stage j's plan. A stage that spends no α plans its events for the last stage's level,
        which will certify them."""
        alpha_j = self.alphas[j - 1]
        level = (alpha_j if alpha_j > 0 else self.alphas[-1]) / (2 * self.per_stage)
        return StagePlan(j, self.sizes[j - 1], alpha_j, level, j == len(self.sizes),
                         not self.stop_early)


def measurement_size(sizes: list[int], proof_runs: int, at_least: int, floor: int,
                     multiple: int) -> int:
    """The runs per input a violation proved after `proof_runs` runs per input is measured on:
    the first of the schedule's `sizes` that reaches `multiple` × proof_runs, `floor` and
    `at_least` (the stage the proof came in), else the last."""
    need = max(multiple * proof_runs, floor, at_least)
    return next((n for n in sizes if n >= need), sizes[-1])


RESOLUTION_STEP = 2 ** 0.25  # the last-stage sizes a resolution target is tried at, apart
RESOLUTION_ROUNDING = 256    # ... rounded up to a multiple of this many runs


def resolution_size(predicted, least: int, most: int) -> int | None:
    """The smallest last-stage size in [least, most] (a geometric grid RESOLUTION_STEP apart,
    rounded up to RESOLUTION_ROUNDING) at which `predicted(n)` holds: the resolution a stage
    of n runs per input is predicted to reach meets the target. None if no size up to `most`
    does."""
    n = float(least)
    while n <= most * RESOLUTION_STEP:
        size = min(most, -(-int(n) // RESOLUTION_ROUNDING) * RESOLUTION_ROUNDING)
        if predicted(size):
            return size
        if size >= most:
            return None
        n *= RESOLUTION_STEP
    return None


class StageKind(Enum):
    """What a stage does, decided once as it starts (`stage_kind`)."""

    SEARCH = "search"   # search still learns: it chooses and tunes events for later stages
    TUNE = "tune"       # search converged before it: it counts the tracked events' grids
    LAST = "last"       # the schedule's last stage: it certifies


def stage_kind(stage: StagePlan, search_frozen: bool) -> StageKind:
    """The kind of `stage` when it starts, search having converged before it or not."""
    if stage.last:
        return StageKind.LAST
    return StageKind.TUNE if search_frozen else StageKind.SEARCH


def stage_key(kind: StageKind, index: int, first_tuning: int | None) -> int:
    """The seed-stream key of a stage's certifying and pilot runs, from what the stage is:
    LAST_STAGE_KEY for the last stage, TUNING_STAGE_KEY − i for the i-th stage that only tunes
    (i from 0; `first_tuning`: the index of the audit's first one), and its index otherwise.
    Keys are distinct within an audit, so every stage counts fresh runs, and a last or tuning
    stage draws the same stream whatever the schedule's length (docs/method.md, "Seed
    streams")."""
    if kind is StageKind.LAST:
        return LAST_STAGE_KEY
    if kind is StageKind.TUNE:
        return TUNING_STAGE_KEY - (index - first_tuning)
    return index

