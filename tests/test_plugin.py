"""The pytest plugin, tested with pytest's own `pytester` in fresh throwaway projects."""
import re
import subprocess
import sys
import textwrap

import pytest

# pytester's in-process runs restore sys.modules afterwards; import the heavy modules here so
# numpy's extension modules are never imported twice.
import dpverify.pipeline  # noqa: F401
import dpverify.interfaces.pytest_plugin  # noqa: F401

GOOD = textwrap.dedent('''
    import dpverify

    @dpverify.mechanism(epsilon=1.0, pairs=[(0.0, 1.0)])
    def good_laplace(data, rng, size):
        return data + rng.laplace(0, 1.0, size)
''')

BAD = textwrap.dedent('''
    import dpverify

    @dpverify.mechanism(epsilon=0.2, pairs=[(0.0, 1.0)])
    def bad_laplace(data, rng, size):
        return data + rng.laplace(0, 1.0, size)   # true epsilon 1.0
''')

FAST = ["--dpverify-samples", "16384", "--dpverify-jobs", "1", "-p", "no:cacheprovider"]


@pytest.fixture
def project(pytester):
    mechs = pytester.mkdir("mechanisms")
    (mechs / "good.py").write_text(GOOD)
    (mechs / "bad.py").write_text(BAD)
    return pytester


def bound_in(text: str) -> float:
    return float(re.search(r"certified ε ≥ ([0-9.]+)", text).group(1))


def test_collected_mechanisms_pass_and_fail_with_evidence(project):
    result = project.runpytest("--dpverify", "mechanisms", *FAST)
    result.assert_outcomes(passed=1, failed=1)
    out = result.stdout.str()
    assert "privacy violation in bad_laplace" in out
    assert "claimed  (ε=0.2, δ=0)" in out
    for field in ("pair     D = ", "counts   ", "reproduce: dpverify audit"):
        assert field in out
    # a certified event, or the last event the betting test bet on
    assert "event    " in out or "last bet " in out
    assert 0.2 < bound_in(out) <= 1.0


def test_the_reproduction_line_reproduces_the_bound(project):
    out = project.runpytest("--dpverify", "mechanisms/bad.py", *FAST).stdout.str()
    line = re.search(r"reproduce: (dpverify audit .*)", out).group(1).split()
    proc = subprocess.run([sys.executable, "-m", "dpverify"] + line[1:], capture_output=True,
                          text=True, cwd=project.path, timeout=120)
    assert proc.returncode == 1
    assert bound_in(proc.stdout) == pytest.approx(bound_in(out), abs=1e-4)


def test_only_correct_mechanisms_pass(project):
    project.runpytest("--dpverify", "mechanisms/good.py", *FAST).assert_outcomes(passed=1)


def test_ini_option_collects_too(project):
    project.makeini("[pytest]\ndpverify_paths = mechanisms\n")
    project.runpytest(*FAST).assert_outcomes(passed=1, failed=1)


def test_fixture_and_marker(pytester):
    pytester.makepyfile(textwrap.dedent('''
        import pytest

        def laplace(data, rng, size):          # a plain function: no decorator
            return data + rng.laplace(0, 1.0, size)

        def test_claim_in_the_call(dp_audit):
            result = dp_audit(laplace, pairs=[(0.0, 1.0)], epsilon=1.0)
            assert result.verdict == "pass"

        @pytest.mark.dp(epsilon=0.3, pairs=[(0.0, 1.0)])
        def test_claim_in_the_marker_is_too_small(dp_audit):
            dp_audit(laplace)

        @pytest.mark.dp(epsilon=1.0, pairs=[(0.0, 1.0)])
        def test_claim_in_the_marker_holds(dp_audit):
            assert dp_audit(laplace).epsilon_lower_bound <= 1.0
    '''))
    result = pytester.runpytest(*FAST)
    result.assert_outcomes(passed=2, failed=1)
    out = result.stdout.str()
    assert "PrivacyViolation" in out and "privacy violation in laplace" in out
    # 3 DP tests share the 0.05 budget; the first audit of a test spends half its share
    assert f"confidence {1 - 0.05 / 3 / 2:.6g}" in out
    assert re.search(r"reproduce: pytest \S+::test_claim_in_the_marker_is_too_small "
                     r"--dpverify-seed 0", out)


def test_header_profile_and_random_seed(project, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    assert "profile fast, seed 0" in project.runpytest(*FAST).stdout.str()
    monkeypatch.setenv("CI", "true")
    out = project.runpytest("--dpverify-seed", "random", *FAST).stdout.str()
    assert re.search(r"dpverify: profile ci, seed \d+ \(random\), session false-alarm budget 0.05",
                     out)


def test_runs_are_deterministic(project):
    first = project.runpytest("--dpverify", "mechanisms/bad.py", *FAST).stdout.str()
    second = project.runpytest("--dpverify", "mechanisms/bad.py", *FAST).stdout.str()
    assert bound_in(first) == bound_in(second)


def test_bad_options_are_usage_errors(project):
    result = project.runpytest("--dpverify", "no_such_dir", *FAST)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result = project.runpytest("--dpverify-seed", "abc", *FAST)
    assert result.ret == pytest.ExitCode.USAGE_ERROR


def test_a_session_resolution_target_sizes_passes_and_is_in_the_reproduction_line(project):
    """--dpverify-resolution 1.1: the correct mechanism passes, the broken one still fails, and
    its reproduction line carries the target, so the CLI repeats the bound exactly."""
    args = ["--dpverify", "mechanisms", "--dpverify-resolution", "1.1", "--dpverify-jobs", "1",
            "-p", "no:cacheprovider"]
    result = project.runpytest(*args)
    result.assert_outcomes(passed=1, failed=1)
    out = result.stdout.str()
    line = re.search(r"reproduce: (dpverify audit .*)", out).group(1).split()
    assert line[line.index("--resolution") + 1] == "1.1"
    proc = subprocess.run([sys.executable, "-m", "dpverify"] + line[1:], capture_output=True,
                          text=True, cwd=project.path, timeout=120)
    assert proc.returncode == 1
    assert bound_in(proc.stdout) == pytest.approx(bound_in(out), abs=1e-4)
    bad = project.runpytest("--dpverify", "mechanisms", "--dpverify-resolution", "0.5")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    assert "--dpverify-resolution" in bad.stderr.str()
