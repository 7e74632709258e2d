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
    """One result as HTML: its verdict, its summary and, with a witness, its picture inline:
    the witness panel of an (ε, δ) audit, the trade-off plane of a curve audit."""
    from .fdp_report import tradeoff_plot
    from .plots import witness_plot
    colour = OUTCOME_COLOURS.get(result.outcome, "#222")
    parts = [f"<h3>{html.escape(result.mechanism)}: <span style='color:{colour}'>"
             f"{html.escape(result.outcome)}</span></h3>",
             f"<pre>{html.escape(result.summary())}</pre>"]
    draw = tradeoff_plot if hasattr(result, "certified_clause") else witness_plot
    if getattr(result, "witness", None) is not None and hasattr(result, "claimed_epsilon"):
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "witness.png"
            draw(result, path)
            data = base64.b64encode(path.read_bytes()).decode()
        parts.append(f'<img alt="witness" style="max-width:100%" '
                     f'src="data:image/png;base64,{data}">')
    return "\n".join(parts)
