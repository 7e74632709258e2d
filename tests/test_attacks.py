"""Attack internals whose mistakes would silently change which event is certified."""
import numpy as np
import pytest

from dpverify.attacks import BinnedLikelihoodRatio, Candidate, learn_binned_ratio
from dpverify.encoding import encode


def _encoded(x):
    return encode(np.asarray(x), len(x))[0]


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("sign", [1, -1])
def test_interval_form_of_a_binned_event_is_the_same_event(seed, sign):
    rng = np.random.default_rng(seed)
    a = _encoded(rng.laplace(0, 1, 4000))
    b = _encoded(rng.laplace(1, 1, 4000) ** 3 / 4)  # a non-monotone likelihood ratio
    model = learn_binned_ratio(a, b)
    assert isinstance(model, BinnedLikelihoodRatio) and model.intervals(sign, 0.0) is not None
    test = _encoded(np.concatenate([rng.normal(0, 3, 20000), model.coordinate_tables[0][0][1]]))
    for t in np.quantile(sign * model.score(test), [0.05, 0.3, 0.5, 0.8, 0.97]):
        cand = Candidate(0, 0, model, sign, float(t), 0.0, (0, 1, 0, 1))
        slow = sign * model.score(test) >= t
        np.testing.assert_array_equal(cand.hits(test), slow)


def _two_valued(p, log_ratio, m):
    """Scores 1 on an event of rate p under D and p·e^{−log_ratio} under D', 0 elsewhere, with
    the counts exactly at their expectation (no sampling noise)."""
    from dpverify.attacks import Coordinate, ScoredModel
    k_a, k_b = int(round(p * m)), int(round(p * np.exp(-log_ratio) * m))
    return ScoredModel(Coordinate(0), np.sort(np.r_[np.zeros(m - k_a), np.ones(k_a)]),
                       np.sort(np.r_[np.zeros(m - k_b), np.ones(k_b)]), m, m)


def test_pair_ranking_prefers_a_rare_strong_event_to_a_frequent_weak_one():
    """SVT1's best pair has its best event on 2% of runs at log-ratio 0.0885; other pairs have
    events on 13% at 0.05. At the final size (2^26) the first certifies about 0.085, the second
    about 0.049. Measured on a stage-5 selection half (87k runs per input), pairs must be ranked
    that way even though the rare event's rate is the less precisely known."""
    from dpverify.attacks import best_events
    m, n, n_final, level = 87_296, 1 << 22, 1 << 26, 0.05 / 4
    rare = max(c.potential for c in best_events(_two_valued(0.0224, 0.0885, m), 0, n, 0.0,
                                                level, n_final))
    frequent = max(c.potential for c in best_events(_two_valued(0.13, 0.05, m), 1, n, 0.0,
                                                    level, n_final))
    assert rare > frequent


def test_pair_ranking_is_not_taken_in_by_a_far_tail_with_a_few_hits():
    """A threshold with 5 hits under one input and none under the other promises nearly any
    bound once shrunk by only one standard error; it must not outrank a solid event (13% of
    runs at log-ratio 0.05)."""
    from dpverify.attacks import _potential
    m, n_final, level = 87_296, 1 << 26, 0.05 / 4
    tail = _potential(np.array([5]), m, np.array([0]), m, n_final, 0.0, level)
    solid = _potential(np.array([11_349]), m, np.array([10_795]), m, n_final, 0.0, level)
    assert solid > 0.03
    assert tail < solid
