"""Checks that a report's pictures agree with its verdict, read from what each axes drew
(figures.json, `dpverify.interfaces.drawing`) with the claim's regions written out here
independently of the package (docs/theory.md §1.2–§1.3; §8 for an RDP claim's two cells).

- Every element drawn red lies wholly outside the claimed region.
- A violation: every picture but the plug-in estimate's draws the witness, in red, and in at
  least one of its axes (the panel or a zoomed inset) the witness lies within the limits and
  some point of it is at least VISIBLE of the axes away from every allowed point.
- A pass: nothing is red, and every certified element reaches the allowed region (a box has a
  point in it; a curve or a point lies wholly in it).
- No two texts of a picture overlap (their boxes as drawn, figures.json "texts").
"""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

VISIBLE = 0.01   # a share of the axes: about 5 pixels in the report's pictures
TOL = 1e-12


def _allowed_qp(q, p, eps, delta):
    return p <= min(math.exp(eps) * q + delta, 1 - math.exp(-eps) * (1 - delta - q)) + TOL


@lru_cache(maxsize=None)
def _corners(eps, delta):
    """The claim's region's corners in (q, p); the inner one solved where its two edges meet."""
    a = np.array([[math.exp(eps), -1.0], [math.exp(-eps), -1.0]])
    b = np.array([-delta, -(1 - math.exp(-eps) * (1 - delta))])
    return ((0.0, delta), tuple(np.linalg.solve(a, b)), (1.0, 1.0))


def _largest_delta(x, eps, delta):
    """sup of P(S) − e^x Q(S) over the claim's region: the most at one of its corners (the
    objective is linear)."""
    corners = _corners(eps, delta)
    return max(max(p - math.exp(x) * q for q, p in corners), delta if x >= eps else 0.0)


def _two_cell_renyi(p: float, q: float, alpha: float) -> float:
    """D_α(Bern(p) ‖ Bern(q)) (Mironov 2017), +inf where q = 0 < p or q = 1 > p."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        total = sum(a ** alpha * b ** (1 - alpha) for a, b in ((p, q), (1 - p, 1 - q)) if a > 0)
    return math.log(total) / (alpha - 1) if np.isfinite(total) else math.inf


def allowed(record: dict, claim: dict, x: float, y: float) -> bool:
    """Whether the point (x, y) of an axes with this record's coordinates is allowed."""
    coords = record["coords"]
    if coords == "qp_renyi":   # (q, p) of a two-cell partition under an (α, ρ)-RDP claim
        return _two_cell_renyi(y, x, record["alpha"]) <= record["rho"] * (1 + 1e-9) + TOL
    eps, delta = claim["epsilon"], claim["delta"]
    if coords == "qp":
        return _allowed_qp(x, y, eps, delta)
    if coords == "ab":
        return _allowed_qp(x, 1 - y, eps, delta)
    if coords == "loss":
        return y <= eps + TOL
    if coords == "delta":
        return y <= _largest_delta(x, eps, delta) * (1 + 1e-9) + TOL
    if coords == "pvalue":
        return not (x >= eps - TOL and y < record["significance"])
    if coords == "wealth":
        return y < record["threshold"]
    if coords == "loss_estimate":   # (privacy loss, estimated probability)
        return abs(x) <= eps + TOL
    raise AssertionError(f"unknown coordinates {coords}")


def _fractions(record, points):
    out = []
    for v, lim, scale in ((points[:, 0], record["xlim"], record["xscale"]),
                          (points[:, 1], record["ylim"], record["yscale"])):
        if scale == "log":
            v, lim = np.log10(np.maximum(v, 1e-300)), np.log10(lim)
        out.append((v - lim[0]) / (lim[1] - lim[0]))
    return np.column_stack(out)


