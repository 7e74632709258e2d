"""Detection cost: the runs an ordinary audit spends until its first certified violation, beside
the runs an oracle that knew the best pair and event would need.

Every broken mechanism of the zoo, the DP-Sniper set and the floating-point Laplace, audited
by `dpverify.audit(mech, seed=s)` per seed (the oracle, the checks on SVT3–6 and RNM3–4:
docs/results.md, "Detection: runs to the first violation"). Writes DIR/detection.json (after
every row) and .md. --passes audits the correct mechanisms of the zoo and the DP-Sniper set at
resolution=1.1 instead, beside an oracle (seeds as given), into the same files.

Usage: python scripts/detection.py --out DIR [--only NAME ...] [--seeds S ... (default 0 1 2 3 4)]
           [--reuse-oracle] [--oracle-runs N (default 10^7)] [--passes] [--rewrite-markdown]
"""
from __future__ import annotations

import argparse
import math
import statistics
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

from _common import machine_line, read_json, table, write_json  # puts the repository on the path

import numpy as np  # noqa: E402

import dpverify  # noqa: E402
from dpverify.evidence import lower_bound_text  # noqa: E402
from dpverify.stats import detectable_epsilon  # noqa: E402
from _machine import machine_meta  # noqa: E402
from mechanisms_under_test import CORRECT, TRUE_EPSILON, ZOO  # noqa: E402
from mechanisms_under_test.dpsniper import (CORRECT_DPSNIPER, DPSNIPER,  # noqa: E402
                                            TRUE_EPSILON_DPSNIPER)
from mechanisms_under_test.floating_point import (TRUE_EPSILON_FLOATING,  # noqa: E402
                                                   numpy_laplace)

SEEDS = (0, 1, 2, 3, 4)
PASS_TARGET = 1.1                 # --passes: the resolution asked, × the claim
CONFIDENCE = 0.95                 # the oracle's confidence (the audits' default too)
MEASURE_SAMPLES = 1 << 20         # runs per input of the measurement run that names the event
REFERENCE_SAMPLES = 1 << 18       # runs per input of the measurement run beside the headline
MEASURE_SEED = 1000
ORACLE_RUNS = 10_000_000          # fresh runs per input behind the oracle's rates
ORACLE_SEED = 20_250_611          # the oracle's own seed stream, apart from every audit's
ORACLE_CHUNK = 1 << 20
THRESHOLDS = 2000                 # thresholds swept per event (about)
GRID_STEP = 1.01                  # neighbouring sizes of the oracle's log grid differ by 1%
GRID_MAX = 1e13                   # the largest n the oracle tries
# the six rows and its two checks
CHECKED = ("svt3", "svt4", "svt5", "svt6", "rnm3", "rnm4")
MAX_MEDIAN_RATIO = 10.0
MAX_RATIO_EACH, FLOOR_RUNS = 30.0, 10_000
# The oracle (runs, both inputs) stated when the checks were set, from 2^21 runs per input; the
# checks take the smaller of it and this script's, so they are never easier than as set.
STATED_ORACLE = {"svt3": 40_000, "svt4": 80_000, "svt5": 190, "svt6": 12_500,
                 "rnm3": 15_000, "rnm4": 14_400}


def broken_mechanisms() -> dict:
    """name → (mechanism, true ε) of the zoo's and DP-Sniper's broken entries, numpy_laplace."""
    out = {}
    for mechs, truth, correct in ((ZOO, TRUE_EPSILON, CORRECT),
                                  (DPSNIPER, TRUE_EPSILON_DPSNIPER, CORRECT_DPSNIPER)):
        for name, mech in mechs.items():
            if name not in correct and truth[name] > mech.epsilon:
                out[name] = (mech, truth[name])
    out["numpy_laplace"] = (numpy_laplace, TRUE_EPSILON_FLOATING["numpy_laplace"])
    return out


def engine_meta() -> dict:
    """Which dpverify ran: its file, its tree's git commit, and whether it differs from it."""
    where = Path(dpverify.__file__).resolve().parent

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(where), *args], capture_output=True, text=True,
                              check=True).stdout.strip()

    meta = {"dpverify_file": str(where / "__init__.py"), "commit": None, "engine_modified": None}
    try:
        meta["commit"] = git("rev-parse", "HEAD")
        meta["engine_modified"] = bool(git("status", "--porcelain", "--", "."))
    except (OSError, subprocess.CalledProcessError):
        pass
    return meta


