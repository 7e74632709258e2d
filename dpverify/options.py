"""Every option of an audit, defined once: what `dpverify.audit` calls it, its default, the rule
its value must meet, its help text, and how the command line and the pytest plugin spell it.

`OPTIONS` is the one table. The parsers of `dpverify audit` and `dpverify gate`
(`interfaces/cli.py`) and the pytest plugin's options (`interfaces/pytest_plugin.py`) are built
from it, and all of them check values with the functions below, so a bad value gets the same
message wherever it is given; only the option's name is spelled the way the user spelled it
(`--confidence`, `--dpverify-confidence`, `confidence=`). A claim (ε, δ, ρ) is checked by
`mechanism.validate_claim` and `mechanism.validate_zcdp`, the same checks a declared claim gets.
"""
from __future__ import annotations

import argparse
import math
import os
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from .errors import InvalidClaimError
from .mechanism import validate_claim, validate_zcdp, validate_zcdp_delta

# Certifying runs per input at the last stage when neither the caller nor the mechanism's
# declaration gives `samples`.
DEFAULT_SAMPLES_BATCHED = 1 << 22
DEFAULT_SAMPLES_SCALAR = 1 << 17
# The pytest plugin's sample budgets: certifying runs per input at the last stage (None: the
# default above).
PROFILES = {"fast": {"samples": 1 << 20}, "ci": {"samples": None}}
# Set to 1 (true, yes, on) or 0 (false, no, off): `dpverify audit`, `dpverify gate` and the
# pytest plugin then confirm every (ε, δ) violation on fresh runs, or do not, unless their own
# flag says otherwise (docs/ci.md).
CONFIRM_ENV = "DPVERIFY_CONFIRM"
# Whether an interface confirms when neither its flag, CONFIRM_ENV nor (the plugin) its ini
# option says: the CI interfaces do, so that a mechanism exactly at its claim does not fail a
# build in 1 − confidence of runs (docs/method.md, "Marginal violations and confirmation").
CONFIRM_DEFAULTS = {"audit": False, "gate": True, "plugin": True}
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


def confirm_requested(flag, interface: str = "audit", configured=None) -> bool:
    """Whether `interface` ("audit", "gate" or "plugin") confirms violations: its own flag
    (True or False; None when not given), else CONFIRM_ENV if set, else the project's setting
    `configured` (the plugin's ini option; None when not set), else CONFIRM_DEFAULTS."""
    if flag is not None:
        return bool(flag)
    setting = os.environ.get(CONFIRM_ENV, "").strip().lower()
    if setting in _TRUE + _FALSE:
        return setting in _TRUE
    if configured is not None:
        return bool(configured)
    return CONFIRM_DEFAULTS[interface]


def default_samples(mech) -> int:
    """The certifying runs per input at the last stage when `audit` is given no `samples`: what
    the mechanism declared (`@dpverify.mechanism(samples=...)`, set by the library adapters),
    else DEFAULT_SAMPLES_BATCHED for the batched form and DEFAULT_SAMPLES_SCALAR for the
    scalar one."""
    if mech.samples is not None:
        return mech.samples
    return DEFAULT_SAMPLES_BATCHED if mech.batched else DEFAULT_SAMPLES_SCALAR


def default_divergence_samples(mech) -> int:
    """Runs per input for a zCDP or RDP audit's fresh sample when none are given: what the
    mechanism declared, else a quarter of the (ε, δ) default for the batched form (it counts one
    event, not K per stage) and the scalar default for the scalar one."""
    return mech.samples or (DEFAULT_SAMPLES_BATCHED // 4 if mech.batched
                            else DEFAULT_SAMPLES_SCALAR)


# ------------------------------------------------------------------------------------------------
# The checks. Each takes the value and the option's name as the user spelled it, returns the
# value to use and raises InvalidClaimError saying what is allowed.
# ------------------------------------------------------------------------------------------------

def check_epsilon(value, name: str = "epsilon") -> float:
    """A claimed ε, checked as `mechanism.validate_claim` checks a declared one; the error
    names the option as the user wrote it."""
    return validate_claim(value, 0.0, names=(name, "delta"))[0]


def check_delta(value, name: str = "delta") -> float:
    """A claimed δ, checked as `mechanism.validate_claim` checks a declared one; the error
    names the option as the user wrote it."""
    return validate_claim(1.0, value, names=("epsilon", name))[1]


