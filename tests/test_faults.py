"""Faults: hanging mechanisms, dying workers, Ctrl-C, the dask backend, the progress line."""
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

import dpverify
from dpverify import AuditTimeoutError, WorkerDiedError
from dpverify import progress as progress_module

PAIRS = [(0.0, 1.0)]


def hangs_on_one(data, rng, size):
    x = data + rng.laplace(0, 1.0, size)
    if data == 1.0:
        time.sleep(60)  # stands in for a mechanism stuck in a loop
    return x


def hangs_on_one_marking(data, rng, size, marker=None):
    """`hangs_on_one`, leaving `marker` behind if its hang ever ends."""
    x = hangs_on_one(data, rng, size)
    if data == 1.0:
        Path(marker).touch()
    return x


@pytest.mark.parametrize("backend", ["threading", "loky"])
def test_a_hanging_mechanism_stops_within_its_time_limit(backend, tmp_path):
    """The audit stops with an error before the 60 s hang ends: the hung run leaves a marker
    only once its hang is over, and there is none when the error arrives (no clock is read
    here, so a busy machine changes nothing). With threads the pre-flight of D takes
    milliseconds, so the chunk the limit cuts off is D′'s; loky's workers may take the whole
    limit to start on a busy machine, so there any input may be named."""
    from functools import partial
    marker = tmp_path / "hang-ended"
    mech = dpverify.Mechanism(fn=partial(hangs_on_one_marking, marker=str(marker)),
                              name="hangs_on_one", epsilon=1.0, pairs=PAIRS, batched=True)
    named = r"input D'" if backend == "threading" else r"input D'?"
    with pytest.raises(AuditTimeoutError, match=r"hangs_on_one.*time limit.*" + named):
        dpverify.audit(mech, time_limit=3.0, backend=backend, n_jobs=2)
    assert not marker.exists()


def dies_once(data, rng, size, flag=None, parent=None):
    x = data + rng.laplace(0, 1.0, size)
    in_worker = os.getpid() != parent  # small batches run in the audit's own process
    if in_worker and data == 1.0 and not os.path.exists(flag):
        open(flag, "w").close()
        os._exit(3)  # the worker process dies, as on a segfault
    return x


def test_a_dying_worker_is_named_and_the_audit_can_be_retried(tmp_path):
    flag = str(tmp_path / "died")

    parent = os.getpid()

    def mech(data, rng, size):
        return dies_once(data, rng, size, flag, parent)

    kw = dict(pairs=PAIRS, epsilon=1.0, samples=1 << 20, backend="loky", n_jobs=2, seed=3)
    died = r"worker process died.*(stage \d|the last stage).*chunk \d+.*retry"
    with pytest.raises(WorkerDiedError, match=died):
        dpverify.audit(mech, **kw)
    retried = dpverify.audit(mech, **kw)
    clean = dpverify.audit(lambda data, rng, size: data + rng.laplace(0, 1.0, size), **kw)
    assert retried.epsilon_lower_bound == clean.epsilon_lower_bound
    assert retried.witness.count_D == clean.witness.count_D


SLOW = textwrap.dedent('''
    import dpverify

    @dpverify.mechanism(epsilon=0.2, pairs=[(0.0, 1.0)])
    def broken_but_slow(data, rng):     # scalar form: a Python call per sample
        return data + rng.laplace(0, 1.0)

    @dpverify.mechanism(epsilon=1.0, pairs=[(0.0, 1.0)])
    def never_reached(data, rng):
        return data + rng.laplace(0, 1.0)
''')


def _until_a_stage_finished(proc, cap: float = 300.0) -> list[str]:
    """Read the audit's progress lines (stderr) on a thread; return once a line shows stage 2
    or later (so stage 1 has run), or the process ended, or `cap` seconds passed. The list
    keeps filling until stderr closes."""
    lines: list[str] = []
    seen = threading.Event()

    def read():
        for line in proc.stderr:
            lines.append(line)
            if re.search(r"stage ([2-9]|\d\d)/", line):
                seen.set()
        seen.set()
    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    seen.wait(cap)
    return lines


def test_ctrl_c_stops_promptly_and_keeps_what_was_certified(tmp_path):
    """Ctrl-C once stage 1 has run (read from the progress lines, however slow the machine):
    the audit exits 130 well before its remaining stages could have run, and the JSON keeps
    what was certified, with the second mechanism "not run"."""
    (tmp_path / "slow.py").write_text(SLOW)
    out = tmp_path / "out.json"
    proc = subprocess.Popen(
        [sys.executable, "-m", "dpverify", "audit", "slow.py", "--epsilon", "1.0",
         "--samples", str(1 << 24), "--jobs", "1", "--json", str(out)],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, progress_module.INTERVAL_ENV: "0.1"},
        # a runner started in the background (e.g. `cmd &`) ignores SIGINT, and children inherit
        # that; give the audit the default handler, as a terminal would
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    _until_a_stage_finished(proc)
    proc.send_signal(signal.SIGINT)
    stdout = proc.stdout.read()
    proc.wait(timeout=600)  # a guard only: the schedule's 2^24 scalar runs would take an hour
    assert proc.returncode == 130
    doc = json.loads(out.read_text())
    assert [(r["mechanism"], r["verdict"]) for r in doc["results"]][1:] == [
        ("never_reached", "not run")]
    assert doc["meta"]["interrupted"] is True
    result = doc["results"][0]
    # stopped where it was: stage 1 done, the schedule's last stages never reached
    assert result["interrupted"] is True and len(result["stages"]) >= 1
    assert result["samples_per_side"] < 1 << 24
    assert result["witness"]["count_D"] > 0
    # a run stopped before it proved a violation is counted as interrupted, never as a pass
    stopped = "1 interrupted, " if result["verdict"] != "violation" else ""
    assert f"0 error(s), {stopped}1 not run  [INTERRUPTED]" in stdout, stdout
    assert "0 pass(es)" in stdout


