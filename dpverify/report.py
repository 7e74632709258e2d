"""Write an audit's report files. Reports never recompute statistics: they format results."""
from __future__ import annotations

import json
import math
from pathlib import Path

from .evidence import lower_bound_text, percent
from .result import CERTIFICATE_DOCS, CERTIFICATE_WORDS, COUPLED, RATIO_TEST, jsonable
from .zcdp import is_zcdp_entry, markdown_lines as zcdp_markdown_lines, table_cells as zcdp_cells


def certificate_text(w: dict) -> str:
    """How the witness's bound follows from its counts, in one line a reader can recheck."""
    eps = float(w["epsilon_lower_bound"])  # JSON documents spell infinities "inf"/"-inf"
    if w.get("certificate") == RATIO_TEST and math.isfinite(eps):
        share = 1.0 / (1.0 + math.exp(-eps))  # π_L, since ε = ln(π_L/(1 − π_L))
        hits = w["count_D"] + w["count_D_prime"]
        return (f"{RATIO_TEST}: the share of the {hits:,} hits that came from D, "
                f"P[S|D]/(P[S|D] + P[S|D']), is ≥ {share:.6g} (Clopper–Pearson), "
                "so ε ≥ ln(share/(1 − share))")
    if w.get("certificate") == COUPLED and w.get("blocks_D"):
        return (f"{COUPLED}: {len(w['blocks_D'])} blocks of {w['block_size']:,} runs per "
                "input, each block's runs of D and D' drawn from one shared seed and the blocks "
                "from independent seeds; a one-sided t-test on the blocks' rates (Fieller's "
                "bound on the ratio of their means) bounds ln((P[S|D] − δ)/P[S|D']) ≤ ε from "
                "below (the block counts are in result.json)")
    return ("two Clopper–Pearson bounds: ε ≥ ln((lower bound on P[M(D) ∈ S] − δ)/"
            "upper bound on P[M(D') ∈ S])")


def certificate_words(w: dict) -> str:
    """The certificate in plain words, with a link to its section of docs/method.md."""
    kind = w.get("certificate")
    if kind not in CERTIFICATE_WORDS:
        return str(kind)
    return f"{CERTIFICATE_WORDS[kind]} ([how]({CERTIFICATE_DOCS[kind]}))"


def examples_markdown(w: dict) -> list[str]:
    """The event's most frequent outputs on the illustrative sample, as a Markdown table."""
    examples, runs = w.get("examples") or [], w.get("examples_runs", 0)
    if not examples:
        return []
    lines = ["", f"Outputs in the event (illustrative sample of {runs:,} fresh runs per input, "
                 "not part of the bound):", "",
             "| output | under D | under D' |", "|---|---|---|"]
    for e in examples:
        shown = e["output"] + (f" (e.g. {'; '.join(e['e.g.'])})" if e.get("e.g.") else "")
        lines.append(f"| `{shown}` | {percent(e['count_D'], runs)} ({e['count_D']:,}) | "
                     f"{percent(e['count_D_prime'], runs)} ({e['count_D_prime']:,}) |")
    return lines


def _lower(r: dict) -> str:
    """A result entry's certified ε, rounded down, with the digits that tell it from the claim."""
    return lower_bound_text(float(r["epsilon_lower_bound"]), float(r["claimed"]["epsilon"]))


