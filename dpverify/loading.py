"""Resolve CLI targets (`file.py`, `file.py:name`, `package.module:name`) to mechanisms."""
from __future__ import annotations

import difflib
import importlib
import importlib.util
import sys
from pathlib import Path

from .errors import TargetError
from .mechanism import Mechanism, as_mechanism


def _cwd_on_path() -> None:
    """Let targets import from the current directory, as `python -m` does (the `dpverify`
    console script does not): `pkg.module:name` targets and files doing `from pkg import ...`
    from a project checkout whose packages are not installed. Appended, so installed packages
    of the same name still win."""
    cwd = str(Path.cwd())
    if "" not in sys.path and cwd not in sys.path:
        sys.path.append(cwd)


def module_from_path(path: Path):
    _cwd_on_path()
    path = path.resolve()
    if not path.is_file():
        raise TargetError(f"no such file: {path}; give a path to a .py file, optionally with "
                          ":name, or package.module:name")
    # Inside a package (folders with __init__.py): import by dotted name so relative imports work.
    parts = [path.stem]
    root = path.parent
    while (root / "__init__.py").exists():
        parts.insert(0, root.name)
        root = root.parent
    if len(parts) > 1 or str(root) not in sys.path:
        sys.path.insert(0, str(root))
    name = ".".join(parts)
    try:
        if len(parts) > 1:
            return importlib.import_module(name)
        spec = importlib.util.spec_from_file_location(f"_dpverify_target_{abs(hash(str(path)))}", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        return module
    except TargetError:
        raise
    except Exception as exc:
        raise TargetError(f"could not import {path}: {type(exc).__name__}: {exc}") from exc


def _module(spec: str):
    if spec.endswith(".py") or "/" in spec or "\\" in spec:
        return module_from_path(Path(spec))
    _cwd_on_path()
    try:
        return importlib.import_module(spec)
    except ImportError as exc:
        raise TargetError(f"could not import module {spec!r}: {exc}") from exc


def mechanisms_in(module) -> list[Mechanism]:
    """The @dpverify.mechanism objects at the top level of a module, in definition order: those
    whose function was defined in this module, or, when there are none such (a file that only
    builds mechanisms with a factory from elsewhere), every one it holds."""
    seen, found = set(), []
    for value in vars(module).values():
        if isinstance(value, Mechanism) and id(value) not in seen:
            seen.add(id(value))
            found.append(value)
    own = [m for m in found if getattr(m.fn, "__module__", None) == module.__name__]
    return own or found


def directory_mechanisms(directory: Path) -> list[Mechanism]:
    """Every mechanism in the directory's .py files (not recursive; __init__.py skipped)."""
    found = []
    for path in sorted(directory.glob("*.py")):
        if path.name != "__init__.py":
            found += mechanisms_in(module_from_path(path))
    if not found:
        raise TargetError(f"directory {directory} holds no @dpverify.mechanism in its .py files")
    return found


def _no_such_name(module_part: str, module, name: str) -> TargetError:
    """The error for file.py:name when the file has no `name`: the closest names it has."""
    names = [m.name for m in mechanisms_in(module)]
    close = difflib.get_close_matches(name, names, n=3)
    hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    held = f" (its mechanisms: {', '.join(names)})" if names else " (it holds no mechanism)"
    return TargetError(f"{module_part} has no {name!r}{hint}{held}")


def resolve_target(target: str) -> list[Mechanism]:
    """Return the mechanisms a CLI target names: file.py, file.py:name, package.module:name or
    a directory (its .py files, not recursive); raise TargetError if there are none."""
    if Path(target).is_dir():
        return directory_mechanisms(Path(target))
    module_part, _, name = target.rpartition(":") if ":" in target else (target, "", "")
    if len(module_part) == 1 and module_part.isalpha():  # a Windows drive letter, not a name
        module_part, name = target, ""
    module = _module(module_part)
    if name:
        if not hasattr(module, name):
            raise _no_such_name(module_part, module, name)
        value = getattr(module, name)
        if isinstance(value, Mechanism):  # even one with a declaration error: audit() names it
            return [value]
        if not callable(value):
            raise TargetError(f"{target} is not a mechanism (not callable)")
        return [as_mechanism(value, name=name)]
    found = mechanisms_in(module)
    if not found:
        raise TargetError(f"{target} holds no @dpverify.mechanism; decorate a function with "
                          "@dpverify.mechanism(epsilon=..., pairs=...) or name it as file.py:name")
    return found
