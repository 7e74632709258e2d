"""dpverify.libraries.opendp: claims read from real OpenDP measurements, neighbouring pairs at
the declared distance, typed errors, pickling, and end-to-end audits (OpenDP draws its own,
unseedable randomness, so the audits here are seeded but not bit-reproducible)."""
import dataclasses
import math
import pickle
from collections import Counter

import numpy as np
import pytest

dp = pytest.importorskip("opendp.prelude")

import dpverify  # noqa: E402
from dpverify.errors import InvalidClaimError, InvalidPairsError  # noqa: E402
from dpverify.libraries.opendp import DEFAULT_DELTA, ScalarDraws, from_measurement  # noqa: E402

dp.enable_features("contrib", "honest-but-curious")

FLOAT = dp.atom_domain(T=float, nan=False)


def laplace(scale=1.0):
    return dp.m.make_laplace(FLOAT, dp.absolute_distance(T=float), scale=scale)


def gaussian(scale=1.0):
    return dp.m.make_gaussian(FLOAT, dp.absolute_distance(T=float), scale=scale)


def partitions():
    return dp.map_domain(dp.atom_domain(T=str), FLOAT)


# ------------------------------------------------------------------------------- claims ---

def test_pure_dp_epsilon_is_read_from_the_privacy_map_at_d_in():
    mech = from_measurement(laplace(2.0))
    assert (mech.epsilon, mech.delta, mech.zcdp) == (0.5, 0.0, None)
    assert from_measurement(laplace(2.0), d_in=2).epsilon == 1.0
    assert mech.randomness == "own" and mech.name == "opendp:make_laplace(scale=2.0)"


@pytest.mark.parametrize("d_in", [1, 2])
def test_zcdp_rho_is_read_from_a_gaussian(d_in):
    sigma = 2.0
    mech = from_measurement(gaussian(sigma), d_in=d_in)
    assert mech.epsilon is None
    assert mech.zcdp == pytest.approx(d_in ** 2 / (2 * sigma ** 2))


def test_approximate_dp_is_read_as_epsilon_and_delta():
    threshold = dp.m.make_laplace_threshold(
        partitions(), dp.l01inf_distance(dp.absolute_distance(T=float)), scale=1.0,
        threshold=5.0)
    mech = from_measurement(threshold)
    eps, delta = threshold.map((1, 1.0, 1.0))
    assert (mech.epsilon, mech.delta) == (eps, delta)
    assert eps == 1.0 and delta == pytest.approx(0.5 * math.exp(-4), rel=0.01)

    fixed = dp.c.make_fix_delta(dp.c.make_zCDP_to_approxDP(gaussian(1.0)), 1e-7)
    mech = from_measurement(fixed)
    assert (mech.epsilon, mech.delta) == fixed.map(1.0)


def test_a_privacy_profile_is_read_at_the_given_delta():
    profile_measurement = dp.c.make_zCDP_to_approxDP(gaussian(1.0))
    profile = profile_measurement.map(1.0)
    mech = from_measurement(profile_measurement)
    assert mech.delta == DEFAULT_DELTA == 1e-6
    assert mech.epsilon == pytest.approx(profile.epsilon(1e-6))
    mech = from_measurement(profile_measurement, delta=1e-3)
    assert (mech.epsilon, mech.delta) == (pytest.approx(profile.epsilon(1e-3)), 1e-3)
    # ρ = 1/2: ε(δ) ≤ ρ + 2√(ρ ln(1/δ)), the standard conversion OpenDP improves on
    assert mech.epsilon <= 0.5 + 2 * math.sqrt(0.5 * math.log(1e3))


def test_an_unreadable_measure_raises_invalid_claim_naming_the_measurement():
    renyi = dp.m.make_user_measurement(
        FLOAT, dp.absolute_distance(T=float), dp.renyi_divergence(),
        function=lambda x: x, privacy_map=lambda d: (lambda alpha: alpha), TO=float)
    with pytest.raises(InvalidClaimError, match=r"make_user_measurement.*RenyiDivergence"):
        from_measurement(renyi)
    assert from_measurement(renyi, epsilon=1.0).epsilon == 1.0  # the claim stated instead


