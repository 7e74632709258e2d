"""Time budgets (`audit(seconds=...)`): an ordinary audit's stop at its budget, and a
measurement run's projection arithmetic (dpverify.pipeline.budget) and wiring — checked on
structure (which stage certifies, with what α and how many runs, on a stand-in clock where it
matters), never on how long a run took."""
import math
import time

import numpy as np
import pytest
from scipy.stats import binom

import dpverify
from dpverify.sampling.checks import SPREAD_SINGLES
from dpverify import InvalidClaimError
from dpverify.pipeline import Settings, audit_with_settings
from dpverify.pipeline.budget import (CountingCost, SearchTimes, TimeBudget, last_stage_size,
                                      least_tuning_stage, search_rows, shrunk_stage_size)
from dpverify.result import BETTING, COUPLED
from dpverify.sampling import CERTIFY, LAST_STAGE_KEY, SEARCH, TIMING, Sampler
from mechanisms_under_test.basic import make_laplace


def test_a_stage_runs_as_planned_when_it_and_a_last_stage_fit():
    # this stage: 1 s search + 1000 runs at 1 ms; last: 0 s search + 4000 runs at 1 ms → 6 s
    assert last_stage_size(6.0, 1.0, 0.0, 1e-3, 1e-3, 1000, 4000) is None


def test_otherwise_the_stage_becomes_the_last_with_what_the_time_left_buys():
    # 5.5 s left is short of 6 s: a last stage now, after its 1 s search, buys 4500 runs,
    # clipped to the next stage's 4000
    assert last_stage_size(5.5, 1.0, 0.0, 1e-3, 1e-3, 1000, 4000) == 4000
    # 3 s left buys 2000 runs at the last stage's rate
    assert last_stage_size(3.0, 1.0, 0.0, 1e-3, 1e-3, 1000, 4000) == 2000
    # a cheaper last stage (fewer pairs, no grids) buys more with the same time
    assert last_stage_size(3.0, 1.0, 0.0, 1e-3, 0.5e-3, 1000, 4000) == 4000
    # never fewer runs than planned, even out of time
    assert last_stage_size(1.2, 1.0, 0.0, 1e-3, 1e-3, 1000, 4000) == 1000
    assert last_stage_size(-1.0, 1.0, 0.0, 1e-3, 1e-3, 1000, 4000) == 1000


def test_a_tuning_stage_that_does_not_fit_shrinks_with_the_time_left():
    # 1 ms a run for this tuning stage, 0.5 ms for a last stage 4× larger: 3 ms per tuning
    # run. 9 s buy a 3000-run stage (and a last stage of 12000) instead of the planned 4000.
    assert shrunk_stage_size(9.0, 1e-3, 0.5e-3, 4000, 1000, 4) == 3000
    # no cliff: between the stage before's size and the plan, the size is proportional to the
    # time left, so 10% less time costs both stages 10% of their runs
    sizes = [shrunk_stage_size(r, 1e-3, 0.5e-3, 4000, 1000, 4) for r in (9.0, 8.1, 6.0)]
    assert sizes == [3000, 2700, 2000]
    # never above the plan; None (the stage becomes the last) below the least size given
    assert shrunk_stage_size(60.0, 1e-3, 0.5e-3, 4000, 1000, 4) == 4000
    assert shrunk_stage_size(2.9, 1e-3, 0.5e-3, 4000, 1000, 4) is None
    assert shrunk_stage_size(5.9, 1e-3, 0.5e-3, 4000, 2000, 4) is None
    assert shrunk_stage_size(-1.0, 1e-3, 0.5e-3, 4000, 1000, 4) is None
    assert shrunk_stage_size(9.0, 0.0, 0.0, 4000, 1000, 4) is None


def test_a_tuning_stage_no_larger_than_the_one_before_runs_only_where_tuning_holds_the_pick():
    # pooled with the stages before, a stage of `previous` runs doubles the tuning sample: worth
    # it where the pick's ratio climbs beyond what the counts resolve, not on a plateau
    assert least_tuning_stage(1000, resolution_limited=True) == 1000
    assert least_tuning_stage(1000, resolution_limited=False) == 2000
    # 5.9 s at 3 ms per tuning run buy 1966 runs after a 1000-run stage
    assert shrunk_stage_size(5.9, 1e-3, 0.5e-3, 4000, least_tuning_stage(1000, True), 4) == 1966
    assert shrunk_stage_size(5.9, 1e-3, 0.5e-3, 4000, least_tuning_stage(1000, False), 4) is None


