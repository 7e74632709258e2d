"""Curve-claim results in reports (dpverify.fdp): the trade-off plane with the claimed curve and
the certified test, the claimed privacy profile with the certified δ(ε), and the lines and
table cells of a curve entry. Every figure is read from the result, never recomputed from
counts; the pictures record what they drew (interfaces/drawing.py) in coordinates "ab" and
"delta". A result here is a `dpverify.fdp.CurveAuditResult` (not imported: the notebook view of
results draws from this module)."""
from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np

from ..evidence import json_number as num  # a JSON entry's number, 4 digits

from ..curve_claim import GDP
from ..tradeoff import delta_lower
from .drawing import (CLAIM_GREEN, CLAIM_LINE, PASS_BLUE, VIOLATION_RED, add_element,
                      axes_record, legend_below, plt, save_figure, show_witness,
                      verdict_colour)

FLOOR = 1e-12   # the δ axis' floor


def verdict_line(result) -> str:
    """The verdict in one short sentence, as the pictures' headline says it (the claim itself
    is named in the legend)."""
    mu = (f"certified μ ≥ {result.mu_lower_bound:.4g} against μ = {result.claim.mu:g}; "
          if result.claim.kind == GDP else "")
    test = (f"test α ≤ {result.alpha:.3g}, β ≤ {result.beta:.3g}, where the claim allows "
            f"β ≥ {result.claimed_beta:.3g}")
    if result.verdict == "violation":
        return (f"VIOLATION of the claimed curve: {mu}{test} (confidence "
                f"{result.confidence:g})")
    if not result.conclusive:
        return ("INCONCLUSIVE: no violation found, but the best test measured less than half "
                f"the claim; {mu}{test}")
    return f"pass: no violation found at this budget (not a proof); {mu}{test}"


def _finish(fig, ax, result, path: Path) -> None:
    legend_below(ax)
    for text in ax.get_legend().get_texts():
        text.set_text(textwrap.fill(text.get_text(), 90))
    fig.suptitle(textwrap.fill(f"{result.mechanism}: {verdict_line(result)}", 75), fontsize=8.5,
                 color=verdict_colour(result), y=1.0)
    save_figure(fig, path)


def tradeoff_plot(result, path: Path) -> list[dict]:
    """The trade-off plane (α, β): the claimed curve f with what it allows above it, and the
    certified test, the box α ≤ α_max, β ≤ β_max, red when it lies below the curve."""
    fig, ax = plt.subplots(figsize=(6.0, 5.4), dpi=110)
    alphas = np.linspace(0.0, 1.0, 1001)

    def draw_claim(axes, xlim, label=None):
        a = np.linspace(max(xlim[0], 0.0), min(xlim[1], 1.0), 801)
        f = result.claim.tradeoff(a)
        axes.fill_between(a, f, 1, color=CLAIM_GREEN, label=label)
        axes.plot(a, f, color=CLAIM_LINE, lw=1.2)

    ax.set(xlim=(0, 1), ylim=(0, 1), xlabel="α = P[M(D′) ∈ S]  (false positives)",
           ylabel="β = P[M(D) ∉ S]  (false negatives)")
    draw_claim(ax, (0, 1), label=f"allowed by {result.claim_text()}: β ≥ f(α)")
    record = axes_record(ax, "ab")
    edge = np.column_stack([alphas, result.claim.tradeoff(alphas)])
    add_element(record, "claim", edge, False)
    records = [record]
    if result.witness is not None:
        red = result.verdict == "violation"
        box = [(0, 0), (result.alpha, 0), (result.alpha, result.beta), (0, result.beta)]
        label = (f"certified test (α ≤ {result.alpha:.3g}, β ≤ {result.beta:.3g}): "
                 + ("below the claimed curve" if red else "on or above it"))
        records += show_witness(ax, record, box, edge, red, label, draw_claim)
    ax.set_aspect("equal")
    _finish(fig, ax, result, path)
    return records


