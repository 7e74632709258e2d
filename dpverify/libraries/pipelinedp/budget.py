"""The claim of a PipelineDP computation (docs/theory.md §7): the budget accountant's
`total_epsilon` and `total_delta`, the budget the whole pipeline spends (here: one aggregate
or one select_partitions).

An accountant is spent by the computation it accounts for (`compute_budgets` may be called
once), so every run needs a fresh one. `BudgetSpec` is what the adapter keeps instead of an
accountant object: its class and constructor arguments, read from the object the user built
(or from "naive"/"pld" plus ε and δ). It pickles, and `fresh()` builds the same accountant
again, in whatever process runs the computation.
"""
from __future__ import annotations

from dataclasses import dataclass

from ...errors import InvalidClaimError
from ...mechanism import validate_claim
from .. import require_pipelinedp

# the accountant classes the adapter rebuilds: their names in pipeline_dp, and the
# constructor arguments (beyond total_epsilon and total_delta) with the private attributes
# that keep them
ACCOUNTANTS = {
    "naive": ("NaiveBudgetAccountant", {"num_aggregations": "_expected_num_aggregations",
                                        "aggregation_weights": "_expected_aggregation_weights"}),
    "pld": ("PLDBudgetAccountant", {"num_aggregations": "_expected_num_aggregations",
                                    "aggregation_weights": "_expected_aggregation_weights",
                                    "pld_discretization": "_pld_discretization"}),
}


@dataclass(frozen=True)
class BudgetSpec:
    """A budget accountant as class + constructor arguments: `fresh()` builds a new one."""

    kind: str  # a key of ACCOUNTANTS
    total_epsilon: float
    total_delta: float
    options: tuple = ()  # (argument, value) pairs beyond the totals

    def fresh(self):
        """A new, unspent accountant of this kind with these arguments (PLD: the library's
        class with its noise search remembered, `_memoized_pld`)."""
        pipeline_dp = require_pipelinedp()
        cls = (_memoized_pld() if self.kind == "pld"
               else getattr(pipeline_dp, ACCOUNTANTS[self.kind][0]))
        return cls(total_epsilon=self.total_epsilon, total_delta=self.total_delta,
                   **dict(self.options))

    def describe(self) -> str:
        """E.g. "NaiveBudgetAccountant(total_epsilon=1, total_delta=1e-06)"."""
        args = [f"total_epsilon={self.total_epsilon:g}", f"total_delta={self.total_delta:g}"]
        args += [f"{k}={v!r}" for k, v in self.options]
        return f"{ACCOUNTANTS[self.kind][0]}({', '.join(args)})"


_PLD_CLASS = None
_PLD_SEARCHES: dict = {}  # this process's noise searches: their inputs -> the noise found


def _memoized_pld():
    """PLDBudgetAccountant with `_find_minimum_base_noise_std` remembered per process.

    That search (a binary search composing privacy loss distributions, about a second) is a
    deterministic function of the totals, the discretization and the registered mechanisms'
    types, counts, sensitivities and weights, so the key holds exactly these and a remembered
    value is the one the search would return: every computation still gets a fresh
    accountant whose compute_budgets runs the library's code, with the same noise. Without it
    an audit's many small computations (pre-flight probes) would spend minutes searching."""
    global _PLD_CLASS
    if _PLD_CLASS is None:
        pipeline_dp = require_pipelinedp()

        class MemoizedPLDBudgetAccountant(pipeline_dp.PLDBudgetAccountant):
            def _find_minimum_base_noise_std(self) -> float:
                key = (self._total_epsilon, self._total_delta, self._pld_discretization,
                       tuple((m.mechanism_spec.mechanism_type, m.mechanism_spec.count,
                              m.sensitivity, m.weight) for m in self._mechanisms))
                if key not in _PLD_SEARCHES:
                    _PLD_SEARCHES[key] = super()._find_minimum_base_noise_std()
                return _PLD_SEARCHES[key]

        _PLD_CLASS = MemoizedPLDBudgetAccountant
    return _PLD_CLASS


def _kind_of(accountant) -> str:
    """"naive" or "pld" for an accountant object of exactly those classes, else raise."""
    pipeline_dp = require_pipelinedp()
    for kind, (cls_name, _) in ACCOUNTANTS.items():
        if type(accountant) is getattr(pipeline_dp, cls_name):
            return kind
    raise InvalidClaimError(
        f"accountant must be a pipeline_dp.NaiveBudgetAccountant or PLDBudgetAccountant (or "
        f"'naive' / 'pld' with epsilon= and delta=), got {type(accountant).__name__}: the "
        "adapter builds a fresh accountant of the same class for every run, so it must know "
        "the constructor")


def budget_spec(accountant="naive", epsilon=None, delta=None) -> BudgetSpec:
    """The BudgetSpec of an accountant object (its class and constructor arguments, read from
    the object), or of "naive" / "pld" with `epsilon` and `delta` (given to the constructor,
    which validates them as it would in a user's pipeline)."""
    if isinstance(accountant, str):
        if accountant not in ACCOUNTANTS:
            raise InvalidClaimError(f"accountant must be 'naive', 'pld' or a pipeline_dp "
                                    f"budget accountant, got {accountant!r}")
        if epsilon is None:
            raise InvalidClaimError(f"accountant={accountant!r} needs epsilon= (and delta=): "
                                    "the totals its constructor takes")
        spec = BudgetSpec(accountant, float(epsilon), float(delta or 0.0))
    else:
        if epsilon is not None or delta is not None:
            raise InvalidClaimError("pass either an accountant object (the claim is its "
                                    "total_epsilon and total_delta) or epsilon= and delta= "
                                    "with accountant='naive' / 'pld', not both")
        kind = _kind_of(accountant)
        options = tuple((arg, getattr(accountant, attr))
                        for arg, attr in ACCOUNTANTS[kind][1].items()
                        if getattr(accountant, attr, None) is not None)
        spec = BudgetSpec(kind, accountant.total_epsilon, accountant.total_delta, options)
    read_claim(spec)  # the constructor's own validation, and ours, before any run
    return spec


def read_claim(spec: BudgetSpec) -> tuple[float, float]:
    """(ε, δ) as a fresh accountant of `spec` reports them (`total_epsilon`, `total_delta`):
    the budget the library spends on the computation, so the claim it makes for it."""
    try:
        accountant = spec.fresh()
    except (ValueError, TypeError, ImportError) as exc:
        raise InvalidClaimError(f"pipeline_dp refused {spec.describe()}: {exc}") from None
    try:
        return validate_claim(accountant.total_epsilon, accountant.total_delta)
    except InvalidClaimError as exc:
        raise InvalidClaimError(f"{spec.describe()}: {exc}") from None

