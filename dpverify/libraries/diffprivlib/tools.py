"""Adapting diffprivlib's bounded tools and models (`from_tool`): the claim is the epsilon
passed (docs/theory.md §7), the neighbouring datasets move one record to the bounds
(`tool_pairs`), and each run passes `random_state=RandomState(rng's bit generator)`,
diffprivlib's documented way to seed a tool or model (`ToolRun`).
"""
from __future__ import annotations

import inspect
import warnings

import numpy as np

from ...errors import DpVerifyError, InvalidPairsError
from ...mechanism import Mechanism, validate_claim
from .. import require_diffprivlib

# Tools whose noise is calibrated to one record added or removed (a histogram's counts move by
# at most 1 in one bin); every other tool calibrates to the dataset size n and is audited on
# datasets of the same size with one record replaced. diffprivlib states no neighbour relation
# and has no domain object to read one from: each tool's calibration is what says it.
ADD_REMOVE_TOOLS = ("histogram", "histogramdd", "histogram2d")
NEIGHBOURING = ("replace", "add_remove")


_UNRECORDED = None


def _unrecorded_accountant():
    """A BudgetAccountant that checks nothing and records nothing: the default accountant
    would keep one entry per run (memory grows with the audit). Accounting never affects the
    output distribution."""
    global _UNRECORDED
    if _UNRECORDED is None:
        from diffprivlib.accountant import BudgetAccountant

        class UnrecordedAccountant(BudgetAccountant):
            def spend(self, epsilon, delta):
                return self

        _UNRECORDED = UnrecordedAccountant()
    return _UNRECORDED


def histogram_counts(result) -> tuple:
    """histogram* return (counts, edges): the counts are the release."""
    return tuple(np.ravel(result[0]).tolist())


def numbers(result):
    """A scalar result as a Python number, an array as a flat tuple."""
    arr = np.asarray(result)
    return arr.item() if arr.ndim == 0 else tuple(arr.ravel().tolist())


def coefficients(model) -> tuple:
    """A fitted linear model's release: coef_ then intercept_, flattened."""
    return tuple(np.ravel(model.coef_).tolist()) + tuple(np.ravel(model.intercept_).tolist())


def naive_bayes_parameters(model) -> tuple:
    """A fitted GaussianNB's release: per-class means, variances and noisy class counts."""
    return (tuple(np.ravel(model.theta_).tolist()) + tuple(np.ravel(model.var_).tolist())
            + tuple(np.ravel(model.class_count_).tolist()))


def _default_output(tool, is_model):
    """What a tool or fitted model releases, as numbers (see from_tool)."""
    name = tool.__name__
    if name in ADD_REMOVE_TOOLS:
        return histogram_counts
    if not is_model:
        return numbers
    if name in ("LinearRegression", "LogisticRegression"):
        return coefficients
    if name == "GaussianNB":
        return naive_bayes_parameters
    raise DpVerifyError(f"which attributes of a fitted {name} are released? pass output=f, "
                        "f(fitted_model) -> a number or a tuple of numbers")


class ToolRun:
    """f(data, rng): run a diffprivlib tool (or fit a model on data = (X, y)) with
    `random_state` a RandomState sharing `rng`'s bit generator, and return `output(result)`."""

    def __init__(self, tool, epsilon, call_kwargs, output, is_model):
        self.tool, self.epsilon, self.output, self.is_model = tool, epsilon, output, is_model
        self.call_kwargs = call_kwargs

    def __call__(self, data, rng):
        """One run of the tool on dataset `data` (one fit on (X, y)), drawing from `rng`."""
        kwargs = {"accountant": _unrecorded_accountant(), **self.call_kwargs,
                  "epsilon": self.epsilon, "random_state": np.random.RandomState(rng.bit_generator)}
        if self.is_model:
            X, y = data
            with warnings.catch_warnings():  # a degenerate fit's optimiser overflows, per run
                warnings.simplefilter("ignore", RuntimeWarning)
                return self.output(self.tool(**kwargs).fit(X, y))
        return self.output(self.tool(data, **kwargs))


def _bound_kwargs(name: str, bounds) -> dict:
    """How each tool is told its bounds: histograms take `range`, LinearRegression takes
    bounds=(bounds_X, bounds_y), the rest `bounds`."""
    if bounds is None:
        return {}
    if name in ADD_REMOVE_TOOLS:
        return {"range": bounds}
    if name == "LinearRegression":
        bounds_X, bounds_y = bounds
        return {"bounds_X": bounds_X, "bounds_y": bounds_y}
    return {"bounds": bounds}


