"""Bad input gets a typed error with a message that says what to do, never a verdict."""
import numpy as np
import pytest

import dpverify
from dpverify import (InvalidClaimError, InvalidPairsError, MechanismError, MechanismOutputError,
                      RandomnessError)

PAIRS = [(0.0, 1.0)]


def laplace(data, rng, size):
    return data + rng.laplace(0, 1.0, size)


@pytest.mark.parametrize("kwargs,match", [
    (dict(epsilon=0.0), "epsilon must be > 0"),
    (dict(epsilon=-1.0), "epsilon must be > 0"),
    (dict(epsilon=float("nan")), "epsilon must be > 0"),
    (dict(epsilon=1.0, delta=1.0), r"delta must be in \[0, 1\)"),
    (dict(epsilon=1.0, delta=-0.1), r"delta must be in \[0, 1\)"),
    (dict(epsilon=1.0, confidence=1.0), r"confidence must be in \(0, 1\)"),
    (dict(epsilon=1.0, confidence=0.0), r"confidence must be in \(0, 1\)"),
    (dict(epsilon=1.0, samples=10), "samples must be an integer"),
    (dict(epsilon=1.0, seed=-3), "seed must be a non-negative integer"),
    (dict(), "no epsilon claimed"),
])
def test_bad_claims(kwargs, match):
    with pytest.raises(InvalidClaimError, match=match):
        dpverify.audit(laplace, pairs=PAIRS, n_jobs=1, **kwargs)


def test_bad_claim_in_decorator():
    # recorded, not raised at import (one bad decorator must not sink its file): every audit
    # of the mechanism raises, naming it
    bad = dpverify.mechanism(epsilon=0)(laplace)
    with pytest.raises(InvalidClaimError, match="'laplace'.*epsilon must be > 0"):
        dpverify.audit(bad, pairs=PAIRS, n_jobs=1)


@pytest.mark.parametrize("pairs,match", [
    ([], "empty"), (None, "no neighbouring pairs"), ([(1.0,)], "2-tuple"), ([(1.0, 1.0)], "differ"),
])
def test_bad_pairs(pairs, match):
    with pytest.raises(InvalidPairsError, match=match):
        dpverify.audit(laplace, pairs=pairs, epsilon=1.0, n_jobs=1)


def test_mechanism_that_raises_names_the_input_and_sample():
    def flaky(data, rng):
        x = rng.laplace()
        if data == 1.0 and x > 2.0:
            raise ZeroDivisionError("boom")
        return x
    with pytest.raises(MechanismError, match=r"flaky.*ZeroDivisionError: boom.*input 1\.0.*sample \d+"):
        dpverify.audit(flaky, pairs=PAIRS, epsilon=1.0, n_jobs=1, samples=1000)


def test_batched_mechanism_that_raises():
    def broken(data, rng, size):
        raise ValueError("bad shape")
    with pytest.raises(MechanismError, match=r"broken.*ValueError: bad shape.*input 0\.0"):
        dpverify.audit(broken, pairs=PAIRS, epsilon=1.0, n_jobs=1)


def test_nan_output():
    def nan_sometimes(data, rng, size):
        x = rng.laplace(data, 1.0, size)
        x[x > 3] = np.nan
        return x
    with pytest.raises(MechanismOutputError, match="NaN"):
        dpverify.audit(nan_sometimes, pairs=PAIRS, epsilon=1.0, n_jobs=1)


def test_nan_inside_a_tuple_output():
    def svt_like(data, rng):
        return (None, float("nan")) if rng.random() < 0.5 else (1.0,)
    with pytest.raises(MechanismOutputError, match="NaN"):
        dpverify.audit(svt_like, pairs=PAIRS, epsilon=1.0, n_jobs=1)


def test_wrong_batch_length():
    def short(data, rng, size):
        return rng.laplace(data, 1.0, size - 1)
    with pytest.raises(MechanismOutputError, match="returned"):
        dpverify.audit(short, pairs=PAIRS, epsilon=1.0, n_jobs=1)


def test_inconsistent_shape_between_inputs():
    def shape_depends_on_input(data, rng, size):
        return rng.laplace(data, 1.0, (size, 2 if data == 0 else 3))
    with pytest.raises(MechanismOutputError, match="inconsistent"):
        dpverify.audit(shape_depends_on_input, pairs=PAIRS, epsilon=1.0, n_jobs=1)


def test_unsupported_output_type():
    def returns_dict(data, rng):
        return {"x": rng.random()}
    with pytest.raises(MechanismOutputError, match="unsupported type dict"):
        dpverify.audit(returns_dict, pairs=PAIRS, epsilon=1.0, n_jobs=1)


def test_mechanism_ignoring_rng_is_detected():
    def global_random(data, rng, size):
        return data + np.random.laplace(0, 1.0, size)
    with pytest.raises(RandomnessError, match="rng"):
        dpverify.audit(global_random, pairs=PAIRS, epsilon=1.0, n_jobs=1)


def test_bad_signature():
    with pytest.raises(MechanismError, match="data, rng"):
        dpverify.audit(lambda: 1, pairs=PAIRS, epsilon=1.0)
