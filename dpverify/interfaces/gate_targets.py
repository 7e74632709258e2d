"""The targets of `dpverify gate`: audit's forms (directories included), one mechanism per name
(the baseline is keyed by name), and the files changed since a git ref (--changed-since)."""
from __future__ import annotations

import inspect
import subprocess
from pathlib import Path

from ..errors import GateError, TargetError
from ..loading import resolve_target
from ..mechanism import Mechanism


def source_file(mech: Mechanism) -> Path | None:
    """The file that defines the mechanism's function, resolved; None if Python cannot tell."""
    try:
        found = inspect.getsourcefile(inspect.unwrap(mech.fn))
    except TypeError:
        return None
    return Path(found).resolve() if found else None


def display_path(path: Path | None) -> str | None:
    """A path relative to the current directory when it lies below it (POSIX form)."""
    if path is None:
        return None
    try:
        return path.relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def resolve_targets(targets) -> list[Mechanism]:
    """Resolve gate targets (audit's forms) to distinct mechanisms.

    The same mechanism reached twice (same name, same source file) is kept once; two different
    mechanisms with one name raise GateError, since the baseline is keyed by name.
    """
    mechanisms: list[Mechanism] = []
    where: dict[str, Path | None] = {}
    seen: set[int] = set()
    for target in targets:
        for mech in resolve_target(target):
            if id(mech) in seen:
                continue
            seen.add(id(mech))
            src = source_file(mech)
            if mech.name in where:
                if where[mech.name] == src:
                    continue
                raise GateError(
                    f"two mechanisms are named {mech.name!r} ({display_path(where[mech.name])} "
                    f"and {display_path(src)}); the baseline is keyed by name: give one another "
                    "name with @dpverify.mechanism(name=...)")
            where[mech.name] = src
            mechanisms.append(mech)
    return mechanisms


def _git(args: list[str], cwd) -> str:
    try:
        proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    except OSError as exc:
        raise GateError(f"cannot run git: {exc}")
    if proc.returncode != 0:
        raise GateError(f"`git {' '.join(args)}` failed: {proc.stderr.strip() or proc.returncode}")
    return proc.stdout


def changed_files(ref: str, cwd=None) -> frozenset:
    """Files changed since `ref` (committed, staged or not) plus untracked ones, resolved, in
    the git repository that holds `cwd` (default: the current directory's)."""
    top = Path(_git(["rev-parse", "--show-toplevel"], cwd).strip())
    names = _git(["diff", "--name-only", "-z", ref, "--"], top).split("\0")
    names += _git(["ls-files", "--others", "--exclude-standard", "-z"], top).split("\0")
    return frozenset((top / name).resolve() for name in names if name)
