"""The curve pictures of an audit (docs/method.md, "Pictures"): the trade-off plane, how much
each test reveals, δ(ε), p-values against ε, and the plug-in privacy loss. Each draws the
claim's region in its own coordinates, the witness in red where its certificate puts it when it
proves a violation, and returns the records of its axes (drawing.axes_record)."""
from __future__ import annotations

import math
import textwrap
from pathlib import Path

import numpy as np
from matplotlib.patches import Rectangle

from ..levels import claim_pvalue
from ..evidence import floor_to
from ..region import boundary
from .drawing import (CLAIM_GREEN, CLAIM_LINE, PASS_BLUE, TEST_GREY, VIOLATION_RED,
                      add_element, axes_record, claim_label, confidence_text, headline,
                      legend_below, plt, save_figure, show_witness)
from .figures import claimed_profile, shape_delta_lower, to_tradeoff


def finished(fig, ax, result, path: Path, records: list) -> list[dict]:
    """Every curve picture's last steps: legend under the axes, the verdict on top, saved; its
    records returned."""
    legend_below(ax)
    headline(fig, result, 85)
    save_figure(fig, path)
    return records


def _is_violation(result) -> bool:
    return result.verdict == "violation"


def _draw_region_ab(ax, result, xlim=(0.0, 1.0), label=False) -> None:
    a = np.linspace(max(xlim[0], 0.0), min(xlim[1], 1.0), 801)
    f = boundary(a, result.claimed_epsilon, result.claimed_delta)
    ax.fill_between(a, f, 1, color=CLAIM_GREEN, label=claim_label(result) if label else None)
    ax.plot(a, f, color=CLAIM_LINE, lw=1.2)


def tradeoff_plot(result, path: Path, data: dict, exact_tradeoff=None) -> list[dict]:
    """The family's boxes and the witness on the classic linear trade-off axes (α, β) = (q,
    1 − p) over the claimed region R(ε, δ) (theory.md §1.2): boxes only, since bare point
    estimates fall outside the region on correct mechanisms; a witness too small or too close
    to the edge to see is ringed and zoomed."""
    c = result.curves
    fig, ax = plt.subplots(figsize=(6.4, 6.4), dpi=110)
    _draw_region_ab(ax, result, label=True)
    if exact_tradeoff is not None:
        a = np.linspace(0, 1, 501)
        ax.plot(a, exact_tradeoff(a), color=PASS_BLUE, lw=1.5, ls="--",
                label="exact trade-off curve of this mechanism")
    ax.set(xlim=(0, 1), ylim=(0, 1), xlabel="false-positive rate α = P[M(D′) ∈ S]",
           ylabel="false-negative rate β = P[M(D) ∉ S]", title="trade-off plane (linear axes)")
    record = axes_record(ax, "ab")
    for al, ah, bl, bh, out in zip(c.alpha_low, c.alpha_high, c.beta_low, c.beta_high,
                                   c.outside):
        ax.add_patch(Rectangle((al, bl), ah - al, bh - bl, lw=1.0, alpha=0.5,
                               fc=VIOLATION_RED if out else TEST_GREY,
                               ec=VIOLATION_RED if out else "#333333"))
        add_element(record, "test", [(al, bl), (ah, bl), (ah, bh), (al, bh)], out)
    ax.plot([], [], color=TEST_GREY, lw=4, label="tests of the witness's score (Clopper–"
            f"Pearson boxes, jointly at {confidence_text(c.box_confidence)})")
    records = [record]
    wd = data["witness"]
    if wd and wd["shape"]:
        a = np.linspace(0, 1, 4001)
        edge = np.column_stack([a, boundary(a, result.claimed_epsilon, result.claimed_delta)])
        records += show_witness(ax, record, to_tradeoff(wd["shape"]), edge, wd["outside"],
                                "the witness, where its certificate puts it",
                                lambda inset, xlim: _draw_region_ab(inset, result, xlim))
    return finished(fig, ax, result, path, records)