def summarize(audits: list[dict]) -> dict:
    """A row's medians over its seeds: runs to violation (a seed without one counting as +∞),
    min–max and count of the seeds that found one, and seconds."""
    found = [a["verdict"] == "violation" for a in audits]
    hits = [a["samples"] for a, f in zip(audits, found) if f]
    return {"runs_median": statistics.median(a["samples"] if f else math.inf
                                             for a, f in zip(audits, found)),
            "runs_min": min(hits) if hits else None, "runs_max": max(hits) if hits else None,
            "samples_median": float(np.median([a["samples"] for a in audits])),
            "violations": sum(found), "seeds_run": len(audits),
            "seconds_median": float(np.median([a["seconds"] for a in audits])),
            "headline_median": float(np.median([a["epsilon_lower_bound"] for a in audits])),
            "headline_min": min(a["epsilon_lower_bound"] for a in audits),
            "headline_max": max(a["epsilon_lower_bound"] for a in audits),
            "runs_total_median": float(np.median([a.get("runs_total", a["samples"])
                                                  for a in audits])),
            "marginal": sum(bool(a.get("marginal")) for a in audits)}


def audit_row(name: str, mech, seeds, log) -> dict:
    """Every seed's default audit of one mechanism."""
    audits = []
    for seed in seeds:
        started = time.perf_counter()
        r = dpverify.audit(mech, seed=seed, progress=False)
        # runs to the first proof; the audit then measures the violation (`runs_total`)
        proof = r.samples if r.proof_runs is None else r.proof_runs
        audits.append({"seed": seed, "samples": int(proof), "verdict": r.verdict,
                       "runs_total": int(r.samples), "marginal": bool(r.marginal),
                       "epsilon_lower_bound": float(r.epsilon_lower_bound),
                       "seconds": time.perf_counter() - started, "stages": len(r.stages),
                       "certificate": r.witness.certificate if r.witness else None})
        log(f"  {name} seed {seed}: {r.verdict} after {r.samples:,} runs, "
            f"{audits[-1]['seconds']:.1f} s")
    return {"audits": audits, **summarize(audits)}


def signed_scores(mech, data, cand, runs: int, stream: int) -> np.ndarray:
    """Sorted signed scores of `cand` on `runs` fresh runs of `mech` on `data` (seed stream
    `stream` of ORACLE_SEED), encoded as the engine encodes them."""
    from dpverify.mechanism import as_mechanism
    from dpverify.sampling import draw_outputs
    from dpverify.sampling.encoding import encode

    m = as_mechanism(mech)
    rng = np.random.default_rng(np.random.SeedSequence(ORACLE_SEED, spawn_key=(stream,)))
    parts = []
    for start in range(0, runs, ORACLE_CHUNK):
        size = min(ORACLE_CHUNK, runs - start)
        enc, _ = encode(draw_outputs(m, data, rng, size, start), size, start, batched=m.batched)
        parts.append(cand.signed_scores(enc).astype(np.float64))
    return np.sort(np.concatenate(parts))


