"""Frozen results of an audit, JSON-ready through `as_dict()`.

Infinite bounds are written to JSON as the strings "inf" / "-inf" (strict JSON has no infinity);
`float("inf")` reads them back.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar

import numpy as np

# Witness.certificate is an id of certificate_ids (TWO_BOUNDS, RATIO_TEST, COUPLED, BETTING,
# CONFIRMING); its plain words are written with the rest of a witness's text in evidence.py
from . import kinds
from .certificate_ids import (BETTING, BETTING_KINDS, CONFIRMING, COUPLED,  # noqa: F401
                              RATIO_TEST, TWO_BOUNDS)
from .evidence import (CERTIFICATE_DOCS, CERTIFICATE_WORDS,  # noqa: F401
                       lower_bound_text, witness_lines)


def jsonable(value: Any):
    """Make a value strict-JSON ready: ±inf → "inf"/"-inf", NaN → None, numpy → Python."""
    if isinstance(value, float) and math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, np.ndarray):
        return [jsonable(v) for v in value.tolist()]
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating,)):
        return jsonable(float(value))
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    return value


# Said wherever an audit of a mechanism declared with randomness="own" is shown.
OWN_RANDOMNESS_NOTE = ("           own randomness: the mechanism draws its own noise, so this "
                       "seed does not reproduce this bound (the confidence still holds; "
                       "certificates that need shared seeds were not used)")


@dataclass(frozen=True)
class Witness:
    """The evidence: P[M(D) ∈ S] counted on a certifying sample that did not choose S.

    `D` is the input whose output lands in the event more often; `D_prime` the other.
    p_lower and q_upper are each side's Clopper–Pearson bound at the event's per-bound level;
    with the ratio test (`certificate`) the bound comes from the hits alone and is tighter
    than ln((p_lower − δ)/q_upper); with the coupled certificate both inputs drew each block of
    runs from a shared seed and the bound comes from the blocks' hit counts (a t-test), so it
    may lie far above ln((p_lower − δ)/q_upper).
    """

    D: Any
    D_prime: Any
    event: str
    attack: str
    count_D: int
    samples_D: int
    count_D_prime: int
    samples_D_prime: int
    p_lower: float          # Clopper–Pearson lower bound on P[M(D) ∈ S]
    q_upper: float          # Clopper–Pearson upper bound on P[M(D') ∈ S]
    epsilon_lower_bound: float
    epsilon_estimate: float  # plug-in ln((p̂ − δ)/q̂), not a bound
    stage: int
    support_mismatch: bool   # many hits under D, none under D': ε may be infinite
    certificate: str = TWO_BOUNDS  # or RATIO_TEST, COUPLED: how epsilon_lower_bound was certified
    # COUPLED only: hits per block under D and under D' (block b of both on the same seeds),
    # and the runs per block: what the t-test saw, so a reader can recompute the bound
    # (stats.coupled_epsilon_bound(blocks_D, blocks_D_prime, block_size, δ, level))
    blocks_D: tuple | None = None
    blocks_D_prime: tuple | None = None
    block_size: int | None = None
    # the per-bound level of p_lower and q_upper (a box of the plots uses the same level)
    level: float | None = None
    # the event's most frequent outputs on an illustrative sample of `examples_runs` fresh runs
    # per input (sampling.illustration.collect_examples): {"output", "count_D",
    # "count_D_prime"}; shown to make the event concrete, never counted in the bound
    examples: tuple = ()
    examples_runs: int = 0
    # BETTING only: the wealth the test of the claim reached (its e-value) and the α it was run
    # at; the counts are the events' hits over every search round bet on this pair and order
    e_value: float | None = None
    betting_alpha: float | None = None
    # BETTING only: (rounds settled so far, summed over pairs; wealth) after each search round
    wealth_path: tuple = ()

    @property
    def rate_D(self) -> float:
        return self.count_D / self.samples_D

    @property
    def rate_D_prime(self) -> float:
        return self.count_D_prime / self.samples_D_prime

    def summary_lines(self) -> list[str]:
        """The pair, the event, the counts and the certificate, as the summaries print them
        (`evidence.witness_lines`); the pair abbreviated without hiding a coordinate where D and
        D' differ."""
        return witness_lines(self)

    def as_dict(self) -> dict:
        d = asdict(self)
        d["rate_D"] = self.rate_D
        d["rate_D_prime"] = self.rate_D_prime
        return jsonable(d)


