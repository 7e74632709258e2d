"""Plots of an audit (matplotlib, Agg backend): they draw results, they never compute bounds.

The witness picture is here; the curve pictures (trade-off plane, δ(ε), p-values, privacy loss)
are in curve_plots.py, and what they share in drawing.py. Each picture returns the record of
what it drew (drawing.axes_record), which `write_plots` gathers for figures.json.
"""
from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np

from ..evidence import floor_to
from .curve_plots import (delta_plot, loss_bounds_plot, privacy_loss_labels,  # noqa: F401
                          privacy_loss_plot, pvalue_plot, tradeoff_plot)
from .drawing import (CLAIM_GREEN, CLAIM_LINE, PASS_BLUE, TEST_GREY, VIOLATION_RED,
                      add_element, axes_record, claim_label, confidence_text, headline,
                      legend_below, plt, save_figure, show_witness)
from .figures import allowed_p, figure_data, zoom_window
from matplotlib.patches import Rectangle
from matplotlib.ticker import (FormatStrFormatter, LogLocator, MaxNLocator, NullFormatter,
                               NullLocator)


def draw_region_qp(ax, result, q_range, label=True) -> None:
    """Shade the claimed region between the axis bottom and p = allowed_p(q) (log q grid)."""
    q = np.logspace(math.log10(q_range[0]), math.log10(q_range[1]), 400)
    top = allowed_p(q, result.claimed_epsilon, result.claimed_delta)
    ax.fill_between(q, 1e-300, top, color=CLAIM_GREEN, zorder=0,
                    label=claim_label(result) if label else None)
    ax.plot(q, top, color=CLAIM_LINE, lw=1.2, zorder=1)


def edge_qp(result, q_range) -> np.ndarray:
    """The claim's edge p = allowed_p(q) as a polyline over a log grid of q."""
    q = np.logspace(math.log10(q_range[0]), math.log10(q_range[1]), 600)
    return np.column_stack([q, allowed_p(q, result.claimed_epsilon, result.claimed_delta)])


def _floor(values, fallback: float) -> float:
    positive = [v for v in values if v > 0]
    return min(positive) if positive else fallback


def _plain_log_ticks(ax) -> None:
    """Tick labels as plain numbers (0.012, not 1.2×10⁻²), few enough not to collide: a
    log locator over a wide range, evenly spaced values over a narrow one."""
    for axis, (low, high) in ((ax.xaxis, ax.get_xlim()), (ax.yaxis, ax.get_ylim())):
        if high / low < 10:
            axis.set_major_locator(MaxNLocator(4))
        elif high / low < 1000:
            axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        else:
            axis.set_major_locator(LogLocator(base=10, subs=(1.0,), numticks=6))
        axis.set_minor_locator(NullLocator())
        axis.set_major_formatter(FormatStrFormatter("%.3g"))
        axis.set_minor_formatter(NullFormatter())


def _witness_label(outside: bool) -> str:
    return ("the witness: where its certificate puts (q, p), wholly outside: a violation"
            if outside else "the best test: where its certificate puts (q, p); it reaches "
            "the allowed region")


def _witness_panel(ax, result, data) -> list[dict]:
    """Left panel: the witness's certified shape against the claim, zoomed on it."""
    w, wd = result.witness, data["witness"]
    certified = wd["certified_epsilon"]
    (q0, q1), (p0, p1) = zoom_window(wd["shape"] or [tuple(wd["box"][1:3])],
                                     result.claimed_epsilon, certified)
    draw_region_qp(ax, result, (q0, q1))
    colour = VIOLATION_RED if wd["outside"] else PASS_BLUE
    if math.isfinite(certified):
        q = np.logspace(math.log10(q0), math.log10(q1), 200)
        ax.plot(q, np.exp(certified) * q + result.claimed_delta, color=colour, ls="--", lw=1.2,
                label=f"certified: p ≥ exp({floor_to(certified, 4):.4g})·q + δ", zorder=3)
    ax.set(xscale="log", yscale="log", xlim=(q0, q1), ylim=(p0, p1),
           xlabel="q = P[M(D′) ∈ S]  (log)", ylabel="p = P[M(D) ∈ S]  (log)",
           title=f"witness event: {w.count_D:,} of {w.samples_D:,} runs on D,\n"
                 f"{w.count_D_prime:,} of {w.samples_D_prime:,} on D′")
    ax.title.set_fontsize(9)
    record = axes_record(ax, "qp")
    if wd["shape"]:
        shape = [(max(q, q0), p) for q, p in wd["shape"]]
        show_witness(ax, record, shape, edge_qp(result, (q0, q1)), wd["outside"],
                     _witness_label(wd["outside"]), None, zoomed=True)
    _plain_log_ticks(ax)
    legend_below(ax)
    return [record]


