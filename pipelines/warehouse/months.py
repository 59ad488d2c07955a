"""Month selections as every command that takes months reads them: lists, ranges and `all`.

`2024-01`, `2023-11..2024-02`, `2024-01,2024-03`, `2023-01..2023-06,2024-01` and `all` (every
month the warehouse holds). Months come back sorted, each once. Missing months are named once,
with runs of consecutive months collapsed into ranges: `12 of 130 months missing: 2014-03..
2014-08, 2015-01, ...`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pipelines.errors import ChesspipeError
from pipelines.warehouse.layout import month_range, next_month

#: The selection of every month a warehouse holds.
ALL_MONTHS = "all"
#: Runs of missing months named before the rest are only counted, to keep the line short.
RUNS_SHOWN = 6


def select_months(spec: str, *, available: Sequence[str] | None = None) -> list[str]:
    """Return the months a selection names, sorted and each once.

    `available` (the warehouse's months) is what `all` selects; without it `all` is an error.
    """
    text = spec.strip() if isinstance(spec, str) else spec
    if text == ALL_MONTHS:
        if available is None:
            raise ChesspipeError("month selection 'all' needs a warehouse to list its months")
        if not available:
            raise ChesspipeError("month selection 'all': the warehouse holds no months")
        return sorted(set(available))
    if not isinstance(text, str) or not text:
        raise ChesspipeError(
            f"months must be YYYY-MM, YYYY-MM..YYYY-MM, a list or all, got {spec!r}"
        )
    months: set[str] = set()
    for part in text.split(","):
        if not part.strip():
            raise ChesspipeError(f"empty item in the month list {spec!r}")
        months.update(month_range(part.strip()))
    return sorted(months)


def month_runs(months: Iterable[str]) -> list[str]:
    """Collapse sorted months into runs: `2024-01..2024-03` for three in a row, `2024-05` alone."""
    runs: list[list[str]] = []
    for month in sorted(set(months)):
        if runs and next_month(runs[-1][-1]) == month:
            runs[-1].append(month)
        else:
            runs.append([month])
    return [run[0] if len(run) == 1 else f"{run[0]}..{run[-1]}" for run in runs]


def missing_months(wanted: Sequence[str], available: Iterable[str]) -> str | None:
    """Return one short line naming the wanted months not available, or None if none is missing."""
    have = set(available)
    missing = [m for m in wanted if m not in have]
    if not missing:
        return None
    runs = month_runs(missing)
    shown = ", ".join(runs[:RUNS_SHOWN])
    if len(runs) > RUNS_SHOWN:
        shown += f" and {len(runs) - RUNS_SHOWN} more runs"
    return f"{len(missing)} of {len(wanted)} months missing: {shown}"
