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