def _mismatch(r: dict) -> str:
    """Table-cell suffix for a support mismatch (ε likely infinite)."""
    return " (support mismatch: likely ∞)" if r.get("support_mismatch") else ""


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
        if is_zcdp_entry(r):  # a ρ-zCDP claim (dpverify.zcdp): ρ and the implied (ε, δ)
            claim, certified = zcdp_cells(r)
            lines.append(f"| {r['mechanism']} | {r['verdict']} | {claim} | {certified} | "
                         f"{r['confidence']} | {r['samples']:,} | {r['seconds']:.2f} |")
            continue
        lines.append(f"| {r['mechanism']} | {r['verdict']} | ({_fmt(r['claimed']['epsilon'])}, "
                     f"{_fmt(r['claimed']['delta'])}) | "
                     f"{_lower(r)}{_mismatch(r)} | "
                     f"{r['confidence']} | {r['samples']:,} | {r['seconds']:.2f} |")
    for r in document["results"]:
        lines += ["", f"## {r['mechanism']}: {r['verdict']}", ""]
        if r["verdict"] == "error":
            lines.append(f"Could not be audited: {r['error']}")
            continue
        if is_zcdp_entry(r):
            lines += zcdp_markdown_lines(r)
        w = r.get("witness")
        if w:
            lines.append(f"- pair: D = `{w['D']}`, D' = `{w['D_prime']}`")
            if "epsilon" in r["claimed"]:
                claim = r["claimed"]["epsilon"]
                lines.append(f"- certified ε ≥ "
                             f"{lower_bound_text(float(w['epsilon_lower_bound']), claim)} "
                             f"against the claimed ε = {claim:g}")
            lines += [f"- event: {w['event']}",
                      f"- counts: {w['count_D']}/{w['samples_D']} under D, "
                      f"{w['count_D_prime']}/{w['samples_D_prime']} under D'",
                      f"- Clopper–Pearson: P[M(D) ∈ S] ≥ {_fmt(w['p_lower'])}, "
                      f"P[M(D') ∈ S] ≤ {_fmt(w['q_upper'])}",
                      f"- certified by {certificate_words(w)}: {certificate_text(w)}",
                      f"- plug-in ε estimate on this event: {_fmt(w['epsilon_estimate'])}"]
            lines += examples_markdown(w)
            if w["support_mismatch"]:
                lines.append("- **support mismatch: ε is likely ∞.** The event occurred "
                             f"{w['count_D']} times under D and never under D'; the finite bound "
                             "only reflects the sample size")
        if r["verdict"] == "pass" and "resolution" in r:
            lines.append(f"- resolution: a true ε of about {_fmt(r['resolution'])} on this "
                         "event would have been caught half the time")
        if r.get("reproducible") is False:
            lines.append("- own randomness: the mechanism draws its own noise, so the same "
                         "seed need not reproduce this bound; the confidence still holds "
                         "(docs/method.md)")
    return "\n".join(lines) + "\n"


def _plot_dir(directory: Path, result, single: bool) -> Path:
    target = directory if single else directory / result.mechanism
    target.mkdir(parents=True, exist_ok=True)
    return target


