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
