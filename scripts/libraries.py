"""Census of the DP libraries people ship: the public mechanisms of OpenDP, diffprivlib,
python-dp, PipelineDP and Tumult Core, and Opacus trainings (scripts/_census_*.py) through
their adapters, each audited at its claim at confidence 1 − (1 − C)/N for N cases (Bonferroni)
and at half its claim at C. Writes DIR/libraries.json and DIR/libraries.md; how to read them:
docs/libraries.md, "The census of the DP libraries".

No environment holds all six (Tumult Core pins sympy < 1.13, torch 2.13 needs sympy
>= 1.13.3): run the census where the first five are, then `--only opacus` where Opacus is; a
census module that cannot be imported keeps its rows from DIR/libraries.json.

Usage: python scripts/libraries.py --out DIR [--only LIBRARY] [--seed 0] [--confidence 0.95]
                                   [--render-only]
"""
from __future__ import annotations

import argparse
import ast
import importlib
import re
import sys
import time
from pathlib import Path

from _common import machine_line, read_json, table, write_json

import dpverify
from dpverify.errors import DpVerifyError
from _machine import machine_meta, package_version

LIBRARIES = {"opendp": "_census_opendp", "diffprivlib": "_census_diffprivlib",
             "pydp": "_census_pydp", "pipelinedp": "_census_pipelinedp", "tumult": "_census_tumult",
             "opacus": "_census_opacus"}
DOCS = "[docs/libraries.md](../docs/libraries.md#the-census-of-the-dp-libraries)"
# the PyPI distribution each census reads its version from
DISTRIBUTIONS = {"opendp": "opendp", "diffprivlib": "diffprivlib", "pydp": "python-dp",
                 "pipelinedp": "pipeline-dp", "tumult": "tmlt.core", "opacus": "opacus"}


def claim_and_half(mech) -> tuple[dict, dict]:
    """The adapter's claim, {"epsilon", "delta"} or {"zcdp"}, and the arguments at half of it."""
    if mech.zcdp is not None:
        return {"zcdp": mech.zcdp}, {"zcdp": mech.zcdp / 2}
    return ({"epsilon": mech.epsilon, "delta": mech.delta},
            {"epsilon": mech.epsilon / 2, "delta": mech.delta})


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
            "runs": result.samples, "seconds": time.perf_counter() - started,
            "result": result.as_dict(), "summary": result.summary()}


def run_case(library: str, case, seed: int, log, confidence: float, per_case: float) -> dict:
    """One case audited at its claim (at `per_case`) and at half of it (at `confidence`)."""
    constructor, configuration, build, samples = case
    row = {"library": library, "constructor": constructor, "configuration": configuration,
           "samples": samples}
    try:
        mech = build()
    except DpVerifyError as exc:
        row["error"] = f"{type(exc).__name__}: {exc}"
        log(f"  {constructor}: cannot be audited: {row['error']}")
        return row
    claim, half = claim_and_half(mech)
    row.update(name=mech.name, claim=claim, randomness=mech.randomness,
               pairs=[[repr(compact(d)) for d in pair]
                      for pair in dpverify.pairs.normalize(mech.pairs)])
    row["at_claim"] = audit_once(mech, samples, seed, confidence=per_case)
    row["at_half"] = audit_once(mech, samples, seed, confidence=confidence, **half)
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
    return (f"{cell.get('outcome', cell['verdict'])} (≥ {float(cell['bound']):.4g}, "
            f"{cell['runs']:,} runs, {cell['seconds']:.1f} s)")


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


def library_table(rows: list[dict]) -> list[str]:
    """One Markdown table of a library's rows."""
    cells = []
    for r in rows:
        if "error" in r:
            cells.append([f"`{r['constructor']}`", md_escape(r["configuration"]), "", "",
                          f"not audited: {md_escape(r['error'])}", "", "", ""])
            continue
        full, half = r["at_claim"], r["at_half"]
        cells.append([f"`{r['constructor']}`", md_escape(r["configuration"]),
                      fmt_claim(r["claim"]), md_escape(fmt_pairs(r["pairs"])),
                      cell_md(full, flagged_is_good=False), cell_md(half, flagged_is_good=True),
                      f"{sum(c.get('runs', 0) for c in (full, half)):,}",
                      f"{sum(c['seconds'] for c in (full, half)):.1f}"])
    return table(["constructor", "configuration", "claim", "pairs", "at its claim",
                  "at half its claim", "runs", "seconds"], cells, align="llllllrr")


