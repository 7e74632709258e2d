"""Census cases for diffprivlib 0.6 (read by scripts/libraries.py; scripts/_census_common.py
says what a census module offers): every mechanism class that has a neighbouring notion
dpverify can build, and its bounded tools and models, each at one small configuration with ε
around 0.5–1, built with `dpverify.libraries.diffprivlib`.
"""
from functools import partial

import numpy as np

from _census_common import config

SKIPPED = {
    "Vector": "perturbs an objective function (models.LogisticRegression uses it): its inputs "
        "are the objectives of neighbouring datasets, so from_mechanism raises "
        "InvalidPairsError without pairs=",
    "DPTransformer (IntToString, StringToInt, RoundedInteger)": "wrappers that change the input "
        "domain of another mechanism; need pairs= in their own domain",
    "tools.histogramdd / histogram2d": "the same GeometricTruncated per bin as histogram",
    "tools.percentile / nanvar / nanstd / nansum": "the same code paths as quantile, var, "
        "std, sum",
    "models.LogisticRegression": "about 3.4 ms per fit, too slow for the census budget; "
        "from_tool(models.LogisticRegression, (X, y), eps, data_norm=...) audits it",
    "models.KMeans / PCA / StandardScaler / RandomForestClassifier / DecisionTreeClassifier":
        "too slow per fit for a census budget; audit with from_tool(..., output=...)",
}


def _mechanism(cls_name: str, **params):
    """A diffprivlib mechanism through from_mechanism (diffprivlib imported on first build)."""
    from diffprivlib import mechanisms
    from dpverify.libraries.diffprivlib import from_mechanism
    return from_mechanism(getattr(mechanisms, cls_name)(**params))


def _tool(tool_name: str, data, epsilon, **kwargs):
    """A diffprivlib tool or model through from_tool."""
    from diffprivlib import models, tools
    from dpverify.libraries.diffprivlib import from_tool
    tool = getattr(tools, tool_name, None) or getattr(models, tool_name)
    return from_tool(tool, data, epsilon, **kwargs)


MECHANISMS = [  # (class, parameters, samples)
    ("Laplace", dict(epsilon=1.0, sensitivity=1.0), 1 << 16),
    ("LaplaceTruncated", dict(epsilon=1.0, sensitivity=1.0, lower=0.0, upper=4.0), 1 << 15),
    ("LaplaceFolded", dict(epsilon=1.0, sensitivity=1.0, lower=0.0, upper=4.0), 1 << 15),
    ("LaplaceBoundedDomain", dict(epsilon=1.0, sensitivity=1.0, lower=0.0, upper=4.0), 1 << 14),
    ("LaplaceBoundedNoise", dict(epsilon=1.0, delta=0.1, sensitivity=1.0), 1 << 15),
    ("Gaussian", dict(epsilon=1.0, delta=0.01, sensitivity=1.0), 1 << 15),
    ("GaussianAnalytic", dict(epsilon=1.0, delta=0.01, sensitivity=1.0), 1 << 15),
    ("GaussianDiscrete", dict(epsilon=1.0, delta=0.01, sensitivity=1), 1 << 15),
    ("Geometric", dict(epsilon=1.0, sensitivity=1), 1 << 16),
    ("GeometricTruncated", dict(epsilon=1.0, sensitivity=1, lower=0, upper=4), 1 << 15),
    ("GeometricFolded", dict(epsilon=1.0, sensitivity=1, lower=0, upper=4), 1 << 13),
    ("Staircase", dict(epsilon=1.0, sensitivity=1.0), 1 << 16),
    ("Snapping", dict(epsilon=1.0, sensitivity=1.0, lower=0.0, upper=4.0), 1 << 14),
    ("Uniform", dict(delta=0.25, sensitivity=1.0), 1 << 16),
    ("Binary", dict(epsilon=1.0, value0="no", value1="yes"), 1 << 16),
    ("Exponential", dict(epsilon=1.0, sensitivity=1.0, utility=[0.0, 1.0, 2.0]), 1 << 13),
    ("PermuteAndFlip", dict(epsilon=1.0, sensitivity=1.0, utility=[0.0, 1.0, 2.0]), 1 << 13),
    ("ExponentialCategorical", dict(epsilon=1.0, utility_list=[("a", "b", 1.0), ("a", "c", 2.0),
                                                               ("b", "c", 1.0)]), 1 << 15),
    ("ExponentialHierarchical", dict(epsilon=1.0, hierarchy=[["a", "b"], ["c"]]), 1 << 15),
    ("Bingham", dict(epsilon=1.0, sensitivity=1.0), 1 << 13),  # 0.45 ms a draw; 2^11 lacked power
]