def _family_panel(ax, result, data) -> list[dict]:
    """Right panel: every test of the witness's family (boxes), on log axes to the corner."""
    boxes = [f["box"] for f in data["family"]] + ([data["witness"]["box"]]
                                                   if data["witness"] else [])
    q0 = _floor([b[0] for b in boxes] + [b[1] for b in boxes], 1e-6) / 3
    p0 = _floor([b[2] for b in boxes], 1e-6) / 3
    draw_region_qp(ax, result, (q0, 1.0))
    ax.set(xscale="log", yscale="log", xlim=(q0, 1.0), ylim=(p0, 1.0),
           xlabel="q = P[M(D′) ∈ S]  (log)", ylabel="p = P[M(D) ∈ S]  (log)",
           title="the witness's family of tests")
    record = axes_record(ax, "qp")
    for f in data["family"]:
        q_low, q_high, p_low, p_high = f["box"]
        corners = [(max(q_low, q0), max(p_low, p0)), (q_high, max(p_low, p0)),
                   (q_high, p_high), (max(q_low, q0), p_high)]
        ax.add_patch(Rectangle(corners[0], q_high - corners[0][0], p_high - corners[0][1],
                               fill=False, lw=0.9, zorder=3,
                               ec=VIOLATION_RED if f["outside"] else TEST_GREY))
        add_element(record, "test", corners, f["outside"])
    conf = data.get("box_confidence")
    ax.plot([], [], color=TEST_GREY, lw=0.9, label="tests of the witness's score at other "
            "thresholds" + (f"\n(boxes jointly at confidence {confidence_text(conf)})"
                            if conf else ""))
    records = [record]
    wd = data["witness"]
    if wd and wd["shape"]:
        shape = [(max(q, q0), p) for q, p in wd["shape"]]
        records += show_witness(ax, record, shape, edge_qp(result, (q0, 1.0)), wd["outside"],
                                None, lambda inset, xlim: draw_region_qp(inset, result, xlim,
                                                                         False))
    legend_below(ax)
    return records


def _wealth_panel(ax, result, data) -> list[dict]:
    """A betting test's evidence: its wealth against the runs bet on, and the line 1/α_bet at
    which it proves a violation (docs/theory.md §2.12)."""
    wd = data["witness"]
    runs = [n for n, _ in wd["wealth_path"]]
    wealth = [w for _, w in wd["wealth_path"]]
    # the path in grey: only what crosses the line proves anything, and that is circled in red
    ax.plot(runs, wealth, marker="o", ms=3, color=TEST_GREY,
            label="wealth of the bets against the claim (1 at the start)")
    ax.axhline(wd["threshold"], color="#333333", ls="--", lw=1,
               label=f"1/α_bet = {wd['threshold']:.4g}: reaching it proves a violation")
    ax.axhline(1.0, color="#999999", lw=0.8)
    if wd["outside"]:
        ax.plot(runs[-1], wealth[-1], marker="o", ms=9, mfc="none", mec=VIOLATION_RED, mew=2,
                label="the round that proved it")
    ax.set(yscale="log", ylim=(min(min(wealth), 1.0) / 2, max(max(wealth), wd["threshold"]) * 3),
           xlabel=("fresh rounds of the witness's event (one run of D and one of D′ each)"
                   if wd.get("fresh_rounds") else
                   "search rounds settled (one run of D and one of D′ each), summed over pairs"),
           ylabel="wealth (log)",
           title=("confirmation: betting on the audit's event over fresh runs"
                  if wd.get("fresh_rounds") else
                  "testing by betting: the evidence against the claim"))
    ax.title.set_fontsize(9)
    legend_below(ax)
    record = axes_record(ax, "wealth")
    record["threshold"] = wd["threshold"]
    add_element(record, "wealth", list(zip(runs, wealth)), False)
    add_element(record, "witness", [(runs[-1], wealth[-1])], wd["outside"])
    return [record]


def witness_plot(result, path: Path) -> dict:
    """The first picture: the witness's certified shape against the claimed region on log
    axes, zoomed on the witness (left), and the whole family of its tests (right); for a
    betting test's witness, its wealth path. Returns the figure data it drew
    (figures.figure_data) with the record of its axes under "axes"."""
    data = figure_data(result)
    if data["witness"] is not None and "wealth_path" in data["witness"]:
        fig, ax = plt.subplots(figsize=(8.0, 5.0), dpi=110)
        data["axes"] = _wealth_panel(ax, result, data)
        headline(fig, result, 100)
        save_figure(fig, path)
        return data
    fig, (left, right) = plt.subplots(1, 2, figsize=(12.0, 5.6), dpi=110)
    data["axes"] = _witness_panel(left, result, data) + _family_panel(right, result, data)
    headline(fig, result, 140)
    save_figure(fig, path)
    return data


def write_plots(result, directory: Path, exact_tradeoff=None) -> tuple[list[str], dict | None]:
    """Write the PNGs for one audited mechanism, the witness picture first; return their file
    names and the figure data they drew (None without a witness), with each picture's axes
    records under data["pictures"][file name]."""
    written, data = [], None
    if result.witness is None:
        return written, data
    data = witness_plot(result, directory / "witness.png")
    data["pictures"] = {"witness.png": data.pop("axes")}
    written.append("witness.png")
    if result.curves is None or "wealth_path" in data["witness"]:
        return written, data
    pictures = {"privacy_loss_bounds.png": lambda p: loss_bounds_plot(result, p, data),
                "tradeoff.png": lambda p: tradeoff_plot(result, p, data, exact_tradeoff),
                "delta_curve.png": lambda p: delta_plot(result, p, data),
                "pvalue.png": lambda p: pvalue_plot(result, p)}
    if not data["family"]:
        del pictures["privacy_loss_bounds.png"]
    if result.curves.privacy_loss:
        pictures["privacy_loss.png"] = lambda p: privacy_loss_plot(result, p)
    if getattr(result, "proof", None) is not None:  # the proof before the measurement
        pictures["wealth.png"] = lambda p: witness_plot(replace(result, witness=result.proof),
                                                        p).pop("axes")
    for name, draw in pictures.items():
        drawn = draw(directory / name)
        if drawn is not None:
            data["pictures"][name] = drawn
            written.append(name)
    return written, data


__all__ = ["witness_plot", "loss_bounds_plot", "tradeoff_plot", "delta_plot", "pvalue_plot",
           "privacy_loss_plot", "privacy_loss_labels", "write_plots"]
