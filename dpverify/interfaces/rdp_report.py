"""Rényi-DP results in reports (dpverify.rdp): the witness's Clopper–Pearson box in the plane
of (q, p) = (P[M(D′) ∈ S], P[M(D) ∈ S]) against the two-cell partitions an (α, ρ)-RDP claim
allows, and the lines and table cells of an RDP entry.

A partition {S, S^c} with those probabilities has divergence D_α(Bern(p) ‖ Bern(q))
(docs/theory.md §8), convex in p with its minimum 0 at p = q, so for each q the claim allows
an interval of p; the audit's bound is the least divergence over the box, so the box lies
wholly outside that band exactly when the audit found a violation. The picture records what
it drew (interfaces/drawing.py) in coordinates "qp_renyi", with the claim's α and ρ."""
from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np

from scipy.optimize import brentq

from ..evidence import json_number as num  # a JSON entry's number, 4 digits
from ..evidence import lower_bound_text
from ..renyi import renyi_bernoulli
from .drawing import (CLAIM_GREEN, CLAIM_LINE, PASS_BLUE, add_element, axes_record,
                      legend_below, plt, save_figure, show_witness, verdict_colour)

FLOOR = 1e-9   # the smallest probability the axes show


def allowed_band(q: np.ndarray, alpha: float, rho: float) -> tuple[np.ndarray, np.ndarray]:
    """For each q, the least and the largest p with D_α(Bern(p) ‖ Bern(q)) ≤ ρ: where the
    divergence at p = 1 (−ln q) or at p = 0 (−ln(1 − q)) is within ρ the band reaches 1 or 0,
    else the edge is the root of D_α − ρ on that side of q."""
    def edge(qi, end):
        d = lambda p: float(renyi_bernoulli(p, qi, alpha)) - rho  # noqa: E731
        return end if d(end) <= 0 else brentq(d, min(qi, end), max(qi, end), xtol=1e-15,
                                               rtol=1e-12)
    low = np.array([edge(qi, 0.0) for qi in q])
    high = np.array([edge(qi, 1.0) for qi in q])
    return low, high


def verdict_line(result) -> str:
    """The verdict in one short sentence, as the picture's headline says it."""
    claim = f"(α={result.alpha:g}, ρ={result.claimed_rho:g})-RDP"
    bound = f"certified D_α ≥ {lower_bound_text(result.rho_lower_bound, result.claimed_rho)}"
    if result.verdict == "violation":
        return f"VIOLATION: not {claim}; {bound} at confidence {result.confidence:g}"
    if not result.conclusive:
        return (f"INCONCLUSIVE: no violation of {claim} found, but the bound reached less "
                f"than half of ρ; {bound}")
    return f"pass: no violation of {claim} found at this budget (not a proof); {bound}"


def region_plot(result, path: Path) -> list[dict]:
    """The claim's band of (q, p) and the witness's box, on log axes down to the box's
    smallest probability (a tenth of it, at least FLOOR); red when the box lies outside."""
    p_low, p_high, q_low, q_high = result.box
    positive = [v for v in result.box if v > 0]
    lo = max(FLOOR, min(positive, default=1.0) / 10)
    fig, ax = plt.subplots(figsize=(6.0, 5.6), dpi=110)
    ax.set(xscale="log", yscale="log", xlim=(lo, 1), ylim=(lo, 1),
           xlabel="q = P[M(D′) ∈ S]", ylabel="p = P[M(D) ∈ S]")

    def draw_claim(axes, xlim, label=None):
        q = np.geomspace(max(xlim[0], FLOOR), min(xlim[1], 1.0), 240)
        low, high = allowed_band(q, result.alpha, result.claimed_rho)
        # the band's lower edge no lower than the axes show (a log axes' fill from far below
        # its limits is not drawn in an inset)
        bottom = np.maximum(low, min(axes.get_ylim()))
        axes.fill_between(q, bottom, high, color=CLAIM_GREEN, label=label, zorder=2)
        axes.plot(q, high, color=CLAIM_LINE, lw=1.2)
        axes.plot(q, bottom, color=CLAIM_LINE, lw=1.2)
        return q, low, high

    q, low, high = draw_claim(ax, (lo, 1.0), label=f"allowed by (α={result.alpha:g}, "
                                                   f"ρ={result.claimed_rho:g})-RDP")
    record = axes_record(ax, "qp_renyi")
    record.update(alpha=result.alpha, rho=result.claimed_rho)
    add_element(record, "claim", np.column_stack([q, high]), False)
    box = [(max(q_low, lo), p_low), (q_high, p_low), (q_high, p_high), (max(q_low, lo), p_high)]
    red = result.verdict == "violation"
    edge = np.column_stack([q, high])
    label = ("the witness's Clopper–Pearson box (its least D_α is the bound)" if red
             else "the witness's Clopper–Pearson box, which meets the claim")
    zoom = show_witness(ax, record, box, edge, red, label, draw_claim)
    if not red:  # show_witness rings only a violation's speck; a pass's box is marked too
        centre = (np.sqrt(max(q_low, lo) * q_high), np.sqrt(p_low * p_high))
        ax.plot(*centre, marker="o", ms=16, mfc="none", mec=PASS_BLUE, mew=1.6, zorder=6)
    legend_below(ax)
    fig.suptitle(textwrap.fill(f"{result.mechanism}: {verdict_line(result)}", 75),
                 fontsize=8.5, color=verdict_colour(result), y=1.0)
    save_figure(fig, path)
    return [record] + zoom


def write_rdp_plots(result, directory: Path) -> tuple[list[str], dict | None]:
    """renyi_box.png and what it drew (for figures.json); nothing without a witness."""
    if result.witness is None or result.box is None:
        return [], None
    records = region_plot(result, Path(directory) / "renyi_box.png")
    return ["renyi_box.png"], {"claim": {"rdp_alpha": result.alpha,
                                         "rdp_rho": result.claimed_rho},
                               "verdict": result.verdict, "witness": result.witness.as_dict(),
                               "pictures": {"renyi_box.png": records}}


def table_cells(entry: dict) -> tuple[str, str]:
    """(claim, certified) cells of an RDP entry in the report's summary table."""
    c = entry["claimed"]
    return (f"(α={num(c['rdp_alpha'])}, ρ={num(c['rdp_rho'])})-RDP ⇒ "
            f"({num(c['implied_epsilon'])}, {num(c['implied_delta'])})",
            f"D_α ≥ {lower_bound_text(float(entry['rho_lower_bound']), float(c['rdp_rho']))}")


def markdown_lines(entry: dict) -> list[str]:
    """An RDP entry's lines in the report (before its witness)."""
    c = entry["claimed"]
    bound = lower_bound_text(float(entry["rho_lower_bound"]), float(c["rdp_rho"]))
    implied = (f"it implies ({num(c['implied_epsilon'])}, {num(c['implied_delta'])})-DP "
               "(Balle et al. 2020), not audited here")
    return [f"- claim: (α = {num(c['rdp_alpha'])}, ρ = {num(c['rdp_rho'])})-Rényi DP (Mironov "
            f"2017); {implied}",
            f"- certified D_α ≥ {bound}: the least two-cell divergence "
            "over the witness's Clopper–Pearson box, each of its four bounds at "
            "(1 − confidence)/4, so a mechanism meeting its claim is flagged in at most "
            f"1 − confidence = {1 - float(entry['confidence']):.3g} of audits"]
