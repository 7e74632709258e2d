"""pytest plugin: DP audits where mechanism code is already tested.

Registered under the ``pytest11`` entry point, so any project that installs dpverify has:

- the fixture ``dp_audit(mechanism, pairs=..., epsilon=..., delta=..., **options)`` returning the
  `AuditResult` and raising `dpverify.PrivacyViolation` (an AssertionError) on a violation; an
  inconclusive audit (its budget could not have caught a gross violation) issues
  `dpverify.InconclusiveAuditWarning`, a failure under
  ``-W error::dpverify.InconclusiveAuditWarning``;
- the marker ``@pytest.mark.dp(epsilon=, delta=, pairs=)``, giving the claim to ``dp_audit``
  (or ``@pytest.mark.dp(zcdp=RHO, pairs=)``: a ρ-zCDP claim, audited by ``dpverify.zcdp`` with
  ``delta`` the δ of the (ε, δ) claim it implies; or a curve, ``gdp=MU``, ``tradeoff=f`` or
  ``profile=delta_of``, audited by ``dpverify.fdp``);
- collection: ``pytest --dpverify PATH`` (repeatable) or the ini option ``dpverify_paths`` turns
  every ``@dpverify.mechanism`` in those files into a test item named after it. Given no test
  path, ``pytest --dpverify mine.py`` collects only mine.py (not the tests under the current
  directory or ``testpaths``); ``pytest tests/ --dpverify mine.py`` collects both. Paths from
  the ini option are added to whatever pytest collects anyway;
- options ``--dpverify-profile {fast,ci}`` (``ci`` when the CI environment variable is set),
  ``--dpverify-seed`` (an integer, or ``random``), ``--dpverify-samples``,
  ``--dpverify-confidence``, ``--dpverify-jobs``, ``--dpverify-budget`` and
  ``--dpverify-confirm`` / ``--dpverify-no-confirm`` (on by default: every (ε, δ) violation
  is confirmed on fresh runs before a test fails; the ini option ``dpverify_confirm = false``
  or the environment variable ``DPVERIFY_CONFIRM=0`` turn it off) and
  ``--dpverify-resolution F`` (every ordinary (ε, δ) audit ends its pass once its resolution
  reaches F × the claim, `dpverify.audit(resolution=F)`), defined (with their checks) in
  `dpverify.options`, as the command line's are.

Flake control. Audits are seeded (default seed 0, each test gets its own seed derived from it and
its node id), so a run is deterministic. The session budget B (default 0.05) bounds the chance
that a mechanism meeting its claim fails ANYWHERE in the session, for any seed: each of the N
DP tests collected gets B/N, and the k-th audit inside one test spends (B/N)/2^k, so the
confidences used add up to at most B (union bound). An explicit ``--dpverify-confidence`` or
``confidence=`` replaces that split for the audits it applies to.
"""
from __future__ import annotations

import os
import random
import shlex
import warnings
import zlib
from pathlib import Path

import numpy as np
import pytest

from ..errors import DpVerifyError, InconclusiveAuditWarning, InvalidClaimError, PrivacyViolation
from ..evidence import FAILURE_LAYOUT, lower_bound_text, witness_lines
from ..loading import mechanisms_in, module_from_path
from ..mechanism import Mechanism
from ..result import confirmation_text, marginal_text
from ..options import (OPTIONS, PLUGIN_INI_HELP, PLUGIN_OPTIONS, PROFILES, check_values,
                       confirm_requested)


def pytest_addoption(parser):
    """The plugin's options, as dpverify.options defines them."""
    group = parser.getgroup("dpverify", "differential-privacy audits (dpverify)")
    for name in PLUGIN_OPTIONS:
        option = OPTIONS[name]
        default = option.plugin_default
        group.addoption(option.plugin.flag, **option.plugin.settings, help=option.plugin_help,
                        default=list(default) if isinstance(default, tuple) else default)
    parser.addini(OPTIONS["paths"].plugin.ini, type="paths", default=[], help=PLUGIN_INI_HELP)
    # default None: an ini file that does not set it leaves the choice to the environment
    parser.addini(OPTIONS["confirm"].plugin.ini, type="bool", default=None,
                  help=OPTIONS["confirm"].help)


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


