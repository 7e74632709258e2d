"""A result in a notebook: `AuditResult._repr_html_` (what Jupyter displays) is `result_html`.

Only the pictures are imported from here, never the reports, so that the result classes can
reach it without an import circle (tests/test_imports.py)."""
from __future__ import annotations

import base64
import html
import tempfile
from pathlib import Path

OUTCOME_COLOURS = {"violation": "#b71c1c", "inconclusive": "#b26a00", "pass": "#1b5e20"}


def result_html(result) -> str:
    """One result as HTML: its verdict, its summary and, with a witness, the first picture its
    kind draws in a report (interfaces/report_kinds.py): the witness panel of an (ε, δ) audit,
    the trade-off plane of a curve audit, the Rényi curve or box of a zCDP or RDP audit."""
    from .report_kinds import VIEWS
    colour = OUTCOME_COLOURS.get(result.outcome, "#222")
    parts = [f"<h3>{html.escape(result.mechanism)}: <span style='color:{colour}'>"
             f"{html.escape(result.outcome)}</span></h3>",
             f"<pre>{html.escape(result.summary())}</pre>"]
    if getattr(result, "witness", None) is not None:
        with tempfile.TemporaryDirectory() as folder:
            names, _ = VIEWS[result.kind].plots(result, Path(folder), None)
            data = (base64.b64encode((Path(folder) / names[0]).read_bytes()).decode()
                    if names else None)
        if data is not None:
            parts.append(f'<img alt="witness" style="max-width:100%" '
                         f'src="data:image/png;base64,{data}">')
    return "\n".join(parts)
