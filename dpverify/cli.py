"""`dpverify audit TARGET...`: a thin shell over `audit()`; `dpverify gate` lives in gate.py.

Exit codes: 0 no violation found, 1 at least one violation, 2 usage error or a mechanism that
could not be run (2 wins over 1), 130 interrupted by Ctrl-C (what was certified until then is
still printed and written to --json).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

from . import __version__
from .errors import DpVerifyError, InvalidClaimError, TargetError
from .mechanism import validate_claim, validate_zcdp
from .loading import resolve_target

EXIT_PASS, EXIT_VIOLATION, EXIT_ERROR, EXIT_INTERRUPTED = 0, 1, 2, 130


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse exits with 2 too; keep its usage line, add a hint
        self.print_usage(sys.stderr)
        self.exit(EXIT_ERROR, f"dpverify: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="dpverify", description="Empirical differential-privacy verifier.")
    parser.add_argument("--version", action="version", version=f"dpverify {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    a = sub.add_parser("audit", help="audit mechanisms against their (ε, δ) claim",
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
    a.add_argument("--jobs", type=int, default=-1, help="parallel workers (default: all cores)")
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
    a.add_argument("--json", metavar="PATH", help="write results as JSON")
    a.add_argument("--report", metavar="DIR",
                   help="write index.html (self-contained), report.md, result.json and plots "
                        "(trade-off points, certified δ(ε), p-value against ε) to DIR")

    g = sub.add_parser("gate", help="audit, then fail on a violation or on drift from a baseline",
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
    g.add_argument("--jobs", type=int, default=-1, help="parallel workers (default: all cores)")
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

    _validate_zcdp_options(args)
    if args.epsilon is not None or args.delta is not None:  # usage errors before any work
        validate_claim(args.epsilon if args.epsilon is not None else 1.0, args.delta or 0.0)
    if not 0.0 < args.confidence < 1.0:
        raise InvalidClaimError(f"--confidence must be in (0, 1), got {args.confidence}")
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
    if args.json:
        path = Path(args.json)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(document, indent=2, ensure_ascii=False))
    if args.report:
        write_report(Path(args.report), document, results, audited)
    n_viol = sum(r.verdict == "violation" for r in results)
    _say(f"\n{len(mechanisms)} mechanism(s): {n_viol} violation(s), "
         f"{len(results) - n_viol} pass(es), {len(mechanisms) - len(results)} error(s)")
    return code


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "audit":
            return run_audit(args)
        if args.command == "gate":
            from .gate import run_gate
            return run_gate(args)
    except DpVerifyError as exc:
        print(f"dpverify: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("dpverify: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED

    return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
