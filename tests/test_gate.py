"""`dpverify gate`: exit codes 0/1/2, the baseline file, drift, --changed-since, JUnit, summary."""
import json
import math
import shutil
import subprocess
import textwrap
import uuid
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from dpverify.interfaces.cli import main
from dpverify.interfaces.gate import compare

ROOT = Path(__file__).resolve().parents[1]
FAST = ["--samples", "65536", "--jobs", "1"]

MECHS = textwrap.dedent('''
    import dpverify

    SCALE = 1.0

    @dpverify.mechanism(epsilon=1.0, pairs=[(0.0, 1.0)])
    def good(data, rng, size):
        return data + rng.laplace(0, SCALE, size)

    @dpverify.mechanism(epsilon=0.2, pairs=[(0.0, 1.0)])
    def bad(data, rng, size):
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


@pytest.fixture
def good_baseline(mech_file, tmp_path):
    """A baseline holding `good` at the fast budget."""
    path = tmp_path / "baseline.json"
    assert main(["gate", f"{mech_file}:good", "--baseline", str(path), "--update-baseline",
                 *FAST]) == 0
    return path


def test_drift_rule():
    # |Δ| = 0.05 > max(0.25·0.1, 2·(0.003 + 0.003)) = 0.025
    assert compare(0.05, 0.047, 0.1, 0.097, 0.25).drifted
    assert not compare(0.09, 0.087, 0.1, 0.097, 0.25).drifted           # within 25 %
    # imprecise audits (large estimate − bound gaps) widen the allowance to 2·(u + u_base)
    d = compare(0.5, 0.2, 1.0, 0.8, 0.25)
    assert not d.drifted and d.allowed == pytest.approx(1.0)
    assert compare(math.inf, 2.8, 3.0, 2.5, 0.25).drifted               # exactly one infinite
    assert not compare(math.inf, 2.8, math.inf, 2.9, 0.25).drifted      # both infinite
    assert compare(0.5, 0.4, 0.1, 0.09, 10.0).drifted is False          # wide tolerance


def test_update_baseline_writes_a_sorted_file_and_then_passes(mech_file, good_baseline, capsys):
    text = good_baseline.read_text()
    doc = json.loads(text)
    assert text == json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    entry = doc["mechanisms"]["good"]
    assert set(entry) >= {"epsilon_estimate", "epsilon_lower_bound", "resolution", "claimed",
                          "samples", "seed", "witness_event", "source"}
    assert entry["samples"] == 65536 and entry["seed"] == 0
    assert entry["claimed"] == {"epsilon": 1.0, "delta": 0.0}
    assert entry["epsilon_lower_bound"] <= entry["epsilon_estimate"] <= 1.1
    assert entry["source"].endswith("mechs.py")
    capsys.readouterr()
    assert main(["gate", f"{mech_file}:good", "--baseline", str(good_baseline), *FAST]) == 0
    out = capsys.readouterr().out
    assert "pass       good" in out and "no drift" in out
    assert "1 mechanism(s): 1 pass(es), 0 violation(s), 0 inconclusive, 0 drift(s)" in out


def test_doubled_noise_drifts_with_junit_and_summary(mech_file, good_baseline, tmp_path, capsys):
    mech_file.write_text(MECHS.replace("SCALE = 1.0", "SCALE = 2.0"))  # true ε 1 → 0.5
    junit, summary = tmp_path / "out" / "gate.xml", tmp_path / "summary.md"
    junit.parent.mkdir()  # a missing directory is an error (exit 2), never created silently
    code = main(["gate", f"{mech_file}:good", "--baseline", str(good_baseline), *FAST,
                 "--junit", str(junit), "--summary", str(summary)])
    out = capsys.readouterr().out
    assert code == 1
    assert "pass       good" in out and "DRIFT" in out and "1 drift(s)" in out
    case = ET.parse(junit).getroot().find("testsuite/testcase")
    assert case.get("name") == "good" and case.get("classname") == "dpverify.gate"
    assert case.find("failure").get("message").startswith("drift: estimated ε")
    assert "baseline: estimated ε" in case.find("failure").text
    md = summary.read_text()
    assert "| mechanism | verdict | certified ε ≥ | estimate now | baseline | drift? | seconds |" in md
    assert "| good | pass |" in md and "**yes**" in md and "- **good**: drift:" in md
    # a wide enough tolerance accepts the change
    assert main(["gate", f"{mech_file}:good", "--baseline", str(good_baseline), *FAST,
                 "--tolerance", "0.9"]) == 0


def _zoo_copy(tmp_path, double_laplace_scale: bool) -> Path:
    """mechanisms_under_test/basic.py (and the helper it imports) in a fresh package."""
    pkg = tmp_path / f"zoo_copy_{uuid.uuid4().hex[:10]}"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    shutil.copy(ROOT / "mechanisms_under_test" / "_common.py", pkg / "_common.py")
    text = (ROOT / "mechanisms_under_test" / "basic.py").read_text()
    if double_laplace_scale:
        old = "scale = sensitivity / float(epsilon)"
        assert text.count(old) == 1
        text = text.replace(old, "scale = 2 * sensitivity / float(epsilon)")
    (pkg / "basic.py").write_text(text)
    return pkg / "basic.py"


def test_zoo_laplace_against_the_committed_baseline(tmp_path, capsys):
    committed = ROOT / "reports" / "baseline.json"
    assert "laplace" in json.loads(committed.read_text())["mechanisms"]
    unchanged = _zoo_copy(tmp_path, double_laplace_scale=False)
    assert main(["gate", f"{unchanged}:laplace", "--baseline", str(committed)]) == 0
    assert "no drift" in capsys.readouterr().out
    doubled = _zoo_copy(tmp_path, double_laplace_scale=True)
    code = main(["gate", f"{doubled}:laplace", "--baseline", str(committed)])
    out = capsys.readouterr().out
    assert code == 1
    # the claim ε = 0.1 still holds with twice the noise (true ε 0.05): only the drift fails
    assert "pass       laplace" in out and "VIOLATION" not in out
    assert "DRIFT: estimated ε" in out and "0 violation(s), 0 inconclusive, 1 drift(s)" in out


def test_violation_missing_and_error_in_junit(mech_file, good_baseline, tmp_path, capsys):
    other = tmp_path / "other.py"
    other.write_text(MECHS.replace("def good(", "def fresh("))
    junit = tmp_path / "gate.xml"
    code = main(["gate", str(mech_file), f"{other}:fresh", "--baseline", str(good_baseline),
                 *FAST, "--junit", str(junit)])
    captured = capsys.readouterr()
    assert code == 2  # `crashes` could not be run: 2 wins over 1
    assert "fresh" in captured.out and "not in baseline: run with --update-baseline" in captured.out
    assert "ERROR      crashes" in captured.err
    suite = ET.parse(junit).getroot().find("testsuite")
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("4", "2", "1")
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    assert cases["good"].find("failure") is None and cases["good"].find("error") is None
    assert cases["bad"].find("failure").get("message").startswith("violation: claimed (ε=0.2")
    assert "certified ε ≥" in cases["bad"].find("failure").text
    assert cases["fresh"].find("failure").get("message") == \
        "not in baseline: run with --update-baseline"
    assert "RuntimeError" in cases["crashes"].find("error").get("message")


def test_violation_exits_1_and_is_not_written_to_the_baseline(mech_file, tmp_path, capsys):
    path = tmp_path / "b.json"
    code = main(["gate", f"{mech_file}:good", f"{mech_file}:bad", "--baseline", str(path),
                 "--update-baseline", *FAST])
    assert code == 1
    assert "VIOLATION  bad" in capsys.readouterr().out
    assert set(json.loads(path.read_text())["mechanisms"]) == {"good"}
    assert main(["gate", f"{mech_file}:bad", "--baseline", str(path), *FAST]) == 1


@pytest.mark.parametrize("extra,message", [
    (["--baseline", "{tmp}/none.json"], "does not exist: create it with --update-baseline"),
    (["--baseline", "{tmp}/garbage.json"], "cannot read baseline"),
    (["--baseline", "{tmp}/garbage.json", "--update-baseline"], "cannot read baseline"),
    (["--baseline", "{tmp}/b.json", "--tolerance", "-1", "--update-baseline"], "--tolerance"),
])
def test_usage_errors_exit_2(mech_file, tmp_path, extra, message, capsys):
    (tmp_path / "garbage.json").write_text("{not json")
    extra = [e.replace("{tmp}", str(tmp_path)) for e in extra]
    assert main(["gate", f"{mech_file}:good", *extra]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "b.json").exists()


def test_unknown_target_and_clashing_names_exit_2(mech_file, tmp_path, capsys):
    base = str(tmp_path / "b.json")
    assert main(["gate", "no/such/file.py", "--baseline", base, "--update-baseline"]) == 2
    assert "no such file" in capsys.readouterr().err
    twin = tmp_path / "twin.py"
    twin.write_text(MECHS)
    assert main(["gate", f"{mech_file}:good", f"{twin}:good", "--baseline", base,
                 "--update-baseline", *FAST]) == 2
    assert "two mechanisms are named 'good'" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:  # argparse: not a number
        main(["gate", str(mech_file), "--baseline", base, "--tolerance", "lots"])
    assert exc.value.code == 2


def test_directory_target(tmp_path, capsys):
    folder = tmp_path / "mechs"
    folder.mkdir()
    (folder / "one.py").write_text(MECHS.split("@dpverify.mechanism(epsilon=0.2")[0])
    (folder / "helpers.py").write_text("X = 1\n")  # no mechanism: skipped
    base = tmp_path / "b.json"
    assert main(["gate", str(folder), "--baseline", str(base), "--update-baseline", *FAST]) == 0
    assert set(json.loads(base.read_text())["mechanisms"]) == {"good"}


def _git(repo, *args):
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
                   cwd=repo, check=True, capture_output=True)


def _two_mechanism_repo(tmp_path):
    """A git repository with a.py (mechanism alpha) and b.py (beta), both committed."""
    repo = tmp_path / "repo"
    repo.mkdir()
    alpha = MECHS.split("@dpverify.mechanism(epsilon=0.2")[0]
    (repo / "a.py").write_text(alpha.replace("def good(", "def alpha("))
    (repo / "b.py").write_text(alpha.replace("def good(", "def beta("))
    _git(repo, "init", "-q")
    _git(repo, "add", "a.py", "b.py")
    _git(repo, "commit", "-q", "-m", "two mechanisms")
    return repo


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_changed_since_audits_only_changed_files(tmp_path, monkeypatch, capsys):
    repo = _two_mechanism_repo(tmp_path)
    monkeypatch.chdir(repo)
    base = tmp_path / "b.json"
    args = ["gate", "a.py", "b.py", "--baseline", str(base), "--update-baseline", *FAST,
            "--changed-since", "HEAD"]
    assert main(args + ["--summary", str(tmp_path / "s.md")]) == 0
    assert "no mechanism changed since HEAD" in capsys.readouterr().out
    assert "no mechanism changed since HEAD" in (tmp_path / "s.md").read_text()
    (repo / "b.py").write_text((repo / "b.py").read_text() + "\n# touched\n")
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "beta" in out and "alpha" not in out and "1 unchanged, not audited" in out
    assert set(json.loads(base.read_text())["mechanisms"]) == {"beta"}
    assert json.loads(base.read_text())["mechanisms"]["beta"]["source"] == "b.py"
    assert main(args[:-1] + ["no-such-ref"]) == 2
    assert "no-such-ref" in capsys.readouterr().err


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_changed_since_works_from_outside_the_repository(tmp_path, monkeypatch, capsys):
    """Each mechanism's file is looked up in the repository that holds it, not in the current
    directory's (which here is no repository at all)."""
    repo = _two_mechanism_repo(tmp_path)
    (repo / "b.py").write_text((repo / "b.py").read_text() + "\n# touched\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    main(["gate", str(repo), "--baseline", str(tmp_path / "b.json"), "--update-baseline",
          *FAST, "--changed-since", "HEAD"])
    out = capsys.readouterr().out
    assert "beta" in out and "alpha" not in out and "1 unchanged, not audited" in out


def test_audit_takes_a_directory_and_a_typo_gets_the_names_that_exist(tmp_path, capsys):
    folder = tmp_path / "mechs"
    folder.mkdir()
    (folder / "one.py").write_text(MECHS.split("@dpverify.mechanism(epsilon=0.2")[0])
    assert main(["audit", str(folder), *FAST]) == 0
    assert "1 mechanism(s): 0 violation(s), 1 pass(es)" in capsys.readouterr().out
    assert main(["audit", f"{folder / 'one.py'}:godo", *FAST]) == 2
    err = capsys.readouterr().err
    assert "has no 'godo'; did you mean 'good'?" in err and "its mechanisms: good" in err


def test_a_ctrl_c_marks_the_rest_not_run_writes_the_reports_and_exits_130(mech_file, tmp_path,
                                                                        monkeypatch, capsys):
    """Ctrl-C during the second of three audits: the first keeps its outcome, the second and
    third are "not run" in the count line, the JUnit file (skipped) and the summary, nothing
    partial reaches the baseline, and the exit code is 130."""
    from dpverify.interfaces import gate
    real, calls = gate.audit_one, []

    def interrupting(args, mech, baseline):
        calls.append(mech.name)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(args, mech, baseline)
    monkeypatch.setattr(gate, "audit_one", interrupting)
    junit, summary, base = tmp_path / "j.xml", tmp_path / "s.md", tmp_path / "b.json"
    code = main(["gate", f"{mech_file}:good", f"{mech_file}:bad", f"{mech_file}:crashes",
                 "--baseline", str(base), "--update-baseline", "--junit", str(junit),
                 "--summary", str(summary), *FAST])
    out = capsys.readouterr()
    assert code == 130 and calls == ["good", "bad"]
    assert "2 not run" in out.out and "[INTERRUPTED]" in out.out and "error(s)" in out.out
    assert "not audited" in out.err
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite.get("skipped") == "2" and suite.get("errors") == "0"
    skipped = [c.get("name") for c in suite.iter("testcase") if c.find("skipped") is not None]
    assert skipped == ["bad", "crashes"]
    text = summary.read_text()
    assert "| bad | not run |" in text and "| crashes | not run |" in text
    assert set(json.loads(base.read_text())["mechanisms"]) == {"good"}   # the one finished


def test_an_interrupted_audit_never_updates_the_baseline(mech_file, tmp_path, monkeypatch,
                                                         capsys):
    import dpverify
    from dataclasses import replace
    real = dpverify.audit
    monkeypatch.setattr(dpverify, "audit", lambda *a, **k: replace(real(*a, **k),
                                                                    interrupted=True))
    base = tmp_path / "b.json"
    code = main(["gate", f"{mech_file}:good", f"{mech_file}:bad", "--baseline", str(base),
                 "--update-baseline", *FAST])
    assert code == 130 and "1 not run" in capsys.readouterr().out
    assert json.loads(base.read_text())["mechanisms"] == {}


def test_the_summary_rounds_bounds_down_and_keeps_the_marginal_label(mech_file, tmp_path):
    """The --summary table and its reasons print the certified bound as the audit does, never
    above it; a marginal violation says so."""
    import dpverify
    from dpverify.interfaces.gate_report import Outcome, certified_text, summary_markdown
    from dpverify.loading import resolve_target
    summary, base = tmp_path / "s.md", tmp_path / "b.json"
    base.write_text('{"mechanisms": {}}')
    main(["gate", f"{mech_file}:bad", "--baseline", str(base), "--summary", str(summary),
          "--no-confirm", *FAST])
    audited = dpverify.audit(resolve_target(f"{mech_file}:bad")[0], samples=65536, n_jobs=1,
                             progress=False)
    row = next(line for line in summary.read_text().splitlines() if line.startswith("| bad"))
    shown = float(row.split("|")[3])
    assert shown <= audited.epsilon_lower_bound and shown == float(
        certified_text(audited)) and str(shown) in audited.summary()
    for bound, claim in ((0.1015625, 0.1), (0.0992188, 0.1), (1.99996, 1.0), (0.30003, 0.3)):
        fake = type("R", (), {"epsilon_lower_bound": bound, "claimed_epsilon": claim})()
        assert float(certified_text(fake)) <= bound
    marginal = Outcome("m", "m.py", 0.0, result=audited)
    object.__setattr__(audited, "marginal", True)
    assert "violation** (marginal)" in summary_markdown([marginal], "1 mechanism(s)")
