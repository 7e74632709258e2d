"""The `dpverify audit` command: verdict lines, exit codes 0/1/2, the --json layout."""
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from dpverify.interfaces.cli import main

ROOT = Path(__file__).resolve().parents[1]

MECHS = textwrap.dedent('''
    import numpy as np
    import dpverify

    @dpverify.mechanism(epsilon=1.0, pairs=[(0.0, 1.0)])
    def good_laplace(data, rng, size):
        return data + rng.laplace(0, 1.0, size)

    @dpverify.mechanism(epsilon=0.2, pairs=[(0.0, 1.0)])
    def bad_laplace(data, rng, size):
        return data + rng.laplace(0, 1.0, size)

    @dpverify.mechanism(epsilon=1.0, pairs=[(0.0, 1.0)])
    def crashes(data, rng, size):
        raise RuntimeError("division by zero in the noise")
''')


@pytest.fixture
def mech_file(tmp_path):
    path = tmp_path / "mechs.py"
    path.write_text(MECHS)
    return path


def test_pass_exits_0(mech_file, capsys):
    assert main(["audit", f"{mech_file}:good_laplace", "--samples", "4096", "--jobs", "1"]) == 0
    assert "pass" in capsys.readouterr().out


def test_violation_exits_1_and_json_has_the_documented_layout(mech_file, tmp_path, capsys):
    out = tmp_path / "out" / "result.json"
    out.parent.mkdir()  # a missing directory is an error (exit 2), never created silently
    code = main(["audit", f"{mech_file}:good_laplace", f"{mech_file}:bad_laplace",
                 "--samples", "4096", "--jobs", "1", "--json", str(out)])
    assert code == 1
    assert "VIOLATION  bad_laplace" in capsys.readouterr().out
    doc = json.loads(out.read_text())
    assert set(doc) == {"results", "meta"}
    by_name = {r["mechanism"]: r for r in doc["results"]}
    bad = by_name["bad_laplace"]
    assert {"mechanism", "verdict", "claimed", "epsilon_lower_bound", "confidence", "samples",
            "seconds", "witness"} <= set(bad)
    assert bad["verdict"] == "violation" and bad["claimed"] == {"epsilon": 0.2, "delta": 0.0}
    assert 0.2 < bad["epsilon_lower_bound"] <= 1.0
    assert {"D", "D_prime", "event", "count_D", "count_D_prime"} <= set(bad["witness"])
    assert by_name["good_laplace"]["verdict"] == "pass"


def test_measure_certifies_once_at_the_last_stage_with_all_of_alpha(mech_file, tmp_path):
    """--measure runs every stage and certifies only at the last, with the whole error budget:
    the violation is still found, its bound is at least the early-stopping audit's (which
    stops at the first stage that certifies) and stays below the true ε = 1."""
    early, measured = tmp_path / "early.json", tmp_path / "measured.json"
    common = [f"{mech_file}:bad_laplace", "--samples", "65536", "--jobs", "1",
              "--confidence", "0.9"]
    assert main(["audit", *common, "--proof-only", "--json", str(early)]) == 1
    assert main(["audit", *common, "--measure", "--json", str(measured)]) == 1
    e, m = (json.loads(p.read_text())["results"][0] for p in (early, measured))
    alphas = [s["alpha"] for s in m["stages"]]
    assert alphas[:-1] == [0.0] * (len(alphas) - 1) and alphas[-1] == pytest.approx(0.1)
    assert len(m["stages"]) > len(e["stages"])
    assert e["epsilon_lower_bound"] < m["epsilon_lower_bound"] <= 1.0


def test_measure_with_a_time_budget_stops_growing_within_samples(mech_file, tmp_path, capsys):
    """--seconds gives a measurement run a time budget: its stages never pass --samples, only
    its last stage spends α."""
    out = tmp_path / "budget.json"
    common = [f"{mech_file}:bad_laplace", "--samples", "65536", "--jobs", "1"]
    assert main(["audit", *common, "--measure", "--seconds", "2", "--json", str(out)]) == 1
    m = json.loads(out.read_text())["results"][0]
    assert all(s["samples_per_side"] <= 65536 for s in m["stages"])
    assert [s["alpha"] for s in m["stages"][:-1]] == [0.0] * (len(m["stages"]) - 1)
    assert m["verdict"] == "violation"


def test_an_ordinary_audit_with_a_time_budget_is_the_audit_when_the_budget_is_not_reached(
        mech_file, tmp_path):
    """--seconds without --measure only stops an audit sooner: a violation found well within
    the budget is the one the audit finds without it, run for run."""
    common = [f"{mech_file}:bad_laplace", "--samples", "65536", "--jobs", "1"]
    paths = [tmp_path / "budget.json", tmp_path / "none.json"]
    assert main(["audit", *common, "--seconds", "120", "--json", str(paths[0])]) == 1
    assert main(["audit", *common, "--json", str(paths[1])]) == 1
    with_budget, without = (json.loads(p.read_text())["results"][0] for p in paths)
    assert with_budget["budget_spent"] is False
    for key in ("verdict", "epsilon_lower_bound", "samples", "runs_per_pair"):
        assert with_budget[key] == without[key], key


