"""`dpverify audit TARGET...`: a thin shell over `audit()`; `dpverify gate` lives in gate.py.

Exit codes, the same for `dpverify audit` and `dpverify gate`:
  0    no finding: every mechanism was audited and none violates its claim (gate: and none
       drifted from the baseline or is missing from it).
  1    a finding, and only a finding: a violation (gate: also a drift or a mechanism missing
       from the baseline).
  2    not a finding: dpverify could not do what was asked. A bad option value (--jobs 0, a
       negative --samples, --confidence outside (0, 1), ...), an output path that cannot be
       written (--json/--report/--junit/--summary/--update-baseline; checked before any audit
       runs, and a missing parent directory is an error, never created), an unreadable or
       invalid baseline, a target that cannot be loaded, a mechanism that cannot be run or has
       an invalid declaration, or an internal error. stderr says what went wrong and what to
       do in a line starting `dpverify: error:` (or `ERROR      <mechanism>:` for one
       mechanism), without a Python traceback unless --debug is given. 2 wins over 1: the
       other mechanisms are still audited and reported.
  130  interrupted by Ctrl-C (what was certified until then is still printed and written to
       --json).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
import traceback
from pathlib import Path

import numpy as np

from . import __version__
from .errors import DpVerifyError, InvalidClaimError, TargetError
from .mechanism import validate_claim, validate_zcdp
from .loading import resolve_target

EXIT_PASS, EXIT_VIOLATION, EXIT_ERROR, EXIT_INTERRUPTED = 0, 1, 2, 130


EXIT_CODES = """exit codes (audit and gate alike):
  0    no violation found (gate: and no drift, none missing from the baseline)
  1    a finding: a violation (gate: also a drift or a mechanism missing from the baseline)
  2    not a finding: bad option value, unwritable output path (checked before any audit),
       unreadable baseline, target that cannot be loaded, mechanism that cannot be run or
       has an invalid declaration, internal error (--debug shows the traceback); 2 wins over 1
  130  interrupted (Ctrl-C)"""


class _Formatter(argparse.HelpFormatter):
    """Wrap one-line descriptions as usual; keep texts laid out in lines (EXIT_CODES) as is."""

    def _fill_text(self, text, width, indent):
        if "\n" in text:
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse exits with 2 too; keep its usage line, add a hint
        self.print_usage(sys.stderr)
        self.exit(EXIT_ERROR, f"dpverify: error: {message}\n")


JOBS_HELP = ("parallel workers, as in joblib: N > 0 workers, or -1 all cores (default), -2 all "
             "but one, ...; 0 is an error")


def build_parser() -> argparse.ArgumentParser:
    formatter = _Formatter
    parser = _Parser(prog="dpverify", description="Empirical differential-privacy verifier.",
                     epilog=EXIT_CODES, formatter_class=formatter)
    parser.add_argument("--version", action="version", version=f"dpverify {__version__}")
    common = argparse.ArgumentParser(add_help=False)  # options of every subcommand
    common.add_argument("--debug", action="store_true",
                        help="on an error, also print the Python traceback (for bug reports)")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    a = sub.add_parser("audit", help="audit mechanisms against their (ε, δ) claim",
                       parents=[common], epilog=EXIT_CODES, formatter_class=formatter,
                       description="Audit every @dpverify.mechanism in the targets. A pass means "
                                   "no violation found at this budget, not a proof of privacy.")
    a.add_argument("targets", nargs="+", metavar="TARGET",
                   help="path/to/file.py, path/to/file.py:name, or package.module:name")
    a.add_argument("--epsilon", type=float, help="override the claimed ε")
    a.add_argument("--delta", type=float, help="override the claimed δ (with --zcdp: the δ of the "
                                               "implied (ε, δ) claim, default 1e-6)")
    a.add_argument("--zcdp", type=float, metavar="RHO",
                   help="audit a ρ-zCDP claim instead (D_α ≤ ρα for every order α > 1), and the "
                        "(ρ + 2√(ρ ln 1/δ), δ)-DP claim it implies; not with --epsilon")
    a.add_argument("--confidence", type=float, default=0.95,
                   help="confidence of certified bounds; false-alarm rate ≤ 1 − this (default 0.95)")
    a.add_argument("--samples", type=int, help="mean (Poisson) certifying samples per input at the last stage")
    a.add_argument("--seed", type=int, default=0, help="root seed (default 0)")
    a.add_argument("--jobs", type=int, default=-1, help=JOBS_HELP)
    a.add_argument("--backend", choices=["threading", "loky", "dask"],
                   help="where chunks run (default: threading for batched, loky for scalar "
                        "mechanisms); dask needs --scheduler")
    a.add_argument("--scheduler", metavar="ADDRESS",
                   help="dask scheduler address (tcp://host:8786); implies --backend dask")
    a.add_argument("--time-limit", type=float, metavar="SECONDS",
                   help="stop an audit that runs longer (a hanging mechanism) with an error")
    a.add_argument("--floating-point", action="store_true",
                   help="the claim covers the exact float outputs: also attack their bit "
                        "patterns (Mironov 2012); mechanisms may declare this themselves")
    a.add_argument("--measure", action="store_true",
                   help="measurement run: ask how large ε is, not only whether the claim fails; "
                        "every stage runs and only the last certifies, with all of the error "
                        "budget (a tighter bound; no early stop on a gross violation)")
    a.add_argument("--seconds", type=float, metavar="SECONDS",
                   help="with --measure: a time budget per mechanism; the last stage grows to "
                        "what the time left buys, up to --samples (default 2^26 per input). "
                        "The sizes then depend on the machine's speed")
    a.add_argument("--json", metavar="PATH",
                   help="write results as JSON (its directory must exist)")
    a.add_argument("--report", metavar="DIR",
                   help="write index.html (self-contained), report.md, result.json and plots "
                        "(trade-off points, certified δ(ε), p-value against ε) to DIR (created "
                        "if absent; its parent must exist)")

    g = sub.add_parser("gate", help="audit, then fail on a violation or on drift from a baseline",
                       parents=[common], epilog=EXIT_CODES, formatter_class=formatter,
                       description="CI gate: audit the mechanisms, then exit 1 on any violation, "
                                   "on a mechanism missing from the baseline, or when a "
                                   "mechanism's estimated ε drifted from the baseline: "
                                   "|est − base| > max(tolerance·|base|, 2·(u + u_base)), u the "
                                   "gap between estimate and certified bound. Exit 2 on usage "
                                   "errors, an unreadable baseline or a mechanism that cannot run.")
    g.add_argument("targets", nargs="+", metavar="TARGET",
                   help="path/to/file.py, path/to/file.py:name, package.module:name, or a "
                        "directory (its .py files, not recursive)")
    g.add_argument("--baseline", required=True, metavar="FILE",
                   help="baseline JSON of estimated ε per mechanism name")
    g.add_argument("--update-baseline", action="store_true",
                   help="write the passing mechanisms' results into the baseline (merge)")
    g.add_argument("--tolerance", type=float, default=0.25, metavar="REL",
                   help="relative drift allowed on the estimated ε (default 0.25)")
    g.add_argument("--changed-since", metavar="REF",
                   help="audit only mechanisms whose source file changed since this git ref "
                        "(or is untracked)")
    g.add_argument("--junit", metavar="PATH", help="write JUnit XML, one testcase per mechanism")
    g.add_argument("--summary", metavar="PATH",
                   help="append a Markdown summary (e.g. $GITHUB_STEP_SUMMARY)")
    g.add_argument("--epsilon", type=float, help="override the claimed ε")
    g.add_argument("--delta", type=float, help="override the claimed δ")
    g.add_argument("--confidence", type=float, default=0.95,
                   help="confidence of certified bounds (default 0.95)")
    g.add_argument("--samples", type=int,
                   help="mean (Poisson) certifying samples per input at the last stage; use the baseline's")
    g.add_argument("--seed", type=int, default=0, help="root seed (default 0)")
    g.add_argument("--jobs", type=int, default=-1, help=JOBS_HELP)
    return parser


def _say(text: str) -> None:
    """Print to stdout; if the reader went away (`| head`), keep auditing silently so the exit
    code still tells the verdict."""
    try:
        print(text, flush=True)
    except BrokenPipeError:
        sys.stdout = open(os.devnull, "w")


def _error_entry(name: str, message: str) -> dict:
    return {"mechanism": name, "verdict": "error", "error": message}


def _dask_client(address: str):
    try:
        from distributed import Client
    except ImportError:
        raise DpVerifyError("--scheduler needs dask.distributed: pip install "
                            "'dask[distributed]'") from None
    try:
        return Client(address, timeout="10s")
    except OSError as exc:
        raise DpVerifyError(f"cannot reach the dask scheduler at {address}: {exc}") from None


# ------------------------------------------------------------------------------------------------
# Checks before any audit runs: option values, output paths
# ------------------------------------------------------------------------------------------------

def validate_common(args) -> None:
    """Option values `audit` and `gate` share; InvalidClaimError saying what is allowed."""
    if args.epsilon is not None or args.delta is not None:
        validate_claim(args.epsilon if args.epsilon is not None else 1.0, args.delta or 0.0)
    if not 0.0 < args.confidence < 1.0:
        raise InvalidClaimError(f"--confidence must be in (0, 1), e.g. 0.95, got "
                                f"{args.confidence}")
    if args.samples is not None and args.samples < 100:
        raise InvalidClaimError(f"--samples must be ≥ 100 (certifying runs per input), got "
                                f"{args.samples}")
    if args.seed < 0:
        raise InvalidClaimError(f"--seed must be ≥ 0, got {args.seed}")
    if args.jobs == 0:
        raise InvalidClaimError("--jobs 0 runs nothing: give a number of workers N > 0, or -1 "
                                "for all cores (the default), -2 for all but one, ...")
    for option in ("time_limit", "seconds"):
        value = getattr(args, option, None)
        if value is not None and not (value > 0 and math.isfinite(value)):
            raise InvalidClaimError(f"--{option.replace('_', '-')} must be a number of seconds "
                                    f"> 0, got {value}")


def _shown(path: Path) -> str:
    return str(path) if str(path) else "."


def _check_parent(path: Path, option: str) -> None:
    parent = path.absolute().parent
    if not parent.exists():
        raise DpVerifyError(f"{option} {path}: directory {parent} does not exist; create it "
                            f"first (mkdir -p {parent}) or fix the path")
    if not parent.is_dir():
        raise DpVerifyError(f"{option} {path}: {parent} is not a directory; fix the path")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise DpVerifyError(f"{option} {path}: directory {parent} is not writable; choose "
                            f"another path or fix its permissions")


_EXAMPLE_NAMES = {"--json": "results.json", "--junit": "junit.xml", "--summary": "summary.md",
                  "--baseline": "baseline.json"}


def check_output_file(value, option: str) -> Path:
    """The path of a file dpverify will write: its directory must exist and be writable, and
    the path must not be a directory. DpVerifyError (exit 2) otherwise, before any audit."""
    path = Path(value)
    if path.is_dir():
        example = path / _EXAMPLE_NAMES.get(option, "out")
        raise DpVerifyError(f"{option} {_shown(path)} is a directory; give a file path such as "
                            f"{example}")
    _check_parent(path, option)
    if path.exists() and not os.access(path, os.W_OK):
        raise DpVerifyError(f"{option} {path} exists and is not writable; choose another path "
                            f"or fix its permissions")
    return path


def check_output_dir(value, option: str) -> Path:
    """A directory dpverify will write files into: it is created if absent, but its parent
    must exist (no silent `mkdir -p`); it must be writable."""
    path = Path(value)
    if path.exists():
        if not path.is_dir():
            raise DpVerifyError(f"{option} {path} exists and is not a directory; give a "
                                f"directory path")
        if not os.access(path, os.W_OK | os.X_OK):
            raise DpVerifyError(f"{option} directory {_shown(path)} is not writable; choose "
                                f"another directory or fix its permissions")
        return path
    _check_parent(path, option)
    return path


def write_output(option: str, path: Path, write) -> None:
    """Run `write()`; an OSError (disk full, permissions changed mid-run) becomes a one-line
    DpVerifyError naming the option."""
    try:
        write()
    except OSError as exc:
        raise DpVerifyError(f"cannot write {option} {path}: {exc.strerror or exc}; check the "
                            f"path and free space") from exc


def _validate_zcdp_options(args) -> None:
    """--zcdp RHO: a ρ-zCDP claim instead of --epsilon; --delta is then the implied claim's δ."""
    if getattr(args, "zcdp", None) is None:
        return
    if args.epsilon is not None:
        raise InvalidClaimError("--zcdp and --epsilon are two different claims: give one")
    if args.measure or args.seconds is not None:
        raise InvalidClaimError("--measure and --seconds apply to (ε, δ) claims, not to --zcdp")
    from .zcdp import validate_delta
    validate_zcdp(args.zcdp)
    validate_delta(args.delta)


