"""Plots of an audit (matplotlib, Agg backend): they draw results, they never compute bounds."""
from __future__ import annotations

import math
import textwrap
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.patches import Polygon, Rectangle  # noqa: E402
from matplotlib.ticker import (FormatStrFormatter, LogLocator, MaxNLocator,  # noqa: E402
                               NullFormatter, NullLocator)

from ..evidence import floor_to, lower_bound_text  # noqa: E402
from .figures import allowed_p, figure_data, zoom_window  # noqa: E402
from ..region import boundary  # noqa: E402


def _verdict_text(result) -> str:
    claim = f"(ε={result.claimed_epsilon:g}, δ={result.claimed_delta:g})"
    if result.verdict == "violation":
        return (f"VIOLATION: not {claim}-DP; certified ε ≥ "
                f"{lower_bound_text(result.epsilon_lower_bound, result.claimed_epsilon)} "
                f"at confidence {result.confidence:g}"
                + (" (marginal: confirm it)" if getattr(result, "marginal", False) else ""))
    if not result.conclusive:
        return (f"INCONCLUSIVE: no violation of {claim} found, but this budget could not have "
                f"caught a gross one (ε ≥ {result.gross_epsilon:.3g})")
    return f"pass: no violation of {claim} found at this budget (not a proof)"


def verdict_colour(result) -> str:
    """Red for a violation, amber for an inconclusive audit, green for a pass."""
    return {"violation": VIOLATION_RED, "inconclusive": INCONCLUSIVE_AMBER}.get(
        result.outcome, PASS_GREEN)


def _verdict_box(ax, result, x: float, y: float, extra: str = "", **kw) -> None:
    ax.text(x, y, _verdict_text(result) + extra, transform=ax.transAxes, fontsize=7,
            bbox=dict(fc="white", ec="#999999"), **kw)


def save_figure(fig, path: Path) -> None:
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


VIOLATION_RED, PASS_BLUE, CLAIM_GREEN = "#c62828", "#1f4e9c", "#cfe8cf"
PASS_GREEN, INCONCLUSIVE_AMBER = "#1b5e20", "#b26a00"


def _claim_label(result) -> str:
    return f"allowed by the claim (ε={result.claimed_epsilon:g}, δ={result.claimed_delta:g})"


def _region(ax, result, q_range) -> None:
    """Shade the claimed region between the axis bottom and p = allowed_p(q) (log q grid)."""
    q = np.logspace(math.log10(q_range[0]), math.log10(q_range[1]), 400)
    top = allowed_p(q, result.claimed_epsilon, result.claimed_delta)
    ax.fill_between(q, 1e-300, top, color=CLAIM_GREEN, label=_claim_label(result), zorder=0)
    ax.plot(q, top, color="#2e7d32", lw=1.2, zorder=1)


def _floor(values, fallback: float) -> float:
    positive = [v for v in values if v > 0]
    return min(positive) if positive else fallback


def _draw_shape(ax, shape, colour, label, lo_q: float) -> None:
    """The witness's certified shape; a vertex at q = 0 is drawn at the panel's left edge."""
    if not shape:
        return
    pts = [(max(q, lo_q), p) for q, p in shape]
    ax.add_patch(Polygon(pts, closed=True, fc=colour, ec=colour, alpha=0.35, lw=2, zorder=4,
                         label=label))
    ax.add_patch(Polygon(pts, closed=True, fill=False, ec=colour, lw=2, zorder=5))


def _plain_log_ticks(ax) -> None:
    """Tick labels as plain numbers (0.012, not 1.2×10⁻²), few enough not to collide: a
    log locator over a wide range, evenly spaced values over a narrow one."""
    for axis, (low, high) in ((ax.xaxis, ax.get_xlim()), (ax.yaxis, ax.get_ylim())):
        if high / low < 10:
            axis.set_major_locator(MaxNLocator(4))
            axis.set_minor_locator(NullLocator())
        else:
            axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0), numticks=6))
            axis.set_minor_locator(NullLocator())
        axis.set_major_formatter(FormatStrFormatter("%.3g"))
        axis.set_minor_formatter(NullFormatter())


