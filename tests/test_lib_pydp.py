"""dpverify.libraries.pydp: claims read from real pydp objects, neighbouring pairs one privacy
unit apart at the bounds, typed errors, pickling, and end-to-end audits (pydp draws its own,
unseedable randomness, so the audits here are seeded but not bit-reproducible; each runs at
confidence 0.999, so a correct claim fails a test with probability below 0.1%)."""
import pickle
from collections import Counter

import pytest

pytest.importorskip("pydp")

import dpverify  # noqa: E402
from pydp.algorithms import laplacian as L  # noqa: E402
from pydp.algorithms import numerical_mechanisms as N  # noqa: E402
from pydp.algorithms import partition_selection as P  # noqa: E402
from dpverify.errors import DpVerifyError, InvalidClaimError, InvalidPairsError  # noqa: E402
from dpverify.libraries.pydp import (BASE_RECORDS, from_algorithm, from_mechanism,  # noqa: E402
                                     from_partition_selection)

SURE = 0.999
BOUNDS = dict(lower_bound=-1.0, upper_bound=2.0, dtype="float")

# ------------------------------------------------------------------------------- claims ---


def test_mechanism_claims_are_the_instances_own_figures():
    laplace = N.LaplaceMechanism(epsilon=0.7, sensitivity=2.0)
    mech = from_mechanism(laplace)
    assert (mech.epsilon, mech.delta) == (laplace.epsilon, 0.0) == (0.7, 0.0)
    assert mech.name == "pydp:LaplaceMechanism(epsilon=0.7, sensitivity=2.0)"
    assert mech.randomness == "own" and mech.batched and mech.backend == "loky"
    gaussian = N.GaussianMechanism(epsilon=0.9, delta=1e-4, sensitivity=3.0)
    mech = from_mechanism(gaussian)
    assert (mech.epsilon, mech.delta) == (gaussian.epsilon, gaussian.delta) == (0.9, 1e-4)


@pytest.mark.parametrize("cls, kwargs", [
    (L.BoundedMean, dict(epsilon=0.8, delta=1e-5, **BOUNDS)),
    (L.Percentile, dict(epsilon=1.3, percentile=0.25, **BOUNDS)),
    (L.Count, dict(epsilon=0.6, l0_sensitivity=2, linf_sensitivity=3)),
])
def test_algorithm_claims_are_the_built_algorithms_epsilon_and_delta(cls, kwargs):
    mech = from_algorithm(cls, **kwargs)
    library = cls(**kwargs)
    assert (mech.epsilon, mech.delta) == (library.epsilon, library.delta)
    assert mech.epsilon == kwargs["epsilon"] and mech.delta == kwargs.get("delta", 0.0)
    assert mech.name.startswith(f"pydp:{cls.__name__}(epsilon={kwargs['epsilon']!r}")


def test_partition_selection_claim_is_the_strategys():
    strategy = P.create_partition_strategy("gaussian", 0.5, 1e-4, 2)
    mech = from_partition_selection(strategy)
    assert (mech.epsilon, mech.delta) == (strategy.epsilon, strategy.delta) == (0.5, 1e-4)
    assert mech.name == ("pydp:create_partition_strategy('gaussian', epsilon=0.5, "
                         "delta=0.0001, max_partitions_contributed=2)")


# -------------------------------------------------------------------------------- pairs ---

def _one_unit_apart(a, b, linf):
    """b is a plus `linf` copies of one record (or the other way round)."""
    small, big = (a, b) if len(a) < len(b) else (b, a)
    added = Counter(big) - Counter(small)
    return not (Counter(small) - Counter(big)) and list(added.values()) == [linf]


def test_mechanism_pairs_are_the_sensitivity_apart():
    assert from_mechanism(N.LaplaceMechanism(1.0, 2.5)).pairs == [(0.0, 2.5)]
    assert from_mechanism(N.GaussianMechanism, epsilon=1.0, delta=1e-5, sensitivity=2.5,
                          dtype="int").pairs == [(0, 2)]


@pytest.mark.parametrize("linf", [1, 3])
def test_algorithm_pairs_add_one_unit_at_the_bounds_with_the_empty_dataset(linf):
    mech = from_algorithm(L.BoundedSum, epsilon=1.0, linf_sensitivity=linf, **BOUNDS)
    for a, b in mech.pairs:
        assert _one_unit_apart(a, b, linf)
        assert all(-1.0 <= x <= 2.0 and isinstance(x, float) for x in a + b)
    assert ([], [2.0] * linf) in mech.pairs and ([], [-1.0] * linf) in mech.pairs
    # records at one bound against one unit more at the other bound
    assert ([-1.0] * BASE_RECORDS, [-1.0] * BASE_RECORDS + [2.0] * linf) in mech.pairs
    # the int dtype gets whole numbers
    ints = from_algorithm(L.Max, epsilon=1.0, lower_bound=0, upper_bound=4, dtype="int")
    assert all(type(x) is int for a, b in ints.pairs for x in a + b)


def test_several_partitions_hold_the_unit_in_each():
    mech = from_algorithm(L.Count, epsilon=1.0, l0_sensitivity=2, linf_sensitivity=2)
    assert ((([], []), ([0, 0], [0, 0]))) in mech.pairs
    for a, b in mech.pairs:
        assert isinstance(a, tuple) and len(a) == len(b) == 2
        assert all(_one_unit_apart(x, y, 2) for x, y in zip(a, b))
    output = mech.fn(mech.pairs[0][1], None)
    assert isinstance(output, tuple) and len(output) == 2


