"""Plots of an audit (matplotlib, Agg backend): they draw results, they never compute bounds."""
from __future__ import annotations

import textwrap
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402

from .region import boundary  # noqa: E402


def _verdict_text(result) -> str:
    claim = f"(ε={result.claimed_epsilon:g}, δ={result.claimed_delta:g})"
    if result.verdict == "violation":
        return (f"VIOLATION: not {claim}-DP; certified ε ≥ {result.epsilon_lower_bound:.3g} "
                f"at confidence {result.confidence:g}")
    return f"pass: no violation of {claim} found at this budget (not a proof)"


def _verdict_box(ax, result, x: float, y: float, extra: str = "", **kw) -> None:
    ax.text(x, y, _verdict_text(result) + extra, transform=ax.transAxes, fontsize=7,
            bbox=dict(fc="white", ec="#999999"), **kw)


def _save(fig, path: Path) -> None:
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def tradeoff_plot(result, path: Path, exact_tradeoff=None) -> None:
    """Trade-off points of the witness's tests with their boxes over the claimed region."""
    c = result.curves
    fig, ax = plt.subplots(figsize=(6.4, 6.0), dpi=110)
    a = np.linspace(0, 1, 501)
    f = boundary(a, result.claimed_epsilon, result.claimed_delta)
    ax.fill_between(a, f, 1, color="#cfe8cf", label=f"claimed region R(ε={result.claimed_epsilon:g}, "
                                                     f"δ={result.claimed_delta:g})")
    ax.plot(a, f, color="#2e7d32", lw=1.2)
    if exact_tradeoff is not None:
        ax.plot(a, exact_tradeoff(a), color="#1f4e9c", lw=1.5, ls="--",
                label="exact trade-off curve of this mechanism")
    for al, ah, bl, bh, out in zip(c.alpha_low, c.alpha_high, c.beta_low, c.beta_high,
                                   c.outside):
        ax.add_patch(Rectangle((al, bl), ah - al, bh - bl, fill=False, lw=0.8,
                               ec="#c62828" if out else "#555555"))
    outside = np.asarray(c.outside)
    alpha, beta = np.asarray(c.alpha), np.asarray(c.beta)
    ax.scatter(alpha[~outside], beta[~outside], s=12, color="#333333", zorder=3,
               label="tests of the witness's score (boxes: Clopper–Pearson)")
    if outside.any():
        ax.scatter(alpha[outside], beta[outside], s=22, color="#c62828", zorder=4,
                   label="box wholly outside the region: violation")
    ax.set(xlim=(0, 1), ylim=(0, 1), xlabel="false-positive rate α = P[M(D′) ∈ S]",
           ylabel="false-negative rate β = P[M(D) ∉ S]",
           title=f"{result.mechanism}: hypothesis tests D vs D′")
    ax.legend(loc="upper right", fontsize=7.5, framealpha=0.9)
    _verdict_box(ax, result, 0.02, 0.02, f"\nboxes jointly at confidence {c.box_confidence:.3g}")
    _save(fig, path)


def delta_plot(result, path: Path) -> None:
    """Certified lower bound on δ(ε) against ε, with the claim marked."""
    c = result.curves
    eps, low = np.asarray(c.epsilons), np.asarray(c.delta_lower)
    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=110)
    ax.plot(eps, np.maximum(low, 0), color="#1f4e9c", lw=1.6,
            label="certified lower bound on δ(ε) (hockey-stick divergence)")
    ax.axvline(result.claimed_epsilon, color="#555555", ls=":", lw=1)
    ax.scatter([result.claimed_epsilon], [result.claimed_delta], color="#c62828", zorder=3,
               label=f"claim (ε={result.claimed_epsilon:g}, δ={result.claimed_delta:g})")
    ax.fill_between(eps, 0, result.claimed_delta, color="#cfe8cf", alpha=0.6,
                    label="δ allowed by the claim")
    ax.set(xlabel="ε", ylabel="δ(ε)", title=f"{result.mechanism}: privacy loss profile")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=7.5)
    _verdict_box(ax, result, 0.98, 0.95, ha="right", va="top")
    _save(fig, path)


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
    _save(fig, path)


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
    _save(fig, path)


def write_plots(result, directory: Path, exact_tradeoff=None) -> list[str]:
    """Write the PNGs for one audited mechanism; return their file names."""
    if result.curves is None:
        return []
    tradeoff_plot(result, directory / "tradeoff.png", exact_tradeoff)
    delta_plot(result, directory / "delta_curve.png")
    pvalue_plot(result, directory / "pvalue.png")
    written = ["tradeoff.png", "delta_curve.png", "pvalue.png"]
    if result.curves.privacy_loss:
        privacy_loss_plot(result, directory / "privacy_loss.png")
        written.append("privacy_loss.png")
    return written


__all__ = ["tradeoff_plot", "delta_plot", "pvalue_plot", "privacy_loss_plot",
           "privacy_loss_labels", "write_plots"]