def visible_gap(record: dict, claim: dict, points) -> float:
    """How far (as a share of the axes) the witness's farthest point within the limits lies
    from the nearest allowed point of the axes (a 161 × 161 grid over it); 0 when no point of
    it is within the limits."""
    pts = np.asarray(points, dtype=float)
    frac = _fractions(record, pts)
    within = np.all((frac >= -1e-9) & (frac <= 1 + 1e-9), axis=1)
    if not within.any():
        return 0.0
    grid = np.linspace(0, 1, 161)
    gx, gy = np.meshgrid(grid, grid)
    data = []
    for g, lim, scale in ((gx.ravel(), record["xlim"], record["xscale"]),
                          (gy.ravel(), record["ylim"], record["yscale"])):
        lo, hi = (np.log10(lim[0]), np.log10(lim[1])) if scale == "log" else lim
        v = lo + g * (hi - lo)
        data.append(10 ** v if scale == "log" else v)
    ok = np.array([allowed(record, claim, x, y) for x, y in zip(*data)])
    if not ok.any():
        return 1.0
    free = np.column_stack([gx.ravel()[ok], gy.ravel()[ok]])
    d = np.hypot(*(frac[within][:, None, :] - free[None, :, :]).transpose(2, 0, 1))
    return float(d.min(axis=1).max())


def check_pictures(data: dict, written: list[str]) -> None:
    """Assert the module's rules over one mechanism's figure data (`write_plots`' second
    value, or its entry in figures.json)."""
    claim, verdict = data["claim"], data["verdict"]
    pictures = data["pictures"]
    assert sorted(pictures) == sorted(written), "every picture has its record"
    assert sorted(data["texts"]) == sorted(written), "every picture has its texts' boxes"
    assert not overlapping_texts(data["texts"]), overlapping_texts(data["texts"])
    for name, records in pictures.items():
        witnesses = []
        for record in records:
            for element in record["elements"]:
                inside = [allowed(record, claim, x, y) for x, y in element["points"]]
                where = f"{name} ({record['coords']}, {element['role']})"
                if element["red"]:
                    assert not any(inside), f"{where}: drawn red but reaches the claim"
                    assert verdict == "violation", f"{where}: red in a {verdict}"
                if element["role"] == "witness":
                    witnesses.append((record, element))
                if verdict == "pass" and element["role"] != "estimate":
                    polygon = (record["coords"] in ("qp", "ab", "qp_renyi")
                               and len(element["points"]) > 1)
                    assert (any(inside) if polygon else all(inside)), \
                        f"{where}: a pass draws a bound outside the claim"
                if element["role"] == "estimate":
                    assert not element["red"]
        if verdict == "violation" and data["witness"] and name != "privacy_loss.png":
            assert witnesses, f"{name}: a violation's picture without its witness"
        if verdict == "violation" and witnesses:
            assert all(e["red"] for _, e in witnesses), f"{name}: the witness is not red"
            gaps = [visible_gap(r, claim, e["points"]) for r, e in witnesses]
            assert max(gaps) >= VISIBLE, f"{name}: the witness is not visibly outside {gaps}"


def render_and_check(result, folder) -> dict | None:
    """Draw `result`'s pictures into `folder` as a report does and check them; returns the
    figure data (None when there is no witness to draw)."""
    from dpverify.interfaces.drawing import text_boxes
    from dpverify.interfaces.plots import write_plots
    written, data = write_plots(result, folder)
    if data is not None:
        data["texts"] = {name: text_boxes(folder / name) for name in written}
        check_pictures(data, written)
    return data


def overlapping_texts(texts: dict, slack: float = 1.0) -> list:
    """Pairs of texts that overlap in a picture: {picture: [[text, x0, y0, x1, y1], …]}
    (figures.json "texts", `drawing.text_boxes`) → [(picture, text, text)] for every two boxes
    that share more than `slack` pixels both across and up."""
    found = []
    for picture, boxes in texts.items():
        for i, (a, *ra) in enumerate(boxes):
            for b, *rb in boxes[i + 1:]:
                across = min(ra[2], rb[2]) - max(ra[0], rb[0])
                up = min(ra[3], rb[3]) - max(ra[1], rb[1])
                if across > slack and up > slack:
                    found.append((picture, a, b))
    return found
