"""Peak memory of audits (each in a fresh process: os.wait4's ru_maxrss), and the seconds of
string against number outputs: a batched Laplace audit at each --samples count (target: last
peak ≤ 1.2 × first); default audits of the zoo's 10-query SVTs, of SVT1 with string outputs and
of the whole zoo in one pytest process (≤ 1 GiB); a noisy threshold returning int64, a str
array and a list of str (strings ≤ 10× the seconds of numbers). Writes DIR/memory.json and
DIR/memory.md (how to read them: docs/results.md).

Usage: python scripts/memory.py --out DIR [--samples 10000000 1000000000] [--render-only]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import ROOT, read_json, table, write_json
from _machine import load_average, machine_meta

LIMIT_MIB = 1024
PEAK_RATIO_LIMIT = 1.2
STRING_SLOWDOWN_LIMIT = 10.0
DOCS = "[docs/results.md](../docs/results.md#overhead-throughput-and-memory)"
TARGETS = {  # each target of memory.json as the report states it
    "laplace_peak_ratio": "Laplace peak at {bounds} samples ≤ {limit:g}: **{value:.3f}**",
    "default_audit_peak_mib": "Every default audit below (10-query SVTs, the pytest session over "
                              "the zoo) ≤ 1 GiB = {limit} MiB: worst **{value:.0f} MiB**",
    "string_slowdown": "A string-output audit ≤ {limit:g}× the seconds of the same mechanism "
                       "returning numbers: worst **{value:.1f}×**"}
STRING_OUTPUTS = ("threshold_numbers", "threshold_str_array", "threshold_str_list")
CHILD = r"""
import json, sys, time
import numpy as np
import dpverify

kind, name, samples = sys.argv[1], sys.argv[2], int(sys.argv[3]) or None
TEN = dpverify.pairs.all_differ(length=10)
# SVT1 (Lyu et al. Alg. 1, c = 1, as the zoo's svt1): the position of the first noisy answer
# at or above the noisy threshold, 10 for none
def first_top(data, rng, size):
    q = np.asarray(data, dtype=float)
    rho = rng.laplace(0, 1 / 0.05, size)
    above = q + rng.laplace(0, 2 / 0.05, (size, 10)) >= 0.5 + rho[:, None]
    return np.where(above.any(axis=1), above.argmax(axis=1), 10)
TUPLES = [("⊥",) * k + ("⊤",) for k in range(10)] + [("⊥",) * 10]
ROWS = np.array([["⊥"] * k + ["⊤"] + ["-"] * (9 - k) for k in range(10)] + [["⊥"] * 10])

@dpverify.mechanism(epsilon=0.1, pairs=TEN)
def svt1_str_tuples(data, rng, size):
    return [TUPLES[k] for k in first_top(data, rng, size).tolist()]

@dpverify.mechanism(epsilon=0.1, pairs=TEN)
def svt1_str_array(data, rng, size):
    return ROWS[first_top(data, rng, size)]

FIVE = dpverify.pairs.one_differ(length=5)
def above(data, rng, size):  # a 0.5-DP noisy threshold: the sum has sensitivity 1
    return np.asarray(data, dtype=float).sum() + rng.laplace(0, 1 / 0.5, size) > 1.0

@dpverify.mechanism(epsilon=0.5, pairs=FIVE)
def threshold_numbers(data, rng, size):
    return above(data, rng, size).astype(np.int64)

@dpverify.mechanism(epsilon=0.5, pairs=FIVE)
def threshold_str_array(data, rng, size):
    return np.where(above(data, rng, size), "yes", "no")

@dpverify.mechanism(epsilon=0.5, pairs=FIVE)
def threshold_str_list(data, rng, size):
    return ["yes" if a else "no" for a in above(data, rng, size).tolist()]

if kind == "laplace":
    from mechanisms_under_test.basic import make_laplace
    mech = make_laplace(1.0)
elif kind == "zoo":
    from mechanisms_under_test import ZOO
    mech = ZOO[name]
