"""Where the explorer's data lives in a warehouse: `explorer/month=YYYY-MM/` with
`games.parquet` and `positions.parquet`, and the month's manifest `explorer/month=YYYY-MM.json`
beside it (published last: a month without one is not there)."""

from __future__ import annotations

from pathlib import Path

from pipelines.warehouse.layout import complete_months, month_folder, month_manifest

#: The files of a month's folder.
GAMES_FILE, POSITIONS_FILE = "games.parquet", "positions.parquet"


def explorer_dir(warehouse: Path) -> Path:
    return Path(warehouse) / "explorer"


def month_dir(warehouse: Path, month: str) -> Path:
    return month_folder(explorer_dir(warehouse), month)


def explorer_manifest_path(warehouse: Path, month: str) -> Path:
    return month_manifest(explorer_dir(warehouse), month)


def games_file(warehouse: Path, month: str) -> Path:
    return month_dir(warehouse, month) / GAMES_FILE


def positions_file(warehouse: Path, month: str) -> Path:
    return month_dir(warehouse, month) / POSITIONS_FILE


def explorer_months(warehouse: Path) -> list[str]:
    """The months that have the explorer's data, in order (both files and the manifest)."""
    return complete_months(explorer_dir(warehouse), (GAMES_FILE, POSITIONS_FILE))