def test_the_shrink_decision_uses_the_last_stage_rate_measured_on_a_pilot():
    # a tuning pass of 1000 runs took 1 s (1 ms a run); projected from it, a last stage costs
    # 1 ms a run too, so with 9 s left a stage of t runs and a last stage of 4t need 5 ms per
    # t: 1800 runs, under the least worth running (2000 here), and the stage becomes the last.
    # A pilot that times the last stage's events at 0.5 ms a run buys a 3000-run stage instead.
    budget = TimeBudget(100.0, time.perf_counter() - 91.0)
    budget.counting = CountingCost(1000, 1, 2, 1.0, 0.5, 0.5)
    assert budget.shrunk_size(4000, 2000, 4, 1, 2) is None
    shrunk = budget.shrunk_size(4000, 2000, 4, 1, 2, measured=0.5e-3)
    assert shrunk is not None and 2900 <= shrunk <= 3000   # the clock ran on a little
    # a pilot that timed nothing (a zero rate) falls back to the projection
    assert budget.shrunk_size(4000, 2000, 4, 1, 2, measured=0.0) is None


def test_search_stops_learning_once_its_share_of_the_budget_is_spent():
    budget = TimeBudget(10.0, time.perf_counter() - 3.0)
    assert not budget.search_spent()           # 3 s of 10: search may go on
    budget.started -= 2.0
    assert budget.search_spent()               # 5 s of 10: past the 40% share


def test_a_last_search_that_will_not_run_is_not_charged_to_the_plan():
    # 1 ms a run, 10 ms a search row. A 1000-run stage, then a last stage of 40000 runs whose
    # search would learn 3000 rows (30 s).
    def last_size_after(spent):
        budget = TimeBudget(100.0, time.perf_counter() - spent)
        budget.counting = CountingCost(1000, 1, 2, 1.0, 0.5, 0.5)
        budget.search.add(1, 1000, 10.0)
        return budget.last_size(1000, 40000, (0, 0), (1, 3000), 1, 2)

    # 30 s spent: the last search will run, and 1 + 30 + 40 s do not fit in 70: end here
    assert last_size_after(30.0) is not None
    # 50 s spent, past the search's 40% share: the last stage will not search, and 1 + 40 s
    # fit in 50: the stage runs as planned
    assert last_size_after(50.0) is None


def test_a_shrunk_tuning_stage_tunes_and_the_stage_after_it_certifies(monkeypatch):
    # Search converges at stage 2 (a loose precision, pruning from stage 2). The stand-in clock
    # ends the run at stage 3 (2^14 runs planned); it is a tuning stage, so it shrinks to 6000
    # runs and a last stage of at most 24000 follows, with all of α. The decision is given the
    # last stage's rate as a pilot of the tracked events measured it
    # (docs/method.md, "Time budgets").
    asked, rates = [], []

    def end_at_stage_three(self, planned, next_planned, *projections, cap=None):
        if planned == 1 << 14:
            self.ceiling = 24000
            return planned
        return None

    def shrink(self, planned, least, growth, *rest, measured=None):
        asked.append((planned, least, growth))
        rates.append(measured)
        return 6000

    monkeypatch.setattr(TimeBudget, "last_size", end_at_stage_three)
    monkeypatch.setattr(TimeBudget, "shrunk_size", shrink)
    converges_early = Settings(prune_after_stage=2, search_precision=0.1)
    r = audit_with_settings(make_laplace(1.0), converges_early, seconds=60.0, stop_early=False,
                            samples=1 << 20, n_jobs=1, seed=3)
    # the least size worth running: Laplace's log-ratio is flat in its tail, so tuning does not
    # hold its pick and a shrunk stage must reach twice the stage before's 2^12 runs
    assert asked == [(1 << 14, 1 << 13, 4)]
    assert rates[0] is not None and 0 < rates[0] < 1e-3   # seconds per run per input
    assert [s.samples_per_side for s in r.stages] == [1 << 10, 1 << 12, 6000, 24000]
    assert [s.alpha for s in r.stages] == [0.0, 0.0, 0.0, pytest.approx(1 - r.confidence)]
    # counted on the last stage's fresh runs (Poisson sizes around 24000 for a ratio test)
    assert r.witness.stage == 4 and abs(r.witness.samples_D - 24000) < 1000
    assert 0.5 < r.epsilon_lower_bound <= 1.0


