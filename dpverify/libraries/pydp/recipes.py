"""What a pydp object is made of: a `Recipe` (which factory, with which keyword arguments), so
that the object can be built again in a worker process (pybind11 objects do not pickle), and
the keyword arguments recovered from an instance when pydp exposes all of them.

pydp's objects come from three places:

    "mechanism"   pydp.algorithms.numerical_mechanisms.<name>(**kwargs)   (LaplaceMechanism, ...)
    "algorithm"   pydp.algorithms.laplacian.<name>(**kwargs)              (BoundedMean, ...)
    "strategy"    pydp.algorithms.partition_selection.create_partition_strategy(<name>, **kwargs)
"""
from __future__ import annotations

import importlib
from typing import NamedTuple

from ...errors import DpVerifyError
from .. import require_pydp

MECHANISMS = ("LaplaceMechanism", "GaussianMechanism")
ALGORITHMS = ("Count", "BoundedSum", "BoundedMean", "BoundedVariance",
              "BoundedStandardDeviation", "Max", "Min", "Median", "Percentile")
# create_partition_strategy's names, and the class each returns
STRATEGIES = {"truncated_geometric": "TruncatedGeometricPartitionSelectionStrategy",
              "laplace": "LaplacePartitionSelectionStrategy",
              "gaussian": "GaussianPartitionSelectionStrategy"}
_MODULES = {"mechanism": "pydp.algorithms.numerical_mechanisms",
            "algorithm": "pydp.algorithms.laplacian",
            "strategy": "pydp.algorithms.partition_selection"}


class Recipe(NamedTuple):
    """How to build a pydp object: `kind` (a key of _MODULES), the class or strategy `name`,
    and the keyword arguments as a tuple of (key, value) pairs (so a Recipe is hashable and
    pickles as plain data)."""
    kind: str
    name: str
    kwargs: tuple

    @property
    def arguments(self) -> dict:
        return dict(self.kwargs)

    def build(self):
        """The pydp object this recipe describes (pydp imported on first use)."""
        require_pydp()
        module = importlib.import_module(_MODULES[self.kind])
        if self.kind == "strategy":
            return module.create_partition_strategy(self.name, **self.arguments)
        return getattr(module, self.name)(**self.arguments)

    def build_checked(self):
        """build(), with pydp's refusal (bad bounds, epsilon, dtype...) as a DpVerifyError
        naming the object."""
        try:
            return self.build()
        except (RuntimeError, ValueError, TypeError) as exc:
            raise DpVerifyError(f"pydp cannot build {self.label()}: {exc}") from None

    def label(self) -> str:
        """e.g. "pydp:BoundedMean(epsilon=1.0, lower_bound=0, upper_bound=1, dtype='float')"."""
        shown = ", ".join(f"{k}={v!r}" for k, v in self.kwargs)
        if self.kind == "strategy":
            return f"pydp:create_partition_strategy({self.name!r}, {shown})"
        return f"pydp:{self.name}({shown})"


def recipe_of(kind: str, name: str, kwargs: dict) -> Recipe:
    return Recipe(kind, name, tuple(kwargs.items()))


def mechanism_kwargs(mech) -> dict:
    """The constructor arguments of a numerical mechanism instance, read from its properties:
    LaplaceMechanism(epsilon, sensitivity), GaussianMechanism(epsilon, delta, sensitivity =
    its l2_sensitivity)."""
    name = type(mech).__name__
    if name == "LaplaceMechanism":
        return {"epsilon": float(mech.epsilon), "sensitivity": float(mech.sensitivity)}
    if name == "GaussianMechanism":
        return {"epsilon": float(mech.epsilon), "delta": float(mech.delta),
                "sensitivity": float(mech.l2_sensitivity)}
    raise DpVerifyError(f"dpverify.libraries.pydp.from_mechanism audits {' and '.join(MECHANISMS)}"
                        f", got {name}")


def check_rebuilt(original, rebuilt, label: str) -> None:
    """A mechanism rebuilt from its properties must add the same noise as the original (its
    Laplace diversity or Gaussian std): otherwise it was built some other way (e.g.
    GaussianMechanism.create_from_standard_deviation) and cannot be sent to worker processes."""
    attribute = "diversity" if hasattr(original, "diversity") else "std"
    ours, theirs = getattr(rebuilt, attribute), getattr(original, attribute)
    if abs(ours - theirs) > 1e-12 * max(1.0, abs(theirs)):
        raise DpVerifyError(f"{label}: rebuilt from its epsilon, delta and sensitivity it has "
                            f"{attribute} {ours!r}, the instance {theirs!r}, so it was not built "
                            "by its constructor and dpverify cannot rebuild it in worker "
                            "processes; pass the class and its keywords instead, e.g. "
                            "from_mechanism(GaussianMechanism, epsilon=1.0, delta=1e-5, "
                            "sensitivity=1.0)")


def algorithm_kwargs(algorithm) -> dict:
    """The constructor arguments of an algorithm instance, when pydp exposes them all: only
    Count (epsilon, l0_sensitivity, linf_sensitivity, dtype). The bounded algorithms and
    Percentile keep their bounds inside the C++ object, where Python cannot read them, so
    they are neither rebuildable nor pairable from an instance: a DpVerifyError says to pass
    the class and its keywords."""
    name = type(algorithm).__name__
    if name == "Count":
        return {"epsilon": float(algorithm.epsilon),
                "l0_sensitivity": int(algorithm.l0_sensitivity),
                "linf_sensitivity": int(algorithm.linf_sensitivity),
                "dtype": algorithm.dtype}
    example = ("from_algorithm(Percentile, epsilon=1.0, percentile=0.5, lower_bound=0, "
               "upper_bound=10, dtype='int')" if name == "Percentile" else
               f"from_algorithm({name}, epsilon=1.0, lower_bound=0, upper_bound=1, "
               "dtype='float')")
    raise DpVerifyError(f"a pydp {name} instance does not expose its lower_bound and "
                        "upper_bound (they live in the C++ object), so dpverify can neither "
                        "put records at its bounds nor rebuild it in worker processes: pass "
                        f"the class and its constructor keywords instead, e.g. {example}")


def strategy_kwargs(strategy) -> tuple[str, dict]:
    """(create_partition_strategy's name, its keywords) of a partition selection strategy,
    read from the instance's properties. A pre-thresholded strategy does not expose which
    strategy it wraps: a DpVerifyError says to pass the name and keywords."""
    name = type(strategy).__name__
    for key, class_name in STRATEGIES.items():
        if name == class_name:
            return key, {"epsilon": float(strategy.epsilon), "delta": float(strategy.delta),
                         "max_partitions_contributed": int(strategy.max_partitions_contributed)}
    raise DpVerifyError(f"a pydp {name} does not expose everything it was built from (a "
                        "pre-thresholded strategy hides the strategy it wraps): pass the "
                        "strategy name and keywords instead, e.g. from_partition_selection("
                        "'laplace', epsilon=1.0, delta=1e-3, max_partitions_contributed=1, "
                        "pre_threshold=3)")