else:
    mech = globals()[name]
started = time.perf_counter()
r = dpverify.audit(mech, samples=samples)
print(json.dumps({"verdict": r.verdict, "bound": r.epsilon_lower_bound, "runs": r.samples,
                  "per_side": r.samples_per_side, "audit_seconds": time.perf_counter() - started}))
"""

PYTEST_FILE = '''
import pytest
from mechanisms_under_test import ZOO


@pytest.mark.parametrize("name", list(ZOO))
def test_zoo(dp_audit, name):
    dp_audit(ZOO[name])
'''


def _run(cmd: list, env=None) -> tuple[str, int, float, float]:
    """Run a child; (stdout, exit code, its peak RSS in MiB, wall seconds)."""
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, text=True, env=env)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    return out, os.waitstatus_to_exitcode(status), usage.ru_maxrss / 1024, \
        time.perf_counter() - started


def measure(kind: str, name: str, samples: int = 0) -> dict:
    """One audit in a fresh process (CHILD): its result's figures, peak RSS and seconds."""
    out, code, peak, seconds = _run([sys.executable, "-c", CHILD, kind, name, str(samples)])
    if code != 0:
        raise SystemExit(f"audit of {kind} {name} failed with exit {code}")
    row = json.loads(out.strip().splitlines()[-1])
    row.update(name=name, samples=samples or None, peak_rss_mb=peak, seconds=seconds)
    print(f"{name} {samples or ''}: peak {peak:.0f} MiB, {row['runs']:,} runs, audit "
          f"{row['audit_seconds']:.1f} s, {row['verdict']} ε ≥ {row['bound']:.4f}", flush=True)
    return row


def measure_pytest() -> dict:
    """One pytest process auditing every ZOO mechanism through the plugin's fixture."""
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in [env.get("PYTHONPATH")] if p])
    with tempfile.TemporaryDirectory() as tmp:
        test_file = Path(tmp) / "test_zoo_default_audits.py"
        test_file.write_text(PYTEST_FILE)
        out, code, peak, seconds = _run(
            [sys.executable, "-m", "pytest", str(test_file), "-c", str(ROOT / "pyproject.toml"),
             "--rootdir", str(ROOT), "--dpverify-profile", "ci", "-p", "no:cacheprovider",
             "-q", "-rA"], env=env)
    if code not in (0, 1):  # 1: some (broken) mechanisms failed their audit, as expected
        raise SystemExit(f"pytest over the zoo exited {code}:\n{out[-2000:]}")
    zoo = {"peak_rss_mb": peak, "seconds": seconds, "passed": out.count("PASSED "),
           "failed": out.count("FAILED ")}
    print(f"pytest over the zoo: {zoo}", flush=True)
    return zoo


def target(limit: float, value: float) -> dict:
    return {"limit": limit, "value": value, "holds": value <= limit}


def measurements(samples: list[int]) -> dict:
    """Every measurement, as memory.json holds it (but the script's seconds)."""
    rows = [measure("laplace", "laplace", n) for n in samples]
    svts = [measure("zoo", f"svt{i}") for i in range(1, 7)]
    svts += [measure("user", "svt1_str_tuples"), measure("user", "svt1_str_array")]
    zoo = measure_pytest()
    strings = {name: measure("user", name) for name in STRING_OUTPUTS}
    base = strings["threshold_numbers"]["audit_seconds"]
    slowdown = {name: r["audit_seconds"] / base for name, r in strings.items()}
    ratio = rows[-1]["peak_rss_mb"] / rows[0]["peak_rss_mb"]
    worst_default = max([r["peak_rss_mb"] for r in svts] + [zoo["peak_rss_mb"]])
    targets = {"laplace_peak_ratio": target(PEAK_RATIO_LIMIT, ratio),
               "default_audit_peak_mib": target(LIMIT_MIB, worst_default),
               "string_slowdown": target(STRING_SLOWDOWN_LIMIT, max(slowdown.values()))}
    return {"rows": rows, "ratio": ratio, "svt": svts, "pytest_zoo": zoo, "strings": strings,
            "string_slowdown": slowdown, "targets": targets}


