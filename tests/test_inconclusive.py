"""Power is part of the verdict: an audit whose budget could not have caught a gross violation
is INCONCLUSIVE, never a pass (docs/theory.md §2.11, docs/method.md#what-an-audit-promises)."""
import json
import math
import textwrap
import warnings

import numpy as np
import pytest

import dpverify
from dpverify.certify import resolution
from dpverify.interfaces.cli import main
from dpverify.result import Witness, gross_violation
from dpverify.stats import certified_epsilon, detectable_epsilon
from mechanisms_under_test import ZOO

import dpverify.interfaces.pytest_plugin  # noqa: F401  (see test_plugin.py)


def witness(count_D, samples_D, count_D_prime, samples_D_prime, level=0.0125):
    return Witness(D=0, D_prime=1, event="S", attack="test", count_D=count_D,
                   samples_D=samples_D, count_D_prime=count_D_prime,
                   samples_D_prime=samples_D_prime, p_lower=0.0, q_upper=1.0,
                   epsilon_lower_bound=0.0, epsilon_estimate=0.0, stage=1,
                   support_mismatch=False, level=level)


# ---- the maths ---------------------------------------------------------------------------

@pytest.mark.parametrize("mass, n, claim", [(0.5, 4000, 0.1), (0.05, 50_000, 0.5),
                                            (0.2, 2000, 1.0)])
def test_a_true_epsilon_at_the_resolution_is_caught_about_half_the_time(mass, n, claim):
    """The resolution's promise, checked by simulation: with P = mass under D and
    Q = mass·e^{−resolution} under D', the certified bound exceeds the claim in about half of
    4000 seeded draws of the counts (0.35–0.65: the median is approximated by the mean)."""
    level = 0.0125
    eps = detectable_epsilon(mass, n, n, claim, 0.0, level)
    assert claim < eps < math.inf
    rng = np.random.default_rng(7)
    k_p = rng.binomial(n, mass, 4000)
    k_q = rng.binomial(n, mass * math.exp(-eps), 4000)
    caught = np.mean(certified_epsilon(k_p, n, k_q, n, 0.0, level) > claim)
    assert 0.35 < caught < 0.65, caught


def test_resolution_falls_with_the_budget_and_is_infinite_without_a_chance():
    wide = [detectable_epsilon(0.3, n, n, 0.5, 0.0, 0.0125) for n in (10**3, 10**4, 10**5)]
    assert wide[0] > wide[1] > wide[2] > 0.5
    assert detectable_epsilon(0.3, 10**6, 10**6, 0.5, 0.3, 0.0125) == math.inf  # mass ≤ δ
    assert detectable_epsilon(0.001, 1000, 1000, 0.1, 0.0, 0.0125) == math.inf  # one hit


def test_an_event_holding_every_run_has_no_resolution():
    """The best event of a search that found nothing holds every run under both inputs: it
    cannot show a ratio, and neither can its complement, never seen."""
    assert resolution(0.1, 0.0, witness(999, 999, 996, 996)) == math.inf
    assert resolution(0.1, 0.0, witness(996, 1000, 995, 1000)) == math.inf  # near-certain
    assert resolution(0.1, 0.0, None) == math.inf


def test_a_near_certain_event_is_judged_by_its_complement():
    """p̂ = 0.9995, q̂ = 0.997 on 10^6 runs: the ratio lives on the complement (5·10⁻⁴ vs
    3·10⁻³), which is what the resolution is computed on."""
    near = resolution(0.5, 0.0, witness(999_500, 10**6, 997_000, 10**6))
    assert near == pytest.approx(detectable_epsilon(0.003, 10**6, 10**6, 0.5, 0.0, 0.0125))
    assert 0.5 < near < gross_violation(0.5)


def test_gross_violation_is_twice_the_claim_or_a_tenth_more():
    assert gross_violation(1.0) == 2.0
    assert gross_violation(0.02) == pytest.approx(0.12)
    assert gross_violation(0.0) == pytest.approx(0.1)


# ---- audits ------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["svt4", "rnm3"])
def test_a_budget_far_too_small_for_a_subtle_violation_is_inconclusive(name):
    """SVT4 (true ε 0.175) and RNM3 (0.25) against a claim of 0.1, at 1,000 runs per input: no
    violation is found, and the result says the budget could not have found one."""
    result = dpverify.audit(ZOO[name], samples=1000, seed=0, n_jobs=1)
    assert result.verdict == "pass"
    assert not result.conclusive and result.outcome == "inconclusive" and not result.passed
    assert result.resolution > gross_violation(0.1)
    assert result.summary().startswith(f"INCONCLUSIVE {name}:")
    assert "raise the samples" in result.summary()
    d = result.as_dict()
    assert d["conclusive"] is False and d["outcome"] == "inconclusive"


@pytest.mark.parametrize("name", ["laplace", "randomized_response"])
def test_a_correct_mechanism_with_enough_samples_is_conclusive_and_passes(name):
    result = dpverify.audit(ZOO[name], seed=0)
    assert result.verdict == "pass" and result.conclusive and result.passed
    assert result.resolution <= gross_violation(result.claimed_epsilon)
    assert result.summary().startswith(f"pass       {name}:")