def cell_md(cell: dict, flagged_is_good: bool) -> str:
    if cell["verdict"] == "error":
        return f"error: {md_escape(cell['error'])}"
    text = f"{cell.get('outcome', cell['verdict'])}, ≥ {float(cell['bound']):.4g}"  # "inf": ∞
    bad = (cell["verdict"] == "violation") != flagged_is_good
    return f"**{text}**" if bad else text


def findings(rows: list[dict], checked: dict) -> list[str]:
    """Witnesses of the cases failing their own claim, with what `checked` says was checked."""
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
    """One bullet per reason: the rows not flagged at half their claim, then the reason."""
    by_reason: dict = {}
    for r in rows:
        reason = r.get("half_claim_note", "No reason known: the audit lacked power at this "
                                          "budget")
        by_reason.setdefault(reason, []).append(
            f"`{r['constructor']}` ({md_escape(r['configuration'])}): "
            + ("error" if r["at_half"]["verdict"] == "error" else fmt_cell(r["at_half"])))
    return [f"- {'; '.join(cells)}. " + ("" if reason.startswith("No reason") else "Why: ")
            + f"{reason}." for reason, cells in by_reason.items()]


def dataset_size(value):
    """The number of records of a pair's input as the census stores it (a list, a
    {column: list} frame, a {key: value} map of partitions, an Opacus dataset's repr "<...: N
    examples>"), or None for a single value."""
    if isinstance(value, str):
        examples = re.search(r": (\d+) examples>$", value)
        if examples:
            return int(examples.group(1))
        try:
            value = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            return None
    if isinstance(value, dict) and isinstance(value.get("inputs"), list):   # Opacus Examples
        return len(value["inputs"])
    if isinstance(value, dict) and value and all(isinstance(v, list) for v in value.values()):
        return len(next(iter(value.values())))
    return len(value) if isinstance(value, (list, tuple, dict)) else None


def of_two_sizes(a, b) -> bool:
    size_a, size_b = dataset_size(a), dataset_size(b)
    return size_a is not None and size_b is not None and size_a != size_b


def two_size_neighbours(rows: list[dict], checked: dict) -> list[str]:
    """Where neighbours of two sizes were tried, where they are the witness, and the failures
    of an own claim that rest on one (each with its check in the findings above)."""
    tried = [r for r in rows if any(of_two_sizes(a, b) for a, b in r["pairs"])]
    per_library = ", ".join(f"{lib} {sum(r['library'] == lib for r in tried)}"
                            for lib in dict.fromkeys(r["library"] for r in rows))

    def witness_of_two_sizes(cell):
        witness = (cell.get("result") or {}).get("witness") or {}
        return cell.get("verdict") == "violation" and of_two_sizes(witness.get("D"),
                                                                   witness.get("D_prime"))
    at_claim = [r for r in tried if witness_of_two_sizes(r.get("at_claim", {}))]
    at_half = [r for r in tried if witness_of_two_sizes(r.get("at_half", {}))]
    lines = [f"{len(tried)} of {len(rows)} cases are audited on at least one pair of neighbours of "
             "two sizes (a record, unit or key added), where the library's domain and metric "
             f"admit them ({per_library}; "
             "docs/libraries.md says how each adapter decides). The violation's witness is a "
             f"pair of two sizes in {len(at_half)} of the cases flagged at half their claim and "
             f"in {len(at_claim)} at their own claim.", ""]
    for r in at_claim:
        status = "checked outside dpverify above" if r["constructor"] in checked else \
            "not yet checked outside dpverify"
        lines.append(f"- {r['library']} `{r['constructor']}` "
                     f"({md_escape(r['configuration'])}): {status}.")
    return lines + ([""] if at_claim else [])