def write_report(directory: Path, document: dict, results, mechanisms=None) -> None:
    """DIR/result.json, DIR/report.md, DIR/index.html (self-contained) and PNG plots
    (DIR/tradeoff.png, DIR/delta_curve.png, DIR/pvalue.png; one folder per mechanism when there
    are several). `mechanisms` (same order as results) supplies known exact trade-off curves."""
    from .plots import write_plots
    from .zcdp import ZcdpAuditResult, write_zcdp_plots

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
font-weight:bold}.pass{color:#1b5e20;font-weight:bold}.note{background:#fffbe6;border:1px solid
#e6d58a;padding:.6em 1em}img{max-width:49%;border:1px solid #ddd;margin:2px}img.first{max-width:100%}code{background:#f4f4f4;
padding:1px 4px}pre{white-space:pre-wrap}"""


def _esc(value) -> str:
    import html as _html
    return _html.escape(str(value))


def _img(path: Path, first: bool = False) -> str:
    import base64
    data = base64.b64encode(path.read_bytes()).decode()
    cls = ' class="first"' if first else ""
    return f'<img alt="{_esc(path.stem)}"{cls} src="data:image/png;base64,{data}">'


def _examples_html(w: dict) -> str:
    examples, runs = w.get("examples") or [], w.get("examples_runs", 0)
    if not examples:
        return ""
    rows = "".join(
        f"<tr><td><code>{_esc(e['output'])}</code>"
        + (f"<br><small>e.g. {_esc('; '.join(e['e.g.']))}</small>" if e.get("e.g.") else "")
        + f"</td><td>{percent(e['count_D'], runs)}</td><td>{percent(e['count_D_prime'], runs)}"
          "</td></tr>" for e in examples)
    return (f"<p>Outputs in the event, on an illustrative sample of {runs:,} fresh runs per "
            "input (not part of the bound):</p><table><tr><th>output</th><th>share of runs on "
            f"D</th><th>share of runs on D′</th></tr>{rows}</table>")


def html(document: dict, results, images: dict) -> str:
    """One self-contained page: no external links, plots inlined as data URIs."""
    rows = []
    for r in document["results"]:
        if r["verdict"] == "error":
            rows.append(f"<tr><td>{_esc(r['mechanism'])}</td><td class=violation>error</td>"
                        f"<td colspan=4>{_esc(r['error'])}</td></tr>")
            continue
        if is_zcdp_entry(r):
            claim, certified = zcdp_cells(r)
            rows.append(f"<tr><td>{_esc(r['mechanism'])}</td><td class={r['verdict']}>"
                        f"{r['verdict']}</td><td>{_esc(claim)}</td><td>{_esc(certified)}</td>"
                        f"<td>{r['confidence']}</td><td>{r['samples']:,}</td></tr>")
            continue
        rows.append(f"<tr><td>{_esc(r['mechanism'])}</td><td class={r['verdict']}>"
                    f"{r['verdict']}</td><td>({_fmt(r['claimed']['epsilon'])}, "
                    f"{_fmt(r['claimed']['delta'])})</td>"
                    f"<td>{_lower(r)}{_mismatch(r)}</td>"
                    f"<td>{r['confidence']}</td><td>{r['samples']:,}</td></tr>")
    parts = ["<!doctype html><html lang=en><head><meta charset=utf-8>",
             "<title>dpverify audit report</title>", f"<style>{_CSS}</style></head><body>",
             "<h1>dpverify audit report</h1>",
             "<p class=note>A <b>violation</b> is certified: with probability at least the stated "
             "confidence the mechanism does not satisfy its claim on the shown pair. A <b>pass</b> "
             "means no violation was found at this budget — it is not a proof of privacy.</p>",
             "<table><tr><th>mechanism</th><th>verdict</th><th>claimed (ε, δ)</th>"
             "<th>certified ε ≥</th><th>confidence</th><th>mechanism runs</th></tr>",
             *rows, "</table>"]
    for result in results:
        w = result.witness
        parts.append(f"<h2>{_esc(result.mechanism)}: <span class={result.verdict}>"
                     f"{result.verdict}</span></h2>")
        parts.append(f"<pre>{_esc(result.summary())}</pre>")
        pictures = images.get(result.mechanism, [])
        if pictures:  # the picture of the finding first, then the evidence, then the rest
            parts.append(_img(pictures[0], first=True))
        if getattr(result, "implied", None) is not None:  # zCDP: the implied (ε, δ) audit
            parts.append(f"<p>The implied (ε, δ) claim, audited with the other half of the error "
                         f"budget:</p><pre>{_esc(result.implied.summary())}</pre>")
        if w is not None:
            d = w.as_dict()
            parts.append("<table>" + "".join(
                f"<tr><th>{k}</th><td>{_esc(v)}</td></tr>" for k, v in [
                    ("certified ε ≥", lower_bound_text(w.epsilon_lower_bound,
                                                      result.claimed_epsilon)
                     + f" (claimed ε = {result.claimed_epsilon:g})"),
                    ("pair D", json.dumps(d["D"])), ("pair D′", json.dumps(d["D_prime"])),
                    ("event S", w.event),
                    ("hits under D", f"{w.count_D:,} / {w.samples_D:,}"),
                    ("hits under D′", f"{w.count_D_prime:,} / {w.samples_D_prime:,}"),
                    ("P[M(D) ∈ S] ≥", f"{w.p_lower:.4g}"),
                    ("P[M(D′) ∈ S] ≤", f"{w.q_upper:.4g}"),
                    ("certified by", CERTIFICATE_WORDS.get(w.certificate, w.certificate)),
                    ("how", certificate_text(d)),
                    ("plug-in ε on S", f"{w.epsilon_estimate:.4g}")]) + "</table>")
            parts.append(_examples_html(d))
        parts += [_img(p) for p in pictures[1:]]
    parts.append("</body></html>")
    return "\n".join(parts)
