"""What every picture of a report shares (docs/method.md, "Pictures"): its colours, the verdict
line, and the record of what each axes drew, in the axes' own coordinates, which `write_plots`
stores in figures.json so that a test can check the geometry without looking at pixels.

A record is {"coords", "xlim", "ylim", "xscale", "yscale", "elements"}; an element is
{"role", "points", "red"} plus "ring" when a circle marks a witness too small to see. The
coordinate systems are "qp" (q = P[M(D′) ∈ S], p = P[M(D) ∈ S]), "ab" (the trade-off plane,
α = q and β = 1 − p), "loss" (threshold, ln((p − δ)/q)), "delta" (ε′, δ(ε′)), "pvalue" (ε′,
p-value of ε′-DP) and "wealth" (runs, wealth of the bets).
"""
from __future__ import annotations

import math
import textwrap
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.patches import Polygon  # noqa: E402
from matplotlib.ticker import (FormatStrFormatter, LogLocator, MaxNLocator,  # noqa: E402
                               NullFormatter, NullLocator)

from ..evidence import lower_bound_text  # noqa: E402

VIOLATION_RED, PASS_BLUE, CLAIM_GREEN = "#c62828", "#1f4e9c", "#cfe8cf"
CLAIM_LINE, TEST_GREY = "#2e7d32", "#555555"
PASS_GREEN, INCONCLUSIVE_AMBER = "#1b5e20", "#b26a00"
SPECK = 0.012   # a witness narrower than this share of its axes gets a ring to be seen
NEAR = 0.02     # a witness closer than this share of its axes to the claim's edge gets an inset


def confidence_text(c: float) -> str:
    """A confidence with the digits that keep it below 1 (0.9, 0.9999, 1 − 3e-08)."""
    text = f"{c:.3g}"
    if text != "1" or c >= 1:
        return text
    for digits in range(4, 9):
        text = f"{c:.{digits}g}"
        if text != "1":
            return text
    return f"1 − {1 - c:.2g}"


def verdict_text(result) -> str:
    """The verdict in one sentence, as the pictures' headline says it."""
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


def headline(fig, result, width: int = 90) -> None:
    """The figure's first line: mechanism and verdict, in the verdict's colour, wrapped to fit."""
    fig.suptitle(textwrap.fill(f"{result.mechanism}: {verdict_text(result)}", width),
                 fontsize=9, color=verdict_colour(result))


# picture file (resolved path) → the boxes of its texts as drawn, for figures.json
_TEXT_BOXES: dict[str, list] = {}


def save_figure(fig, path: Path) -> None:
    """Save with matplotlib's constrained layout, which keeps the headline, the axes' titles,
    labels and legends apart, and a bounding box grown to all of them, so nothing is cut. The
    boxes of its texts are kept for `text_boxes`."""
    fig.set_layout_engine("constrained")
    fig.get_layout_engine().set(w_pad=0.06, h_pad=0.06, wspace=0.06)
    fig.draw_without_rendering()
    _hide_crowded_tick_labels(fig)
    fig.set_layout_engine("none")  # the layout is set: hiding labels must not move it
    _TEXT_BOXES[str(Path(path).resolve())] = _drawn_texts(fig)
    fig.savefig(path, bbox_inches="tight", pad_inches=0.08)
    plt.close(fig)


def _hide_crowded_tick_labels(fig) -> None:
    """Hide a tick label that another text covers (an x label in the corner where a y label
    sits, an inset's label on its panel's): the tick stays, its neighbours say its value."""
    ticks = {id(t.label1): t.label1 for ax in _every_axes(fig) for axis in (ax.xaxis, ax.yaxis)
             for t in axis.get_major_ticks() + axis.get_minor_ticks()}
    for _ in range(20):
        crowded = [(a, b) for a, b in _overlaps(_drawn_texts(fig, objects=True))
                   if id(a) in ticks or id(b) in ticks]
        if not crowded:
            return
        a, b = crowded[0]
        (a if id(a) in ticks else b).set_visible(False)