def _replacements(records, lower, upper) -> list:
    """[(i, corner)]: for each corner of the bounds (all lower, all upper), the index of the
    record farthest from it (in units of the range), unless every record sits on it."""
    lo = np.broadcast_to(np.asarray(lower, dtype=float), records.shape[1:])
    hi = np.broadcast_to(np.asarray(upper, dtype=float), records.shape[1:])
    span = np.where(hi > lo, hi - lo, 1.0)
    out = []
    for corner in (lo, hi):
        far = (np.abs(records - corner) / span).reshape(len(records), -1).sum(axis=1)
        i = int(np.argmax(far))
        if far[i] > 0:
            out.append((i, corner))
    return out


def replace_pairs(records, lower, upper) -> list:
    """Same-size neighbours: for each corner of the bounds (all lower, all upper), the record
    farthest from it replaced by it. `records` has one record per row (or per entry)."""
    records = np.asarray(records, dtype=float)
    pairs = []
    for i, corner in _replacements(records, lower, upper):
        other = records.copy()
        other[i] = corner
        pairs.append((records, other))
    return pairs


def add_remove_pairs(records, lower, upper) -> list:
    """Neighbours one record apart in size: a record added at each bound, the first one
    removed, and the corner of the empty dataset against one record at the upper bound."""
    records = np.asarray(records, dtype=float)
    pairs = [(records, np.append(records, [float(b)])) for b in (lower, upper)]
    if len(records) > 1:
        pairs.append((records, records[1:]))
    if len(records):
        pairs.append((records[:0], np.array([float(upper)])))
    return pairs


def _unseen_label(labels):
    """A label no record has: one more than the largest for numbers, else "unseen"."""
    numeric = all(isinstance(label, (int, float, np.integer, np.floating)) for label in labels)
    return max(labels) + 1 if numeric and labels else "unseen"


def _unseen_label_pair(X, y, i):
    """The corner of a classifier's neighbours: record i relabelled with a label no other
    record has. diffprivlib's classifiers read their classes from y, so this record adds a
    class (and changes the shape of what the model releases)."""
    labels = list(np.unique(y))
    y2 = y.astype(object) if not np.issubdtype(y.dtype, np.number) else y.copy()
    y2[i] = _unseen_label(labels)
    return (X, y), (X, y2)


def _logistic_pairs(X, y, data_norm) -> list:
    """LogisticRegression bounds records by norm (`data_norm`), not by box: a record replaced by
    ±data_norm·e1 with the other label (when its own label keeps another member); and the
    first row given a label no other row has (`_unseen_label_pair`)."""
    if data_norm is None:
        raise InvalidPairsError("LogisticRegression bounds each record by its norm: pass "
                                "data_norm= (without it diffprivlib takes the norm from the "
                                "data, which is not differentially private) or pairs=")
    labels, pairs = list(np.unique(y)), []
    for sign in (1.0, -1.0):
        corner = np.zeros(X.shape[1])
        corner[0] = sign * float(data_norm)
        i = int(np.argmax(np.linalg.norm(X - corner, axis=1)))
        X2, y2 = X.copy(), y.copy()
        X2[i] = corner
        others = [label for label in labels if label != y[i]]
        if others and np.count_nonzero(y == y[i]) > 1:
            y2[i] = others[0]
        pairs.append(((X, y), (X2, y2)))
    return pairs + [_unseen_label_pair(X, y, 0)]


def _model_pairs(name, data, bounds, kwargs) -> list:
    """Replace-one neighbours of a training set (X, y): a row moved to a corner of the bounds
    (LinearRegression: its target to the bound as well; classifiers: see _classifier_pairs)."""
    X, y = np.asarray(data[0], dtype=float), np.asarray(data[1])
    if name == "LogisticRegression":
        return _logistic_pairs(X, y, kwargs.get("data_norm"))
    if bounds is None:
        raise InvalidPairsError(f"{name}: pass bounds= (without them diffprivlib takes the "
                                "bounds from the data, which is not differentially private) "
                                "or pairs=[((X, y), (X2, y2)), ...]")
    if name == "LinearRegression":
        (x_lo, x_hi), (y_lo, y_hi) = bounds
        d = X.shape[1]
        lo = np.append(np.broadcast_to(np.asarray(x_lo, dtype=float), d), float(y_lo))
        hi = np.append(np.broadcast_to(np.asarray(x_hi, dtype=float), d), float(y_hi))
        records = np.column_stack([X, y.astype(float)])
        return [((X, y), (o[:, :-1], o[:, -1])) for _, o in replace_pairs(records, lo, hi)]
    return _classifier_pairs(X, y, *bounds)