def loss_bounds_plot(result, path: Path, data: dict) -> list[dict]:
    """How much each test of the family reveals: the range of ln((p − δ)/q) its box allows
    (light), its certified lower end (dark, red when above the claimed ε), against the claimed
    ε, with the witness's certified bound."""
    eps = result.claimed_epsilon
    fig, ax = plt.subplots(figsize=(6.4, 4.4), dpi=110)
    thresholds = np.asarray(result.curves.thresholds, dtype=float)
    lows = np.array([f["loss"][0] for f in data["family"]])
    highs = np.array([f["loss"][1] for f in data["family"]])
    certified = data["witness"]["certified_epsilon"] if data["witness"] else -math.inf
    finite = np.concatenate([lows[np.isfinite(lows)], highs[np.isfinite(highs)], [eps],
                             [certified] if math.isfinite(certified) else []])
    top = max(finite.max() * 1.15, eps * 1.5)
    bottom = min(finite.min(), 0.0) - 0.05 * top
    span = thresholds.max() - thresholds.min() if len(thresholds) > 1 else 1.0
    xlim = (thresholds.min() - 0.05 * span, thresholds.max() + 0.05 * span)
    ax.axhspan(bottom, eps, color=CLAIM_GREEN, alpha=0.6, zorder=0,
               label=f"allowed by the claim: ln((p − δ)/q) ≤ ε = {eps:g}")
    ax.axhline(eps, color=CLAIM_LINE, lw=1.4)
    ax.set(xlabel="threshold of the witness's score", ylabel="privacy loss ln((p − δ)/q)",
           ylim=(bottom, top), xlim=xlim, title="how much each test of the family reveals")
    record = axes_record(ax, "loss")
    for t, lo, hi in zip(thresholds, lows, highs):
        ax.vlines(t, max(lo, bottom), min(hi, top), lw=4, color="#bdbdbd", zorder=2)
        if math.isfinite(lo) and lo > bottom:
            out = lo > eps
            ax.plot(t, lo, marker="_", ms=10, mew=2.5, zorder=3,
                    color=VIOLATION_RED if out else "#333333")
            add_element(record, "test", [(t, lo)], out)
    ax.plot([], [], color="#bdbdbd", lw=4, label="what a test's counts allow (its box's range)")
    ax.plot([], [], color="#333333", marker="_", ms=10, mew=2.5, ls="none",
            label="its certified lower end")
    records = [record]
    if math.isfinite(certified):
        red = certified > eps and _is_violation(result)
        line = [(xlim[0], certified), (xlim[1], certified)]
        edge = [(x, eps) for x in np.linspace(*xlim, 50)]
        records += show_witness(ax, record, line, edge, red,
                                f"witness: certified ε ≥ {floor_to(certified, 4):.4g}",
                                lambda inset, lim: (inset.axhspan(-1e9, eps, color=CLAIM_GREEN),
                                                    inset.axhline(eps, color=CLAIM_LINE)),
                                closed=False, square=False)
    return finished(fig, ax, result, path, records)


def _profile_edge(result, eps_grid, floor: float) -> np.ndarray:
    """The edge of what the claim allows, as drawn on a log δ axis down to `floor`: its profile
    where that is above the floor, and the drop to the floor where it ends (a claim with δ
    below the floor allows nothing visible beyond its ε)."""
    profile = claimed_profile(eps_grid, result.claimed_epsilon, result.claimed_delta)
    keep = profile >= floor
    edge = np.column_stack([eps_grid[keep], profile[keep]])
    if not keep.all():
        last = eps_grid[keep][-1] if keep.any() else eps_grid[0]
        edge = np.vstack([edge, [[last, floor]]])
    return edge


