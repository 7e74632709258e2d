"""Each kind of result in a report: its summary-table cells, its lines and its pictures, chosen
by the result's `kind` (`dpverify.result.HasOutcome`; the "kind" of its JSON entry).

    epsilon_delta   dpverify.audit on an (ε, δ) claim           plots.write_plots
    zcdp            dpverify.zcdp.audit_zcdp                     zcdp_report
    rdp             dpverify.rdp.audit_rdp                       rdp_report
    curve           dpverify.fdp (μ-GDP, f-DP, privacy profiles)  fdp_report
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, NamedTuple

from ..evidence import lower_bound_text, short_number
from ..kinds import CURVE, EPSILON_DELTA, RDP, ZCDP
from . import fdp_report, rdp_report, zcdp_report


class KindView(NamedTuple):
    """How a report shows one kind: `cells(entry)` → (claim, certified) of the summary table,
    `lines(entry)` → Markdown bullets beside the witness, `plots(result, folder, exact)` →
    (file names, figure data or None), the picture of the finding first."""

    cells: Callable[[dict], tuple[str, str]]
    lines: Callable[[dict], list[str]]
    plots: Callable[[object, Path, object], tuple[list[str], dict | None]]


def epsilon_delta_cells(entry: dict) -> tuple[str, str]:
    """(claim, certified) of an (ε, δ) entry: the claim and the bound rounded down."""
    claimed = entry["claimed"]
    certified = (lower_bound_text(float(entry["epsilon_lower_bound"]),
                                  float(claimed["epsilon"]))
                 + (" (support mismatch: likely ∞)" if entry.get("support_mismatch") else ""))
    return (f"({short_number(claimed['epsilon'])}, {short_number(claimed['delta'])})",
            certified)


def _epsilon_delta_plots(result, folder: Path, exact):
    from .plots import write_plots  # matplotlib, on first use
    return write_plots(result, folder, exact)


VIEWS = {
    EPSILON_DELTA: KindView(epsilon_delta_cells, lambda entry: [], _epsilon_delta_plots),
    ZCDP: KindView(zcdp_report.table_cells, zcdp_report.markdown_lines,
                   lambda result, folder, exact: (zcdp_report.write_zcdp_plots(result, folder),
                                                  None)),
    RDP: KindView(rdp_report.table_cells, rdp_report.markdown_lines,
                  lambda result, folder, exact: rdp_report.write_rdp_plots(result, folder)),
    CURVE: KindView(fdp_report.table_cells, fdp_report.markdown_lines,
                    lambda result, folder, exact: fdp_report.write_fdp_plots(result, folder)),
}


def entry_kind(entry: dict) -> str:
    """The kind of a result.json entry. Entries written before results named their kind are
    told apart by their claim's keys."""
    if "kind" in entry:
        return entry["kind"]
    claimed = entry.get("claimed")
    claimed = claimed if isinstance(claimed, dict) else {}
    for key, kind in (("zcdp_rho", ZCDP), ("rdp_rho", RDP), ("curve", CURVE)):
        if key in claimed:
            return kind
    return EPSILON_DELTA


def view_of(entry: dict) -> KindView:
    return VIEWS[entry_kind(entry)]