def test_a_violation_is_conclusive_whatever_its_resolution():
    result = dpverify.audit(ZOO["noisy_hist2"], samples=1000, seed=0, n_jobs=1)
    assert result.verdict == "violation" and result.conclusive
    assert result.outcome == "violation"


# ---- the command line, the gate and the plugin -------------------------------------------

MECHS = textwrap.dedent('''
    import dpverify

    @dpverify.mechanism(epsilon=0.1, pairs=[(0.0, 1.0)])
    def correct(data, rng, size):
        return data + rng.laplace(0, 10.0, size)

    @dpverify.mechanism(epsilon=0.2, pairs=[(0.0, 1.0)])
    def broken(data, rng, size):
        return data + rng.laplace(0, 1.0, size)
''')


@pytest.fixture
def mechs(tmp_path):
    path = tmp_path / "mechs.py"
    path.write_text(MECHS)
    return path


def test_the_cli_exits_3_on_an_inconclusive_audit_and_1_wins_over_it(mechs, tmp_path, capsys):
    out_json = tmp_path / "r.json"
    assert main(["audit", f"{mechs}:correct", "--samples", "200", "--jobs", "1",
                 "--json", str(out_json)]) == 3
    out = capsys.readouterr().out
    assert "INCONCLUSIVE correct" in out and "0 pass(es), 1 inconclusive" in out
    entry = json.loads(out_json.read_text())["results"][0]
    assert entry["verdict"] == "pass" and entry["outcome"] == "inconclusive"
    assert main(["audit", str(mechs), "--samples", "200", "--jobs", "1"]) == 1
    assert main(["audit", f"{mechs}:correct", "--jobs", "1"]) == 0


def test_the_gate_exits_3_and_never_writes_an_inconclusive_audit_to_the_baseline(
        mechs, tmp_path, capsys):
    baseline, junit = tmp_path / "b.json", tmp_path / "j.xml"
    code = main(["gate", f"{mechs}:correct", "--baseline", str(baseline), "--update-baseline",
                 "--samples", "200", "--jobs", "1", "--junit", str(junit)])
    out = capsys.readouterr().out
    assert code == 3
    assert "1 inconclusive" in out and "0 pass(es)" in out
    assert "not written to the baseline: inconclusive" in out
    assert json.loads(baseline.read_text())["mechanisms"] == {}
    assert 'type="inconclusive"' in junit.read_text()


def test_the_plugin_warns_on_an_inconclusive_audit_and_fails_under_w_error(pytester):
    pytester.makepyfile(test_it=MECHS + textwrap.dedent('''

        def test_correct(dp_audit):
            assert dp_audit(correct, samples=200, n_jobs=1).verdict == "pass"
    '''))
    run = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    run.assert_outcomes(passed=1, warnings=1)
    assert "InconclusiveAuditWarning" in run.stdout.str()
    assert "INCONCLUSIVE correct" in run.stdout.str()
    strict = pytester.runpytest_inprocess("-p", "no:cacheprovider",
                                          "-W", "error::dpverify.InconclusiveAuditWarning")
    strict.assert_outcomes(failed=1)


@dpverify.mechanism(zcdp=0.5, pairs=[(0.0, 1.0)])
def gaussian_half_rho(data, rng, size):
    """The Gaussian mechanism with σ = 1: exactly ρ = 1/2-zCDP."""
    return data + rng.normal(0, 1.0, size)


def test_a_zcdp_audit_is_conclusive_once_its_certified_rho_reaches_half_the_claim():
    """At 200 runs the certified ρ (0.007) is far below half the claim and the implied (ε, δ)
    audit is powerless: inconclusive. At 2^14 runs ρ ≥ 0.31 is certified: a conclusive pass,
    though the implied audit at ε = 5.76 stays inconclusive."""
    small = dpverify.audit(gaussian_half_rho, samples=200, seed=0, n_jobs=1)
    assert small.verdict == "pass" and small.outcome == "inconclusive" and not small.passed
    assert small.summary().startswith("INCONCLUSIVE gaussian_half_rho:")
    enough = dpverify.audit(gaussian_half_rho, samples=1 << 14, seed=0, n_jobs=1)
    assert enough.rho_lower_bound >= 0.25 and enough.conclusive and enough.passed
    assert enough.implied.outcome == "inconclusive"


def test_an_rdp_claim_through_the_cli_passes_or_is_inconclusive(tmp_path, capsys):
    """An (α, ρ)-RDP claim (σ = 1: D_2 = 1/2 exactly) through `dpverify audit`: conclusive once
    the certified D_α reaches half the claimed ρ, inconclusive (exit 3) at 100 runs. (The command
    line once failed on RDP results, which have no stages to interrupt.)"""
    target = tmp_path / "rdp.py"
    target.write_text("import dpverify\n\n"
                      "@dpverify.mechanism(rdp=(2.0, 0.5), pairs=[(0.0, 1.0)])\n"
                      "def g(data, rng, size):\n"
                      "    return data + rng.normal(0, 1.0, size)\n")
    assert main(["audit", str(target), "--samples", "2000", "--jobs", "1"]) == 0
    assert "1 pass(es)" in capsys.readouterr().out
    assert main(["audit", str(target), "--samples", "100", "--jobs", "1"]) == 3
    assert "INCONCLUSIVE g:" in capsys.readouterr().out
