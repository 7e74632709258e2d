"""ρ-zCDP claims (Bun & Steinke, TCC 2016): certified lower bounds on ρ, and the (ε, δ) audit of
the claim's conversion (docs/theory.md §8).

ρ-zCDP: D_α(M(D) ‖ M(D')) ≤ ρ·α for every α > 1 and every ordered neighbouring pair, D_α the
Rényi divergence (Mironov 2017). `audit_zcdp` spends the error budget α_err = 1 − confidence in
two halves; by the union bound a mechanism that satisfies its claim is flagged with probability
at most α_err in all:

- Rényi part (α_err/2). On a SEARCH sample only, every learned score model (engine's
  `learn_models`), threshold and direction defines a two-cell partition {S, S^c}; the cell P
  favours is oriented as S, and the event whose planned certified curve max_α D_α^LB/α is
  largest is kept (that is, the largest planned excess (D_α − ρα)/α, which does not depend on
  the claim). A FRESH certifying sample counts S under both inputs; two one-sided
  Clopper–Pearson bounds p ≥ p_L and q ≤ q_U, each at level α_err/4, hold jointly with
  probability ≥ 1 − α_err/2. Whenever they hold,
  D_α(M(D) ‖ M(D')) ≥ D_α(Bern(p) ‖ Bern(q)) ≥ D_α(Bern(p_L) ‖ Bern(q_U)) for EVERY α > 1 at
  once (post-processing, then monotonicity: `renyi_curve_lower`), so the maximum of the
  certified curve over the order grid needs no correction across orders:
  rho_lower_bound = max_α D_α^LB/α is a certified lower bound on the smallest ρ the
  mechanism satisfies, and "violation" when it exceeds the claimed ρ.
- Implied part (α_err/2). ρ-zCDP implies (ρ + 2√(ρ ln(1/δ)), δ)-DP (Bun & Steinke 2016,
  Prop. 1.3); the ordinary `engine.audit` checks that claim at confidence 1 − α_err/2.

`delta` is the δ of that implied claim (default 1e-6). Pairs at group distance k are audited
against k²ρ (group privacy of zCDP, Bun & Steinke 2016).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np
from scipy.stats import norm

from . import engine
from . import pairs as pairs_module
from .attacks import Candidate, PairEvaluator, count_at_least, learn_models
from .encoding import Encoded
from .errors import InvalidClaimError
from .mechanism import as_mechanism, validate_zcdp
from .renyi import renyi_bernoulli
from .result import TWO_BOUNDS, AuditResult, OWN_RANDOMNESS_NOTE, Witness, jsonable
from .sampling import CERTIFY, Sampler, checked_search_samples, split_into_chunks
from .stats import certified_epsilon, cp_lower, cp_upper, plug_in_epsilon, wilson_bounds

DEFAULT_DELTA = 1e-6
# the Rényi orders the certified curve is evaluated at (fixed before any data is seen; the bound
# holds at all of them jointly, so the grid's size costs nothing)
ORDERS = np.geomspace(1.01, 256.0, 96)
SEARCH_SAMPLES = 1 << 17      # search runs per input and pair (at most the certifying size)
MAX_THRESHOLDS = 4096         # thresholds per score model tried on the search sample
SHRINK_Z = 1.0                # planning: search rates shrunk this many standard errors together
SEED_TAG = 0x7A636470         # "zcdp": the Rényi part draws apart from the implied audit


# ------------------------------------------------------------------------------------------------
# The maths (pure functions)
# ------------------------------------------------------------------------------------------------

def implied_epsilon(rho: float, delta: float) -> float:
    """ε of the (ε, δ)-DP that ρ-zCDP implies: ρ + 2·√(ρ·ln(1/δ)) (Bun & Steinke 2016,
    Prop. 1.3; docs/theory.md §8)."""
    return rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))


def validate_delta(delta) -> float:
    """The implied claim's δ: a number in (0, 1) (ln(1/δ) must be finite); None → 1e-6."""
    if delta is None:
        return DEFAULT_DELTA
    try:
        value = float(delta)
    except (TypeError, ValueError):
        raise InvalidClaimError(f"delta must be a number in (0, 1), got {delta!r}") from None
    if not 0.0 < value < 1.0:
        raise InvalidClaimError(f"a zCDP audit needs the implied claim's delta in (0, 1) "
                                f"(ρ-zCDP ⇒ (ρ + 2√(ρ ln 1/δ), δ)-DP), got {delta!r}")
    return value


