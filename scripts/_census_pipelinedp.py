"""Census cases for PipelineDP 0.3 (read by scripts/libraries.py; scripts/_census_common.py
says what a census module offers): DPEngine.aggregate and select_partitions on the
LocalBackend, built with `dpverify.libraries.pipelinedp`, whose pairs are corners (one privacy
unit added with all its contributions: in new partitions, at the value bounds, to the empty
dataset). The datasets are small: the LocalBackend costs 5-40 µs per row and partition.
Private partition selection is audited where the release probability climbs with the unit
count, so that both the selection and the noise of the released values spend the budget.

`python scripts/_census_pipelinedp.py --check` repeats the direct library check of the
VARIANCE finding (FINDINGS_CHECKED): about 15 s on a quiet machine.
"""
import sys
from functools import partial

from _census_common import S12, S13, S15


def _units(count: int, partition="a", value=None) -> list:
    """`count` privacy units with one row each in `partition`."""
    return [(f"{partition}{i}", partition, value) for i in range(count)]


def _params(metrics, noise="LAPLACE", bounds=None, partitions=1, per_partition=1, total=None,
            selection=None):
    """pipeline_dp.AggregateParams from the names of its enums (pipeline_dp imported on first
    build)."""
    import pipeline_dp
    limits = (dict(max_contributions=total) if total else dict(
        max_partitions_contributed=partitions, max_contributions_per_partition=per_partition))
    extra = {} if bounds is None else dict(min_value=bounds[0], max_value=bounds[1])
    if selection:
        extra["partition_selection_strategy"] = getattr(pipeline_dp.PartitionSelectionStrategy,
                                                        selection)
    return pipeline_dp.AggregateParams(
        metrics=[getattr(pipeline_dp.Metrics, m) for m in metrics],
        noise_kind=getattr(pipeline_dp.NoiseKind, noise), **limits, **extra)


def _aggregate(metrics, accountant, dataset, public=None, corners=None, **params):
    """A DPEngine.aggregate through from_aggregation; `params` go to `_params`."""
    from dpverify.libraries.pipelinedp import from_aggregation
    return from_aggregation(_params(metrics, **params), dataset,
                            accountant=_accountant(*accountant), public_partitions=public,
                            corners=corners)


def _select(accountant, dataset, selection="TRUNCATED_GEOMETRIC"):
    """A DPEngine.select_partitions, one partition per unit, through from_partition_selection."""
    import pipeline_dp
    from dpverify.libraries.pipelinedp import from_partition_selection
    params = pipeline_dp.SelectPartitionsParams(
        max_partitions_contributed=1,
        partition_selection_strategy=getattr(pipeline_dp.PartitionSelectionStrategy, selection))
    return from_partition_selection(params, dataset, accountant=_accountant(*accountant))


def _accountant(kind, epsilon, delta):
    """The budget accountant the claim is read from, built as a user builds it."""
    import pipeline_dp
    cls = {"naive": pipeline_dp.NaiveBudgetAccountant, "pld": pipeline_dp.PLDBudgetAccountant}
    return cls[kind](total_epsilon=epsilon, total_delta=delta)


