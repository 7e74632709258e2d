"""Exit codes CI can trust: 1 only for a finding, 2 (one `dpverify: error:` line, no traceback)
for everything else, output paths checked before any audit runs, the same for audit and gate."""
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import dpverify.pipeline
from dpverify.interfaces.cli import EXIT_CODES, main

ROOT = Path(__file__).resolve().parents[1]
FAST = ["--samples", "20000", "--jobs", "1"]

MECHS = textwrap.dedent('''
    import dpverify

    @dpverify.mechanism(epsilon=1.0, pairs=[(0.0, 1.0)])
    def good(data, rng, size):
        return data + rng.laplace(0, 1.0, size)

    @dpverify.mechanism(epsilon=0.2, pairs=[(0.0, 1.0)])
    def bad(data, rng, size):
        return data + rng.laplace(0, 1.0, size)   # true epsilon 1

    def scale_of(data):
        return 1.0 / (data - data)

    @dpverify.mechanism(epsilon=1.0, pairs=[(0.0, 1.0)])
    def crashes(data, rng, size):
        noise = rng.laplace(0, 1.0, size)
        return data + scale_of(data) * noise
''')


@pytest.fixture
def mechs(tmp_path):
    path = tmp_path / "mechs.py"
    path.write_text(MECHS)
    return path


def run(capsys, *args):
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    assert "Traceback" not in err and "Traceback" not in out
    return code, out, err


def usage_error(capsys, *args) -> str:
    """Run, expect exit 2 with one `dpverify: error:` line and no audit; return the line."""
    code, out, err = run(capsys, *args)
    assert code == 2, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("dpverify: error: "), err
    assert "mechanism(s)" not in out  # nothing was audited
    return lines[0]


# ------------------------------------------------------------------------------------------------
# Bad option values, audit and gate alike
# ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("extra,message", [
    (["--jobs", "0"], "--jobs 0 runs nothing"),
    (["--samples", "-5"], "--samples must be an integer ≥ 100"),
    (["--confidence", "1.5"], "--confidence must be in (0, 1)"),
    (["--confidence", "nan"], "--confidence must be in (0, 1)"),
    (["--epsilon", "-1"], "epsilon must be > 0"),
    (["--delta", "2"], "delta must be in [0, 1)"),
    (["--seed", "-1"], "--seed must be a non-negative integer"),
])
@pytest.mark.parametrize("command", ["audit", "gate"])
def test_bad_option_values_exit_2_before_any_audit(mechs, tmp_path, capsys, command, extra,
                                                   message):
    gate = ["--baseline", tmp_path / "b.json", "--update-baseline"] if command == "gate" else []
    assert message in usage_error(capsys, command, mechs, *gate, *FAST[:2], *extra)
    assert not (tmp_path / "b.json").exists()


def test_negative_jobs_follow_joblib(mechs, capsys):
    assert run(capsys, "audit", f"{mechs}:good", "--samples", "20000", "--jobs", "-2")[0] == 0


def test_missing_target_exits_2(tmp_path, capsys):
    assert "no such file" in usage_error(capsys, "audit", tmp_path / "nope.py")


# ------------------------------------------------------------------------------------------------
# Output paths: checked first, never created silently
# ------------------------------------------------------------------------------------------------

def test_json_pointing_at_a_directory(mechs, tmp_path, capsys):
    line = usage_error(capsys, "audit", mechs, *FAST, "--json", tmp_path)
    assert "is a directory; give a file path such as" in line


@pytest.mark.parametrize("option", ["--json", "--report"])
def test_missing_parent_directory_is_an_error_not_created(mechs, tmp_path, capsys, option):
    target = tmp_path / "no" / "such" / "out"
    line = usage_error(capsys, "audit", mechs, *FAST, option, target)
    assert "does not exist; create it first (mkdir -p" in line
    assert not (tmp_path / "no").exists()


@pytest.mark.parametrize("option", ["--junit", "--summary"])
def test_gate_output_with_missing_parent(mechs, tmp_path, capsys, option):
    line = usage_error(capsys, "gate", mechs, "--baseline", tmp_path / "b.json",
                       "--update-baseline", *FAST, option, tmp_path / "missing" / "x")
    assert "does not exist" in line and not (tmp_path / "missing").exists()
    assert not (tmp_path / "b.json").exists()