def render(doc: dict) -> str:
    """memory.md from the JSON document main writes."""
    rows, zoo, strings, meta = doc["rows"], doc["pytest_zoo"], doc["strings"], doc["meta"]
    bounds = f"{rows[-1]['samples']:,} / at {rows[0]['samples']:,}"
    targets = [f"- {TARGETS[k].format(**t, bounds=bounds)} ({'holds' if t['holds'] else 'MISSES'})."
               for k, t in doc["targets"].items()]
    lines = ["# Peak memory of audits", "",
             "Each audit in a fresh process (the pytest session: one for all its audits) on "
             f"{meta['cpu_count']} CPUs ({meta['cpu_model']}), default backend; peak = its "
             f"maximum resident set size. This run took {doc['script_seconds']:.0f} s. How to "
             f"read this report: {DOCS}.", "",
             "## Targets", ""] + targets + ["", "## Peak against sample count", "",
             "Batched Laplace audit (claim ε = 1, exact: every stage runs).", ""]
    lines += table(["certifying samples per input", "mechanism runs", "peak RSS (MiB)",
                    "seconds", "certified ε ≥"],
                   [[f"{r['samples']:,}", f"{r['runs']:,}", f"{r['peak_rss_mb']:.0f}",
                     f"{r['seconds']:.1f}", f"{float(r['bound']):.4f}"] for r in rows],
                   align="rrrrr")
    lines += ["", "## Default audits of 10-query SVTs", "",
              "`dpverify.audit(m)`: 2^22 certifying samples per input, 12 pairs; svt1..svt6 from "
              "the zoo, then SVT1 returning '⊥'/'⊤' tuples or a str array.", ""]
    lines += table(["mechanism", "peak RSS (MiB)", "audit seconds", "runs", "verdict",
                    "certified ε ≥"],
                   [[r["name"], f"{r['peak_rss_mb']:.0f}", f"{r['audit_seconds']:.1f}",
                     f"{r['runs']:,}", r["verdict"], f"{float(r['bound']):.4f}"]
                    for r in doc["svt"]], align="lrrrlr")
    lines += ["", "## pytest over the zoo", "",
              f"One `python -m pytest` process auditing all {zoo['passed'] + zoo['failed']} ZOO "
              "mechanisms through the plugin's `dp_audit` fixture at `--dpverify-profile ci` "
              f"(the default 2^22): peak **{zoo['peak_rss_mb']:.0f} MiB**, {zoo['seconds']:.0f} s, "
              f"{zoo['passed']} passed, {zoo['failed']} failed (the broken ones).", "",
              "## String against number outputs", "",
              "One correct noisy threshold (ε = 0.5, every stage runs) returning its yes/no "
              "answer three ways; audit seconds inside the child.", ""]
    lines += table(["output", "audit seconds", "× numbers", "runs", "peak RSS (MiB)"],
                   [[name, f"{r['audit_seconds']:.2f}", f"{doc['string_slowdown'][name]:.1f}",
                     f"{r['runs']:,}", f"{r['peak_rss_mb']:.0f}"] for name, r in strings.items()])
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--samples", type=int, nargs="+", default=[10**7, 10**9],
                        help="sample counts of the Laplace rows")
    parser.add_argument("--render-only", action="store_true",
                        help="measure nothing: write memory.md from OUT/memory.json")
    args = parser.parse_args(argv)
    if not args.render_only:
        started, meta = time.perf_counter(), machine_meta()
        doc = measurements(args.samples)
        doc["script_seconds"] = time.perf_counter() - started
        doc["meta"] = {**meta, "load_average_at_end": load_average()}
        args.out.mkdir(parents=True, exist_ok=True)
        write_json(args.out / "memory.json", doc)
    markdown = render(read_json(args.out / "memory.json"))
    (args.out / "memory.md").write_text(markdown, encoding="utf-8")
    print(f"wrote {args.out / 'memory.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())