class _Settings:
    """The session's resolved options, kept on the config object."""

    def __init__(self, config):
        opt = config.option
        self.profile = opt.dpverify_profile or ("ci" if _in_ci() else "fast")
        self.seed_was_random = opt.dpverify_seed == "random"
        if self.seed_was_random:
            self.seed = random.SystemRandom().randrange(2**31)
        else:
            try:
                self.seed = int(opt.dpverify_seed)
            except ValueError:
                raise pytest.UsageError("--dpverify-seed takes an integer or 'random'") from None
        self.confidence = opt.dpverify_confidence
        self.jobs = opt.dpverify_jobs
        self.budget = opt.dpverify_budget
        # a bool when the ini file sets it; unset, getini gives the default None (pytest 7:
        # an empty list)
        configured = config.getini(OPTIONS["confirm"].plugin.ini)
        self.confirm = confirm_requested(opt.dpverify_confirm, "plugin",
                                         configured if isinstance(configured, bool) else None)
        given = {"seed": self.seed, "samples": opt.dpverify_samples,
                 "confidence": self.confidence, "jobs": self.jobs, "budget": self.budget,
                 "resolution": opt.dpverify_resolution}
        try:
            self.resolution = check_values(given, PLUGIN_OPTIONS, "plugin")["resolution"]
        except InvalidClaimError as exc:
            raise pytest.UsageError(str(exc)) from None
        self.samples = (opt.dpverify_samples if opt.dpverify_samples is not None
                        else PROFILES[self.profile]["samples"])
        self.option_paths = [Path(p).resolve() for p in opt.dpverify_paths]
        self.paths = self.option_paths + [Path(p).resolve()
                                          for p in config.getini("dpverify_paths")]
        self.n_tests = 1  # DP tests in the session; set after collection

    def item_seed(self, nodeid: str) -> int:
        """A per-test seed from the session seed and the node id (stable across runs)."""
        state = np.random.SeedSequence([self.seed, zlib.crc32(nodeid.encode())])
        return int(state.generate_state(1)[0] & 0x7FFFFFFF)

    def confidence_for(self, call_index: int) -> float:
        """Confidence of the call_index-th (1-based) audit of one test under the session budget."""
        if self.confidence is not None:
            return self.confidence
        return 1.0 - self.budget / self.n_tests / 2.0 ** call_index

    def options_line(self) -> str:
        return (f"profile {self.profile}, seed {self.seed}"
                f"{' (random)' if self.seed_was_random else ''}, session false-alarm budget "
                f"{self.budget:g}{', violations confirmed on fresh runs' if self.confirm else ''}")


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "dp(epsilon, delta=0, pairs=None), dp(zcdp=rho, pairs=None) or a curve, "
        "dp(gdp=mu | tradeoff=f | profile=delta_of, pairs=None): the privacy "
                   "claim dp_audit checks")
    settings = _Settings(config)
    config._dpverify = settings
    for path in settings.paths:
        if not path.exists():
            raise pytest.UsageError(f"--dpverify path does not exist: {path}")
    if settings.option_paths and not _args_given(config):
        # `pytest --dpverify mine.py` without a test path: pytest's default arguments (the
        # current directory or `testpaths`) would collect every test there too; audit only
        # the named paths
        config.args[:] = [str(path) for path in settings.option_paths]
        return
    # make sure pytest visits the mechanism paths even when they are not among its arguments
    current = [Path(str(a).split("::")[0]).resolve() for a in config.args]
    for path in settings.paths:
        if not any(path == c or c in path.parents for c in current):
            config.args.append(str(path))


def _args_given(config) -> bool:
    """Whether the command line named test paths (else pytest uses `testpaths` or the current
    directory). Older pytest without `args_source`: assume it did (collect as before)."""
    source = getattr(config, "args_source", None)
    return source is None or source == pytest.Config.ArgsSource.ARGS


def pytest_report_header(config):
    return f"dpverify: {config._dpverify.options_line()}"


def _is_dp_test(item) -> bool:
    return isinstance(item, MechanismItem) or "dp_audit" in getattr(item, "fixturenames", ())


def pytest_collection_modifyitems(session, config, items):
    config._dpverify.n_tests = max(1, sum(_is_dp_test(i) for i in items))


def _under(path: Path, roots) -> bool:
    path = path.resolve()
    return any(path == r or r in path.parents for r in roots)


def pytest_collect_file(file_path, parent):
    settings = parent.config._dpverify
    if file_path.suffix != ".py" or not settings.paths or not _under(file_path, settings.paths):
        return None
    named = file_path.resolve() in settings.paths
    if file_path.name in ("__init__.py", "conftest.py") and not named:
        return None  # a package's __init__ re-exports its modules' mechanisms
    return MechanismFile.from_parent(parent, path=file_path)


