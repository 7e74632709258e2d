"""Write an audit's report files. Reports never recompute statistics: they format results."""
from __future__ import annotations

import json
from pathlib import Path


def _fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def markdown(document: dict) -> str:
    lines = ["# dpverify audit report", "",
             "A *violation* is certified at the stated confidence. A *pass* means no violation "
             "was found at this budget; it is not a proof of privacy.", "",
             "| mechanism | verdict | claimed (ε, δ) | certified ε ≥ | confidence | runs | seconds |",
             "|---|---|---|---|---|---|---|"]
    for r in document["results"]:
        if r["verdict"] == "error":
            lines.append(f"| {r['mechanism']} | error | | | | | |")
            continue
        lines.append(f"| {r['mechanism']} | {r['verdict']} | ({_fmt(r['claimed']['epsilon'])}, "
                     f"{_fmt(r['claimed']['delta'])}) | {_fmt(r['epsilon_lower_bound'])} | "
                     f"{r['confidence']} | {r['samples']:,} | {r['seconds']:.2f} |")
    for r in document["results"]:
        lines += ["", f"## {r['mechanism']}: {r['verdict']}", ""]
        if r["verdict"] == "error":
            lines.append(f"Could not be audited: {r['error']}")
            continue
        w = r.get("witness")
        if w:
            lines += [f"- pair: D = `{w['D']}`, D' = `{w['D_prime']}`",
                      f"- event: {w['event']}",
                      f"- counts: {w['count_D']}/{w['samples_D']} under D, "
                      f"{w['count_D_prime']}/{w['samples_D_prime']} under D'",
                      f"- Clopper–Pearson: P[M(D) ∈ S] ≥ {_fmt(w['p_lower'])}, "
                      f"P[M(D') ∈ S] ≤ {_fmt(w['q_upper'])}",
                      f"- plug-in ε estimate on this event: {_fmt(w['epsilon_estimate'])}"]
            if w["support_mismatch"]:
                lines.append("- support mismatch: the event never occurred under D'; the bound "
                             "is limited by the sample size and ε may be infinite")
        if r["verdict"] == "pass":
            lines.append(f"- resolution: a true ε of about {_fmt(r['resolution'])} on this "
                         "event would have been caught half the time")
    return "\n".join(lines) + "\n"


def write_report(directory: Path, document: dict, results) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "result.json").write_text(json.dumps(document, indent=2, ensure_ascii=False))
    (directory / "report.md").write_text(markdown(document))