_X1 = np.array([0.0, 0.0, 0.0, 1.0])  # values at the bounds (0, 1): the sensitivity bites
# a quantile needs gaps between records (records only at the bounds leave one interval of
# positive length, and the output is uniform whatever the data)
_XQ = np.array([0.2, 0.4, 0.6, 0.8])
_NB = (np.array([[0.0], [0.0], [1.0], [1.0]]), np.array([0, 0, 1, 1]))
_LR = (np.array([[0.0], [0.0], [0.0], [1.0]]), np.array([0.0, 0.0, 0.0, 1.0]))

TOOLS = [  # (tool, data, parameters, samples)
    ("mean", _X1, dict(epsilon=1.0, bounds=(0.0, 1.0)), 1 << 13),
    ("var", _X1, dict(epsilon=1.0, bounds=(0.0, 1.0)), 1 << 11),
    ("sum", _X1, dict(epsilon=1.0, bounds=(0.0, 1.0)), 1 << 13),
    ("median", _XQ, dict(epsilon=1.0, bounds=(0.0, 1.0)), 1 << 12),
    ("count_nonzero", _X1, dict(epsilon=1.0), 1 << 13),
    ("histogram", _X1, dict(epsilon=1.0, bounds=(0.0, 1.0), bins=2), 1 << 12),
    ("GaussianNB", _NB, dict(epsilon=1.0, bounds=(0.0, 1.0)), 1 << 11),
    # violates its claim (x² sensitivity bug); its degenerate fits are slow: few samples
    ("LinearRegression", _LR, dict(epsilon=1.0, bounds=((0.0, 1.0), (0.0, 1.0))), 1 << 8),
]


def cases() -> list:
    """(name, configuration, build, samples) for every census case."""
    out = [(f"mechanisms.{cls}", config(params), partial(_mechanism, cls, **params), samples)
           for cls, params, samples in MECHANISMS]
    for name, data, params, samples in TOOLS:
        kind = "models" if name[0].isupper() else "tools"
        X, y = data if isinstance(data, tuple) else (data, None)
        shown = f"D={np.asarray(X).ravel().tolist()}"
        if y is not None:
            shown += f", y={np.asarray(y).tolist()}"
        out.append((f"{kind}.{name}", f"{shown}, {config(params)}",
                    partial(_tool, name, data, **params), samples))
    return out

HALF_CLAIM_NOTES = {
    "mechanisms.Gaussian": "the classic calibration σ = Δ√(2 ln(1.25/δ))/ε is loose: the "
        "mechanism is far more private than (ε, δ), so (ε/2, δ) can hold too",
    "mechanisms.Uniform": "its claim is (0, δ): halving ε = 0 does not change it (audited at "
        "ε = 0.001, which (0, δ) implies)",
    "mechanisms.ExponentialCategorical": "on these pairs its true ε is 0.5 (the utility spread "
        "is 1, the calibration assumes 2): the claim is loose by a factor 2",
    "tools.median": "on these pairs the true ε is 0.5 (computed): the claim is loose by a "
        "factor 2",
}

FINDINGS_CHECKED = {
    "models.GaussianNB": "the corner pair gives one row a label no other row has. diffprivlib's "
        "GaussianNB.fit takes its classes from y (scikit-learn's np.unique(y)) and releases one "
        "mean, variance and noisy count per class, so the number of classes is released without "
        "noise and ε is infinite on that pair. Checked outside dpverify: 1,000 direct fits on "
        "X = [0, 0, 1, 1] with y = [0, 0, 1, 1] all release 2 class counts, 1,000 with "
        "y = [2, 0, 1, 1] all release 3. diffprivlib 0.6 has no `classes=` argument for "
        "GaussianNB that would fix the class set in advance; it warns about bounds taken from "
        "the data, not about classes.",
    "models.LinearRegression": "diffprivlib's `_construct_regression_obj` computes the "
        "sensitivity of the XᵀX diagonal as `np.max(np.abs([bounds_X[0][i], "
        "bounds_X[0][i]])) ** 2`: the lower bound twice, never the upper one. With bounds (0, 1) "
        "that sensitivity is 0, so Σ(x − m)² is released with no noise and the fit diverges on "
        "the dataset whose feature column is constant. Checked outside dpverify: in a direct "
        "Monte Carlo of the shipped class on X = [0, 0, 0, 0], P(|coef| ≥ 1000) is 0.587; with "
        "`bounds_X[1][i]` in the second slot it is 0.000. The pair differs in one record, inside "
        "the bounds, as the model's docs require.",
}
