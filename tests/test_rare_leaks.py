"""Rare leaks are found (docs/method.md, "Rare leaks"): an exact value, a flag or a far region
that one input gives in 1 run of 10^4 and the other never, at the default budget (where the
search sample holds about a dozen leaked runs; more often, betting already catches them). The mechanisms here are not those
of reports/adversarial.md: a vector whose third coordinate is sometimes the input itself, a
flag column raised under one input only, and a release far in the tail; and, as the correct
counterpart, an atom both inputs give at the same rate."""
import math

import numpy as np
import pytest

import dpverify
from dpverify.attacks import Candidate
from dpverify.attacks.atoms import ATOM_REPEATS, learn_atom_ratio
from dpverify.attacks.linear import Coordinate
from dpverify.attacks.planning import PAIRED_EXTRA_Z, expected_bounds
from dpverify.pipeline.selection import ONE_SIDED_LEVEL, one_sided_hedges
from dpverify.sampling.encoding import encode
from dpverify.stats import expected_bound_and_method

LEAK = 1e-4


def _encoded(values: np.ndarray):
    enc = encode(values, len(values))[0]
    enc.X = enc.X.astype(np.float32)  # as the search stores it
    return enc


def test_atoms_are_the_values_that_repeat_inside_a_continuous_coordinate():
    rng = np.random.default_rng(0)
    a, b = rng.laplace(0, 1, (20000, 2)), rng.laplace(0, 1, (20000, 2))
    a[:6, 1], b[:4, 1] = 0.1, -3.0  # 0.1 only under D, −3 only under D′
    a[6:10, 1], b[4:8, 1] = 2.5, 2.5  # as often under both
    model = learn_atom_ratio(_encoded(a), _encoded(b))
    assert [v.column for v in model.views] == [1, None][:len(model.views)]
    view = model.views[0]
    assert view.values.tolist() == pytest.approx([-3.0, 0.1, 2.5])
    assert view.counts[0].tolist() == [0, 6, 4] and view.counts[1].tolist() == [4, 0, 4]
    # scored on float64 outputs, as certifying chunks hold them: 0.1 is found through float32
    probe = encode(np.array([[0.0, 0.1], [0.0, -3.0], [0.0, 2.5], [0.0, 0.7]]), 4)[0]
    s = model.score(probe)
    assert s[0] > 2 and s[1] < -2 and s[2] == pytest.approx(0.0) and s[3] == 0.0


def test_a_coordinate_most_of_whose_values_repeat_is_left_to_the_discrete_models():
    rng = np.random.default_rng(1)
    a, b = rng.integers(0, 50, 20000).astype(float), rng.integers(0, 50, 20000).astype(float)
    assert learn_atom_ratio(_encoded(a), _encoded(b)) is None
    # continuous values never repeat ATOM_REPEATS times in float64
    a, b = rng.laplace(0, 1, 20000), rng.laplace(0, 1, 20000)
    enc_a, enc_b = encode(a, len(a))[0], encode(b, len(b))[0]
    assert ATOM_REPEATS >= 3 and learn_atom_ratio(enc_a, enc_b) is None


def _candidate(pair, k_p, direction=0, m=100000):
    return Candidate(pair, direction, Coordinate(0), 1, 1.0, -1.0, (k_p, m, 0, m),
                     one_sided=True)


