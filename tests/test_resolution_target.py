"""audit(resolution=): a pass ends once its resolution reaches the target, sized from the runs
before its last stage (docs/method.md, "Passes that stop at the resolution asked")."""
from __future__ import annotations

import math

import pytest

import dpverify
from dpverify.errors import InvalidClaimError
from dpverify.interfaces.cli import main
from dpverify.pipeline.schedule import RESOLUTION_ROUNDING, resolution_size
from dpverify.stats import detectable_epsilon
from mechanisms_under_test.basic import make_laplace, make_randomized_response


def test_a_correct_laplace_passes_at_the_resolution_asked_in_fewer_runs():
    """Laplace at its exact ε = 1 with resolution=1.1: once search has converged, the last
    stage is sized for the target instead of the budget, so the pass reaches 1.1 in a fifth of
    the default's runs or fewer. The bound stays below the true ε."""
    mech = make_laplace(1.0)
    res = dpverify.audit(mech, resolution=1.1, n_jobs=1)
    default = dpverify.audit(mech, n_jobs=1)
    assert res.verdict == "pass" and res.conclusive
    assert res.resolution_target == pytest.approx(1.1)
    assert res.target_reached and res.resolution <= 1.1
    assert res.epsilon_lower_bound <= 1.0
    assert "resolution target ε ≤ 1.1: reached" in res.summary()
    assert res.samples < default.samples / 5
    assert res.stages[-1].samples_per_side < default.stages[-1].samples_per_side / 100


def test_a_coarser_target_gets_a_smaller_last_stage_and_reaches_its_target():
    """The last stage is the smallest that reaches the target: asking 2 × the claim gets a
    smaller last stage than asking 1.1 ×, and each reaches what it asked on most seeds."""
    mech = make_randomized_response(1.0)
    coarse = [dpverify.audit(mech, resolution=2.0, seed=s, n_jobs=1) for s in range(5)]
    fine = [dpverify.audit(mech, resolution=1.1, seed=s, n_jobs=1) for s in range(5)]
    assert all(c.stages[-1].samples_per_side < f.stages[-1].samples_per_side
               for c, f in zip(coarse, fine))
    assert sum(r.target_reached for r in coarse) >= 4 and sum(r.target_reached for r in fine) >= 4
    assert all(r.verdict == "pass" for r in coarse + fine)


@pytest.mark.parametrize("make, claim", [(make_laplace, 0.5), (make_randomized_response, 0.6)])
def test_a_violation_inside_the_target_is_still_caught(make, claim):
    """A mechanism with true ε = 1 claimed at `claim`: a target of 1.1 × the claim lies well
    under the true ε, so the sized pass must not stop before catching it (seeds 0–4)."""
    mech = make(1.0)
    for seed in range(5):
        res = dpverify.audit(mech, epsilon=claim, resolution=1.1, seed=seed, n_jobs=1)
        assert res.verdict == "violation", seed
        assert claim < res.epsilon_lower_bound <= 1.0


def test_the_size_is_the_smallest_on_its_grid_that_reaches_the_target():
    """`resolution_size` against the resolution formula itself: the size returned reaches 1.1
    on an event of mass 0.5, the grid step below it does not; a target no size reaches gives
    None."""
    def reaches(n):
        return detectable_epsilon(0.5, n, n, 1.0, 0.0, 0.01) <= 1.1
    size = resolution_size(reaches, 1024, 1 << 22)
    assert size % RESOLUTION_ROUNDING == 0 and reaches(size)
    assert not reaches(int(size / 2 ** 0.25) - RESOLUTION_ROUNDING)
    assert resolution_size(lambda n: False, 1024, 1 << 16) is None
    assert resolution_size(lambda n: n >= 1 << 16, 1024, 1 << 16) == 1 << 16


@pytest.mark.parametrize("options, words", [
    (dict(resolution=1.0), "> 1"), (dict(resolution="fine"), "> 1"),
    (dict(resolution=math.inf), "> 1"),
    (dict(resolution=1.1, stop_early=False), "stop_early=False"),
    (dict(resolution=1.1, zcdp=0.5), "resolution="),
])
def test_a_bad_target_is_refused_before_any_run(options, words):
    @dpverify.mechanism(epsilon=1.0, pairs=[(0.0, 1.0)])
    def never(data, rng, size):
        raise AssertionError("must not run")
    with pytest.raises(InvalidClaimError) as caught:
        dpverify.audit(never, **options)
    assert words in str(caught.value)


def test_the_cli_takes_a_resolution_target(capsys):
    code = main(["audit", "mechanisms_under_test.basic:laplace", "--resolution", "1.2", "--seed", "1",
                 "--jobs", "1"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "resolution target ε ≤ 0.12: reached" in out  # 1.2 × the claimed 0.1


def test_a_target_out_of_the_budgets_reach_runs_the_budget_and_says_so():
    """resolution=1.02 needs far more than 4,096 runs per input: the schedule runs to its end
    unchanged (the same runs as without a target) and the pass says the target was missed."""
    mech = make_laplace(1.0)
    res = dpverify.audit(mech, resolution=1.02, samples=1 << 12, n_jobs=1)
    plain = dpverify.audit(mech, samples=1 << 12, n_jobs=1)
    assert res.verdict == "pass" and res.target_reached is False
    assert res.samples == plain.samples and res.resolution == plain.resolution > 1.02
    assert "resolution target ε ≤ 1.02: NOT reached" in res.summary()
    assert res.as_dict()["target_reached"] is False and plain.as_dict()["target_reached"] is None


def test_a_target_never_cuts_the_search_short_of_a_broken_mechanisms_event():
    """RNM3 (true ε = 0.25 at a claim of 0.1, docs/theory.md §4.2) with resolution=1.1: its
    event ranks high only after the first stages, so a target that ended search there let it
    pass. Sizing waits for search to converge: it is flagged, with its bound below the truth."""
    from mechanisms_under_test import TRUE_EPSILON, ZOO
    res = dpverify.audit(ZOO["rnm3"], resolution=1.1, seed=0)
    assert res.verdict == "violation"
    assert 0.1 < res.epsilon_lower_bound <= TRUE_EPSILON["rnm3"]