def _witness_panel(ax, result, data) -> None:
    """Left panel: the witness's certified shape against the claim, zoomed on it."""
    w, wd = result.witness, data["witness"]
    certified = wd["certified_epsilon"]
    (q0, q1), (p0, p1) = zoom_window(wd["shape"] or [tuple(wd["box"][1:3])],
                                     result.claimed_epsilon, certified)
    _region(ax, result, (q0, q1))
    q = np.logspace(math.log10(q0), math.log10(q1), 200)
    colour = VIOLATION_RED if wd["outside"] else PASS_BLUE
    if math.isfinite(certified):
        ax.plot(q, np.exp(certified) * q + result.claimed_delta, color=colour, ls="--", lw=1.2,
                label=f"certified: p ≥ exp({floor_to(certified, 4):.4g})·q + δ", zorder=3)
    q_low, q_high, p_low, p_high = wd["box"]
    ax.add_patch(Rectangle((max(q_low, q0), p_low), q_high - max(q_low, q0), p_high - p_low,
                           fill=False, ec="#555555", lw=0.8, ls=":", zorder=3,
                           label="Clopper–Pearson box of the witness"))
    what = ("the witness: wholly outside, a violation" if wd["outside"]
            else "the best test: it reaches the allowed region")
    _draw_shape(ax, wd["shape"], colour, what, q0)
    ax.set(xscale="log", yscale="log", xlim=(q0, q1), ylim=(p0, p1),
           xlabel="q = P[M(D′) ∈ S]  (log)", ylabel="p = P[M(D) ∈ S]  (log)",
           title=f"witness event: {w.count_D:,} of {w.samples_D:,} runs on D, "
                 f"{w.count_D_prime:,} of {w.samples_D_prime:,} on D′", )
    ax.title.set_fontsize(9)
    _plain_log_ticks(ax)
    ax.legend(loc="upper left", fontsize=7, framealpha=0.92)


def _family_panel(ax, result, data) -> None:
    """Right panel: every test of the witness's family (boxes), on log axes to the corner."""
    boxes = [f["box"] for f in data["family"]] + ([data["witness"]["box"]]
                                                   if data["witness"] else [])
    q0 = _floor([b[0] for b in boxes] + [b[1] for b in boxes], 1e-6) / 3
    p0 = _floor([b[2] for b in boxes], 1e-6) / 3
    _region(ax, result, (q0, 1.0))
    for f in data["family"]:
        q_low, q_high, p_low, p_high = f["box"]
        ax.add_patch(Rectangle((max(q_low, q0), max(p_low, p0)), q_high - max(q_low, q0),
                               p_high - max(p_low, p0), fill=False, lw=0.9, zorder=3,
                               ec=VIOLATION_RED if f["outside"] else "#555555"))
    if data["witness"]:
        colour = VIOLATION_RED if data["witness"]["outside"] else PASS_BLUE
        _draw_shape(ax, data["witness"]["shape"], colour, None, q0)
    conf = data.get("box_confidence")
    ax.plot([], [], color="#555555", lw=0.9, label="tests of the witness's score at other "
            "thresholds" + (f"\n(boxes jointly at confidence {conf:.3g})" if conf else ""))
    ax.set(xscale="log", yscale="log", xlim=(q0, 1.0), ylim=(p0, 1.0),
           xlabel="q = P[M(D′) ∈ S]  (log)", ylabel="p = P[M(D) ∈ S]  (log)",
           title="the witness's family of tests")
    ax.legend(loc="lower right", fontsize=7, framealpha=0.92)