def count(text: str) -> int:
    """A count on the command line: an integer, written as such or in scientific notation
    (1e6, 2.5e5) when that is a whole number; argparse reports a ValueError as invalid."""
    try:
        return int(text)
    except ValueError:
        value = float(text)
        if not value.is_integer():
            raise ValueError(f"{text} is not a whole number") from None
        return int(value)


def check_zcdp(value, name: str = "zcdp") -> float:
    """A claimed ρ of ρ-zCDP (`mechanism.validate_zcdp`)."""
    return validate_zcdp(value)


def check_gdp(value, name: str = "gdp") -> float:
    """A claimed μ of μ-GDP (`curve_claim.validate_gdp`, imported only when one is given: it
    brings scipy.stats, which the plugin's options must not load)."""
    from .curve_claim import validate_gdp
    return validate_gdp(value)


def check_confidence(value, name: str = "confidence") -> float:
    """The confidence of certified bounds: a number in (0, 1)."""
    try:
        confidence = float(value)
    except (TypeError, ValueError):
        raise InvalidClaimError(f"{name} must be a number in (0, 1), got {value!r}")
    if not (0.0 < confidence < 1.0):
        raise InvalidClaimError(f"{name} must be in (0, 1), got {value!r} (e.g. 0.95)")
    return confidence


def check_samples(value, name: str = "samples"):
    """Certifying runs per input at the last stage: None (the default) or an integer ≥ 100."""
    if value is not None and (not isinstance(value, (int, np.integer)) or value < 100):
        raise InvalidClaimError(f"{name} must be an integer ≥ 100 (runs per input), got "
                                f"{value!r}")
    return value


def check_seed(value, name: str = "seed"):
    """The root seed: a non-negative integer."""
    if not isinstance(value, (int, np.integer)) or value < 0:
        raise InvalidClaimError(f"{name} must be a non-negative integer, got {value!r}")
    return value


def check_jobs(value, name: str = "n_jobs"):
    """Parallel workers as joblib counts them: N > 0, or -1 for all cores, -2 all but one, ..."""
    if value == 0:
        raise InvalidClaimError(f"{name} 0 runs nothing: give a number of workers N > 0, or -1 "
                                "for all cores (the default), -2 for all but one, ...")
    return value


def check_certify_per_stage(value, name: str = "certify_per_stage") -> int:
    """Events certified per stage: a positive integer."""
    if not isinstance(value, int) or value < 1:
        raise InvalidClaimError(f"{name} must be a positive integer")
    return value


def check_time_limit(value, name: str = "time_limit") -> float:
    """Seconds an audit may run before it is stopped with an error: a finite number > 0."""
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        seconds = math.nan
    if not (seconds > 0 and math.isfinite(seconds)):
        raise InvalidClaimError(f"{name} must be a positive number of seconds, got {value!r}")
    return seconds


def check_seconds(value, name: str = "seconds") -> float:
    """An audit's time budget: a finite number of seconds > 0."""
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise InvalidClaimError(f"{name} must be a positive number, got {value!r}")
    if not (seconds > 0 and math.isfinite(seconds)):
        raise InvalidClaimError(f"{name} must be a positive number, got {value!r} (e.g. 60)")
    return seconds


def check_resolution(value, name: str = "resolution") -> float:
    """A pass's resolution target, relative to the claim (docs/method.md, "Passes that stop at
    the resolution asked"): a finite number > 1 (1.1: the pass ends once a true ε of 1.1 × the
    claim would have been caught about half the time)."""
    try:
        target = float(value)
    except (TypeError, ValueError):
        target = math.nan
    if not (target > 1 and math.isfinite(target)):
        raise InvalidClaimError(f"{name} is a target relative to the claim and must be a number "
                                f"> 1, got {value!r} (e.g. 1.1: catch a true ε of 1.1 × the "
                                "claim)")
    return target


def check_tolerance(value, name: str = "tolerance") -> float:
    """The gate's relative drift allowance: a finite number ≥ 0."""
    if not (math.isfinite(value) and value >= 0):
        raise InvalidClaimError(f"{name} must be a finite number ≥ 0 (relative, e.g. 0.25), got "
                                f"{value!r}")
    return value


def check_session_budget(value, name: str = "budget") -> float:
    """The pytest session's false-alarm budget: a number in (0, 1)."""
    if not 0 < value < 1:
        raise InvalidClaimError(f"{name} must be in (0, 1)")
    return value


