"""Every Python block of README.md and docs/ runs as pasted, and its quoted output is what it
prints.

A block right under an HTML comment `<!-- fragment -->` is a fragment (a signature, a test
body that needs the plugin's fixture, a cluster address): it must compile, nothing more. Every
other block runs in a fresh namespace from the repository root. When it ends in quoted output
(its trailing `# ` lines) and that output is deterministic (not marked `<!-- output varies -->`,
nor saying "own randomness": the mechanism draws from `rng`), it runs at its own budget and the
quoted text must be what it printed, seconds and line wrapping aside, each "…" standing for
anything. Blocks whose output cannot be compared run with `samples` capped at CAP: they show
that the code runs.
"""
import contextlib
import io
import re
from pathlib import Path

import pytest

import dpverify

ROOT = Path(__file__).resolve().parents[1]
CAP = 1 << 12
FRAGMENT, VARIES = "<!-- fragment -->", "<!-- output varies -->"
BLOCK = re.compile(r"(<!-- (?:fragment|output varies) -->[ \t]*\n)?```python\n(.*?)^```",
                   re.S | re.M)
SECONDS = re.compile(r"\d[\d,.]* s\b")
# optional libraries a block may import, absent where their adapters' environment is not
OPTIONAL = ("opendp", "diffprivlib", "pydp", "pipeline_dp", "tmlt", "dp_accounting",
            "distributed", "torch", "opacus")


def _blocks():
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = path.read_text(encoding="utf-8")
        for m in BLOCK.finditer(text):
            line = text[:m.start(2)].count("\n") + 1
            marker = (m.group(1) or "").strip()
            yield pytest.param(m.group(2), marker,
                               id=f"{path.relative_to(ROOT)}:{line}")


BLOCKS = list(_blocks())


def quoted_output(code: str) -> list[str]:
    """The block's trailing comment lines, without their `# `."""
    lines = code.rstrip().splitlines()
    tail = []
    while lines and lines[-1].lstrip().startswith("#"):
        tail.insert(0, lines.pop().split("#", 1)[1].strip())
    return tail


def _flat(text: str) -> str:
    """Whitespace collapsed and seconds masked: a quoted line may be wrapped in the docs."""
    return SECONDS.sub("S s", " ".join(text.split()))


def not_printed(quoted: list[str], printed: str) -> list[str]:
    """The pieces of the quoted output (split at each "…") not found in the printed text in
    their order."""
    text, at, missing = _flat(printed), 0, []
    for piece in _flat(" ".join(quoted)).split("…"):
        piece = piece.strip()
        if not piece:
            continue
        found = text.find(piece, at)
        if found < 0:
            missing.append(piece)
        else:
            at = found + len(piece)
    return missing


def test_the_docs_have_python_blocks_to_run():
    assert sum(marker != FRAGMENT for _, marker in (p.values for p in BLOCKS)) >= 10


@pytest.mark.parametrize("code, marker", BLOCKS)
def test_a_docs_block_runs_and_prints_what_it_quotes(code, marker, monkeypatch):
    compile(code, "<docs block>", "exec")
    if marker == FRAGMENT:
        return
    quoted = quoted_output(code)
    compared = (bool(quoted) and marker != VARIES
                and not any("own randomness" in q for q in quoted))
    if not compared:
        audit = dpverify.audit

        def capped(*args, samples=None, **kwargs):
            return audit(*args, samples=min(samples or CAP, CAP), **kwargs)
        monkeypatch.setattr(dpverify, "audit", capped)
    monkeypatch.chdir(ROOT)
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(code, "<docs block>", "exec"), {"__name__": "__docs__"})
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.split(".")[0] in OPTIONAL:
            pytest.skip(f"{exc.name} is not installed here")
        raise
    if compared:
        missing = not_printed(quoted, out.getvalue())
        assert not missing, "quoted but not printed:\n" + "\n".join(missing) + (
            "\n--- printed:\n" + out.getvalue())
