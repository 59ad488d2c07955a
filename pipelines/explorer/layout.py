"""Where the explorer's data lives in a warehouse: `explorer/month=YYYY-MM/` with
`games.parquet` and `positions.parquet`, and the month's manifest `explorer/month=YYYY-MM.json`
beside it (published last: a month without one is not there). The paths themselves are
`pipelines.warehouse.explorer_files`'."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from pipelines.warehouse.explorer_files import (
    COUNTS_FILE,
    GAMES_FILE,
    LOOKUP_FILE,
    MONTH_FILES,
    POSITIONS_FILE,
    RECORDS_FILE,
    explorer_dir,
    explorer_manifest_path,
    explorer_month_dir,
)
from pipelines.warehouse.layout import complete_months

__all__ = [
    "COUNTS_FILE",
    "GAMES_FILE",
    "LOOKUP_FILE",
    "MONTH_FILES",
    "POSITIONS_FILE",
    "RECORDS_FILE",
    "ServedFiles",
    "explorer_dir",
    "explorer_manifest_path",
    "explorer_lookups",
    "explorer_months",
    "counts_file",
    "games_file",
    "lookup_file",
    "month_dir",
    "positions_file",
    "records_file",
]


def month_dir(warehouse: Path, month: str) -> Path:
    return explorer_month_dir(warehouse, month)


def games_file(warehouse: Path, month: str) -> Path:
    return month_dir(warehouse, month) / GAMES_FILE


def positions_file(warehouse: Path, month: str) -> Path:
    return month_dir(warehouse, month) / POSITIONS_FILE


def lookup_file(warehouse: Path, month: str) -> Path:
    return month_dir(warehouse, month) / LOOKUP_FILE


def counts_file(warehouse: Path, month: str) -> Path:
    return month_dir(warehouse, month) / COUNTS_FILE


def records_file(warehouse: Path, month: str) -> Path:
    return month_dir(warehouse, month) / RECORDS_FILE


def explorer_months(warehouse: Path) -> list[str]:
    """The months that have the explorer's data, in order (the files every month has, and the
    manifest)."""
    return complete_months(explorer_dir(warehouse), MONTH_FILES)


class ServedFiles(NamedTuple):
    """The files the server reads of a month, and the sizes its manifest records (None: the
    manifest cannot be read or records none)."""

    lookup: Path
    lookup_bytes: int | None
    counts: Path
    counts_bytes: int | None
    records: Path
    records_bytes: int | None


def explorer_lookups(warehouse: Path) -> dict[str, ServedFiles]:
    """The files the server reads of each explored month."""
    from pipelines.explorer.manifest import ExplorerManifest

    found: dict[str, ServedFiles] = {}
    for month in explorer_months(warehouse):
        try:
            manifest = ExplorerManifest.read(explorer_manifest_path(warehouse, month))
            sizes = (manifest.lookup_bytes, manifest.counts_bytes, manifest.records_bytes)
        except (OSError, ValueError, TypeError):
            sizes = (None, None, None)
        found[month] = ServedFiles(
            lookup_file(warehouse, month), sizes[0], counts_file(warehouse, month), sizes[1],
            records_file(warehouse, month), sizes[2],
        )  # fmt: skip
    return found