@dataclass(frozen=True)
class PrivacyCurves:
    """The witness's score seen as a family of tests (theory.md §1), counted on its certifying
    sample at thresholds chosen on search data.

    Test t says "D" when sign·s(o) ≥ thresholds[t]: false-positive rate α = P[M(D') says D],
    false-negative rate β = P[M(D) says D']. Boxes are Clopper–Pearson, jointly at
    `box_confidence`; `outside[t]`: box t lies wholly outside the claimed R(ε, δ).
    `delta_lower[i]`: certified δ(ε) ≥ this at `epsilons[i]`. `pvalues[i]`: p-value of "ε-DP
    on the witness event" at test ε = epsilons[i].
    """

    thresholds: tuple
    alpha: tuple
    beta: tuple
    alpha_low: tuple
    alpha_high: tuple
    beta_low: tuple
    beta_high: tuple
    outside: tuple
    box_confidence: float
    epsilons: tuple
    delta_lower: tuple
    pvalues: tuple
    # discrete outputs: plug-in {"loss", "probability", "of"} under D ("of": "output", or the
    # discrete part of a mixed output that the witness's model reads)
    privacy_loss: dict | None = None


@dataclass(frozen=True)
class StageSummary:
    stage: int
    samples_per_side: int
    alpha: float
    candidates_certified: int
    best_epsilon_lower_bound: float


# The inconclusive rule (docs/method.md#what-an-audit-promises, docs/theory.md §2.11): an audit
# that found no violation is INCONCLUSIVE when its resolution is above a gross violation of the
# claim, max(GROSS_FACTOR·ε, ε + GROSS_MARGIN): this budget could not have caught, even half the
# time, a mechanism whose true ε is twice the claim on an event as likely as the best it found.
GROSS_FACTOR = 2.0
GROSS_MARGIN = 0.1
INCONCLUSIVE_ADVICE = ("raise the samples (--samples), or check that each batch's outputs are "
                       "independent draws")


def gross_violation(claimed_epsilon: float) -> float:
    """The smallest true ε an audit of this claim must be able to catch to be conclusive."""
    return max(GROSS_FACTOR * claimed_epsilon, claimed_epsilon + GROSS_MARGIN)


def is_conclusive(verdict: str, claimed_epsilon: float, resolution: float) -> bool:
    """A violation always is; a pass only when its resolution reaches a gross violation."""
    return verdict == "violation" or resolution <= gross_violation(claimed_epsilon)


def outcome_of(verdict: str, conclusive: bool) -> str:
    """"violation", "pass" or "inconclusive": what the summary, reports, gate and exit code
    show."""
    return verdict if conclusive else "inconclusive"


def divergence_measured(certified_rho: float, claimed_rho: float) -> bool:
    """The rule for ρ-zCDP and (α, ρ)-RDP claims: a pass is conclusive once the certified
    divergence reaches 1/GROSS_FACTOR of the claim, measured at the claim's scale
    (docs/zcdp.md)."""
    return certified_rho >= claimed_rho / GROSS_FACTOR


OUTCOME_WORDS = {"violation": "VIOLATION", "pass": "pass", "inconclusive": "INCONCLUSIVE"}


class HasOutcome:
    """What every kind of result shares: `kind` names it ("epsilon_delta", "zcdp", "rdp" or
    "curve", also the "kind" of its JSON entry, on which reports dispatch), and `outcome`,
    `passed` and the summary's word follow from its `verdict` and `conclusive`."""

    kind: ClassVar[str] = ""   # one of dpverify.kinds.KINDS

    @property
    def outcome(self) -> str:
        """"violation", "pass" (a conclusive one) or "inconclusive"."""
        return outcome_of(self.verdict, self.conclusive)

    @property
    def passed(self) -> bool:
        """A conclusive pass: no violation found, by a budget whose resolution reaches a gross
        violation of the claim."""
        return self.outcome == "pass"

    def word(self) -> str:
        """VIOLATION, pass or INCONCLUSIVE."""
        return OUTCOME_WORDS[self.outcome]

    def _repr_html_(self) -> str:
        """The verdict, the summary and the witness picture, for a notebook
        (`interfaces.notebook.result_html`)."""
        from .interfaces.notebook import result_html
        return result_html(self)


STOPPED_ADVICE = ("it was stopped before its budget was spent (Ctrl-C or a time budget): run "
                  "it to the end")


def inconclusive_advice(stopped: bool) -> str:
    """What to do about an inconclusive audit: run a stopped one to the end, else raise the
    samples or check the batches."""
    return STOPPED_ADVICE if stopped else INCONCLUSIVE_ADVICE


