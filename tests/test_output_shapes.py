"""Whatever a mechanism returns, an audit ends in a result or a typed DpVerifyError.

Randomly generated mechanisms (seeded, so every case reproduces) return ragged tuples, empty
outputs, None, strings, bools, ints, floats, −0.0, numpy scalars, nested tuples and mixtures of
them, beside a fresh float or not, in lists or numpy object arrays, batched or one at a time,
with rare long outputs and laws that depend on the input; one in ten now and then returns
something that cannot be audited (a dict, a set, NaN, a class). Each is audited at a small
budget; the only exceptions allowed are dpverify's own.
"""
import numpy as np
import pytest

import dpverify
from dpverify.errors import DpVerifyError

CASES = 200
UNSUPPORTED = ({"a": 1}, (1.0, float("nan")), {2, 3}, object)  # each raises a typed error
SAMPLES = 1 << 9
WORDS = ("a", "bb", "", "⊥", "none")


def _atom(rng, data):
    """One output atom, of a type drawn for this run (some depend on the input)."""
    kind = rng.integers(8)
    if kind == 0:
        return None
    if kind == 1:
        return str(rng.choice(WORDS)) + ("!" if data and rng.random() < 0.3 else "")
    if kind == 2:
        return bool(rng.random() < 0.5 + 0.2 * data)
    if kind == 3:
        return int(rng.integers(-2, 3)) + int(data)
    if kind == 4:
        return float(rng.normal(data, 1.0))
    if kind == 5:
        return float(rng.choice([0.0, -0.0, 1.0]))
    if kind == 6:
        return tuple(_atom(rng, data) for _ in range(rng.integers(0, 3)))
    return np.float32(rng.laplace(data, 1.0))


def _maker(case: int):
    """A mechanism whose output forms are drawn from `case`: a pool of outputs of fixed or
    ragged length, one atom type or mixed, empty, None, a rare long output, drawn with
    probabilities that depend on the input; optionally each beside a fresh float; returned in a
    list or an object array, batched or one at a time."""
    spec = np.random.default_rng(case)
    longest = int(spec.integers(0, 5))
    mixed = bool(spec.random() < 0.5)
    kind = int(spec.integers(8))
    pool = [None, (), tuple(float(x) for x in spec.normal(size=7))]
    for _ in range(21):
        length = int(spec.integers(0, longest + 1))
        sub = spec if mixed else np.random.default_rng([case, kind, int(spec.integers(1 << 30))])
        pool.append(tuple(_atom(sub, int(spec.integers(2))) for _ in range(length)))
    if spec.random() < 0.1:  # an output dpverify cannot audit, seen now and then
        pool.append(UNSUPPORTED[int(spec.integers(len(UNSUPPORTED)))])
    weights = spec.dirichlet(np.ones(len(pool)), size=2)
    weights[:, 2] *= float(spec.choice([0.0, 0.01, 0.2]))  # the rare long output
    weights /= weights.sum(axis=1, keepdims=True)
    with_float = bool(spec.random() < 0.4)
    as_array = bool(spec.random() < 0.3)
    scalar = bool(spec.random() < 0.15)

    def outputs(data, rng, size):
        picked = rng.choice(len(pool), size=size, p=weights[int(data)])
        if with_float:
            noise = rng.laplace(float(data), 1.0, size)
            return [(pool[i], float(x)) for i, x in zip(picked, noise)]
        return [pool[i] for i in picked]

    if scalar:
        def mechanism(data, rng):
            return outputs(data, rng, 1)[0]
    else:
        def mechanism(data, rng, size):
            found = outputs(data, rng, size)
            if as_array:
                array = np.empty(size, dtype=object)
                array[:] = found
                return array
            return found
    mechanism.__name__ = f"shapes_{case}"
    return dpverify.mechanism(epsilon=1.0, pairs=[(0, 1)])(mechanism)


@pytest.mark.parametrize("block", range(8))
def test_any_output_form_ends_in_a_result_or_a_typed_error(block):
    outcomes = {}
    for case in range(block, CASES, 8):
        try:
            result = dpverify.audit(_maker(case), samples=SAMPLES, seed=case, n_jobs=1,
                                    progress=False)
        except DpVerifyError as error:
            assert "Traceback" not in str(error)
            outcomes[type(error).__name__] = outcomes.get(type(error).__name__, 0) + 1
        else:
            assert result.verdict in ("violation", "pass")
            result.summary()
            result.as_dict()
            outcomes[result.outcome] = outcomes.get(result.outcome, 0) + 1
    assert sum(outcomes.values()) == len(range(block, CASES, 8))
