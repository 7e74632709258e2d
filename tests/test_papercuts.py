"""Issue 25 papercuts: gate counts, `pytest --dpverify FILE` alone, where a mechanism raised,
one bad decorator in a file, the zoo not installed."""
import json
import os
import re
import textwrap
from pathlib import Path

import pytest

# pytester's in-process runs restore sys.modules afterwards; import the heavy modules here so
# numpy's extension modules are never imported twice (as tests/test_plugin.py does).
import dpverify
import dpverify.pipeline  # noqa: F401
import dpverify.interfaces.pytest_plugin  # noqa: F401
from dpverify.interfaces.cli import main

ROOT = Path(__file__).resolve().parents[1]
FAST = ["--samples", "20000", "--jobs", "1"]

GATE_MECHS = textwrap.dedent('''
    import dpverify

    @dpverify.mechanism(epsilon=1.0, pairs=[(0.0, 1.0)])
    def fresh(data, rng, size):
        return data + rng.laplace(0, 1.0, size)

    @dpverify.mechanism(epsilon=0.2, pairs=[(0.0, 1.0)])
    def drifted_violation(data, rng, size):
        return data + rng.laplace(0, 1.0, size)

    @dpverify.mechanism(epsilon=0.2, pairs=[(0.0, 1.0)])
    def missing_violation(data, rng, size):
        return data + rng.laplace(0, 1.0, size)
''')


def test_gate_counts_every_drift_and_not_in_baseline_line_it_prints(tmp_path, capsys):
    """A violation that also drifted, or is missing from the baseline, prints a DRIFT or
    "not in baseline" line: the summary used to count it only as a violation ("0 drift(s)"
    beside a DRIFT line)."""
    mechs = tmp_path / "mechs.py"
    mechs.write_text(GATE_MECHS)
    baseline = tmp_path / "b.json"
    baseline.write_text(json.dumps({"mechanisms": {"drifted_violation": {
        "epsilon_estimate": 5.0, "epsilon_lower_bound": 4.9}}}))
    summary = tmp_path / "summary.md"
    assert main(["gate", str(mechs), "--baseline", str(baseline), *FAST,
                 "--summary", str(summary)]) == 1
    out = capsys.readouterr().out
    drift_lines = len(re.findall(r"^ +DRIFT: ", out, re.M))
    missing_lines = len(re.findall(r"^ +not in baseline", out, re.M))
    violation_lines = len(re.findall(r"^VIOLATION ", out, re.M))
    assert (drift_lines, missing_lines, violation_lines) == (1, 2, 2)
    line = ("3 mechanism(s): 0 pass(es), 2 violation(s), 0 inconclusive, 1 drift(s), "
            "2 not in baseline, "
            "0 error(s)")
    assert line in out and line in summary.read_text()
    assert "- **missing_violation**: violation: claimed (ε=0.2, δ=0), certified ε ≥" in \
        summary.read_text()


# ------------------------------------------------------------------------------------------------
# pytest --dpverify FILE collects only FILE
# ------------------------------------------------------------------------------------------------

PLUGIN_MECHS = textwrap.dedent('''
    import dpverify

    @dpverify.mechanism(epsilon=1.0, pairs=[(0.0, 1.0)])
    def good_laplace(data, rng, size):
        return data + rng.laplace(0, 1.0, size)

    @dpverify.mechanism(epsilon=-1.0, pairs=[(0.0, 1.0)])
    def negative_claim(data, rng, size):
        return data + rng.laplace(0, 1.0, size)
''')
PLUGIN_FAST = ["--dpverify-samples", "16384", "--dpverify-jobs", "1", "-p", "no:cacheprovider"]


@pytest.fixture
def plugin_project(pytester):
    (pytester.path / "mine.py").write_text(PLUGIN_MECHS)
    pytester.makepyfile(test_unrelated="def test_unrelated():\n    pass\n")
    return pytester


def test_pytest_dpverify_without_a_test_path_collects_only_the_named_file(plugin_project):
    result = plugin_project.runpytest("--dpverify", "mine.py", *PLUGIN_FAST, "-v")
    out = result.stdout.str()
    assert "test_unrelated" not in out
    # the bad decorator fails its own item, naming it; the file's other mechanism still runs
    result.assert_outcomes(passed=1, failed=1)
    assert re.search(r"mine.py::good_laplace PASSED", out)
    assert "invalid @dpverify.mechanism declaration of 'negative_claim'" in out
    assert "epsilon must be > 0" in out


def test_pytest_dpverify_with_a_test_path_collects_both(plugin_project):
    result = plugin_project.runpytest("test_unrelated.py", "--dpverify", "mine.py", *PLUGIN_FAST)
    result.assert_outcomes(passed=2, failed=1)


# ------------------------------------------------------------------------------------------------
# A mechanism that raises: where in its code
# ------------------------------------------------------------------------------------------------

def _invert(x):
    return 1.0 / x


def _scale(data):
    return _invert(data - data)


def test_a_raising_mechanism_shows_the_innermost_frames_of_its_own_code():
    def batched(data, rng, size):
        return rng.laplace(0, _scale(data), size)

    def scalar(data, rng):
        return rng.laplace(0, _scale(data))

    for mech in (batched, scalar):
        with pytest.raises(dpverify.MechanismError) as info:
            dpverify.audit(mech, pairs=[(0.0, 1.0)], epsilon=1.0, n_jobs=1, samples=1000)
        lines = str(info.value).splitlines()
        assert re.match(rf"mechanism '.*{mech.__name__}' raised ZeroDivisionError: ", lines[0])
        frames = lines[1:]
        assert len(frames) == 3  # the innermost three, outside dpverify
        assert re.fullmatch(rf"  at .*test_papercuts\.py:\d+ in {mech.__name__}: return "
                            r"rng\.laplace\(0, _scale\(data\).*", frames[0])
        assert re.fullmatch(r"  at .*test_papercuts\.py:\d+ in _scale: return "
                            r"_invert\(data - data\)", frames[1])
        assert frames[2].endswith("in _invert: return 1.0 / x")
        # no frame of dpverify's own code
        assert os.path.dirname(dpverify.__file__) not in str(info.value)