def error_split(confidence: float) -> tuple[float, float]:
    """(level of each of the Rényi part's two Clopper–Pearson bounds, confidence of the implied
    (ε, δ) audit): α_err/4 and 1 − α_err/2, α_err = 1 − confidence, so the two parts' error
    probabilities add up to α_err (union bound)."""
    alpha = 1.0 - confidence
    return alpha / 4.0, 1.0 - alpha / 2.0


def renyi_curve_lower(p_low, q_high, orders):
    """min of D_α(Bern(p) ‖ Bern(q)) over p ≥ p_low, q ≤ q_high, for every order at once:
    D_α(Bern(p_low) ‖ Bern(q_high)) when p_low > q_high, else 0.

    Why: h(p, q) = p^α q^{1−α} + (1−p)^α (1−q)^{1−α} is convex in each argument with its
    minimum 1 at p = q, so on {p > q} it grows with p and falls with q; the box's corner nearest
    the diagonal is its minimum (the same value `renyi.renyi_lower_bound` finds on the box
    [p_low, 1] × [0, q_high]). docs/theory.md §8."""
    p_low = np.asarray(p_low, float)
    q_high = np.asarray(q_high, float)
    return np.where(p_low > q_high, renyi_bernoulli(p_low, q_high, orders), 0.0)


def certified_rho(orders, lower) -> tuple[float, float]:
    """(max_α D_α^LB/α, the order attaining it): a lower bound on the smallest ρ for which
    D_α ≤ ρα at every α, since the curve holds at all orders jointly (docs/theory.md §8)."""
    ratio = np.asarray(lower, float) / np.asarray(orders, float)
    i = int(np.argmax(ratio))
    return float(ratio[i]), float(np.asarray(orders)[i])


def planned_rho(k_p, m_p, k_q, m_q, n: int, level: float, orders=ORDERS) -> np.ndarray:
    """Planning proxy, from search counts only (never certifies): the search rates are shrunk
    SHRINK_Z standard errors towards each other (Wilson), the Clopper–Pearson bounds a
    certifying sample of n runs would give at `level` are approximated by Wilson bounds at
    z = Φ⁻¹(1 − level), and the expected certified ρ is max_α of that corner's D_α/α.
    Vectorised over thresholds (k_p, k_q arrays)."""
    p_s = wilson_bounds(k_p, m_p, SHRINK_Z)[0]
    q_s = wilson_bounds(k_q, m_q, SHRINK_Z)[1]
    z = float(norm.isf(level))
    p_n = wilson_bounds(p_s * n, n, z)[0]
    q_n = wilson_bounds(q_s * n, n, z)[1]
    curve = renyi_curve_lower(p_n[:, None], q_n[:, None], np.asarray(orders)[None, :])
    return (curve / np.asarray(orders)[None, :]).max(axis=1)