# -------------------------------------------------------------------------------- pairs ---

def _symmetric_distance(a, b):
    return sum(((Counter(a) - Counter(b)) + (Counter(b) - Counter(a))).values())


@pytest.mark.parametrize("d_in", [1, 2])
def test_atom_pairs_are_at_absolute_distance_d_in(d_in):
    for meas, kind in [(laplace(), float),
                       (dp.m.make_geometric(dp.atom_domain(T=int), dp.absolute_distance(T=int),
                                            1.0), int)]:
        pairs = from_measurement(meas, d_in=d_in).pairs
        assert len(pairs) >= 2
        for a, b in pairs:
            assert type(a) is kind and abs(a - b) == d_in
    bounded = dp.m.make_geometric(dp.atom_domain(bounds=(0, 10)),
                                  dp.absolute_distance(T=int), 1.0)
    for a, b in from_measurement(bounded, d_in=d_in).pairs:
        assert 0 <= a <= 10 and 0 <= b <= 10 and abs(a - b) == d_in


@pytest.mark.parametrize("d_in", [1, 2])
@pytest.mark.parametrize("metric, norm", [("l1", 1), ("l2", 2)])
def test_vector_pairs_are_at_lp_distance_d_in(d_in, metric, norm):
    domain = dp.vector_domain(FLOAT, size=4)
    if metric == "l1":
        meas = dp.m.make_laplace(domain, dp.l1_distance(T=float), 1.0)
    else:
        meas = dp.m.make_gaussian(domain, dp.l2_distance(T=float), 1.0)
    pairs = from_measurement(meas, d_in=d_in).pairs
    assert len(pairs) == 2 and any(np.count_nonzero(np.subtract(b, a)) == 2 for a, b in pairs)
    for a, b in pairs:
        assert len(a) == len(b) == 4
        distance = np.linalg.norm(np.subtract(b, a), ord=norm)
        assert distance <= d_in and distance == pytest.approx(d_in, rel=1e-12)


@pytest.mark.parametrize("d_in", [1, 2])
def test_symmetric_distance_pairs_add_records_at_the_clamp_bounds(d_in):
    pipeline = (dp.t.make_clamp(dp.vector_domain(FLOAT), dp.symmetric_distance(), (0.0, 4.0))
                >> dp.t.then_sum() >> dp.m.then_laplace(4.0))
    mech = from_measurement(pipeline, d_in=d_in)
    assert mech.name == ("opendp:make_clamp(bounds=(0.0, 4.0)) >> make_sum() >> "
                         "make_laplace(scale=4.0)")
    for a, b in mech.pairs:
        assert _symmetric_distance(a, b) == d_in
        assert all(0.0 <= x <= 4.0 for x in a + b)
    # the sum's sensitivity is hit: the added records sit at the bound of largest magnitude
    assert any(abs(sum(b) - sum(a)) == 4.0 * d_in for a, b in mech.pairs)
    counts = dp.t.make_count_by_categories(dp.vector_domain(dp.atom_domain(T=str)),
                                           dp.symmetric_distance(), ["x", "y"])
    count_pairs = from_measurement(counts >> dp.m.then_laplace(1.0), d_in=d_in).pairs
    for a, b in count_pairs:
        assert _symmetric_distance(a, b) == d_in
    # the corners: the empty dataset, and records of a category none of x, y (the null count)
    assert ([], ["y"] * d_in) in count_pairs
    assert any(set(b) - {"x", "y"} and set(a) <= {"x", "y"} for a, b in count_pairs)
    assert ([], [4.0] * d_in) in mech.pairs


def test_sized_datasets_replace_records_and_need_an_even_symmetric_distance():
    sized = (dp.t.make_sum(dp.vector_domain(dp.atom_domain(bounds=(0, 3)), size=5),
                           dp.symmetric_distance()) >> dp.m.then_laplace(3.0))
    (a, b), = from_measurement(sized, d_in=2).pairs
    assert len(a) == len(b) == 5 and _symmetric_distance(a, b) == 2
    with pytest.raises(InvalidPairsError, match="d_in=2"):
        from_measurement(sized, d_in=1)


