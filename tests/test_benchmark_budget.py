"""The benchmark script's time budget: the issue asks for the whole DP-Sniper benchmark in under
10 minutes on 2 cores, whatever the machine's speed (scripts/benchmark.py, `row_budget`)."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from benchmark import ROW_OVERRUN, SECONDS_PER_MECHANISM, TOTAL_SECONDS, row_budget  # noqa: E402


def simulate(wanted: list[float], overrun: float = ROW_OVERRUN) -> tuple[float, list[float]]:
    """Rows that would take `wanted` seconds each, stopped at their budget plus an overrun."""
    elapsed, budgets = 0.0, []
    for i, want in enumerate(wanted):
        budget = row_budget(SECONDS_PER_MECHANISM, TOTAL_SECONDS, elapsed, len(wanted) - i)
        budgets.append(budget)
        elapsed += min(want, budget) + (overrun if want > budget else 0.0)
    return elapsed, budgets


def test_a_slow_machine_shortens_the_rows_not_the_run():
    total, budgets = simulate([120.0] * 22)   # every row would use its whole budget
    assert total <= TOTAL_SECONDS + 1e-9 < 600
    assert min(budgets) > 0.9 * TOTAL_SECONDS / 22 - ROW_OVERRUN   # shared out evenly


@pytest.mark.parametrize("overrun", [ROW_OVERRUN, 4.0])
def test_rows_that_overrun_are_paid_for_by_the_rows_after(overrun):
    total, _ = simulate([120.0] * 22, overrun=overrun)
    assert total <= TOTAL_SECONDS + overrun   # at most the last row's overrun past the total


def test_rows_that_finish_early_leave_the_others_their_full_cap():
    # as on a fast machine: the sample-capped rows first, each well under its share
    _, budgets = simulate([8.0] * 11 + [120.0] * 11)
    assert budgets[11:] == [SECONDS_PER_MECHANISM] * 11