def delta_plot(result, path: Path) -> list[dict]:
    """δ against ε: the claimed profile (what it allows lies below it) and the certified lower
    bound on the mechanism's δ(ε), red where it rises above the profile."""
    fig, ax = plt.subplots(figsize=(6.4, 4.4), dpi=110)
    top = max(4.0, 2.0 * min(result.claimed_epsilon, 20.0))
    if result.verdict == "violation":
        top = max(top, 1.2 * result.worst_epsilon[0])
    eps = np.linspace(0.0, top, 801)
    certified = delta_lower(result.p_lower, result.q_upper, eps)
    claimed = np.asarray(result.claim.profile(eps), float)
    ax.set(xlim=(0, top), ylim=(FLOOR, 1.5), yscale="log", xlabel="ε",
           ylabel="δ(ε)")
    ax.fill_between(eps, FLOOR, np.maximum(claimed, FLOOR), color=CLAIM_GREEN,
                    label=f"allowed by {result.claim_text()}: δ ≤ its δ(ε)")
    ax.plot(eps, np.maximum(claimed, FLOOR), color=CLAIM_LINE, lw=1.2)
    record = axes_record(ax, "delta")
    add_element(record, "claim", np.column_stack([eps, claimed]), False)
    above = certified > claimed
    shown = np.where(certified > 0, certified, np.nan)
    ax.plot(eps, np.where(above, np.nan, shown), color=PASS_BLUE, lw=1.6,
            label="certified lower bound on the mechanism's δ(ε)")
    if above.any():
        ax.plot(eps, np.where(above, shown, np.nan), color=VIOLATION_RED, lw=2.2,
                label="… above the claimed profile: a violation")
    keep = certified > 0
    add_element(record, "certified", np.column_stack([eps[keep & ~above],
                                                      certified[keep & ~above]]), False)
    add_element(record, "certified", np.column_stack([eps[keep & above],
                                                      certified[keep & above]]), True)
    _finish(fig, ax, result, path)
    return [record]


def write_fdp_plots(result, directory: Path) -> tuple[list[str], dict]:
    """tradeoff.png and delta_curve.png, and what they drew (for figures.json)."""
    directory = Path(directory)
    records = {"tradeoff": tradeoff_plot(result, directory / "tradeoff.png"),
               "delta_curve": delta_plot(result, directory / "delta_curve.png")}
    return ["tradeoff.png", "delta_curve.png"], {"pictures": records}


def table_cells(entry: dict) -> tuple[str, str]:
    """(claim, certified) cells of a curve entry in the report's summary table."""
    c, t = entry["claimed"], entry["test"]
    certified = (f"μ ≥ {num(entry['mu_lower_bound'])}" if c["curve"] == "gdp" else
                 f"test α ≤ {num(t['alpha_upper'])}, β ≤ {num(t['beta_upper'])} (f(α) = "
                 f"{num(t['claimed_beta'])})")
    return c["text"], certified


def markdown_lines(entry: dict) -> list[str]:
    """A curve entry's lines in the report (before its witness lines)."""
    c, t, w = entry["claimed"], entry["test"], entry["worst_epsilon"]
    lines = [f"- claim: {c['text']} (f-DP, Dong, Roth & Su 2022): every test of D′ against D "
             "with false-positive rate α has false-negative rate β ≥ f(α)",
             f"- certified test: α ≤ {num(t['alpha_upper'])}, β ≤ {num(t['beta_upper'])}; "
             f"the claim allows β ≥ {num(t['claimed_beta'])} there"]
    if c["curve"] == "gdp":
        lines.append(f"- certified μ ≥ {num(entry['mu_lower_bound'])} (claimed μ = "
                     f"{num(c['gdp_mu'])})")
    if entry["verdict"] == "violation":
        lines.append(f"- largest excess: at ε = {num(w['epsilon'])} certified δ ≥ "
                     f"{num(w['certified_delta'])}, the claim's δ = {num(w['claimed_delta'])}")
    lines += [f"- certified ε ≥ {num(entry['epsilon_lower_bound'])} at δ = "
              f"{c['reference_delta']:g} (the claim's ε there: "
              f"{num(c['epsilon_at_reference_delta'])})",
              "- every figure is read from one Clopper–Pearson box (two bounds at "
              "(1 − confidence)/2 each), so they hold together at the stated confidence"]
    return lines