def test_flags_override_the_declared_claim(mech_file):
    assert main(["audit", f"{mech_file}:good_laplace", "--epsilon", "0.3", "--samples", "4096",
                 "--jobs", "1"]) == 1


def test_mechanism_that_cannot_run_exits_2_naming_it(mech_file, capsys):
    code = main(["audit", str(mech_file), "--samples", "4096", "--jobs", "1"])
    assert code == 2  # one mechanism crashed: 2 wins over 1
    err = capsys.readouterr().err
    assert "crashes" in err and "RuntimeError" in err and "input 0.0" in err


@pytest.mark.parametrize("args,message", [
    (["audit", "no/such/file.py"], "no such file"),
    (["audit", "json:dumps"], "must accept (data, rng)"),
    (["audit", "json:dumps", "--epsilon", "0"], "epsilon must be > 0"),
    (["audit", "json:dumps", "--confidence", "1.5"], "confidence must be in (0, 1)"),
    (["audit", "json"], "holds no @dpverify.mechanism"),
    (["audit", "json:no_such_name"], "has no 'no_such_name'"),
])
def test_usage_errors_exit_2(args, message, capsys):
    assert main(args) == 2
    assert message in capsys.readouterr().err


def test_bad_flag_exits_2(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["audit", "x.py", "--samples", "many"])
    assert exc.value.code == 2


def test_console_script_on_a_bundled_mechanism(tmp_path):
    report = tmp_path / "report"
    proc = subprocess.run(
        [sys.executable, "-m", "dpverify", "audit",
         str(ROOT / "mechanisms_under_test" / "histogram.py") + ":noisy_hist2",
         "--report", str(report)], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert proc.returncode == 1, proc.stderr
    assert "VIOLATION  noisy_hist2" in proc.stdout
    assert "noisy_hist2: violation" in (report / "report.md").read_text()
    assert json.loads((report / "result.json").read_text())["results"][0]["verdict"] == "violation"


def test_report_is_self_contained_with_readable_plots(mech_file, tmp_path, capsys):
    report = tmp_path / "rep"
    # a measurement run: its violation is certified on a fresh sample, with curves to draw
    assert main(["audit", f"{mech_file}:bad_laplace", "--samples", "16384", "--jobs", "1",
                 "--measure", "--report", str(report)]) == 1
    pictures = ("witness.png", "privacy_loss_bounds.png", "tradeoff.png", "delta_curve.png",
                "pvalue.png")
    for name in ("index.html", "report.md", "result.json", "figures.json") + pictures:
        assert (report / name).stat().st_size > 0, name
    page = (report / "index.html").read_text()
    assert "http://" not in page and "https://" not in page and "src=\"data:image/png;base64," in page
    assert page.count("<img") == len(pictures) and "violation" in page
    curves = json.loads((report / "result.json").read_text())["results"][0]["curves"]
    assert any(curves["outside"])  # claim 0.2 against a true epsilon of 1: boxes outside R


def test_report_shows_how_a_ratio_test_bound_follows_from_the_counts(mech_file, tmp_path,
                                                                     capsys):
    import math
    import re
    report = tmp_path / "rep"
    assert main(["audit", f"{mech_file}:bad_laplace", "--samples", "16384", "--jobs", "1",
                 "--measure", "--report", str(report)]) == 1
    w = json.loads((report / "result.json").read_text())["results"][0]["witness"]
    assert w["certificate"] == "ratio_test"
    line = re.search(r"share of the ([\d,]+) hits that came from D.*≥ ([\d.]+)",
                     (report / "report.md").read_text())
    hits, share = int(line.group(1).replace(",", "")), float(line.group(2))
    assert hits == w["count_D"] + w["count_D_prime"]
    assert 0.5 < share < w["count_D"] / hits            # a lower bound below the observed share
    assert math.log(share / (1 - share)) == pytest.approx(w["epsilon_lower_bound"], rel=1e-5)


def test_on_a_terminal_it_says_which_mechanism_runs_and_when_it_writes(mech_file, tmp_path,
                                                                         capsys, monkeypatch):
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    main(["audit", f"{mech_file}:good_laplace", f"{mech_file}:bad_laplace", "--samples",
          "4096", "--jobs", "1", "--report", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert "[1/2] good_laplace" in err and "[2/2] bad_laplace" in err
    assert f"writing the report to {tmp_path / 'r'}" in err
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False)  # a CI log: not these lines
    main(["audit", f"{mech_file}:good_laplace", f"{mech_file}:bad_laplace", "--samples",
          "4096", "--jobs", "1"])
    assert "[1/2]" not in capsys.readouterr().err
