"""dpverify.libraries.tumult: claims read from real Tumult Core measurements, neighbouring pairs at
the declared distance (measured by Tumult Core's own metrics), typed errors, pickling, seeding
from the engine's rng, and end-to-end audits of a deliberately broken pipeline and its correct
twin. Audits run on threads (no worker processes to start) with small budgets: a Tumult Core
draw costs 0.1-1 ms."""
import math
import pickle
from collections import Counter
from fractions import Fraction

import numpy as np
import pytest

pytest.importorskip("tmlt.core")

from tmlt.core.domains.collections import DictDomain, ListDomain  # noqa: E402
from tmlt.core.domains.numpy_domains import (NumpyFloatDomain, NumpyIntegerDomain,  # noqa: E402
                                             NumpyStringDomain)
from tmlt.core.domains.pandas_domains import (PandasDataFrameDomain,  # noqa: E402
                                              PandasSeriesDomain)
from tmlt.core.measurements.base import Measurement  # noqa: E402
from tmlt.core.measurements.converters import (PureDPToApproxDP,  # noqa: E402
                                               RhoZCDPToApproxDP)
from tmlt.core.measurements.interactive_measurements import MakeInteractive  # noqa: E402
from tmlt.core.measurements.noise_mechanisms import (AddGaussianNoise,  # noqa: E402
                                                     AddGeometricNoise, AddLaplaceNoise)
from tmlt.core.measurements.pandas_measurements.dataframe import AggregateByColumn  # noqa: E402
from tmlt.core.measurements.pandas_measurements.series import (AddNoiseToSeries,  # noqa: E402
                                                                NoisyQuantile)
from tmlt.core.measures import PureDP, RhoZCDP  # noqa: E402
from tmlt.core.metrics import (AbsoluteDifference, DictMetric, HammingDistance,  # noqa: E402
                               SumOf, SymmetricDifference)
from tmlt.core.transformations.base import Transformation  # noqa: E402
from tmlt.core.transformations.dictionary import GetValue  # noqa: E402
from tmlt.core.utils.exact_number import ExactNumber  # noqa: E402

import dpverify  # noqa: E402
from dpverify.errors import DpVerifyError, InvalidClaimError, InvalidPairsError  # noqa: E402
from dpverify.libraries.tumult import (build_pairs, from_measurement, input_form,  # noqa: E402
                                       prepare)

FLOATS = NumpyFloatDomain()
INT_SERIES = PandasSeriesDomain(NumpyIntegerDomain())


class ClampedSum(Transformation):
    """A user's transformation: the sum of a Series of ints clamped to [lower, upper]. Its
    stability function says each record moves the sum by `declared` (correct: the larger of
    |lower| and |upper|); a wrong `declared` is a sensitivity set wrong by hand."""

    def __init__(self, lower, upper, declared):
        super().__init__(INT_SERIES, SymmetricDifference(), NumpyIntegerDomain(),
                         AbsoluteDifference())
        self._lower, self._upper, self._declared = lower, upper, declared

    @property
    def lower(self):
        return self._lower

    @property
    def upper(self):
        return self._upper

    def stability_function(self, d_in):
        return ExactNumber(d_in) * self._declared

    def __call__(self, data):
        return int(data.clip(self._lower, self._upper).sum())


class ListCount(Measurement):
    """A user's measurement on Python lists (a domain the adapter builds no pairs for), with
    no privacy function."""

    def __init__(self):
        super().__init__(ListDomain(NumpyIntegerDomain()), SumOf(AbsoluteDifference()),
                         PureDP(), is_interactive=False)

    def __call__(self, data):
        return len(data)


class RecordCount(Measurement):
    """A user's measurement on a pandas domain under any record metric; its pairs are what
    the tests read (it has no privacy function)."""

    def __init__(self, domain, metric):
        super().__init__(domain, metric, PureDP(), is_interactive=False)

    def __call__(self, data):
        return len(data)


class RevealsSize(Measurement):
    """A real measurement whose output also carries len(data), claiming the inner one's
    privacy function: under SymmetricDifference the size is private, so no ε holds."""

    def __init__(self, inner):
        super().__init__(inner.input_domain, inner.input_metric, inner.output_measure,
                         is_interactive=False)
        self._inner = inner

    @property
    def inner(self):
        return self._inner

    def privacy_function(self, d_in):
        return self._inner.privacy_function(d_in)

    def __call__(self, data):
        return self._inner(data), len(data)


