"""Test-session setup shared by every test file.

The tests run against this checkout: pytest puts the repo root on sys.path (`pythonpath` in
pyproject.toml), which is also how `mechanisms_under_test` (the zoo, never installed) is found.
Child interpreters that tests start (`python -m dpverify ...`) get the same root on their
PYTHONPATH, so they too run this checkout's dpverify, not whatever version is installed (or a
stale editable install that points elsewhere).
"""
import os
from pathlib import Path

import pytest

ROOT = str(Path(__file__).resolve().parents[1])
_paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
if ROOT not in _paths:
    os.environ["PYTHONPATH"] = os.pathsep.join([ROOT] + _paths)


def pytest_configure(config):
    """Under pytest-xdist (`-n 2`), distribute by `xdist_group` unless `--dist` was given:
    tests marked with a group share a worker, so a module's audits (a module fixture) are
    computed once, not once per worker. Set here rather than in `addopts`, so that the suite
    also runs without xdist (`-p no:xdist`)."""
    given = any(arg == "--dist" or arg.startswith("--dist=")
                for arg in config.invocation_params.args)
    if getattr(config.option, "dist", "no") == "load" and not given:
        config.option.dist = "loadgroup"


@pytest.fixture
def certifying_chunk_seeds(monkeypatch):
    """Spy on the sampler for tests of the seed streams (docs/method.md, "Seed streams"):
    `watch(seed)` returns a dict that the audits run next fill with stage key → the seed state
    of that stage's first certifying chunk of input D, for an audit of that `seed`."""
    from dpverify.sampling import CERTIFY, Sampler
    run, watched = Sampler.run, {}

    def spy(self, tasks, evaluators=None, pooled=False):
        for t in tasks:
            if t.purpose == CERTIFY and t.index == 0 and t.side == 0:
                state = t.seed_sequence(watched["seed"]).generate_state(2).tolist()
                watched["stages"].setdefault(t.stage, state)
        return run(self, tasks, evaluators, pooled)

    monkeypatch.setattr(Sampler, "run", spy)

    def watch(seed: int) -> dict:
        watched["seed"], watched["stages"] = seed, {}
        return watched["stages"]

    return watch