def _every_axes(fig) -> list:
    """The figure's axes and their insets (`inset_axes` children are not in `fig.axes`)."""
    from matplotlib.axes import Axes
    return fig.findobj(Axes)


def _overlaps(boxes, slack: float = 1.0) -> list:
    """Pairs of the first items of `boxes` ([item, x0, y0, x1, y1]) whose boxes share more than
    `slack` pixels both across and up."""
    return [(a, b) for i, (a, *ra) in enumerate(boxes) for b, *rb in boxes[i + 1:]
            if min(ra[2], rb[2]) - max(ra[0], rb[0]) > slack
            and min(ra[3], rb[3]) - max(ra[1], rb[1]) > slack]


def _drawn_texts(fig, objects: bool = False) -> list:
    """[text, x0, y0, x1, y1] of every visible, non-empty text of the figure, in pixels (the
    Text artist itself first if `objects`)."""
    from matplotlib.text import Text
    renderer = fig.canvas.get_renderer()
    undrawn = set()  # tick labels whose tick lies outside the view: kept, but not drawn
    for ax in _every_axes(fig):
        for axis in (ax.xaxis, ax.yaxis):
            scale = axis.get_transform()  # compared on the axis's own scale (log: exponents)
            low, high = sorted(scale.transform(np.asarray(axis.get_view_interval(), float)))
            span = (high - low) * 1e-9
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                with np.errstate(divide="ignore", invalid="ignore"):
                    at = float(scale.transform(np.array([tick.get_loc()], float))[0])
                if not low - span <= at <= high + span:
                    undrawn |= {id(tick.label1), id(tick.label2)}
    boxes = []
    for t in fig.findobj(Text):
        if (not t.get_visible() or not t.get_text().strip() or t.figure is None
                or id(t) in undrawn):
            continue
        if t.get_clip_on() and t.get_clip_box() is not None and not t.get_clip_box().overlaps(
                t.get_window_extent(renderer)):
            continue  # clipped away: an annotation outside its axes' view
        b = t.get_window_extent(renderer)
        boxes.append([t if objects else t.get_text(), float(b.x0), float(b.y0), float(b.x1),
                      float(b.y1)])
    return boxes


def text_boxes(path: Path) -> list:
    """The boxes of the texts of the picture saved at `path` (`save_figure`), once."""
    return _TEXT_BOXES.pop(str(Path(path).resolve()), [])


def legend_below(ax) -> None:
    """The legend under the axes, where it can cover neither the data nor an inset."""
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.17), fontsize=7.5, frameon=False)


def tick_format(low: float, high: float) -> str:
    """A %g format with the significant digits that tell ticks between low and high apart
    (0.9968 and 0.9972, not 0.997 twice)."""
    size = max(abs(low), abs(high))
    if size == 0 or high == low:
        return "%.3g"
    return f"%.{max(3, min(12, math.ceil(math.log10(size / abs(high - low))) + 2))}g"


def claim_label(result) -> str:
    return f"allowed by the claim (ε={result.claimed_epsilon:g}, δ={result.claimed_delta:g})"


def axes_record(ax, coords: str) -> dict:
    """An empty record of what `ax` draws, with its limits and scales as they are now."""
    return {"coords": coords, "xlim": list(ax.get_xlim()), "ylim": list(ax.get_ylim()),
            "xscale": ax.get_xscale(), "yscale": ax.get_yscale(), "elements": []}


def add_element(record: dict, role: str, points, red: bool, **extra) -> None:
    record["elements"].append({"role": role, "points": [[float(x), float(y)] for x, y in points],
                               "red": bool(red), **extra})


def axes_fractions(points, xlim, ylim, xscale: str, yscale: str) -> np.ndarray:
    """Points in the axes' own fractions (0 to 1 across each axis), on its scales."""
    pts = np.asarray(points, dtype=float).reshape(-1, 2)

    def frac(v, lim, scale):
        if scale == "log":
            with np.errstate(divide="ignore"):
                v, lim = np.log10(np.maximum(v, 1e-300)), np.log10(lim)
        return (v - lim[0]) / (lim[1] - lim[0])
    return np.column_stack([frac(pts[:, 0], xlim, xscale), frac(pts[:, 1], ylim, yscale)])