def quantile(measure=PureDP(), q=0.5, epsilon=1):
    return NoisyQuantile(PandasSeriesDomain(FLOATS), measure, q, 0.0, 10.0, epsilon)


def float_up(exact: Fraction) -> float:
    """The smallest float ≥ an exact rational, computed here independently of the adapter."""
    nearest = float(exact)
    return nearest if Fraction(nearest) >= exact else math.nextafter(nearest, math.inf)


# ------------------------------------------------------------------------------- claims ---

@pytest.mark.parametrize("d_in", [1, 2])
def test_pure_dp_epsilon_is_the_privacy_function_rounded_up(d_in):
    laplace = AddLaplaceNoise(FLOATS, scale=3)
    mech = from_measurement(laplace, d_in=d_in)
    exact = Fraction(str(laplace.privacy_function(d_in)))
    assert exact == Fraction(d_in, 3)
    assert mech.epsilon == float_up(exact) and Fraction(mech.epsilon) >= exact
    assert (mech.delta, mech.zcdp, mech.randomness) == (0.0, None, "rng")
    assert mech.name == "tumult:AddLaplaceNoise(scale=3)"


def test_zcdp_rho_is_read_from_gaussian_and_quantile():
    gaussian = AddGaussianNoise(FLOATS, sigma_squared=3)
    mech = from_measurement(gaussian, d_in=2)
    assert mech.epsilon is None
    assert mech.zcdp == float_up(Fraction(str(gaussian.privacy_function(2)))) == float_up(
        Fraction(2, 3))
    # NoisyQuantile under RhoZCDP: (ε d_in)² / 8
    assert from_measurement(quantile(RhoZCDP(), epsilon=4)).zcdp == 2.0


def test_approximate_dp_is_read_as_epsilon_and_delta():
    mech = from_measurement(PureDPToApproxDP(AddLaplaceNoise(FLOATS, scale=2)))
    assert (mech.epsilon, mech.delta, mech.zcdp) == (0.5, 0.0, None)


def test_zcdp_to_approx_dp_is_read_through_its_privacy_relation():
    converted = RhoZCDPToApproxDP(AddGaussianNoise(FLOATS, sigma_squared=1))
    mech = from_measurement(converted, delta=1e-6)
    expected = 0.5 + 2 * math.sqrt(0.5 * math.log(1e6))  # ρ + 2√(ρ ln 1/δ), ρ = 1/2
    assert mech.delta == 1e-6 and expected <= mech.epsilon <= expected + 1e-4
    # the library itself refuses an ε just below the one read
    below = Fraction(round(mech.epsilon * 10 ** 4) - 2, 10 ** 4)
    assert not converted.privacy_relation(1, (below, Fraction(1, 10 ** 6)))


def test_claims_that_cannot_be_read_raise_invalid_claim_naming_the_measurement():
    with pytest.raises(InvalidClaimError, match=r"MakeInteractive.*interactive"):
        from_measurement(MakeInteractive(AddLaplaceNoise(FLOATS, scale=1)))
    with pytest.raises(InvalidClaimError, match=r"AddLaplaceNoise\(scale=0\).*ε = ∞"):
        from_measurement(AddLaplaceNoise(FLOATS, scale=0))
    with pytest.raises(InvalidClaimError, match=r"ListCount\(\).*no privacy function.*epsilon="):
        from_measurement(ListCount(), pairs=[([np.int64(1)], [np.int64(2)])])
    with pytest.raises(DpVerifyError, match="tmlt.core Measurement, got ClampedSum"):
        from_measurement(ClampedSum(0, 2, declared=2))  # a transformation, not a measurement
    stated = from_measurement(AddGeometricNoise(1), epsilon=2.0)  # the claim stated instead
    assert stated.epsilon == 2.0


# -------------------------------------------------------------------------------- pairs ---

def _library_distance(measurement, a, b):
    """The pair's distance by the measurement's own input metric (Tumult Core's code)."""
    form = input_form(measurement.input_domain)
    left, right = prepare(form, a), prepare(form, b)
    for value in (left, right):
        measurement.input_domain.validate(value)
    return measurement.input_metric.distance(left, right, measurement.input_domain)