def _wealth_panel(ax, result, data) -> None:
    """A betting test's evidence: its wealth against the runs bet on, and the line 1/α_bet at
    which it proves a violation (docs/theory.md §2.12)."""
    wd = data["witness"]
    runs = [n for n, _ in wd["wealth_path"]]
    wealth = [w for _, w in wd["wealth_path"]]
    colour = VIOLATION_RED if wd["outside"] else PASS_BLUE
    ax.plot(runs, wealth, marker="o", ms=3, color=colour,
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
    ax.legend(loc="upper left", fontsize=7, framealpha=0.92)


def witness_plot(result, path: Path) -> dict:
    """The first picture: the witness's certified shape against the claimed region on log
    axes, zoomed on the witness (left), and the whole family of its tests (right); for a
    betting test's violation, its wealth path. Returns the figure data it drew
    (figures.figure_data)."""
    data = figure_data(result)
    if data["witness"] is not None and "wealth_path" in data["witness"]:
        fig, ax = plt.subplots(figsize=(8.0, 5.0), dpi=110)
        _wealth_panel(ax, result, data)
        fig.suptitle(f"{result.mechanism}: {_verdict_text(result)}", fontsize=9,
                     color=verdict_colour(result))
        save_figure(fig, path)
        return data
    fig, (left, right) = plt.subplots(1, 2, figsize=(12.0, 5.6), dpi=110)
    _witness_panel(left, result, data)
    _family_panel(right, result, data)
    fig.suptitle(f"{result.mechanism}: {_verdict_text(result)}", fontsize=10,
                 color=verdict_colour(result))
    save_figure(fig, path)
    return data


def loss_bounds_plot(result, path: Path, data: dict) -> None:
    """How much each test of the family reveals: the range of ln((p − δ)/q) its box allows,
    against the claimed ε, with the witness's certified bound."""
    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=110)
    thresholds = np.asarray(result.curves.thresholds, dtype=float)
    lows = np.array([f["loss"][0] for f in data["family"]])
    highs = np.array([f["loss"][1] for f in data["family"]])
    finite = np.concatenate([lows[np.isfinite(lows)], highs[np.isfinite(highs)],
                             [result.claimed_epsilon]])
    top = max(finite.max() * 1.15, result.claimed_epsilon * 1.5)
    bottom = min(finite.min(), 0.0) - 0.05 * top
    for t, lo, hi, f in zip(thresholds, lows, highs, data["family"]):
        ax.vlines(t, max(lo, bottom), min(hi, top), lw=3,
                  color=VIOLATION_RED if f["outside"] else "#555555")
    ax.axhline(result.claimed_epsilon, color="#2e7d32", lw=1.4,
               label=f"claimed ε = {result.claimed_epsilon:g}")
    ax.axhspan(bottom, result.claimed_epsilon, color=CLAIM_GREEN, alpha=0.5, zorder=0)
    certified = data["witness"]["certified_epsilon"] if data["witness"] else -math.inf
    if math.isfinite(certified):
        colour = VIOLATION_RED if certified > result.claimed_epsilon else PASS_BLUE
        ax.axhline(certified, color=colour, ls="--", lw=1.2,
                   label=f"witness: certified ε ≥ {floor_to(certified, 4):.4g}")
    ax.plot([], [], color="#555555", lw=3, label="range of ln((p − δ)/q) a test's box allows")
    ax.set(xlabel="threshold of the witness's score", ylabel="privacy loss ln((p − δ)/q)",
           ylim=(bottom, top), title=f"{result.mechanism}: how much each test reveals")
    ax.legend(fontsize=7.5, loc="lower left")
    save_figure(fig, path)


