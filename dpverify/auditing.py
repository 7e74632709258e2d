"""`dpverify.audit`: the claim decides which audit runs — (ε, δ) (`pipeline.AuditRun`), ρ-zCDP
(`dpverify.zcdp.audit_zcdp`), (α, ρ)-RDP (`rdp.audit_rdp`) or a curve: μ-GDP, f-DP or
a privacy profile (`dpverify.fdp.audit_curve`).

It sits above both the pipeline and `dpverify.zcdp` (which runs the (ε, δ) pipeline for its
implied claim), so neither imports the other through it."""
from __future__ import annotations

import time

from .errors import InvalidClaimError
from .kinds import CURVE, EPSILON_DELTA, RDP, ZCDP
from .mechanism import as_mechanism
from .options import check_fits_claim, check_one_claim, check_stopping
from .pipeline.request import build_request
from .pipeline.run import AuditRun
from .result import AuditResult


def is_zcdp_claim(mech, epsilon=None, zcdp=None) -> bool:
    """Whether `audit` audits a ρ-zCDP claim (dpverify.zcdp): one is given, or the mechanism
    declares one and no ε is given or declared."""
    return zcdp is not None or (epsilon is None and mech.epsilon is None
                                and mech.zcdp is not None)


def is_curve_claim(mech, epsilon=None, zcdp=None, curve=None) -> bool:
    """Whether `audit` audits a curve claim (dpverify.fdp): one is given (`curve`: the gdp=,
    tradeoff= or profile= value, or a CurveClaim), or the mechanism declares one and no ε or ρ
    is given."""
    return curve is not None or (epsilon is None and zcdp is None
                                 and as_mechanism(mech).curve is not None)


def claim_kind(mech, epsilon=None, zcdp=None, curve=None) -> str:
    """The kind of claim `audit` tests (`dpverify.kinds`): a given curve, ρ or ε first, then
    what the mechanism declares (a curve, ρ-zCDP, RDP when it declares no ε), else (ε, δ)."""
    mech = as_mechanism(mech)
    if is_curve_claim(mech, epsilon, zcdp, curve):
        return CURVE
    if is_zcdp_claim(mech, epsilon, zcdp):
        return ZCDP
    if epsilon is None and mech.epsilon is None and mech.rdp is not None:
        return RDP
    return EPSILON_DELTA


def is_ed_claim(mech, epsilon=None, zcdp=None, curve=None) -> bool:
    """Whether `audit` tests an (ε, δ) claim, the one the report's curves, measurement runs,
    time budgets and confirmation apply to (`options.check_fits_claim`)."""
    return claim_kind(mech, epsilon, zcdp, curve) == EPSILON_DELTA


def _other_claim(mech, options: dict):
    """The result of a zCDP, RDP or curve audit when that is the claim, else None."""
    curve = options["curve"]
    check_one_claim(options, spell=_keyword)
    check_stopping(options, spell=_keyword)
    kind = claim_kind(mech, options["epsilon"], options["zcdp"], curve)
    check_fits_claim(kind, options, spell=_keyword, name=mech.name)
    if kind == CURVE:
        from .fdp import REFERENCE_DELTA, audit_curve
        reference = REFERENCE_DELTA if options["delta"] is None else options["delta"]
        return audit_curve(mech, claim=curve, reference_delta=reference, **_shared(options))
    if kind == ZCDP:
        from .zcdp import audit_zcdp
        return audit_zcdp(mech, rho=options["zcdp"], **_shared(options, "delta"))
    if kind == RDP:
        from .rdp import audit_rdp
        return audit_rdp(mech, **_shared(options))
    return None


def _keyword(name: str) -> str:
    """An option as `audit` spells it (a measurement run is stop_early=False)."""
    return "stop_early=False" if name == "measure" else f"{name}="


def _shared(options: dict, *more: str) -> dict:
    """The options a zCDP or RDP audit takes too."""
    names = ("pairs", "confidence", "samples", "seed", "n_jobs", "backend", "time_limit") + more
    return {name: options[name] for name in names}


