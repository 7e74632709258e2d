"""What the report's pictures draw, as data (docs/method.md, "Pictures"): the claimed region, the
witness's certified shape and the boxes of its family of tests, in the coordinates of event
probabilities q = P[M(D′) ∈ S] and p = P[M(D) ∈ S]. Pure functions of a result: plots.py draws
them, report.py stores them in figures.json, and the tests check their geometry.

In these coordinates a test of the claim (ε, δ) is allowed when
p ≤ min(e^ε q + δ, 1 − e^−ε (1 − δ − q)) (theory.md §1: the region R(ε, δ) with α = q and
β = 1 − p).
"""
from __future__ import annotations

import math

import numpy as np

from ..evidence import BETTING_KINDS, CONFIRMING
from ..region import boundary, box_outside
from ..stats import cp_lower, cp_upper


def allowed_p(q, epsilon: float, delta: float):
    """The largest P[M(D) ∈ S] the claim allows when P[M(D′) ∈ S] = q: 1 − f_{ε,δ}(q)
    (`region.boundary`, with α = q and β = 1 − p)."""
    return 1 - boundary(q, epsilon, delta)


def box_wholly_outside(box, epsilon: float, delta: float) -> bool:
    """A box (q_low, q_high, p_low, p_high) lies wholly outside the claimed region
    (`region.box_outside` at its most favourable corner α = q_high, β = 1 − p_low)."""
    q_low, q_high, p_low, p_high = box
    return bool(box_outside(q_high, 1 - p_low, epsilon, delta))


def clip_above_line(polygon: list, slope: float, offset: float) -> list:
    """The part of a convex polygon [(q, p), …] on or above the line p = slope·q + offset
    (one edge of Sutherland–Hodgman clipping)."""
    def side(v):
        return v[1] - slope * v[0] - offset
    out = []
    for a, b in zip(polygon, polygon[1:] + polygon[:1]):
        sa, sb = side(a), side(b)
        if sa >= 0:
            out.append(a)
        if (sa >= 0) != (sb >= 0):
            t = sa / (sa - sb)
            out.append((a[0] + t * (b[0] - a[0]), a[1] + t * (b[1] - a[1])))
    return out


def witness_box(w) -> tuple:
    """The witness's Clopper–Pearson box (q_low, q_high, p_low, p_high), each side at the
    witness's per-bound level (`Witness.level`)."""
    level = w.level if w.level is not None else 0.025
    return (float(cp_lower(w.count_D_prime, w.samples_D_prime, level)), float(w.q_upper),
            float(w.p_lower), float(cp_upper(w.count_D, w.samples_D, level)))


def witness_shape(w, delta: float) -> list:
    """Where the witness's certificate puts the true (q, p): its box, cut by the certified line
    p = e^ε_L q + δ (every certificate states (p − δ)/q ≥ e^ε_L; docs/method.md). For the
    two-bounds certificate the line passes through the box's lower-right corner, so the shape
    is the box itself. Empty when ε_L is −∞ (nothing was certified)."""
    q_low, q_high, p_low, p_high = witness_box(w)
    box = [(q_low, p_low), (q_high, p_low), (q_high, p_high), (q_low, p_high)]
    if not math.isfinite(w.epsilon_lower_bound):
        return box if w.epsilon_lower_bound > 0 else []
    return clip_above_line(box, math.exp(w.epsilon_lower_bound), delta)


def family_boxes(curves) -> list[tuple]:
    """The boxes (q_low, q_high, p_low, p_high) of the witness's family of tests."""
    return [(float(al), float(ah), 1.0 - float(bh), 1.0 - float(bl))
            for al, ah, bl, bh in zip(curves.alpha_low, curves.alpha_high, curves.beta_low,
                                      curves.beta_high)]


def loss_interval(box, delta: float) -> tuple[float, float]:
    """The range of ln((p − δ)/q) over a box: what a test's counts allow its privacy loss to be."""
    q_low, q_high, p_low, p_high = box
    low = math.log((p_low - delta) / q_high) if p_low > delta and q_high > 0 else -math.inf
    if p_high <= delta:
        return low, -math.inf
    return low, math.log((p_high - delta) / q_low) if q_low > 0 else math.inf