def tradeoff_plot(result, path: Path, exact_tradeoff=None) -> None:
    """The family's boxes on the classic linear trade-off axes (α, β) over the claimed region:
    boxes only, since bare point estimates fall outside the region on correct mechanisms."""
    c = result.curves
    fig, ax = plt.subplots(figsize=(6.4, 6.0), dpi=110)
    a = np.linspace(0, 1, 501)
    f = boundary(a, result.claimed_epsilon, result.claimed_delta)
    ax.fill_between(a, f, 1, color=CLAIM_GREEN, label=_claim_label(result))
    ax.plot(a, f, color="#2e7d32", lw=1.2)
    if exact_tradeoff is not None:
        ax.plot(a, exact_tradeoff(a), color=PASS_BLUE, lw=1.5, ls="--",
                label="exact trade-off curve of this mechanism")
    for al, ah, bl, bh, out in zip(c.alpha_low, c.alpha_high, c.beta_low, c.beta_high,
                                   c.outside):
        ax.add_patch(Rectangle((al, bl), ah - al, bh - bl, lw=1.0,
                               fc=VIOLATION_RED if out else "#555555", alpha=0.5,
                               ec=VIOLATION_RED if out else "#333333"))
    ax.plot([], [], color="#555555", lw=4, label="tests of the witness's score "
            f"(Clopper–Pearson boxes, jointly at {c.box_confidence:.3g})")
    ax.set(xlim=(0, 1), ylim=(0, 1), xlabel="false-positive rate α = P[M(D′) ∈ S]",
           ylabel="false-negative rate β = P[M(D) ∉ S]",
           title=f"{result.mechanism}: trade-off plane (linear axes)")
    ax.legend(loc="upper right", fontsize=7.5, framealpha=0.9)
    _verdict_box(ax, result, 0.02, 0.02)
    save_figure(fig, path)


def delta_plot(result, path: Path) -> None:
    """Certified lower bound on δ(ε) against ε on a log axis, the claim marked, and the
    witness's statement δ(ε) > claimed δ for every ε below its certified bound."""
    c = result.curves
    eps, low = np.asarray(c.epsilons), np.asarray(c.delta_lower)
    positive = low[low > 0]
    floor = min([*positive, result.claimed_delta or 1.0, 1e-3]) / 10
    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=110)
    ax.semilogy(eps, np.where(low > 0, low, np.nan), color=PASS_BLUE, lw=1.6,
                label="certified lower bound on δ(ε), from the family's boxes")
    ax.axvline(result.claimed_epsilon, color="#555555", ls=":", lw=1)
    if result.claimed_delta > 0:
        ax.axhspan(floor, result.claimed_delta, color=CLAIM_GREEN, alpha=0.6,
                   label=f"δ allowed by the claim (≤ {result.claimed_delta:g})")
    certified = result.epsilon_lower_bound
    if math.isfinite(certified) and certified > 0:
        height = max(result.claimed_delta, floor * 1.5)
        colour = VIOLATION_RED if result.verdict == "violation" else PASS_BLUE
        ax.plot([0, min(certified, eps[-1])], [height, height], color=colour, lw=3,
                label=f"witness: δ(ε) > {result.claimed_delta:g} for every ε < "
                      f"{floor_to(certified, 4):.4g}")
    ax.set(xlabel="ε", ylabel="δ(ε)  (log)", ylim=(floor, 1.0), xlim=(0, eps[-1]),
           title=f"{result.mechanism}: privacy loss profile")
    ax.legend(fontsize=7.5, loc="upper right")
    save_figure(fig, path)


def pvalue_plot(result, path: Path) -> None:
    """StatDP's view: p-value of "ε-DP on the witness event" against the test ε."""
    c = result.curves
    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=110)
    pv = np.clip(np.asarray(c.pvalues), 1e-300, 1)
    ax.semilogy(c.epsilons, pv, color="#1f4e9c", lw=1.6, label="p-value")
    ax.axvline(result.claimed_epsilon, color="#c62828", ls="--", lw=1,
               label=f"claimed ε = {result.claimed_epsilon:g}")
    ax.axhline(1 - result.confidence, color="#555555", ls=":", lw=1,
               label=f"significance {1 - result.confidence:g}")
    ax.set(xlabel="test ε", ylabel="p-value of “ε-DP on the witness event”",
           title=f"{result.mechanism}: p-value against ε")
    ax.set_ylim(max(pv.min(), 1e-30) / 10, 2)
    ax.legend(fontsize=7.5, loc="lower right")
    _verdict_box(ax, result, 0.02, 0.97, va="top")
    save_figure(fig, path)


