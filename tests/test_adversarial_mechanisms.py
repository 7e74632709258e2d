"""The adversarial suite's mechanisms meet their claims exactly: a false alarm counted on them in
reports/adversarial.md is a false alarm, not a broken mechanism."""
import math

import numpy as np
import pytest

import dpverify
from mechanisms_under_test import adversarial
from mechanisms_under_test.basic import gaussian_delta


def test_mixture_delta_of_one_gaussian_is_the_gaussians_exact_delta():
    """With a single σ the mixture is the Gaussian mechanism, whose δ(ε) is in closed form
    (theory.md §3.2): the quadrature must reproduce it."""
    for sigma, eps in ((0.5, 1.0), (1.0, 0.5), (3.0, 0.1)):
        assert adversarial.mixture_delta(eps, [sigma], [1.0]) == pytest.approx(
            gaussian_delta(eps, 1.0 / sigma), rel=1e-8, abs=1e-12)


def test_mixture_delta_is_below_the_mixture_of_the_deltas():
    """Joint convexity of the hockey-stick divergence: δ_mix(ε) ≤ Σ w_i δ_i(ε), strictly here."""
    sigmas, eps = (0.5, 1.0, 3.0), 1.0
    mixed = adversarial.mixture_delta(eps, sigmas, (1, 1, 1))
    separate = np.mean([gaussian_delta(eps, 1.0 / s) for s in sigmas])
    assert 0 < mixed < separate


def test_the_rare_atom_has_its_stated_rates():
    mech = adversarial.make_rare_atom(1.0, atom=1e-3)
    n = 2_000_000
    on_d = np.mean(mech.fn(0, np.random.default_rng(1), n) == adversarial.ATOM)
    on_d_prime = np.mean(mech.fn(1, np.random.default_rng(2), n) == adversarial.ATOM)
    # 5 standard errors: a wrong rate (say e^{-0.5} instead of e^{-1}) is far outside
    assert abs(on_d - 1e-3) < 5 * math.sqrt(1e-3 / n)
    assert abs(on_d_prime - 1e-3 / math.e) < 5 * math.sqrt(1e-3 / math.e / n)


def test_the_unaligned_laplace_draws_different_noise_from_one_seed():
    mech = adversarial.make_unaligned_laplace(1.0)
    a = mech.fn(0, np.random.default_rng(5), 1000)
    b = mech.fn(1, np.random.default_rng(5), 1000) - 1.0
    assert np.corrcoef(a, b)[0, 1] < 0.2


@pytest.mark.parametrize("make", [adversarial.make_rare_atom,
                                  adversarial.make_gaussian_scale_mixture,
                                  adversarial.make_unaligned_laplace])
def test_each_passes_at_its_claim_and_is_flagged_at_a_fifth_of_it(make):
    """Each mechanism's claim is its truth: audited at a fifth of it the audit flags it, at its
    own claim (seed 0, confidence 0.999) it does not."""
    mech = make(1.0)
    assert dpverify.audit(mech, samples=1 << 18, seed=0, n_jobs=1,
                          confidence=0.999).verdict == "pass"
    assert dpverify.audit(mech, epsilon=0.2, samples=1 << 18, seed=0,
                          n_jobs=1).verdict == "violation"