@pytest.mark.parametrize("d_in", [1, 3])
def test_atom_and_dict_pairs_are_at_d_in_by_the_library_metric(d_in):
    chain = GetValue(DictDomain({"x": NumpyIntegerDomain()}), DictMetric(
        {"x": AbsoluteDifference()}), "x") | AddGeometricNoise(1)
    for meas in (AddLaplaceNoise(FLOATS, scale=1), AddGeometricNoise(1), chain):
        pairs = from_measurement(meas, d_in=d_in).pairs
        assert len(pairs) == 2
        for a, b in pairs:
            distance = _library_distance(meas, a, b)
            assert distance == ({"x": d_in} if meas is chain else d_in)


@pytest.mark.parametrize("d_in", [1, 2])
def test_series_pairs_add_records_at_the_bounds_with_an_empty_corner(d_in):
    meas = quantile()
    pairs = from_measurement(meas, d_in=d_in).pairs
    assert len(pairs) == 3
    added = []
    for a, b in pairs:
        assert _library_distance(meas, a, b) == d_in
        assert all(0.0 <= x <= 10.0 for x in a + b)
        extra = Counter(b) - Counter(a)
        assert sum(extra.values()) == d_in and len(extra) == 1
        value = next(iter(extra))
        assert value not in a  # a value no other record has
        added.append(value)
    assert ([], [10.0] * d_in) in pairs  # empty dataset against records at a bound
    assert set(added) == {0.0, 10.0}     # records at both bounds


def _size(data):
    """Records in a pair's plain value: a list's length, a {column: list}'s first column's."""
    return len(next(iter(data.values()))) if isinstance(data, dict) else len(data)


FRAME = PandasDataFrameDomain({"a": INT_SERIES, "b": PandasSeriesDomain(FLOATS)})


@pytest.mark.parametrize("domain, metric, sizes_differ", [
    (INT_SERIES, SymmetricDifference(), True),
    (PandasSeriesDomain(NumpyStringDomain()), SymmetricDifference(), True),
    (FRAME, SymmetricDifference(), True),
    (INT_SERIES, HammingDistance(), False),
    (FRAME, HammingDistance(), False),
])
def test_inputs_differ_in_size_exactly_where_the_metric_admits_it(domain, metric, sizes_differ):
    meas = RecordCount(domain, metric)
    pairs = build_pairs(meas, d_in=1)
    sizes = [(_size(a), _size(b)) for a, b in pairs]
    for a, b in pairs:
        assert _library_distance(meas, a, b) == 1
    if sizes_differ:  # the corners: nothing against a record, and a dataset plus one
        assert (0, 1) in sizes and any(n > 0 and m == n + 1 for n, m in sizes)
    else:
        assert sizes and all(n == m > 0 for n, m in sizes)


def test_noise_on_a_series_moves_values_by_d_in_in_its_own_norm():
    for noise, norm in ((AddGeometricNoise(1), 1), (AddGaussianNoise(FLOATS, 1), 2)):
        meas = AddNoiseToSeries(noise)
        pairs = from_measurement(meas, d_in=2).pairs
        assert len(pairs) == 2
        for a, b in pairs:
            assert len(a) == len(b) == 3
            assert np.linalg.norm(np.subtract(b, a), ord=norm) <= 2
            assert float(_library_distance(meas, a, b).expr) == pytest.approx(2, rel=1e-12)


def test_data_frame_pairs_use_each_columns_bounds():
    schema = {"a": PandasSeriesDomain(FLOATS), "b": INT_SERIES}
    meas = AggregateByColumn(PandasDataFrameDomain(schema), {
        "a": quantile(), "b": NoisyQuantile(INT_SERIES, PureDP(), 0.25, 0, 6, 1)})
    mech = from_measurement(meas)
    assert mech.epsilon == 2.0
    for a, b in mech.pairs:
        assert _library_distance(meas, a, b) == 1
        assert all(0 <= x <= 10.0 for x in a["a"] + b["a"])
        assert all(0 <= x <= 6 and isinstance(x, int) for x in a["b"] + b["b"])
    assert {"a": [], "b": []} in [a for a, _ in mech.pairs]


def test_pairs_too_far_apart_or_outside_the_domain_raise_invalid_pairs():
    with pytest.raises(InvalidPairsError, match="distance 2.*d_in=1"):
        from_measurement(AddGeometricNoise(1), pairs=[(0, 2)])
    with pytest.raises(InvalidPairsError, match="not in the input domain"):
        from_measurement(AddLaplaceNoise(FLOATS, scale=1), pairs=[(0.0, float("nan"))])
    assert from_measurement(AddGeometricNoise(1), d_in=2, pairs=[(0, 2)]).pairs == [(0, 2)]