class MechanismFile(pytest.File):
    """A Python file whose @dpverify.mechanism functions become test items."""

    def collect(self):
        try:
            module = module_from_path(self.path)
        except DpVerifyError as exc:
            raise self.CollectError(str(exc)) from None
        for mech in mechanisms_in(module):
            yield MechanismItem.from_parent(self, name=mech.name, mechanism=mech)


class MechanismItem(pytest.Item):
    """One mechanism audited against its declared claim."""

    def __init__(self, *, mechanism: Mechanism, **kwargs):
        super().__init__(**kwargs)
        self.mechanism = mechanism

    def runtest(self):
        if self.mechanism.declaration_error is not None:  # e.g. epsilon=-1: name it, fail
            error = self.mechanism.declaration_error
            raise type(error)(str(error))
        mech = self.mechanism
        if mech.epsilon is None and mech.zcdp is None and mech.curve is None:
            raise DpVerifyError(f"{mech.name} declares no claim; give "
                                "@dpverify.mechanism(epsilon=..., pairs=...), zcdp=..., or a "
                                "curve: gdp=..., tradeoff=... or profile=...")
        from ..auditing import is_ed_claim
        settings = self.config._dpverify
        ed_claim = is_ed_claim(self.mechanism)
        confirm = settings.confirm and ed_claim
        resolution = settings.resolution if ed_claim else None
        run_audit(self, self.mechanism, call_index=1,
                  reproduce=lambda seed, samples, confidence: _cli_line(
                      self.path, self.mechanism.name, seed, samples, confidence, confirm,
                      resolution))

    def repr_failure(self, excinfo):
        if isinstance(excinfo.value, (PrivacyViolation, DpVerifyError)):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self):
        return self.path, None, f"dp audit of {self.mechanism.name}"


def _cli_line(path, name, seed, samples, confidence, confirm=False, resolution=None) -> str:
    cmd = ["dpverify", "audit", f"{os.path.relpath(path)}:{name}", "--seed", str(seed),
           "--confidence", f"{confidence:.10g}"]
    if samples is not None:
        cmd += ["--samples", str(samples)]
    if resolution is not None:
        cmd += ["--resolution", f"{resolution:g}"]
    return shlex.join(cmd + (["--confirm"] if confirm else []))


def _pytest_line(nodeid: str, settings, confidence: float) -> str:
    return shlex.join(["pytest", nodeid, "--dpverify-seed", str(settings.seed),
                       "--dpverify-profile", settings.profile,
                       "--dpverify-confidence", f"{confidence:.10g}"]
                      + (["--dpverify-confirm"] if settings.confirm
                         else ["--dpverify-no-confirm"])
                      + ([] if settings.resolution is None
                         else ["--dpverify-resolution", f"{settings.resolution:g}"]))


def claim_lines(result) -> list[str]:
    """What was claimed and what is certified, in the terms of the result's kind."""
    at = f"at confidence {result.confidence:.6g}"
    if result.kind == "zcdp":
        return [f"  claimed  {result.claim_text()}", f"  {result.rho_clause()} {at}",
                f"  {result.implied_clause()}"]
    if result.kind == "curve":
        return [f"  claimed  {result.claim_text()}", f"  {result.certified_clause()} {at}",
                f"  {result.reference_clause()}"]
    if result.kind == "rdp":
        return [f"  claimed  (α={result.alpha:g}, ρ={result.claimed_rho:g})-RDP",
                f"  certified D_α ≥ {result.rho_lower_bound:.4g} {at}"]
    return [f"  claimed  (ε={result.claimed_epsilon:g}, δ={result.claimed_delta:g})",
            f"  certified ε ≥ "
            f"{lower_bound_text(result.epsilon_lower_bound, result.claimed_epsilon)} {at}"]


def violation_report(result, reproduce: str) -> str:
    """The failure text: claim, bound, pair, event, counts and a reproduction command."""
    w = result.witness
    lines = [f"dpverify: privacy violation in {result.mechanism}", *claim_lines(result)]
    confirmation = getattr(result, "confirmation", None)
    if confirmation is not None:
        lines.append("  " + confirmation_text(confirmation.as_dict(), result.claimed_epsilon))
    if getattr(result, "marginal", False):
        lines.append("  " + marginal_text(result.evidence_level))
    if w is not None:
        lines += witness_lines(w, FAILURE_LAYOUT)
    lines += [f"  runs     {result.samples:,} in {result.seconds:.2f} s",
              f"  reproduce: {reproduce}"]
    return "\n".join(lines)