def _tuning_stage_seeds(monkeypatch, watch, shrink_to):
    """One measurement audit whose search converges at stage 2, with stage 3 (2^14 runs) a
    tuning stage, shrunk to `shrink_to` runs by a stand-in clock (None: run as planned);
    (stage key → seed state of its first certifying chunk of D, stage sizes)."""
    def end_at_stage_three(self, planned, next_planned, *projections, cap=None):
        if shrink_to is not None and planned == 1 << 14:
            self.ceiling = 4 * shrink_to
            return planned
        return None

    monkeypatch.setattr(TimeBudget, "last_size", end_at_stage_three)
    monkeypatch.setattr(TimeBudget, "shrunk_size", lambda self, *args, **kw: shrink_to)
    seeds = watch(3)
    converges_early = Settings(prune_after_stage=2, search_precision=0.1)
    r = audit_with_settings(make_laplace(1.0), converges_early, seconds=60.0, stop_early=False,
                            samples=1 << 16, n_jobs=1, seed=3)
    return seeds, [s.samples_per_side for s in r.stages]


def test_a_shrunk_tuning_stage_draws_a_prefix_of_the_full_ones_runs(monkeypatch,
                                                                    certifying_chunk_seeds):
    # docs/method.md, "Seed streams": a tuning stage a slower machine shrinks draws under the
    # same key as the full one, so its runs are the first of the full stage's: it tunes on a
    # subset of what a faster machine tunes on, not on unrelated runs
    from dpverify.sampling import TUNING_STAGE_KEY
    full, full_sizes = _tuning_stage_seeds(monkeypatch, certifying_chunk_seeds, None)
    shrunk, shrunk_sizes = _tuning_stage_seeds(monkeypatch, certifying_chunk_seeds, 6000)
    assert full_sizes[:3] == [1 << 10, 1 << 12, 1 << 14] and shrunk_sizes[2] == 6000
    assert TUNING_STAGE_KEY in full and TUNING_STAGE_KEY in shrunk
    assert full[TUNING_STAGE_KEY] == shrunk[TUNING_STAGE_KEY]
    assert full[LAST_STAGE_KEY] == shrunk[LAST_STAGE_KEY]


def test_a_stage_that_still_searches_is_never_shrunk(monkeypatch):
    # Before search converges (pruning starts at stage 5) the stage the clock ends the run at
    # becomes the last one: shrinking it would pay for a search twice.
    monkeypatch.setattr(TimeBudget, "last_size",
                        lambda self, planned, *rest, **options: (20000 if planned == 1 << 14
                                                                 else None))

    def never(self, *args):
        raise AssertionError("a searching stage was offered to shrink")

    monkeypatch.setattr(TimeBudget, "shrunk_size", never)
    r = dpverify.audit(make_laplace(1.0), seconds=60.0, stop_early=False, samples=1 << 20,
                       n_jobs=1, seed=2)
    assert [s.samples_per_side for s in r.stages] == [1 << 10, 1 << 12, 20000]


