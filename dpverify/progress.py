"""Progress on stderr for long audits, and a warning when one chunk stalls (docs/ci.md).

- On a terminal: a one-line display rewritten in place ("\\r"), shown once the audit has run
  SHOW_AFTER_SECONDS; not under pytest unless asked (`enabled=True`).
- Off a terminal (CI logs): a plain line every DPVERIFY_PROGRESS_SECONDS seconds (default
  LINE_SECONDS, the first one after as long, so short audits print nothing). Under pytest only
  when asked: `enabled=True` or the variable set. DPVERIFY_PROGRESS_SECONDS=0 turns both off.
- Stall warning, on or off a terminal and under pytest too: once per chunk, when a chunk has run
  more than max(STALL_FACTOR × the median seconds per run of the chunks finished so far × its
  size, STALL_SECONDS), or STALL_ALONE_SECONDS while no chunk has finished yet.
  DPVERIFY_STALL_SECONDS sets STALL_SECONDS (and twice it for STALL_ALONE_SECONDS); 0 turns the
  warning off. It is a warning only: it never changes what the audit does.

A daemon thread (started when the audit first waits on a chunk, stopped by `close()`) prints
the off-terminal lines and the warnings, so both appear while a mechanism hangs. Nothing is
written after `close()` returns.
"""
from __future__ import annotations

import bisect
import math
import os
import sys
import threading
import time
from typing import Callable

SHOW_AFTER_SECONDS = 2.0    # terminal display: first shown after this long
REFRESH_SECONDS = 0.25      # terminal display: redrawn at most this often
LINE_SECONDS = 30.0         # off a terminal: a line every this many seconds
STALL_FACTOR = 10.0         # a chunk stalls past this many times its peers' median...
STALL_SECONDS = 30.0        # ...and past this many seconds
STALL_ALONE_SECONDS = 60.0  # ...or past this many while no chunk has finished yet
INTERVAL_ENV = "DPVERIFY_PROGRESS_SECONDS"
STALL_ENV = "DPVERIFY_STALL_SECONDS"


def wanted() -> bool:
    """The terminal display's default: on a terminal, and not under pytest (whose capture
    would garble it)."""
    return _isatty(sys.stderr) and not _under_pytest()


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def _under_pytest() -> bool:
    return "PYTEST_CURRENT_TEST" in os.environ


def env_seconds(name: str) -> float | None:
    """A non-negative number of seconds from environment variable `name`, or None when it is
    unset, empty or not such a number (the default then applies)."""
    text = os.environ.get(name, "").strip()
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return value if value >= 0 and math.isfinite(value) else None


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


