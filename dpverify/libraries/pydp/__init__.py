"""Audit Google's DP library through its Python bindings (python-dp, imported as `pydp`): the
numerical mechanisms (`from_mechanism`), the algorithms of `pydp.algorithms.laplacian`
(`from_algorithm`) and partition selection (`from_partition_selection`).

    import dpverify
    from pydp.algorithms.laplacian import BoundedMean
    from dpverify.libraries.pydp import from_algorithm
    dpverify.audit(from_algorithm(BoundedMean, epsilon=1.0, lower_bound=0, upper_bound=1,
                                  dtype="float"))

Claim (docs/theory.md §7): read from the pydp object once built, never typed by hand:
`epsilon` (and `delta` where it has one) of LaplaceMechanism / GaussianMechanism, of an
algorithm, of a partition selection strategy. pydp states each for one privacy unit: inputs
`sensitivity` apart for a mechanism, one unit's records (up to `linf_sensitivity` in each of up
to `l0_sensitivity` partitions) for an algorithm, one user in up to `max_partitions_contributed`
partitions for partition selection.

Pairs (pairs.py): values the sensitivity apart; datasets one unit apart at the corners of the
algorithm's bounds (the empty dataset against one unit at either bound, records at one bound
against one unit more at the other); user counts 0 against 1 and where keeping starts.

Randomness: pydp draws from its own C++ secure generator, which cannot be seeded, so every
adapted mechanism is `randomness="own"`: runs are independent (the false-alarm promise holds)
but the same seed does not reproduce a bound.

Speed: one library call a run (about 5 µs for add_noise and Count, 8-50 µs for sums, means and
variances, 150-350 µs for Max, Min, Median and Percentile, which build a quantile tree; about
1 µs for should_keep) and no call draws many outputs, so each mechanism's batches are loops
over the library call (draws.py), run in worker processes (`backend="loky"`), which rebuild
the pydp object from its Recipe (recipes.py; pybind11 objects do not pickle). Each mechanism declares a default budget
(`samples=`) that keeps an audit to tens of seconds.

Modules: recipes.py (what an object is built from), pairs.py (neighbours), draws.py (runners).
pydp itself is imported on first use.
"""
from __future__ import annotations

import inspect

from ...errors import DpVerifyError, InvalidClaimError
from ...mechanism import Mechanism, validate_claim
from .. import require_pydp
from .draws import ENTRIES, AlgorithmDraws, KeepDraws, NoiseDraws
from .pairs import BASE_RECORDS, algorithm_pairs, partition_pairs, value_pairs
from .recipes import (ALGORITHMS, MECHANISMS, STRATEGIES, Recipe, algorithm_kwargs,
                      check_rebuilt, mechanism_kwargs, recipe_of, strategy_kwargs)

# default budgets, runs per input (audit(samples=...) wins): a one-pair audit of a mechanism
# at about 10 µs a run on two cores; a four-pair audit of an algorithm at its measured cost
MECHANISM_SAMPLES = 1 << 16
ALGORITHM_SAMPLES = 1 << 14
QUANTILE_SAMPLES = 1 << 11  # Max, Min, Median, Percentile: 150-350 µs a run
STRATEGY_SAMPLES = 1 << 17
QUANTILE_TREE = ("Max", "Min", "Median", "Percentile")


def _claim(obj, label: str) -> tuple[float, float]:
    """(epsilon, delta) as the pydp object states them (delta 0 when it has none)."""
    epsilon, delta = float(obj.epsilon), float(getattr(obj, "delta", 0.0))
    if epsilon == 0:
        raise InvalidClaimError(f"{label} states epsilon = 0 (e.g. a GaussianMechanism made by "
                                "create_from_standard_deviation states no claim): build it "
                                "with its epsilon (and delta) so the claim can be read")
    return validate_claim(epsilon, delta)


def _class_and_kwargs(target, kwargs: dict, names, module: str, instance_kwargs):
    """(class name, constructor keywords, instance or None) from a class plus keywords or an
    instance (whose keywords `instance_kwargs` reads)."""
    is_class = inspect.isclass(target)
    cls = target.__name__ if is_class else type(target).__name__
    if cls not in names:
        raise DpVerifyError(f"expected one of {', '.join(names)} from {module} (a class with "
                            f"its keywords, or an instance), got {cls}")
    if is_class:
        return cls, dict(kwargs), None
    if kwargs:
        raise DpVerifyError(f"constructor keywords {sorted(kwargs)} given with a built {cls}: "
                            "pass the class with its keywords, or the instance alone")
    return cls, instance_kwargs(target), target


