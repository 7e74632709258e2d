"""Curve claims (dpverify.fdp; docs/theory.md §9): the maths against independent formulas, the
claim's checks, and audits of mechanisms whose true curve is known, tight and broken.

False-alarm rate: each pass asserted here is an audit of a mechanism that meets its claim, at
confidence 0.95, so it fails by chance with probability ≤ 0.05 (seeded: the outcome is fixed);
the rate itself is measured on 500 seeds per curve by scripts/calibration.py.
"""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import integrate
from scipy.optimize import brentq
from scipy.stats import norm

import dpverify
from dpverify.errors import InvalidClaimError
from dpverify.fdp import (audit_curve, delta_lower, epsilon_lower_at, gdp_claim, gdp_mu_lower,
                          gdp_profile, profile_claim, profile_tradeoff, tradeoff_claim,
                          tradeoff_profile)
from dpverify.region import laplace_tradeoff, randomized_response_tradeoff
from dpverify.tradeoff import EPSILON_GRID


def gaussian(sigma, claim):
    @dpverify.mechanism(pairs=[(0.0, 1.0)], name=f"gaussian_sigma{sigma:g}", **claim)
    def mech(x, rng, size):
        return x + rng.normal(0.0, sigma, size)
    return mech


def laplace(scale, claim):
    @dpverify.mechanism(pairs=[(0.0, 1.0)], name=f"laplace_b{scale:g}", **claim)
    def mech(x, rng, size):
        return x + rng.laplace(0.0, scale, size)
    return mech


def randomized_response(epsilon, claim):
    keep = math.exp(epsilon) / (1 + math.exp(epsilon))

    @dpverify.mechanism(pairs=[(0, 1)], name=f"rr_eps{epsilon:g}", **claim)
    def mech(x, rng, size):
        return np.where(rng.random(size) < keep, x, 1 - x)
    return mech


# -- the maths ---------------------------------------------------------------------------------

def test_gdp_profile_is_the_privacy_loss_integral():
    """δ(ε) = E_P[(1 − e^{ε − L})₊] with L ~ N(μ²/2, μ²) the Gaussian's privacy loss,
    integrated numerically, against the closed form."""
    mu = 1.3
    for eps in (0.0, 0.5, 2.0, 4.0):
        value, _ = integrate.quad(lambda l: max(0.0, 1 - math.exp(eps - l))
                                  * norm.pdf(l, mu * mu / 2, mu), eps, 40)
        assert gdp_profile(mu, eps) == pytest.approx(value, rel=1e-6, abs=1e-12)


def test_profile_and_tradeoff_conversions_agree_with_each_other():
    """G_μ read as a profile on an α grid, and that profile read back as a trade-off on the ε
    grid, stay within a hair of G_μ and never above it (both conversions only lose)."""
    mu = 1.0
    eps = np.linspace(0, 6, 301)
    from_curve = tradeoff_profile(lambda a: norm.cdf(norm.isf(a) - mu), eps)
    exact = gdp_profile(mu, eps)
    assert np.all(from_curve <= exact + 1e-12)
    assert np.max(exact - from_curve) < 2e-3
    alpha = np.linspace(0, 1, 201)
    back = profile_tradeoff(eps, exact, alpha)
    g = norm.cdf(norm.isf(alpha) - mu)
    assert np.all(back <= g + 1e-12)
    assert np.max(g - back) < 5e-3


def test_certified_mu_of_an_exact_gaussian_box_is_mu():
    """A threshold test on N(0,1) vs N(μ,1) at any threshold has Φ⁻¹(p) − Φ⁻¹(q) = μ."""
    mu = 0.7
    for t in (-1.0, 0.0, 1.5):
        p, q = norm.sf(t - mu), norm.sf(t)
        assert float(gdp_mu_lower(p, q)) == pytest.approx(mu)


def test_what_a_box_certifies_about_delta_and_epsilon():
    p, q = 0.6, 0.2
    assert float(delta_lower(p, q, 0.5)) == pytest.approx(max(p - math.exp(0.5) * q,
                                                              (1 - q) - math.exp(0.5) * (1 - p)))
    eps = epsilon_lower_at(p, q, 0.01)
    assert float(delta_lower(p, q, eps)) == pytest.approx(0.01, abs=1e-9)
    assert epsilon_lower_at(0.3, 0.3, 0.0) == 0.0


