"""What every report script does: put the repository on the path (the zoo,
`mechanisms_under_test`, is not installed), give a rate its interval, write a JSON document,
write Markdown tables and the line that says where a report was measured. Intervals come from
`dpverify.stats`, the package's own Clopper–Pearson bounds (docs/theory.md §2)."""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Iterable, Sequence

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


def read_json(path: Path) -> dict:
    """A report's JSON document, as `write_json` wrote it, its infinities read back as floats."""
    def numbers(d: dict) -> dict:
        return {k: float(v) if v in ("inf", "-inf", "nan") else v for k, v in d.items()}
    return json.loads(Path(path).read_text(encoding="utf-8"), object_hook=numbers)


def numpy_laplace_seconds(total: int, data: float = 0.0, seed: int = 12345) -> float:
    """Seconds plain numpy takes to compute `data + Laplace(0, 1)` `total` times, 2^20 at a
    time, touching each result: the reference an audit's speed is compared with."""
    import numpy as np
    rng = np.random.default_rng(seed)
    started, sink = time.perf_counter(), 0.0
    for done in range(0, total, 1 << 20):
        sink += (data + rng.laplace(0.0, 1.0, min(total - done, 1 << 20)))[0]
    return time.perf_counter() - started


def table(header: Sequence[str], rows: Iterable[Sequence], align: str | None = None) -> list[str]:
    """The lines of a Markdown table. `align` has one letter per column, "l" (left) or "r"
    (right); by default the first column is left-aligned and the others right-aligned."""
    align = align or "l" + "r" * (len(header) - 1)
    rule = "|" + "".join("---|" if a == "l" else "--:|" for a in align)
    return (["| " + " | ".join(header) + " |", rule]
            + ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows])


def interval(low: float, high: float, digits: int = 4) -> str:
    """An interval as "[low, high]" with `digits` decimals."""
    return f"[{low:.{digits}f}, {high:.{digits}f}]"


def machine_line(meta: dict) -> str:
    """Where and when a report was measured, from `_machine.machine_meta()` (and a
    "load_average_at_end" the script adds when it finishes)."""
    load = f"load average {meta.get('load_average_at_start')} at start"
    if meta.get("load_average_at_end") is not None:
        load += f", {meta['load_average_at_end']} at end"
    return (f"dpverify {meta.get('dpverify')}, measured on {meta.get('date')}. Machine: "
            f"{meta.get('platform')}, {meta.get('cpu_model')}, {meta.get('cpu_count')} logical "
            f"CPUs; {load}; Python {meta.get('python')}, numpy {meta.get('numpy')}.")
