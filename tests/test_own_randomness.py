"""Mechanisms that draw their own randomness (`randomness="own"`): audited, never refused.

Their noise comes from a generator the engine does not seed. The tests give each one a
generator seeded by the test and run the audit on one worker (n_jobs=1, in this thread), so
the draws, and with them every verdict here, are deterministic.
"""
import json
import math

import numpy as np
import pytest

import dpverify
from dpverify.errors import RandomnessError
from dpverify.result import COUPLED
from dpverify.sampling import Sampler


def own_laplace(scale, claim=1.0, seed=11):
    """Laplace(scale) on the pair (0, 1), drawn from a generator of its own: ε = 1/scale."""
    own = np.random.default_rng(seed)

    @dpverify.mechanism(epsilon=claim, pairs=[(0.0, 1.0)], randomness="own")
    def laplace(data, rng, size):
        return data + own.laplace(0.0, scale, size)
    return laplace


def test_a_correct_own_randomness_laplace_passes():
    result = dpverify.audit(own_laplace(1.0), seed=0, n_jobs=1)
    assert result.verdict == "pass"
    assert result.epsilon_lower_bound <= 1.0
    assert result.epsilon_lower_bound > 0.9   # the audit had power: it came close to the truth


def test_too_little_noise_is_flagged_and_the_bound_stays_below_the_truth():
    result = dpverify.audit(own_laplace(0.7), seed=0, n_jobs=1)   # true ε = 1/0.7 = 1.43
    assert result.verdict == "violation"
    assert 1.0 < result.epsilon_lower_bound <= 1 / 0.7


def test_an_undeclared_own_generator_is_still_refused_and_the_error_names_the_declaration():
    own = np.random.default_rng(3)

    @dpverify.mechanism(epsilon=1.0, pairs=[(0.0, 1.0)])
    def hidden(data, rng, size):
        return data + own.laplace(0.0, 1.0, size)
    with pytest.raises(RandomnessError, match='randomness="own"'):
        dpverify.audit(hidden, samples=1 << 12, n_jobs=1)


def test_shared_seeds_are_switched_off_and_the_result_says_it_is_not_reproducible(monkeypatch):
    # Laplace(ε = 0.1) measured at 2^20 runs per input: drawing from `rng`, the pilot chooses
    # the coupled certificate (tests/test_engine.py). Drawing its own noise, no chunk may be
    # coupled (its "shared seeds" would share nothing) and no event may be certified coupled.
    coupled_chunks = []
    real_run = Sampler.run

    def spying_run(self, tasks, *args, **kwargs):
        coupled_chunks.extend(t for t in tasks if t.coupled)
        return real_run(self, tasks, *args, **kwargs)
    monkeypatch.setattr(Sampler, "run", spying_run)

    seeded = dpverify.audit(dpverify.mechanism(epsilon=0.1, pairs=[(0.0, 1.0)])(
        lambda data, rng, size: data + rng.laplace(0.0, 10.0, size)),
        stop_early=False, samples=1 << 20, seed=0, n_jobs=1)
    assert seeded.witness.certificate == COUPLED and coupled_chunks   # the contrast holds
    coupled_chunks.clear()

    result = dpverify.audit(own_laplace(10.0, claim=0.1), stop_early=False, samples=1 << 20,
                            seed=0, n_jobs=1)
    assert coupled_chunks == []
    assert result.witness.certificate != COUPLED
    assert result.epsilon_lower_bound <= 0.1
    assert result.randomness == "own" and not result.reproducible
    assert "own randomness" in result.summary()
    document = json.loads(json.dumps(result.as_dict()))
    assert document["randomness"] == "own" and document["reproducible"] is False
    assert seeded.reproducible and seeded.as_dict()["randomness"] == "rng"


def test_python_random_scalar_mechanism_runs_on_worker_processes():
    # The scalar path runs on loky workers by default: each process has its own `random`
    # state, so the runs stay independent and cannot be seeded from here. The verdicts are
    # chosen far from the edge instead: randomized response keeping the bit with probability
    # 0.7 has ε = ln(7/3) = 0.847; claimed at ln 3 a false alarm would need the bound 0.25
    # above the truth (~20 standard errors at 2^14 runs), and at 0.55 a miss would need it
    # 0.3 below.
    import random

    def rr(data, rng):
        return data if random.random() < 0.7 else 1 - data
    loose = dpverify.mechanism(epsilon=math.log(3), pairs=[(0, 1)], randomness="own")(rr)
    tight = dpverify.mechanism(epsilon=0.55, pairs=[(0, 1)], randomness="own")(rr)
    assert dpverify.audit(loose, samples=1 << 14, seed=0).verdict == "pass"
    flagged = dpverify.audit(tight, samples=1 << 14, seed=0)
    assert flagged.verdict == "violation"
    assert 0.55 < flagged.epsilon_lower_bound <= math.log(7 / 3)


def replayed_rr():
    """Randomized response whose generator lives in its closure: pickled to a worker with
    every chunk, so every chunk replays the same draws."""
    import random
    own = random.Random(5)

    def rr(data, rng):
        return data if own.random() < 0.75 else 1 - data
    return dpverify.mechanism(epsilon=math.log(3), pairs=[(0, 1)], randomness="own")(rr)


def test_a_generator_copied_into_every_chunk_is_caught_before_it_fakes_a_finding():
    with pytest.raises(RandomnessError, match="copied into every chunk"):
        dpverify.audit(replayed_rr(), samples=1 << 13, seed=0, backend="loky", n_jobs=2)
    # on threads the one generator is shared, not copied: the audit runs, and measures the
    # true ε = ln 3 (the bound sits ~0.08 below it at 2^13 runs, ~3 standard errors above 0.9)
    shared = dpverify.audit(replayed_rr(), samples=1 << 13, seed=0, backend="threading",
                            n_jobs=2, stop_early=False)
    assert 0.9 < shared.epsilon_lower_bound


def test_an_unpicklable_mechanism_gets_a_typed_error_that_says_what_to_do():
    import random
    system = random.SystemRandom()
    mech = dpverify.mechanism(epsilon=1.0, pairs=[(0, 1)], randomness="own")(
        lambda data, rng: data if system.random() < 0.5 else 1 - data)
    with pytest.raises(dpverify.MechanismError, match="cannot be sent to loky worker.*threading"):
        dpverify.audit(mech, samples=1 << 13, backend="loky", n_jobs=2)


def test_randomness_must_be_rng_or_own():
    mech = dpverify.mechanism(epsilon=1.0, pairs=[(0, 1)], randomness="system")(
        lambda data, rng: data)
    with pytest.raises(dpverify.InvalidClaimError, match="'rng'.*'own'"):
        dpverify.audit(mech)
