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


def _coupled_blocks(rng, cells, block, n_blocks, reps):
    """Per-block hits under D and D' for an event whose runs fall in A∩B, A only, B only with
    the probabilities `cells` (the rest in neither), on common random numbers."""
    c = np.array(list(cells) + [1 - sum(cells)])
    counts = rng.multinomial(block, c, size=(reps, n_blocks))
    return counts[..., 0] + counts[..., 1], counts[..., 0] + counts[..., 2]


@pytest.mark.parametrize("cells", [
    (0.0, 0.05, 0.05 * math.exp(-0.1)),   # disjoint: every hit is a disagreement
    (0.45, 0.05, 0.0),                     # nested, as Laplace's half-line on shared noise
])
def test_coupled_bound_coverage_at_the_smallest_blocks_the_engine_allows(cells):
    # The engine certifies coupled only with ≥ 64 blocks, each expected to hold ≥ 50 hits and
    # ≥ 50 disagreeing runs: here exactly 50 (disjoint) or 50 disagreeing runs in 500 hits.
    # 20,000 replications: the bound may exceed the true ratio at most `level` of the time.
    from dpverify.stats import MIN_COUPLED_BLOCKS, MIN_COUPLED_HITS_PER_BLOCK
    rng = np.random.default_rng(7)
    level, reps = 0.1, 20_000
    block = int(round(MIN_COUPLED_HITS_PER_BLOCK / cells[1]))
    true_eps = math.log((cells[0] + cells[1]) / (cells[0] + cells[2]))
    P, Q = _coupled_blocks(rng, cells, block, MIN_COUPLED_BLOCKS, reps)
    misses = np.count_nonzero(stats.coupled_epsilon_bound(P, Q, block, 0.0, level) > true_eps)
    assert misses <= binom.ppf(0.999, reps, level)
    # and it spends most of its level (the quantile is shaded by 5%): it is not vacuous
    assert misses >= binom.ppf(0.001, reps, 0.8 * level)


def test_coupled_bound_is_far_tighter_than_independent_samples_when_runs_agree():
    # Laplace's half-line on shared noise: 45% of runs in both events, 5% in D's only. The
    # coupled bound's gap to the true ε is several times smaller than the one-bound ratio
    # test's on the same hit totals (which treats the inputs' samples as independent).
    rng = np.random.default_rng(3)
    cells, block, n_blocks = (0.45, 0.05, 0.0), 1 << 14, 64
    true_eps = math.log(0.5 / 0.45)
    P, Q = _coupled_blocks(rng, cells, block, n_blocks, 1)
    coupled = stats.coupled_epsilon_bound(P[0], Q[0], block, 0.0, 0.1)
    independent = float(stats.ratio_epsilon_bound(P[0].sum(), Q[0].sum(), 0.1))
    assert coupled <= true_eps
    assert true_eps - coupled < (true_eps - independent) / 3


def test_coupled_bound_makes_no_claim_without_hits():
    blocks_p, none = np.full(64, 40), np.zeros(64)
    # no hit under D': a t-test cannot bound a ratio over nothing (the Clopper–Pearson bounds
    # and support-mismatch report are for that)
    assert stats.coupled_epsilon_bound(blocks_p, none, 1000, 0.0, 0.1) == -math.inf
    # P − δ not above 0
    assert stats.coupled_epsilon_bound(blocks_p, blocks_p, 1000, 0.05, 0.1) == -math.inf
    assert stats.coupled_epsilon_bound(blocks_p[:1], blocks_p[:1], 1000, 0.0, 0.1) == -math.inf


def test_coupled_bound_with_delta_bounds_the_delta_adjusted_ratio():
    # p = 0.3, q = 0.2, δ = 0.05: the bound is on ln((p − δ)/q) = ln 1.25, not ln 1.5
    rng = np.random.default_rng(11)
    P, Q = _coupled_blocks(rng, (0.2, 0.1, 0.0), 1 << 16, 128, 1)
    bound = stats.coupled_epsilon_bound(P[0], Q[0], 1 << 16, 0.05, 0.05)
    assert math.log(1.2) < bound < math.log(1.25)


# ---- paired planning: the variance of a log-ratio estimated on common random numbers ----

def _paired_cells(rng, m, both, p_only, q_only, reps):
    """reps replications of m paired runs: counts in S under both inputs, under D only, under
    D' only (the multinomial of one run's joint outcome)."""
    cells = rng.multinomial(m, [both, p_only, q_only, 1 - both - p_only - q_only], size=reps)
    return cells[:, 0], cells[:, 1], cells[:, 2]


def test_paired_log_ratio_variance_matches_the_spread_of_paired_estimates():
    # p = 0.05, q = 0.04, 0.038 of the runs in S under both: the estimate ln(k_p/k_q) over 4000
    # replications of 20,000 paired runs spreads as the formula says (its +√d + 1 guard puts it
    # a few % high, never low), about 6× less than independent samples' 1/k_p + 1/k_q
    rng = np.random.default_rng(11)
    both, p_only, q_only = _paired_cells(rng, 20_000, 0.038, 0.012, 0.002, 4000)
    k_p, k_q = both + p_only, both + q_only
    spread = np.var(np.log(k_p / k_q))
    planned = stats.paired_log_ratio_variance(k_p, k_q, both).mean()
    assert spread <= planned <= 1.15 * spread
    assert np.mean(1 / k_p + 1 / k_q) > 5 * planned


def test_paired_variance_from_blocks_matches_the_spread_of_paired_estimates():
    # the same runs in 64 blocks of 1000: the batch-means variance, averaged over 2000
    # replications, is at least the estimates' spread and at most its documented inflation
    # (one standard error of a 63-degree-of-freedom variance, +18%) above it
    rng = np.random.default_rng(12)
    reps, blocks = 2000, 64
    both, p_only, q_only = _paired_cells(rng, 1000, 0.038, 0.012, 0.002, reps * blocks)
    b_p = (both + p_only).reshape(reps, blocks)
    b_q = (both + q_only).reshape(reps, blocks)
    spread = np.var(np.log(b_p.sum(1) / b_q.sum(1)))
    planned = np.mean([stats.paired_variance_from_blocks(b_p[r][:, None], b_q[r][:, None])[0]
                       for r in range(reps)])
    assert spread <= planned <= 1.3 * spread
    # an input without a hit: no variance to plan with
    assert np.isinf(stats.paired_variance_from_blocks(np.zeros((8, 1)), np.ones((8, 1)))[0])
