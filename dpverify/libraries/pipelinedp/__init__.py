"""Audit PipelineDP (`pipeline_dp`): a `DPEngine.aggregate` (COUNT, PRIVACY_ID_COUNT, SUM, MEAN,
VARIANCE, alone or together) or `DPEngine.select_partitions` on the LocalBackend, at the claim
its budget accountant states, on datasets that differ in one privacy unit.

    import pipeline_dp, dpverify
    from dpverify.libraries.pipelinedp import from_aggregation
    params = pipeline_dp.AggregateParams(metrics=[pipeline_dp.Metrics.COUNT],
                                         max_partitions_contributed=1,
                                         max_contributions_per_partition=1)
    accountant = pipeline_dp.NaiveBudgetAccountant(total_epsilon=1.0, total_delta=1e-6)
    dpverify.audit(from_aggregation(params, [(1, "a"), (2, "a")], accountant=accountant))

The modules of this package:

    budget.py   the claim: the accountant's total_epsilon and total_delta, and a picklable
                record of the accountant to build a fresh one for every computation
    pairs.py    neighbouring datasets: one privacy unit added with all its contributions, at
                the corners (new partitions, value bounds, the empty dataset, bounding)
    runs.py     the computations: many independent runs in one DPEngine call, outputs that
                show which partitions were released

Claim (docs/theory.md §7): the accountant is the budget of the whole pipeline, here one
aggregate or one select_partitions, so the claim is (total_epsilon, total_delta) as a fresh
accountant of the same class and arguments reports them: for NaiveBudgetAccountant and for
PLDBudgetAccountant (which composes privacy loss distributions; VARIANCE is not supported with
it). The accountant the user passes is never spent.

Pairs: add one privacy unit with all its contributions, at the corners (pairs.py); outputs
show which partitions were released (runs.py), so partition selection's δ is audited.

Randomness: PipelineDP adds noise through python-dp's C++ mechanisms, whose generator cannot
be seeded, and samples contributions with numpy's global generator; the mechanisms are
`randomness="own"` and ignore the engine's `rng`.

Speed (measured on 2-7 row datasets): the LocalBackend is lazy Python, and one computation per
run, as a user's code calls it (`EngineRun`), costs about 130-330 µs. One computation over 512
copies of the dataset keyed by run index (`EngineRuns`, the default) costs 35-50 µs per run
for counts, 3.5-4× less (1.5-2× with MEAN, whose per-row numpy clip dominates); the engine runs
it on its threads, which share one core's worth (the work holds the GIL).
A PLDBudgetAccountant's noise search (about a second) is remembered per process (budget.py).
"""
from __future__ import annotations

from ...errors import DpVerifyError, InvalidPairsError
from ...mechanism import Mechanism
from .. import require_pipelinedp
from .budget import BudgetSpec, budget_spec, read_claim
from .pairs import CORNERS, canonical_rows, corner_pairs, sort_keys
from .runs import BATCH, EngineRun, EngineRuns, Layout

# the audit's default runs per input: a run costs tens of µs per row of the dataset, so
# the engine's batched default (2^22) would take an hour
DEFAULT_SAMPLES = 1 << 13


def from_aggregation(params, dataset, extractors=None, *, accountant="naive", epsilon=None,
                     delta=None, public_partitions=None, pairs=None, corners=None,
                     name=None, batched=True) -> Mechanism:
    """A dpverify Mechanism running `DPEngine(accountant, LocalBackend()).aggregate(D, params,
    extractors, public_partitions)` with a fresh accountant per computation.

    params: a pipeline_dp.AggregateParams (standard metrics; no custom combiners).
    dataset: the rows the neighbours are built from; `extractors` (pipeline_dp.DataExtractors)
    read (privacy id, partition key, value) from them, or None when rows already are
    (privacy_id, partition_key[, value]) tuples.
    accountant: a pipeline_dp.NaiveBudgetAccountant or PLDBudgetAccountant (the claim is its
    total_epsilon and total_delta; it is never spent: each computation gets a new one of the
    same class and arguments), or "naive" / "pld" with epsilon= and delta=.
    pairs: [(D, D2), ...] in the same row form, instead of the corners of `dataset`; corners:
    which of pairs.CORNERS to build (default: every one that applies).
    Output per run: one value per (partition, metric) over every partition key of the pairs,
    in sorted key order (`mech.fn.layout`); partitions that were not released are masked.
    batched=False runs one computation per run (EngineRun) instead of many at once.
    """
    pipeline_dp = require_pipelinedp()
    if not isinstance(params, pipeline_dp.AggregateParams):
        raise DpVerifyError(f"params must be a pipeline_dp.AggregateParams, got "
                            f"{type(params).__name__}")
    if params.custom_combiners:
        raise DpVerifyError("custom combiners are not supported: audit the standard metrics")
    spec = budget_spec(accountant, epsilon, delta)
    label = name or _name("aggregate", params, spec, public_partitions)
    metrics = pipeline_dp.combiners.create_compound_combiner(
        params, pipeline_dp.NaiveBudgetAccountant(1.0, 1e-6)).metrics_names()
    private = public_partitions is None or bool(params.post_aggregation_thresholding)
    return _mechanism("aggregate", params, spec, dataset, extractors, public_partitions,
                      pairs, corners, label, metrics, private, batched)