def zoom_window(shape: list, epsilon: float, certified: float) -> tuple:
    """Log-axis limits ((q_min, q_max), (p_min, p_max)) centred on the witness's shape, wide
    enough that the shape and the gap between the claimed and the certified lines fill a good
    part of the panel (that gap, in decades, is at least a sixth of the panel)."""
    qs = [v[0] for v in shape if v[0] > 0] or [1e-6]
    ps = [v[1] for v in shape if v[1] > 0] or [1e-6]
    cq = math.sqrt(min(qs) * max(qs))
    cp = math.sqrt(min(ps) * max(ps))
    gap = abs(certified - epsilon) / math.log(10) if math.isfinite(certified) else 0.3
    half = 3 * max(math.log10(max(qs) / min(qs)) / 2, math.log10(max(ps) / min(ps)) / 2,
                   gap, 0.004)
    half = min(half, 3.0)
    return ((cq / 10 ** half, min(1.0, cq * 10 ** half)),
            (cp / 10 ** half, min(1.0, cp * 10 ** half)))


def claimed_profile(eps, epsilon: float, delta: float):
    """The largest δ(ε′) the claim (ε, δ) allows at each ε′: δ + (1 − δ)(e^ε − e^ε′)₊/(1 + e^ε),
    the hockey-stick divergence of the privacy region's corner (docs/theory.md §1.3)."""
    e = np.asarray(eps, dtype=float)
    return delta + (1 - delta) * np.maximum(math.exp(epsilon) - np.exp(e), 0.0) / (
        1 + math.exp(epsilon))


def shape_delta_lower(shape: list, eps):
    """A lower bound on δ(ε′) wherever the true (q, p) lies in the convex `shape`: the least
    p − e^ε′ q over its vertices (δ(ε′) ≥ P(S) − e^ε′ Q(S) for every event; theory.md §1.1),
    floored at 0. Zero for an empty shape."""
    e = np.asarray(eps, dtype=float)
    if not shape:
        return np.zeros_like(e)
    q = np.array([v[0] for v in shape])[:, None]
    p = np.array([v[1] for v in shape])[:, None]
    return np.maximum((p - np.exp(e)[None, :] * q).min(axis=0), 0.0)


def to_tradeoff(points: list) -> list:
    """(q, p) points as trade-off points (α, β) = (q, 1 − p) (theory.md §1.2)."""
    return [(q, 1.0 - p) for q, p in points]


def figure_data(result) -> dict:
    """Everything the witness pictures draw, JSON-ready: the claim, the witness's box, certified
    ε and shape, and the family's boxes with their loss intervals and outside flags."""
    eps, delta = result.claimed_epsilon, result.claimed_delta
    data = {"mechanism": result.mechanism, "verdict": result.verdict,
            "outcome": result.outcome, "claim": {"epsilon": eps, "delta": delta},
            "witness": None, "family": []}
    w = result.witness
    if w is not None and w.certificate in BETTING_KINDS:
        # the betting test certifies no single event's (q, p): its evidence is the wealth
        data["witness"] = {"certificate": w.certificate, "certified_epsilon":
                           w.epsilon_lower_bound, "wealth_path": [list(v) for v in w.wealth_path],
                           "threshold": 1.0 / w.betting_alpha,
                           "fresh_rounds": w.certificate == CONFIRMING,
                           # the test that decided the verdict: its claim rejected (a
                           # violation a confirmation overruled is drawn as no violation)
                           "outside": bool(w.epsilon_lower_bound > eps
                                           and result.verdict == "violation")}
        return data
    if w is not None:
        shape = witness_shape(w, delta)
        data["witness"] = {"box": witness_box(w), "certified_epsilon": w.epsilon_lower_bound,
                           "certificate": w.certificate, "shape": shape,
                           "outside": bool(shape) and all(
                               p > allowed_p(q, eps, delta) for q, p in shape)}
    if result.curves is not None:
        data["box_confidence"] = result.curves.box_confidence
        data["family"] = [{"box": b, "loss": loss_interval(b, delta),
                           "outside": box_wholly_outside(b, eps, delta)}
                          for b in family_boxes(result.curves)]
    return data


__all__ = ["allowed_p", "claimed_profile", "shape_delta_lower", "to_tradeoff", "box_wholly_outside", "clip_above_line", "witness_box", "witness_shape",
           "family_boxes", "loss_interval", "zoom_window", "figure_data"]