CLAIM_NAMES = {"zcdp": "a ρ-zCDP claim", "rdp": "an RDP claim", "curve": "a curve claim"}


def check_one_claim(values: dict, spell: Callable[[str], str]) -> None:
    """At most one claim is given: a curve (gdp=, tradeoff=, profile=; `curve` once read), ρ
    or ε. `spell(name)` is the option as the user wrote it."""
    curve = next((name for name in ("gdp", "tradeoff", "profile", "curve")
                  if values.get(name) is not None), None)
    given = [name for name in ("epsilon", "zcdp") if values.get(name) is not None]
    if curve is not None and given:
        named = spell(curve) if curve != "curve" else "gdp=, tradeoff= or profile="
        raise InvalidClaimError(f"{named} is a claim of its own (a whole curve): give one claim, "
                                f"without {spell(given[0])}")
    if len(given) == 2:
        raise InvalidClaimError(f"{spell('zcdp')} and {spell('epsilon')} are two different "
                                "claims: give one")


def check_fits_claim(kind: str, values: dict, spell: Callable[[str], str],
                     name: str | None = None) -> None:
    """Report curves, a measurement run, a time budget and confirmation apply to (ε, δ) claims
    only (`dpverify.kinds`): given beside another `kind` of claim (that mechanism `name`
    declares, if given), they are refused, each spelled as the user wrote it (`values` holds
    measure, or stop_early=False)."""
    if kind == "epsilon_delta":
        return
    measure = values.get("measure") or values.get("stop_early") is False
    given = [option for option, on in (("curves", values.get("curves")), ("measure", measure),
                                       ("seconds", values.get("seconds") is not None),
                                       ("resolution", values.get("resolution") is not None),
                                       ("confirm", values.get("confirm")),
                                       ("proof_only", values.get("proof_only"))) if on]
    if given:
        claim, verb = CLAIM_NAMES[kind], "applies" if len(given) == 1 else "apply"
        raise InvalidClaimError(f"{' and '.join(spell(g) for g in given)} {verb} to (ε, δ) "
                                "claims, " + (f"and {name!r} is audited for {claim}" if name
                                              else f"not to {claim}"))


def check_stopping(values: dict, spell: Callable[[str], str]) -> None:
    """A measurement run (`measure`, or stop_early=False) and `proof_only` ask opposite things,
    to go on to the schedule's end and to stop at the first proof: given together, refused."""
    measure = values.get("measure") or values.get("stop_early") is False
    if measure and values.get("proof_only"):
        measured = spell("measure") if values.get("measure") else "stop_early=False"
        raise InvalidClaimError(f"{measured} runs the whole schedule and {spell('proof_only')} "
                                "stops at the first proof: give one of them")
    if measure and values.get("resolution") is not None:
        measured = spell("measure") if values.get("measure") else "stop_early=False"
        raise InvalidClaimError(f"{measured} runs the whole schedule and {spell('resolution')} "
                                "ends a pass once it reaches its target: give one of them")


def check_claim_combination(values: dict, spell: Callable[[str], str]) -> None:
    """One claim at most (`check_one_claim`), and the options of an (ε, δ) claim not beside a
    ρ-zCDP or μ-GDP one (`check_fits_claim`); with zCDP, δ is the implied (ε, δ) claim's
    (`mechanism.validate_zcdp_delta`). `spell(name)` is the option as the user wrote it."""
    check_one_claim(values, spell)
    check_stopping(values, spell)
    for option, kind in (("gdp", "curve"), ("zcdp", "zcdp")):
        if values.get(option) is not None:
            check_fits_claim(kind, values, spell)
    if values.get("zcdp") is None:
        return
    validate_zcdp(values["zcdp"])
    validate_zcdp_delta(values.get("delta"))


# ------------------------------------------------------------------------------------------------
# The table
# ------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Cli:
    """How `dpverify audit` / `dpverify gate` spell an option: the flag (or the positional's
    name), argparse's `add_argument` settings other than help and default, and the gate's own
    help where it says something else than the audit's."""

    flag: str
    settings: dict = field(default_factory=dict)
    gate_help: str | None = None


AUDIT_DEFAULT = "the option's default"   # Plugin.default: the same default as the audit's


@dataclass(frozen=True)
class Plugin:
    """How the pytest plugin spells an option: its `--dpverify-*` flag, its help when it says
    something else than the option's, `addoption` settings, its default (unless the same as
    the option's) and its ini name if it has one."""

    flag: str
    help: str | None = None
    settings: dict = field(default_factory=dict)
    default: Any = AUDIT_DEFAULT
    ini: str | None = None


