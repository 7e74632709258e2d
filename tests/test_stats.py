"""The pure statistics against statsmodels and against simulation."""
import math

import numpy as np
import pytest
from scipy.stats import binom
from statsmodels.stats.proportion import proportion_confint

from dpverify import stats


@pytest.mark.parametrize("k,n", [(0, 50), (1, 50), (17, 50), (49, 50), (50, 50), (3, 10**6)])
@pytest.mark.parametrize("level", [0.05, 0.0125])
def test_clopper_pearson_matches_statsmodels(k, n, level):
    low, high = proportion_confint(k, n, alpha=2 * level, method="beta")
    assert stats.cp_lower(k, n, level) == pytest.approx(low, rel=1e-9, abs=1e-15)
    assert stats.cp_upper(k, n, level) == pytest.approx(high, rel=1e-9, abs=1e-15)


def test_clopper_pearson_one_sided_coverage_by_simulation():
    # 20,000 binomial draws: the lower bound may exceed p at most `level` of the time.
    rng = np.random.default_rng(1)
    p, n, level, runs = 0.3, 60, 0.05, 20_000
    k = rng.binomial(n, p, size=runs)
    misses = np.count_nonzero(stats.cp_lower(k, n, level) > p)
    # the allowed count, at the 99.9th percentile of Binomial(runs, level)
    assert misses <= binom.ppf(0.999, runs, level)
    misses_up = np.count_nonzero(stats.cp_upper(k, n, level) < p)
    assert misses_up <= binom.ppf(0.999, runs, level)


def test_epsilon_bound_edges():
    assert stats.epsilon_bound(0.5, 0.5 / math.e) == pytest.approx(1.0)
    assert stats.epsilon_bound(0.0, 0.1) == -math.inf
    assert stats.epsilon_bound(0.2, 0.0) == math.inf
    # with delta the numerator shrinks: ln((0.5 - 0.1) / 0.2)
    assert stats.epsilon_bound(0.5, 0.2, delta=0.1) == pytest.approx(math.log(2.0))
    assert stats.epsilon_bound(0.05, 0.2, delta=0.1) == -math.inf
    assert stats.delta_bound(0.5, 0.1, math.log(2)) == pytest.approx(0.3)


def test_stage_alphas_spend_less_than_alpha_and_favour_the_last_stage():
    a = stats.stage_alphas(0.05, 6)
    assert sum(a) < 0.05
    assert a[-1] == pytest.approx(0.025)
    assert all(x < y for x, y in zip(a, a[1:]))


def test_plug_in_epsilon():
    assert stats.plug_in_epsilon(50, 100, 10, 100) == pytest.approx(math.log(5))
    assert stats.plug_in_epsilon(5, 100, 0, 100) == math.inf
    assert stats.plug_in_epsilon(0, 100, 5, 100) == -math.inf


def test_ratio_test_coverage_with_poisson_sample_sizes():
    """With N ~ Poisson(λ) runs per input, ratio_epsilon_bound exceeds the true ln(p/q) at most
    `level` of the time, and not far less: the test is exact, not merely conservative."""
    rng = np.random.default_rng(7)
    runs, lam, level = 40_000, 20_000, 0.05
    for p, q in [(0.3, 0.2), (0.004, 0.002), (0.6, 0.55)]:
        n_p, n_q = rng.poisson(lam, runs), rng.poisson(lam, runs)
        k_p, k_q = rng.binomial(n_p, p), rng.binomial(n_q, q)
        misses = np.count_nonzero(stats.ratio_epsilon_bound(k_p, k_q, level) > math.log(p / q))
        assert binom.ppf(0.001, runs, 0.8 * level) <= misses <= binom.ppf(0.999, runs, level)


def test_ratio_test_is_tighter_than_two_bounds_for_rare_events():
    # one bound at the event's whole share against two at half of it, on the same counts
    k_p, k_q, n, level = 2_000, 1_500, 1_000_000, 0.0125
    ratio = stats.ratio_epsilon_bound(k_p, k_q, 2 * level)
    two = stats.certified_epsilon(k_p, n, k_q, n, 0.0, level)
    plug_in = math.log(k_p / k_q)
    assert two < ratio < plug_in
    assert plug_in - ratio < 0.75 * (plug_in - two)
    # and the planner, from search counts, picks it only when δ = 0
    assert bool(stats.expected_bound_and_method(200, 10**5, 150, 10**5, n, 0.0, level)[1])
    assert not bool(stats.expected_bound_and_method(200, 10**5, 150, 10**5, n, 1e-6, level)[1])
