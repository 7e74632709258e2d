"""dpverify.libraries.pipelinedp: claims read from PipelineDP's budget accountants, neighbouring
datasets one privacy unit apart at the corners, outputs that show which partitions were
released, many runs per computation equal in law to one run per computation, typed errors,
pickling, and end-to-end audits (PipelineDP's noise comes from python-dp's unseedable C++
generator, so the audits here are seeded but not bit-reproducible)."""
import math
import pickle
from collections import Counter

import numpy as np
import pytest

pipeline_dp = pytest.importorskip("pipeline_dp")

import dpverify  # noqa: E402
from dpverify.errors import DpVerifyError, InvalidClaimError, InvalidPairsError  # noqa: E402
from dpverify.libraries.pipelinedp import (EngineRun, EngineRuns, budget_spec,  # noqa: E402
                                           corner_pairs, from_aggregation,
                                           from_partition_selection)

M = pipeline_dp.Metrics
SURE = 0.999  # each audit's confidence: a correct claim fails a test with chance ≤ 0.1%


def aggregate_params(metrics=("COUNT",), partitions=1, per_partition=1, bounds=None, **kw):
    extra = {} if bounds is None else dict(min_value=bounds[0], max_value=bounds[1])
    return pipeline_dp.AggregateParams(metrics=[getattr(M, m) for m in metrics],
                                       max_partitions_contributed=partitions,
                                       max_contributions_per_partition=per_partition,
                                       noise_kind=pipeline_dp.NoiseKind.LAPLACE, **extra, **kw)


def units(count, partition="a", value=None):
    return [(f"{partition}{i}", partition, value) for i in range(count)]


# ------------------------------------------------------------------------------- claims ---

def test_the_claim_is_the_naive_accountants_totals():
    accountant = pipeline_dp.NaiveBudgetAccountant(total_epsilon=0.7, total_delta=1e-5)
    mech = from_aggregation(aggregate_params(), units(2), accountant=accountant)
    assert (mech.epsilon, mech.delta) == (accountant.total_epsilon, accountant.total_delta)
    assert mech.randomness == "own" and mech.batched
    assert mech.name == (
        "pipelinedp:DPEngine.aggregate(metrics=[COUNT], noise_kind=laplace, "
        "max_partitions_contributed=1, max_contributions_per_partition=1, "
        "partition_selection=Truncated Geometric, "
        "NaiveBudgetAccountant(total_epsilon=0.7, total_delta=1e-05))")
    # the same claim from the short form, and the user's accountant is never spent
    short = from_aggregation(aggregate_params(), units(2), accountant="naive", epsilon=0.7,
                             delta=1e-5)
    assert (short.epsilon, short.delta) == (0.7, 1e-5)
    assert not accountant.finalized and not accountant.mechanism_specs


def test_the_claim_is_the_pld_accountants_totals_and_its_arguments_are_kept():
    accountant = pipeline_dp.PLDBudgetAccountant(total_epsilon=1.5, total_delta=1e-6,
                                                 pld_discretization=1e-3)
    mech = from_aggregation(aggregate_params(), units(1), accountant=accountant,
                            public_partitions=["a"], corners=("high",))
    assert (mech.epsilon, mech.delta) == (1.5, 1e-6)
    fresh = budget_spec(accountant).fresh()
    assert isinstance(fresh, pipeline_dp.PLDBudgetAccountant) and fresh is not accountant
    assert (fresh.total_epsilon, fresh.total_delta, fresh._pld_discretization) == (1.5, 1e-6,
                                                                                   1e-3)


def test_the_remembered_pld_noise_search_gives_the_librarys_noise():
    # the adapter's PLD accountant remembers the library's noise search per process: the
    # noise of every mechanism must be what a plain PLDBudgetAccountant computes
    params = aggregate_params(("COUNT", "SUM"), bounds=(0.0, 1.0))
    spec = budget_spec("pld", epsilon=1.0, delta=1e-5)
    noise = []
    for accountant in (pipeline_dp.PLDBudgetAccountant(1.0, 1e-5), spec.fresh(), spec.fresh()):
        engine = pipeline_dp.DPEngine(accountant, pipeline_dp.LocalBackend())
        engine.aggregate([(1, "a", 0.5)], params, pipeline_dp.DataExtractors(
            privacy_id_extractor=lambda r: r[0], partition_extractor=lambda r: r[1],
            value_extractor=lambda r: r[2]))
        accountant.compute_budgets()
        noise.append([(s.mechanism_type, s._noise_standard_deviation, s._eps, s._delta)
                      for s in accountant.mechanism_specs])
    assert noise[0] == noise[1] == noise[2] and len(noise[0]) == 3


# -------------------------------------------------------------------------------- pairs ---

