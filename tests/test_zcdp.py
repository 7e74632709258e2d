"""ρ-zCDP claims (dpverify.zcdp; docs/theory.md §8): the maths, the audit on mechanisms whose
true ρ is known, the CLI's --zcdp, the pytest plugin, and the false-alarm rate."""
import json
import math
import textwrap

import numpy as np
import pytest
from scipy.stats import binom

import dpverify
import dpverify.pipeline  # noqa: F401  (pytester runs restore sys.modules; import numpy once)
import dpverify.interfaces.pytest_plugin  # noqa: F401
from dpverify import pairs as P
from dpverify.interfaces.cli import main
from dpverify.renyi import renyi_bernoulli, renyi_lower_bound
from dpverify.zcdp import (ORDERS, ZcdpAuditResult, audit_zcdp, certified_rho, error_split,
                           implied_epsilon, renyi_curve_lower)

FAST = dict(samples=1 << 14, n_jobs=1)


def gaussian(sigma, rho):
    """data + N(0, σ²) on pairs at distance 1: exactly 1/(2σ²)-zCDP, D_α = α/(2σ²)."""
    @dpverify.mechanism(zcdp=rho, pairs=[(0.0, 1.0)])
    def gauss(data, rng, size):
        return data + rng.normal(0, sigma, size)
    return gauss


def laplace(rho):
    """Laplace(b=1), sensitivity 1: 1-DP, hence 0.5-zCDP; its true ρ = sup_α D_α/α is its
    KL divergence ε + e^{−ε} − 1 = e^{−1} (attained as α → 1)."""
    @dpverify.mechanism(zcdp=rho, pairs=[(0.0, 1.0)])
    def lap(data, rng, size):
        return data + rng.laplace(0, 1.0, size)
    return lap


def randomized_response(eps, rho):
    """Binary randomized response: the output is the whole two-cell partition, and
    sup_α D_α/α = KL = ε·tanh(ε/2) (as α → 1): claimed at that ρ it is exactly tight."""
    @dpverify.mechanism(zcdp=rho, pairs=[(0, 1)])
    def rr(data, rng, size):
        flip = rng.random(size) < 1 / (1 + math.exp(eps))
        return np.where(flip, 1 - data, data)
    return rr


# ---------------------------------------------------------------------------------------------
# The maths
# ---------------------------------------------------------------------------------------------

def test_implied_epsilon_against_a_hand_computed_value():
    # ρ = 0.5, δ = 1e-6: ln(1e6) = 13.8155106, √(0.5 · 13.8155106) = 2.6282609
    assert implied_epsilon(0.5, 1e-6) == pytest.approx(0.5 + 2 * 2.6282609, abs=1e-6)
    assert implied_epsilon(0.5, 1e-6) == pytest.approx(5.7565218, abs=1e-6)
    assert error_split(0.95) == (pytest.approx(0.0125), pytest.approx(0.975))


def test_the_corner_bound_is_renyi_lower_bound_of_the_one_sided_box():
    rng = np.random.default_rng(0)
    for _ in range(200):
        p_low, q_high = rng.uniform(0.001, 0.999, 2)
        alpha = rng.uniform(1.01, 16)
        ours = float(renyi_curve_lower(p_low, q_high, alpha))
        assert ours == pytest.approx(renyi_lower_bound(p_low, 1.0, 0.0, q_high, alpha),
                                     rel=1e-9, abs=1e-12)
        # and it never exceeds the divergence anywhere in the box
        grid_p, grid_q = np.meshgrid(np.linspace(p_low, 1, 21), np.linspace(0, q_high, 21))
        assert ours <= renyi_bernoulli(grid_p, grid_q, alpha).min() + 1e-9


def test_large_orders_neither_overflow_nor_underflow():
    # p^α q^{1−α} overflows a float at α = 256; the log-space form stays exact
    by_hand = (256 * math.log(0.5) - 255 * math.log(1e-3)) / 255   # the (1−p) term is negligible
    assert float(renyi_bernoulli(0.5, 1e-3, 256.0)) == pytest.approx(by_hand, rel=1e-6)
    assert math.isfinite(float(renyi_bernoulli(1e-3, 1e-4, 256.0)))
    assert float(renyi_bernoulli(0.3, 0.0, 2.0)) == math.inf        # support mismatch
    assert float(renyi_bernoulli(0.3, 0.3, 9.0)) == 0.0
    # for the Gaussian the certified ratio can only approach 1/(2σ²) from below
    rho, alpha = certified_rho(ORDERS, 0.9 * ORDERS / 2)
    assert rho == pytest.approx(0.45) and 1.01 <= alpha <= 256


# ---------------------------------------------------------------------------------------------
# Audits of mechanisms with a known ρ
# ---------------------------------------------------------------------------------------------

