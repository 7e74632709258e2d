"""Time the pytest plugin over the zoo: `pytest --dpverify` on the files behind ZOO.

What is measured: the wall time of one pytest session in which every zoo mechanism (the files
behind ``mechanisms_under_test.ZOO``) is a test
item, at the plugin's default (fast) profile or the one given, and each item's outcome. Broken
zoo entries are expected to fail; at the fast profile (2^20 certifying samples per input and the
session's 0.05 false-alarm budget split over 15 tests) the subtle ones (SVT3, SVT4) may pass —
that is the price of a fast local profile, and the ci profile exists for it. Timing is reported,
never asserted: machines are shared and noisy.

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
import _common  # noqa: E402,F401  (puts the repository on the path)

from _machine import cpu_model
from mechanisms_under_test import CORRECT, TRUE_EPSILON
from mechanisms_under_test.dpsniper import CORRECT_DPSNIPER, TRUE_EPSILON_DPSNIPER

ROOT = Path(__file__).resolve().parents[1]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--profile", choices=["fast", "ci"], default="fast")
    args = parser.parse_args(argv)
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    files = [f"mechanisms_under_test/{m}.py" for m in ("basic", "svt", "noisy_max", "histogram")]
    cmd = [sys.executable, "-m", "pytest", *[a for f in files for a in ("--dpverify", f)],
           *files, "--dpverify-profile", args.profile, "-p", "no:cacheprovider", "-rA", "-q"]
    started = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    outcomes = re.findall(r"^(PASSED|FAILED) (\S+)", proc.stdout, re.M)
    args.out.mkdir(parents=True, exist_ok=True)
    lines = ["# The pytest plugin over the zoo", "",
             f"`pytest --dpverify <the zoo's four files> --dpverify-profile {args.profile}` on "
             f"{os.cpu_count()} CPUs ({cpu_model()}): **{seconds:.1f} s** wall time for "
             f"{len(outcomes)} test items, the zoo's four files (target: under 2 minutes with the "
             "default profile).", "",
             "Broken mechanisms should fail, correct ones pass. A pass is \"no violation found "
             "at this budget\"; at this profile the per-test confidence is 1 − 0.05/15/2 "
             "(the session budget), so violations within 2× of the claim may pass.", "",
             "| item | true ε | outcome | expected |", "|---|--:|---|---|"]
    for outcome, node in sorted(outcomes, key=lambda o: o[1]):
        name = node.split("::")[-1]
        expected = "passed" if name in CORRECT | CORRECT_DPSNIPER else "failed"
        true_eps = {**TRUE_EPSILON, **TRUE_EPSILON_DPSNIPER}[name]
        lines.append(f"| {node} | {true_eps:.4g} | {outcome.lower()} | {expected} |")
    (args.out / "plugin_zoo.md").write_text("\n".join(lines) + "\n")
    print(f"{len(outcomes)} items in {seconds:.1f} s; wrote {args.out / 'plugin_zoo.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