def test_partition_pairs_are_one_user_apart_around_where_keeping_starts():
    strategy = P.create_partition_strategy("laplace", 1.0, 1e-3, 1)
    pairs = from_partition_selection(strategy).pairs
    assert (0, 1) in pairs and all(b == a + 1 for a, b in pairs)
    kept = [strategy.probability_of_keep(b) for _, b in pairs]
    assert max(kept) >= 0.5 and any(0.1 <= p < 0.5 for p in kept)
    pre = from_partition_selection("laplace", epsilon=1.0, delta=1e-3,
                                   max_partitions_contributed=1, pre_threshold=3).pairs
    assert (2, 3) in pre and (0, 1) not in pre  # below the pre-threshold nothing is kept
    two = from_partition_selection("truncated_geometric", epsilon=1.0, delta=1e-3,
                                   max_partitions_contributed=2).pairs
    assert ((0, 0), (1, 1)) in two


# ------------------------------------------------------------------------------ errors ---

def test_a_bounded_instance_cannot_be_adapted_and_the_error_says_what_to_pass():
    with pytest.raises(DpVerifyError, match=r"BoundedMean.*lower_bound.*from_algorithm\("
                                            r"BoundedMean"):
        from_algorithm(L.BoundedMean(epsilon=1.0, **BOUNDS))
    count = from_algorithm(L.Count(epsilon=0.5, linf_sensitivity=2, dtype="float"))
    assert count.epsilon == 0.5 and ([], [0.0, 0.0]) in count.pairs


def test_bad_inputs_raise_typed_errors():
    with pytest.raises(InvalidPairsError, match="no lower_bound/upper_bound"):
        from_algorithm(L.BoundedSum, epsilon=1.0, dtype="float")
    with pytest.raises(InvalidClaimError, match="epsilon = 0"):
        from_mechanism(N.GaussianMechanism.create_from_standard_deviation(2.0))
    with pytest.raises(InvalidPairsError, match="whole numbers"):
        from_mechanism(N.LaplaceMechanism(1.0, 0.5), dtype="int")
    with pytest.raises(DpVerifyError, match="entry must be one of"):
        from_algorithm(L.Count, entry="result")
    with pytest.raises(DpVerifyError, match="strategy must be one of"):
        from_partition_selection("geometric", epsilon=1.0, delta=1e-3,
                                 max_partitions_contributed=1)


# ------------------------------------------------------------------- draws and pickling ---

@pytest.mark.parametrize("build", [
    lambda: from_mechanism(N.LaplaceMechanism(1.0, 1.0)),
    lambda: from_algorithm(L.BoundedMean, epsilon=1.0, **BOUNDS),
    lambda: from_algorithm(L.Median, epsilon=1.0, entry="add_entries", **BOUNDS),
    lambda: from_partition_selection("laplace", epsilon=1.0, delta=1e-3,
                                     max_partitions_contributed=1),
])
def test_the_mechanism_pickles_and_still_draws(build):
    mech = build()
    copy = pickle.loads(pickle.dumps(mech))
    data = mech.pairs[-1][1]
    outputs = [copy.fn(data, None) for _ in range(50)]
    assert (copy.name, copy.epsilon, copy.delta) == (mech.name, mech.epsilon, mech.delta)
    assert all(isinstance(o, (bool, int, float)) for o in outputs)
    if not isinstance(outputs[0], bool):
        assert len(set(outputs)) > 1  # fresh noise on every run


def test_both_entry_points_compute_the_same_statistic():
    # at a huge epsilon the noise vanishes: both entry points return the exact sum
    data = [0.5, 1.5, 2.0, -1.0]
    for entry in ("quick_result", "add_entries"):
        mech = from_algorithm(L.BoundedSum, epsilon=1e6, entry=entry, **BOUNDS)
        assert [round(mech.fn(data, None), 2) for _ in range(3)] == [3.0] * 3


# ---------------------------------------------------------------------------- end to end ---

def test_a_correct_laplace_mechanism_passes_at_its_claim():
    result = dpverify.audit(from_mechanism(N.LaplaceMechanism(1.0, 1.0)), samples=1 << 12,
                            seed=0, confidence=SURE)
    assert result.verdict == "pass" and result.randomness == "own"
    assert result.epsilon_lower_bound <= 1.0  # its true ε on (0, 1)


def test_a_sensitivity_set_too_small_by_hand_is_flagged():
    # the query moves by 1 between neighbours, but the mechanism was built for sensitivity
    # 0.5 and claims ε = 1: its true ε on these inputs is 2
    broken = from_mechanism(N.LaplaceMechanism(epsilon=1.0, sensitivity=0.5),
                            pairs=[(0.0, 1.0)])
    result = dpverify.audit(broken, samples=1 << 12, seed=0, confidence=SURE)
    assert result.verdict == "violation" and 1.0 < result.epsilon_lower_bound <= 2.0


def test_a_contribution_limit_set_too_small_by_hand_is_flagged():
    # each privacy unit brings 2 records, but the sum was built with linf_sensitivity=1
    broken = from_algorithm(L.BoundedSum, epsilon=1.0, linf_sensitivity=1, **BOUNDS,
                            pairs=[([], [2.0, 2.0])])
    result = dpverify.audit(broken, samples=1 << 12, seed=0, confidence=SURE)
    assert result.verdict == "violation" and 1.0 < result.epsilon_lower_bound <= 2.0  # true 2
    honest = from_algorithm(L.BoundedSum, epsilon=1.0, linf_sensitivity=2, **BOUNDS)
    assert ([], [2.0, 2.0]) in honest.pairs  # built with the right limit, the pair is its own
