"""The pipeline's tuning constants, as one object a run is given (`AuditRun(settings=...)`).

None of them touches soundness: they decide how much is searched, which events are kept and how
samples are drawn, never how a certifying count becomes a bound. Their reasons and the
measurements behind them are in docs/method.md ("Stages", "Search", "Time budgets")."""
from __future__ import annotations

from dataclasses import dataclass

from ..stats import MIN_COUPLED_BLOCK_RUNS


@dataclass(frozen=True)
class Settings:
    """Tuning of one audit run; the defaults are what `dpverify.audit` uses."""

    first_stage: int = 1 << 10         # certifying runs per input at the first stage (at least)
    growth: int = 4                    # each stage certifies on `growth`× the runs of the last
    search_cap: int = 1 << 19          # search runs per input a pair's sample may hold
    search_memory_bytes: int = 384 << 20  # ... less if the active pairs' samples outgrow this
    prune_after_stage: int = 5         # from this stage on only the most promising pairs ...
    active_pairs: int = 3              # ... this many, get more search samples
    search_precision: float = 0.01     # search stops once the best log-ratio is known to ±this
    paired_search: bool = True         # search rows of D and D' share seeds (common random numbers)
    min_tuning_block_runs: int = 1 << 10  # paired blocks of tracked grids, at least this long
    tracked: int = 4                   # candidates whose grids are counted while certifying
    tracked_per_pair: int = 1          # ... of which one per pair and direction comes first
    one_sided_tracked: int = 2         # ... and this many more, the best events seen under one
                                       # input only on the search sample (a rare leak's events)
    concentrate_z: float = 2.0         # the lead, in standard errors, to put all of α on one event
    tail_rungs: bool = True            # the last stage also certifies a climbing tail's rarer thresholds
    # a certifying block's least size (the threshold planner assumes the default)
    min_coupled_block_runs: int = MIN_COUPLED_BLOCK_RUNS
    # how a certifying stage's certificates are chosen: "pilot" (by what the pilot expects to
    # certify more), "never" (independent samples only), "always" (every event coupled wherever
    # blocks fit: for testing the coupled certificate's soundness on any mechanism)
    coupling: str = "pilot"
    # after the betting test proves a violation, measure it: run on to the first stage of at
    # least `measure_floor` and `measure_multiple`× the proof's runs per input (capped by the
    # schedule), and certify there (docs/method.md, "Measuring a proved violation")
    measure_floor: int = 1 << 18
    measure_multiple: int = 8

    def __post_init__(self):
        if self.coupling not in ("pilot", "never", "always"):
            raise ValueError(f"coupling must be 'pilot', 'never' or 'always', got {self.coupling!r}")
        if self.tracked_per_pair < 0:
            raise ValueError(f"tracked_per_pair must be 0 (no spreading) or more, got "
                             f"{self.tracked_per_pair}")


DEFAULT_SETTINGS = Settings()
