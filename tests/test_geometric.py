"""The two-sided geometric mechanism against its exact distribution P(z) ∝ e^{−ε|z|}."""
import math

import numpy as np

import dpverify
from mechanisms_under_test.basic import make_geometric


def test_geometric_noise_has_the_discrete_laplace_law():
    eps, n = 0.7, 200_000
    z = make_geometric(eps).fn(0, np.random.default_rng(3), n)
    a = math.exp(-eps)
    p0 = (1 - a) / (1 + a)
    for value, prob in [(0, p0), (1, p0 * a), (-1, p0 * a), (3, p0 * a ** 3)]:
        observed = np.count_nonzero(z == value) / n
        assert abs(observed - prob) <= 4 * math.sqrt(prob * (1 - prob) / n)


def test_geometric_passes_at_its_epsilon_and_fails_below():
    mech = make_geometric(1.0)
    assert dpverify.audit(mech, samples=1 << 16).verdict == "pass"
    assert dpverify.audit(mech, epsilon=0.8, samples=1 << 16).verdict == "violation"