# ------------------------------------------------------------------------------------------------
# Result
# ------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ZcdpAuditResult:
    """Outcome of auditing a ρ-zCDP claim (`audit_zcdp`).

    verdict "violation": with probability ≥ `confidence` the mechanism is not ρ-zCDP — either
    its certified `rho_lower_bound` exceeds the claim (k²ρ for pairs at group distance k) or
    the implied (ε, δ) audit (`implied`) certified a violation. "pass": neither at this budget,
    not a proof of privacy. `renyi_lower[i]` is the certified lower bound on D_{orders[i]} on
    the witness's pair, all orders jointly; `alpha` the order where D_α^LB/α is largest.
    """

    mechanism: str
    verdict: str
    claimed_rho: float
    rho_lower_bound: float
    alpha: float
    orders: tuple
    renyi_lower: tuple
    implied_epsilon: float
    implied_delta: float
    implied: AuditResult
    confidence: float
    witness: Witness | None
    samples: int
    seconds: float
    seed: int
    randomness: str = "rng"
    distance: int = 1   # group distance of the pairs: the claim audited is distance²·ρ

    # -- what callers written for AuditResult read ------------------------------------------
    @property
    def passed(self) -> bool:
        return self.verdict == "pass"

    @property
    def effective_rho(self) -> float:
        """The ρ the pairs are audited against: k²ρ at group distance k."""
        return self.claimed_rho * self.distance ** 2

    @property
    def rho_violated(self) -> bool:
        return self.rho_lower_bound > self.effective_rho

    @property
    def reproducible(self) -> bool:
        return self.randomness == "rng"

    @property
    def interrupted(self) -> bool:
        return self.implied.interrupted

    @property
    def support_mismatch(self) -> bool:
        return self.witness is not None and self.witness.support_mismatch

    @property
    def claimed_epsilon(self) -> float:
        """The implied claim's ε (what gate/plugin code written for (ε, δ) audits shows)."""
        return self.implied_epsilon

    @property
    def claimed_delta(self) -> float:
        return self.implied_delta

    @property
    def epsilon_lower_bound(self) -> float:
        """The implied (ε, δ) audit's certified ε."""
        return self.implied.epsilon_lower_bound

    @property
    def resolution(self) -> float:
        return self.implied.resolution

    @property
    def curves(self):
        return None

    @property
    def divergence_at_alpha(self) -> float:
        """The certified D_α lower bound at the reported order `alpha`."""
        if not self.orders or math.isnan(self.alpha):
            return 0.0
        return float(self.renyi_lower[int(np.argmin(np.abs(np.asarray(self.orders)
                                                           - self.alpha)))])

    # -- text --------------------------------------------------------------------------------
    def claim_text(self) -> str:
        group = (f" (pairs {self.distance} apart: {self.effective_rho:g}-zCDP)"
                 if self.distance > 1 else "")
        return f"ρ={self.claimed_rho:g}-zCDP{group}"

    def rho_clause(self) -> str:
        return (f"certified ρ ≥ {self.rho_lower_bound:.4g} (D_α ≥ "
                f"{self.divergence_at_alpha:.4g} at α = {self.alpha:.3g})")

    def implied_clause(self) -> str:
        i = self.implied
        word = "VIOLATION" if i.verdict == "violation" else "pass"
        return (f"implied (ε={self.implied_epsilon:.4g}, δ={self.implied_delta:g})-DP audit: "
                f"{word}, certified ε ≥ {i.epsilon_lower_bound:.4g} at confidence "
                f"{i.confidence:g}")

    def headline(self) -> str:
        """The verdict line, without the padding of `summary`."""
        word = "VIOLATION" if self.verdict == "violation" else "pass"
        return (f"{word} {self.mechanism}: claimed {self.claim_text()}, {self.rho_clause()} at "
                f"confidence {self.confidence:g}; {self.implied_clause()}")

    def summary(self) -> str:
        word = "VIOLATION" if self.verdict == "violation" else "pass"
        lines = [f"{word:<10} {self.mechanism}: claimed {self.claim_text()}, "
                 f"{self.rho_clause()} at confidence {self.confidence:g}",
                 f"           {self.implied_clause()}"]
        if self.witness is not None:
            lines += self.witness.summary_lines()
        lines.append(f"           {self.samples:,} mechanism runs ({self.implied.samples:,} in "
                     f"the implied audit), {self.seconds:.2f} s, seed {self.seed}"
                     + ("  [INTERRUPTED]" if self.interrupted else ""))
        if not self.reproducible:
            lines.append(OWN_RANDOMNESS_NOTE)
        return "\n".join(lines)

    def as_dict(self) -> dict:
        return jsonable({
            "mechanism": self.mechanism, "verdict": self.verdict,
            "claimed": {"zcdp_rho": self.claimed_rho, "implied_epsilon": self.implied_epsilon,
                        "implied_delta": self.implied_delta},
            "rho_lower_bound": self.rho_lower_bound, "alpha": self.alpha,
            "group_distance": self.distance, "confidence": self.confidence,
            "samples": self.samples, "seconds": self.seconds, "seed": self.seed,
            "witness": self.witness.as_dict() if self.witness else None,
            "implied": self.implied.as_dict(),
            "renyi": {"orders": list(self.orders), "lower_bounds": list(self.renyi_lower)},
            "interrupted": self.interrupted, "randomness": self.randomness,
            "reproducible": self.reproducible})


# ------------------------------------------------------------------------------------------------
# The audit
# ------------------------------------------------------------------------------------------------