@dataclass(frozen=True)
class Option:
    """One option. `name` is the key everywhere (the CLI's argparse `dest`); `keyword` the
    `dpverify.audit` argument it sets (None: an option of an interface alone); `default` the
    value when it is not given; `check(value, spelled_name)` its rule (None: any value)."""

    name: str
    help: str
    keyword: str | None = None
    default: Any = None
    check: Callable | None = None
    cli: Cli | None = None
    plugin: Plugin | None = None

    @property
    def plugin_default(self):
        """The plugin's default for this option."""
        return self.default if self.plugin.default is AUDIT_DEFAULT else self.plugin.default

    @property
    def plugin_help(self) -> str:
        return self.plugin.help or self.help

    def spelled(self, interface: str) -> str:
        """The name a user of `interface` ("cli", "plugin" or "audit") writes."""
        if interface == "cli":
            return self.cli.flag
        if interface == "plugin":
            return self.plugin.flag
        return self.keyword or self.name


_JOBS_HELP = ("parallel workers, as in joblib: N > 0 workers, or -1 all cores (default), -2 all "
              "but one, ...; 0 is an error")
_TARGETS_HELP = ("path/to/file.py, path/to/file.py:name, package.module:name, or a directory "
                 "(its .py files, not recursive)")

_AUDIT_OPTIONS = [
    Option("targets", _TARGETS_HELP, keyword="mechanism",
           cli=Cli("targets", dict(nargs="+", metavar="TARGET"))),
    Option("epsilon", "override the claimed ε", keyword="epsilon", check=check_epsilon,
           cli=Cli("--epsilon", dict(type=float))),
    Option("delta", "override the claimed δ (with --zcdp: the δ of the implied (ε, δ) claim, "
                    "default 1e-6; with --gdp: the δ at which the certified ε is shown, "
                    "default 1e-5)", keyword="delta", check=check_delta,
           cli=Cli("--delta", dict(type=float), gate_help="override the claimed δ")),
    Option("zcdp", "audit a ρ-zCDP claim instead (D_α ≤ ρα for every order α > 1), and the "
                   "(ρ + 2√(ρ ln 1/δ), δ)-DP claim it implies; not with --epsilon",
           keyword="zcdp", check=check_zcdp, cli=Cli("--zcdp", dict(type=float, metavar="RHO"))),
    Option("gdp", "audit a μ-Gaussian-DP claim instead (every test of D′ against D has "
                  "β ≥ Φ(Φ⁻¹(1 − α) − μ)), tested at every point of the curve at once; not "
                  "with --epsilon or --zcdp",
           keyword="gdp", check=check_gdp, cli=Cli("--gdp", dict(type=float, metavar="MU"))),
    Option("confidence", "confidence of certified bounds; false-alarm rate ≤ 1 − this "
                         "(default %(default)s)", keyword="confidence", default=0.95,
           check=check_confidence,
           cli=Cli("--confidence", dict(type=float),
                   gate_help="confidence of certified bounds (default %(default)s)"),
           plugin=Plugin("--dpverify-confidence", "confidence of every audit (overrides the "
                                                  "session budget split)", dict(type=float),
                         default=None)),
    Option("samples", "mean (Poisson) certifying samples per input at the last stage",
           keyword="samples", check=check_samples,
           cli=Cli("--samples", dict(type=count, metavar="N"), gate_help=(
               "mean (Poisson) certifying samples per input at the last stage; use the "
               "baseline's")),
           plugin=Plugin("--dpverify-samples", "certifying samples per input at the last stage "
                                               "(overrides the profile)", dict(type=count))),
    Option("seed", "root seed (default %(default)s)", keyword="seed", default=0, check=check_seed,
           cli=Cli("--seed", dict(type=count)),
           plugin=Plugin("--dpverify-seed", "root seed of all audits (an integer, or 'random': "
                                            "drawn and printed)", default="0")),
    Option("jobs", _JOBS_HELP, keyword="n_jobs", default=-1, check=check_jobs,
           cli=Cli("--jobs", dict(type=int)),
           plugin=Plugin("--dpverify-jobs", "parallel workers per audit", dict(type=int))),
    Option("backend", "where chunks run (default: the mechanism's own, else threading for "
                      "batched, loky for scalar mechanisms); dask needs --scheduler",
           keyword="backend",
           cli=Cli("--backend", dict(choices=["threading", "loky", "dask"]))),
    Option("scheduler", "dask scheduler address (tcp://host:8786); implies --backend dask",
           cli=Cli("--scheduler", dict(metavar="ADDRESS"))),
    Option("time_limit", "stop an audit that runs longer (a hanging mechanism) with an error",
           keyword="time_limit", check=check_time_limit,
           cli=Cli("--time-limit", dict(type=float, metavar="SECONDS"))),
    Option("floating_point", "the claim covers the exact float outputs: also attack their bit "
                             "patterns (Mironov 2012); mechanisms may declare this themselves",
           keyword="floating_point", default=False,
           cli=Cli("--floating-point", dict(action="store_true"))),
    Option("measure", "measurement run: ask how large ε is, not only whether the claim fails; "
                      "every stage runs and only the last certifies, with all of the error "
                      "budget (a tighter bound; no early stop on a gross violation)",
           keyword="stop_early", default=False,  # --measure is stop_early=False
           cli=Cli("--measure", dict(action="store_true"))),
    Option("proof_only", "stop at the first proof of a violation: report the bound that proof "
                         "implies (just past the claim) instead of measuring the violation "
                         "on fresh runs (the default)",
           keyword="proof_only", default=False,
           cli=Cli("--proof-only", dict(action="store_true"))),
    Option("seconds", "a time budget per mechanism. An audit stops at the first chunk past "
                      "it with what it has proven so far (a violation found stands; without "
                      "one, the result says the budget was spent). With --measure the run "
                      "takes the size it buys instead, chosen once from a pilot of the "
                      "mechanism's cost, up to --samples (default 16x the default). Either "
                      "way the result then depends on the machine's speed",
           keyword="seconds", check=check_seconds,
           cli=Cli("--seconds", dict(type=float, metavar="SECONDS"))),
    Option("resolution", "end a pass once its resolution reaches this many times the claim "
                         "(e.g. 1.1), from the runs before its last stage; --samples stays "
                         "the most it may take",
           keyword="resolution", check=check_resolution,
           cli=Cli("--resolution", dict(type=float, metavar="FACTOR")),
           plugin=Plugin("--dpverify-resolution", "end every (ε, δ) audit's pass once its "
                                                  "resolution reaches this factor × the claim "
                                                  "(e.g. 1.1); the profile's samples stay the "
                                                  "most it may draw", dict(type=float))),
    Option("confirm", "test a violation again on fresh runs of its pair and report it only "
                      "if they confirm it: a correct mechanism is then flagged in at most "
                      "(1 − confidence)² of audits (default off; "
                      f"{CONFIRM_ENV}=1 or 0 sets it when the flag is not given)",
           keyword="confirm", default=False,
           cli=Cli("--confirm", dict(action=argparse.BooleanOptionalAction, default=None),
                   gate_help="test a violation again on fresh runs of its pair and fail only "
                             "if they confirm it: a correct mechanism then fails the gate in "
                             "at most (1 − confidence)² of runs (default on; --no-confirm "
                             f"fails on unconfirmed violations; {CONFIRM_ENV}=0 or 1 sets it "
                             "when the flag is not given)"),
           plugin=Plugin("--dpverify-confirm",
                         help="test a violation again on fresh runs and fail only if they "
                              "confirm it (default on; --dpverify-no-confirm, the ini option "
                              f"dpverify_confirm = false or {CONFIRM_ENV}=0 turn it off)",
                         settings=dict(action=argparse.BooleanOptionalAction), default=None,
                         ini="dpverify_confirm")),
    Option("json", "write results as JSON (its directory must exist)",
           cli=Cli("--json", dict(metavar="PATH"))),
    Option("report", "write index.html (self-contained), report.md, result.json and plots "
                     "(trade-off points, certified δ(ε), p-value against ε) to DIR (created "
                     "if absent; its parent must exist)",
           keyword="curves",  # a report draws the curves audit(curves=True) counts
           cli=Cli("--report", dict(metavar="DIR"))),
    Option("certify_per_stage", "events certified per stage", keyword="certify_per_stage",
           default=2, check=check_certify_per_stage),
]

