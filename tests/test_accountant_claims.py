"""Curves read from accountants and libraries as claims (dpverify.libraries.accountants, the
OpenDP adapter's whole_profile=True), and DP-SGD's batch sampling audited against the Poisson
accountant's curve (mechanisms_under_test/dpsgd.py; reports/dpsgd.md).

False-alarm rate: each pass asserted here is a mechanism that meets its claim, audited at
confidence 0.95 (seeded; the rate is measured in reports/calibration.md and reports/dpsgd.md).
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

dp_accounting = pytest.importorskip("dp_accounting")

import dpverify  # noqa: E402
from dpverify.errors import InvalidClaimError  # noqa: E402
from dpverify.fdp import gdp_profile  # noqa: E402
from dpverify.libraries.accountants import dp_accounting_profile  # noqa: E402
from mechanisms_under_test.dpsgd import (accountant_claim, make_dpsgd,  # noqa: E402
                                         neighbour_pairs)


def test_a_gaussian_events_profile_is_the_gaussians_exact_profile():
    """dp_accounting's PLD for one Gaussian step (σ = 1, sensitivity 1) against the closed
    form of 1-GDP: equal up to the accountant's pessimistic discretisation, never below."""
    claim = dp_accounting_profile(dp_accounting.GaussianDpEvent(1.0))
    eps = np.array([0.0, 0.5, 1.0, 2.0, 3.0])
    exact = gdp_profile(1.0, eps)
    read = np.array([claim.profile(e) for e in eps])
    assert np.all(read >= exact - 1e-9)
    assert np.allclose(read, exact, rtol=0.02, atol=1e-6)


def test_the_claim_is_the_accountants_own_figure():
    """Two configurations: the claim's ε at δ = 1e-5 is the accountant's get_epsilon, to the
    grid's step (0.005; the grid's ε is the least with δ(ε) ≤ 1e-5, so never below)."""
    from dp_accounting.pld import pld_privacy_accountant
    for sigma, steps in ((1.0, 10), (3.0, 10)):
        step = dp_accounting.PoissonSampledDpEvent(1 / steps,
                                                   dp_accounting.GaussianDpEvent(sigma))
        accountant = pld_privacy_accountant.PLDAccountant()
        accountant.compose(dp_accounting.SelfComposedDpEvent(step, steps))
        claim = dp_accounting_profile(accountant)
        assert 0 <= claim.epsilon_at(1e-5) - accountant.get_epsilon(1e-5) <= 0.005 + 1e-9


def test_an_accountant_that_cannot_account_for_the_event_says_so():
    with pytest.raises(InvalidClaimError, match="cannot account"):
        dp_accounting_profile(dp_accounting.UnsupportedDpEvent())
    with pytest.raises(InvalidClaimError, match="accountant must be"):
        dp_accounting_profile(dp_accounting.GaussianDpEvent(1.0), accountant="moments")


def test_an_rdp_accountant_gives_a_looser_curve_that_a_gaussian_also_meets():
    claim = dp_accounting_profile(dp_accounting.GaussianDpEvent(1.0), accountant="rdp")
    assert claim.epsilon_at(1e-5) > dp_accounting_profile(
        dp_accounting.GaussianDpEvent(1.0)).epsilon_at(1e-5)
    mech = dpverify.mechanism(profile=claim, pairs=[(0.0, 1.0)])(
        lambda x, rng, size: x + rng.normal(0, 1.0, size))
    assert dpverify.audit(mech, seed=0).verdict == "pass"


def test_a_gaussian_step_with_half_the_noise_breaks_its_accountants_curve():
    """A deliberately broken configuration: the noise set wrong by hand (σ/2), the claim kept."""
    claim = dp_accounting_profile(dp_accounting.GaussianDpEvent(1.0))
    mech = dpverify.mechanism(profile=claim, pairs=[(0.0, 1.0)])(
        lambda x, rng, size: x + rng.normal(0, 0.5, size))
    result = dpverify.audit(mech, seed=0)
    assert result.verdict == "violation"
    # the certified test is below the 1-GDP curve, computed here independently
    assert result.beta < norm.cdf(norm.isf(result.alpha) - 1.0)


# ------------------------------------------------------------------------------ DP-SGD ---

def test_dpsgd_pairs_add_one_example():
    for with_it, without in neighbour_pairs(steps=10, batch=4):
        assert len(with_it) == len(without) + 1 == 40
        assert sorted(with_it)[:-1] == sorted(without) or sorted(with_it)[1:] == sorted(without)


def test_dpsgd_poisson_meets_the_accountants_curve_and_the_shuffled_epoch_does_not():
    claim = accountant_claim()
    poisson = dpverify.audit(make_dpsgd("poisson", claim=claim), seed=0, samples=1 << 16)
    assert poisson.verdict == "pass" and poisson.conclusive
    shuffled = dpverify.audit(make_dpsgd("shuffled", claim=claim), seed=0, samples=1 << 16)
    assert shuffled.verdict == "violation"
    eps, certified, claimed = shuffled.worst_epsilon
    assert certified > claimed
    # the witness is the pair whose short last batch shows (others −1), on the last release
    assert shuffled.witness.D_prime[0] == -1.0 and "output[9]" in shuffled.witness.event


def test_one_step_shuffled_is_poisson_with_rate_one_and_passes():
    """With T = 1 both versions are one full batch: the gap must close."""
    assert dpverify.audit(make_dpsgd("shuffled", steps=1, noise=1.0), seed=0).verdict == "pass"


def test_the_shuffled_loader_refuses_a_dataset_that_does_not_fit_its_epoch():
    mech = make_dpsgd("shuffled", steps=10, batch=4)
    with pytest.raises(ValueError, match="needs 37 to 40 examples"):
        mech.fn(tuple([0.0] * 30), np.random.default_rng(0), 4)


# ------------------------------------------------------------------------------ OpenDP ---

def test_an_opendp_gaussian_passes_its_whole_profile_and_half_its_scale_is_flagged():
    dp = pytest.importorskip("opendp.prelude")
    from dpverify.libraries.opendp import from_measurement
    dp.enable_features("contrib")

    def gaussian(scale):
        return dp.m.make_gaussian(dp.atom_domain(T=float, nan=False),
                                  dp.absolute_distance(T=float), scale=scale)
    good = from_measurement(gaussian(1.0), d_in=1.0, whole_profile=True)
    profile = dp.c.make_zCDP_to_approxDP(gaussian(1.0)).map(1.0)
    assert good.curve.profile(1.0) == pytest.approx(profile.delta(1.0), rel=1e-9)
    # the least ε of the claim's grid (steps of 0.04 past ε = 4) at which δ ≤ 1e-6
    assert 0 <= good.curve.epsilon_at(1e-6) - profile.epsilon(1e-6) <= 0.04
    # a worker process gets the claim as its values on the grid (OpenDP's profile object
    # cannot be pickled)
    import pickle
    moved = pickle.loads(pickle.dumps(good.curve))
    assert moved.function is None and moved.epsilon_at(1e-6) == good.curve.epsilon_at(1e-6)
    pair = [(0.0, 1.0)]
    passed = dpverify.audit(good, pairs=pair, samples=1 << 12, seed=0)
    assert passed.verdict == "pass"
    halved = from_measurement(gaussian(0.5), d_in=1.0)
    flagged = dpverify.audit(halved, profile=good.curve, pairs=pair, samples=1 << 12, seed=0)
    assert flagged.verdict == "violation"
    assert math.isfinite(flagged.epsilon_lower_bound)