def test_counting_cost_scales_drawing_with_pairs_and_evaluating_with_candidates():
    # 2 pairs, 4 grids per output: 8 s for 1000 runs per input, chunks busy 3:1 drawing
    cost = CountingCost(n=1000, pairs=2, candidates=4, wall=8.0, draw=12.0, evaluate=4.0)
    assert cost.seconds_per_run(2, 4) == pytest.approx(8e-3)   # the same pass again
    # one pair and two events: half the drawing (6 ms → 3 ms), half the evaluating (2 → 1)
    assert cost.seconds_per_run(1, 2) == pytest.approx(4e-3)
    assert CountingCost(1000, 1, 0, 2.0, 0.0, 0.0).seconds_per_run(1, 2) == pytest.approx(2e-3)
    # of 4 s evaluating, 3 s went on counting grids: a last stage (events, no grids) on the
    # same pairs and as many candidates costs the drawing and the scoring only (6 + 0.5 ms)
    with_grids = CountingCost(1000, 2, 4, 8.0, 12.0, 4.0, grid=3.0)
    assert with_grids.seconds_per_run(2, 4) == pytest.approx(8e-3)
    assert with_grids.seconds_per_run(2, 4, grids=False) == pytest.approx(6.5e-3)


def test_search_rows_stop_once_a_pair_reaches_its_cap():
    # pair 0 reaches the cap of 100 at the first stage and is learned once more; pair 1
    # reaches it at the second stage
    assert search_rows({0: 90, 1: 10}, 100, (20, 80)) == ((2, 2 * 100 + 2 * 30), (1, 2 * 100))
    assert search_rows({0: 100}, 100, (20, 80)) == ((0, 0), (0, 0))


def test_search_time_is_projected_as_a_fixed_part_plus_a_part_per_row():
    times = SearchTimes()
    assert times.project(2, 1000) == 0.0  # nothing measured yet
    times.add(1, 1000, 1.5)               # per pair: 1 s fixed + 0.5 ms per row
    assert times.project(2, 4000) == pytest.approx(6.0)  # proportional from one stage
    times.add(2, 8000, 2 * 3.0)
    # the line through (1000, 1.5) and (4000, 3.0) per pair, at 16000 rows per pair
    assert times.project(1, 16000) == pytest.approx(9.0)
    # never above the lowest seconds per row of any stage times the rows
    assert times.project(1, 100) <= 3.0 / 4000 * 100 + 1e-12
    assert times.project(0, 0) == 0.0
    # one stage slowed down (a busy machine) does not inflate the projection beyond the rate
    # the stages before it showed
    times.add(1, 4000, 30.0)
    assert times.project(1, 16000) <= 3.0 / 4000 * 16000 + 1e-12


def test_the_last_stage_grows_to_the_time_left_on_the_pairs_it_really_counts():
    budget = TimeBudget(10.0, time.perf_counter())
    assert budget.fill_last(1000, 1, 2) == 1000  # nothing measured, nothing decided
    # the stage before counted 4 grids on 2 pairs: 1 ms per run per input, half drawing
    budget.counting = CountingCost(1000, 2, 4, 1.0, 1.0, 1.0)
    budget.ceiling = 100_000
    # one pair and two events cost half as much: ~10 s / 0.5 ms
    assert 19_900 <= budget.fill_last(1000, 1, 2) <= 20_000
    budget.ceiling = 16_000
    assert budget.fill_last(1000, 1, 2) == 16_000


def test_a_measured_rate_sizes_the_last_stage_instead_of_the_projection():
    # The stage before projects 0.5 ms a run for one pair and two events; the timing pilot
    # measured 0.25 ms: the ~10 s left buy twice as many runs.
    budget = TimeBudget(10.0, time.perf_counter())
    budget.counting = CountingCost(1000, 1, 2, 0.5, 0.25, 0.25)
    budget.ceiling = 1 << 20
    assert 19_900 <= budget.fill_last(1000, 1, 2) <= 20_000
    assert 39_800 <= budget.fill_last(1000, 1, 2, measured=0.25e-3) <= 40_000
    # a pilot that measured nothing leaves the projection in charge
    assert 19_900 <= budget.fill_last(1000, 1, 2, measured=0.0) <= 20_000


def test_a_measured_rate_may_shrink_the_last_stage_but_not_below_the_stage_before():
    # planned for 100,000 runs per input, the pilot measures 1 ms a run: the ~10 s left buy
    # ~10,000, and the stage takes that many (the budget is kept) down to `least`, the size of
    # the stage before; a projected rate alone never takes runs away
    budget = TimeBudget(10.0, time.perf_counter())
    budget.counting = CountingCost(1000, 1, 2, 0.5, 0.25, 0.25)
    budget.ceiling = 1 << 20
    assert 9_900 <= budget.fill_last(100_000, 1, 2, measured=1e-3, least=2_000) <= 10_000
    assert budget.fill_last(100_000, 1, 2, measured=1e-3, least=25_000) == 25_000
    assert budget.fill_last(100_000, 1, 2, least=25_000) == 100_000


