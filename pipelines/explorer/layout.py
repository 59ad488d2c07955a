"""Where the explorer's data lives in a warehouse: `explorer/month=YYYY-MM/` with
`games.parquet` and `positions.parquet`, and the month's manifest `explorer/month=YYYY-MM.json`
beside it (published last: a month without one is not there)."""

from __future__ import annotations

from pathlib import Path

from pipelines.warehouse.layout import MONTH_RE


def explorer_dir(warehouse: Path) -> Path:
    return Path(warehouse) / "explorer"


def month_dir(warehouse: Path, month: str) -> Path:
    return explorer_dir(warehouse) / f"month={month}"


def games_file(warehouse: Path, month: str) -> Path:
    return month_dir(warehouse, month) / "games.parquet"


def positions_file(warehouse: Path, month: str) -> Path:
    return month_dir(warehouse, month) / "positions.parquet"


def explorer_manifest_path(warehouse: Path, month: str) -> Path:
    return explorer_dir(warehouse) / f"month={month}.json"


def explorer_months(warehouse: Path) -> list[str]:
    """The months that have the explorer's data, in order (both files and the manifest)."""
    root = explorer_dir(warehouse)
    if not root.is_dir():
        return []
    months = []
    for child in root.iterdir():
        month = child.name[len("month=") :]
        if (
            child.name.startswith("month=")
            and MONTH_RE.fullmatch(month)
            and games_file(warehouse, month).is_file()
            and positions_file(warehouse, month).is_file()
            and explorer_manifest_path(warehouse, month).is_file()
        ):
            months.append(month)
    return sorted(months)
