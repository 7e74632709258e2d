"""Time budgets (`audit(seconds=...)`): an ordinary audit's stop at its budget, and a
measurement run's size chosen once from a pilot of the mechanism's cost — checked on structure
(which stage certifies, on how many runs, with a stand-in clock or a stand-in pilot), never on
how long a run took."""
import math

import numpy as np
import pytest
from scipy.stats import binom

import dpverify
from dpverify import InvalidClaimError
from dpverify.pipeline import run as run_module
from dpverify.pipeline.schedule import MEASUREMENT_COST, samples_for_seconds
from dpverify.result import BETTING
from mechanisms_under_test.basic import make_laplace


def test_a_budget_buys_the_largest_power_of_two_its_cost_allows():
    per_run = 1e-6   # all inputs side by side, the mechanism alone
    # 10 s buy 10 / (MEASUREMENT_COST · 1e-6) runs per input: the power of two just below
    affordable = 10.0 / (MEASUREMENT_COST * per_run)
    n = samples_for_seconds(10.0, per_run, most=1 << 30, least=1 << 10)
    assert n & (n - 1) == 0 and n <= affordable < 2 * n
    # twice the time buys twice the runs; never past the cap, never under one stage
    assert samples_for_seconds(20.0, per_run, most=1 << 30, least=1 << 10) == 2 * n
    assert samples_for_seconds(10.0, per_run, most=1 << 16, least=1 << 10) == 1 << 16
    assert samples_for_seconds(1e-6, per_run, most=1 << 30, least=1 << 10) == 1 << 10
    assert samples_for_seconds(-1.0, per_run, most=1 << 30, least=1 << 10) == 1 << 10
    # a pilot too fast to time: the cap
    assert samples_for_seconds(10.0, 0.0, most=1 << 20, least=1 << 10) == 1 << 20


def _pilot_costs(monkeypatch, per_run):
    """Stand in for the pilot and the audit's clock: the mechanism costs `per_run` seconds a
    run, and no time passes before the size is chosen, so the whole budget is left whatever
    the machine's load (the stand-in clock is the audit's own; the sampler keeps its)."""
    import time
    from types import SimpleNamespace
    from dpverify import auditing
    frozen = SimpleNamespace(perf_counter=lambda: 0.0, monotonic=time.monotonic)
    for module in (auditing, run_module):   # the audit's start and its time left
        monkeypatch.setattr(module, "time", frozen)
    timed = []

    def seconds_per_run(sampler):
        timed.append(len(sampler.inputs))
        return per_run
    monkeypatch.setattr(run_module, "seconds_per_run", seconds_per_run)
    return timed


def test_a_budgeted_measurement_is_the_measurement_of_the_size_it_buys(monkeypatch):
    """With a stand-in pilot, `seconds=S` chooses its size once, before any stage, and is then
    exactly the measurement run of that size: same stages, same α, same bound, same counts."""
    timed = _pilot_costs(monkeypatch, 1e-6)
    mech = make_laplace(1.0)
    budgeted = dpverify.audit(mech, seconds=10.0, stop_early=False, seed=3, n_jobs=1)
    n = samples_for_seconds(10.0, 1e-6, most=1 << 30, least=1 << 10)
    assert timed == [1] and budgeted.stages[-1].samples_per_side == n < 1 << 22
    fixed = dpverify.audit(mech, samples=n, stop_early=False, seed=3, n_jobs=1)
    assert [s.samples_per_side for s in budgeted.stages] == [s.samples_per_side
                                                             for s in fixed.stages]
    assert budgeted.epsilon_lower_bound == fixed.epsilon_lower_bound <= 1.0
    assert budgeted.witness.count_D == fixed.witness.count_D
    assert budgeted.witness.count_D_prime == fixed.witness.count_D_prime
    assert [s.alpha for s in budgeted.stages][-1] == pytest.approx(1 - budgeted.confidence)


def test_a_budget_never_buys_more_than_the_samples_asked(monkeypatch):
    _pilot_costs(monkeypatch, 1e-12)   # a free mechanism
    r = dpverify.audit(make_laplace(1.0), seconds=10.0, stop_early=False, samples=1 << 14,
                       seed=0, n_jobs=1)
    assert r.stages[-1].samples_per_side == 1 << 14


def test_a_budgeted_measurement_times_the_mechanism_on_runs_apart_from_its_sample():
    """The real pilot: its runs are drawn under a stream of their own and counted in the runs
    the audit spent, and the run certifies once, at its last stage, with all of α."""
    r = dpverify.audit(make_laplace(1.0), seconds=2.0, stop_early=False, seed=0, n_jobs=1)
    fixed = dpverify.audit(make_laplace(1.0), samples=r.stages[-1].samples_per_side,
                           stop_early=False, seed=0, n_jobs=1)
    assert r.epsilon_lower_bound == fixed.epsilon_lower_bound
    assert r.samples > fixed.samples            # the pilot's runs are counted
    assert [s.alpha for s in r.stages[:-1]] == [0.0] * (len(r.stages) - 1)


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