def from_mechanism(mechanism, *, dtype: str = "float", pairs=None, name=None,
                   **kwargs) -> Mechanism:
    """A dpverify Mechanism running pydp's `add_noise` of a LaplaceMechanism or
    GaussianMechanism: the instance, or the class with its constructor keywords
    (`from_mechanism(LaplaceMechanism, epsilon=1.0, sensitivity=1.0)`).

    Claim: the mechanism's epsilon (and delta), for inputs `sensitivity` apart (Laplace's
    `sensitivity`, Gaussian's `l2_sensitivity`). Pairs: (0, sensitivity), as floats
    (`dtype="float"`) or whole numbers (`dtype="int"`: add_noise then returns whole numbers).
    `pairs=` overrides them (they must be at most the sensitivity apart for the claim to hold).
    """
    require_pydp()
    cls, arguments, instance = _class_and_kwargs(
        mechanism, kwargs, MECHANISMS, "pydp.algorithms.numerical_mechanisms", mechanism_kwargs)
    recipe = recipe_of("mechanism", cls, arguments)
    label = name or recipe.label() + (" on int inputs" if dtype == "int" else "")
    if instance is None:
        built = recipe.build_checked()
        epsilon, delta = _claim(built, label)
    else:  # the claim first: an instance that states none is explained before rebuilding
        epsilon, delta = _claim(instance, label)
        built = recipe.build_checked()
        check_rebuilt(instance, built, label)
    sensitivity = built.sensitivity if cls == "LaplaceMechanism" else built.l2_sensitivity
    if pairs is None:
        pairs = value_pairs(sensitivity, dtype, label)
    return Mechanism(fn=NoiseDraws(recipe, built), name=label, epsilon=epsilon, delta=delta,
                     pairs=pairs, batched=True, backend="loky", randomness="own", samples=MECHANISM_SAMPLES)


def from_algorithm(algorithm, *, entry: str = "quick_result", pairs=None, name=None,
                   **kwargs) -> Mechanism:
    """A dpverify Mechanism running an algorithm of `pydp.algorithms.laplacian` (Count,
    BoundedSum, BoundedMean, BoundedVariance, BoundedStandardDeviation, Max, Min, Median,
    Percentile) on a dataset: the class with its constructor keywords, e.g.
    `from_algorithm(BoundedMean, epsilon=1.0, lower_bound=0, upper_bound=1, dtype="float")`,
    or a built Count (the other algorithms hide their bounds, so their instances raise a
    DpVerifyError asking for the class and keywords).

    Claim: the built algorithm's epsilon and delta, for one privacy unit's records. Pairs:
    see pairs.algorithm_pairs (one unit of `linf_sensitivity` records in each of
    `l0_sensitivity` partitions, at the bounds; a tuple of partitions when l0 > 1, audited as
    a tuple of results). `entry`: "quick_result" (default) or "add_entries" (reset,
    add_entries, result). `pairs=` overrides the pairs.
    """
    require_pydp()
    if entry not in ENTRIES:
        raise DpVerifyError(f"entry must be one of {ENTRIES} (pydp's ways to run an "
                            f"algorithm on a dataset), got {entry!r}")
    cls, arguments, _ = _class_and_kwargs(algorithm, kwargs, ALGORITHMS,
                                          "pydp.algorithms.laplacian", algorithm_kwargs)
    recipe = recipe_of("algorithm", cls, arguments)
    built = recipe.build_checked()
    label = name or recipe.label()
    epsilon, delta = _claim(built, label)
    if pairs is None:
        pairs = algorithm_pairs(cls, arguments, built, label)
    samples = QUANTILE_SAMPLES if cls in QUANTILE_TREE else ALGORITHM_SAMPLES
    return Mechanism(fn=AlgorithmDraws(recipe, entry, built), name=label, epsilon=epsilon,
                     delta=delta, pairs=pairs, batched=True, backend="loky", randomness="own",
                     samples=samples)


def from_partition_selection(strategy, *, pairs=None, name=None, **kwargs) -> Mechanism:
    """A dpverify Mechanism running a partition selection strategy's `should_keep(n)` (True:
    the partition with n users is released): a strategy name of `create_partition_strategy`
    ("truncated_geometric", "laplace", "gaussian") with its keywords (epsilon, delta,
    max_partitions_contributed, optional pre_threshold), or a built strategy.

    Claim: the strategy's epsilon and delta, for one user added to each of up to
    `max_partitions_contributed` partitions. Pairs: see pairs.partition_pairs (a count, or a
    tuple of counts for several partitions). `pairs=` overrides them.
    """
    require_pydp()
    if isinstance(strategy, str):
        if strategy.lower() not in STRATEGIES:
            raise DpVerifyError(f"strategy must be one of {sorted(STRATEGIES)} (pydp's "
                                f"create_partition_strategy), got {strategy!r}")
        key, arguments = strategy.lower(), dict(kwargs)
    elif kwargs:
        raise DpVerifyError("keywords given with a built strategy: pass a strategy name with "
                            "its keywords, or the strategy alone")
    else:
        key, arguments = strategy_kwargs(strategy)
    recipe = recipe_of("strategy", key, arguments)
    built = recipe.build_checked()
    label = name or recipe.label()
    epsilon, delta = _claim(built, label)
    if pairs is None:
        pairs = partition_pairs(built, label)
    return Mechanism(fn=KeepDraws(recipe, built), name=label, epsilon=epsilon, delta=delta,
                     pairs=pairs, batched=True, backend="loky", randomness="own", samples=STRATEGY_SAMPLES)


__all__ = ["from_mechanism", "from_algorithm", "from_partition_selection", "Recipe",
           "NoiseDraws", "AlgorithmDraws", "KeepDraws", "value_pairs", "algorithm_pairs",
           "partition_pairs", "BASE_RECORDS", "MECHANISM_SAMPLES", "ALGORITHM_SAMPLES",
           "QUANTILE_SAMPLES", "STRATEGY_SAMPLES"]