def delta_plot(result, path: Path, data: dict) -> list[dict]:
    """δ(ε) on a log axis: the most the claim allows at each ε (green, theory.md §1.3), the
    family's certified lower bound, and the witness's: δ(ε′) ≥ min over its shape of p − e^ε′ q,
    drawn in red where it exceeds what the claim allows."""
    c = result.curves
    eps, low = np.asarray(c.epsilons), np.asarray(c.delta_lower)
    grid = np.linspace(0, eps[-1], 801)
    shape = data["witness"]["shape"] if data["witness"] else []
    witness = shape_delta_lower(shape, grid)
    positive = [*low[low > 0], *witness[witness > 0], result.claimed_delta or 1.0, 1e-3]
    floor = min(positive) / 10
    fig, ax = plt.subplots(figsize=(6.4, 4.4), dpi=110)
    allowed = claimed_profile(grid, result.claimed_epsilon, result.claimed_delta)
    ax.fill_between(grid, floor, np.maximum(allowed, floor), color=CLAIM_GREEN, alpha=0.8,
                    label="δ(ε) the claim allows")
    ax.plot(grid, np.maximum(allowed, floor), color=CLAIM_LINE, lw=1.2)
    ax.set(yscale="log", xlabel="ε", ylabel="δ(ε)  (log)", ylim=(floor, 1.0),
           xlim=(0, eps[-1]), title="privacy loss profile δ(ε)")
    record = axes_record(ax, "delta")
    family_out = low > claimed_profile(eps, result.claimed_epsilon, result.claimed_delta)
    ax.plot(eps, np.where(low > 0, low, np.nan), color=TEST_GREY, lw=1.4,
            label="certified lower bound from the family's boxes")
    add_element(record, "test", [(e, d) for e, d, o in zip(eps, low, family_out)
                                 if d > 0 and not o], False)
    if family_out.any():  # drawn red over the grey where the family proves more than allowed
        red = _is_violation(result)
        ax.plot(eps, np.where(family_out, low, np.nan), lw=1.4, marker=".",
                color=VIOLATION_RED if red else TEST_GREY)
        add_element(record, "test", [(e, d) for e, d, o in zip(eps, low, family_out) if o], red)
    records = [record]
    above = witness > allowed
    if shape:
        ax.plot(grid, np.where(witness > 0, witness, np.nan), color=PASS_BLUE, lw=1.2, ls="--",
                label="the witness's certified lower bound")
    if above.any():
        points = list(zip(grid[above], witness[above]))
        records += show_witness(ax, record, points, _profile_edge(result, grid, floor),
                                _is_violation(result), "where it exceeds what the claim allows",
                                lambda inset, xlim: _draw_profile(inset, result, xlim, floor),
                                closed=False, square=False)
    return finished(fig, ax, result, path, records)


def _draw_profile(ax, result, xlim, floor: float) -> None:
    grid = np.linspace(xlim[0], xlim[1], 400)
    top = np.maximum(claimed_profile(grid, result.claimed_epsilon, result.claimed_delta), floor)
    ax.fill_between(grid, floor, top, color=CLAIM_GREEN, alpha=0.8)
    ax.plot(grid, top, color=CLAIM_LINE, lw=1.2)


def pvalue_plot(result, path: Path) -> list[dict] | None:
    """StatDP's view: the p-value of "ε′-DP on the witness's event" against ε′, by the
    witness's own certificate (levels.claim_pvalue), so that at the claimed ε it is
    below 1 − confidence exactly when the witness proves a violation. The claim is rejected
    where ε′ ≥ the claimed ε and the p-value is below 1 − confidence."""
    w, alpha, eps = result.witness, 1 - result.confidence, result.claimed_epsilon
    if w.level is None:  # a witness from before levels were kept: nothing to recompute from
        return None
    top = result.curves.epsilons[-1]
    # the curves' grid, made finer, with the claimed ε and the stretch up to the witness's
    # bound, which the picture must show however narrow it is
    grid = np.unique(np.concatenate([np.linspace(0, top, 121), [eps], np.linspace(
        eps, min(max(result.epsilon_lower_bound, eps), top), 12)]))
    pv = np.array([claim_pvalue(w, e, result.claimed_delta, alpha) for e in grid])
    floor = max(min(pv.min(), alpha) / 10, 1e-30)
    fig, ax = plt.subplots(figsize=(6.4, 4.4), dpi=110)
    _draw_rejection(ax, eps, grid[-1], floor, alpha,
                    "rejects the claim (ε′ ≥ claimed ε, p-value < 1 − confidence)")
    ax.semilogy(grid, np.maximum(pv, floor), color=TEST_GREY, lw=1.6,
                label=f"p-value of ε′-DP on the witness's event ({w.certificate})")
    ax.set(xlabel="ε′", ylabel="p-value  (log)", ylim=(floor, 2), xlim=(0, grid[-1]),
           title=textwrap.fill("p-value of “ε′-DP on the witness's event” against ε′", 60))
    record = axes_record(ax, "pvalue")
    record["significance"] = alpha
    add_element(record, "test", list(zip(grid, np.maximum(pv, floor))), False)
    records = [record]
    rejected = (grid >= eps) & (pv < alpha)
    if rejected.any():
        edge = [(eps, floor), (eps, alpha)] + [(x, alpha) for x in np.linspace(eps, grid[-1], 60)]
        points = list(zip(grid[rejected], np.maximum(pv[rejected], floor)))
        records += show_witness(ax, record, points, edge, _is_violation(result),
                                "where the witness rejects the claim",
                                lambda inset, xlim: _draw_rejection(inset, eps, xlim[1], floor,
                                                                    alpha),
                                closed=False, square=False)
    return finished(fig, ax, result, path, records)


