"""Census of the DP libraries people ship: the public mechanisms, algorithms and aggregations
of the installed OpenDP, diffprivlib, Google's DP library (python-dp), PipelineDP and Tumult
Core, each audited at its own claim and at half of it.

What is measured
    Each case (scripts/_census_<library>.py) builds one library mechanism at a small
    representative configuration through its adapter (dpverify.libraries.<library>), which
    reads the claim from the library object and builds the neighbouring pairs, corners
    included (the empty dataset, a record no other record resembles, records at the bounds). It is audited twice with `dpverify.audit(mech,
    samples=S, seed=0)`: at the claim the library states, and at half of it (ε/2 with the same δ,
    or ρ/2 for a zCDP claim). A correct mechanism should pass the first (a violation there is a
    finding against the library, shown with its witness) and be flagged by the second: a
    mechanism that is exactly as private as it claims is not private at half of that, so a
    pass at half the claim means the audit lacked power (or the library's claim is loose).

    False findings. Many library mechanisms are exactly as private as they claim, so an
    audit at confidence 0.95 flags each one with probability up to 5%: over ~90 cases four or
    five would be listed as failing by chance. The audits at the claim therefore run at confidence
    1 − (1 − C)/N for N cases (Bonferroni), so that the chance of listing ANY correct case as
    failing its claim is at most 1 − C over the whole census (C = --confidence, default 0.95).
    The audits at half the claim run at C: there a flag is the expected outcome.

Output
    DIR/libraries.md    one table per library: constructor, configuration, claim, pairs, verdict
                        and certified bound at the claim and at half of it, runs, seconds
    DIR/libraries.json  the same, with every result's as_dict()

Usage: python scripts/libraries.py --out DIR [--only LIBRARY] [--seed S] [--from-json]
"""
from __future__ import annotations

import argparse
import importlib
import json
import sys
import time
from pathlib import Path

import dpverify
from dpverify.errors import DpVerifyError
from dpverify.result import jsonable
from _machine import machine_meta, package_version

LIBRARIES = {"opendp": "_census_opendp", "diffprivlib": "_census_diffprivlib",
             "pydp": "_census_pydp", "pipelinedp": "_census_pipelinedp", "tumult": "_census_tumult"}
# the PyPI distribution each census reads its version from
DISTRIBUTIONS = {"opendp": "opendp", "diffprivlib": "diffprivlib", "pydp": "python-dp",
                 "pipelinedp": "pipeline-dp", "tumult": "tmlt.core"}


def claim_of(mech) -> dict:
    """The claim the adapter read from the library: {"epsilon", "delta"} or {"zcdp"}."""
    if mech.zcdp is not None:
        return {"zcdp": mech.zcdp}
    return {"epsilon": mech.epsilon, "delta": mech.delta}


def halved(claim: dict) -> dict:
    """The audit's keyword arguments for half the claim."""
    if "zcdp" in claim:
        return {"zcdp": claim["zcdp"] / 2}
    return {"epsilon": claim["epsilon"] / 2, "delta": claim["delta"]}


def bound_of(result) -> float:
    """The certified lower bound in the claim's own terms (ρ for zCDP results, else ε)."""
    rho = getattr(result, "rho_lower_bound", None)
    return rho if rho is not None else result.epsilon_lower_bound


def audit_once(mech, samples: int, seed: int, **options) -> dict:
    """One audit as a table cell: verdict, bound, runs, seconds and the result's dict."""
    started = time.perf_counter()
    try:
        result = dpverify.audit(mech, samples=samples, seed=seed, **options)
    except DpVerifyError as exc:
        return {"verdict": "error", "error": f"{type(exc).__name__}: {exc}",
                "seconds": time.perf_counter() - started}
    return {"verdict": result.verdict, "outcome": result.outcome, "bound": bound_of(result),
            "runs": result.samples,
            "seconds": time.perf_counter() - started, "result": result.as_dict(),
            "summary": result.summary()}


def run_case(library: str, case, seed: int, log, confidence: float, per_case: float) -> dict:
    """Audit one case at its claim (at confidence `per_case`) and at half of it (at
    `confidence`)."""
    constructor, configuration, build, samples = case
    row = {"library": library, "constructor": constructor, "configuration": configuration,
           "samples": samples}
    try:
        mech = build()
    except DpVerifyError as exc:
        row["error"] = f"{type(exc).__name__}: {exc}"
        log(f"  {constructor}: cannot be audited: {row['error']}")
        return row
    claim = claim_of(mech)
    row.update(name=mech.name, claim=claim, randomness=mech.randomness,
               pairs=[[repr(compact(d)) for d in pair]
                      for pair in dpverify.pairs.normalize(mech.pairs)])
    row["at_claim"] = audit_once(mech, samples, seed, confidence=per_case)
    row["at_half"] = audit_once(mech, samples, seed, confidence=confidence, **halved(claim))
    log(f"  {constructor} [{configuration}] {fmt_claim(claim)}: at claim "
        f"{fmt_cell(row['at_claim'])}; at half {fmt_cell(row['at_half'])}")
    return row


