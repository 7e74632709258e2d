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