def audit_zcdp(mechanism, rho=None, pairs=None, confidence=0.95, samples=None, seed=0,
               n_jobs=-1, backend=None, time_limit=None, delta=None) -> ZcdpAuditResult:
    """Audit a ρ-zCDP claim (default: `@dpverify.mechanism(zcdp=...)`) on neighbouring pairs.

    Two parts, each with half of α_err = 1 − confidence, so the false-alarm rate on a
    mechanism that satisfies its claim is ≤ 1 − confidence overall (union bound; module
    docstring, docs/theory.md §8):
    1. Rényi: one event chosen on search samples, counted on fresh ones; two Clopper–Pearson
       bounds at α_err/4 each give a lower bound on D_α at every order of `ORDERS` jointly;
       `rho_lower_bound` = max_α D_α^LB/α is flagged when it exceeds ρ.
    2. Implied (ε, δ): `engine.audit` at ε = ρ + 2√(ρ ln(1/δ)) (Bun & Steinke 2016,
       Prop. 1.3), confidence 1 − α_err/2. `delta`: that claim's δ, default 1e-6.
    `samples`: certifying runs per input of each part (Rényi default 2^20 batched / 2^17
    scalar; the implied audit's default is the engine's). Mechanisms with their own randomness
    are fine: the Rényi part never shares seeds between D and D'.
    """
    started = time.perf_counter()
    mech = as_mechanism(mechanism)
    rho, delta = _claim(mech, rho, delta)
    confidence = engine._validate_options(confidence, samples, seed, 1)
    if time_limit is not None and not (float(time_limit) > 0):
        raise InvalidClaimError(f"time_limit must be a positive number of seconds, got "
                                f"{time_limit!r}")
    deadline = None if time_limit is None else time.monotonic() + float(time_limit)
    given = pairs if pairs is not None else mech.pairs
    distance = int(getattr(given, "distance", 1))
    search_runs = 0
    if isinstance(given, pairs_module.PairSearch):  # chosen on samples of their own
        from .input_search import find_pairs
        given = find_pairs(mech, given, seed, n_jobs, backend, deadline, 0.0,
                           error_split(confidence)[0])
        search_runs = given.runs
    pair_list = pairs_module.normalize(given)
    target = rho * distance ** 2
    eps = implied_epsilon(target, delta)
    level, implied_confidence = error_split(confidence)
    n = int(samples or mech.samples or (engine.DEFAULT_SAMPLES_BATCHED // 4 if mech.batched
                                        else engine.DEFAULT_SAMPLES_SCALAR))
    part = _renyi_part(mech, pair_list, n, level, _renyi_seed(seed), n_jobs, backend, deadline)
    implied = engine.audit(mech, pairs=list(pair_list), epsilon=eps, delta=delta,
                           confidence=implied_confidence, samples=samples, seed=seed,
                           n_jobs=n_jobs, backend=backend, time_limit=_time_left(deadline))
    rho_lb, alpha = certified_rho(ORDERS, part.lower)
    violated = rho_lb > target or implied.verdict == "violation"
    return ZcdpAuditResult(
        mechanism=mech.name, verdict="violation" if violated else "pass", claimed_rho=rho,
        rho_lower_bound=rho_lb, alpha=alpha, orders=tuple(map(float, ORDERS)),
        renyi_lower=tuple(map(float, part.lower)), implied_epsilon=eps, implied_delta=delta,
        implied=implied, confidence=confidence, witness=part.witness,
        samples=part.runs + search_runs + implied.samples,
        seconds=time.perf_counter() - started, seed=int(seed), randomness=mech.randomness,
        distance=distance)


def _claim(mech, rho, delta) -> tuple[float, float]:
    if rho is None:
        rho = mech.zcdp
    if rho is None:
        raise InvalidClaimError(f"no zCDP claim for {mech.name!r}: pass rho= or declare it with "
                                "@dpverify.mechanism(zcdp=...)")
    return validate_zcdp(rho), validate_delta(delta)


def _renyi_seed(seed: int) -> int:
    """The Rényi part's root seed: derived from the audit's, so its samples are drawn apart from
    the implied audit's (which uses the seed itself, as `dpverify audit --epsilon` would)."""
    return int(np.random.SeedSequence([int(seed), SEED_TAG]).generate_state(1)[0])


def _time_left(deadline):
    """Seconds left for the implied audit (a tiny positive number once the time is up, so that
    the engine raises its AuditTimeoutError at its first chunk)."""
    return None if deadline is None else max(deadline - time.monotonic(), 1e-3)