def thresholds(sp: np.ndarray, sq: np.ndarray) -> np.ndarray:
    """About THRESHOLDS thresholds for {signed score ≥ t}: every distinct score when there are
    few, else quantiles of both inputs' scores dense in the high tail, and the point just past
    Q's largest score (the event of largest p with q = 0)."""
    finite = np.concatenate([sp[np.isfinite(sp)], sq[np.isfinite(sq)]])
    if finite.size == 0:
        return np.array([np.inf])
    distinct = np.unique(finite)
    if distinct.size <= THRESHOLDS:
        return distinct
    tail = np.geomspace(1.0 / sp.size, 1.0, THRESHOLDS * 3 // 4)
    other = np.geomspace(1.0 / sq.size, 1.0, THRESHOLDS // 4)
    ts = [np.quantile(sp[np.isfinite(sp)], 1.0 - tail), np.quantile(finite, 1.0 - other)]
    q_max = sq[np.isfinite(sq)]
    if q_max.size:
        ts.append([np.nextafter(q_max[-1], np.inf)])
    return np.unique(np.concatenate(ts))


def runs_needed(p: np.ndarray, q: np.ndarray, claim: float, delta: float,
                alpha: float) -> np.ndarray:
    """Per event with rates (p, q), by bisection, the smallest n of the log grid (∞ past
    GRID_MAX) at which its expected counts on n runs per input are certified above `claim` at
    level α by the ratio test (δ = 0) or two Clopper–Pearson bounds at α/2 each."""
    from dpverify.stats import certified_epsilon, ratio_epsilon_bound

    def certified(n: np.ndarray) -> np.ndarray:
        k_p, k_q = np.rint(n * p), np.rint(n * q)
        with np.errstate(all="ignore"):
            bound = certified_epsilon(k_p, n, k_q, n, delta, alpha / 2)
            if delta == 0:
                bound = np.maximum(bound, ratio_epsilon_bound(k_p, k_q, alpha))
        return np.nan_to_num(bound, nan=-np.inf) > claim

    grid = np.unique(np.ceil(GRID_STEP ** np.arange(0, math.log(GRID_MAX, GRID_STEP) + 1)))
    lo = np.zeros(p.size, dtype=np.int64)          # grid[lo] may fail
    hi = np.full(p.size, grid.size - 1, dtype=np.int64)
    ok_top, ok_low = certified(grid[hi]), certified(grid[lo])
    while np.any(hi - lo > 1):
        mid = (lo + hi) // 2
        ok = certified(grid[mid])
        hi, lo = np.where(ok, mid, hi), np.where(ok, lo, mid)
    return np.where(ok_low, grid[0], np.where(ok_top, grid[hi], np.inf))


def describe_input(data) -> str:
    """An input in a table cell: a sequence as (a, b, …), anything else as repr."""
    if isinstance(data, (list, tuple, np.ndarray)):
        return "(" + ", ".join(f"{v:g}" if isinstance(v, (int, float, np.number)) else repr(v)
                               for v in np.ravel(np.asarray(data)).tolist()) + ")"
    return f"({data:g})" if isinstance(data, (int, float, np.number)) else repr(data)


def oracle(mech, runs: int, log) -> dict:
    """The oracle on `mech`: a measurement run's best event, its rates on `runs` fresh runs per
    input over a sweep of thresholds, and the fewest runs that certify it at expected counts."""
    started = time.perf_counter()
    measured = dpverify.audit(mech, samples=MEASURE_SAMPLES, seed=MEASURE_SEED, stop_early=False,
                              progress=False)  # names the best pair, direction and event
    if measured.event is None:
        raise RuntimeError(f"{measured.mechanism}: the measurement run found no event")
    cand, first, second = measured.event, measured.witness.D, measured.witness.D_prime
    sp = signed_scores(mech, first, cand, runs, 2 * cand.pair + cand.direction)
    sq = signed_scores(mech, second, cand, runs, 2 * cand.pair + 1 - cand.direction)
    ts = thresholds(sp, sq)
    # the event's rates: the share of each input's (sorted) scores ≥ t, per threshold t
    p, q = ((s.size - np.searchsorted(s, ts, side="left")) / s.size for s in (sp, sq))
    need = runs_needed(p, q, mech.epsilon, mech.delta or 0.0, 1.0 - CONFIDENCE)
    best = int(np.argmin(need))
    out = {"pair": cand.pair, "p_input": describe_input(first), "q_input": describe_input(second),
           "direction": cand.direction, "measured_event": cand.describe(),
           "event": replace(cand, threshold=float(ts[best])).describe(), "model": cand.model.kind,
           "measured_bound": float(measured.epsilon_lower_bound),
           "measured_samples": int(measured.samples), "runs_per_input": runs,
           "thresholds": int(ts.size), "threshold": float(ts[best]), "p": float(p[best]),
           "q": float(q[best]), "n_per_input": float(need[best]),
           "total": 2 * float(need[best]), "seconds": time.perf_counter() - started}
    log(f"  oracle: {out['event']} at t = {out['threshold']:.6g}: p = {out['p']:.3g}, "
        f"q = {out['q']:.3g}, n = {out['n_per_input']:,.0f} per input, "
        f"{out['seconds']:.1f} s")
    return out


def measured_reference(mech) -> dict:
    """A measurement run at REFERENCE_SAMPLES runs per input, seed 0: the bound a run asked
    for the tightest bound gives, beside the ordinary audit's measured headline."""
    started = time.perf_counter()
    r = dpverify.audit(mech, samples=REFERENCE_SAMPLES, seed=0, stop_early=False, progress=False)
    return {"bound": float(r.epsilon_lower_bound), "runs": int(r.samples),
            "seconds": time.perf_counter() - started}


def fmt_eps(x) -> str:
    return "∞" if math.isinf(float(x)) else f"{float(x):.3g}"


def fmt_runs(x) -> str:
    """A count of runs in a table cell (— for none, ∞ for none found)."""
    if x is None:
        return "—"
    return "∞" if math.isinf(float(x)) else f"{float(x):,.0f}"


def check_oracle(row: dict) -> float:
    """The smaller of this script's oracle and the stated one (`STATED_ORACLE`)."""
    return min(row["oracle"]["total"], STATED_ORACLE.get(row["mechanism"], math.inf))


def ratio(row: dict) -> float | None:
    """Median runs to violation over the oracle's runs (None without an oracle)."""
    o = row.get("oracle")
    if not o or not math.isfinite(o["total"]) or o["total"] <= 0:
        return None
    return row["runs_median"] / check_oracle(row)


def main_cells(row: dict) -> list[str]:
    """One mechanism's cells of the main table."""
    r, name = ratio(row), row["mechanism"]
    runs = ("none found" if row["runs_min"] is None else f"{fmt_runs(row['runs_median'])} "
            f"({fmt_runs(row['runs_min'])}–{fmt_runs(row['runs_max'])})")
    oracle = fmt_runs(row["oracle"]["total"]) if row.get("oracle") else "—"
    if row.get("oracle") and name in STATED_ORACLE:
        oracle += f" (stated {STATED_ORACLE[name]:,})"
    return [name, fmt_eps(row["claimed_epsilon"]), fmt_eps(row["true_epsilon"]), runs,
            f"{row['violations']} of {row['seeds_run']}", oracle,
            "—" if r is None else ("∞" if math.isinf(r) else f"{r:.1f}×")]


def headline_cells(row: dict) -> list[str]:
    """One mechanism's cells of the measured-headline table."""
    ref = row.get("measured_reference")
    share = (f"{row['headline_median'] / ref['bound']:.2f}" if ref and ref["bound"] > 0
             and math.isfinite(ref["bound"]) else "—")
    def bound(x: float) -> str:  # a certified lower bound, rounded down as the audit writes it
        return lower_bound_text(float(x), row["claimed_epsilon"])
    return [row["mechanism"], fmt_eps(row["true_epsilon"]),
            f"{bound(row['headline_median'])} ({bound(row['headline_min'])}–"
            f"{bound(row['headline_max'])})", f"{row['marginal']} of {row['seeds_run']}",
            fmt_runs(row["runs_total_median"]), f"{row['seconds_median']:.1f}",
            bound(ref["bound"]) if ref else "—", fmt_runs(ref["runs"]) if ref else "—", share]


def oracle_cells(row: dict) -> list[str]:
    """One mechanism's cells of the oracle table."""
    o = row["oracle"]
    return [row["mechanism"], f"P = M{o['p_input']}, Q = M{o['q_input']}", o["measured_event"],
            o["event"], f"{o['p']:.3g}", f"{o['q']:.3g}", fmt_runs(o["n_per_input"]),
            fmt_eps(o["measured_bound"])]


def checks(rows: list[dict]) -> list[str]:
    """The issue's two checks on the CHECKED rows: the median ratio, and each row's limit."""
    by_name = {r["mechanism"]: r for r in rows}
    present = [by_name[n] for n in CHECKED if by_name.get(n, {}).get("oracle")]
    missing = [n.upper() for n in CHECKED if n not in by_name]
    if not present:
        return ["Checks: none of the six rows (SVT3–6, RNM3–4) was run."]
    cells, ratios = [], []
    for r in present:
        limit = max(MAX_RATIO_EACH * check_oracle(r), FLOOR_RUNS)
        over = [str(a["seed"]) for a in r["audits"]
                if a["verdict"] != "violation" or a["samples"] > limit]
        ratios.append(r["runs_median"] / check_oracle(r))
        cells.append([r["mechanism"].upper(), fmt_runs(check_oracle(r)), f"{ratios[-1]:.1f}×",
                      fmt_runs(limit), "PASS" if r["runs_median"] <= limit else "FAIL",
                      ", ".join(over) or "none"])
    median = float(np.median(ratios))
    return [f"Median ratio to the oracle over {', '.join(c[0] for c in cells)}: "
            f"**{median:.1f}×** (≤ {MAX_MEDIAN_RATIO:g}×: "
            f"**{'PASS' if median <= MAX_MEDIAN_RATIO else 'FAIL'}**)."
            + (f" Not run, so not checked: {', '.join(missing)}." if missing else ""), "",
            *table(["row", "oracle", "ratio", f"limit: max({MAX_RATIO_EACH:g} × oracle, "
                    f"{FLOOR_RUNS:,})", "median within it", "seeds over it"], cells,
                   align="lrrrll"), "",
            "*Oracle*: the smaller of this script's and the one stated when the checks were "
            "set (`STATED_ORACLE`)."]


def header(meta: dict) -> list[str]:
    """The report's title, what it measured, and with which engine on which machine."""
    eng = meta["engine"]

    def at(engine: dict) -> str:
        local = " (with local changes)" if engine.get("engine_modified") else ""
        return str(engine.get("commit"))[:7] + local

    return [
        "# Detection: runs to the first certified violation, beside an oracle", "",
        "Each broken mechanism (true ε > claimed ε: the zoo's, the DP-Sniper set's and the "
        "floating-point Laplace), audited as an ordinary audit at default settings, seeds "
        f"{', '.join(map(str, meta['seeds']))}, beside an oracle that knows the best pair and "
        f"event of a measurement run and their rates on {meta['oracle_runs']:,} fresh runs per "
        f"input, and certifies that one event at confidence {CONFIDENCE:g}."
        " How the oracle is computed, and why: "
        "[docs/results.md](../docs/results.md#detection-runs-to-the-first-violation).", "",
        f"Engine: `{eng['dpverify_file']}` at commit {at(eng)}. {machine_line(meta)} The script "
        f"ran {meta.get('wall_seconds', 0):.0f} s" + ("" if meta.get("complete") else
                                                      " (partial run)") + ".", ""]


def oracle_pass_runs(mass: float, claim: float, delta: float, target: float) -> float:
    """Runs (both inputs) an oracle needs for a pass of resolution `target` × claim: it counts
    one event of rarer-side rate `mass` chosen in advance, both bounds at α/2; the least n
    with `stats.detectable_epsilon(mass, n, n, claim, δ, α/2)` ≤ target · claim, by bisection."""
    level = (1 - CONFIDENCE) / 2

    def reaches(n: int) -> bool:
        return detectable_epsilon(mass, n, n, claim, delta, level) <= target * claim
    high = 1 << 10
    while not reaches(high):
        if high > 1 << 34:
            return math.inf
        high *= 2
    low = high // 2
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if reaches(mid) else (mid, high)
    return 2.0 * high


def passes_section(passes: list[dict]) -> list[str]:
    """Per correct mechanism, its resolution-sized passes beside the oracle's runs."""
    if not passes or "oracle_runs" not in passes[0]["audits"][0]:
        return []
    cells = []
    for row in passes:
        a = row["audits"]
        passed = [x for x in a if x["verdict"] == "pass"]
        ratios = [x["samples"] / x["oracle_runs"] for x in a]
        cells.append([row["mechanism"], f"{row['claim']:g}", f"{len(passed)} of {len(a)}",
                      f"{sum(x['target_reached'] for x in passed)} of {len(passed)}",
                      f"{statistics.median(x['resolution'] for x in a) / row['claim']:.3f}",
                      f"{statistics.median(x['samples'] for x in a):,.0f}",
                      f"{statistics.median(x['oracle_runs'] for x in a):,.0f}",
                      f"{statistics.median(ratios):.2f} ({min(ratios):.2f}–{max(ratios):.2f})",
                      f"{row['default_samples']:,}"])
    seeds = ", ".join(str(x["seed"]) for x in passes[0]["audits"])
    return [f"## Pass cost: correct mechanisms at resolution {PASS_TARGET} × the claim", "",
            *table(["mechanism", "claimed ε", "passes", "target reached",
                    "resolution / claim (median)", "runs (median)", "oracle runs (median)",
                    "ratio to oracle, median (min–max)", "default budget's runs (seed 0)"],
                   cells, align="lrllrrrrr"), "",
            f"`dpverify.audit(mech, resolution={PASS_TARGET}, seed=s)` for the correct "
            f"mechanisms of the zoo and the DP-Sniper set, seeds {seeds}. *Runs*: every "
            "mechanism call. *Oracle*: counts only the audit's own witness event, known in "
            "advance, with both Clopper–Pearson bounds at α/2 = 0.025; its runs are 2·n for the "
            "least n whose resolution on that event's rarer-side rate reaches the target "
            "(`stats.detectable_epsilon`). *Target reached*: of the passes (a violation of a "
            "correct mechanism is a false alarm, at most 1 − confidence = 5% of audits). "
            "*Default budget*: the same audit without a target.", ""]


def write_markdown(path: Path, rows: list[dict], meta: dict) -> None:
    """detection.md from the JSON's rows and meta."""
    lines = header(meta) + [
        *table(["mechanism", "claimed ε", "true ε", "runs to violation, median (min–max)",
                "violations found", "oracle runs (both inputs)", "ratio to oracle"],
               [main_cells(r) for r in rows]), "",
        "*Runs to violation*: every run up to the first certified violation (`result."
        "proof_runs`, else `result.samples`), median over "
        "the seeds (a seed without one counting as more than any), min–max over the seeds that "
        "found one. *Oracle runs*: 2·n, both inputs. *Ratio*: median runs to violation / the "
        "smaller of the two oracles.", "",
        "## Checks (SVT3, SVT4, SVT5, SVT6, RNM3, RNM4)", "", *checks(rows), "",
        "## How broken: the headline bound, measured after the proof", "",
        *table(["mechanism", "true ε", "headline ε, median (min–max)", "marginal",
                "runs in total (median)", "seconds (median)",
                f"`--measure` at 2^{REFERENCE_SAMPLES.bit_length() - 1} (seed 0)",
                "its runs", "headline / measure"], [headline_cells(r) for r in rows]), "",
        "*Headline*: the bound the same ordinary audits report, measured on fresh runs after "
        "the proof (docs/method.md, \"Measuring a proved violation\"); *runs in total*: proof "
        "and measurement.", "",
        *passes_section(meta.get("passes", [])),
        "## The oracle's events", "",
        *table(["mechanism", "pair and direction", "measured event", "oracle's event", "p", "q",
                "oracle n per input", "measured bound"],
               [oracle_cells(r) for r in rows if r.get("oracle")], align="llllrrrr"), "",
        "Per mechanism: the measurement run's best event, the same family at the threshold the "
        f"oracle chose, its rates p and q on {meta['oracle_runs']:,} runs per input, the "
        "oracle's runs per input, and the measurement run's own certified bound."]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def save(path: Path, rows: list[dict], meta: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json(path, {"rows": rows, "meta": meta})


def load(path: Path) -> tuple[list[dict], dict]:
    """Rows and meta of a detection JSON, with the "inf" strings of `save` back to floats."""
    doc = read_json(path)
    return doc["rows"], doc["meta"]


def parse(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add = parser.add_argument
    add("--out", type=Path, help="directory for detection.json and .md")
    add("--only", nargs="+", metavar="NAME", choices=list(broken_mechanisms()))
    add("--seeds", nargs="+", type=int, default=list(SEEDS))
    add("--reuse-oracle", action="store_true",
        help="each row's oracle and --measure reference from DIR/detection.json")
    add("--oracle-runs", type=int, default=ORACLE_RUNS, help="fresh runs per input behind the "
        f"oracle (default {ORACLE_RUNS:,})")
    add("--rewrite-markdown", action="store_true", help="only DIR/detection.md from its JSON")
    add("--passes", action="store_true", help="only the zoo's correct mechanisms, into "
        "DIR/detection.json")
    args = parser.parse_args(argv)
    if not args.out:
        parser.error("--out DIR is required")
    return args


def main(argv=None) -> int:
    args = parse(argv)
    log = lambda text: print(text, flush=True)  # noqa: E731
    if args.rewrite_markdown:
        write_markdown(args.out / "detection.md", *load(args.out / "detection.json"))
        return 0
    if args.passes:
        return run_passes(args, log)
    started, mechs = time.perf_counter(), broken_mechanisms()
    meta = {**machine_meta(), "engine": engine_meta(), "seeds": args.seeds,
            "oracle_runs": args.oracle_runs, "complete": False}
    log(f"dpverify from {meta['engine']['dpverify_file']} (commit {meta['engine']['commit']})")
    json_path = args.out / "detection.json"
    reused, reused_reference = {}, {}
    if args.reuse_oracle and json_path.exists():
        old = load(json_path)[0]
        reused = {r["mechanism"]: r["oracle"] for r in old if r.get("oracle")}
        reused_reference = {r["mechanism"]: r["measured_reference"] for r in old
                            if r.get("measured_reference")}
    rows = []

    def write() -> None:
        meta["wall_seconds"] = time.perf_counter() - started
        save(json_path, rows, meta)
        write_markdown(args.out / "detection.md", rows, meta)

    for name in (n for n in mechs if not args.only or n in args.only):
        mech, truth = mechs[name]
        log(f"{name}: claimed ε {mech.epsilon:g}, true ε {truth:g}")
        row = {"mechanism": name, "claimed_epsilon": mech.epsilon,
               "claimed_delta": mech.delta or 0.0, "true_epsilon": truth,
               **audit_row(name, mech, args.seeds, log)}
        row["oracle"] = reused.get(name) or oracle(mech, args.oracle_runs, log)
        row["ratio_to_oracle"] = ratio(row)
        row["measured_reference"] = reused_reference.get(name) or measured_reference(mech)
        rows.append(row)
        write()
    meta["complete"] = True
    write()
    log("\n".join(checks(rows)))
    log(f"total {meta['wall_seconds']:.0f} s; wrote {json_path}")
    return 0


def pass_audit(mech, seed: int, log) -> dict:
    """One resolution-sized pass of `mech` and the oracle's runs on its witness's event."""
    started = time.perf_counter()
    r = dpverify.audit(mech, seed=seed, resolution=PASS_TARGET, progress=False)
    w = r.witness
    mass = min(w.rate_D, 1.0 - w.rate_D_prime) if w is not None else 0.0
    oracle = oracle_pass_runs(mass, r.claimed_epsilon, r.claimed_delta, PASS_TARGET)
    log(f"  {mech.name} seed {seed}: {r.verdict}, resolution {r.resolution:.4f}, "
        f"{r.samples:,} runs, oracle {oracle:,.0f}")
    return {"seed": seed, "verdict": r.verdict, "resolution": float(r.resolution),
            "target_reached": bool(r.target_reached), "samples": int(r.samples),
            "oracle_runs": oracle, "mass": mass, "seconds": time.perf_counter() - started}


def run_passes(args, log) -> int:
    """--passes: the correct mechanisms' resolution-sized passes beside the oracle, and each
    one's default audit at seed 0, into detection.json's meta."""
    correct = ([ZOO[n] for n in ZOO if n in CORRECT]
               + [DPSNIPER[n] for n in DPSNIPER if n in CORRECT_DPSNIPER])
    passes = []
    for mech in correct:
        audits = [pass_audit(mech, seed, log) for seed in args.seeds]
        default = dpverify.audit(mech, seed=0, progress=False)
        log(f"  {mech.name} default budget: {default.verdict}, {default.samples:,} runs")
        passes.append({"mechanism": mech.name, "claim": float(mech.epsilon), "audits": audits,
                       "default_samples": int(default.samples),
                       "default_verdict": default.verdict})
    rows, meta = load(args.out / "detection.json")
    meta["passes"] = passes
    save(args.out / "detection.json", rows, meta)
    write_markdown(args.out / "detection.md", rows, meta)
    log("\n".join(passes_section(passes)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
