"""A pass says what it covers (docs/method.md, "What an audit promises"): its resolution, and its
leak reach (docs/theory.md §2.13), the least fraction of runs in which an output seen under one
input only would have been caught with probability ≥ the confidence."""
import math

import numpy as np
import pytest
from scipy.stats import poisson

import dpverify
from dpverify.certify.reach import (LeakGates, caught_probability, gate_needs, hits_to_certify,
                                    leak_reach)
from dpverify.stats import certified_epsilon, ratio_epsilon_bound

GATES = LeakGates(search=349184, tuning=262144, certify=4194304, level=0.00625,
                  competitor=0.99, claim=1.0, delta=0.0)


@pytest.mark.parametrize("claim, delta, level", [(1.0, 0.0, 0.00625), (0.1, 0.0, 0.001),
                                                 (0.5, 1e-6, 0.0125)])
def test_the_hits_to_certify_are_the_fewest_whose_certificate_exceeds_the_claim(claim, delta,
                                                                              level):
    n = 1 << 22
    k = hits_to_certify(n, claim, delta, level)

    def bound(hits):
        b = float(certified_epsilon(hits, n, 0, n, delta, level))
        return max(b, float(ratio_epsilon_bound(hits, 0, 2 * level))) if delta == 0 else b

    assert bound(k) > claim >= bound(k - 1)


def test_the_reach_is_the_least_rate_caught_with_the_confidence():
    reach = leak_reach(GATES, 0.95)
    needs = gate_needs(GATES)
    assert caught_probability(reach, needs) >= 0.95 > caught_probability(reach / 1.02, needs)
    # each gate is a Poisson count of its own runs
    direct = math.prod(poisson.sf(k - 1, reach * runs) for runs, k in needs)
    assert caught_probability(reach, needs) == pytest.approx(direct, rel=1e-9)
    # fewer runs anywhere, or a stronger competitor, can only make the reach coarser
    assert leak_reach(GATES._replace(certify=1 << 20), 0.95) > reach
    assert leak_reach(GATES._replace(tuning=1 << 16), 0.95) > reach
    assert leak_reach(GATES._replace(competitor=3.0), 0.95) > reach
    assert leak_reach(GATES._replace(search=0), 0.95) == math.inf


@dpverify.mechanism(epsilon=0.5, pairs=[(0, 1)])
def ignores_its_input(data, rng, size):
    """A uniform draw from {0, …, 4}, whatever the input: 0-DP."""
    return rng.integers(0, 5, size)


@dpverify.mechanism(epsilon=1.0, pairs=[(1.0, 0.0)])
def laplace(data, rng, size):
    return data + rng.laplace(0.0, 1.0, size)


def test_a_mechanism_that_ignores_its_input_passes_conclusively():
    """Its best event is the whole output space (ratio 1 whatever the mechanism), which tests
    nothing; the audit certifies an event that does, so the pass has a resolution."""
    result = dpverify.audit(ignores_its_input, samples=1 << 18, seed=0)
    assert result.verdict == "pass" and result.conclusive, result.summary()
    assert result.witness.rate_D < 1 and result.resolution < 1.0


def test_a_pass_states_its_leak_reach_in_words_and_in_json():
    result = dpverify.audit(laplace, samples=1 << 18, seed=1)
    assert result.verdict == "pass"
    assert 0 < result.leak_reach < 1e-2
    n = math.floor(1 / result.leak_reach)
    assert f"in at least 1 of {n:,} runs, would have been caught" in result.summary()
    assert result.as_dict()["leak_reach"] == pytest.approx(result.leak_reach)
    # a larger budget covers a rarer leak
    larger = dpverify.audit(laplace, samples=1 << 20, seed=1)
    assert larger.leak_reach < result.leak_reach / 2