def test_a_correct_gaussian_passes_and_its_bound_never_exceeds_the_truth():
    res = dpverify.audit(gaussian(1.0, 0.5), **FAST)          # dispatched by the decorator
    assert isinstance(res, ZcdpAuditResult) and res.verdict == "pass"
    assert 0.1 < res.rho_lower_bound <= 0.5
    # the whole certified curve lies below the true D_α = α/(2σ²)
    assert all(low <= a / 2 + 1e-12 for a, low in zip(res.orders, res.renyi_lower))
    assert res.implied.verdict == "pass" and res.implied.claimed_epsilon == pytest.approx(
        implied_epsilon(0.5, 1e-6))
    assert res.implied.confidence == pytest.approx(0.975)
    doc = json.loads(json.dumps(res.as_dict()))
    assert doc["claimed"] == {"zcdp_rho": 0.5, "implied_epsilon": pytest.approx(5.7565218),
                              "implied_delta": 1e-6}
    assert doc["implied"]["verdict"] == "pass" and len(doc["renyi"]["orders"]) == len(ORDERS)


@pytest.mark.parametrize("sigma, claim, truth", [(1.0, 0.125, 0.5),    # declared at ρ/4
                                                 (0.5, 0.5, 2.0)])    # σ halved
def test_an_overclaimed_gaussian_is_flagged_below_its_true_rho(sigma, claim, truth):
    res = audit_zcdp(gaussian(sigma, claim), **FAST)
    assert res.verdict == "violation" and res.rho_violated
    assert claim < res.rho_lower_bound <= truth
    assert all(low <= a * truth + 1e-12 for a, low in zip(res.orders, res.renyi_lower))
    assert res.witness is not None and res.witness.count_D > res.witness.count_D_prime
    assert res.summary().startswith("VIOLATION  gauss: claimed ρ=")


def test_laplace_is_half_zcdp_but_not_a_twentieth():
    ok = audit_zcdp(laplace(0.5), **FAST)
    assert ok.verdict == "pass" and 0.1 < ok.rho_lower_bound <= math.exp(-1)
    bad = audit_zcdp(laplace(0.05), **FAST)
    assert bad.verdict == "violation" and 0.05 < bad.rho_lower_bound <= math.exp(-1)
    # the two audits differ only in the claim: the same seed certified the same curve
    assert bad.renyi_lower == ok.renyi_lower


def test_a_leak_the_implied_audit_certifies_is_a_violation():
    @dpverify.mechanism(zcdp=0.005, pairs=[(0.0, 1.0)])   # σ = 10: ρ = 0.005 ... but 2% leak
    def leaky(data, rng, size):
        return np.where(rng.random(size) < 0.02, 100.0 * data, data + rng.normal(0, 10, size))
    res = audit_zcdp(leaky, **FAST)
    assert res.verdict == "violation" and res.implied.verdict == "violation"
    assert res.epsilon_lower_bound == res.implied.epsilon_lower_bound > res.implied_epsilon


def test_group_distance_audits_k_squared_rho():
    pairs = P.at_distance([(0.0, 2.0)], 2)   # Gaussian σ = 1 at distance 2: true ρ = 2
    ok = audit_zcdp(gaussian(1.0, 0.5), pairs=pairs, **FAST)
    assert ok.verdict == "pass" and ok.effective_rho == 2.0 and ok.rho_lower_bound <= 2.0
    assert ok.implied_epsilon == pytest.approx(implied_epsilon(2.0, 1e-6))
    assert audit_zcdp(gaussian(1.0, 0.125), pairs=pairs, **FAST).verdict == "violation"


def test_own_randomness_is_audited_without_shared_seeds():
    @dpverify.mechanism(zcdp=0.125, pairs=[(0.0, 1.0)], randomness="own")
    def own(data, rng, size):
        return data + np.random.default_rng().normal(0, 1.0, size)
    res = audit_zcdp(own, **FAST)
    assert res.verdict == "violation" and res.rho_lower_bound <= 0.5
    assert not res.reproducible and "own randomness" in res.summary()


@pytest.mark.parametrize("kwargs, match", [(dict(rho=0), "rho > 0"),
                                           (dict(rho=0.5, delta=0.0), "delta in"),
                                           (dict(rho=0.5, confidence=1.0), "confidence")])
def test_bad_claims_are_refused_before_any_run(kwargs, match):
    def never(data, rng, size):
        raise AssertionError("must not run")
    with pytest.raises(dpverify.InvalidClaimError, match=match):
        audit_zcdp(never, pairs=[(0.0, 1.0)], **kwargs)


# ---------------------------------------------------------------------------------------------
# False alarms: at most 1 − confidence
# ---------------------------------------------------------------------------------------------

SEEDS = 40
# Under the promised rate 0.05, P[Bin(40, 0.05) ≥ 7] = 0.0034: ≤ 6 flags fail this test by bad
# luck less than 1% of the time; a level mistake (e.g. plug-in rates) flags ~half the seeds.
MOST_FLAGS = 6


@pytest.mark.parametrize("mech", [gaussian(1.0, 0.5),
                                  # tight: the claim equals sup_α D_α/α exactly
                                  randomized_response(1.0, 1.0 * math.tanh(0.5))])