def _classifier_pairs(X, y, lower, upper) -> list:
    """A row moved to a corner of the bounds, keeping its label, and again with its label
    changed to another class (when its own class keeps a member, so the classes stay the
    same): replacing a record (x, y) may change both. And the corner: the first row given a
    label no other row has (`_unseen_label_pair`)."""
    labels, pairs = list(np.unique(y)), []
    for i, corner in _replacements(X, lower, upper):
        X2 = X.copy()
        X2[i] = corner
        pairs.append(((X, y), (X2, y)))
        others = [label for label in labels if label != y[i]]
        if others and np.count_nonzero(y == y[i]) > 1:
            y2 = y.copy()
            y2[i] = others[0]
            pairs.append(((X, y), (X2, y2)))
    return pairs + [_unseen_label_pair(X, y, 0)] if len(y) else pairs


def tool_pairs(name, data, bounds, neighbouring, is_model, kwargs) -> list:
    """Neighbouring datasets for a tool or model, at the extremes its bounds allow."""
    if is_model:
        pairs = _model_pairs(name, data, bounds, kwargs)
    else:
        if name == "count_nonzero":  # counts truthy entries: bounds (0, 1)
            bounds = (0.0, 1.0)
        if bounds is None:
            raise InvalidPairsError(f"{name}: pass bounds= (without them diffprivlib takes the "
                                    "bounds from the data, which is not differentially "
                                    "private) or pairs=[(D, D2), ...]")
        build = replace_pairs if neighbouring == "replace" else add_remove_pairs
        pairs = build(data, *bounds)
    if not pairs:
        raise InvalidPairsError(f"{name}: no record can move to a bound (all records already sit "
                                "at both bounds?); pass pairs=")
    return pairs


def from_tool(tool, data, epsilon, bounds=None, name=None, pairs=None, output=None, *,
              neighbouring=None, **kwargs) -> Mechanism:
    """A dpverify Mechanism running a diffprivlib tool on a dataset, or fitting a model.

    tool: a function of `diffprivlib.tools` (mean, var, std, sum, nanmean, median, quantile,
    histogram, count_nonzero, ...) called as tool(D, epsilon=, bounds=, random_state=,
    **kwargs); or a class of `diffprivlib.models` (GaussianNB, LinearRegression with
    bounds=(bounds_X, bounds_y), LogisticRegression with data_norm=) fitted on D = (X, y).
    The claim is (epsilon, 0): no 0.6 tool or model takes a delta.
    Neighbours: diffprivlib calibrates every tool but the histograms to the dataset size n
    (mean: (upper − lower)/n; sum and count_nonzero truncate to [n·lower, n·upper]), i.e.
    same-size datasets with one record replaced: `neighbouring="replace"`, the record farthest
    from a bound moved to it. Histograms add 1-sensitivity noise per bin: one record added at a
    bound or removed, and the empty dataset against one record (`"add_remove"`). Classifiers
    also get the corner of a row relabelled with a label no other row has. Pass `neighbouring=` to choose, or pairs= (then `data`
    is unused). output: f(result) -> the audited release (default: histogram counts, a scalar,
    a model's coef_ and intercept_, GaussianNB's theta_, var_ and class_count_).
    """
    require_diffprivlib()
    eps, _ = validate_claim(epsilon, 0.0)
    is_model = inspect.isclass(tool) and hasattr(tool, "fit")
    tool_name = getattr(tool, "__name__", type(tool).__name__)
    neighbouring = neighbouring or ("add_remove" if tool_name in ADD_REMOVE_TOOLS else "replace")
    if neighbouring not in NEIGHBOURING:
        raise InvalidPairsError(f"neighbouring must be one of {NEIGHBOURING}, got "
                                f"{neighbouring!r}")
    if pairs is None:
        pairs = tool_pairs(tool_name, data, bounds, neighbouring, is_model, kwargs)
    call_kwargs = {**_bound_kwargs(tool_name, bounds), **kwargs}
    runner = ToolRun(tool, eps, call_kwargs, output or _default_output(tool, is_model), is_model)
    module = "models" if is_model else "tools"
    default = f"diffprivlib.{module}.{tool_name}(epsilon={eps:g}, bounds={bounds!r})"
    return Mechanism(fn=runner, name=name or default[:120], epsilon=eps, delta=0.0,
                     pairs=pairs, batched=False)