def write_markdown(path: Path, rows: list[dict], meta: dict, checked: dict) -> None:
    audited = [r for r in rows if "at_claim" in r]
    half_missed = [r for r in audited if r["at_half"]["verdict"] != "violation"]
    failed = [r for r in audited if r["at_claim"]["verdict"] == "violation"]
    lines = ["# Census of DP libraries", "",
             machine_line(meta) + " Libraries: " + ", ".join(
                 f"{lib} {v}" for lib, v in meta["libraries"].items())
             + f". Seed {meta['seed']}; total {meta['seconds']:.0f} s." + numpy_note(meta), "",
             f"{len(audited)} cases audited at their own claim and at half of it: {len(failed)} "
             f"fail their own claim, {len(audited) - len(half_missed)} of {len(audited)} are "
             f"flagged at half their claim. {claim_confidence(meta, rows)} Those at half the "
             f"claim run at {meta['confidence']:g}. Bold: what a correct, tightly claimed mechanism "
             "should not show (a violation at its claim, a pass at half of it). How to read this "
             f"report: {DOCS}.", ""]
    for library in meta["libraries"]:
        own = [r for r in rows if r["library"] == library]
        if own:
            lines += [f"## {library}", ""] + library_table(own) + [""]
    lines += ["## Failures of the library's own claim", ""]
    lines += findings(rows, checked) or ["None found at this budget.", ""]
    lines += ["## Neighbours of two sizes", ""] + two_size_neighbours(audited, checked)
    lines += ["## Not flagged at half the claim", ""]
    lines += not_flagged(half_missed) or ["None."]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def claim_confidence(meta: dict, rows: list[dict]) -> str:
    """The audits at the claim: their confidence, and the chance over the census of listing a
    correct case as failing (Bonferroni). Libraries added to a census later, at the confidence
    of the larger census, are listed with theirs, and the union bound adds their share."""
    by_library = meta.get("confidence_at_claim_by_library")
    if not by_library:
        return (f"The audits at the claim run at confidence {meta['confidence_at_claim']:.5f} "
                f"each (at most {1 - meta['confidence']:.2g} chance over the census of listing "
                "a correct case as failing).")
    groups: dict = {}
    for library, level in by_library.items():
        groups.setdefault(level, []).append(library)
    counts = {level: sum(r["library"] in libs for r in rows) for level, libs in groups.items()}
    total = sum(n * (1 - level) for level, n in counts.items())
    parts = [f"{level:.5f} for the {counts[level]} cases of {', '.join(libs)}"
             for level, libs in groups.items()]
    return (f"The audits at the claim run at confidence {'; '.join(parts)} (the later ones as "
            f"if the census had had {len(rows)} cases from the start), so the chance over the "
            f"census of listing a correct case as failing is at most {total:.3f}.")


def numpy_note(meta: dict) -> str:
    """Which numpy each library's rows ran on, when not all the same (no environment holds
    every library: the census runs in two)."""
    by_numpy: dict = {}
    for library, version in meta.get("numpy_by_library", {}).items():
        by_numpy.setdefault(version, []).append(library)
    later = "".join(f" The {library} rows were audited on {date}."
                    for library, date in meta.get("added_later", {}).items())
    if len(by_numpy) < 2:
        return later
    return " Rows audited on " + "; ".join(f"numpy {v}: {', '.join(libs)}"
                                          for v, libs in by_numpy.items()) + "." + later


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
                   help="audit one library; keep the others' rows from OUT/libraries.json "
                        "(when run at the same seed and number of cases)")
    p.add_argument("--render-only", "--from-json", action="store_true", dest="render_only",
                   help="audit nothing: write libraries.md from OUT/libraries.json")
    p.add_argument("--seed", type=int, default=0, help="root seed of every audit (default 0)")
    p.add_argument("--confidence", type=float, default=0.95,
                   help="C: the census's chance of listing no correct case as failing its "
                        "claim, and each half-claim audit's confidence (default 0.95)")
    return p.parse_args(argv)


def previous_rows(path: Path, per_case: float, seed: int) -> tuple[list[dict], dict]:
    """Rows and meta of an earlier census at the same seed and case count."""
    if not path.exists():
        return [], {}
    document = read_json(path)
    meta = document["meta"]
    if meta.get("seed") != seed or abs(meta.get("confidence_at_claim", 0) - per_case) > 1e-12:
        print(f"{path}: an earlier census at another seed or number of cases; its rows are "
              "dropped", flush=True)
        return [], {}
    return document["rows"], meta