BOUNDED_RECORDS = dp.atom_domain(bounds=(0.0, 4.0), nan=False)


def _user_measurement(domain, metric, function=lambda x: 0.0, privacy_map=float, TO=float):
    return dp.m.make_user_measurement(domain, metric, dp.max_divergence(), function=function,
                                      privacy_map=privacy_map, TO=TO)


@pytest.mark.parametrize("size, metric, d_in, lengths_differ", [
    (None, dp.symmetric_distance(), 1, True),
    (None, dp.insert_delete_distance(), 2, True),
    (3, dp.symmetric_distance(), 2, False),       # a sized domain: records are replaced
    (3, dp.change_one_distance(), 1, False),
    (3, dp.hamming_distance(), 1, False),
    (None, dp.change_one_distance(), 1, False),   # changes records of one length, sized or not
])
def test_datasets_differ_in_length_exactly_where_the_domain_and_metric_admit_it(
        size, metric, d_in, lengths_differ):
    mech = from_measurement(_user_measurement(dp.vector_domain(BOUNDED_RECORDS, size=size),
                                              metric), d_in=d_in)
    grown = [b for a, b in mech.pairs if len(b) == len(a) + d_in]
    if lengths_differ:  # the corners: nothing against d_in records, and a dataset plus d_in
        assert ([], [4.0] * d_in) in mech.pairs
        assert any(len(b) > d_in and set(b) - {4.0} for b in grown)
        assert all(_symmetric_distance(a, b) == d_in for a, b in mech.pairs)
    else:
        assert mech.pairs and all(len(a) == len(b) for a, b in mech.pairs)
        assert all(len(a) == size for a, _ in mech.pairs if size)


def test_an_unsupported_domain_raises_invalid_pairs_naming_the_measurement():
    option = dp.m.make_user_measurement(
        dp.option_domain(dp.atom_domain(T=float)), dp.absolute_distance(T=float),
        dp.max_divergence(), function=lambda x: 1.0, privacy_map=lambda d: float(d), TO=float)
    with pytest.raises(InvalidPairsError,
                       match=r"make_user_measurement.*OptionDomain.*AbsoluteDistance.*pairs="):
        from_measurement(option)
    assert from_measurement(option, pairs=[(1.0, 2.0)]).pairs == [(1.0, 2.0)]


def test_symmetric_distance_must_be_a_whole_number():
    count = dp.t.make_count(dp.vector_domain(dp.atom_domain(T=int)), dp.symmetric_distance())
    with pytest.raises(InvalidPairsError, match="whole number"):
        from_measurement(count >> dp.m.then_geometric(1.0), d_in=1.5)


# ------------------------------------------------------------------- draws and pickling ---

def test_batched_draws_return_exactly_size_outputs_and_dicts_become_sorted_pairs():
    mech = from_measurement(laplace())
    assert mech.batched
    out = mech.fn(0.0, None, 1000)  # 512 + 256 + 128 + 64 + 32 + 8: six composed calls
    assert isinstance(out, np.ndarray) and out.shape == (1000,) and len(set(out)) == 1000
    threshold = dp.m.make_laplace_threshold(
        partitions(), dp.l01inf_distance(dp.absolute_distance(T=float)), 1.0, threshold=2.0)
    outs = from_measurement(threshold).fn({"b": 50.0, "a": 50.0}, None, 3)
    assert [tuple(k for k, _ in o) for o in outs] == [("a", "b")] * 3


@pytest.mark.parametrize("make", [
    laplace,
    lambda: dp.m.make_laplace_threshold(  # OpenDP's JSON encoder refuses this measure
        partitions(), dp.l01inf_distance(dp.absolute_distance(T=float)), 1.0, threshold=5.0),
])
def test_the_mechanism_pickles_and_still_draws(make):
    mech = from_measurement(make())
    copy = pickle.loads(pickle.dumps(mech))
    data = mech.pairs[0][0]
    assert len(copy.fn(data, None, 4)) == 4
    assert (copy.name, copy.epsilon, copy.delta) == (mech.name, mech.epsilon, mech.delta)


