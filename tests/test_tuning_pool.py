"""Tuning counts of one grid, counted at several stages, are pooled into one tuning sample
(docs/method.md, "Planning a threshold"): counts and runs add, and the paired variance of
ln(K_p/K_q) is that of the pooled sample."""
import numpy as np
import pytest

import dpverify
from dpverify.attacks import Tuning
from dpverify.attacks import planning
from dpverify.stats import paired_variance_from_blocks
from mechanisms_under_test import ZOO


def _paired_blocks(rng, blocks: int, runs: int, p: float, q: float) -> tuple:
    """Block hit counts of a paired sample: one uniform per run decides both inputs (hit under
    P when u < p, under Q when u < q), so the two counts are strongly correlated."""
    both, p_only, _ = rng.multinomial(runs, [q, p - q, 1 - p], size=blocks).T
    return (both + p_only)[:, None], both[:, None]


def _tuning(rng, blocks: int, runs: int, p: float, q: float) -> Tuning:
    b_p, b_q = _paired_blocks(rng, blocks, runs, p, q)
    m = blocks * runs
    return Tuning(np.array([0.0]), b_p.sum(axis=0), b_q.sum(axis=0), m, m,
                  paired_variance_from_blocks(b_p, b_q))


def test_pooled_variance_is_the_pooled_samples_variance():
    # two stages of 64 paired blocks, the second 3× larger; over 2000 replications the
    # pooled estimate must match the spread of ln(K_p/K_q) of the pooled counts (the block
    # estimate is inflated by one standard error, so it may sit up to ~20% above). Averaging
    # the two variances instead of weighting by m² would be 2.7× too large.
    rng = np.random.default_rng(7)
    p, q = 0.02, 0.015
    logs, estimates = [], []
    for _ in range(2000):
        pooled = _tuning(rng, 64, 1000, p, q).pooled_with(_tuning(rng, 64, 3000, p, q))
        assert pooled.m_p == pooled.m_q == 64 * 4000
        logs.append(np.log(pooled.k_p[0] / pooled.k_q[0]))
        estimates.append(pooled.variance[0])
    ratio = np.mean(estimates) / np.var(logs, ddof=1)
    assert 0.95 < ratio < 1.35


def test_a_threshold_without_hits_in_one_sample_takes_the_others_variance_scaled():
    first = Tuning(np.array([0.0, 1.0]), np.array([50, 0]), np.array([40, 0]), 1000, 1000,
                   np.array([0.004, np.inf]))
    later = Tuning(np.array([0.0, 1.0]), np.array([150, 9]), np.array([120, 3]), 3000, 3000,
                   np.array([0.002, 0.5]))
    pooled = first.pooled_with(later)
    # both finite: (1000²·0.004 + 3000²·0.002) / 4000²; one finite: 3000·0.5 / 4000
    assert pooled.variance == pytest.approx([(4e3 + 18e3) / 16e6, 0.375])
    assert list(pooled.k_p) == [200, 9] and list(pooled.k_q) == [160, 3]
    with pytest.raises(ValueError, match="one threshold grid"):
        first.pooled_with(later._replace(thresholds=np.array([0.0, 2.0])))
    # a sample counted without pairing leaves no paired variance to pool
    assert first.pooled_with(later._replace(variance=None)).variance is None


def test_a_grid_counted_at_two_stages_is_retuned_on_both(monkeypatch):
    # a fixed-sample audit counts its tracked grids at every stage: the last stage's
    # thresholds are chosen on the grid counts of the stages before it together, more runs
    # than the 65,536-run stage before it alone
    seen = []
    original = planning.retune

    def spy(cand, tuning, n_certify, *args, **kwargs):
        seen.append((n_certify, Tuning(*tuning).m_p))
        return original(cand, tuning, n_certify, *args, **kwargs)

    monkeypatch.setattr("dpverify.pipeline.selection.retune", spy)
    dpverify.audit(ZOO["laplace"], samples=1 << 18, seed=0, stop_early=False)
    last = [m for n, m in seen if n == 1 << 18]
    assert last and max(last) > 65536
