"""Test-session setup shared by every test file.

The tests run against this checkout: pytest puts the repo root on sys.path (`pythonpath` in
pyproject.toml), which is also how `mechanisms_under_test` (the zoo, never installed) is found.
Child interpreters that tests start (`python -m dpverify ...`) get the same root on their
PYTHONPATH, so they too run this checkout's dpverify, not whatever version is installed (or a
stale editable install that points elsewhere).
"""
import os
from pathlib import Path

ROOT = str(Path(__file__).resolve().parents[1])
_paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
if ROOT not in _paths:
    os.environ["PYTHONPATH"] = os.pathsep.join([ROOT] + _paths)