def test_the_plans_own_last_stage_gets_only_what_the_time_left_buys(monkeypatch):
    # Every stage before the plan's last one runs as planned (as one that fits always does
    # early in a budget). The plan's last stage, 2^14 runs per input of a mechanism that
    # sleeps 20 µs a run, needs ~0.65 s to count alone; with a 0.3 s budget it is cut to what
    # the time left buys, no less than the stage before (2^12). It used to run in full.
    import numpy as np

    monkeypatch.setattr(TimeBudget, "last_size", lambda self, *a, **k: None)

    @dpverify.mechanism(epsilon=1.0, pairs=[(0.0, 1.0)])
    def slow_laplace(data, rng, size):
        time.sleep(20e-6 * size)
        return data + rng.laplace(0.0, 1.0, size)

    r = dpverify.audit(slow_laplace, seconds=0.3, stop_early=False, samples=1 << 14,
                       n_jobs=1, seed=0)
    assert [s.samples_per_side for s in r.stages[:-1]] == [1 << 10, 1 << 12]
    assert r.stages[-1].samples_per_side == 1 << 12
    assert r.stages[-1].alpha == pytest.approx(1 - r.confidence)
    assert r.witness is not None and r.witness.stage == 3
    assert np.isfinite(r.epsilon_lower_bound)


def test_the_last_stage_is_sized_on_a_timing_pilot_drawn_apart_from_its_sample(monkeypatch):
    """The pilot's runs have a seed purpose of their own, come before the last stage's counting,
    are at most a sixteenth of its planned size, and never enter the witness's counts; the run's
    total still reports them."""
    def last_at_stage_three(self, planned, next_planned, *projections, cap=None):
        if planned == 1 << 14:   # the budget's decision, so the stage may grow up to the cap
            self.ceiling = cap
            return planned
        return None

    monkeypatch.setattr(TimeBudget, "last_size", last_at_stage_three)
    calls = []
    run = Sampler.run

    def spy(self, tasks, evaluators=None, pooled=False):
        calls.append((tasks, pooled))
        return run(self, tasks, evaluators, pooled)

    monkeypatch.setattr(Sampler, "run", spy)
    r = dpverify.audit(make_laplace(1.0), seconds=120.0, stop_early=False, samples=1 << 20,
                       n_jobs=2, seed=5)
    pilots = [(t, pooled) for t, pooled in calls if any(x.purpose == TIMING for x in t)]
    assert len(pilots) == 1
    tasks, pooled = pilots[0]
    # stage 3 became the last: its pilot and its runs draw under the last stage's key
    assert pooled and all(t.purpose == TIMING and t.stage == LAST_STAGE_KEY for t in tasks)
    assert {(t.pair, t.side) for t in tasks} == {(0, 0), (0, 1)}
    assert sum(t.size for t in tasks) == 2 * (1 << 14) // 16   # two inputs, 1/16 of 2^14 each
    # the pilot comes right before the last stage's certifying pass
    after = calls[calls.index((tasks, pooled)) + 1][0]
    assert all(t.purpose == CERTIFY and t.stage == LAST_STAGE_KEY for t in after)
    # Laplace is fast: 2 minutes buy the cap, and the witness counts the certifying runs only
    assert r.stages[-1].samples_per_side == 1 << 20
    w = r.witness
    assert w.stage == 3
    # the pilot chose common random numbers for Laplace: 2^20 runs per input, in equal blocks
    assert w.certificate == COUPLED
    assert w.samples_D == w.samples_D_prime == 1 << 20
    # + the pre-flights: per input 64 runs twice, and SPREAD_SINGLES one-run calls on D
    assert r.samples == sum(t.size for ts, _ in calls for t in ts) + 2 * 2 * 64 + SPREAD_SINGLES
    assert 0.5 < r.epsilon_lower_bound <= 1.0