def _draw_rejection(ax, eps: float, right: float, floor: float, alpha: float,
                    label=None) -> None:
    """The p-values that reject the claim: ε′ ≥ the claimed ε and below 1 − confidence."""
    ax.fill_between([eps, right], floor, alpha, color="#f6d5d5", label=label)
    ax.plot([eps, eps, right], [floor, alpha, alpha], color=VIOLATION_RED, lw=1)


def privacy_loss_labels(loss: dict) -> tuple[str, str, str]:
    """The x-axis label, title and note of a privacy-loss plot: of the output, or of the part of
    it the witness's model reads (`loss["of"]`, e.g. a mixed output's discrete part). A part is
    a post-processing of the output, so its loss distribution is a lower view of the output's
    (data processing), and the plot says so rather than call it the output's."""
    of = loss.get("of", "output")
    if of == "output":
        return ("privacy loss L(o) = ln P[M(D) = o] / P[M(D′) = o]",
                "privacy-loss distribution\n(plug-in estimate, not a bound)", "")
    return ("privacy loss L(d) = ln P[d(M(D)) = d] / P[d(M(D′)) = d]",
            "privacy loss of the output's discrete part\n(plug-in estimate, not a bound)",
            textwrap.fill(f"d = the {of}: a post-processing of the output, so this is a lower "
                          "view of the output's privacy loss", 60))


def privacy_loss_plot(result, path: Path) -> list[dict]:
    """Discrete outputs (or a mixed output's discrete part): the plug-in distribution of the
    privacy loss ln p(o)/q(o) under D, labelled by `privacy_loss_labels`, drawn in grey as
    an estimate (never red: it certifies nothing)."""
    loss = result.curves.privacy_loss
    xlabel, title, note = privacy_loss_labels(loss)
    L = np.asarray(loss["loss"])
    P = np.asarray(loss["probability"])
    finite = np.isfinite(L)
    fig, ax = plt.subplots(figsize=(6.4, 4.6), dpi=110)
    mass = "P[d(M(D)) = d] at loss L(d)" if note else "P[M(D) = o] at loss L(o)"
    ax.vlines(L[finite], 0, P[finite], color=TEST_GREY, lw=2, label=mass + " (estimated)")
    if (~finite).any():
        ax.text(0.98, 0.80, f"L = +∞ (never seen under D′): estimated mass "
                f"{P[~finite].sum():.3g}", transform=ax.transAxes, ha="right", fontsize=8,
                color="#333333")
    eps = result.claimed_epsilon
    ax.axvspan(-eps, eps, color=CLAIM_GREEN, alpha=0.5, label=f"|L| ≤ claimed ε = {eps:g}")
    ax.set(xlabel=xlabel, ylabel="estimated probability", title=title)
    ax.title.set_fontsize(10)
    if note:
        ax.text(0.98, 0.02, note, transform=ax.transAxes, ha="right", va="bottom", fontsize=7,
                color="#444444", bbox=dict(facecolor="white", alpha=0.85, edgecolor="none"))
    record = axes_record(ax, "loss_estimate")
    add_element(record, "estimate", list(zip(L[finite], P[finite])), False)
    return finished(fig, ax, result, path, [record])


__all__ = ["tradeoff_plot", "loss_bounds_plot", "delta_plot", "pvalue_plot",
           "privacy_loss_labels", "privacy_loss_plot"]