class _RenyiPart(NamedTuple):
    lower: np.ndarray       # certified D_α lower bound at each of ORDERS
    witness: Witness | None
    runs: int


class _Event(NamedTuple):
    cand: Candidate         # S = {score ≥ threshold} on its pair, P = M(D) in direction 0
    complement: bool        # certify S^c, the cell P favoured on the search sample
    planned: float          # planned certified ρ (search data only)


def _renyi_part(mech, pair_list, n, level, seed, n_jobs, backend, deadline) -> _RenyiPart:
    """Search → choose one event → count it on fresh, independent samples → certified curve."""
    m = min(SEARCH_SAMPLES, n)
    with Sampler(mech, pair_list, seed, n_jobs=n_jobs, backend=backend,
                 deadline=deadline) as sampler:
        search = checked_search_samples(sampler, m)
        best = None
        for p in range(len(pair_list)):
            for event in _events(p, search[p, 0], search[p, 1], n, level, mech.floating_point):
                if best is None or event.planned > best.planned:
                    best = event
        if best is None:
            return _RenyiPart(np.zeros(len(ORDERS)), None, int(sampler.runs.sum()))
        k_p, k_q = _certifying_counts(sampler, best, n)
        runs = int(sampler.runs.sum())
    lower = renyi_curve_lower(float(cp_lower(k_p, n, level)), float(cp_upper(k_q, n, level)),
                              ORDERS)
    return _RenyiPart(lower, _witness(pair_list, best, k_p, k_q, n, level), runs)


def _events(pair, a: Encoded, b: Encoded, n: int, level: float, floating_point=False):
    """Per learned score model and direction, the oriented threshold event with the largest
    planned certified ρ (`planned_rho`). Models are learned on one half of the search sample
    and thresholds chosen on the other, as in engine._rdp_candidates. {s ≥ t} and its
    complement are one partition, so one sign suffices; the cell P favours is certified."""
    learn_a, sel_a = a.take(slice(0, None, 2)), a.take(slice(1, None, 2))
    learn_b, sel_b = b.take(slice(0, None, 2)), b.take(slice(1, None, 2))
    for model in learn_models(learn_a, learn_b, floating_point):
        probe = Candidate(pair, 0, model, 1, 0.0, 0.0, (0, 1, 0, 1))
        va, vb = np.sort(probe.signed_scores(sel_a)), np.sort(probe.signed_scores(sel_b))
        thresholds = np.unique(np.concatenate([va[np.isfinite(va)], vb[np.isfinite(vb)]]))
        if thresholds.size == 0:
            continue
        if thresholds.size > MAX_THRESHOLDS:
            thresholds = np.unique(np.quantile(thresholds, np.linspace(0, 1, MAX_THRESHOLDS)))
        ka, kb = count_at_least(va, thresholds), count_at_least(vb, thresholds)
        for direction, (kp, mp, kq, mq) in enumerate([(ka, len(va), kb, len(vb)),
                                                      (kb, len(vb), ka, len(va))]):
            flip = kp * mq < kq * mp            # P favours S^c here
            kp_o, kq_o = np.where(flip, mp - kp, kp), np.where(flip, mq - kq, kq)
            planned = planned_rho(kp_o, mp, kq_o, mq, n, level)
            i = int(np.argmax(planned))
            cand = Candidate(pair, direction, model, 1, float(thresholds[i]), 0.0,
                             (int(kp_o[i]), mp, int(kq_o[i]), mq))
            yield _Event(cand, bool(flip[i]), float(planned[i]))


def _certifying_counts(sampler, event: _Event, n: int) -> tuple[int, int]:
    """Hits of the oriented event in n fresh runs under P and under Q (independent chunks: no
    seed is shared between the inputs, so this holds for mechanisms with own randomness)."""
    cand = event.cand
    tasks = [t for s in (0, 1) for t in split_into_chunks(
        n, sampler.chunk_size, pair=cand.pair, side=s, stage=2, purpose=CERTIFY)]
    counts = np.zeros(2, dtype=np.int64)
    for task, c in zip(tasks, sampler.run(tasks, {cand.pair: PairEvaluator([cand])})):
        counts[task.side] += c[0]
    k_p, k_q = int(counts[cand.direction]), int(counts[1 - cand.direction])
    return (n - k_p, n - k_q) if event.complement else (k_p, k_q)