@pytest.mark.parametrize("bad", [0, -1.0, math.nan, math.inf, "soon"])
def test_a_bad_budget_is_refused(bad):
    with pytest.raises(InvalidClaimError, match="seconds"):
        dpverify.audit(make_laplace(1.0), seconds=bad, stop_early=False, samples=1 << 12)


def _chunk_clock(monkeypatch):
    """Stand in for the time budget's clock: one second passes per reading, so a budget of
    `seconds` stops an ordinary audit after about that many chunks, the same on every machine."""
    from dpverify.sampling import sampler
    ticks = iter(range(1 << 40))
    monkeypatch.setattr(sampler, "_clock", lambda: float(next(ticks)))


def test_an_ordinary_audit_stops_at_its_budget_with_what_it_has_proven(monkeypatch):
    """A tight Laplace with a budget of 20 clock readings: the audit stops during search, says
    so, and a pass is no more than the betting test's evidence so far (no last stage ran)."""
    _chunk_clock(monkeypatch)
    r = dpverify.audit(make_laplace(1.0), seconds=20, seed=0, n_jobs=1)
    full = dpverify.audit(make_laplace(1.0), seed=0, n_jobs=1)
    assert r.budget_spent and not r.interrupted and not full.budget_spent
    assert r.samples < full.samples / 10
    assert r.verdict == "pass" and r.witness.certificate == BETTING
    assert "TIME BUDGET SPENT" in r.summary() and r.as_dict()["budget_spent"] is True


def test_ordinary_audits_stopped_by_their_budget_keep_the_false_alarm_promise(monkeypatch):
    """Ordinary audits of an exactly tight binary randomized response (ε = 1 claimed at 1),
    each with a budget of a random number of chunks (log-uniform over 2–2^7, so most stop
    during search): whatever was proved by then is the verdict. 120 seeded audits; at most the
    99% binomial quantile of the promised 5% may be false alarms."""
    from mechanisms_under_test.basic import make_randomized_response
    tight = make_randomized_response(1.0)
    alarms = spent = 0
    for seed in range(120):
        _chunk_clock(monkeypatch)
        budget = float(np.exp(np.random.default_rng(seed).uniform(np.log(2), np.log(128))))
        r = dpverify.audit(tight, samples=1 << 14, seconds=budget, seed=seed, n_jobs=1,
                           progress=False)
        spent += r.budget_spent
        alarms += r.verdict == "violation"
    assert spent >= 60                         # most audits were cut short
    assert alarms <= binom.ppf(0.99, 120, 0.05), alarms


def test_the_stage_the_budget_makes_last_certifies_with_all_of_alpha(monkeypatch):
    # Stand in for the clock: the projection says stage 3 must be the last, with 20000 runs.
    decisions = []

    def stop_at_stage_three(self, planned, next_planned, *projections, **options):
        decisions.append(planned)
        return 20000 if planned == 1 << 14 else None

    monkeypatch.setattr(TimeBudget, "last_size", stop_at_stage_three)
    mech = make_laplace(1.0)
    r = dpverify.audit(mech, seconds=60.0, stop_early=False, samples=1 << 20, n_jobs=1, seed=2)
    assert decisions == [1 << 10, 1 << 12, 1 << 14]  # asked before each stage, none after
    assert [s.samples_per_side for s in r.stages] == [1 << 10, 1 << 12, 20000]
    assert [s.alpha for s in r.stages] == [0.0, 0.0, pytest.approx(1 - r.confidence)]
    assert r.witness.stage == 3
    # a sound bound on Laplace(1) with ε = 1 exactly, from ~20000 runs per input
    assert 0.5 < r.epsilon_lower_bound <= 1.0


