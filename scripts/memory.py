"""Peak memory of an audit against its sample count: is memory bounded by the chunk?

What is measured: the peak resident set size (ru_maxrss of the child process) of one batched
Laplace audit (claim ε = 1 exact, so every stage runs) at each sample count, each audit in its
own fresh Python process so the peaks do not mix. Certifying chunks return only event counts
and the search sample is capped, so the peak should not grow with the sample count; the target
is peak(10^9) ≤ 1.2 × peak(10^7). Seconds are reported for context only.

Usage: python scripts/memory.py --out DIR [--samples 10000000 1000000000]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from _machine import cpu_model

ROOT = Path(__file__).resolve().parents[1]
CHILD = """
import json, sys, dpverify
from mechanisms_under_test.basic import make_laplace
r = dpverify.audit(make_laplace(1.0), samples=int(sys.argv[1]))
print(json.dumps({"verdict": r.verdict, "bound": r.epsilon_lower_bound, "runs": r.samples,
                  "per_side": r.samples_per_side}))
"""


def measure(samples: int) -> dict:
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(samples)], cwd=ROOT,
                            stdout=subprocess.PIPE, text=True)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"audit at {samples} samples failed with exit {proc.returncode}")
    row = json.loads(out)
    row.update(samples=samples, peak_rss_mb=usage.ru_maxrss / 1024,
               seconds=time.perf_counter() - started)
    return row


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--samples", type=int, nargs="+", default=[10**7, 10**9])
    args = parser.parse_args(argv)
    rows = []
    for n in args.samples:
        rows.append(measure(n))
        r = rows[-1]
        print(f"samples {n:>14,}: peak {r['peak_rss_mb']:.0f} MB, {r['runs']:,} runs, "
              f"{r['seconds']:.1f} s, {r['verdict']} eps >= {r['bound']:.4f}", flush=True)
    ratio = rows[-1]["peak_rss_mb"] / rows[0]["peak_rss_mb"]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "memory.json").write_text(json.dumps({"rows": rows, "ratio": ratio}, indent=2))
    lines = ["# Peak memory against sample count", "",
             f"Batched Laplace audit (claim ε = 1, exact: every stage runs), default backend, "
             f"each in a fresh process, on {os.cpu_count()} CPUs ({cpu_model()}). Peak = the "
             "child's maximum resident set size.", "",
             "| certifying samples per input | mechanism runs | peak RSS (MB) | seconds | "
             "certified ε ≥ |", "|--:|--:|--:|--:|--:|"]
    lines += [f"| {r['samples']:,} | {r['runs']:,} | {r['peak_rss_mb']:.0f} | "
              f"{r['seconds']:.1f} | {r['bound']:.4f} |" for r in rows]
    lines += ["", f"Peak at {rows[-1]['samples']:,} / peak at {rows[0]['samples']:,}: "
              f"**{ratio:.3f}** (target ≤ 1.2: {'holds' if ratio <= 1.2 else 'misses'})."]
    (args.out / "memory.md").write_text("\n".join(lines) + "\n")
    print(f"ratio {ratio:.3f}; wrote {args.out / 'memory.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
