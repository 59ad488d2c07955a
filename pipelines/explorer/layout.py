"""Where the explorer's data lives in a warehouse: `explorer/month=YYYY-MM/` with
`games.parquet` and `positions.parquet`, and the month's manifest `explorer/month=YYYY-MM.json`
beside it (published last: a month without one is not there). The paths themselves are
`pipelines.warehouse.explorer_files`'."""

from __future__ import annotations

from pathlib import Path

from pipelines.warehouse.explorer_files import (
    GAMES_FILE,
    LOOKUP_FILE,
    POSITIONS_FILE,
    explorer_dir,
    explorer_manifest_path,
    explorer_month_dir,
)
from pipelines.warehouse.layout import complete_months

__all__ = [
    "GAMES_FILE",
    "LOOKUP_FILE",
    "POSITIONS_FILE",
    "explorer_dir",
    "explorer_manifest_path",
    "explorer_lookups",
    "explorer_months",
    "games_file",
    "lookup_file",
    "month_dir",
    "positions_file",
]


def month_dir(warehouse: Path, month: str) -> Path:
    return explorer_month_dir(warehouse, month)


def games_file(warehouse: Path, month: str) -> Path:
    return month_dir(warehouse, month) / GAMES_FILE


def positions_file(warehouse: Path, month: str) -> Path:
    return month_dir(warehouse, month) / POSITIONS_FILE


def lookup_file(warehouse: Path, month: str) -> Path:
    return month_dir(warehouse, month) / LOOKUP_FILE


def explorer_months(warehouse: Path) -> list[str]:
    """The months that have the explorer's data, in order (its three files and the
    manifest)."""
    return complete_months(explorer_dir(warehouse), (GAMES_FILE, POSITIONS_FILE, LOOKUP_FILE))


def explorer_lookups(warehouse: Path) -> dict[str, tuple[Path, int | None]]:
    """Each explored month's lookup file and the size its manifest records (None: the manifest
    cannot be read or records none; the server then refuses nothing by size)."""
    from pipelines.explorer.manifest import ExplorerManifest

    found: dict[str, tuple[Path, int | None]] = {}
    for month in explorer_months(warehouse):
        try:
            size = ExplorerManifest.read(explorer_manifest_path(warehouse, month)).lookup_bytes
        except (OSError, ValueError, TypeError):
            size = None
        found[month] = (lookup_file(warehouse, month), size)
    return found
