"""zCDP results in reports: the Rényi curve plot and the Markdown lines of a zCDP entry."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..evidence import json_number as num  # a JSON entry's number, 4 digits

if TYPE_CHECKING:  # the results import the report views (notebook), not the other way round
    from ..zcdp import ZcdpAuditResult


def renyi_plot(result: ZcdpAuditResult, path: Path) -> None:
    """The certified D_α lower-bound curve against the claimed ρα (and k²ρα), log-scaled
    orders."""
    from .plots import plt, save_figure
    orders, lower = np.asarray(result.orders), np.asarray(result.renyi_lower)
    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=110)
    ax.fill_between(orders, 0, result.effective_rho * orders, color="#cfe8cf", alpha=0.6,
                    label="D_α allowed by the claim")
    ax.plot(orders, result.effective_rho * orders, color="#2e7d32", lw=1.2,
            label=f"claimed ρα, ρ = {result.effective_rho:g}")
    ax.plot(orders, lower, color="#1f4e9c", lw=1.6,
            label="certified lower bound on D_α (all orders jointly)")
    if result.witness is not None:
        ax.scatter([result.alpha], [result.divergence_at_alpha], color="#c62828", zorder=3,
                   label=f"best: ρ ≥ {result.rho_lower_bound:.3g} at α = {result.alpha:.3g}")
    ax.set_xscale("log")
    top = max(float(lower.max()) * 1.5, result.effective_rho * 16, 1e-3)
    ax.set(xlabel="Rényi order α", ylabel="D_α(M(D) ‖ M(D′))", ylim=(0, top),
           title=f"{result.mechanism}: Rényi divergence against the zCDP claim")
    ax.legend(fontsize=7.5, loc="upper left")
    word = {"violation": "VIOLATION", "pass": "pass (not a proof)"}.get(
        result.outcome, "INCONCLUSIVE (this budget could not have caught a gross violation)")
    ax.text(0.98, 0.02, f"{word}: {result.rho_clause()}\nclaimed {result.claim_text()}, "
            f"confidence {result.confidence:g}", transform=ax.transAxes, fontsize=7,
            ha="right", va="bottom", bbox=dict(fc="white", ec="#999999"))
    save_figure(fig, path)


def write_zcdp_plots(result: ZcdpAuditResult, directory: Path) -> list[str]:
    renyi_plot(result, Path(directory) / "renyi_curve.png")
    return ["renyi_curve.png"]


def table_cells(entry: dict) -> tuple[str, str]:
    """(claim, certified) cells of a zCDP entry in the report's summary table."""
    c = entry["claimed"]
    return (f"ρ={num(c['zcdp_rho'])}-zCDP ⇒ ({num(c['implied_epsilon'])}, "
            f"{num(c['implied_delta'])})",
            f"ρ ≥ {num(entry['rho_lower_bound'])}; ε ≥ "
            f"{num(entry['implied']['epsilon_lower_bound'])}")


def markdown_lines(entry: dict) -> list[str]:
    """A zCDP entry's section in report.md (before its witness lines)."""
    c, i = entry["claimed"], entry["implied"]
    return [f"- claim: ρ = {num(c['zcdp_rho'])}-zCDP (Bun & Steinke 2016)"
            + (f", audited at {entry['group_distance']}²ρ for pairs "
               f"{entry['group_distance']} apart" if entry.get("group_distance", 1) > 1 else ""),
            f"- certified ρ ≥ {num(entry['rho_lower_bound'])} (max over orders of the certified "
            f"D_α/α, attained at α = {num(entry['alpha'])}); Clopper–Pearson bounds on the "
            "witness event, each at (1 − confidence)/4, bound D_α at every order jointly",
            f"- implied ({num(c['implied_epsilon'])}, {num(c['implied_delta'])})-DP audit "
            f"(ε = ρ + 2√(ρ ln(1/δ))): {i.get('outcome', i['verdict'])}, certified ε ≥ "
            f"{num(i['epsilon_lower_bound'])} at confidence {i['confidence']:.6g}",
            "- the two parts share the error budget equally: false-alarm rate ≤ 1 − confidence"]
