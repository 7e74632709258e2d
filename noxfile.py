"""Sessions that need an environment of their own: `python -m nox` runs both.

tumult: Tumult Core (tmlt.core 0.20) pins numpy < 2 and pandas < 2 on Python 3.11, while the
test extra runs on numpy 2, so its adapter's tests run here, in a venv with `.[tumult]`:
tests/test_lib_tumult.py and the docs blocks that import tmlt (tests/test_docs_run.py). The
core suite skips them where tmlt is absent.

opacus: Opacus needs torch, which the core suite does not install (hundreds of MB); its
adapter's tests (tests/test_lib_opacus.py) and the docs blocks that import opacus run here, in
a venv with `.[opacus]` (torch 2.13.0, the CPU build this project's machines keep on disk) and
pytest-xdist (its audits are the slow part, and two workers halve them).

Each venv (.nox/<session>) is made by the standard library's venv (no virtualenv or uv needed)
and kept between runs: a rerun only checks the install (pip, about 5 s), `-R` skips that too,
and `--reuse-venv=never` builds the venv anew. Arguments after `--` go to pytest
(`python -m nox -s tumult -- -k pairs`).
"""
from __future__ import annotations

import re
from pathlib import Path

import nox

ROOT = Path(__file__).resolve().parent
# no pytest-xdist: the adapter's audits already keep both cores busy (on threads), and two
# workers each importing Tumult Core made the tests slower (33-39 s against 26-29 s, 2 cores)
TUMULT_PACKAGES = ("-e", ".[tumult]", "pytest>=7")
OPACUS_PACKAGES = ("-e", ".[opacus]", "pytest>=7", "pytest-xdist>=3.5")
# a ```python block of README.md or docs/, as tests/test_docs_run.py finds them and names them
# (FILE:LINE of its first line)
DOCS_BLOCK = re.compile(r"(<!-- (?:fragment|output varies) -->[ \t]*\n)?```python\n(.*?)^```",
                        re.S | re.M)
DOCS_TEST = "tests/test_docs_run.py::test_a_docs_block_runs_and_prints_what_it_quotes"

nox.options.sessions = ["tumult", "opacus"]


def docs_blocks(module: str) -> list[str]:
    """Test ids of the docs blocks that import `module` (they skip in the core suite). An id
    that tests/test_docs_run.py no longer makes fails the session: pytest finds no such test."""
    ids = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = path.read_text(encoding="utf-8")
        for match in DOCS_BLOCK.finditer(text):
            # `from M ...`, or an import line naming M (`import numpy as np, torch`)
            if re.search(rf"^\s*(?:from\s+{module}\b|import\b[^\n]*\b{module}\b)",
                         match.group(2), re.M):
                line = text[:match.start(2)].count("\n") + 1
                ids.append(f"{DOCS_TEST}[{path.relative_to(ROOT).as_posix()}:{line}]")
    return ids


@nox.session(venv_backend="venv", reuse_venv=True)
def tumult(session: nox.Session) -> None:
    """The Tumult Core adapter's tests, on numpy 1.26 and pandas 1.5 (what tmlt.core allows)."""
    session.install(*TUMULT_PACKAGES)
    session.run("python", "-c", "import numpy, pandas, tmlt.core; print('numpy', "
                "numpy.__version__, 'pandas', pandas.__version__)")
    session.run("python", "-m", "pytest", "-q", "tests/test_lib_tumult.py",
                *docs_blocks("tmlt"), *session.posargs)


@nox.session(venv_backend="venv", reuse_venv=True)
def opacus(session: nox.Session) -> None:
    """The Opacus adapter's tests, with torch's CPU build."""
    session.install(*OPACUS_PACKAGES)
    session.run("python", "-c", "import numpy, torch, opacus; print('numpy', numpy.__version__, "
                "'torch', torch.__version__, 'opacus', opacus.__version__)")
    session.run("python", "-m", "pytest", "-q", "-n", "2", "tests/test_lib_opacus.py",
                *docs_blocks("(?:torch|opacus)"), *session.posargs)
