"""`dpverify audit TARGET...`: a thin shell over `audit()`; `dpverify gate` lives in gate.py, the
exit codes both return in exit_codes.py.
"""
from __future__ import annotations

import argparse
import json
import sys
import traceback
from dataclasses import dataclass, field


from .. import __version__
from ..errors import DpVerifyError, TargetError
from ..loading import resolve_target
from ..options import (AUDIT_FLAGS, COMMON_FLAGS, GATE_FLAGS, OPTIONS, check_parsed,
                       confirm_requested)
from .exit_codes import (EXIT_CODES, EXIT_ERROR, EXIT_INTERRUPTED, EXIT_PASS,  # noqa: F401
                         EXIT_INCONCLUSIVE, EXIT_VIOLATION, exit_code_of, worse_exit)
from .outputs import (check_output_dir, check_output_file, ctrl_c_held, on_terminal, say,
                      write_output)

# Each subcommand: its one-line summary, its description and its options (dpverify.options).
COMMANDS = {
    "audit": ("audit mechanisms against their (ε, δ) claim",
              "Audit every @dpverify.mechanism in the targets. A pass means no violation found "
              "at this budget, not a proof of privacy; it states its resolution and leak reach. "
              "An audit whose resolution is above a gross violation of the claim is "
              "INCONCLUSIVE (exit 3).", AUDIT_FLAGS),
    "gate": ("audit, then fail on a violation or on drift from a baseline",
             "CI gate: audit the mechanisms, then exit 1 on any violation, on a mechanism "
             "missing from the baseline, or when a mechanism's estimated ε drifted from the "
             "baseline: |est − base| > max(tolerance·|base|, 2·(u + u_base)), u the gap "
             "between estimate and certified bound. Exit 3 when no finding but an audit was "
             "inconclusive (its budget could not have caught a gross violation); exit 2 on "
             "usage errors, an unreadable baseline or a mechanism that cannot run.", GATE_FLAGS),
}


class _Formatter(argparse.HelpFormatter):
    """Wrap one-line descriptions as usual; keep texts laid out in lines (EXIT_CODES) as is."""

    def _fill_text(self, text, width, indent):
        if "\n" in text:
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse exits with 2 too; keep its usage line, add a hint
        unknown = _unrecognized(message)
        command = self._command(unknown)
        (command or self).print_usage(sys.stderr)
        hints = [_suggestion(word, command or self) for word in unknown]
        self.exit(EXIT_ERROR, f"dpverify: error: {message}\n"
                  + "".join(f"  {hint}\n" for hint in hints if hint))

    def _command(self, unknown: list[str]):
        """The subcommand's parser when the top-level parser reports its unknown options."""
        if not unknown:
            return None
        argv = getattr(self, "argv", None)
        argv = sys.argv[1:] if argv is None else argv
        chosen = next((a for a in argv if a in ("audit", "gate")), None)
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction) and chosen in action.choices:
                return action.choices[chosen]
        return None


def _unrecognized(message: str) -> list[str]:
    """The options argparse's "unrecognized arguments: …" message names."""
    prefix = "unrecognized arguments: "
    if not message.startswith(prefix):
        return []
    return [w for w in message[len(prefix):].split() if w.startswith("--")]


def _suggestion(word: str, parser: argparse.ArgumentParser) -> str | None:
    """"did you mean --epsilon?" for a mistyped option, from the parser's own flags."""
    import difflib
    flags = [f for a in parser._actions for f in a.option_strings if f.startswith("--")]
    close = difflib.get_close_matches(word.split("=", 1)[0], flags, n=1, cutoff=0.75)
    return f"{word}: did you mean {close[0]}?" if close else None


def add_options(parser: argparse.ArgumentParser, names, command: str) -> None:
    """Add the options `names` of dpverify.options.OPTIONS to `parser`, as `command` words
    them."""
    for name in names:
        option = OPTIONS[name]
        text = (option.cli.gate_help if command == "gate" else None) or option.help
        settings = dict(option.cli.settings, help=text)
        if option.default is not None:  # unless the flag's own default tells "not given"
            settings.setdefault("default", option.default)
        parser.add_argument(option.cli.flag, **settings)