def fmt_claim(claim: dict) -> str:
    if "zcdp" in claim:
        return f"ρ = {claim['zcdp']:.4g} (zCDP)"
    return f"ε = {claim['epsilon']:.4g}" + (f", δ = {claim['delta']:.3g}" if claim["delta"] else "")


def fmt_cell(cell: dict) -> str:
    if cell["verdict"] == "error":
        return "error"
    return (f"{cell.get('outcome', cell['verdict'])} (≥ {cell['bound']:.4g}, {cell['runs']:,} runs, "
            f"{cell['seconds']:.1f} s)")


def fmt_pairs(pairs: list, most: int = 2) -> str:
    shown = "; ".join(f"{a} vs {b}" for a, b in pairs[:most])
    return shown + (f"; +{len(pairs) - most} more" if len(pairs) > most else "")


def md_escape(text: str) -> str:
    """One table-safe line: pipes escaped, runs of white space (array reprs) folded."""
    return " ".join(str(text).split()).replace("|", "\\|")


def compact(value):
    """An input as plain Python: numpy arrays (also inside tuples and lists) as lists."""
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, (tuple, list)):
        return type(value)(compact(v) for v in value)
    return value


def table(rows: list[dict]) -> list[str]:
    """One Markdown table of a library's rows."""
    lines = ["| constructor | configuration | claim | pairs | at its claim | at half its claim "
             "| runs | seconds |", "|---|---|---|---|---|---|--:|--:|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| `{r['constructor']}` | {md_escape(r['configuration'])} | | | "
                         f"not audited: {md_escape(r['error'])} | | | |")
            continue
        full, half = r["at_claim"], r["at_half"]
        runs = sum(c.get("runs", 0) for c in (full, half))
        seconds = sum(c["seconds"] for c in (full, half))
        lines.append(
            f"| `{r['constructor']}` | {md_escape(r['configuration'])} | {fmt_claim(r['claim'])} "
            f"| {md_escape(fmt_pairs(r['pairs']))} | {cell_md(full, flagged_is_good=False)} "
            f"| {cell_md(half, flagged_is_good=True)} | {runs:,} | {seconds:.1f} |")
    return lines


def cell_md(cell: dict, flagged_is_good: bool) -> str:
    if cell["verdict"] == "error":
        return f"error: {md_escape(cell['error'])}"
    text = f"{cell.get('outcome', cell['verdict'])}, ≥ {cell['bound']:.4g}"
    bad = (cell["verdict"] == "violation") != flagged_is_good
    return f"**{text}**" if bad else text


def findings(rows: list[dict], checked: dict) -> list[str]:
    """Witnesses of every case that fails its own claim, for a maintainer to file, with what
    was checked to be sure it is the library's fault (`checked`: constructor → text)."""
    out = []
    for r in rows:
        cell = r.get("at_claim", {})
        if cell.get("verdict") == "violation":
            witness = cell["result"]["witness"]
            out += [f"### {r['library']} `{r['constructor']}` ({md_escape(r['configuration'])})",
                    "", "```", cell["summary"], "```", "",
                    f"Pair in full: D = `{md_escape(witness['D'])}`, "
                    f"D′ = `{md_escape(witness['D_prime'])}`.", "",
                    "Checked: " + checked.get(r["constructor"], "nothing beyond this audit yet: "
                                              "re-audit with another seed before filing."), ""]
    return out


def not_flagged(rows: list[dict]) -> list[str]:
    """One bullet per reason: the rows not flagged at half their claim that share a reason
    (e.g. one library's quantile algorithms), then the reason once."""
    by_reason: dict = {}
    for r in rows:
        reason = r.get("half_claim_note", "No reason known: the audit lacked power at this "
                                          "budget")
        by_reason.setdefault(reason, []).append(
            f"`{r['constructor']}` ({md_escape(r['configuration'])}): "
            + ("error" if r["at_half"]["verdict"] == "error" else fmt_cell(r["at_half"])))
    return [f"- {'; '.join(cells)}. " + ("" if reason.startswith("No reason") else "Why: ")
            + f"{reason}." for reason, cells in by_reason.items()]