_INTERFACE_OPTIONS = [
    Option("debug", "on an error, also print the Python traceback (for bug reports)",
           default=False, cli=Cli("--debug", dict(action="store_true"))),
    Option("baseline", "baseline JSON of estimated ε per mechanism name",
           cli=Cli("--baseline", dict(required=True, metavar="FILE"))),
    Option("update_baseline", "write the passing mechanisms' results into the baseline (merge)",
           default=False, cli=Cli("--update-baseline", dict(action="store_true"))),
    Option("tolerance", "relative drift allowed on the estimated ε (default %(default)s)",
           default=0.25, check=check_tolerance,
           cli=Cli("--tolerance", dict(type=float, metavar="REL"))),
    Option("changed_since", "audit only mechanisms whose source file changed since this git "
                            "ref (or is untracked)",
           cli=Cli("--changed-since", dict(metavar="REF"))),
    Option("junit", "write JUnit XML, one testcase per mechanism",
           cli=Cli("--junit", dict(metavar="PATH"))),
    Option("summary", "append a Markdown summary (e.g. $GITHUB_STEP_SUMMARY)",
           cli=Cli("--summary", dict(metavar="PATH"))),
    Option("paths", "collect every @dpverify.mechanism in PATH (file or folder) as a test; "
                    "repeatable",
           plugin=Plugin("--dpverify", settings=dict(action="append", metavar="PATH",
                                                     dest="dpverify_paths"),
                         default=(), ini="dpverify_paths")),
    Option("profile", "sample budget: fast (2^20 certifying samples per input) or ci (2^22); "
                      "default ci when the CI environment variable is set, else fast",
           plugin=Plugin("--dpverify-profile", settings=dict(choices=sorted(PROFILES)),
                         default=None)),
    Option("budget", "chance that a correct mechanism fails anywhere in the session (default "
                     "%(default)s)", default=0.05, check=check_session_budget,
           plugin=Plugin("--dpverify-budget", settings=dict(type=float))),
]