def build_parser() -> argparse.ArgumentParser:
    """The `dpverify` parser: `audit` and `gate`, their options from dpverify.options."""
    parser = _Parser(prog="dpverify", description="Empirical differential-privacy verifier.",
                     epilog=EXIT_CODES, formatter_class=_Formatter)
    parser.add_argument("--version", action="version", version=f"dpverify {__version__}")
    common = argparse.ArgumentParser(add_help=False)  # options of every subcommand
    add_options(common, COMMON_FLAGS, "audit")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for command, (summary, description, names) in COMMANDS.items():
        subparser = sub.add_parser(command, help=summary, parents=[common], epilog=EXIT_CODES,
                                   formatter_class=_Formatter, description=description)
        add_options(subparser, names, command)
    return parser


def check_usage(args, command: str) -> None:
    """The option values of `command` (audit or gate), checked as dpverify.options defines
    them; InvalidClaimError saying what is allowed."""
    check_parsed(args, COMMANDS[command][2])


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


def audit_options(args, mech) -> dict:
    """The keywords of `dpverify.audit` that `dpverify audit`'s arguments set for `mech`."""
    from ..auditing import is_ed_claim
    claims = (args.epsilon, args.zcdp, args.gdp)
    return dict(epsilon=args.epsilon, delta=args.delta, confidence=args.confidence,
                samples=args.samples, seed=args.seed, n_jobs=args.jobs,
                backend="dask" if args.scheduler else args.backend, time_limit=args.time_limit,
                curves=bool(args.report) and is_ed_claim(mech, *claims),
                stop_early=not args.measure, proof_only=args.proof_only,
                floating_point=True if args.floating_point else None,
                seconds=args.seconds, resolution=args.resolution, zcdp=args.zcdp, gdp=args.gdp,
                confirm=(confirm_requested(args.confirm, "audit")
                         and is_ed_claim(mech, *claims)))


@dataclass
class AuditedTargets:
    """What `dpverify audit` found, in order: JSON entries (errors and mechanisms not run
    included), the results and their mechanisms (for the report), the exit code so far, and
    whether Ctrl-C stopped the run."""

    entries: list = field(default_factory=list)
    results: list = field(default_factory=list)
    mechanisms: list = field(default_factory=list)
    code: int = EXIT_PASS
    errors: int = 0
    not_run: int = 0
    interrupted: bool = False

    def add_error(self, mech, exc: DpVerifyError) -> None:
        print(f"ERROR      {mech.name}: {exc}", file=sys.stderr)
        self.entries.append(_error_entry(mech.name, str(exc)))
        self.errors += 1
        self.code = worse_exit(self.code, EXIT_ERROR)

    def add_result(self, mech, result) -> None:
        """Keep the result, then print it (a Ctrl-C while printing loses nothing)."""
        entry = result.as_dict()
        self.results.append(result)
        self.mechanisms.append(mech)
        self.entries.append(entry)
        self.code = worse_exit(self.code, exit_code_of(result))
        say(result.summary())

    def stop(self, remaining: list, stopped=None) -> None:
        """Ctrl-C: `stopped` (a mechanism interrupted before it had a result) and the
        `remaining` ones are not run; the exit code is 130."""
        self.interrupted = True
        self.code = EXIT_INTERRUPTED
        for mech in ([stopped] if stopped is not None else []) + remaining:
            self.entries.append({"mechanism": mech.name, "verdict": "not run",
                                 "reason": "interrupted (Ctrl-C)"})
            self.not_run += 1
        if self.not_run:
            print(f"interrupted: {self.not_run} mechanism(s) not audited", file=sys.stderr)

    def count_line(self) -> str:
        """The closing line. An audit Ctrl-C stopped before it proved a violation is counted
        as interrupted, never as a pass: it did not spend its budget."""
        outcomes = [counted_outcome(r) for r in self.results]
        stopped = outcomes.count("interrupted")
        return (f"{len(self.entries)} mechanism(s): {outcomes.count('violation')} violation(s), "
                f"{outcomes.count('pass')} pass(es), {outcomes.count('inconclusive')} "
                f"inconclusive, {self.errors} error(s)"
                + (f", {stopped} interrupted" if stopped else "")
                + (f", {self.not_run} not run" if self.not_run else "")
                + ("  [INTERRUPTED]" if self.interrupted else ""))


def counted_outcome(result) -> str:
    """What the count lines count a result as: its outcome, or "interrupted" for an audit
    stopped by Ctrl-C before it proved a violation (a proof stands wherever it stops)."""
    if getattr(result, "interrupted", False) and result.verdict != "violation":
        return "interrupted"
    return result.outcome