def write_markdown(path: Path, rows: list[dict], meta: dict, checked: dict) -> None:
    audited = [r for r in rows if "at_claim" in r]
    half_missed = [r for r in audited if r["at_half"]["verdict"] != "violation"]
    failed = [r for r in audited if r["at_claim"]["verdict"] == "violation"]
    lines = ["# Census of DP libraries", "",
             f"Measured on {meta['date']} on {meta['cpu_model']}, {meta['cpu_count']} CPUs; "
             f"Python {meta['python']}, numpy {meta['numpy']}, dpverify {meta['dpverify']}; "
             + ", ".join(f"{lib} {v}" for lib, v in meta["libraries"].items())
             + f". Seed {meta['seed']}; total {meta['seconds']:.0f} s.", "",
             f"{len(audited)} cases audited at their own claim and at half of it: "
             f"{len(failed)} fail their own claim, {len(audited) - len(half_missed)} of "
             f"{len(audited)} are flagged at half their claim. The audits at the claim run at "
             f"confidence {meta['confidence_at_claim']:.5f} each, so the chance that any correct "
             f"case is listed as failing its claim is at most {1 - meta['confidence']:.2g} over "
             "the whole census; those at half the claim at "
             f"{meta['confidence']:g}. Bold marks "
             "what a correct, tightly claimed mechanism should not show: a violation at its "
             "claim, or a pass at half of it.", ""]
    for library in meta["libraries"]:
        own = [r for r in rows if r["library"] == library]
        if own:
            lines += [f"## {library}", ""] + table(own) + [""]
    lines += ["## Failures of the library's own claim", ""]
    lines += findings(rows, checked) or ["None found at this budget.", ""]
    lines += ["## Not flagged at half the claim", ""]
    lines += not_flagged(half_missed) or ["None."]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def attach_notes(rows: list[dict], notes: dict) -> list[dict]:
    """Give each row whose half-claim pass has a known reason that reason."""
    for row in rows:
        if row["constructor"] in notes:
            row["half_claim_note"] = notes[row["constructor"]]
    return rows


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, type=Path, help="directory for libraries.md/.json")
    p.add_argument("--only", choices=sorted(LIBRARIES),
                   help="audit one library only; the other libraries' rows are kept from "
                        "OUT/libraries.json when it was run at the same seed and number of cases")
    p.add_argument("--from-json", action="store_true",
                   help="audit nothing: write libraries.md again from OUT/libraries.json "
                        "(with the census modules' current notes)")
    p.add_argument("--seed", type=int, default=0, help="root seed of every audit (default 0)")
    p.add_argument("--confidence", type=float, default=0.95,
                   help="chance that no correct case is listed as failing its claim, over the "
                        "whole census (default 0.95); also each half-claim audit's confidence")
    return p.parse_args(argv)


def previous_rows(path: Path, per_case: float, seed: int) -> tuple[list[dict], dict]:
    """The rows and per-library seconds of an earlier census in `path`, when it was run at the
    same seed and per-case confidence (the same number of cases); else none."""
    if not path.exists():
        return [], {}
    document = json.loads(path.read_text(encoding="utf-8"))
    meta = document["meta"]
    if meta.get("seed") != seed or abs(meta.get("confidence_at_claim", 0) - per_case) > 1e-12:
        print(f"{path}: an earlier census at another seed or number of cases; its rows are "
              "dropped", flush=True)
        return [], {}
    return document["rows"], meta.get("seconds_by_library", {})


def main(argv=None) -> int:
    args = parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    censuses = {library: importlib.import_module(module) for library, module in LIBRARIES.items()}
    versions = {library: package_version(DISTRIBUTIONS[library]) for library in LIBRARIES}
    notes, checked = {}, {}
    for census in censuses.values():
        notes.update(getattr(census, "HALF_CLAIM_NOTES", {}))
        checked.update(getattr(census, "FINDINGS_CHECKED", {}))
    json_path = args.out / "libraries.json"
    if args.from_json:
        document = json.loads(json_path.read_text(encoding="utf-8"))
        write_markdown(args.out / "libraries.md", attach_notes(document["rows"], notes),
                       document["meta"], checked)
        return 0
    # the correction counts every case of the census, also when --only audits one library
    cases = [(library, case) for library, census in censuses.items() for case in census.cases()]
    per_case = 1 - (1 - args.confidence) / len(cases)
    kept, seconds = previous_rows(json_path, per_case, args.seed) if args.only else ([], {})
    print(f"{len(cases)} cases of {versions}; audits at the claim at confidence {per_case:.5f}",
          flush=True)
    rows = {library: [r for r in kept if r["library"] == library] for library in LIBRARIES}
    for library in LIBRARIES:
        if args.only not in (None, library):
            continue
        started = time.perf_counter()
        rows[library] = [run_case(library, case, args.seed, lambda m: print(m, flush=True),
                                  args.confidence, per_case) for lib, case in cases
                         if lib == library]
        seconds[library] = time.perf_counter() - started
    rows = attach_notes([r for library in LIBRARIES for r in rows[library]], notes)
    meta = {**machine_meta(), "libraries": versions, "seed": args.seed,
            "confidence": args.confidence, "confidence_at_claim": per_case,
            "seconds_by_library": seconds, "seconds": sum(seconds.values())}
    json_path.write_text(
        json.dumps(jsonable({"rows": rows, "meta": meta}), indent=2, ensure_ascii=False) + "\n",
        encoding="utf-8")
    write_markdown(args.out / "libraries.md", rows, meta, checked)
    print(f"total {meta['seconds']:.0f} s; wrote {args.out / 'libraries.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
