"""Write an audit's report files. Reports never recompute statistics: they format results."""
from __future__ import annotations

import json
from pathlib import Path

from ..errors import DpVerifyError
from ..evidence import (examples_html, lower_bound_text, short_number, witness_markdown,
                        witness_table)
from ..result import (confirmation_text, inconclusive_advice, jsonable, leak_reach_text,
                      marginal_text)
from .zcdp_report import is_zcdp_entry, markdown_lines as zcdp_markdown_lines, table_cells as zcdp_cells


def _lower(r: dict) -> str:
    """A result entry's certified ε, rounded down, with the digits that tell it from the claim."""
    return lower_bound_text(float(r["epsilon_lower_bound"]), float(r["claimed"]["epsilon"]))


def _outcome(r: dict) -> str:
    """violation, pass or inconclusive (or error): the word a row and a heading show."""
    return r.get("outcome", r["verdict"])


INTERRUPTED_NOTE = ("This run was interrupted (Ctrl-C): the mechanisms marked interrupted count "
                    "only what was certified before it, and those marked not run were not "
                    "audited.")


def _qualifier(r: dict) -> str:
    """Verdict-cell suffix: interrupted, a marginal violation, or a confirmation's outcome."""
    if r.get("interrupted"):
        return " (interrupted)"
    if r.get("marginal"):
        return " (marginal)"
    if r.get("confirmation"):
        return " (confirmed)" if r["confirmation"]["confirmed"] else " (not confirmed)"
    return ""


def _mismatch(r: dict) -> str:
    """Table-cell suffix for a support mismatch (ε likely infinite)."""
    return " (support mismatch: likely ∞)" if r.get("support_mismatch") else ""


def markdown(document: dict) -> str:
    """report.md: a table of the results, then a section per mechanism with its witness."""
    lines = ["# dpverify audit report", "",
             "A *violation* is certified at the stated confidence. A *pass* means no violation "
             "was found at this budget; it is not a proof of privacy, and says what it covers "
             "(its resolution and leak reach). *Inconclusive* means no violation was found, but "
             "this budget could not have caught a gross one even on an event as likely as the "
             "best it tested (docs/method.md).", "",
             "| mechanism | verdict | claimed (ε, δ) | certified ε ≥ | confidence | runs | seconds |",
             "|---|---|---|---|---|---|---|"]
    if document.get("meta", {}).get("interrupted"):
        lines[2:2] = [f"**{INTERRUPTED_NOTE}**", ""]
    for r in document["results"]:
        if r["verdict"] in ("error", "not run"):
            lines.append(f"| {r['mechanism']} | {r['verdict']} | | | | | |")
            continue
        if is_zcdp_entry(r):  # a ρ-zCDP claim (dpverify.zcdp): ρ and the implied (ε, δ)
            claim, certified = zcdp_cells(r)
            lines.append(f"| {r['mechanism']} | {_outcome(r)} | {claim} | {certified} | "
                         f"{r['confidence']} | {r['samples']:,} | {r['seconds']:.2f} |")
            continue
        lines.append(f"| {r['mechanism']} | {_outcome(r)}{_qualifier(r)} | "
                     f"({short_number(r['claimed']['epsilon'])}, "
                     f"{short_number(r['claimed']['delta'])}) | "
                     f"{_lower(r)}{_mismatch(r)} | "
                     f"{r['confidence']} | {r['samples']:,} | {r['seconds']:.2f} |")
    for r in document["results"]:
        lines += ["", f"## {r['mechanism']}: {_outcome(r)}", ""]
        if r["verdict"] == "error":
            lines.append(f"Could not be audited: {r['error']}")
            continue
        if r["verdict"] == "not run":
            lines.append("Not audited: the run was interrupted (Ctrl-C) before its turn.")
            continue
        if r.get("interrupted"):
            lines += ["- **interrupted (Ctrl-C)**: only what was certified before it counts", ""]
        if is_zcdp_entry(r):
            lines += zcdp_markdown_lines(r)
        if r.get("confirmation"):
            lines += [f"- {confirmation_text(r['confirmation'], r['claimed']['epsilon'])}", ""]
        if r.get("marginal"):
            lines += [f"- **{marginal_text(r['evidence_level'])}**", ""]
        if r.get("witness"):
            lines += witness_markdown(r["witness"], r["claimed"])
        if _outcome(r) == "inconclusive":
            lines.append("- **INCONCLUSIVE: this budget could not have caught a gross "
                         "violation** (docs/theory.md §2.11); "
                         f"{inconclusive_advice(r.get('interrupted') or r.get('budget_spent'))}")
        if r["verdict"] == "pass" and "resolution" in r:
            lines.append(f"- resolution: a true ε of about {short_number(r['resolution'])} on "
                         "an event as likely as this one would have been caught half the time")
        if r["verdict"] == "pass" and "leak_reach" in r:
            lines.append("- " + leak_reach_text(float(r["leak_reach"]), r["confidence"]))
        if r.get("reproducible") is False:
            lines.append("- own randomness: the mechanism draws its own noise, so the same "
                         "seed need not reproduce this bound; the confidence still holds "
                         "(docs/method.md)")
    return "\n".join(lines) + "\n"


