"""Progress off a terminal, the stall warning and their watchdog (dpverify/progress.py,
docs/ci.md)."""
import io
import re
import threading
import time
from functools import partial

import numpy as np

import dpverify
from dpverify import progress as progress_module
from dpverify.progress import Progress
from dpverify.sampling import SEARCH, Sampler, split_into_chunks

PAIRS = [(0.0, 1.0)]


def _watchdogs():
    return [t for t in threading.enumerate() if t.name.startswith("dpverify-watchdog")]


def _quiet_defaults(monkeypatch):
    monkeypatch.delenv(progress_module.INTERVAL_ENV, raising=False)
    monkeypatch.delenv(progress_module.STALL_ENV, raising=False)


def sleepy(data, rng, size):
    time.sleep(0.01)  # a slow mechanism: every batch takes a while
    return data + rng.laplace(0, 1.0, size)


def test_plain_lines_off_a_terminal_at_a_tiny_interval(capsys, monkeypatch):
    _quiet_defaults(monkeypatch)
    monkeypatch.setenv(progress_module.INTERVAL_ENV, "0.05")  # asked for: shown under pytest
    result = dpverify.audit(sleepy, pairs=PAIRS, epsilon=1.0, samples=1 << 14, seed=3)
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("[dpverify] sleepy:")]
    assert len(lines) >= 3, err
    assert "\r" not in err and "\x1b" not in err  # plain lines: no carriage return, no ANSI
    n_stages = len(result.stages)
    pattern = re.compile(r"\[dpverify\] sleepy: (pre-flight|stage (\d)/(\d)), ([\d,]+) runs, "
                         r"(\d+) s elapsed(?:, evidence(?: [\d.e+-]+ of the 40 a violation needs|"
                         r": none yet \(a violation needs 40\)))?"
                         r"(, ~[\d.]+ (s|min|h) left if every stage runs)?$")  # a busy machine: ~2.5 h
    matches = [pattern.match(line) for line in lines]
    assert all(matches), [line for line, m in zip(lines, matches) if not m]
    staged = [m for m in matches if m.group(2)]
    assert staged and all(int(m.group(3)) == n_stages for m in staged)
    runs = [int(m.group(4).replace(",", "")) for m in matches]
    assert runs == sorted(runs) and runs[-1] > 0
    # the estimate appears once a stage has finished, never before
    assert any(m.group(6) for m in staged if int(m.group(2)) >= 2), lines
    assert not any(m.group(6) for m in matches if not m.group(2) or m.group(2) == "1")
    time.sleep(0.3)  # six intervals: nothing more once the audit has returned
    assert capsys.readouterr().err == ""
    assert not _watchdogs()


def test_a_fast_audit_prints_nothing_at_the_default(capsys, monkeypatch):
    _quiet_defaults(monkeypatch)
    fast = lambda data, rng, size: data + rng.laplace(0, 1.0, size)  # noqa: E731
    # asked for (off a terminal: lines), but the first line would come after 30 s
    dpverify.audit(fast, pairs=PAIRS, epsilon=1.0, samples=1 << 14, seed=3, progress=True)
    dpverify.audit(fast, pairs=PAIRS, epsilon=1.0, samples=1 << 14, seed=3)
    assert capsys.readouterr().err == ""
    assert not _watchdogs()


def test_who_prints_what(monkeypatch):
    _quiet_defaults(monkeypatch)
    plain, terminal = io.StringIO(), type("T", (io.StringIO,), {"isatty": lambda self: True})()
    assert Progress("m", 3, stream=plain).mode is None  # under pytest: only when asked
    assert Progress("m", 3, stream=terminal).mode is None
    assert Progress("m", 3, enabled=True, stream=plain).mode == "lines"
    assert Progress("m", 3, enabled=True, stream=terminal).mode == "tty"
    assert Progress("m", 3, stream=plain).interval == progress_module.LINE_SECONDS == 30
    monkeypatch.setenv(progress_module.INTERVAL_ENV, "5")
    bar = Progress("m", 3, stream=terminal)  # asked for under pytest: plain lines
    assert (bar.mode, bar.interval) == ("lines", 5.0)
    monkeypatch.setenv(progress_module.INTERVAL_ENV, "0")
    assert Progress("m", 3, enabled=True, stream=terminal).mode is None
    monkeypatch.setenv(progress_module.INTERVAL_ENV, "soon")  # not a number: the default
    assert Progress("m", 3, enabled=True, stream=plain).interval == 30.0
    bar = Progress("m", 3, stream=plain)
    assert (bar.stall_seconds, bar.stall_alone_seconds, bar.stall_factor) == (30.0, 60.0, 10.0)
    monkeypatch.setenv(progress_module.STALL_ENV, "4")
    bar = Progress("m", 3, stream=plain)
    assert (bar.stall_seconds, bar.stall_alone_seconds) == (4.0, 8.0)
    assert Progress("m", 3, stream=plain, stall_seconds=1.0).stall_alone_seconds == 60.0