def inconclusive_line(mechanism: str, claim: str, claimed_epsilon: float, resolution: float,
                      best: str, stopped: bool = False) -> str:
    """The headline of an inconclusive audit, and what to do about it (`stopped`: Ctrl-C or a
    time budget ended it early)."""
    catches = ("no violation at all" if math.isinf(resolution)
               else f"only ε ≥ {resolution:.4g}")
    return (f"INCONCLUSIVE {mechanism}: no violation of {claim} found, but this budget could not "
            f"have caught a gross one (ε ≥ {gross_violation(claimed_epsilon):.4g}): on an event "
            f"as likely as the best found it catches {catches} (best certified ε ≥ {best})\n"
            f"           {inconclusive_advice(stopped)}")


def leak_reach_text(reach: float, confidence: float) -> str:
    """What a pass covers beyond its resolution: the rarest leak it would have caught."""
    if not math.isfinite(reach):
        return ("leaks: too few runs to have caught, with probability "
                f"{confidence:g}, an output seen under one input only")
    return (f"leaks: an output seen under one input only, in at least 1 of "
            f"{math.floor(1 / reach):,} runs, would have been caught with probability ≥ "
            f"{confidence:g}")


def marginal_text(level: float) -> str:
    """What a marginal violation is, and how to confirm it (certify.confirm)."""
    return (f"marginal: a mechanism whose true ε equals the claim gives a violation this strong "
            f"in up to {100 * level:.2g}% of audits; confirm it on fresh runs: --confirm "
            "(Python: audit(confirm=True); the gate and the pytest plugin confirm by default)")


def confirmation_text(c: dict, claimed_epsilon: float) -> str:
    """A confirmation (`Confirmation.as_dict()`) in words."""
    found = (f"the audit certified ε ≥ {lower_bound_text(c['first_bound'], claimed_epsilon)}"
             + (" (marginal)" if c.get("first_marginal") else ""))
    if c.get("measured"):
        return (f"confirmed: {found}, measured on runs drawn after its proof by betting, "
                "which tested it again at no extra run")
    if c["rounds"] == 0:
        return f"NOT CONFIRMED: {found}, but it stopped before its first round of fresh runs"
    fresh = (f"bets on its event over {c['runs']:,} fresh runs ({c['rounds']} round"
             f"{'s' if c['rounds'] > 1 else ''}) grew 1 to {c['e_value']:.4g}")
    if c["confirmed"]:
        return (f"confirmed: {found}; {fresh} (≥ 1/α), certifying ε ≥ "
                f"{lower_bound_text(c['bound'], claimed_epsilon)}")
    return (f"NOT CONFIRMED: {found}, but {fresh}, short of 1/α: reported as a pass")


@dataclass(frozen=True)
class Confirmation:
    """The witness's event tested again on fresh runs of its pair (`audit(confirm=True)`;
    pipeline.confirm, docs/method.md "Marginal violations and confirmation"): a test by betting
    on that one event at the audit's α, over rounds of fresh runs, until its wealth reaches 1/α
    (`confirmed`) or the audit's `samples` are spent. `first` is the audit's own witness;
    `witness` the confirming test's (its counts over the rounds, its e-value and bound). A
    proved violation whose measurement is past the claim is confirmed by it (`measured`): its
    measured witness is then both `first` and `witness`, and no round is drawn."""

    confirmed: bool
    first: Witness
    witness: Witness | None
    rounds: int
    runs: int           # fresh runs drawn, both inputs
    first_marginal: bool = False  # the audit's own violation was marginal (certify.confirm)
    measured: bool = False  # confirmed by the proof's measurement on fresh runs, no bets

    @property
    def first_bound(self) -> float:
        """The bound the audit itself certified."""
        return self.first.epsilon_lower_bound

    @property
    def bound(self) -> float:
        """The bound the fresh runs certified (−∞ unless confirmed)."""
        return self.witness.epsilon_lower_bound if self.witness is not None else -math.inf

    def as_dict(self) -> dict:
        return jsonable({"confirmed": self.confirmed, "first_bound": self.first_bound,
                         "first_marginal": self.first_marginal, "bound": self.bound,
                         "e_value": self.witness.e_value if self.witness else 1.0,
                         "rounds": self.rounds, "runs": self.runs, "measured": self.measured,
                         "first": self.first.as_dict(),
                         "witness": self.witness.as_dict() if self.witness else None})