CASES = [  # (name, configuration, build, samples)
    ("aggregate.COUNT", "Laplace, public partitions [a, b], 2 units in a, naive ε=1",
     partial(_aggregate, ["COUNT"], ("naive", 1.0, 0.0), _units(2), public=["a", "b"]), S13),
    ("aggregate.PRIVACY_ID_COUNT",
     "Laplace, truncated geometric selection, 7 units in a, naive ε=2 δ=1e-3",
     partial(_aggregate, ["PRIVACY_ID_COUNT"], ("naive", 2.0, 1e-3), _units(7)), S13),
    ("aggregate.SUM",
     "Laplace, bounds [-1, 2], 2 partitions × 2 contributions, public [a, b, c], naive ε=1",
     partial(_aggregate, ["SUM"], ("naive", 1.0, 0.0), _units(1, "a", 0.5) + _units(1, "b", 0.5),
             public=["a", "b", "c"], bounds=(-1.0, 2.0), partitions=2, per_partition=2), S12),
    ("aggregate.MEAN", "Laplace, bounds [0, 1], public [a], 1 unit, naive ε=1",
     partial(_aggregate, ["MEAN"], ("naive", 1.0, 0.0), _units(1, "a", 0.5), public=["a"],
             bounds=(0.0, 1.0)), S12),
    ("aggregate.VARIANCE", "VARIANCE+MEAN+COUNT, Laplace, bounds [-1, 1], public [a], 1 "
     "unit at 0, naive ε=3; corner high only (low and empty move the three sums as far)",
     partial(_aggregate, ["VARIANCE", "MEAN", "COUNT"], ("naive", 3.0, 0.0),
             _units(1, "a", 0.0), public=["a"], bounds=(-1.0, 1.0), corners=("high",)), S15),
    ("aggregate.COUNT+SUM+MEAN", "Laplace, bounds [0, 1], truncated geometric selection, 5 "
     "units in a, naive ε=3 δ=1e-2; corners new, high, low",
     partial(_aggregate, ["COUNT", "SUM", "MEAN"], ("naive", 3.0, 1e-2), _units(5, "a", 0.5),
             bounds=(0.0, 1.0), corners=("new", "high", "low")), S12),
    ("aggregate.COUNT(gaussian)", "Gaussian, 2 partitions per unit, public [a, b], naive ε=1 "
     "δ=0.05", partial(_aggregate, ["COUNT"], ("naive", 1.0, 0.05), _units(1) + _units(1, "b"),
                       public=["a", "b"], noise="GAUSSIAN", partitions=2), S13),
    ("aggregate.COUNT(max_contributions)", "Laplace, max_contributions=2, public [a, b], naive "
     "ε=1", partial(_aggregate, ["COUNT"], ("naive", 1.0, 0.0), _units(1) + _units(1, "b"),
                    public=["a", "b"], total=2), S13),
    ("aggregate.COUNT(pld)", "Laplace, public [a, b], PLD accountant ε=1 δ=1e-6",
     partial(_aggregate, ["COUNT"], ("pld", 1.0, 1e-6), _units(2), public=["a", "b"]), S13),
    ("aggregate.COUNT(pld, laplace thresholding)", "Laplace, Laplace thresholding selection, "
     "6 units in a, PLD accountant ε=2 δ=1e-3; corners new, high",
     partial(_aggregate, ["COUNT"], ("pld", 2.0, 1e-3), _units(6),
             selection="LAPLACE_THRESHOLDING", corners=("new", "high")), S13),
    ("select_partitions", "truncated geometric, 1 partition per unit, 7 units in a, naive ε=1 "
     "δ=1e-3", partial(_select, ("naive", 1.0, 1e-3), _units(7)), S13),
    ("select_partitions(gaussian thresholding)", "Gaussian thresholding, 1 partition per unit, "
     "5 units in a, naive ε=2 δ=1e-2",
     partial(_select, ("naive", 2.0, 1e-2), _units(5), selection="GAUSSIAN_THRESHOLDING"), S13),
]

SKIPPED = {
    "AggregateParams(max_contributions=...) with private partition selection":
        "PipelineDP 0.3.1 passes max_partitions_contributed=None to python-dp's partition "
        "selection and raises TypeError; audited with public partitions "
        "(aggregate.COUNT(max_contributions))",
    "VARIANCE with PLDBudgetAccountant": "PipelineDP raises NotImplementedError",
    "PERCENTILE, VECTOR_SUM, custom combiners":
        "not in the adapter's scope (issue 57: count, sum, mean, variance, privacy-id count)",
    "select_partitions(WEIGHTED_GAUSSIAN_THRESHOLDING)": "PipelineDP runs a scipy binary search "
        "(dp_computations.gaussian_epsilon) for every partition of every run, about 50 ms a "
        "partition: too slow for the census budget (from_partition_selection audits it; so is "
        "Gaussian thresholding under a PLD accountant, which runs the same search)",
    "Beam and Spark backends": "the same computation graph on another runner; the adapter audits "
        "the LocalBackend",
}


def cases() -> list:
    """(name, configuration, build, samples) for every census case."""
    return list(CASES)


# none: every case is flagged at half its claim (a selection or a metric tight on one pair)
HALF_CLAIM_NOTES: dict = {}