def run_audit(node, mechanism, call_index, reproduce, **kwargs):
    """Audit with the session's settings; raise PrivacyViolation with the evidence."""
    import dpverify

    __tracebackhide__ = True
    settings = node.config._dpverify
    seed = kwargs.pop("seed", settings.item_seed(node.nodeid) + call_index - 1)
    samples = kwargs.pop("samples", settings.samples)
    confidence = kwargs.pop("confidence", settings.confidence_for(call_index))
    n_jobs = kwargs.pop("n_jobs", settings.jobs)
    from ..auditing import is_ed_claim
    curve = next((kwargs[k] for k in CURVE_CLAIMS if kwargs.get(k) is not None), None)
    ed_claim = is_ed_claim(mechanism, kwargs.get("epsilon"), kwargs.get("zcdp"), curve)
    if settings.confirm and "confirm" not in kwargs and ed_claim:
        kwargs["confirm"] = True
    # a session's resolution target ends the passes of ordinary (ε, δ) audits
    if (settings.resolution is not None and "resolution" not in kwargs and ed_claim
            and kwargs.get("stop_early", True)):
        kwargs["resolution"] = settings.resolution
    result = dpverify.audit(mechanism, seed=seed, samples=samples, confidence=confidence,
                            n_jobs=n_jobs, **kwargs)
    if result.verdict == "violation":
        raise PrivacyViolation(violation_report(result, reproduce(seed, samples, confidence)),
                               result)
    if not result.conclusive:
        warnings.warn(InconclusiveAuditWarning(
            result.summary().splitlines()[0] + "\n  reproduce: "
            + reproduce(seed, samples, confidence)), stacklevel=2)
    return result


CURVE_CLAIMS = ("gdp", "tradeoff", "profile")
CLAIMS = ("epsilon", "zcdp") + CURVE_CLAIMS


def _claim_kwargs(call: dict, marker: dict) -> dict:
    """{"epsilon": ...}, {"zcdp": ...} or a curve ({"gdp": ...}, ...): the call's claim, else
    the marker's, else none (the decorator's). One claim per place: two are a usage error."""
    for where, given in (("dp_audit()", call), ("@pytest.mark.dp", marker)):
        named = {k: given.get(k) for k in CLAIMS if given.get(k) is not None}
        if len(named) > 1:
            raise DpVerifyError(f"{where} got {' and '.join(f'{k}=' for k in named)}: give "
                                "one claim")
        if named:
            return named
    return {}


@pytest.fixture
def dp_audit(request):
    """Audit a mechanism; claim from the arguments, else ``@pytest.mark.dp``, else the decorator.
    The claim is ``epsilon=`` (with ``delta=``), ``zcdp=RHO`` (a ρ-zCDP claim; ``delta=`` is
    then the implied (ε, δ) claim's δ, default 1e-6), or a curve: ``gdp=MU``, ``tradeoff=f``
    or ``profile=delta_of`` (dpverify.fdp).

    Returns the AuditResult (a `dpverify.zcdp.ZcdpAuditResult` for zCDP claims, a
    `dpverify.fdp.CurveAuditResult` for curves); raises
    dpverify.PrivacyViolation when a violation is certified.
    """
    marker = request.node.get_closest_marker("dp")
    claim = dict(marker.kwargs) if marker else {}
    settings = request.config._dpverify
    calls = [0]

    def _audit(mechanism, pairs=None, epsilon=None, delta=None, zcdp=None, gdp=None,
               tradeoff=None, profile=None, **options):
        __tracebackhide__ = True
        calls[0] += 1
        kwargs = {"pairs": pairs if pairs is not None else claim.get("pairs")}
        if delta is not None or claim.get("delta") is not None:
            kwargs["delta"] = delta if delta is not None else claim.get("delta")
        kwargs.update(_claim_kwargs(dict(epsilon=epsilon, zcdp=zcdp, gdp=gdp,
                                         tradeoff=tradeoff, profile=profile), claim))
        kwargs.update(options)
        return run_audit(request.node, mechanism, calls[0],
                         lambda seed, samples, confidence: _pytest_line(
                             request.node.nodeid, settings, confidence),
                         **kwargs)

    return _audit