@dataclass(frozen=True)
class AuditResult(HasOutcome):
    """Outcome of `dpverify.audit`.

    verdict "violation": with probability ≥ `confidence` the mechanism is NOT
    (claimed_epsilon, claimed_delta)-DP on the witness pair. verdict "pass": no violation was
    found at this budget — not a proof of privacy. What it covers: `resolution`, the true ε this
    budget would have caught about half the time on an event as likely as the best one it
    tested, and `leak_reach`, the least fraction of runs in which an output seen under one input
    only would have been caught with probability ≥ `confidence`. `conclusive` is True for a
    violation, and for a pass exactly when `resolution` ≤ `gross_violation(claimed_epsilon)`;
    else `outcome` is "inconclusive": the audit could not have told a gross violation on such
    an event from none.
    """

    kind: ClassVar[str] = kinds.EPSILON_DELTA

    mechanism: str
    verdict: str
    claimed_epsilon: float
    claimed_delta: float
    epsilon_lower_bound: float
    confidence: float
    witness: Witness | None
    resolution: float
    samples: int               # mechanism runs in total (all pairs, both inputs, search + certify)
    samples_per_side: int      # the most runs on any one input of one pair
    seconds: float
    seed: int
    stages: tuple = field(default_factory=tuple)
    interrupted: bool = False  # stopped by Ctrl-C: the bound is what was certified until then
    curves: PrivacyCurves | None = None  # with audit(curves=True)
    # an ordinary audit stopped at its time budget (audit(seconds=)): as for Ctrl-C, the bound
    # is what was proven until then (the test by betting holds at any stopping time)
    budget_spent: bool = False
    # where the mechanism's noise came from: "rng" (the seeded generator) or "own" (its own,
    # declared with randomness="own"): then the same seed need not give the same result
    randomness: str = "rng"
    # mechanism runs per neighbouring pair (both inputs, in the order of the audited pairs):
    # where the audit spent its runs (an input shared by pairs counts for the first of them)
    runs_per_pair: tuple = ()
    # a pass's leak reach: the least fraction of runs in which an output seen under one input
    # only would have been caught with probability ≥ `confidence` (certify.reach; docs/theory.md
    # §2.13); ∞ for a violation, or an audit that never reached its last stage
    leak_reach: float = math.inf
    # a violation that would not hold with every level multiplied by 1 − confidence: an
    # exactly tight mechanism reaches it in up to 1 − confidence of audits (certify.confirm)
    marginal: bool = False
    # a violation's strength: at most this fraction of audits of a mechanism meeting its claim
    # gives a violation as strong as the audit's own (certify.confirm.evidence_level); marginal
    # when above (1 − confidence)²; None without a violation
    evidence_level: float | None = None
    # audit(confirm=True) on a violation: the witness's event counted again on fresh runs; the
    # verdict is "violation" only if they confirm it, and the bound is the smaller of the two
    confirmation: Confirmation | None = None
    # the best witness's event as the engine scores it (attacks.Candidate: `hits(encoded)`,
    # `signed_scores`, its `pair` index and `direction`), for scripts that count it on runs of
    # their own; not in the JSON
    event: Any = field(default=None, repr=False, compare=False)
    # the runs in all when the betting test proved the violation (None: it proved none); the
    # audit then measured it on the runs after them, unless proof_only=True
    # (docs/method.md, "Measuring a proved violation")
    proof_runs: int | None = None
    # the betting test's witness of that proof (its wealth path), when the reported witness is
    # another (the measurement's); None otherwise
    proof: Witness | None = None
    # audit(resolution=): the pass's resolution target as a true ε (factor × claim); the last
    # stage was sized to reach it from the runs before it. None: the budget was `samples`
    resolution_target: float | None = None

    @property
    def target_reached(self) -> bool | None:
        """Whether a pass's resolution reached its target (None without a target, or for a
        violation, which no target stops)."""
        if self.resolution_target is None or self.verdict != "pass":
            return None
        return self.resolution <= self.resolution_target

    @property
    def gross_epsilon(self) -> float:
        """The smallest true ε this audit had to be able to catch to be conclusive
        (`gross_violation` of the claim)."""
        return gross_violation(self.claimed_epsilon)

    @property
    def conclusive(self) -> bool:
        """A violation; or a pass whose resolution is at most a gross violation of the claim
        (it would have caught one about half the time on an event as likely as the best)."""
        return is_conclusive(self.verdict, self.claimed_epsilon, self.resolution)

    @property
    def reproducible(self) -> bool:
        """True when the same seed gives the same result (the mechanism drew from `rng`)."""
        return self.randomness == "rng"

    @property
    def support_mismatch(self) -> bool:
        """The witness event occurred many times under D and never under D' on the certifying
        sample: ε is likely infinite, and the finite bound only reflects the sample size."""
        return self.witness is not None and self.witness.support_mismatch

    def summary(self) -> str:
        """A few lines a person can read."""
        lb = self.epsilon_lower_bound
        claim = f"(ε={self.claimed_epsilon:g}, δ={self.claimed_delta:g})"
        lines = []
        if self.verdict == "violation":
            lines.append(f"VIOLATION  {self.mechanism}: claimed {claim}, certified ε ≥ "
                         f"{lower_bound_text(lb, self.claimed_epsilon)} "
                         f"at confidence {self.confidence:g}"
                         + ("; SUPPORT MISMATCH: ε is likely ∞" if self.support_mismatch else ""))
        elif self.conclusive:
            lines.append(f"pass       {self.mechanism}: no violation of {claim} found at this "
                         f"budget (best certified ε ≥ {lower_bound_text(lb, self.claimed_epsilon)}; "
                         f"would catch about ε ≥ "
                         f"{self.resolution:.4g} on an event as likely as the best)")
        else:
            lines.append(inconclusive_line(self.mechanism, claim, self.claimed_epsilon,
                                           self.resolution,
                                           lower_bound_text(lb, self.claimed_epsilon),
                                           stopped=self.interrupted or self.budget_spent))
        if self.confirmation is not None:
            lines.append("           " + confirmation_text(self.confirmation.as_dict(),
                                                           self.claimed_epsilon))
        if self.marginal:
            lines.append("           " + marginal_text(self.evidence_level))
        if self.verdict == "pass":
            lines.append("           " + leak_reach_text(self.leak_reach, self.confidence))
            if self.resolution_target is not None:
                lines.append("           " + self._target_text())
        if self.witness is not None:
            lines += self.witness.summary_lines()
        lines.append(f"           {self._runs_text()}, {self.seconds:.2f} s, seed {self.seed}"
                     + self._stop_note())
        if not self.reproducible:
            lines.append(OWN_RANDOMNESS_NOTE)
        return "\n".join(lines)

    def _target_text(self) -> str:
        """What the resolution target asked of a pass, and whether it got it."""
        asked = f"resolution target ε ≤ {self.resolution_target:.4g}"
        if self.target_reached:
            return f"{asked}: reached"
        return (f"{asked}: NOT reached ({self.resolution:.4g}); raise samples= (the most a "
                "pass may draw) or ask a coarser resolution")

    def _runs_text(self) -> str:
        """The runs the audit drew, and for a violation proved by betting and measured (or
        confirmed) after the proof, the runs the proof took."""
        if self.proof_runs is None or self.samples <= self.proof_runs:
            return f"{self.samples:,} mechanism runs"
        return f"proved false after {self.proof_runs:,} runs, {self.samples:,} runs in all"

    def _stop_note(self) -> str:
        """Why the audit ended before its plan did, if it did."""
        if self.interrupted:
            return "  [INTERRUPTED: only the stages before Ctrl-C count]"
        if self.budget_spent:
            return "  [TIME BUDGET SPENT: only the runs before it count]"
        return ""

    def as_dict(self) -> dict:
        return jsonable({
            "kind": self.kind,
            "mechanism": self.mechanism,
            "verdict": self.verdict,
            "conclusive": self.conclusive,
            "outcome": self.outcome,
            "claimed": {"epsilon": self.claimed_epsilon, "delta": self.claimed_delta},
            "epsilon_lower_bound": self.epsilon_lower_bound,
            "support_mismatch": self.support_mismatch,
            "confidence": self.confidence,
            "resolution": self.resolution,
            "leak_reach": self.leak_reach,
            "samples": self.samples,
            "samples_per_side": self.samples_per_side,
            "seconds": self.seconds,
            "seed": self.seed,
            "witness": self.witness.as_dict() if self.witness else None,
            "stages": [asdict(s) for s in self.stages],
            "interrupted": self.interrupted,
            "budget_spent": self.budget_spent,
            "curves": asdict(self.curves) if self.curves is not None else None,
            "randomness": self.randomness,
            "reproducible": self.reproducible,
            "runs_per_pair": list(self.runs_per_pair),
            "marginal": self.marginal,
            "evidence_level": self.evidence_level,
            "confirmation": (self.confirmation.as_dict() if self.confirmation is not None
                             else None),
            "proof_runs": self.proof_runs,
            "proof": self.proof.as_dict() if self.proof is not None else None,
            "resolution_target": self.resolution_target,
            "target_reached": self.target_reached,
        })