def test_time_left_from_the_stage_plan():
    now = [0.0]
    bar = Progress("m", 3, enabled=True, stream=io.StringIO(), clock=lambda: now[0])
    sizes = [100, 400, 1600]
    bar.start_stage(1, sizes)
    now[0] = 1.0
    bar.update(1000)  # stage 1: 10 runs per planned run
    assert bar.seconds_left() is None and "left" not in bar.line()
    bar.start_stage(2, sizes)
    now[0] = 2.0
    bar.update(5000)  # 4000 runs/s in stage 2; left: 10·400 − 4000 + 10·1600 = 16000 runs
    assert bar.seconds_left() == 4.0
    assert bar.line() == ("[dpverify] m: stage 2/3, 5,000 runs, 2 s elapsed, ~4 s left if "
                          "every stage runs")


class StallingClock:
    """The audit's clock for the stall test: it stands still, so that no chunk ever looks slow
    however busy the machine is, except while the stalling chunk runs, when it jumps ahead."""

    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


STALL: dict = {}  # the clock, the warnings' stream and the calls of `stalls_once` on D′


def stalls_once(data, rng, size):
    if data == 1.0:
        STALL["calls"].append(size)
        if len(STALL["calls"]) == 5:
            STALL["clock"].now += 100.0
            waited = time.monotonic() + 60.0  # a bound on the wait, never reached
            while ("may be stalled" not in STALL["stream"].getvalue()
                   and time.monotonic() < waited):
                time.sleep(0.01)
    return data + rng.laplace(0, 1.0, size)


def test_one_stall_warning_names_the_mechanism_and_the_input(monkeypatch):
    """The fifth chunk of input D' (after the pre-flight's four) stalls: the clock jumps 100 s
    and the chunk waits until the watchdog has warned. One warning, naming the chunk; the
    result is that of the same audit without the stall."""
    _quiet_defaults(monkeypatch)
    monkeypatch.setenv(progress_module.STALL_ENV, "1")  # 1 s past peers, 2 s with none yet
    STALL.update(clock=StallingClock(), stream=io.StringIO(), calls=[])
    from dpverify.pipeline import run as run_module
    monkeypatch.setattr(run_module, "Progress",
                        partial(Progress, clock=STALL["clock"], stream=STALL["stream"]))
    stream = STALL["stream"]
    plain = dpverify.audit(stalls_once, pairs=PAIRS, epsilon=1.0, samples=1 << 14, seed=3)
    err = stream.getvalue()
    warnings = [line for line in err.splitlines() if "may be stalled" in line]
    assert len(warnings) == 1, err
    assert err == warnings[0] + "\n"  # and no progress lines under pytest by default
    warning = warnings[0]
    assert warning.startswith("[dpverify] warning: mechanism 'stalls_once' may be stalled: ")
    assert re.search(r"stage \d(, round \d)? \(\w+\), pair 0, input D', chunk \d+ \(samples", warning)
    assert "D' = 1.0" in warning and re.search(r"has been running for \d+ s", warning)
    assert "--time-limit" in warning and "backend='loky'" in warning
    assert not _watchdogs()
    # a warning only: the result is that of the same audit without the stall
    monkeypatch.delenv(progress_module.STALL_ENV)
    again = dpverify.audit(lambda data, rng, size: data + rng.laplace(0, 1.0, size),
                           pairs=PAIRS, epsilon=1.0, samples=1 << 14, seed=3)
    assert (plain.epsilon_lower_bound, plain.samples) == (again.epsilon_lower_bound,
                                                          again.samples)


def test_the_watchdog_warns_while_a_pooled_chunk_still_hangs():
    stream = io.StringIO()
    bar = Progress("hangs", 1, enabled=False, stream=stream, stall_seconds=0.3,
                   stall_alone_seconds=0.3)
    warned_while_running = []

    def hangs(data, rng, size):
        if size == 208:  # the last, shorter chunk: it "hangs" until the warning is out
            deadline = time.monotonic() + 60.0  # a guard only: the wait ends at the warning
            while "may be stalled" not in stream.getvalue() and time.monotonic() < deadline:
                time.sleep(0.02)
            warned_while_running.append("may be stalled" in stream.getvalue())
        return data + rng.laplace(0, 1.0, size)

    from dpverify.mechanism import as_mechanism

    tasks = split_into_chunks(2000, 256, pair=0, side=1, stage=2, purpose=SEARCH)
    with Sampler(as_mechanism(hangs), PAIRS, 3, n_jobs=2, backend="threading", chunk_size=256,
                 progress=bar) as sampler:
        out = sampler.run(tasks)  # 8 chunks: through the pool
    bar.close()
    assert warned_while_running == [True] and len(out) == 8
    text = stream.getvalue()
    assert text.count("may be stalled") == 1, text
    assert "'hangs'" in text and "input D', chunk 7 (samples 1792..1999), D' = 1.0" in text
    assert "has not returned for" in text and "previous chunk's result" in text
    assert not _watchdogs()
    assert np.asarray(sampler.runs).sum() == 2000