def main(argv=None) -> int:
    args = parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    censuses = importable_censuses(args)
    versions = {library: package_version(DISTRIBUTIONS[library]) for library in LIBRARIES}
    notes, checked = {}, {}
    for census in censuses.values():
        notes.update(getattr(census, "HALF_CLAIM_NOTES", {}))
        checked.update(getattr(census, "FINDINGS_CHECKED", {}))
    json_path = args.out / "libraries.json"
    if not args.render_only:
        write_json(json_path, audit_census(args, censuses, versions, notes))
    document = read_json(json_path)
    write_markdown(args.out / "libraries.md", attach_notes(document["rows"], notes),
                   document["meta"], checked)
    print(f"total {document['meta']['seconds']:.0f} s; wrote {args.out / 'libraries.md'}")
    return 0


def importable_censuses(args) -> dict:
    """The census modules this environment can import. No environment holds every library
    (Tumult Core pins sympy < 1.13, torch 2.13 needs sympy >= 1.13.3): with --only, a census
    that cannot be imported keeps its rows from OUT/libraries.json, which also give its number
    of cases; otherwise every one must import."""
    censuses = {}
    for library, module in LIBRARIES.items():
        try:
            censuses[library] = importlib.import_module(module)
        except ImportError as exc:
            if not args.only or args.only == library:
                raise SystemExit(f"the {library} census needs its library here ({exc}); "
                                 f"run it with --only {library} in an environment that has it")
            print(f"{library}: not importable here ({exc}); its rows are kept", flush=True)
    return censuses


def case_counts(censuses: dict, json_path: Path) -> dict:
    """Cases per library: a census's own, or for one not importable here, its rows in the
    earlier census."""
    counts = {library: len(module.cases()) for library, module in censuses.items()}
    if len(counts) < len(LIBRARIES):
        earlier = read_json(json_path)["rows"] if json_path.exists() else []
        for library in LIBRARIES:
            counts.setdefault(library, sum(r["library"] == library for r in earlier))
    return counts


def audit_census(args, censuses: dict, versions: dict, notes: dict) -> dict:
    """The JSON document: every case audited (with --only, one library's; the rest kept)."""
    json_path = args.out / "libraries.json"
    # the correction counts every case of the census, also when --only audits one library
    cases = [(library, case) for library, module in censuses.items() for case in module.cases()]
    per_case = 1 - (1 - args.confidence) / sum(case_counts(censuses, json_path).values())
    kept, earlier = previous_rows(json_path, per_case, args.seed) if args.only else ([], {})
    seconds = dict(earlier.get("seconds_by_library", {}))
    # with --only, the other libraries' versions and numpy are those their kept rows had
    ran = [args.only] if args.only else list(LIBRARIES)
    versions = {lib: versions[lib] if lib in ran else earlier.get("libraries", {}).get(lib)
                for lib in LIBRARIES}
    numpy_by_library = {lib: earlier.get("numpy_by_library", {}).get(lib, earlier.get("numpy"))
                        for lib in LIBRARIES if lib in seconds}
    numpy_by_library.update({lib: machine_meta()["numpy"] for lib in ran})
    print(f"{len(cases)} cases here of {versions}; audits at the claim at confidence "
          f"{per_case:.5f}", flush=True)
    rows = {library: [r for r in kept if r["library"] == library] for library in LIBRARIES}
    for library in [args.only] if args.only else LIBRARIES:
        started = time.perf_counter()
        rows[library] = [run_case(library, case, args.seed, lambda m: print(m, flush=True),
                                  args.confidence, per_case) for lib, case in cases
                         if lib == library]
        seconds[library] = time.perf_counter() - started
    rows = attach_notes([r for library in LIBRARIES for r in rows[library]], notes)
    meta = {**machine_meta(), "libraries": versions, "seed": args.seed,
            "confidence": args.confidence, "confidence_at_claim": per_case,
            "seconds_by_library": seconds, "seconds": sum(seconds.values()),
            "numpy_by_library": numpy_by_library}
    return {"rows": rows, "meta": meta}


if __name__ == "__main__":
    sys.exit(main())