def test_bad_distances_and_unknown_domains_raise_invalid_pairs():
    with pytest.raises(InvalidPairsError, match="whole"):
        from_measurement(AddGeometricNoise(1), d_in=1.5)
    with pytest.raises(InvalidPairsError, match="d_in"):
        from_measurement(AddGeometricNoise(1), d_in=-1)
    with pytest.raises(InvalidPairsError, match=r"ListCount\(\).*ListDomain.*pairs="):
        from_measurement(ListCount())


# ------------------------------------------------------------------ draws and seeding ---

def test_draws_come_from_the_engine_rng_with_the_library_distribution():
    import tmlt.core.random.rng as source
    mech = from_measurement(AddGeometricNoise(1))
    own = source.prng()
    first = [mech.fn(0, np.random.default_rng(7)) for _ in range(3)]
    assert first == [mech.fn(0, np.random.default_rng(7)) for _ in range(3)]
    assert source.prng() is own  # the library's generator is back after every call
    rng = np.random.default_rng(1)
    draws = np.array([mech.fn(0, rng) for _ in range(1500)])
    # two-sided geometric, alpha = 1: P(0) = (e - 1)/(e + 1) ≈ 0.462, P(|k| = 1) ≈ 0.340
    assert abs(np.mean(draws == 0) - (math.e - 1) / (math.e + 1)) < 0.05
    assert abs(np.mean(np.abs(draws) == 1) - 2 * (math.e - 1) / (math.e + 1) / math.e) < 0.05


def test_the_mechanism_pickles_and_draws_the_same_after_unpickling():
    mech = from_measurement(AddNoiseToSeries(AddGeometricNoise(1)))
    copy = pickle.loads(pickle.dumps(mech))
    data = mech.pairs[0][1]
    assert (copy.name, copy.epsilon, copy.pairs) == (mech.name, mech.epsilon, mech.pairs)
    out = copy.fn(data, np.random.default_rng(3))
    assert isinstance(out, np.ndarray) and out.shape == (3,)
    assert np.array_equal(out, mech.fn(data, np.random.default_rng(3)))


# ---------------------------------------------------------------------------- end to end ---

def test_a_sum_whose_sensitivity_is_set_wrong_by_hand_is_flagged():
    # records clamped to [0, 2] move the sum by 2, but the stability function says 1: Tumult
    # Core's claim is ε = 1 while the truth is ε = 2
    broken = ClampedSum(0, 2, declared=1) | AddGeometricNoise(1)
    mech = from_measurement(broken)
    assert mech.epsilon == 1.0 and ([], [2]) in mech.pairs
    # the proof's bound: a measured one may exceed the truth in up to 1 − confidence of
    # audits, which one seed cannot tell from a fault
    result = dpverify.audit(mech, samples=1 << 10, seed=0, backend="threading", proof_only=True)
    assert result.verdict == "violation" and 1.0 < result.epsilon_lower_bound <= 2.0


def test_the_correct_sum_passes_at_its_claim_and_is_reproducible():
    correct = ClampedSum(0, 2, declared=2) | AddGeometricNoise(1)
    mech = from_measurement(correct)
    assert mech.epsilon == 2.0
    result = dpverify.audit(mech, samples=1 << 8, seed=0, backend="threading")
    assert result.verdict == "pass" and result.epsilon_lower_bound <= 2.0
    assert result.randomness == "rng" and result.reproducible  # seeded from the engine's rng


def test_a_release_of_the_series_size_is_flagged_on_a_pair_of_two_sizes():
    """NoisyQuantile whose output also carries len(data): the pairs add records (the metric
    is SymmetricDifference), so the audit sees two sizes; a pair of one size at the same
    distance (a record replaced is distance 2) shows nothing."""
    mech = from_measurement(RevealsSize(quantile()), d_in=2)
    assert mech.epsilon == 2.0 and ([], [10.0, 10.0]) in mech.pairs  # the bounds are read
    result = dpverify.audit(mech, samples=1 << 10, seed=0, backend="threading")
    assert result.verdict == "violation" and result.witness.support_mismatch
    assert len(result.witness.D) != len(result.witness.D_prime)
    base = next(a for a, _ in mech.pairs if a)
    one_size = dpverify.audit(mech, pairs=[(base, base[:-1] + [10.0])], samples=1 << 10,
                              seed=0, backend="threading")
    assert one_size.verdict == "pass"
