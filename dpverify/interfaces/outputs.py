"""What the commands write: checks of output paths before any audit runs, writes whose
OSError becomes a one-line error, and printing that survives a closed pipe.

A path given for a file must lie in an existing, writable directory and must not be a
directory itself; a directory given for a report is created if absent, but its parent must
exist (never a silent `mkdir -p`). Each failure is a DpVerifyError naming the option (exit 2).
"""
from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from pathlib import Path

from ..errors import DpVerifyError

# An example file name per option, for the message when a directory is given instead.
EXAMPLE_NAMES = {"--json": "results.json", "--junit": "junit.xml", "--summary": "summary.md",
                 "--baseline": "baseline.json"}


def say(text: str) -> None:
    """Print to stdout; if the reader went away (`| head`), keep auditing silently so the exit
    code still tells the verdict."""
    try:
        print(text, flush=True)
    except BrokenPipeError:
        sys.stdout = open(os.devnull, "w")


def on_terminal(text: str) -> None:
    """A line for a person watching: on stderr when it is a terminal (where it says which
    mechanism of several is running, or that files are being written), nowhere otherwise (CI
    logs get the progress lines of `dpverify.progress`)."""
    if sys.stderr.isatty():
        print(text, file=sys.stderr, flush=True)


def _shown(path: Path) -> str:
    return str(path) if str(path) else "."


def _check_parent(path: Path, option: str) -> None:
    parent = path.absolute().parent
    if not parent.exists():
        raise DpVerifyError(f"{option} {path}: directory {parent} does not exist; create it "
                            f"first (mkdir -p {parent}) or fix the path")
    if not parent.is_dir():
        raise DpVerifyError(f"{option} {path}: {parent} is not a directory; fix the path")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise DpVerifyError(f"{option} {path}: directory {parent} is not writable; choose "
                            f"another path or fix its permissions")


def check_output_file(value, option: str) -> Path:
    """The path of a file dpverify will write: its directory must exist and be writable, and
    the path must not be a directory. DpVerifyError (exit 2) otherwise, before any audit."""
    path = Path(value)
    if path.is_dir():
        example = path / EXAMPLE_NAMES.get(option, "out")
        raise DpVerifyError(f"{option} {_shown(path)} is a directory; give a file path such as "
                            f"{example}")
    _check_parent(path, option)
    if path.exists() and not os.access(path, os.W_OK):
        raise DpVerifyError(f"{option} {path} exists and is not writable; choose another path "
                            f"or fix its permissions")
    return path


def check_output_dir(value, option: str) -> Path:
    """A directory dpverify will write files into: it is created if absent, but its parent
    must exist (no silent `mkdir -p`); it must be writable."""
    path = Path(value)
    if path.exists():
        if not path.is_dir():
            raise DpVerifyError(f"{option} {path} exists and is not a directory; give a "
                                f"directory path")
        if not os.access(path, os.W_OK | os.X_OK):
            raise DpVerifyError(f"{option} directory {_shown(path)} is not writable; choose "
                                f"another directory or fix its permissions")
        return path
    _check_parent(path, option)
    return path


def write_output(option: str, path: Path, write) -> None:
    """Run `write()`; an OSError (disk full, permissions changed mid-run) becomes a one-line
    DpVerifyError naming the option."""
    try:
        write()
    except OSError as exc:
        raise DpVerifyError(f"cannot write {option} {path}: {exc.strerror or exc}; check the "
                            f"path and free space") from exc


@contextlib.contextmanager
def ctrl_c_held():
    """Hold Ctrl-C back inside the block (the main thread only); yields a list that is
    non-empty if one was pressed meanwhile."""
    pressed: list = []
    main_thread = threading.current_thread() is threading.main_thread()
    held = signal.signal(signal.SIGINT, lambda *_: pressed.append(True)) if main_thread else None
    try:
        yield pressed
    finally:
        if main_thread:
            signal.signal(signal.SIGINT, held)
