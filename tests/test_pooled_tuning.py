"""Tuning counts pooled over the stages that counted a tracked grid (docs/method.md, "Time
budgets"): a shrunk tuning stage adds to the stage before's counts instead of replacing them."""
import numpy as np

from dpverify.attacks import Tuning, pooled_tuning
from dpverify.pipeline import Settings, audit_with_settings
from dpverify.pipeline import run as run_module
from mechanisms_under_test.basic import make_laplace

GRID = np.array([0.5, 1.0, 2.0])


def test_counts_of_the_same_grid_add_up():
    earlier = Tuning(GRID, np.array([40, 20, 5]), np.array([30, 10, 2]), 1000, 1000)
    fresh = Tuning(GRID.copy(), np.array([160, 80, 21]), np.array([120, 41, 7]), 4000, 4000)
    pooled = pooled_tuning(earlier, fresh)
    assert pooled.k_p.tolist() == [200, 100, 26] and pooled.k_q.tolist() == [150, 51, 9]
    assert (pooled.m_p, pooled.m_q) == (5000, 5000)
    assert pooled.variance is None


def test_a_paired_variance_shrinks_with_the_hits_pooled():
    v = np.array([0.02, 0.05, 0.4])
    earlier = Tuning(GRID, np.array([40, 20, 5]), np.array([30, 10, 2]), 1000, 1000, v * 3)
    fresh = Tuning(GRID, np.array([120, 60, 15]), np.array([90, 30, 6]), 3000, 3000, v)
    # a quarter and three quarters of the hits: (1/4)²·3v + (3/4)²·v = 3v/4
    np.testing.assert_allclose(pooled_tuning(earlier, fresh).variance, v * 0.75)
    # an earlier sample without a hit at a threshold leaves the fresh estimate there
    empty = earlier._replace(k_p=np.array([40, 20, 0]), k_q=np.array([30, 10, 0]),
                             variance=np.array([0.06, 0.15, np.inf]))
    assert pooled_tuning(empty, fresh).variance[2] == v[2]


def test_paired_and_independent_counts_are_not_mixed():
    # independent counts would add their Poisson noise to a paired estimate: the fresh counts
    # are kept alone, whichever of the two is paired
    v = np.array([0.02, 0.05, 0.4])
    paired = Tuning(GRID, np.array([120, 60, 15]), np.array([90, 30, 6]), 3000, 3000, v)
    independent = Tuning(GRID, np.array([40, 20, 5]), np.array([30, 10, 2]), 1000, 1000)
    assert pooled_tuning(independent, paired) is paired
    assert pooled_tuning(paired, independent) is independent


def test_another_grid_or_no_earlier_counts_keep_the_fresh_ones():
    fresh = Tuning(GRID, np.array([160, 80, 21]), np.array([120, 41, 7]), 4000, 4000)
    assert pooled_tuning(None, fresh) is fresh
    other = Tuning(GRID + 0.1, np.array([1, 1, 1]), np.array([1, 1, 1]), 10, 10)
    assert pooled_tuning(other, fresh) is fresh


def test_the_last_stage_is_tuned_on_every_tuning_stage_before_it(monkeypatch):
    # Search converges at stage 2; stages 2 and 3 (2^12 and 2^14 runs) count the tracked grids.
    # Before the last stage the tracked candidates' counts cover more runs than stage 3 alone
    # drew: stage 2's counts were added, not dropped.
    seen = []
    original = run_module.carry_over

    def watch(tracked, *args, **kw):
        seen.append([c.tuning.m_p for c in tracked if c.tuning is not None])
        return original(tracked, *args, **kw)

    monkeypatch.setattr(run_module, "carry_over", watch)
    converges_early = Settings(prune_after_stage=2, search_precision=0.1)
    r = audit_with_settings(make_laplace(1.0), converges_early, stop_early=False,
                            samples=1 << 16, n_jobs=1, seed=3)
    assert [s.samples_per_side for s in r.stages] == [1 << 10, 1 << 12, 1 << 14, 1 << 16]
    last_tuned = seen[-1]
    assert last_tuned and max(last_tuned) > 1 << 14
    assert max(last_tuned) <= (1 << 12) + (1 << 14) + (1 << 10)