def densify(points, per_edge: int = 12) -> np.ndarray:
    """A closed polygon's outline as many points: its vertices and points along each edge."""
    v = np.asarray(points, dtype=float).reshape(-1, 2)
    if len(v) < 2:
        return v
    t = np.linspace(0, 1, per_edge, endpoint=False)[:, None]
    return np.vstack([a + t * (b - a) for a, b in zip(v, np.roll(v, -1, axis=0))])


def along(polyline, step: float) -> np.ndarray:
    """Points along an open polyline, at most `step` apart (in its own coordinates)."""
    v = np.asarray(polyline, dtype=float).reshape(-1, 2)
    v = v[np.all(np.isfinite(v), axis=1)]
    if len(v) < 2:
        return v
    pieces = [a + np.linspace(0, 1, max(2, int(np.ceil(np.hypot(*(b - a)) / step))),
                              endpoint=False)[:, None] * (b - a) for a, b in zip(v, v[1:])]
    return np.vstack(pieces + [v[-1:]])


def spread_and_gap(points, edge, window: dict, closed: bool = True) -> tuple[float, float]:
    """How far a drawn witness reaches from the claim's edge (a polyline): its extent and the
    distance of its farthest point from the edge, both as shares of the axes `window` describes
    (xlim, ylim, xscale, yscale). `closed`: the points outline a polygon, not a curve."""
    args = (window["xlim"], window["ylim"], window["xscale"], window["yscale"])
    s = axes_fractions(densify(points) if closed else points, *args)
    # the edge's segments sampled in the axes' own fractions, so a long straight stretch of it
    # (on a log axis too) is not missed between its ends
    e = along(axes_fractions(edge, *args), step=NEAR / 8)
    spread = float(np.max(s.max(axis=0) - s.min(axis=0))) if len(s) else 0.0
    distances = np.hypot(*(s[:, None, :] - e[None, :, :]).transpose(2, 0, 1)).min(axis=1)
    return spread, float(distances.max())


def draw_polygon(ax, points, colour: str, label=None) -> None:
    ax.add_patch(Polygon(points, closed=True, fc=colour, ec=colour, alpha=0.35, lw=2,
                         zorder=4, label=label))
    ax.add_patch(Polygon(points, closed=True, fill=False, ec=colour, lw=2, zorder=5))


def draw_curve(ax, points, colour: str, label=None) -> None:
    xy = np.asarray(points)
    ax.plot(xy[:, 0], xy[:, 1], color=colour, lw=3, zorder=5, label=label,
            solid_capstyle="butt")


def _to_scale(values, scale: str):
    v = np.asarray(values, dtype=float)
    return np.log10(np.maximum(v, 1e-300)) if scale == "log" else v


def _from_scale(values, scale: str):
    return 10.0 ** np.asarray(values) if scale == "log" else np.asarray(values)


def inset_window(points, edge, ax, square: bool = True) -> tuple[tuple, tuple]:
    """Limits of an inset around the witness and the nearest stretch of the claim's edge, in
    the axes' scales (square unless `square` is False, when each axis fits its own extent),
    with the gap about a third to a half of the inset."""
    scales = (ax.get_xscale(), ax.get_yscale())
    s = np.column_stack([_to_scale(np.asarray(points)[:, i], scales[i]) for i in (0, 1)])
    e = np.column_stack([_to_scale(np.asarray(edge)[:, i], scales[i]) for i in (0, 1)])
    distances = np.hypot(*(s[:, None, :] - e[None, :, :]).transpose(2, 0, 1))
    nearest = e[np.unravel_index(np.argmin(distances), distances.shape)[1]]
    both = np.vstack([s, nearest])
    centre = (both.min(axis=0) + both.max(axis=0)) / 2
    half = np.maximum((both.max(axis=0) - both.min(axis=0)) * 0.9, 1e-9)
    if square:
        half[:] = half.max()
    limits = (ax.get_xlim(), ax.get_ylim())   # never wider than the panel it zooms into
    return tuple((max(float(_from_scale(centre[i] - half[i], scales[i])), min(limits[i])),
                  min(float(_from_scale(centre[i] + half[i], scales[i])), max(limits[i])))
                 for i in (0, 1))