def test_gate_baseline_in_a_missing_directory(mechs, tmp_path, capsys):
    line = usage_error(capsys, "gate", mechs, "--baseline", tmp_path / "ci" / "b.json",
                       "--update-baseline", *FAST)
    assert "--baseline" in line and not (tmp_path / "ci").exists()


def test_unwritable_report_directory(mechs, tmp_path, capsys, monkeypatch):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        if os.access(locked, os.W_OK):  # root writes anywhere: make the check see 0o500
            real = os.access
            monkeypatch.setattr(os, "access", lambda path, mode: (
                not mode & os.W_OK if Path(path) == locked else real(path, mode)))
        line = usage_error(capsys, "audit", mechs, *FAST, "--report", locked)
        assert "is not writable" in line
        line = usage_error(capsys, "audit", mechs, *FAST, "--report", locked / "sub")
        assert "is not writable" in line
    finally:
        locked.chmod(0o700)


def test_json_is_written_when_its_directory_exists(mechs, tmp_path, capsys):
    code, _, _ = run(capsys, "audit", f"{mechs}:good", *FAST, "--json", tmp_path / "r.json")
    assert code == 0
    assert json.loads((tmp_path / "r.json").read_text())["results"][0]["verdict"] == "pass"


# ------------------------------------------------------------------------------------------------
# Baselines, mechanisms, internal errors
# ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("content,message", [
    ("{not json", "cannot read baseline"),
    ('{"mechanisms": {"good": {"epsilon_estimate": "high", "epsilon_lower_bound": 1}}}',
     "not a number"),
    ('[1, 2]', 'has no "mechanisms" object'),
    (None, "cannot read baseline"),   # a directory
])
def test_unreadable_or_invalid_baseline(mechs, tmp_path, capsys, content, message):
    baseline = tmp_path / "b.json"
    if content is None:
        baseline.mkdir()
    else:
        baseline.write_text(content)
    assert message in usage_error(capsys, "gate", f"{mechs}:good", "--baseline", baseline, *FAST)


def test_a_mechanism_that_raises_exits_2_and_shows_where_in_its_code(mechs, capsys):
    code, out, err = run(capsys, "audit", mechs, *FAST)
    assert code == 2  # `bad` is a violation, `crashes` an error: 2 wins over 1
    assert "VIOLATION  bad" in out and "pass       good" in out
    assert "ERROR      crashes: mechanism 'crashes' raised ZeroDivisionError" in err
    assert "mechs.py:18 in crashes: return data + scale_of(data) * noise" in err
    assert "mechs.py:13 in scale_of: return 1.0 / (data - data)" in err
    assert "dpverify/" not in err  # no frame of dpverify itself


@pytest.mark.parametrize("command", ["audit", "gate"])
def test_an_internal_error_exits_2_in_one_line_and_debug_shows_the_traceback(
        mechs, tmp_path, capsys, monkeypatch, command):
    def broken(*args, **kwargs):
        raise RuntimeError("something dpverify did not expect")
    monkeypatch.setattr(dpverify, "audit", broken)
    args = [command, f"{mechs}:good", *FAST]
    if command == "gate":
        args += ["--baseline", tmp_path / "b.json", "--update-baseline"]
    line = usage_error(capsys, *args)
    assert "internal error RuntimeError: something dpverify did not expect" in line
    assert "rerun with --debug for the traceback" in line
    assert main([str(a) for a in args] + ["--debug"]) == 2
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err
    assert err.strip().splitlines()[-1].startswith("dpverify: error: internal error RuntimeError")


def test_findings_exit_1_and_passes_0(mechs, capsys):
    assert run(capsys, "audit", f"{mechs}:good", *FAST)[0] == 0
    code, out, err = run(capsys, "audit", f"{mechs}:good", f"{mechs}:bad", *FAST)
    assert code == 1 and "VIOLATION  bad" in out and err == ""