class Progress:
    """The progress of one audit and its stall watchdog.

    The engine calls `start_stage(j, sizes)` at each stage (`sizes`: the planned certifying
    runs per input of every stage, the list the engine itself uses), the sampler calls
    `update(runs)` as chunks end and `begin(...)` / `end(...)` around every wait on a chunk, and
    the engine calls `close()` when the audit ends.

    enabled: None — the default (see the module docstring); True — show progress (terminal
    display on a terminal, plain lines elsewhere); False — no progress (the stall warning
    still applies). interval: seconds between off-terminal lines (default: the environment
    variable, else LINE_SECONDS; 0: no progress). stall_seconds, stall_factor,
    stall_alone_seconds: the stall rule (defaults: the environment variable, else the module
    constants; stall_seconds=0: no warning).
    """

    def __init__(self, name: str, n_stages: int, enabled: bool | None = None, *,
                 interval: float | None = None, stall_seconds: float | None = None,
                 stall_factor: float = STALL_FACTOR, stall_alone_seconds: float | None = None,
                 stream=None, clock: Callable[[], float] = time.monotonic):
        self.name = name
        self.n_stages = n_stages
        self.stage = 0
        self.runs = 0
        self.evidence: tuple | None = None  # (wealth, wealth a violation needs) of the bets
        self.stream = sys.stderr if stream is None else stream
        self.clock = clock
        env_interval = env_seconds(INTERVAL_ENV)
        asked = interval is not None or env_interval is not None
        if interval is None:
            interval = env_interval if env_interval is not None else LINE_SECONDS
        self.interval = float(interval)
        tty = _isatty(self.stream)
        if enabled is False or self.interval <= 0:
            self.mode = None
        elif enabled is True:
            self.mode = "tty" if tty else "lines"
        elif _under_pytest():  # captured anyway: plain lines, and only when asked for
            self.mode = "lines" if asked else None
        else:
            self.mode = "tty" if tty else "lines"
        self.enabled = self.mode is not None
        if stall_seconds is None:
            env_stall = env_seconds(STALL_ENV)
            stall_seconds = env_stall if env_stall is not None else STALL_SECONDS
            if stall_alone_seconds is None and env_stall is not None:
                stall_alone_seconds = 2 * env_stall
        self.stall_seconds = float(stall_seconds)
        self.stall_factor = float(stall_factor)
        self.stall_alone_seconds = float(STALL_ALONE_SECONDS if stall_alone_seconds is None
                                         else stall_alone_seconds)
        self.started = clock()
        self._sizes: list[int] | None = None
        self._marks: dict[int, tuple[int, float]] = {}  # stage → (runs, time) at its start
        self._per_run: list[float] = []  # finished chunks' seconds per run, sorted
        self._current = None  # (key, label, size, since, exact) of the chunk waited on
        self._keys = 0
        self._warned = -1
        self._lock = threading.RLock()
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._closed = False
        self._last = 0.0
        self._shown = False
        self._next_line = self.started + self.interval

    # -- fed by the engine and the sampler ---------------------------------------------------

    def start_stage(self, stage: int, sizes: list[int] | None = None) -> None:
        self.stage = stage
        if sizes is not None:
            self._sizes = sizes
            self.n_stages = len(sizes)
        self._marks.setdefault(stage, (self.runs, self.clock()))

    def show_evidence(self, wealth: float, needed: float) -> None:
        """The betting test's wealth so far and the wealth that proves a violation."""
        self.evidence = (wealth, needed)

    def _evidence_text(self) -> str:
        if self.evidence is None:
            return ""
        wealth, needed = self.evidence
        if not wealth > 1.0:  # the bets have lost: nothing against the claim so far
            return f"evidence: none yet (a violation needs {needed:.3g})"
        return f"evidence {wealth:.3g} of the {needed:.3g} a violation needs"

    def update(self, runs: int) -> None:
        self.runs = runs
        if self.mode != "tty" or self._closed:
            return
        now = self.clock()
        if (now - self.started < SHOW_AFTER_SECONDS or now - self._last < REFRESH_SECONDS):
            return
        self._last = now
        left = self.seconds_left(now)
        eta = f"  ~{_duration(left)} left" if left is not None else ""
        evidence = self._evidence_text()
        evidence = f"  {evidence}" if evidence else ""
        self._write(f"\r[dpverify] {self.name}  stage {self.stage}/{self.n_stages}  "
                    f"{runs:,} runs  {now - self.started:.0f} s{evidence}{eta} \033[K")
        self._shown = True

    def begin(self, label: Callable[[], str], size: int, since: float, exact: bool) -> None:
        """The sampler now waits on a chunk of `size` runs, described by `label()` (called only
        to warn), running since `since` (`exact`: it runs in this thread) or, run by a pool
        of workers that starts chunks ahead, timed from `since` (its dispatch, or the return
        of the chunk before it)."""
        self._keys += 1
        self._current = (self._keys, label, size, since, exact)
        self._ensure_thread()

    def end(self, seconds: float | None = None) -> None:
        """The chunk waited on returned (after `seconds` of its own work) or the wait ended."""
        current, self._current = self._current, None
        if current is not None and seconds is not None and current[2] > 0:
            with self._lock:
                bisect.insort(self._per_run, seconds / current[2])

    def close(self) -> None:
        """Stop the watchdog and clear the terminal display; nothing is written afterwards."""
        self.stop_watching()
        with self._lock:
            if self._shown:
                self._write("\r\033[K")
                self._shown = False
            self._closed = True

    def stop_watching(self) -> None:
        """Stop the watchdog thread (a later `begin` starts it again, unless closed)."""
        self._stop.set()  # checked under the lock before every line the watchdog writes
        thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=10.0)

    # -- estimates and lines -----------------------------------------------------------------

    def seconds_left(self, now: float | None = None) -> float | None:
        """Seconds until every planned stage has run, or None while unknown (before a stage
        has finished). The stages left are taken to need as many runs per planned certifying
        run as the last finished stage did, drawn at the rate since that stage began (the
        current stage's own rate after the first stage, whose time includes starting the
        workers). Usually an overestimate: an audit that stops at a violation, stops
        searching or drops pairs needs fewer runs, and learning time is counted as sampling."""
        sizes, j, marks = self._sizes, self.stage, self._marks
        if not sizes or not 2 <= j <= len(sizes) or j not in marks or j - 1 not in marks:
            return None
        now = self.clock() if now is None else now
        (last_runs, last_time), (stage_runs, stage_time) = marks[j - 1], marks[j]
        per_planned = (stage_runs - last_runs) / sizes[j - 2]
        since_runs, since_time = (last_runs, last_time) if j > 2 else (stage_runs, stage_time)
        runs, seconds = self.runs - since_runs, now - since_time
        if per_planned <= 0 or runs <= 0 or seconds <= 0:
            return None
        left = (max(per_planned * sizes[j - 1] - (self.runs - stage_runs), 0.0)
                + per_planned * sum(sizes[j:]))
        return left * seconds / runs

    def line(self, now: float | None = None) -> str:
        """The off-terminal progress line."""
        now = self.clock() if now is None else now
        where = f"stage {self.stage}/{self.n_stages}" if self.stage else "pre-flight"
        text = (f"[dpverify] {self.name}: {where}, {self.runs:,} runs, "
                f"{now - self.started:.0f} s elapsed")
        if self.evidence is not None:
            text += f", {self._evidence_text()}"
        left = self.seconds_left(now)
        if left is not None:
            text += f", ~{_duration(left)} left if every stage runs"
        return text

    def stall_warning(self, label: str, waited: float, exact: bool,
                      typical: float | None) -> str:
        running = (f"has been running for {waited:.0f} s" if exact else
                   f"has not returned for {waited:.0f} s (timed from the previous chunk's "
                   "result, or from dispatch: parallel workers may have started it earlier or "
                   "later)")
        peers = (f"the chunks finished so far would take ~{typical:.2g} s at its size"
                 if typical is not None else "no chunk has finished yet")
        return (f"[dpverify] warning: mechanism {self.name!r} may be stalled: {label} "
                f"{running}; {peers}. The audit goes on (this is only a warning); if the "
                "mechanism hangs, set a time limit (--time-limit SECONDS, time_limit=) to stop "
                "with an error naming the chunk, with --backend loky (backend='loky') so a hung "
                "run is killed")

    # -- the watchdog ------------------------------------------------------------------------

    def _ensure_thread(self) -> None:
        if self._closed or self._thread is not None:
            return
        if self.mode != "lines" and self.stall_seconds <= 0:
            return
        polls = [0.5]
        if self.mode == "lines":
            polls.append(self.interval / 4)
        if self.stall_seconds > 0:
            polls.append(self.stall_seconds / 4)
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._watch, args=(self._stop, max(min(polls), 0.01)),
            name=f"dpverify-watchdog-{self.name}", daemon=True)
        self._thread.start()

    def _watch(self, stop: threading.Event, poll: float) -> None:
        while not stop.wait(poll):
            now = self.clock()
            self._check_stall(now, stop)
            if self.mode == "lines" and now >= self._next_line:
                while self._next_line <= now:
                    self._next_line += self.interval
                self._emit(self.line(now), stop)

    def _check_stall(self, now: float, stop: threading.Event) -> None:
        current = self._current
        if current is None or self.stall_seconds <= 0:
            return
        key, label, size, since, exact = current
        if key == self._warned:
            return
        with self._lock:
            median = self._per_run[len(self._per_run) // 2] if self._per_run else None
        typical = median * size if median is not None else None
        limit = (max(self.stall_factor * typical, self.stall_seconds) if typical is not None
                 else self.stall_alone_seconds)
        waited = now - since
        if waited <= limit:
            return
        self._warned = key
        try:
            text = label()
        except Exception:  # a describing failure must not kill the watchdog
            text = "a chunk"
        self._emit(self.stall_warning(text, waited, exact, typical), stop)

    def _emit(self, text: str, stop: threading.Event) -> None:
        with self._lock:
            if stop.is_set() or self._closed:
                return
            prefix = "\r\033[K" if self._shown else ""
            self._shown = False
            self._write(prefix + text + "\n")

    def _write(self, text: str) -> None:
        with self._lock:
            try:
                self.stream.write(text)
                self.stream.flush()
            except (OSError, ValueError):  # a closed or broken stream: drop the line
                pass