def _added_unit(a, b):
    """The privacy id whose rows make up the whole difference between a and b (one way)."""
    small, big = (a, b) if len(a) <= len(b) else (b, a)
    extra = Counter(big) - Counter(small)
    assert not Counter(small) - Counter(big), "one dataset must contain the other"
    ids = {row[0] for row in extra}
    assert len(ids) == 1, f"the datasets differ in the rows of {ids}"
    uid = ids.pop()
    assert all(row[0] != uid for row in small), "the unit is added with all its rows"
    return uid, list(extra.elements())


def test_corners_add_one_unit_within_the_limits_at_the_bounds():
    params = aggregate_params(("SUM",), partitions=2, per_partition=3, bounds=(-1.0, 2.0))
    data = tuple(units(3, "a", 0.5) + units(1, "b", 0.5) + units(2, "c", 0.5))
    pairs = corner_pairs(params, data)
    assert set(pairs) == {"new", "high", "low", "empty"}
    for name, (a, b) in pairs.items():
        uid, rows = _added_unit(a, b)
        per_key = Counter(pk for _, pk, _ in rows)
        assert len(per_key) == 2 and set(per_key.values()) == {3}, name  # at both limits
        assert {v for _, _, v in rows} == ({-1.0} if name == "low" else {2.0})
    assert pairs["empty"][0] == ()
    new_keys = {pk for _, pk, _ in _added_unit(*pairs["new"])[1]}
    assert not new_keys & {pk for _, pk, _ in data}  # partitions no other unit has
    assert {pk for _, pk, _ in _added_unit(*pairs["high"])[1]} == {"a", "c"}  # most units


def test_public_corners_stay_in_public_partitions_and_removal_exercises_bounding():
    params = aggregate_params(partitions=1, per_partition=1)
    data = tuple(units(2, "a") + [("heavy", "a", None), ("heavy", "b", None)])
    pairs = corner_pairs(params, data, public_partitions=["a", "b", "z"])
    assert set(pairs) == {"new", "high", "empty", "remove"}  # COUNT reads no value: no "low"
    for name in ("new", "high", "empty"):
        _, rows = _added_unit(*pairs[name])
        assert {pk for _, pk, _ in rows} <= {"a", "b", "z"}
    assert _added_unit(*pairs["new"])[1][0][1] == "z"  # the public partition nobody has
    assert _added_unit(*pairs["remove"])[0] == "heavy"  # two partitions, more than allowed


def test_a_total_contribution_limit_puts_its_rows_in_one_partition_or_spreads_them():
    params = pipeline_dp.AggregateParams(metrics=[M.COUNT], max_contributions=3)
    pairs = corner_pairs(params, tuple(units(2) + units(1, "b")),
                         public_partitions=["a", "b", "c", "d"])
    high = Counter(pk for _, pk, _ in _added_unit(*pairs["high"])[1])
    new = Counter(pk for _, pk, _ in _added_unit(*pairs["new"])[1])
    assert high == {"a": 3}  # the busiest public partition, all 3 rows
    assert new == {"c": 1, "d": 1, "b": 1}  # the 3 least populated, one row each


# -------------------------------------------------------------------- outputs and runs ---

def test_outputs_mask_the_partitions_that_were_not_released():
    accountant = pipeline_dp.NaiveBudgetAccountant(total_epsilon=4.0, total_delta=1e-2)
    mech = from_aggregation(aggregate_params(("COUNT", "PRIVACY_ID_COUNT")), units(30),
                            accountant=accountant, corners=("new",))
    layout = mech.fn.layout
    assert layout.keys == ("a", "new-partition-0") and len(layout.metrics) == 2
    out = mech.fn(mech.pairs[0][1], None, 300)
    assert isinstance(out, np.ma.MaskedArray) and out.shape == (300, 4)
    assert not out.mask[:, :2].any()  # 30 units: always released
    assert out.mask[:, 2:].mean() > 0.95  # one unit alone: released with probability ≤ δ
    assert abs(np.mean(out[:, layout.metrics.index("count")]) - 30) < 1.0


def test_many_runs_in_one_computation_match_one_computation_per_run():
    # 5 units: the partition is released about half the time, so copies of the dataset that
    # shared a partition or a unit would change the release rate at once
    accountant = pipeline_dp.NaiveBudgetAccountant(total_epsilon=2.0, total_delta=1e-2)
    params = aggregate_params()
    mech = from_aggregation(params, units(5), accountant=accountant, corners=("high",))
    single = from_aggregation(params, units(5), accountant=accountant, corners=("high",),
                              batched=False)
    assert isinstance(mech.fn, EngineRuns) and isinstance(single.fn, EngineRun)
    data, n = mech.pairs[0][0], 1500
    many = mech.fn(data, None, n)
    one = [single.fn(data, None) for _ in range(n)]
    p_many = 1 - many.mask[:, 0].mean()
    p_one = np.mean([o[0] is not None for o in one])
    pooled = (p_many + p_one) / 2
    z = (p_many - p_one) / math.sqrt(2 * pooled * (1 - pooled) / n)
    assert 0.2 < pooled < 0.8 and abs(z) < 4.5
    counts_many = many[:, 0].compressed()
    counts_one = np.array([o[0] for o in one if o[0] is not None])
    spread = math.sqrt(counts_many.var() / len(counts_many) + counts_one.var() / len(counts_one))
    assert abs(counts_many.mean() - counts_one.mean()) < 4.5 * spread