def from_partition_selection(params, dataset, extractors=None, *, accountant="naive",
                             epsilon=None, delta=None, pairs=None, corners=None, name=None,
                             batched=True) -> Mechanism:
    """A dpverify Mechanism running `DPEngine(accountant, LocalBackend()).select_partitions(D,
    params, extractors)` with a fresh accountant per computation. params: a
    pipeline_dp.SelectPartitionsParams; the rest as in `from_aggregation` (rows need no
    value). Output per run: one 0/1 per partition key of the pairs (sorted): released or not.
    """
    pipeline_dp = require_pipelinedp()
    if not isinstance(params, pipeline_dp.SelectPartitionsParams):
        raise DpVerifyError(f"params must be a pipeline_dp.SelectPartitionsParams, got "
                            f"{type(params).__name__}")
    spec = budget_spec(accountant, epsilon, delta)
    label = name or _name("select_partitions", params, spec, None)
    return _mechanism("select", params, spec, dataset, extractors, None, pairs, corners,
                      label, (), True, batched)


def _mechanism(kind, params, spec: BudgetSpec, dataset, extractors, public_partitions, pairs,
               corners, label, metrics, private, batched) -> Mechanism:
    """The Mechanism: pairs (the corners of `dataset`, or the user's), the output layout over
    their partition keys, a probe computation, and the claim from the accountant."""
    if pairs is None:
        rows = canonical_rows(dataset, extractors, label)
        pairs = list(corner_pairs(params, rows, public_partitions, corners, label).values())
    else:
        pairs = [(canonical_rows(a, extractors, label), canonical_rows(b, extractors, label))
                 for a, b in pairs]
        if not pairs:
            raise InvalidPairsError(f"{label}: pairs= is empty")
    keys = {pk for a, b in pairs for _, pk, _ in a + b} | set(public_partitions or ())
    layout = Layout(sort_keys(keys), metrics)
    runner = (EngineRuns if batched else EngineRun)(kind, spec, params, layout,
                                                    public_partitions, private)
    _probe(runner, pairs, label)
    epsilon, delta = read_claim(spec)
    return Mechanism(fn=runner, name=label, epsilon=epsilon, delta=delta, pairs=pairs,
                     batched=batched, randomness="own", samples=DEFAULT_SAMPLES)


def _probe(runner, pairs, label):
    """One computation on the largest dataset of the pairs, so that a configuration the
    library refuses (e.g. VARIANCE with a PLD accountant) fails here, named, not mid-audit."""
    largest = max((d for pair in pairs for d in pair), key=len)
    try:
        runner.run(largest, 1, keyed=True)
    except DpVerifyError:
        raise
    except Exception as exc:  # the library's own error, whatever its type
        raise DpVerifyError(f"{label}: pipeline_dp failed on the dataset "
                            f"{largest[:4]!r}...: {type(exc).__name__}: {exc}") from None


_PARAMS_SHOWN = ("metrics", "noise_kind", "max_partitions_contributed",
                 "max_contributions_per_partition", "max_contributions", "min_value",
                 "max_value", "min_sum_per_partition", "max_sum_per_partition", "pre_threshold")


def _name(method, params, spec: BudgetSpec, public_partitions) -> str:
    """E.g. "pipelinedp:DPEngine.aggregate(metrics=[COUNT], noise_kind=laplace, ...,
    NaiveBudgetAccountant(total_epsilon=1, total_delta=1e-06))"."""
    args = []
    for field in _PARAMS_SHOWN:
        value = getattr(params, field, None)
        if value is None:
            continue
        if field == "metrics":
            value = "[" + ", ".join(str(m) for m in value) + "]"
        elif hasattr(value, "value"):  # an Enum
            value = value.value
        args.append(f"{field}={value}")
    if public_partitions is not None:
        args.append(f"public_partitions={sort_keys(set(public_partitions))!r}")
    else:
        args.append(f"partition_selection={params.partition_selection_strategy.value}")
    if getattr(params, "post_aggregation_thresholding", False):
        args.append("post_aggregation_thresholding=True")
    return f"pipelinedp:DPEngine.{method}({', '.join(args)}, {spec.describe()})"


__all__ = ["from_aggregation", "from_partition_selection", "budget_spec", "read_claim",
           "corner_pairs", "canonical_rows", "EngineRuns", "EngineRun", "Layout", "CORNERS",
           "BATCH", "DEFAULT_SAMPLES"]