def test_exit_codes_are_documented_in_help_and_docstrings(capsys):
    import dpverify.interfaces.exit_codes
    import dpverify.interfaces.gate
    for command in ("audit", "gate"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        out = capsys.readouterr().out
        assert EXIT_CODES in out and "--debug" in out
    for doc in (dpverify.interfaces.exit_codes.__doc__, dpverify.interfaces.gate.__doc__):
        doc = " ".join(doc.split())
        assert "Exit codes" in doc and "not a finding" in doc and "2 wins over 1" in doc


# ------------------------------------------------------------------------------------------------
# The installed command, in a fresh interpreter
# ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("extra,message", [
    (["--json", "{tmp}"], "is a directory"),
    ([], "ERROR      crashes"),
])
def test_console_exit_codes_without_traceback(mechs, tmp_path, extra, message):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    extra = [e.replace("{tmp}", str(tmp_path)) for e in extra]
    proc = subprocess.run([sys.executable, "-m", "dpverify", "audit", f"{mechs}:crashes",
                           "--samples", "20000", "--jobs", "1", *extra],
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr and "Traceback" not in proc.stderr


def test_a_ctrl_c_after_every_audit_finished_changes_nothing(tmp_path, capsys, monkeypatch):
    """A press while the files are written is held: the JSON, the count line and the exit
    code say the audits finished, and stderr says the press came too late to stop anything."""
    import os
    import signal

    from dpverify.interfaces import cli
    written = cli.write_files

    def pressed_while_writing(*args):
        os.kill(os.getpid(), signal.SIGINT)
        written(*args)
    monkeypatch.setattr(cli, "write_files", pressed_while_writing)
    (tmp_path / "m.py").write_text(
        "import dpverify\n@dpverify.mechanism(epsilon=0.2, pairs=[(0.0, 1.0)])\n"
        "def bad(data, rng, size):\n    return data + rng.laplace(0, 1.0, size)\n")
    out = tmp_path / "out.json"
    code = cli.main(["audit", str(tmp_path / "m.py"), "--samples", "4096", "--jobs", "1",
                     "--json", str(out)])
    captured = capsys.readouterr()
    assert code == 1
    assert json.loads(out.read_text())["meta"]["interrupted"] is False
    assert "INTERRUPTED" not in captured.out and "1 violation(s)" in captured.out
    assert "after the audits had finished" in captured.err


def test_an_interrupted_audit_is_counted_as_interrupted_never_as_a_pass():
    from types import SimpleNamespace

    from dpverify.interfaces.cli import AuditedTargets
    from dpverify.interfaces.gate_report import Outcome, count_line
    stopped = SimpleNamespace(verdict="pass", outcome="pass", interrupted=True, conclusive=True)
    proved = SimpleNamespace(verdict="violation", outcome="violation", interrupted=True,
                             claimed_epsilon=1.0, claimed_delta=0.0, confidence=0.95,
                             epsilon_lower_bound=1.5, marginal=False)
    done = AuditedTargets(entries=[{}, {}], results=[stopped, proved], interrupted=True)
    line = done.count_line()
    assert "1 violation(s), 0 pass(es)" in line and "1 interrupted" in line
    gate = count_line([Outcome("a", None, 0.0, result=stopped),
                       Outcome("b", None, 0.0, result=proved)], interrupted=True)
    assert "0 pass(es), 1 violation(s)" in gate and "1 interrupted" in gate


def test_a_mistyped_option_gets_the_commands_usage_and_a_suggestion(capsys):
    from dpverify.interfaces.cli import main
    with pytest.raises(SystemExit) as exit_:
        main(["audit", "mechanisms_under_test/noisy_max.py:rnm1", "--epsilom", "1"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2
    assert "usage: dpverify audit" in err and "--epsilom: did you mean --epsilon?" in err


def test_counts_accept_scientific_notation_and_claims_name_their_flag(capsys):
    from dpverify.interfaces.cli import build_parser, main
    args = build_parser().parse_args(["audit", "m.py", "--samples", "1e6", "--seed", "2e1"])
    assert (args.samples, args.seed) == (1_000_000, 20)
    with pytest.raises(SystemExit):
        build_parser().parse_args(["audit", "m.py", "--samples", "1.5"])
    for flag, value in (("--epsilon", "-1"), ("--delta", "2")):
        assert main(["audit", "mechanisms_under_test/noisy_max.py:rnm1", flag, value]) == 2
        assert f"dpverify: error: {flag} must be" in capsys.readouterr().err