def results_document(results, **meta) -> dict:
    """The JSON document of `dpverify audit --json` for `results`: their entries and how they
    were made (`meta` adds to the versions and the time)."""
    import platform
    import time

    import numpy as np

    from .. import __version__
    return {"results": [r.as_dict() for r in results], "meta": {
        "dpverify": __version__, "python": platform.python_version(), "numpy": np.__version__,
        **meta, "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}}


def save_report(results, directory, mechanisms=None) -> Path:
    """Write the report of `dpverify audit --report DIR` for one or more results (an
    `AuditResult` or a list) into `directory` (created if absent; its parent must exist), and
    return the path of its index.html. The trade-off, δ(ε) and p-value pictures need the
    counts `audit(..., curves=True)` keeps; without them the report has the witness picture.
    `mechanisms` (same order as results) supplies known exact trade-off curves."""
    results = list(results) if isinstance(results, (list, tuple)) else [results]
    directory = Path(directory)
    if not directory.parent.is_dir():
        raise DpVerifyError(f"cannot write the report to {directory}: its parent directory "
                            "does not exist")
    write_report(directory, results_document(results), results, mechanisms)
    return directory / "index.html"


def _plot_dir(directory: Path, result, single: bool) -> Path:
    target = directory if single else directory / result.mechanism
    target.mkdir(parents=True, exist_ok=True)
    return target


def write_report(directory: Path, document: dict, results, mechanisms=None) -> None:
    """DIR/result.json, DIR/report.md, DIR/index.html (self-contained) and PNG plots
    (DIR/tradeoff.png, DIR/delta_curve.png, DIR/pvalue.png; one folder per mechanism when there
    are several). `mechanisms` (same order as results) supplies known exact trade-off curves."""
    from ..zcdp import ZcdpAuditResult
    from .zcdp_report import write_zcdp_plots
    from .plots import write_plots

    directory.mkdir(parents=True, exist_ok=True)
    (directory / "result.json").write_text(json.dumps(document, indent=2, ensure_ascii=False))
    exact = {m.name: m.exact_tradeoff for m in (mechanisms or [])}
    images, figures = {}, {}
    for result in results:
        folder = _plot_dir(directory, result, single=len(results) == 1)
        if isinstance(result, ZcdpAuditResult):
            names = write_zcdp_plots(result, folder)
        else:
            names, figures[result.mechanism] = write_plots(result, folder,
                                                           exact.get(result.mechanism))
        images[result.mechanism] = [folder / n for n in names]
    (directory / "figures.json").write_text(json.dumps(jsonable(figures), indent=1,
                                                       ensure_ascii=False))
    md = markdown(document)
    for result in results:
        for path in images[result.mechanism]:
            md += f"\n![{path.stem} of {result.mechanism}]({path.relative_to(directory)})\n"
    (directory / "report.md").write_text(md)
    (directory / "index.html").write_text(html(document, results, images))


_CSS = """body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;max-width:1100px;margin:2em auto;
padding:0 1em;color:#222}table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;
padding:4px 8px;text-align:left;font-size:14px}th{background:#f3f3f3}.violation{color:#b71c1c;
font-weight:bold}.pass{color:#1b5e20;font-weight:bold}.inconclusive{color:#b26a00;
font-weight:bold}.note{background:#fffbe6;border:1px solid #e6d58a;padding:.6em 1em}
img{max-width:49%;border:1px solid #ddd;margin:2px}img.first{max-width:100%}
code{background:#f4f4f4;padding:1px 4px}pre{white-space:pre-wrap}"""


def _esc(value) -> str:
    import html as _html
    return _html.escape(str(value))


def _img(path: Path, first: bool = False) -> str:
    import base64
    data = base64.b64encode(path.read_bytes()).decode()
    cls = ' class="first"' if first else ""
    return f'<img alt="{_esc(path.stem)}"{cls} src="data:image/png;base64,{data}">'


def html(document: dict, results, images: dict) -> str:
    """One self-contained page: no external links, plots inlined as data URIs."""
    rows = []
    for r in document["results"]:
        if r["verdict"] == "error":
            rows.append(f"<tr><td>{_esc(r['mechanism'])}</td><td class=violation>error</td>"
                        f"<td colspan=4>{_esc(r['error'])}</td></tr>")
            continue
        if r["verdict"] == "not run":
            rows.append(f"<tr><td>{_esc(r['mechanism'])}</td><td class=inconclusive>not run"
                        f"</td><td colspan=4>{_esc(r['reason'])}</td></tr>")
            continue
        if is_zcdp_entry(r):
            claim, certified = zcdp_cells(r)
            rows.append(f"<tr><td>{_esc(r['mechanism'])}</td><td class={_outcome(r)}>"
                        f"{_outcome(r)}</td><td>{_esc(claim)}</td><td>{_esc(certified)}</td>"
                        f"<td>{r['confidence']}</td><td>{r['samples']:,}</td></tr>")
            continue
        rows.append(f"<tr><td>{_esc(r['mechanism'])}</td><td class={_outcome(r)}>"
                    f"{_outcome(r)}{_qualifier(r)}</td><td>({short_number(r['claimed']['epsilon'])}, "
                    f"{short_number(r['claimed']['delta'])})</td>"
                    f"<td>{_lower(r)}{_mismatch(r)}</td>"
                    f"<td>{r['confidence']}</td><td>{r['samples']:,}</td></tr>")
    parts = ["<!doctype html><html lang=en><head><meta charset=utf-8>",
             "<title>dpverify audit report</title>", f"<style>{_CSS}</style></head><body>",
             "<h1>dpverify audit report</h1>",
             "<p class=note>A <b>violation</b> is certified: with probability at least the stated "
             "confidence the mechanism does not satisfy its claim on the shown pair. A <b>pass</b> "
             "means no violation was found at this budget — it is not a proof of privacy, and "
             "says what it covers (its resolution and leak reach). <b>Inconclusive</b>: no "
             "violation was found, but this budget could not have caught a gross one even on "
             "an event as likely as the best it tested; raise the samples.</p>",
             *([f"<p class=note><b>{_esc(INTERRUPTED_NOTE)}</b></p>"]
               if document.get("meta", {}).get("interrupted") else []),
             "<table><tr><th>mechanism</th><th>verdict</th><th>claimed (ε, δ)</th>"
             "<th>certified ε ≥</th><th>confidence</th><th>mechanism runs</th></tr>",
             *rows, "</table>"]
    for result in results:
        w = result.witness
        parts.append(f"<h2>{_esc(result.mechanism)}: <span class={result.outcome}>"
                     f"{result.outcome}</span></h2>")
        parts.append(f"<pre>{_esc(result.summary())}</pre>")
        pictures = images.get(result.mechanism, [])
        if pictures:  # the picture of the finding first, then the evidence, then the rest
            parts.append(_img(pictures[0], first=True))
        if getattr(result, "implied", None) is not None:  # zCDP: the implied (ε, δ) audit
            parts.append(f"<p>The implied (ε, δ) claim, audited with the other half of the error "
                         f"budget:</p><pre>{_esc(result.implied.summary())}</pre>")
        if w is not None:
            parts.append("<table>" + "".join(
                f"<tr><th>{label}</th><td>{_esc(text)}</td></tr>"
                for label, text in witness_table(w, result.claimed_epsilon)) + "</table>")
            parts.append(examples_html(w.as_dict()))
        parts += [_img(p) for p in pictures[1:]]
    parts.append("</body></html>")
    return "\n".join(parts)
