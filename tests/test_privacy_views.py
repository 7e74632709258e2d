"""Trade-off points, certified δ(ε), p-values, Rényi claims, composition and group privacy,
checked against exact curves and known true ε (theory.md §1, §3)."""
import math

import numpy as np
import pytest

import dpverify
from dpverify import compose, region
from dpverify.pairs import at_distance
from mechanisms_under_test import ZOO
from mechanisms_under_test.basic import make_laplace

# one worker runs this module, so its module fixture's audits run once (pyproject: loadgroup)
pytestmark = pytest.mark.xdist_group("test_privacy_views")


@pytest.fixture(scope="module")
def laplace_curves():
    return dpverify.audit(make_laplace(1.0), curves=True, seed=1)


def test_laplace_tradeoff_points_lie_on_the_exact_curve_within_their_boxes(laplace_curves):
    c = laplace_curves.curves
    exact = region.laplace_tradeoff(1.0)
    assert len(c.alpha) >= 20 and not any(c.outside)
    for al, ah, bl, bh in zip(c.alpha_low, c.alpha_high, c.beta_low, c.beta_high):
        # the decreasing curve crosses the box [al, ah] × [bl, bh]
        assert exact(al) >= bl - 1e-12 and exact(ah) <= bh + 1e-12


def test_certified_delta_curve_never_exceeds_the_exact_one(laplace_curves):
    c = laplace_curves.curves
    eps = np.asarray(c.epsilons)
    exact = np.where(eps <= 1.0, 1 - np.exp((eps - 1.0) / 2), 0.0)  # theory.md §3
    assert np.all(np.asarray(c.delta_lower) <= exact + 1e-12)
    # and it is close where δ(ε) is large: within 0.02 at ε = 0
    assert c.delta_lower[0] >= exact[0] - 0.02


def test_a_broken_mechanism_has_a_box_wholly_outside_the_region():
    # boxes hold jointly over the whole grid (Bonferroni), so they are wider than the witness's
    # own certificate: measured over a measurement run (SVT5 outputs what D' never does, so its
    # box leaves the region on 2^16 runs already; RNM3's, at the default budget, is below)
    res = dpverify.audit(ZOO["svt5"], curves=True, stop_early=False, samples=1 << 16)
    assert res.verdict == "violation" and any(res.curves.outside)


def test_pvalues_against_epsilon():
    res = dpverify.audit(ZOO["rnm3"], curves=True, stop_early=False)
    assert res.verdict == "violation" and any(res.curves.outside)   # a box wholly outside
    eps, pv = np.asarray(res.curves.epsilons), np.asarray(res.curves.pvalues)
    assert np.all(np.diff(pv) >= -1e-12)                 # larger test ε: weaker evidence
    at_claim = pv[np.argmin(np.abs(eps - res.claimed_epsilon))]
    assert at_claim < 1 - res.confidence                  # the violation, seen as a test
    # a mechanism that is 0.9-DP: its p-value against ε = 1 is large (an exactly tight one
    # would get p < α on a fraction α of seeds, which is what a p-value promises)
    correct = dpverify.audit(make_laplace(0.9, claim=1.0), curves=True, seed=2)
    assert correct.verdict == "pass"
    assert correct.curves.pvalues[np.argmin(np.abs(np.asarray(correct.curves.epsilons) - 1.0))] \
        >= 1 - correct.confidence


def test_region_maths():
    assert region.boundary(0.0, 1.0) == pytest.approx(1.0)
    # the boundary kinks where both inequalities bind: α = (1 − δ)/(1 + e^ε)
    a = 1 / (1 + math.e)
    assert region.boundary(a, 1.0) == pytest.approx(a)
    assert bool(region.box_outside(0.01, 0.5, 1.0))      # 0.01 + e·0.5 ≥ 1 but e·0.01 + .5 < 1
    assert not bool(region.box_outside(0.2, 0.5, 1.0))
    rr = region.randomized_response_tradeoff(1.0)        # binary RR is exactly f_{ε,0}
    alphas = np.linspace(0, 1, 11)
    np.testing.assert_allclose(rr(alphas), region.boundary(alphas, 1.0), atol=1e-12)


def gaussian_rdp(sigma):
    @dpverify.mechanism(rdp=(2.0, 2.0 / (2 * 1.0 ** 2)), pairs=[(0.0, 1.0)])
    def gaussian(data, rng, size):                         # D_2 = α Δ²/(2σ²) = 1 at σ = 1
        return data + rng.normal(0, sigma, size)
    return gaussian