def show_witness(ax, record: dict, points, edge, red: bool, label, draw_claim,
                 zoomed: bool = False, closed: bool = True, square: bool = True) -> list[dict]:
    """Draw the witness (a polygon, or a curve when not `closed`) on `ax` after its limits are
    set, and record it. When it is a speck, ring it; when it is a speck or reaches less than
    NEAR from the claim's `edge` and the panel is not already `zoomed` on it, add an inset
    zoomed on both, drawn by `draw_claim(inset, xlim)` and the same witness. Only a red witness
    (a violation) is ringed and zoomed: a pass's needs no pointing at. Returns the records it
    adds to the picture's: the inset's, or none."""
    colour = VIOLATION_RED if red else PASS_BLUE
    draw = draw_polygon if closed else draw_curve
    draw(ax, points, colour, label)
    spread, gap = spread_and_gap(points, edge, record, closed)
    ring = red and spread < SPECK
    add_element(record, "witness", points, red, ring=ring)
    scales = (record["xscale"], record["yscale"])
    centre = [float(_from_scale(np.mean(_to_scale(np.asarray(points)[:, i], scales[i])),
                                scales[i])) for i in (0, 1)]
    if ring:
        ax.plot(*centre, marker="o", ms=16, mfc="none", mec=colour, mew=1.6, zorder=6)
    if zoomed or not red or (gap >= NEAR and not ring):
        return []
    fx, fy = axes_fractions([centre], record["xlim"], record["ylim"], record["xscale"],
                            record["yscale"])[0]
    # clear of the panel's edges, so the inset's own tick labels stay off the panel's
    inset = ax.inset_axes([0.13 if fx > 0.5 else 0.58, 0.50 if fy < 0.5 else 0.10, 0.36, 0.36])
    xlim, ylim = inset_window(points, edge, ax, square)
    inset.set(xscale=record["xscale"], yscale=record["yscale"], xlim=xlim, ylim=ylim)
    draw_claim(inset, xlim)
    draw(inset, points, colour)
    inset.set(xlim=xlim, ylim=ylim)
    inset.tick_params(labelsize=6)
    for axis, (low, high) in ((inset.xaxis, xlim), (inset.yaxis, ylim)):  # few plain labels
        wide = (axis.get_scale() == "log" and min(low, high) > 0
                and max(low, high) / min(low, high) > 10)  # on a linear axis: crowded at 0
        axis.set_major_locator(LogLocator(numticks=4) if wide else MaxNLocator(3))
        axis.set_minor_locator(NullLocator())
        axis.set_major_formatter(FormatStrFormatter(tick_format(low, high)))
        axis.set_minor_formatter(NullFormatter())
    inset.set_title("zoom on the witness", fontsize=7)
    ax.indicate_inset_zoom(inset, edgecolor="#333333")
    zoom = axes_record(inset, record["coords"])
    zoom.update({k: v for k, v in record.items() if k not in zoom})  # e.g. its significance
    add_element(zoom, "witness", points, red)
    return [zoom]


__all__ = ["VIOLATION_RED", "PASS_BLUE", "CLAIM_GREEN", "CLAIM_LINE", "TEST_GREY", "PASS_GREEN",
           "INCONCLUSIVE_AMBER", "confidence_text", "verdict_text", "verdict_colour",
           "headline", "save_figure", "text_boxes", "legend_below", "claim_label", "axes_record", "add_element",
           "axes_fractions", "spread_and_gap", "draw_polygon", "draw_curve", "show_witness", "plt"]