# -- the claim's checks --------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, words", [
    (dict(gdp=-1), "mu > 0"),
    (dict(gdp=1, tradeoff=lambda a: 1 - a), "one curve claim"),
    (dict(tradeoff=lambda a: np.minimum(1.0, 1.2 - a)), "at most 1 - alpha"),
    (dict(tradeoff=lambda a: np.minimum(0.2 * a, 1 - a)), "never increase"),
    (dict(profile=lambda e: np.minimum(0.1 * e, 0.5)), "never increase"),
    (dict(profile=lambda e: 0.0 * e), r"profile\(0\) = 0"),
    (dict(profile="0.1"), "function"),
])
def test_curve_claims_that_cannot_be_audited_say_why(kwargs, words):
    mech = gaussian(1.0, kwargs)
    with pytest.raises(InvalidClaimError, match=words):
        dpverify.audit(mech)


def test_a_scalar_profile_function_is_read_point_by_point():
    claim = profile_claim(lambda e: float(gdp_profile(1.0, e)))
    assert claim.epsilon_at(1e-5) == pytest.approx(gdp_claim(1.0).epsilon_at(1e-5))


# -- audits ----------------------------------------------------------------------------------------

def test_tight_gaussian_passes_its_gdp_claim_conclusively():
    result = dpverify.audit(gaussian(1.0, dict(gdp=1.0)), seed=0)
    assert result.verdict == "pass" and result.conclusive
    assert 0.9 < result.mu_lower_bound <= 1.0
    # every figure from the same box stays under the truth: δ(ε) at every ε, ε at δ = 1e-5
    # (the true profile: gdp_profile, checked against the privacy-loss integral above)
    certified, _ = result.delta_curves(EPSILON_GRID)
    assert np.all(certified <= gdp_profile(1.0, EPSILON_GRID) + 1e-12)
    true_eps = brentq(lambda e: float(gdp_profile(1.0, e)) - 1e-5, 0, 20)
    assert result.epsilon_lower_bound <= true_eps


def test_gaussian_with_15_percent_less_noise_is_flagged_on_at_least_19_of_20_seeds():
    """σ = 0.85 under a claim of μ = 1 (true μ = 1/0.85 ≈ 1.18), default budget."""
    mech = gaussian(0.85, dict(gdp=1.0))
    results = [dpverify.audit(mech, seed=s, n_jobs=1) for s in range(20)]
    assert sum(r.verdict == "violation" for r in results) >= 19
    assert all(r.mu_lower_bound <= 1 / 0.85 for r in results)   # never above the truth


@pytest.mark.parametrize("mech, broken", [
    (laplace(1.0, dict(tradeoff=laplace_tradeoff(1.0))),
     laplace(0.8, dict(tradeoff=laplace_tradeoff(1.0)))),
    (randomized_response(1.0, dict(tradeoff=randomized_response_tradeoff(1.0))),
     randomized_response(1.3, dict(tradeoff=randomized_response_tradeoff(1.0)))),
    (gaussian(1.0, dict(profile=lambda e: gdp_profile(1.0, e))),
     gaussian(0.85, dict(profile=lambda e: gdp_profile(1.0, e)))),
])
def test_exact_curves_pass_and_the_broken_mechanism_is_flagged(mech, broken):
    good = dpverify.audit(mech, seed=1)
    assert good.verdict == "pass" and good.conclusive
    bad = dpverify.audit(broken, seed=1)
    assert bad.verdict == "violation"
    assert bad.beta < bad.claimed_beta                     # the certified test is below f
    eps, certified, claimed = bad.worst_epsilon
    assert certified > claimed


def test_audit_arguments_override_the_declared_curve():
    mech = gaussian(1.0, dict(gdp=1.0))
    assert dpverify.audit(mech, gdp=0.8, seed=0).verdict == "violation"
    assert dpverify.audit(mech, tradeoff=lambda a: norm.cdf(norm.isf(a) - 1.2),
                          seed=0).verdict == "pass"
    with pytest.raises(InvalidClaimError, match="one claim"):
        dpverify.audit(mech, gdp=1.0, epsilon=1.0)


def test_group_pairs_are_audited_at_k_mu():
    """Pairs 2 apart: a Gaussian with sensitivity 2 and σ = 2 is 1-GDP per unit of distance."""
    mech = dpverify.mechanism(gdp=1.0, pairs=dpverify.pairs.at_distance([(0.0, 2.0)], 2))(
        lambda x, rng, size: x + rng.normal(0, 1.0, size))
    result = audit_curve(mech, seed=0)
    assert result.claim.mu == 2.0 and result.verdict == "pass"
    with pytest.raises(dpverify.errors.InvalidPairsError):
        audit_curve(mech, claim=tradeoff_claim(laplace_tradeoff(1.0)), seed=0)


