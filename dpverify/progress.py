"""A one-line progress display on stderr for audits that take more than a couple of seconds."""
from __future__ import annotations

import os
import sys
import time

SHOW_AFTER_SECONDS = 2.0
REFRESH_SECONDS = 0.25


def wanted() -> bool:
    """On a terminal, and not under pytest (whose capture would garble it)."""
    stream = sys.stderr
    return (hasattr(stream, "isatty") and stream.isatty()
            and "PYTEST_CURRENT_TEST" not in os.environ)


class Progress:
    """`update(runs)` as chunks finish; shows "name  stage j/J  runs  seconds" once the audit has
    run SHOW_AFTER_SECONDS; `close()` clears the line."""

    def __init__(self, name: str, n_stages: int, enabled: bool | None = None):
        self.name = name
        self.n_stages = n_stages
        self.stage = 0
        self.enabled = wanted() if enabled is None else enabled
        self.started = time.monotonic()
        self._last = 0.0
        self._shown = False

    def update(self, runs: int) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self.started < SHOW_AFTER_SECONDS or now - self._last < REFRESH_SECONDS:
            return
        self._last = now
        self._shown = True
        sys.stderr.write(f"\r[dpverify] {self.name}  stage {self.stage}/{self.n_stages}  "
                         f"{runs:,} runs  {now - self.started:.0f} s ")
        sys.stderr.flush()

    def close(self) -> None:
        if self._shown:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()
            self._shown = False