def privacy_loss_labels(loss: dict) -> tuple[str, str, str]:
    """The x-axis label, title and note of a privacy-loss plot: of the output, or of the part of
    it the witness's model reads (`loss["of"]`, e.g. a mixed output's discrete part). A part is
    a post-processing of the output, so its loss distribution is a lower view of the output's
    (data processing), and the plot says so rather than call it the output's."""
    of = loss.get("of", "output")
    if of == "output":
        return ("privacy loss L(o) = ln P[M(D) = o] / P[M(D′) = o]",
                "privacy-loss distribution (plug-in estimate, not a bound)", "")
    return ("privacy loss L(d) = ln P[d(M(D)) = d] / P[d(M(D′)) = d]",
            "privacy loss of the output's discrete part\n(plug-in estimate, not a bound)",
            textwrap.fill(f"d = the {of}: a post-processing of the output, so this is a lower "
                          "view of the output's privacy loss", 60))


def privacy_loss_plot(result, path: Path) -> None:
    """Discrete outputs (or a mixed output's discrete part): the plug-in distribution of the
    privacy loss ln p(o)/q(o) under D, labelled by `privacy_loss_labels`."""
    loss = result.curves.privacy_loss
    xlabel, title, note = privacy_loss_labels(loss)
    L = np.asarray(loss["loss"])
    P = np.asarray(loss["probability"])
    finite = np.isfinite(L)
    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=110)
    mass = "P[d(M(D)) = d] at loss L(d)" if note else "P[M(D) = o] at loss L(o)"
    ax.vlines(L[finite], 0, P[finite], color="#1f4e9c", lw=2, label=mass)
    if (~finite).any():
        ax.text(0.98, 0.80, f"L = +∞ (never seen under D′): mass {P[~finite].sum():.3g}",
                transform=ax.transAxes, ha="right", fontsize=8, color="#c62828")
    for x in (-result.claimed_epsilon, result.claimed_epsilon):
        ax.axvline(x, color="#c62828", ls="--", lw=1)
    ax.axvspan(-result.claimed_epsilon, result.claimed_epsilon, color="#cfe8cf", alpha=0.5,
               label=f"|L| ≤ claimed ε = {result.claimed_epsilon:g}")
    ax.set(xlabel=xlabel, ylabel="probability", title=f"{result.mechanism}: {title}")
    if note:
        ax.text(0.98, 0.02, note, transform=ax.transAxes, ha="right", va="bottom", fontsize=7,
                color="#444444", bbox=dict(facecolor="white", alpha=0.85, edgecolor="none"))
    ax.legend(fontsize=7.5, loc="upper left")
    _verdict_box(ax, result, 0.02, 0.70, va="top")
    save_figure(fig, path)


def write_plots(result, directory: Path, exact_tradeoff=None) -> tuple[list[str], dict | None]:
    """Write the PNGs for one audited mechanism, the witness picture first; return their file
    names and the figure data they drew (None without a witness)."""
    written, data = [], None
    if result.witness is not None:
        data = witness_plot(result, directory / "witness.png")
        written.append("witness.png")
    if result.curves is None:
        return written, data
    if data is not None and data["family"]:
        loss_bounds_plot(result, directory / "privacy_loss_bounds.png", data)
        written.append("privacy_loss_bounds.png")
    tradeoff_plot(result, directory / "tradeoff.png", exact_tradeoff)
    delta_plot(result, directory / "delta_curve.png")
    pvalue_plot(result, directory / "pvalue.png")
    written += ["tradeoff.png", "delta_curve.png", "pvalue.png"]
    if result.curves.privacy_loss:
        privacy_loss_plot(result, directory / "privacy_loss.png")
        written.append("privacy_loss.png")
    return written, data


__all__ = ["witness_plot", "loss_bounds_plot", "tradeoff_plot", "delta_plot", "pvalue_plot", "privacy_loss_plot",
           "privacy_loss_labels", "write_plots"]
