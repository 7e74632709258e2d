"""What every report script does: put the repository on the path (the zoo,
`mechanisms_under_test`, is not installed), give a rate its interval, write a JSON document.
Intervals come from `dpverify.stats`, the package's own Clopper–Pearson bounds."""
from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from dpverify.result import jsonable  # noqa: E402
from dpverify.stats import cp_lower, cp_upper  # noqa: E402


def clopper_pearson(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """The two-sided Clopper–Pearson interval of k successes in n trials at `confidence`, each
    side at (1 − confidence)/2 (docs/theory.md §2)."""
    level = (1.0 - confidence) / 2
    return float(cp_lower(k, n, level)), float(cp_upper(k, n, level))


def write_json(path: Path, document, indent: int = 2) -> None:
    """`document` as strict JSON (infinities spelled "inf", `dpverify.result.jsonable`)."""
    Path(path).write_text(json.dumps(jsonable(document), indent=indent, ensure_ascii=False,
                                     allow_nan=False) + "\n", encoding="utf-8")