def test_rdp_audits_of_an_exactly_tight_claim_keep_their_false_alarm_rate():
    """Binary randomized response at ε = 1 claimed at exactly its D_2, the two-cell divergence
    of its one informative partition (Mironov 2017): 200 seeded audits may raise at most
    Binomial(200, 0.05)'s 99th percentile of false alarms (a sound audit fails this < 1% of
    the time), and the bounds of the others stay under the truth."""
    from scipy.stats import binom

    from mechanisms_under_test.basic import make_randomized_response
    keep = math.e / (1 + math.e)
    d2 = math.log(keep ** 2 / (1 - keep) + (1 - keep) ** 2 / keep)
    tight = dpverify.mechanism(rdp=(2.0, d2), pairs=[(0, 1)])(
        make_randomized_response(1.0).fn)
    results = [dpverify.audit(tight, samples=1 << 12, seed=s, n_jobs=1) for s in range(200)]
    alarms = sum(r.verdict == "violation" for r in results)
    assert alarms <= binom.ppf(0.99, 200, 0.05), alarms
    assert sorted(r.rho_lower_bound for r in results)[len(results) // 2] > 0.5 * d2


def test_rdp_claims():
    right = dpverify.audit(gaussian_rdp(1.0))
    assert right.verdict == "pass" and 0 < right.rho_lower_bound <= 1.0
    half = dpverify.audit(gaussian_rdp(0.5))               # true D_2 = 4
    assert half.verdict == "violation" and 1.0 < half.rho_lower_bound <= 4.0
    assert right.implied_epsilon == pytest.approx(1 + math.log(0.5) - (math.log(1e-5)
                                                                       + math.log(2)))


def test_sequential_composition_against_the_theorem():
    part = make_laplace(1.0)
    both = compose.sequential(part, make_laplace(1.0))
    assert (both.epsilon, both.delta) == (2.0, 0.0)
    summed = dpverify.audit(both, samples=1 << 20)
    assert summed.verdict == "pass" and summed.epsilon_lower_bound <= 2.0
    alone = dpverify.audit(both, epsilon=part.epsilon, samples=1 << 20)
    assert alone.verdict == "violation" and 1.0 < alone.epsilon_lower_bound <= 2.0


def test_parallel_composition_claim():
    a, b = make_laplace(1.0), make_laplace(0.5)
    par = compose.parallel([a, b], lambda d: (d[0], d[1]),
                           pairs=[((0.0, 0.0), (1.0, 0.0)), ((0.0, 0.0), (0.0, 1.0))])
    assert par.epsilon == 1.0
    assert dpverify.audit(par, samples=1 << 18).verdict == "pass"


def test_group_privacy_pairs():
    lap = make_laplace(1.0)
    pairs = at_distance([(0.0, 2.0)], 2)                   # true ε = 2 on inputs 2 apart
    grouped = dpverify.audit(lap, pairs=pairs, samples=1 << 18)
    assert grouped.claimed_epsilon == 2.0 and grouped.verdict == "pass"
    assert dpverify.audit(lap, pairs=[(0.0, 2.0)], samples=1 << 18).verdict == "violation"
    assert compose.group_claim(0.5, 1e-6, 3) == (1.5, pytest.approx(3 * math.exp(1.0) * 1e-6))


def test_privacy_loss_distribution_for_discrete_outputs():
    from mechanisms_under_test.basic import make_randomized_response
    res = dpverify.audit(make_randomized_response(1.0), curves=True, samples=1 << 18)
    loss = res.curves.privacy_loss
    assert loss is not None and sum(loss["probability"]) == pytest.approx(1.0)
    # binary randomized response at ε = 1: the loss is ±1, up to sampling error
    np.testing.assert_allclose(np.abs(loss["loss"]), 1.0, atol=0.05)


def test_renyi_lower_bound_never_exceeds_the_divergence_inside_its_box():
    from dpverify.renyi import renyi_bernoulli, renyi_lower_bound
    rng = np.random.default_rng(0)
    for _ in range(200):
        p_lo, p_hi = np.sort(rng.uniform(0.01, 0.99, 2))
        q_lo, q_hi = np.sort(rng.uniform(0.001, 0.99, 2))
        alpha = rng.uniform(1.2, 8)
        bound = renyi_lower_bound(p_lo, p_hi, q_lo, q_hi, alpha)
        grid_p, grid_q = np.meshgrid(np.linspace(p_lo, p_hi, 41), np.linspace(q_lo, q_hi, 41))
        assert bound <= renyi_bernoulli(grid_p, grid_q, alpha).min() + 1e-9
        if not (p_lo <= q_hi and q_lo <= p_hi):   # box off the diagonal: a positive bound
            assert bound > 0


def test_rdp_audit_rejects_options_it_does_not_apply():
    with pytest.raises(dpverify.InvalidClaimError, match="RDP"):
        dpverify.audit(gaussian_rdp(1.0), curves=True)


def test_privacy_loss_of_a_discrete_part_is_labelled_as_the_parts(tmp_path):
    """A mixed output's discrete-part model sees a post-processing of the output: its loss
    distribution is a lower view and must not be labelled as the whole output's."""
    from dataclasses import replace
    from mechanisms_under_test.basic import make_randomized_response
    from dpverify.attacks import DiscretePartRatio, KeyLikelihoodRatio
    from dpverify.interfaces.plots import privacy_loss_labels, privacy_loss_plot
    keys, log_ratio = np.array([0, 1]), np.log([2.0, 0.5])
    counts = (np.array([60, 40]), np.array([30, 70]))
    whole = KeyLikelihoodRatio(keys, log_ratio, {}, counts)
    part = DiscretePartRatio(keys, log_ratio, {}, counts, columns=(10, 11),
                             edges=(np.array([0.5]), np.array([0.5])))
    whole_loss, part_loss = whole.privacy_loss(+1), part.privacy_loss(+1)
    assert whole_loss["of"] == "output"
    assert part_loss["of"].startswith("discrete part (output[10, 11]")
    np.testing.assert_allclose(sorted(part_loss["loss"]), np.log([0.4 / 0.7, 0.6 / 0.3]))
    x_whole, title_whole, note_whole = privacy_loss_labels(whole_loss)
    x_part, title_part, note_part = privacy_loss_labels(part_loss)
    assert "M(D) = o" in x_whole and "discrete part" not in title_whole and not note_whole
    assert "d(M(D))" in x_part and "discrete part" in title_part
    assert "output[10, 11]" in note_part and "lower view" in note_part
    # the plot renders with either label (the curves of a real audit, the loss swapped)
    res = dpverify.audit(make_randomized_response(1.0), curves=True, samples=1 << 14)
    privacy_loss_plot(replace(res, curves=replace(res.curves, privacy_loss=part_loss)),
                      tmp_path / "part.png")
    assert (tmp_path / "part.png").stat().st_size > 0