def test_a_short_budget_ends_early_and_still_certifies_once():
    # Whatever the machine's speed, a 1-second budget on a 2^26 cap ends well before the cap,
    # and its last stage (only) spends all of α. (The sizes depend on the clock, so the bound
    # is not checked here: whether it exceeds the true ε is a rate, for the calibration.)
    r = dpverify.audit(make_laplace(1.0), seconds=1.0, stop_early=False, n_jobs=1, seed=0)
    assert r.stages[-1].samples_per_side < 1 << 26
    assert [s.alpha for s in r.stages[:-1]] == [0.0] * (len(r.stages) - 1)
    assert r.stages[-1].alpha == pytest.approx(1 - r.confidence)
    assert r.witness is not None and r.witness.stage == len(r.stages)


def test_early_in_the_budget_a_stage_that_fits_runs_as_planned():
    # A first stage that took 2 s for 1000 runs projects 4000 runs at 8 s and 16000 at 32 s:
    # more than the 30 s left. Early in the budget (a quarter not yet spent) that projection
    # rests on the smallest stage and does not end the run; later it does.
    budget = TimeBudget(40.0, time.perf_counter())
    budget.counting = CountingCost(1000, 1, 2, 2.0, 1.0, 1.0)
    assert budget.last_size(4000, 16000, (0, 0), (0, 0), 1, 2) is None
    budget.started -= 20.0   # half the budget spent: the same projection now ends the run,
    # with what the 20 s left buy at 2 ms a run
    assert 9_990 <= budget.last_size(4000, 16000, (0, 0), (0, 0), 1, 2) <= 10_000


def test_a_stage_made_last_on_a_slow_moment_may_still_grow_to_the_cap():
    # The projection (2 ms a run, from a slow moment) ends the run before a 4000-run stage
    # with 20 s left. Once the events are known the counting is measured at 0.5 ms a run for
    # the one pair: the last stage grows to what the 20 s buy, past the next stage's 16000,
    # up to the run's cap, and never beyond it.
    budget = TimeBudget(40.0, time.perf_counter() - 20.0)
    budget.counting = CountingCost(1000, 1, 2, 2.0, 1.0, 1.0)
    assert budget.last_size(4000, 16000, (0, 0), (0, 0), 1, 2, cap=1 << 20) is not None
    budget.counting = CountingCost(1000, 1, 2, 0.5, 0.25, 0.25)
    assert 39_000 <= budget.fill_last(4000, 1, 2) <= 40_000
    budget.counting = CountingCost(1000, 1, 2, 2.0, 1.0, 1.0)
    assert budget.last_size(4000, 16000, (0, 0), (0, 0), 1, 2, cap=30_000) is not None
    budget.counting = CountingCost(1000, 1, 2, 0.5, 0.25, 0.25)
    assert budget.fill_last(4000, 1, 2) == 30_000


def test_runs_whose_last_stage_the_budget_decides_keep_the_false_alarm_rate(monkeypatch):
    """A budget moves the certifying stage and its size, never the α it spends. With a stand-in
    clock, 100 seeds of Laplace claimed at exactly its true ε = 1 end at stage 3 with 6000 runs
    per input, and 100 more (search converging at stage 2) mostly shrink stage 3 to a 3000-run
    tuning stage with a last stage of 12000 after it. Each may raise a false alarm with probability
    ≤ 0.05: the count stays within Binomial(200, 0.05)'s 99th percentile (a correct engine
    fails < 1% of the time)."""
    def end_at_stage_three(self, planned, *rest, **options):
        return 6000 if planned == 1 << 14 else None

    monkeypatch.setattr(TimeBudget, "last_size", end_at_stage_three)
    monkeypatch.setattr(TimeBudget, "shrunk_size", lambda self, *args, **kw: 3000)
    mech = make_laplace(1.0)
    ended = [dpverify.audit(mech, seconds=60.0, stop_early=False, samples=1 << 20, n_jobs=1,
                            seed=s) for s in range(100)]
    converges_early = Settings(prune_after_stage=2, search_precision=0.1)
    shrunk = [audit_with_settings(mech, converges_early, seconds=60.0, stop_early=False,
                                  samples=1 << 20, n_jobs=1, seed=s) for s in range(100, 200)]
    assert all(r.stages[-1].samples_per_side == 6000 for r in ended)
    # (a seed whose search has not converged by stage 3 ends there instead: 3 of these 100)
    assert sum([s.samples_per_side for s in r.stages][2:] == [3000, 12000] for r in shrunk) >= 90
    alarms = sum(r.verdict == "violation" for r in ended + shrunk)
    assert alarms <= binom.ppf(0.99, 200, 0.05)