def test_the_result_is_json_and_says_the_claim_in_its_own_terms():
    result = dpverify.audit(gaussian(0.85, dict(gdp=1.0)), seed=2, delta=1e-6)
    assert result.reference_delta == 1e-6 and "at δ = 1e-06" in result.summary()
    assert "<img" in result._repr_html_()       # a notebook shows the trade-off plane
    data = json.loads(json.dumps(result.as_dict()))
    assert data["claimed"]["gdp_mu"] == 1.0 and data["outcome"] == "violation"
    assert data["mu_lower_bound"] > 1.0
    assert "certified μ ≥" in result.summary()


def test_the_command_line_audits_a_gdp_claim(tmp_path, capsys):
    from dpverify.interfaces.cli import main
    source = tmp_path / "mech.py"
    source.write_text("import dpverify\n"
                      "@dpverify.mechanism(gdp=1.0, pairs=[(0.0, 1.0)])\n"
                      "def g(x, rng, size):\n    return x + rng.normal(0, 0.8, size)\n")
    assert main(["audit", str(source), "--json", str(tmp_path / "r.json"),
                 "--report", str(tmp_path / "rep")]) == 1
    assert "certified μ ≥" in capsys.readouterr().out
    assert main(["audit", f"{source}:g", "--gdp", "1.5"]) == 0
    assert main(["audit", str(source), "--gdp", "1", "--epsilon", "1"]) == 2
    assert "--gdp" in capsys.readouterr().err
    figures = json.loads((tmp_path / "rep" / "figures.json").read_text())
    assert figures["g"]["pictures"]["tradeoff"][0]["coords"] == "ab"
    assert json.loads((tmp_path / "r.json").read_text())["results"][0]["claimed"]["gdp_mu"] == 1


def test_pictures_draw_the_witness_red_below_the_curve_and_a_pass_in_blue(tmp_path):
    """Independent of the package's maths: the claim's curve here is G_μ written out again."""
    from dpverify.interfaces.fdp_report import write_fdp_plots
    for sigma, red in ((0.8, True), (1.0, False)):
        result = dpverify.audit(gaussian(sigma, dict(gdp=1.0)), seed=0)
        _, figures = write_fdp_plots(result, tmp_path)
        panel = figures["pictures"]["tradeoff"][0]
        witness = [e for e in panel["elements"] if e["role"] == "witness"][0]
        assert witness["red"] is red
        corner = max(witness["points"], key=lambda pt: pt[0] + pt[1])
        assert bool(corner[1] < norm.cdf(norm.isf(corner[0]) - 1.0)) is red
        delta_panel = figures["pictures"]["delta_curve"][0]
        reds = [e for e in delta_panel["elements"] if e["red"] and e["points"]]
        assert bool(reds) is red
        for e in reds:
            for eps, d in e["points"]:
                assert d > float(gdp_profile(1.0, eps))


pytest_plugins = ["pytester"]


def test_the_pytest_marker_takes_a_gdp_claim(pytester):
    pytester.makepyfile(test_curve="""
        import pytest, dpverify

        @dpverify.mechanism(pairs=[(0.0, 1.0)])
        def g(x, rng, size):
            return x + rng.normal(0, 0.8, size)

        @pytest.mark.dp(gdp=1.0)
        def test_claim(dp_audit):
            dp_audit(g)

        @pytest.mark.dp(gdp=1.5)
        def test_loose(dp_audit):
            assert dp_audit(g).verdict == "pass"
    """)
    outcome = pytester.runpytest("-p", "no:xdist", "-q")
    outcome.assert_outcomes(passed=1, failed=1)
    assert "certified μ ≥" in outcome.stdout.str()


def test_the_gate_baselines_a_curve_claim_and_flags_its_violation(tmp_path, capsys):
    from dpverify.interfaces.cli import main
    source = tmp_path / "mechs.py"
    source.write_text("import dpverify\n"
                      "@dpverify.mechanism(gdp=1.0, pairs=[(0.0, 1.0)])\n"
                      "def good(x, rng, size):\n    return x + rng.normal(0, 1.0, size)\n"
                      "@dpverify.mechanism(gdp=1.0, pairs=[(0.0, 1.0)])\n"
                      "def bad(x, rng, size):\n    return x + rng.normal(0, 0.8, size)\n")
    baseline = tmp_path / "baseline.json"
    assert main(["gate", f"{source}:good", "--baseline", str(baseline),
                 "--update-baseline"]) == 0
    assert main(["gate", f"{source}:good", "--baseline", str(baseline)]) == 0
    assert main(["gate", str(source), "--baseline", str(baseline)]) == 1
    assert "certified μ ≥" in capsys.readouterr().out