def test_a_hedge_on_an_untracked_pair_needs_a_split_the_claim_makes_unlikely():
    rng = np.random.default_rng(2)
    data = {p: tuple(encode(rng.normal(size=64), 64)[0] for _ in range(2)) for p in range(4)}
    probes = [_candidate(0, 500)]
    epsilon = 0.1
    # on pair 1 (not probed) the split k:0 must have chance ≤ ONE_SIDED_LEVEL / 4 at e^0.1
    needed = math.ceil(math.log(ONE_SIDED_LEVEL / 4) / math.log(1 / (1 + math.exp(-epsilon))))
    short, enough = _candidate(1, needed - 1), _candidate(1, needed)
    assert one_sided_hedges([short], probes, data, 2, epsilon, 0.0) == []
    assert one_sided_hedges([enough], probes, data, 2, epsilon, 0.0) == [enough]
    # on the probed pair it costs only its grid: taken with 3 hits ...
    cheap = _candidate(0, 3, direction=1)
    assert one_sided_hedges([cheap], probes, data, 2, epsilon, 0.0) == [cheap]
    # ... unless δ allows that rate under P alone
    assert one_sided_hedges([cheap], probes, data, 2, epsilon, 1e-4) == []
    assert one_sided_hedges([cheap, enough], probes, data, 1, epsilon, 0.0) == [cheap]
    # two hedges selecting the same search outputs are tracked once
    assert one_sided_hedges([enough, _candidate(1, 60)], probes, data, 2, epsilon,
                            0.0) == [enough]


def test_a_threshold_one_input_never_hit_keeps_the_independent_shrink():
    """A paired sample's extra shrink is for paired estimates; a zero count has none."""
    k_p, k_q, m = np.array([30.0, 4000.0]), np.array([0.0, 1500.0]), 1 << 18
    variance = np.array([np.inf, 1e-3])
    paired, _ = expected_bounds(k_p, m, k_q, m, variance, 1 << 22, 0.0, 0.01, 1.5, 0)
    alone, _ = expected_bound_and_method(k_p[:1], m, k_q[:1], m, 1 << 22, 0.0, 0.01, 1.5)
    harsher, _ = expected_bound_and_method(k_p[:1], m, k_q[:1], m, 1 << 22, 0.0, 0.01,
                                           1.5 + PAIRED_EXTRA_Z)
    assert paired[0] == pytest.approx(alone[0]) and alone[0] > harsher[0]


@dpverify.mechanism(epsilon=1.0, pairs=[(1.0, 0.0)])
def input_in_one_coordinate(data, rng, size):
    """Laplace on two coordinates; in 1 run of 10^4 the second is the input itself."""
    out = data + rng.laplace(0.0, 2.0, (size, 2))
    out[rng.random(size) < LEAK, 1] = data
    return out


@dpverify.mechanism(epsilon=1.0, pairs=[(1.0, 0.0)])
def flag_under_one_input(data, rng, size):
    """Laplace with a second column that is 1 in 1 run of 10^4 under data = 1, else 0."""
    out = np.zeros((size, 2))
    out[:, 0] = data + rng.laplace(0.0, 1.0, size)
    out[:, 1] = (rng.random(size) < LEAK) & (data == 1.0)
    return out


@dpverify.mechanism(epsilon=1.0, pairs=[(1.0, 0.0)])
def far_release(data, rng, size):
    """Laplace that in 1 run of 10^4 releases 100·data plus unit Gaussian noise."""
    out = data + rng.laplace(0.0, 1.0, size)
    leak = rng.random(size) < LEAK
    out[leak] = 100 * data + rng.normal(0.0, 1.0, int(leak.sum()))
    return out


@dpverify.mechanism(epsilon=1.0, pairs=[(1.0, 0.0)])
def shared_atom(data, rng, size):
    """Laplace at its claim that outputs exactly 0.25 in 1 run of 10^3 on either input: an atom,
    but no leak (ε = 1 exactly)."""
    out = data + rng.laplace(0.0, 1.0, size)
    out[rng.random(size) < 1e-3] = 0.25
    return out


@pytest.mark.parametrize("mechanism", [input_in_one_coordinate, flag_under_one_input,
                                       far_release], ids=lambda m: m.name)
@pytest.mark.parametrize("seed", [3])
def test_a_leak_in_one_run_of_ten_thousand_is_caught(mechanism, seed):
    result = dpverify.audit(mechanism, seed=seed)
    assert result.verdict == "violation", result.summary()
    assert result.epsilon_lower_bound > 1.0


@pytest.mark.parametrize("seed", [3])
def test_an_atom_both_inputs_give_alike_is_no_violation(seed):
    result = dpverify.audit(shared_atom, seed=seed)
    assert result.verdict == "pass" and result.conclusive, result.summary()