OPTIONS: dict[str, Option] = {o.name: o for o in _AUDIT_OPTIONS + _INTERFACE_OPTIONS}

# Which options each interface offers, in the order its help lists them.
COMMON_FLAGS = ("debug",)   # every `dpverify` subcommand
AUDIT_FLAGS = ("targets", "epsilon", "delta", "zcdp", "gdp", "confidence", "samples", "seed", "jobs",
               "backend", "scheduler", "time_limit", "floating_point", "measure",
               "proof_only", "seconds", "resolution", "confirm", "json", "report")
GATE_FLAGS = ("targets", "baseline", "update_baseline", "tolerance", "changed_since", "junit",
              "summary", "epsilon", "delta", "confidence", "samples", "seed", "jobs", "confirm")
PLUGIN_OPTIONS = ("paths", "profile", "seed", "samples", "confidence", "jobs", "budget",
                  "confirm", "resolution")
# The ini value of the plugin: files or folders whose mechanisms become tests.
PLUGIN_INI_HELP = "files or folders whose @dpverify.mechanism functions become tests"


def check_values(values: dict, names, interface: str) -> dict:
    """Check the given `values` ({option name: value}, None = not given) of the options `names`
    in the table's order, the zCDP combination first; raise InvalidClaimError naming the option
    as `interface` ("cli", "plugin" or "audit") spells it. Return the checked values."""
    check_claim_combination(values, lambda name: OPTIONS[name].spelled(interface))
    checked = dict(values)
    for option in OPTIONS.values():
        value = values.get(option.name)
        if option.name in names and option.check is not None and value is not None:
            checked[option.name] = option.check(value, option.spelled(interface))
    return checked


def check_parsed(args, names) -> dict:
    """`check_values` of the command-line options `names`, read from parsed `args` (the
    argparse namespace of `dpverify audit` or `dpverify gate`)."""
    return check_values({name: getattr(args, name) for name in names}, names, "cli")


__all__ = ["OPTIONS", "Option", "Cli", "Plugin", "AUDIT_FLAGS", "GATE_FLAGS", "COMMON_FLAGS",
           "CONFIRM_ENV", "CONFIRM_DEFAULTS", "confirm_requested",
           "PLUGIN_OPTIONS", "PLUGIN_INI_HELP", "PROFILES", "DEFAULT_SAMPLES_BATCHED", "check_parsed",
           "DEFAULT_SAMPLES_SCALAR", "default_samples", "check_values", "check_epsilon",
           "check_delta", "check_zcdp", "check_gdp", "check_confidence", "check_samples", "check_seed",
           "check_jobs", "check_certify_per_stage", "check_time_limit", "check_seconds", "check_resolution",
           "check_tolerance", "check_session_budget",
           "check_claim_combination", "check_stopping"]
