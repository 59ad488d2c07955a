"""Where the explorer's data lives in a warehouse: `explorer/month=YYYY-MM/` with
`games.parquet` and `positions.parquet`, and the month's manifest `explorer/month=YYYY-MM.json`
beside it (published last: a month without one is not there). The paths themselves are
`pipelines.warehouse.explorer_files`'."""

from __future__ import annotations

from pathlib import Path

from pipelines.warehouse.explorer_files import (
    GAMES_FILE,
    POSITIONS_FILE,
    explorer_dir,
    explorer_manifest_path,
    explorer_month_dir,
)
from pipelines.warehouse.layout import complete_months

__all__ = [
    "GAMES_FILE",
    "POSITIONS_FILE",
    "explorer_dir",
    "explorer_manifest_path",
    "explorer_months",
    "games_file",
    "month_dir",
    "positions_file",
]


def month_dir(warehouse: Path, month: str) -> Path:
    return explorer_month_dir(warehouse, month)


def games_file(warehouse: Path, month: str) -> Path:
    return month_dir(warehouse, month) / GAMES_FILE


def positions_file(warehouse: Path, month: str) -> Path:
    return month_dir(warehouse, month) / POSITIONS_FILE


def explorer_months(warehouse: Path) -> list[str]:
    """The months that have the explorer's data, in order (both files and the manifest)."""
    return complete_months(explorer_dir(warehouse), (GAMES_FILE, POSITIONS_FILE))
