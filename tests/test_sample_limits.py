"""scripts/sample_limits.py: the exact probabilities it computes agree with the zoo's SVT4 run on
samples and with the zoo's own figure for its pairs, and its expected bound behaves as a lower
bound must (below the log-ratio, rising with the runs)."""
import math
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))

from mechanisms_under_test import ZOO  # noqa: E402
from mechanisms_under_test.svt import EPSILON_ON_PAIRS  # noqa: E402


def test_svt4_best_event_reaches_the_zoos_figure_for_its_pairs():
    import sample_limits
    (_, p, q), _ = sample_limits.svt4_probabilities()
    assert math.log(p / q) == pytest.approx(EPSILON_ON_PAIRS["svt4"], abs=5e-4)


@pytest.mark.parametrize("event", [0, 1])
def test_svt4_probabilities_match_the_mechanisms_own_frequencies(event):
    import sample_limits
    label, other, bottoms = sample_limits.SVT4_EVENTS[event]
    ones = (1.0,) * 10
    pattern = np.array([0] * bottoms + [1] + [-1] * (9 - bottoms))
    n = 1 << 20
    for queries in (ones, other):
        exact = sample_limits.svt4_probability(queries, bottoms)
        outputs = ZOO["svt4"].fn(np.array(queries), np.random.default_rng(7), n)
        seen = np.count_nonzero((outputs == pattern).all(axis=1)) / n
        assert abs(seen - exact) < 4 * math.sqrt(exact * (1 - exact) / n), (label, queries)


def test_expected_bound_stays_below_the_log_ratio_and_rises_with_the_runs():
    import sample_limits
    (_, p, q), _ = sample_limits.svt4_probabilities()
    bounds = [sample_limits.expected_bound(p, q, n, 0.1 / 22) for n in (1e6, 1e7, 1e8)]
    assert bounds[0] < bounds[1] < bounds[2] < math.log(p / q)
    needed = sample_limits.runs_to_reach(0.172, lambda n: sample_limits.expected_bound(
        p, q, n, 0.1 / 22))
    assert sample_limits.expected_bound(p, q, 0.9 * needed, 0.1 / 22) < 0.172
    assert sample_limits.expected_bound(p, q, 1.1 * needed, 0.1 / 22) > 0.172


def test_pass_chance_follows_the_scatter_of_the_coupled_certificate_on_rnm3():
    # RNM3's best half-line drawn as the audit draws it (both inputs on the same noise, in the
    # audit's blocks) and certified by the engine's coupled t-test, 30 times: the bounds must
    # scatter about the expected figure with the standard error pass_chance assumes, and a
    # target one standard error below it must be reached about Φ(1) = 84% of the time
    import sample_limits
    from dpverify.sampling import BATCHED_CHUNK_SIZE
    from dpverify.stats import coupled_block_size, coupled_epsilon_bound
    n, alpha, reps = 1 << 20, 0.1 / 22, 30
    t = sample_limits.best_rnm3(n, alpha)[1]
    p, q = sample_limits.rnm3_probabilities(t)
    expected = sample_limits.expected_bound(p, q, n, alpha)
    se = math.sqrt((1 / q - 1 / p) / n)
    block = coupled_block_size(n, BATCHED_CHUNK_SIZE)
    rng = np.random.default_rng(3)
    hits_p, hits_q = np.empty((reps, n // block)), np.empty((reps, n // block))
    for r in range(reps):
        top = rng.laplace(0.0, 20.0, size=(n, 5)).max(axis=1)  # RNM3 on (0, …, 0)
        hits_p[r] = (top <= t).reshape(-1, block).sum(axis=1)
        hits_q[r] = (top + 1 <= t).reshape(-1, block).sum(axis=1)  # on (1, …, 1), same noise
    bounds = coupled_epsilon_bound(hits_p, hits_q, block, 0.0, alpha)
    assert abs(bounds.mean() - expected) < 3 * se / math.sqrt(reps)
    assert 0.7 < bounds.std(ddof=1) / se < 1.4
    chance = sample_limits.pass_chance(p, q, n, alpha, expected - se)
    assert chance == pytest.approx(0.841, abs=1e-3)
    assert abs(np.mean(bounds >= expected - se) - chance) < 3 * math.sqrt(0.841 * 0.159 / reps)