def test_select_partitions_outputs_one_flag_per_partition():
    params = pipeline_dp.SelectPartitionsParams(max_partitions_contributed=1)
    accountant = pipeline_dp.NaiveBudgetAccountant(total_epsilon=2.0, total_delta=1e-3)
    mech = from_partition_selection(params, units(40) + units(1, "b"), accountant=accountant)
    assert mech.fn.layout.keys == ("a", "b", "new-partition-0")
    out = mech.fn(mech.pairs[0][0], None, 200)
    assert out.dtype == np.int8 and out.shape == (200, 3)
    assert out[:, 0].all() and out[:, 1].mean() < 0.1 and not out[:, 2].any()


# ---------------------------------------------------------------------- typed errors ---

def test_bad_accountants_and_configurations_raise_typed_errors():
    params = aggregate_params()
    with pytest.raises(InvalidClaimError, match="NaiveBudgetAccountant or PLDBudgetAccountant"):
        from_aggregation(params, units(2), accountant=object())
    with pytest.raises(InvalidClaimError, match="not both"):
        from_aggregation(params, units(2), accountant=pipeline_dp.NaiveBudgetAccountant(1, 0),
                         epsilon=1.0)
    with pytest.raises(InvalidClaimError, match="needs epsilon"):
        from_aggregation(params, units(2), accountant="pld")
    with pytest.raises(InvalidPairsError, match="corners must be among"):
        from_aggregation(params, units(2), accountant="naive", epsilon=1.0, corners=("edge",))
    variance = aggregate_params(("VARIANCE",), bounds=(0.0, 1.0))
    with pytest.raises(DpVerifyError, match="NotImplementedError.*Variance"):
        from_aggregation(variance, units(1, "a", 0.5), accountant="pld", epsilon=1.0,
                         delta=1e-6, public_partitions=["a"], corners=("high",))


# ----------------------------------------------------------------------------- pickling ---

@pytest.mark.parametrize("batched", [True, False])
def test_the_mechanism_pickles_and_still_runs(batched):
    mech = from_aggregation(aggregate_params(("SUM",), bounds=(0.0, 1.0)), units(2, "a", 0.5),
                            accountant="naive", epsilon=1.0, public_partitions=["a", "b"],
                            batched=batched)
    copy = pickle.loads(pickle.dumps(mech))
    data = copy.pairs[0][1]
    out = copy.fn(data, None, 5) if batched else copy.fn(data, None)
    assert np.shape(out) == ((5, 2) if batched else (2,))
    assert (copy.name, copy.epsilon, copy.delta) == (mech.name, mech.epsilon, mech.delta)


# ---------------------------------------------------------------------------- end to end ---

@pytest.mark.xdist_group("lib_pipelinedp")
def test_a_correct_count_passes_at_its_claim_and_is_flagged_at_half():
    mech = from_aggregation(aggregate_params(), units(2), accountant="naive", epsilon=1.0,
                            public_partitions=["a", "b"], corners=("high",))
    result = dpverify.audit(mech, samples=1 << 11, seed=0, confidence=SURE)
    assert result.verdict == "pass" and 0.3 < result.epsilon_lower_bound <= 1.0
    half = dpverify.audit(mech, epsilon=0.5, samples=1 << 12, seed=0, confidence=SURE)
    assert half.verdict == "violation" and 0.5 < half.epsilon_lower_bound <= 1.0


@pytest.mark.xdist_group("lib_pipelinedp")
def test_contribution_bounding_bypassed_for_a_unit_over_the_bound_is_flagged():
    # `contribution_bounds_already_enforced=True` tells PipelineDP the data already respects
    # max_contributions_per_partition=1, so it calibrates the count's noise to one row per
    # unit and skips bounding; the added unit has 3 rows: the count moves by 3, not 1
    params = aggregate_params(contribution_bounds_already_enforced=True)
    data = tuple(units(2))
    heavy = data + (("u", "a", None),) * 3
    mech = from_aggregation(params, (), accountant="naive", epsilon=1.0,
                            public_partitions=["a"], pairs=[(data, heavy)])
    result = dpverify.audit(mech, samples=1 << 12, seed=0, confidence=SURE)
    assert result.verdict == "violation" and 1.0 < result.epsilon_lower_bound <= 3.0  # true 3