FINDINGS_CHECKED = {
    "aggregate.VARIANCE": "PipelineDP 0.3.1 `dp_computations.compute_dp_var` noises Σ(x − m)², "
        "m = (min + max)/2, with the L∞ sensitivity C·(hi − lo)/2 of "
        "`compute_squares_interval(min_value, max_value)` = [lo, hi], the range of x², not of "
        "(x − m)². One contribution moves Σ(x − m)² by up to C·((max − min)/2)²; with bounds "
        "[−1, 1] that is 1 against the 0.5 used, so the sum of squares gets half the Laplace "
        "scale it needs and a release of count, mean and variance (which determine the three "
        "noisy sums) is (4ε/3)-DP, not ε-DP. It happens whenever min < 0 < max and the smaller "
        "of |min|, max exceeds 0.41 × the larger; other bounds (e.g. [0, 1]) over-noise instead. "
        "Checked outside dpverify (`python scripts/_census_pipelinedp.py --check`: direct "
        "DPEngine.aggregate calls, 20,000 per dataset, NaiveBudgetAccountant(3, 0), public "
        "partition a): D = one unit at 0, D2 adds one unit at 1 (one partition, one "
        "contribution, inside the bounds). The noisy count, Σx and Σx² recovered from each "
        "release have Laplace scales 1.01, 1.01 and 0.50, while Σx² moves by 1 between D and D2; "
        "the event {every recovered value ≥ its value on D2} occurred in 2,435 runs on D2 and 42 "
        "on D, so with Clopper–Pearson bounds at 99.95% each ε ≥ 3.52 > 3 claimed "
        "(expected ε = 4).",
}


def _variance_release(rows, epsilon: float = 3.0):
    """(count, mean, variance) of partition "a" from one DPEngine.aggregate, called as the
    PipelineDP docs call it: VARIANCE, MEAN and COUNT, bounds [-1, 1], Laplace noise, public
    partition "a", a fresh NaiveBudgetAccountant(total_epsilon=3, total_delta=0)."""
    import pipeline_dp
    params = _params(["VARIANCE", "MEAN", "COUNT"], bounds=(-1.0, 1.0))
    extractors = pipeline_dp.DataExtractors(privacy_id_extractor=lambda r: r[0],
                                            partition_extractor=lambda r: r[1],
                                            value_extractor=lambda r: r[2])
    accountant = _accountant("naive", epsilon, 0)
    engine = pipeline_dp.DPEngine(accountant, pipeline_dp.LocalBackend())
    result = engine.aggregate(rows, params, extractors, public_partitions=["a"])
    accountant.compute_budgets()
    (_, metrics), = list(result)
    return metrics.count, metrics.mean, metrics.variance


def check_variance_finding(runs: int = 20000, epsilon: float = 3.0) -> dict:
    """The direct library check of the VARIANCE finding (no dpverify code involved).

    D has one unit at 0, D2 adds one at 1 (within [-1, 1], one partition, one contribution).
    Each release gives back exactly the three noisy quantities PipelineDP computes (the middle
    of [-1, 1] is 0; the library divides by max(1, noisy count)): count, Σx = mean·max(1,
    count) and Σx² = (variance + mean²)·max(1, count), (1, 0, 0) on D and (2, 1, 1) on D2.
    E = {each noisy value ≥ its value on D2} has probability 1/8 under D2 and
    e^-(ε/3 + ε/3 + 2ε/3)/8 under D if Σx²'s Laplace scale is half its sensitivity; an
    (ε, 0)-DP release needs P[E|D2] ≤ e^ε P[E|D].
    """
    import numpy as np
    from dpverify.stats import cp_lower, cp_upper

    def noisy_quantities(rows):
        releases = [_variance_release(rows, epsilon) for _ in range(runs)]
        count, mean, variance = np.array(releases).T
        denominator = np.maximum(1.0, count)
        return count, mean * denominator, (variance + mean ** 2) * denominator

    on_d = noisy_quantities([("a0", "a", 0.0)])
    on_d2 = noisy_quantities([("a0", "a", 0.0), ("u", "a", 1.0)])
    k_d, k_d2 = (int(((c >= 2) & (s >= 1) & (q >= 1)).sum()) for c, s, q in (on_d, on_d2))
    level = 0.0005  # each one-sided Clopper-Pearson bound at 99.95%
    p_low, q_high = float(cp_lower(k_d2, runs, level)), float(cp_upper(k_d, runs, level))
    return {"runs_each": runs, "count_D2": k_d2, "count_D": k_d,
            "epsilon_lower_bound": float(np.log(p_low / q_high)), "claimed_epsilon": epsilon,
            # mean |noise| of each quantity on D = its Laplace scale b; Σx² moves by 1
            "laplace_scale_count": float(np.mean(np.abs(on_d[0] - 1))),
            "laplace_scale_sum": float(np.mean(np.abs(on_d[1]))),
            "laplace_scale_sum_of_squares": float(np.mean(np.abs(on_d[2])))}


if __name__ == "__main__" and "--check" in sys.argv:
    print(check_variance_finding())