def audit_each(args, mechanisms) -> AuditedTargets:
    """Audit the mechanisms one by one, printing each summary (or error) as it comes; at
    Ctrl-C keep what was certified until then, and mark the rest as not run."""
    import dpverify

    done = AuditedTargets()
    client = _dask_client(args.scheduler) if args.scheduler else None
    try:
        for i, mech in enumerate(mechanisms):
            try:
                if len(mechanisms) > 1:
                    on_terminal(f"[{i + 1}/{len(mechanisms)}] {mech.name}")
                result = dpverify.audit(mech, **audit_options(args, mech))
            except DpVerifyError as exc:
                done.add_error(mech, exc)
                continue
            except KeyboardInterrupt:  # before the audit had anything to keep
                done.stop(mechanisms[i + 1:], stopped=mech)
                break
            try:
                done.add_result(mech, result)
            except KeyboardInterrupt:  # while printing it: the result is kept
                done.stop(mechanisms[i + 1:])
                break
            if result.interrupted:
                done.stop(mechanisms[i + 1:])
                break
    finally:
        if client is not None:
            client.close()
    return done


def results_document(args, done: "AuditedTargets") -> dict:
    """The --json document: the entries (errors included) and how they were made."""
    from .report import results_document as document_of
    document = document_of([], command=["dpverify"] + sys.argv[1:], seed=args.seed,
                           confidence=args.confidence, interrupted=done.interrupted)
    document["results"] = done.entries
    return document


def write_files(json_path, report_dir, document: dict, done: AuditedTargets) -> None:
    """--json and --report, when asked for (their paths were checked before the audits)."""
    from .report import write_report

    if json_path is not None:
        text = json.dumps(document, indent=2, ensure_ascii=False)
        write_output("--json", json_path, lambda: json_path.write_text(text, encoding="utf-8"))
    if report_dir is not None:
        def report():
            on_terminal(f"writing the report to {report_dir} …")
            report_dir.mkdir(exist_ok=True)  # its parent was checked to exist
            write_report(report_dir, document, done.results, done.mechanisms)
        write_output("--report", report_dir, report)


def _preload(report: bool) -> None:
    """Import what the audits and the files will need before any audit starts, with Ctrl-C
    held back meanwhile: one that lands while a module is being imported leaves it half
    imported, and the files written after it would then fail (a run interrupted during
    scipy.stats's first import ended in a NameError from scipy.ndimage). A Ctrl-C that
    arrived meanwhile is raised when this returns."""
    with ctrl_c_held() as pressed:
        import scipy.stats  # noqa: F401  (the audits import it lazily)

        from .. import auditing  # noqa: F401
        if report:
            from . import plots, report as report_module  # noqa: F401
    if pressed:
        raise KeyboardInterrupt


def run_audit(args) -> int:
    """Run `dpverify audit` on parsed arguments; return the exit code."""
    check_usage(args, "audit")  # usage errors before any work: option values, output paths
    json_path = check_output_file(args.json, "--json") if args.json else None
    report_dir = check_output_dir(args.report, "--report") if args.report else None
    mechanisms = []
    for target in args.targets:
        try:
            mechanisms += resolve_target(target)
        except TargetError as exc:
            print(f"dpverify: error: {exc}", file=sys.stderr)
            return EXIT_ERROR
    try:
        _preload(report=report_dir is not None)
    except KeyboardInterrupt:  # Ctrl-C before the first audit began
        done = AuditedTargets()
        done.stop(mechanisms)
    else:
        done = audit_each(args, mechanisms)
    with ctrl_c_held() as pressed:  # the files and the count line say what the audits did
        write_files(json_path, report_dir, results_document(args, done), done)
        say("\n" + done.count_line())
    if pressed:
        print("dpverify: Ctrl-C after the audits had finished: every file was written, "
              "nothing was lost", file=sys.stderr)
    return done.code


def _first_line(text: str, most: int = 200) -> str:
    line = next((ln.strip() for ln in str(text).splitlines() if ln.strip()), "")
    return line if len(line) <= most else line[:most - 1] + "…"


def main(argv=None) -> int:
    parser = build_parser()
    parser.argv = argv  # for the usage line and the hint of a mistyped option
    args = parser.parse_args(argv)
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
