"""A violation proved by the betting test is measured on fresh runs (docs/method.md, "Measuring
a proved violation"): the bound stays below the true ε, grows well past the proof's, and the
proof itself is the one `proof_only=True` stops at."""
import pytest

import dpverify
from mechanisms_under_test import TRUE_EPSILON, noisy_hist2, rnm3

SAMPLES = 1 << 16  # the schedule's last stage, where the measurement ends (below the floor)


@pytest.fixture(scope="module")
def rnm3_both():
    return (dpverify.audit(rnm3, samples=SAMPLES, seed=0, proof_only=True),
            dpverify.audit(rnm3, samples=SAMPLES, seed=0))


def test_the_measurement_starts_from_the_proof_proof_only_stops_at(rnm3_both):
    proof, measured = rnm3_both
    assert proof.verdict == measured.verdict == "violation"
    assert proof.witness.certificate == "betting"
    # the same rounds prove it; the measurement's stages come after them
    assert measured.stages[:len(proof.stages)] == proof.stages
    assert len(measured.stages) > len(proof.stages)
    assert measured.samples > proof.samples


def test_a_measured_bound_is_past_the_proof_and_below_the_true_epsilon(rnm3_both):
    proof, measured = rnm3_both
    assert proof.epsilon_lower_bound < 0.12  # just past the claim of 0.1
    assert 0.15 < measured.epsilon_lower_bound <= TRUE_EPSILON["rnm3"]  # 0.25
    assert measured.witness.certificate != "betting"


def test_the_marginal_label_follows_the_measured_bound(rnm3_both):
    proof, measured = rnm3_both
    assert proof.marginal and not measured.marginal


def test_a_gross_violation_is_measured_near_its_size():
    """NoisyHist2 (Laplace noise of scale ε where 1/ε is due) has true ε = 10 against its
    claim of 0.1."""
    r = dpverify.audit(noisy_hist2, samples=SAMPLES, seed=1)
    assert r.verdict == "violation" and not r.marginal
    assert 5.0 < r.epsilon_lower_bound <= TRUE_EPSILON["noisy_hist2"]


def test_a_measurement_run_and_proof_only_together_are_refused(capsys):
    from dpverify.errors import InvalidClaimError
    from dpverify.interfaces.cli import EXIT_ERROR, main
    with pytest.raises(InvalidClaimError, match=r"stop_early=False .* proof_only="):
        dpverify.audit(rnm3, samples=1 << 10, stop_early=False, proof_only=True, progress=False)
    code = main(["audit", "mechanisms_under_test/noisy_max.py:rnm3", "--measure", "--proof-only"])
    assert code == EXIT_ERROR
    assert "--measure runs the whole schedule and --proof-only stops" in capsys.readouterr().err