def run_audit(args) -> int:
    from .engine import audit, is_zcdp_claim
    from .report import write_report

    # usage errors before any work: option values, then every output path
    _validate_zcdp_options(args)
    validate_common(args)
    json_path = check_output_file(args.json, "--json") if args.json else None
    report_dir = check_output_dir(args.report, "--report") if args.report else None
    mechanisms = []
    for target in args.targets:
        try:
            mechanisms += resolve_target(target)
        except TargetError as exc:
            print(f"dpverify: error: {exc}", file=sys.stderr)
            return EXIT_ERROR
    backend = "dask" if args.scheduler else args.backend
    client = _dask_client(args.scheduler) if args.scheduler else None
    entries, results, audited, code = [], [], [], EXIT_PASS
    for mech in mechanisms:
        try:
            result = audit(mech, epsilon=args.epsilon, delta=args.delta,
                           confidence=args.confidence, samples=args.samples, seed=args.seed,
                           n_jobs=args.jobs, backend=backend, time_limit=args.time_limit,
                           curves=bool(args.report)
                           and not is_zcdp_claim(mech, args.epsilon, args.zcdp),
                           stop_early=not args.measure,
                           floating_point=True if args.floating_point else None,
                           seconds=args.seconds, zcdp=args.zcdp)
        except DpVerifyError as exc:
            print(f"ERROR      {mech.name}: {exc}", file=sys.stderr)
            entries.append(_error_entry(mech.name, str(exc)))
            code = EXIT_ERROR
            continue
        _say(result.summary())
        results.append(result)
        audited.append(mech)
        entries.append(result.as_dict())
        if result.verdict == "violation" and code == EXIT_PASS:
            code = EXIT_VIOLATION
        if result.interrupted:
            print("interrupted: the remaining mechanisms were not audited", file=sys.stderr)
            code = EXIT_INTERRUPTED
            break
    if client is not None:
        client.close()
    document = {"results": entries, "meta": {
        "dpverify": __version__, "python": platform.python_version(), "numpy": np.__version__,
        "command": ["dpverify"] + sys.argv[1:], "seed": args.seed,
        "confidence": args.confidence,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}}
    if json_path is not None:
        text = json.dumps(document, indent=2, ensure_ascii=False)
        write_output("--json", json_path, lambda: json_path.write_text(text, encoding="utf-8"))
    if report_dir is not None:
        def report():
            report_dir.mkdir(exist_ok=True)  # its parent was checked to exist
            write_report(report_dir, document, results, audited)
        write_output("--report", report_dir, report)
    n_viol = sum(r.verdict == "violation" for r in results)
    _say(f"\n{len(mechanisms)} mechanism(s): {n_viol} violation(s), "
         f"{len(results) - n_viol} pass(es), {len(mechanisms) - len(results)} error(s)")
    return code


def _first_line(text: str, most: int = 200) -> str:
    line = next((ln.strip() for ln in str(text).splitlines() if ln.strip()), "")
    return line if len(line) <= most else line[:most - 1] + "…"


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    debug = getattr(args, "debug", False)
    try:
        if args.command == "audit":
            return run_audit(args)
        if args.command == "gate":
            from .gate import run_gate
            return run_gate(args)
    except DpVerifyError as exc:
        if debug:
            traceback.print_exc()
        print(f"dpverify: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("dpverify: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:  # a bug (ours or the environment's): exit 2, never 1
        if debug:
            traceback.print_exc()
        detail = _first_line(exc)
        print(f"dpverify: error: internal error {type(exc).__name__}"
              + (f": {detail}" if detail else "")
              + ("" if debug else "; rerun with --debug for the traceback")
              + " and report it at the dpverify issue tracker", file=sys.stderr)
        return EXIT_ERROR
    return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