def audit(mechanism, pairs=None, epsilon=None, delta=None, confidence=0.95, samples=None,
          seed=0, n_jobs=-1, backend=None, certify_per_stage=2, time_limit=None,
          progress=None, curves=False, stop_early=True,
          floating_point=None, seconds=None, zcdp=None, confirm=False, gdp=None, tradeoff=None,
          profile=None, proof_only=False, resolution=None) -> AuditResult:
    """Audit a black-box mechanism against its (ε, δ) claim on neighbouring pairs.

    Arguments left as None are taken from the `@dpverify.mechanism` decorator. `samples` is the
    mean certifying sample size per input at the last stage (each input gets a Poisson number
    of runs; default: as declared with `@dpverify.mechanism(samples=...)`, else 2^22 for
    batched mechanisms and 2^17 for scalar ones). The false-alarm rate
    on a correct mechanism is at most 1 − confidence.

    backend: "threading" (default for batched), "loky" (default for scalar), or "dask" (the
    current dask.distributed Client); the same seed gives the same result on every backend.
    time_limit: seconds for the whole audit; past it an AuditTimeoutError names the chunk.
    progress: progress on stderr (default: on a terminal a line redrawn in place once the audit
    has run two seconds; elsewhere a plain line every 30 s; neither under pytest; see
    docs/ci.md, with the environment variables DPVERIFY_PROGRESS_SECONDS and
    DPVERIFY_STALL_SECONDS and the warning printed when a chunk stalls).
    Ctrl-C stops the audit and returns what was certified so far, with `interrupted=True`.
    stop_early: an ordinary audit (default): a test by betting on the search rows, with half of
    α, stops at the first round that proves a violation, and the last stage certifies with
    the other half (docs/method.md, "Testing by betting while searching"). False measures how broken a mechanism is: every stage runs, the earlier ones
    only choose and tune events on their fresh samples, and the last stage certifies with all
    of α (a tighter bound at the same budget; nothing is certified if it is interrupted first).
    proof_only: stop at the betting test's proof. By default an ordinary audit whose betting
    test proves a violation goes on to measure it, as a measurement run would, on fresh runs
    and with the last stage's half of α, and reports the larger bound (docs/method.md,
    "Measuring a proved violation").
    seconds: a time budget. An ordinary audit stops at the first chunk that returns past it,
    with what it has proven by then: the test by betting holds at any stopping time, so a
    violation it found stands; without one the result is marked `budget_spent` (and it never
    runs longer than without a budget). A measurement run (stop_early=False) takes the size
    the budget buys instead, chosen once before its first stage from a pilot of the
    mechanism's cost (`pipeline.schedule.samples_for_seconds`); `samples` is then the most it
    may take (default 16× the default). Either way the result depends on the machine's speed,
    so the same seed may give another result elsewhere; the stages state the size used.
    curves: also count the witness's score at a grid of thresholds chosen on search data and
    return `result.curves` (trade-off points with boxes, certified δ(ε), p-values against ε).
    floating_point: also attack the outputs' float bit patterns (default: as declared with
    `@dpverify.mechanism(floating_point=...)`, else False); see `dpverify.mechanism`.
    confirm: count a violation's event again on fresh runs of its pair, and report a violation
    only if they confirm it (the bound is then the smaller of the two); a correct mechanism is
    then flagged in at most (1 − confidence)² of audits. Without it, a violation an exactly
    tight mechanism could reach in up to 1 − confidence of audits is flagged `marginal`
    (docs/method.md, "Marginal violations and confirmation").
    resolution: end a pass once its resolution (result.resolution, the smallest true ε it would
    catch about half the time) reaches this factor × the claim, e.g. 1.1: the last stage is
    sized from the runs before it, up to `samples` (docs/method.md, "Passes that stop at the
    resolution asked"); `result.resolution_target` records it. A violation is found and
    measured as without it.
    zcdp: audit a rho-zCDP claim instead (default: as declared with
    `@dpverify.mechanism(zcdp=...)`); `delta` is then the δ of the implied (ε, δ) claim that is
    audited beside it (`dpverify.zcdp.audit_zcdp`).
    gdp, tradeoff, profile: audit a curve claim instead (default: as declared): μ-GDP, a
    trade-off function α ↦ f(α), or a privacy profile ε ↦ δ(ε) (`dpverify.fdp.audit_curve`,
    which returns a `CurveAuditResult`; docs/fdp.md); `delta` is then the δ at which the
    certified ε is shown beside the claim's (default 1e-5).
    """
    started = time.perf_counter()
    mech = as_mechanism(mechanism)
    options = dict(pairs=pairs, epsilon=epsilon, delta=delta, confidence=confidence,
                   samples=samples, seed=seed, n_jobs=n_jobs, backend=backend,
                   certify_per_stage=certify_per_stage, time_limit=time_limit, progress=progress,
                   curves=curves, stop_early=stop_early, floating_point=floating_point,
                   seconds=seconds, confirm=confirm, proof_only=proof_only,
                   resolution=resolution)
    curve = None
    if gdp is not None or tradeoff is not None or profile is not None:
        from .curve_claim import curve_claim
        curve = curve_claim(gdp=gdp, tradeoff=tradeoff, profile=profile)
    other = _other_claim(mech, {**options, "zcdp": zcdp, "curve": curve})
    if other is not None:
        return other
    return AuditRun(mech, build_request(mech, **options), started=started).run()
