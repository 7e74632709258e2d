"""Whatever a mechanism returns, an audit ends in a result or a typed DpVerifyError.

Randomly generated mechanisms (seeded, so every case reproduces) return ragged tuples, empty
outputs, None, strings, bools, ints, floats, −0.0, numpy scalars, nested tuples and mixtures of
them, beside a fresh float or not, in lists or numpy object arrays, batched or one at a time,
with rare long outputs and laws that depend on the input; one in ten now and then returns
something that cannot be audited (a dict, a set, NaN, a class). Each is audited at a small
budget; the only exceptions allowed are dpverify's own, and only where such an output was drawn.

Others return a number (a float, an int, a small array) and, once in 10^3 to 10^4 runs, on one
input or both, another documented form (None, a string, a longer tuple, a bool): some chunks
then hold one and others none. They must all end in a result.
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
    unsupported = bool(spec.random() < 0.1)
    if unsupported:  # an output dpverify cannot audit, seen now and then
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
    return dpverify.mechanism(epsilon=1.0, pairs=[(0, 1)])(mechanism), unsupported


@pytest.mark.parametrize("block", range(8))
def test_any_output_form_ends_in_a_result_or_a_typed_error(block):
    outcomes = {}
    for case in range(block, CASES, 8):
        mechanism, unsupported = _maker(case)
        try:
            result = dpverify.audit(mechanism, samples=SAMPLES, seed=case, n_jobs=1,
                                    progress=False)
        except DpVerifyError as error:
            assert unsupported, f"case {case}: {error}"
            assert "Traceback" not in str(error)
            outcomes[type(error).__name__] = outcomes.get(type(error).__name__, 0) + 1
        else:
            assert result.verdict in ("violation", "pass")
            result.summary()
            result.as_dict()
            outcomes[result.outcome] = outcomes.get(result.outcome, 0) + 1
    assert sum(outcomes.values()) == len(range(block, CASES, 8))


RARE_CASES = 32
RARE = (None, "⊥", (0.5, 1.5, 2.5), True)  # documented forms, returned now and then
RARE_SAMPLES = 1 << 12


def _rare_maker(case: int):
    """A mechanism that returns data + Laplace(1) as a float, an int or a 2-array, and, at a
    rate of 10^-4 to 10^-3 on input 0, input 1 or both, one of RARE instead; scalar form (the
    engine stacks a chunk of numbers into one array) or batched, returning a list."""
    spec = np.random.default_rng([case, 1])
    rate = 10 ** spec.uniform(-4, -3)
    on = [(True, False), (False, True), (True, True)][int(spec.integers(3))]
    rare = RARE[int(spec.integers(len(RARE)))]
    base = int(spec.integers(3))

    def number(x):
        return (float(x), int(np.floor(x)), np.array([x, -x]))[base]

    def draw(data, rng, size):
        x = data + rng.laplace(0.0, 1.0, size)
        hit = rng.random(size) < rate if on[int(data)] else np.zeros(size, bool)
        return [rare if h else number(v) for h, v in zip(hit, x)]

    if spec.random() < 0.7:
        def mechanism(data, rng):
            return draw(data, rng, 1)[0]
    else:
        def mechanism(data, rng, size):
            return draw(data, rng, size)
    mechanism.__name__ = f"rare_{case}"
    return dpverify.mechanism(epsilon=1.0, pairs=[(0, 1)])(mechanism)


@pytest.mark.parametrize("block", range(4))
def test_a_rare_form_in_some_chunks_only_ends_in_a_result(block):
    for case in range(block, RARE_CASES, 4):
        result = dpverify.audit(_rare_maker(case), samples=RARE_SAMPLES, seed=case, n_jobs=1,
                                progress=False)
        assert result.verdict in ("violation", "pass"), case


def test_a_float_or_bottom_scalar_mechanism_audits_on_every_seed():
    """The scalar form returning a float, or None (⊥) below a threshold, as docs/usage.md
    allows: a post-processing of Laplace(1), so ε = 1 holds; no seed may raise, and false
    alarms stay rare."""
    @dpverify.mechanism(epsilon=1.0, pairs=[(0, 1)])
    def float_or_bottom(data, rng):
        x = data + rng.laplace(0.0, 1.0)
        return None if x < -1.5 else float(x)

    verdicts = [dpverify.audit(float_or_bottom, samples=1 << 12, seed=seed, n_jobs=1,
                               progress=False).verdict for seed in range(20)]
    assert verdicts.count("violation") <= 2


def test_a_number_is_encoded_alike_in_a_chunk_of_numbers_and_in_a_mixed_one():
    from dpverify.sampling.encoding import encode
    for outputs, exact in (([1.5, -0.0, 3], False), ([True, False], False), ([2.5, 3], True),
                           ([np.array([1.0, 2.0]), np.array([0.0, 4.0])], False)):
        plain, _ = encode(outputs, len(outputs), batched=False, exact_floats=exact)
        mixed, _ = encode(outputs + [None, "s"], len(outputs) + 2, batched=False,
                          exact_floats=exact)
        n = len(outputs)
        assert np.array_equal(plain.keys, mixed.keys[:n]), outputs
        assert np.array_equal(plain.struct, mixed.struct[:n]), outputs
        assert np.array_equal(plain.X, mixed.X[:n, :plain.X.shape[1]]), outputs
        assert len(set(mixed.keys[n:]) & set(plain.keys)) == 0