def test_only_the_users_frames_and_at_most_three():
    from dpverify.errors import where_raised

    def deep(n):
        if n == 0:
            raise ValueError("bottom")
        return deep(n - 1)
    try:
        deep(5)
    except ValueError as exc:
        frames = where_raised(exc).splitlines()
    assert len(frames) == 3 and all(" in deep: " in f for f in frames)
    assert frames[-1].endswith('raise ValueError("bottom")')


# ------------------------------------------------------------------------------------------------
# One bad decorator does not sink its file
# ------------------------------------------------------------------------------------------------

BAD_DECORATOR = textwrap.dedent('''
    import dpverify

    @dpverify.mechanism(epsilon=1.0, pairs=[(0.0, 1.0)])
    def good(data, rng, size):
        return data + rng.laplace(0, 1.0, size)

    @dpverify.mechanism(epsilon=-1, pairs=[(0.0, 1.0)])
    def negative_claim(data, rng, size):
        return data + rng.laplace(0, 1.0, size)

    @dpverify.mechanism(epsilon=1.0, samples=10, pairs=[(0.0, 1.0)])
    def tiny_budget(data, rng, size):
        return data + rng.laplace(0, 1.0, size)
''')


def test_one_bad_decorator_is_an_error_entry_and_the_rest_is_audited(tmp_path, capsys):
    path = tmp_path / "mixed.py"
    path.write_text(BAD_DECORATOR)
    out_json = tmp_path / "r.json"
    assert main(["audit", str(path), *FAST, "--json", str(out_json)]) == 2
    out, err = capsys.readouterr()
    assert "pass       good" in out and "Traceback" not in err
    assert ("ERROR      negative_claim: invalid @dpverify.mechanism declaration of "
            "'negative_claim' (") in err
    assert "mixed.py:8): epsilon must be > 0 (got -1)" in err
    assert "ERROR      tiny_budget: " in err and "samples must be an integer ≥ 100" in err
    verdicts = {r["mechanism"]: r["verdict"] for r in json.loads(out_json.read_text())["results"]}
    assert verdicts == {"good": "pass", "negative_claim": "error", "tiny_budget": "error"}
    # named on its own, too
    assert main(["audit", f"{path}:negative_claim", *FAST]) == 2
    assert "ERROR      negative_claim: invalid" in capsys.readouterr().err


def test_auditing_a_bad_declaration_directly_raises_naming_it():
    @dpverify.mechanism(epsilon=1.0, delta=2.0, pairs=[(0.0, 1.0)])
    def big_delta(data, rng, size):
        return data + rng.laplace(0, 1.0, size)

    assert big_delta(0.0, __import__("numpy").random.default_rng(0), 3).shape == (3,)
    with pytest.raises(dpverify.InvalidClaimError,
                       match=r"'big_delta' \(.*test_papercuts\.py:\d+\): delta must be in"):
        dpverify.audit(big_delta, n_jobs=1)


def test_a_bad_signature_is_recorded_too():
    @dpverify.mechanism(epsilon=1.0, pairs=[(0.0, 1.0)])
    def no_rng(data):
        return data
    with pytest.raises(dpverify.MechanismError, match="'no_rng'.*must accept"):
        dpverify.audit(no_rng, n_jobs=1)


# ------------------------------------------------------------------------------------------------
# The zoo is not installed
# ------------------------------------------------------------------------------------------------

def test_only_dpverify_is_installed_and_the_zoo_imports_from_the_checkout():
    tomllib = pytest.importorskip("tomllib")
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert config["tool"]["setuptools"]["packages"]["find"]["include"] == ["dpverify*"]
    assert "." in config["tool"]["pytest"]["ini_options"]["pythonpath"]
    import mechanisms_under_test  # from the checkout, through pytest's pythonpath
    assert Path(mechanisms_under_test.__file__).resolve().parent == ROOT / "mechanisms_under_test"


def test_a_result_shows_itself_in_a_notebook_and_python_writes_its_report(tmp_path):
    """`AuditResult._repr_html_` (what Jupyter displays) holds the verdict, the summary and the
    witness picture; `dpverify.save_report` writes what `dpverify audit --report` writes."""
    import json

    @dpverify.mechanism(epsilon=1.0, pairs=[(1, 0)])
    def loud(data, rng, size):
        return data + rng.laplace(0.0, 0.25, size)

    result = dpverify.audit(loud, samples=4096, n_jobs=1, curves=True, stop_early=False)
    html = result._repr_html_()
    assert ">violation</span>" in html and "VIOLATION  loud" in html
    assert html.count("data:image/png;base64,") == 1
    index = dpverify.save_report(result, tmp_path / "report")
    assert index == tmp_path / "report" / "index.html" and index.exists()
    saved = json.loads((tmp_path / "report" / "result.json").read_text())
    assert saved["results"][0]["verdict"] == "violation"
    assert (tmp_path / "report" / "tradeoff.png").exists()   # the curves' pictures too
    with pytest.raises(dpverify.DpVerifyError, match="parent directory does not exist"):
        dpverify.save_report(result, tmp_path / "missing" / "report")