def _loky_workers(pid: int) -> int:
    """How many loky worker processes `pid` has started (Linux /proc)."""
    count = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            command = (stat.parent / "cmdline").read_bytes()
        except (OSError, ValueError, IndexError):
            continue
        count += parent == pid and b"popen_loky" in command
    return count


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")
def test_ctrl_c_to_the_whole_process_group_leaves_no_worker_traceback(tmp_path):
    """Ctrl-C on a terminal reaches every process of the group, loky's workers too: they
    ignore it (sampling.sampler), so stderr holds one line, and the run is reported as
    interrupted in the summary, the JSON and the report. Sent just after the workers were
    started, while they are still importing numpy (where an unprotected worker prints a
    traceback)."""
    (tmp_path / "slow.py").write_text(SLOW)
    proc = subprocess.Popen(
        [sys.executable, "-m", "dpverify", "audit", "slow.py", "--epsilon", "1.0", "--jobs",
         "2", "--json",
         "out.json", "--report", "report", "--samples", str(1 << 21)],  # long: never done
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    while _loky_workers(proc.pid) < 2 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.01)
    time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGINT)
    try:
        stdout, stderr = proc.communicate(timeout=15)
    except subprocess.TimeoutExpired:
        # a press that lands while the pool starts its workers (a few milliseconds, once) is
        # lost, as the sampler says: press again, as a person would
        os.killpg(proc.pid, signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr, stderr
    assert "[INTERRUPTED]" in stdout
    doc = json.loads((tmp_path / "out.json").read_text())
    assert doc["meta"]["interrupted"] is True
    assert "interrupted (Ctrl-C)" in (tmp_path / "report" / "report.md").read_text()


def test_dask_backend_matches_a_local_run_bit_for_bit():
    distributed = pytest.importorskip("distributed")
    from mechanisms_under_test import ZOO

    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster):
        remote = dpverify.audit(ZOO["rnm3"], backend="dask", samples=1 << 18).as_dict()
    local = dpverify.audit(ZOO["rnm3"], samples=1 << 18, n_jobs=1).as_dict()
    remote.pop("seconds"), local.pop("seconds")
    assert remote == local


def test_dask_backend_without_a_client_says_what_to_do():
    pytest.importorskip("distributed")
    with pytest.raises(dpverify.DpVerifyError, match="create one first"):
        dpverify.audit(hangs_on_one, pairs=PAIRS, epsilon=1.0, backend="dask")


def test_progress_line_only_when_asked_and_after_a_delay(capsys, monkeypatch):
    assert not progress_module.wanted()  # under pytest: silent by default
    import io

    class Terminal(io.StringIO):  # the in-place display is for terminals (off one: lines)
        def isatty(self):
            return True

    monkeypatch.setattr(progress_module, "SHOW_AFTER_SECONDS", 0.0)
    terminal = Terminal()
    bar = progress_module.Progress("mech", 3, enabled=True, stream=terminal)
    bar.stage = 2
    bar.update(12345)
    bar.close()
    assert "\r[dpverify] mech  stage 2/3  12,345 runs" in terminal.getvalue()
    silent = progress_module.Progress("mech", 3, enabled=False)
    silent.update(1)
    assert capsys.readouterr().err == ""


def test_time_limit_must_be_positive():
    with pytest.raises(dpverify.InvalidClaimError, match="time_limit"):
        dpverify.audit(hangs_on_one, pairs=PAIRS, epsilon=1.0, time_limit=0)


def test_cli_scheduler_flag_runs_on_an_existing_cluster(tmp_path):
    distributed = pytest.importorskip("distributed")
    from dpverify.interfaces.cli import main

    target = "mechanisms_under_test.noisy_max:rnm3"
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        code = main(["audit", target, "--samples", "65536", "--scheduler",
                     cluster.scheduler_address, "--json", str(tmp_path / "remote.json")])
    assert code == 1
    assert main(["audit", target, "--samples", "65536", "--jobs", "1",
                 "--json", str(tmp_path / "local.json")]) == 1
    remote, local = (json.loads((tmp_path / f"{n}.json").read_text())["results"][0]
                     for n in ("remote", "local"))
    remote.pop("seconds"), local.pop("seconds")
    assert remote == local