# ---------------------------------------------------------------------------- end to end ---
# OpenDP's noise cannot be seeded, so these audits differ from run to run: each runs at
# confidence 0.999, which keeps the chance that a correct claim fails a test below 0.1%.
SURE = 0.999


def test_laplace_passes_at_its_own_claim():
    # 2^13 runs per input: OpenDP draws through its Python bindings (~30 µs a value), and the
    # half-claim test below shows the same audit has the power to flag a wrong claim
    result = dpverify.audit(from_measurement(laplace(1.0)), samples=1 << 13, seed=0,
                            confidence=SURE)
    assert result.verdict == "pass" and result.epsilon_lower_bound > 0.5
    assert result.randomness == "own" and not result.reproducible


def test_laplace_is_flagged_at_half_its_claim_and_the_bound_stays_below_the_truth():
    result = dpverify.audit(from_measurement(laplace(1.0)), epsilon=0.5, samples=1 << 14,
                            seed=0, confidence=SURE)
    assert result.verdict == "violation"
    assert 0.5 < result.epsilon_lower_bound <= 1.0


def test_a_stability_map_set_wrong_by_hand_is_flagged_and_the_bound_stays_below_the_truth():
    """A user transformation doubles its input but declares sensitivity d_in, not 2 d_in: the
    chain's map then claims ε = 1 for Laplace noise of scale 1 on a value that moves by 2, whose
    true ε is 2. The adapter reads the wrong claim from OpenDP and the audit flags it."""
    distance = dp.absolute_distance(T=float)
    doubled = dp.t.make_user_transformation(FLOAT, distance, FLOAT, distance,
                                            function=lambda x: 2.0 * x,
                                            stability_map=lambda d_in: d_in)
    mech = from_measurement(doubled >> dp.m.then_laplace(scale=1.0))
    assert mech.epsilon == 1.0
    result = dpverify.audit(mech, samples=1 << 13, seed=0, confidence=SURE)
    assert result.verdict == "violation"
    assert 1.0 < result.epsilon_lower_bound <= 2.0


def test_the_scalar_form_is_sent_pickled_to_worker_processes():
    # the preflight of an own-randomness mechanism always runs through the loky pool
    mech = from_measurement(laplace(1.0), pairs=[(0.0, 1.0)])
    scalar = dataclasses.replace(mech, fn=ScalarDraws(laplace(1.0)), batched=False)
    result = dpverify.audit(scalar, epsilon=0.5, samples=1 << 12, seed=0, backend="loky",
                            confidence=SURE)
    assert result.verdict == "violation" and 0.5 < result.epsilon_lower_bound <= 1.0


def test_a_release_of_the_datasets_length_is_flagged_on_the_pair_of_two_lengths():
    """Under the symmetric distance on an unsized domain the length is private: a real
    clamp >> sum >> laplace whose output also carries len(data) is no ε-DP at all. The pairs
    add records, so the audit sees two lengths; a pair of one length at the same distance
    (a record replaced is symmetric distance 2) shows nothing."""
    inner = (dp.t.make_clamp(dp.vector_domain(FLOAT), dp.symmetric_distance(), (0.0, 1.0))
             >> dp.t.then_sum() >> dp.m.then_laplace(1.0))
    leak = _user_measurement(inner.input_domain, inner.input_metric,
                             function=lambda x: (inner(x), len(x)), privacy_map=inner.map,
                             TO="ExtrinsicObject")
    mech = from_measurement(leak, d_in=2, name="clamp >> sum >> laplace, and len(data)")
    result = dpverify.audit(mech, samples=1 << 11, seed=0, confidence=SURE)
    assert result.verdict == "violation" and result.witness.support_mismatch
    assert len(result.witness.D) != len(result.witness.D_prime)
    one_length = dpverify.audit(mech, pairs=[([0.0, 1.0], [1.0, 1.0])], samples=1 << 11,
                                seed=0, confidence=SURE)
    assert one_length.verdict == "pass"
