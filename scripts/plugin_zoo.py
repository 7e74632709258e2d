"""Time the pytest plugin over the zoo: `pytest --dpverify` on the files behind ZOO.

One pytest session with every zoo mechanism as a test item, at the fast profile or the one given:
its wall time (reported, never asserted) and each item's outcome against the expected one. Writes
DIR/plugin_zoo.md; what the profile allows: docs/results.md, "The pytest plugin over the zoo".

Usage: python scripts/plugin_zoo.py --out DIR [--profile fast|ci]
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from _common import ROOT, table  # puts the repository on the path
from _machine import cpu_model
from mechanisms_under_test import CORRECT, TRUE_EPSILON
from mechanisms_under_test.dpsniper import CORRECT_DPSNIPER, TRUE_EPSILON_DPSNIPER

FILES = [f"mechanisms_under_test/{m}.py" for m in ("basic", "svt", "noisy_max", "histogram")]


def markdown(profile: str, seconds: float, outcomes: list[tuple[str, str]]) -> str:
    """The report: the session's wall time and each item's (PASSED/FAILED, node id)."""
    truth = {**TRUE_EPSILON, **TRUE_EPSILON_DPSNIPER}
    rows = []
    for outcome, node in sorted(outcomes, key=lambda o: o[1]):
        name = node.split("::")[-1]
        expected = "passed" if name in CORRECT | CORRECT_DPSNIPER else "failed"
        rows.append([node, f"{truth[name]:.4g}", outcome.lower(), expected])
    lines = ["# The pytest plugin over the zoo", "",
             f"`pytest --dpverify <the zoo's four files> --dpverify-profile {profile}` on "
             f"{os.cpu_count()} CPUs ({cpu_model()}): **{seconds:.1f} s** wall time for "
             f"{len(outcomes)} test items, the zoo's four files (target: under 2 minutes with the "
             "default profile).", "",
             "Broken mechanisms should fail, correct ones pass. A pass is \"no violation found "
             "at this budget\"; at this profile the per-test confidence is 1 − 0.05/15/2 "
             "(the session budget), so violations within 2× of the claim may pass.", "",
             *table(["item", "true ε", "outcome", "expected"], rows, align="lrll")]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--profile", choices=["fast", "ci"], default="fast")
    args = parser.parse_args(argv)
    env = {k: v for k, v in os.environ.items() if k != "CI"}  # as outside CI (the plugin reads CI)
    cmd = [sys.executable, "-m", "pytest", *[a for f in FILES for a in ("--dpverify", f)],
           *FILES, "--dpverify-profile", args.profile, "-p", "no:cacheprovider", "-rA", "-q"]
    started = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    outcomes = re.findall(r"^(PASSED|FAILED) (\S+)", proc.stdout, re.M)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "plugin_zoo.md").write_text(markdown(args.profile, seconds, outcomes))
    print(f"{len(outcomes)} items in {seconds:.1f} s; wrote {args.out / 'plugin_zoo.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
