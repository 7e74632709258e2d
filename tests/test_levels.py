"""A witness's test at other levels (dpverify/levels.py): the p-value the report's picture draws
agrees with the verdict, grows with the tested ε, and equals the marginal test's evidence level
at the claim."""
import numpy as np
import pytest

import dpverify
from dpverify.evidence import COUPLED, RATIO_TEST, TWO_BOUNDS
from dpverify.levels import claim_pvalue, evidence_level
from mechanisms_under_test.basic import make_gaussian, make_laplace, make_randomized_response

# measurement runs claimed where the seeds' bounds fall on both sides of the claim, so that some
# certify a violation by a hair and others pass by a hair, each with one certificate
CASES = [(make_laplace(1.0), 0.97, 1 << 16, RATIO_TEST),
         (make_randomized_response(1.0), 0.97, 1 << 14, RATIO_TEST),
         (make_laplace(0.1), 0.0985, 1 << 20, COUPLED),
         (make_gaussian(1.0, 1e-3), 0.5, 1 << 16, TWO_BOUNDS)]   # δ = 1e-3 kept from the claim


@pytest.mark.parametrize("mech, claim, samples, certificate", CASES,
                         ids=["laplace", "rr", "laplace_coupled", "gaussian_two_bounds"])
def test_the_pvalue_at_the_claim_rejects_exactly_when_the_witness_does(mech, claim, samples,
                                                                        certificate):
    outcomes = set()
    for seed in range(6):
        r = dpverify.audit(mech, epsilon=claim, seed=seed, samples=samples, stop_early=False)
        w, alpha = r.witness, 1 - r.confidence
        assert w.certificate == certificate
        violation = w.epsilon_lower_bound > claim
        outcomes.add(violation)
        at_claim = claim_pvalue(w, claim, r.claimed_delta, alpha)
        assert (at_claim < alpha) == violation, (seed, at_claim, w.epsilon_lower_bound)
        curve = [claim_pvalue(w, e, r.claimed_delta, alpha) for e in np.linspace(0, 2 * claim, 9)]
        assert all(b >= a for a, b in zip(curve, curve[1:]))   # a larger ε′ is harder to reject
        if violation:
            assert at_claim == pytest.approx(evidence_level(w, claim, r.claimed_delta, alpha))
    assert outcomes == {True, False}, "the seeds must show both a violation and a pass"
