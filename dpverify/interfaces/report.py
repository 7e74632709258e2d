"""Write an audit's report files. Reports never recompute statistics: they format results."""
from __future__ import annotations

import json
from pathlib import Path

from ..errors import DpVerifyError
from ..result import jsonable
from .report_content import report_blocks
from .report_render import copy_docs, to_html, to_markdown


def markdown(document: dict, results=(), images: dict | None = None,
             directory: Path | None = None) -> str:
    """report.md: the summary table, then a section per mechanism with its witness
    (report_content.report_blocks); pictures linked relative to `directory`."""
    return to_markdown(report_blocks(document, results, images or {}), directory or Path("."))


def html(document: dict, results, images: dict) -> str:
    """index.html: the same blocks as report.md, on one self-contained page."""
    return to_html(report_blocks(document, results, images))


def results_document(results, **meta) -> dict:
    """The JSON document of `dpverify audit --json` for `results`: their entries and how they
    were made (`meta` adds to the versions and the time)."""
    import platform
    import time

    import numpy as np

    from .. import __version__
    return {"results": [r.as_dict() for r in results], "meta": {
        "dpverify": __version__, "python": platform.python_version(), "numpy": np.__version__,
        **meta, "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}}


def save_report(results, directory, mechanisms=None) -> Path:
    """Write the report of `dpverify audit --report DIR` for one or more results (an
    `AuditResult` or a list) into `directory` (created if absent; its parent must exist), and
    return the path of its index.html. The trade-off, δ(ε) and p-value pictures need the
    counts `audit(..., curves=True)` keeps; without them the report has the witness picture.
    `mechanisms` (same order as results) supplies known exact trade-off curves."""
    results = list(results) if isinstance(results, (list, tuple)) else [results]
    directory = Path(directory)
    if not directory.parent.is_dir():
        raise DpVerifyError(f"cannot write the report to {directory}: its parent directory "
                            "does not exist")
    write_report(directory, results_document(results), results, mechanisms)
    return directory / "index.html"


def _plot_dir(directory: Path, result, single: bool) -> Path:
    target = directory if single else directory / result.mechanism
    target.mkdir(parents=True, exist_ok=True)
    return target


def write_report(directory: Path, document: dict, results, mechanisms=None) -> None:
    """DIR/result.json, DIR/report.md, DIR/index.html (self-contained) and PNG plots, drawn as
    the result's kind draws them (report_kinds; one folder per mechanism when there are
    several). `mechanisms` (same order as results) supplies known exact trade-off curves."""
    from .report_kinds import VIEWS

    directory.mkdir(parents=True, exist_ok=True)
    (directory / "result.json").write_text(json.dumps(document, indent=2, ensure_ascii=False))
    exact = {m.name: m.exact_tradeoff for m in (mechanisms or [])}
    images, figures = {}, {}
    for result in results:
        folder = _plot_dir(directory, result, single=len(results) == 1)
        names, figures[result.mechanism] = VIEWS[result.kind].plots(
            result, folder, exact.get(result.mechanism))
        images[result.mechanism] = [folder / n for n in names]
        if names:  # where each picture's texts were drawn, for the tests of its layout
            from .drawing import text_boxes
            figures[result.mechanism] = {**(figures[result.mechanism] or {}),
                                         "texts": {n: text_boxes(folder / n) for n in names}}
    (directory / "figures.json").write_text(json.dumps(jsonable(figures), indent=1,
                                                       ensure_ascii=False))
    copy_docs(report_blocks(document, results, images), directory)
    (directory / "report.md").write_text(markdown(document, results, images, directory))
    (directory / "index.html").write_text(html(document, results, images))