def test_exactly_claimed_mechanisms_are_rarely_flagged(mech):
    assert binom.sf(MOST_FLAGS, SEEDS, 0.05) < 0.01
    flags = sum(audit_zcdp(mech, seed=s, samples=1 << 12, n_jobs=1).verdict == "violation"
                for s in range(SEEDS))
    assert flags <= MOST_FLAGS


# ---------------------------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------------------------

MECHS = textwrap.dedent('''
    import dpverify

    @dpverify.mechanism(epsilon=1.0, pairs=[(0.0, 1.0)])
    def laplace(data, rng, size):
        return data + rng.laplace(0, 1.0, size)

    @dpverify.mechanism(zcdp=0.5, pairs=[(0.0, 1.0)])
    def gauss(data, rng, size):
        return data + rng.normal(0, 1.0, size)
''')


@pytest.fixture
def mech_file(tmp_path):
    path = tmp_path / "mechs.py"
    path.write_text(MECHS)
    return path


CLI = ["--samples", "8192", "--jobs", "1"]


def test_cli_zcdp_verdicts_and_json(mech_file, tmp_path, capsys):
    out = tmp_path / "r.json"
    assert main(["audit", f"{mech_file}:laplace", "--zcdp", "0.05", "--json", str(out),
                 *CLI]) == 1
    assert "VIOLATION  laplace: claimed ρ=0.05-zCDP" in capsys.readouterr().out
    entry = json.loads(out.read_text())["results"][0]
    assert entry["claimed"]["zcdp_rho"] == 0.05 and entry["verdict"] == "violation"
    assert main(["audit", f"{mech_file}:laplace", "--zcdp", "0.5", "--delta", "1e-5", "--json",
                 str(out), *CLI]) == 0
    entry = json.loads(out.read_text())["results"][0]
    assert entry["claimed"]["implied_delta"] == 1e-5 and entry["verdict"] == "pass"
    # a mechanism that declares zcdp= is audited for it without the flag
    assert main(["audit", f"{mech_file}:gauss", *CLI]) == 0
    assert "claimed ρ=0.5-zCDP" in capsys.readouterr().out


@pytest.mark.parametrize("flags", [["--zcdp", "0.5", "--epsilon", "1"], ["--zcdp", "0"],
                                   ["--zcdp", "0.5", "--delta", "0"],
                                   ["--zcdp", "0.5", "--measure"]])
def test_cli_zcdp_usage_errors_exit_2(mech_file, capsys, flags):
    assert main(["audit", f"{mech_file}:laplace", *flags, *CLI]) == 2
    assert "dpverify: error" in capsys.readouterr().err


def test_cli_report_of_a_zcdp_audit(mech_file, tmp_path, capsys):
    folder = tmp_path / "report"
    assert main(["audit", f"{mech_file}:gauss", "--report", str(folder), *CLI]) == 0
    md = (folder / "report.md").read_text()
    assert "ρ=0.5-zCDP ⇒" in md and "certified ρ ≥" in md and "implied (" in md
    assert "renyi_curve.png" in md and (folder / "renyi_curve.png").stat().st_size > 1000
    html = (folder / "index.html").read_text()
    assert "implied (ε, δ) claim" in html and "data:image/png;base64" in html


# ---------------------------------------------------------------------------------------------
# pytest plugin
# ---------------------------------------------------------------------------------------------

PLUGIN = ["--dpverify-samples", "8192", "--dpverify-jobs", "1", "-p", "no:cacheprovider"]


def test_plugin_marker_fixture_and_collection(pytester):
    pytester.makepyfile(test_zc=textwrap.dedent('''
        import pytest

        def gauss(data, rng, size):
            return data + rng.normal(0, 1.0, size)      # exactly 0.5-zCDP

        @pytest.mark.dp(zcdp=0.5, pairs=[(0.0, 1.0)])
        def test_marker_holds(dp_audit):
            result = dp_audit(gauss)
            assert result.verdict == "pass" and result.rho_lower_bound <= 0.5

        @pytest.mark.dp(zcdp=0.1, pairs=[(0.0, 1.0)])
        def test_marker_overclaims(dp_audit):
            dp_audit(gauss)

        def test_claim_in_the_call(dp_audit):
            assert dp_audit(gauss, pairs=[(0.0, 1.0)], zcdp=0.5).implied.verdict == "pass"
    '''))
    mechs = pytester.mkdir("mechanisms")
    (mechs / "declared.py").write_text(textwrap.dedent('''
        import dpverify

        @dpverify.mechanism(zcdp=0.05, pairs=[(0.0, 1.0)])
        def overclaimed(data, rng, size):
            return data + rng.normal(0, 1.0, size)
    '''))
    # with a test path besides --dpverify (alone, --dpverify collects only the paths it names)
    result = pytester.runpytest("test_zc.py", "--dpverify", "mechanisms", *PLUGIN)
    result.assert_outcomes(passed=2, failed=2)
    out = result.stdout.str()
    assert "PrivacyViolation" in out
    assert "privacy violation in gauss" in out and "claimed  ρ=0.1-zCDP" in out
    assert "privacy violation in overclaimed" in out and "claimed  ρ=0.05-zCDP" in out
    assert "certified ρ ≥" in out and "implied (ε=" in out