def _witness(pair_list, event: _Event, k_p, k_q, n, level) -> Witness:
    """The evidence; its ε fields are the δ = 0 two-bound certificate on the same two bounds."""
    cand = event.cand
    first, second = pair_list[cand.pair]
    D, D_prime = (first, second) if cand.direction == 0 else (second, first)
    text = cand.describe()
    return Witness(
        D=D, D_prime=D_prime, event=f"NOT [{text}]" if event.complement else text,
        attack=cand.model.kind, count_D=int(k_p), samples_D=int(n), count_D_prime=int(k_q),
        samples_D_prime=int(n), p_lower=float(cp_lower(k_p, n, level)),
        q_upper=float(cp_upper(k_q, n, level)),
        epsilon_lower_bound=float(certified_epsilon(k_p, n, k_q, n, 0.0, level)),
        epsilon_estimate=plug_in_epsilon(k_p, n, k_q, n, 0.0), stage=2,
        support_mismatch=bool(k_q == 0 and k_p >= engine.SUPPORT_MISMATCH_HITS),
        certificate=TWO_BOUNDS)


# ------------------------------------------------------------------------------------------------
# Reports (report.py calls these for zCDP results)
# ------------------------------------------------------------------------------------------------

def renyi_plot(result: ZcdpAuditResult, path: Path) -> None:
    """The certified D_α lower-bound curve against the claimed ρα (and k²ρα), log-scaled
    orders."""
    from .plots import _save, plt
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
    word = "VIOLATION" if result.verdict == "violation" else "pass (not a proof)"
    ax.text(0.98, 0.02, f"{word}: {result.rho_clause()}\nclaimed {result.claim_text()}, "
            f"confidence {result.confidence:g}", transform=ax.transAxes, fontsize=7,
            ha="right", va="bottom", bbox=dict(fc="white", ec="#999999"))
    _save(fig, path)


def write_zcdp_plots(result: ZcdpAuditResult, directory: Path) -> list[str]:
    renyi_plot(result, Path(directory) / "renyi_curve.png")
    return ["renyi_curve.png"]


def is_zcdp_entry(entry: dict) -> bool:
    """A result.json entry of a zCDP audit."""
    return isinstance(entry.get("claimed"), dict) and "zcdp_rho" in entry["claimed"]


def _f(value) -> str:
    return f"{float(value):.4g}"  # JSON spells infinities "inf"/"-inf": float() reads them


def table_cells(entry: dict) -> tuple[str, str]:
    """(claim, certified) cells of a zCDP entry in the report's summary table."""
    c = entry["claimed"]
    return (f"ρ={_f(c['zcdp_rho'])}-zCDP ⇒ ({_f(c['implied_epsilon'])}, "
            f"{_f(c['implied_delta'])})",
            f"ρ ≥ {_f(entry['rho_lower_bound'])}; ε ≥ "
            f"{_f(entry['implied']['epsilon_lower_bound'])}")


def markdown_lines(entry: dict) -> list[str]:
    """A zCDP entry's section in report.md (before its witness lines)."""
    c, i = entry["claimed"], entry["implied"]
    return [f"- claim: ρ = {_f(c['zcdp_rho'])}-zCDP (Bun & Steinke 2016)"
            + (f", audited at {entry['group_distance']}²ρ for pairs "
               f"{entry['group_distance']} apart" if entry.get("group_distance", 1) > 1 else ""),
            f"- certified ρ ≥ {_f(entry['rho_lower_bound'])} (max over orders of the certified "
            f"D_α/α, attained at α = {_f(entry['alpha'])}); Clopper–Pearson bounds on the "
            "witness event, each at (1 − confidence)/4, bound D_α at every order jointly",
            f"- implied ({_f(c['implied_epsilon'])}, {_f(c['implied_delta'])})-DP audit "
            f"(ε = ρ + 2√(ρ ln(1/δ))): {i['verdict']}, certified ε ≥ "
            f"{_f(i['epsilon_lower_bound'])} at confidence {i['confidence']:.6g}",
            "- the two parts share the error budget equally: false-alarm rate ≤ 1 − confidence"]


__all__ = ["audit_zcdp", "ZcdpAuditResult", "implied_epsilon", "renyi_bernoulli",
           "renyi_curve_lower", "certified_rho", "planned_rho", "error_split", "validate_delta",
           "write_zcdp_plots", "renyi_plot", "DEFAULT_DELTA", "ORDERS"]