def test_a_last_search_is_skipped_only_when_it_would_take_most_of_the_time_left():
    budget = TimeBudget(100.0, time.perf_counter())   # ~100 s left
    budget.search.add(1, 1000, 10.0)                   # 10 ms per row
    assert not budget.search_crowds_out_counting((1, 2000))   # ~20 s of ~100 s
    assert budget.search_crowds_out_counting((1, 6000))       # ~60 s of ~100 s
    assert not budget.search_crowds_out_counting((0, 0))      # nothing left to learn


def test_a_last_stage_without_search_is_sized_on_the_whole_time_left():
    budget = TimeBudget(10.0, time.perf_counter())
    budget.counting = CountingCost(1000, 1, 2, 1.0, 1.0, 0.0)   # 1 ms per run per input
    budget.ceiling = 100_000
    assert 9_900 <= budget.size_without_search(1000, 1, 2) <= 10_000
    assert budget.size_without_search(50_000, 1, 2) == 50_000    # never below its plan
    budget.ceiling = 5_000
    assert budget.size_without_search(1000, 1, 2) == 5_000       # never above the cap


def test_a_skipped_last_search_certifies_the_tuned_events_on_fresh_runs(monkeypatch):
    """When the last stage's search is projected to crowd out its counting, it draws no search
    samples and certifies the events tracked on the stage before (chosen and tuned on samples
    apart from its own), still soundly."""
    def last_at_stage_four(self, planned, next_planned, *projections, cap=None):
        if planned == 1 << 16:
            self.ceiling = cap
            return planned
        return None

    monkeypatch.setattr(TimeBudget, "last_size", last_at_stage_four)
    monkeypatch.setattr(TimeBudget, "search_crowds_out_counting", lambda self, now: True)
    tasks = []
    run = Sampler.run

    def spy(self, batch, evaluators=None, pooled=False):
        tasks.extend(batch)
        return run(self, batch, evaluators, pooled)

    monkeypatch.setattr(Sampler, "run", spy)
    r = dpverify.audit(make_laplace(1.0), seconds=120.0, stop_early=False, samples=1 << 20,
                       n_jobs=2, seed=4)
    searched = {t.stage for t in tasks if t.purpose == SEARCH}
    assert searched == {1, 2, 3}                  # none at the last stage
    assert r.witness.stage == 4 and len(r.stages) == 4
    assert 0.7 < r.epsilon_lower_bound <= 1.0     # Laplace(1) at ε = 1: tight and sound


def _pairs_searched(monkeypatch):
    """A spy on `Search.stage`: how many pairs each stage's search draws for."""
    from dpverify.pipeline.search import Search
    searched = []
    original = Search.stage

    def spy(self, *args, **kwargs):
        searched.append(len(self.active))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Search, "stage", spy)
    return searched


@pytest.mark.parametrize("crosses_share", [False, True])
def test_a_search_that_would_end_past_its_share_prunes_to_the_promising_pairs_first(
        monkeypatch, crosses_share):
    # SVT1 on its declared pairs (12). With a stand-in clock on which every stage's search would
    # end past the search share (but the share is not spent yet), stage 2 already searches
    # only Settings.active_pairs pairs; with one on which nothing crosses it, every stage before
    # prune_after_stage searches all of them.
    from mechanisms_under_test import ZOO
    searched = _pairs_searched(monkeypatch)
    monkeypatch.setattr(TimeBudget, "search_spent",
                        lambda self, after=0.0: crosses_share and after > 0)
    monkeypatch.setattr(TimeBudget, "last_size", lambda *args, **kwargs: None)
    r = dpverify.audit(ZOO["svt1"], seconds=60.0, stop_early=False, samples=1 << 14, n_jobs=1,
                       seed=0)
    assert searched[0] == 12
    if crosses_share:
        assert searched[1:] == [Settings().active_pairs] * 2
    else:
        assert searched[1:] == [12, 12]
    assert r.verdict == "pass" and r.epsilon_lower_bound <= 0.1
