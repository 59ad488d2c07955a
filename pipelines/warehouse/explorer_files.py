"""Where the explorer's data lives in a warehouse, known below `pipelines.explorer` so that
the warehouse's check can read it: `explorer/month=YYYY-MM/` with `games.parquet`,
`positions.parquet` (months whose moves are kept), `lookup.duckdb`, `counts.bin` and
`records.bin`, the month's manifest `explorer/month=YYYY-MM.json` beside it (published last: a
month without one is not there), and the lock a month's index run holds."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from pipelines.warehouse.layout import month_folder, month_manifest
from pipelines.warehouse.locks import exclusive_lock

#: The files of a month's folder: the games, their positions (published only for months whose
#: moves are kept, which `/masters` reads), and the lookup, counts and records files the server
#: reads (pipelines.explorer.lookup, pipelines.explorer.records).
GAMES_FILE, POSITIONS_FILE = "games.parquet", "positions.parquet"
LOOKUP_FILE, COUNTS_FILE, RECORDS_FILE = "lookup.duckdb", "counts.bin", "records.bin"
#: The manifest's fields that record each file's sha256.
SHA256_FIELDS = {
    GAMES_FILE: "games_sha256",
    POSITIONS_FILE: "positions_sha256",
    LOOKUP_FILE: "lookup_sha256",
    COUNTS_FILE: "counts_sha256",
    RECORDS_FILE: "records_sha256",
}
#: The columns of a month's games.parquet as DuckDB types (schemas.explorer.GAMES_SCHEMA's, known
#: here without pyarrow for the `games` view; tests/test_search.py checks that they agree).
GAMES_COLUMNS = (
    ("seq", "UINTEGER"), ("id", "VARCHAR"), ("event", "VARCHAR"), ("site", "VARCHAR"),
    ("round", "VARCHAR"), ("date", "VARCHAR"), ("white", "VARCHAR"), ("black", "VARCHAR"),
    ("white_elo", "USMALLINT"), ("black_elo", "USMALLINT"), ("white_title", "VARCHAR"),
    ("black_title", "VARCHAR"), ("result", "UTINYINT"), ("speed", "VARCHAR"),
    ("rated", "BOOLEAN"), ("tournament", "BOOLEAN"), ("moves", "VARCHAR"),
    ("time_control", "VARCHAR"), ("eco", "VARCHAR"), ("opening", "VARCHAR"), ("fen", "VARCHAR"),
    ("plies", "USMALLINT"), ("packed", "BLOB"), ("clocks", "INTEGER[]"), ("evals", "SMALLINT[]"),
)  # fmt: skip
#: The files every indexed month has.
MONTH_FILES = (GAMES_FILE, LOOKUP_FILE, COUNTS_FILE, RECORDS_FILE)


def month_file_names(positions_published: bool) -> tuple[str, ...]:
    """The files of a month's folder, by whether its manifest says positions.parquet is
    published (`ExplorerManifest.positions_published`)."""
    return (*MONTH_FILES, POSITIONS_FILE) if positions_published else MONTH_FILES


def recorded_file_names(recorded: Mapping[str, object]) -> tuple[str, ...]:
    """The files of a month's folder by its manifest's fields as read from its JSON (a
    manifest written before `positions_published` was recorded: positions.parquet too)."""
    return month_file_names(recorded.get("positions_published", True) is not False)


def explorer_dir(warehouse: Path) -> Path:
    return Path(warehouse) / "explorer"


def explorer_yearly_dir(warehouse: Path) -> Path:
    """The explorer's compacted years (pipelines.explorer.compact): `year=YYYY/` with
    `lookup.duckdb` and `counts.bin`, and the manifest `year=YYYY.json` beside it."""
    return Path(warehouse) / "explorer_yearly"


#: A compacted year's files and the manifest's fields that record their sha256.
YEARLY_SHA256_FIELDS = {LOOKUP_FILE: "lookup_sha256", COUNTS_FILE: "counts_sha256"}


def explorer_month_dir(warehouse: Path, month: str) -> Path:
    return month_folder(explorer_dir(warehouse), month)


def explorer_manifest_path(warehouse: Path, month: str) -> Path:
    return month_manifest(explorer_dir(warehouse), month)


def explorer_temp_files(warehouse: Path, month: str) -> list[Path]:
    """A month's temporary files (`.NAME.XXXXXXXX.tmp`, and a lookup file's write-ahead log
    `.tmp.wal`): its files' and its manifest's."""
    folder = explorer_month_dir(warehouse, month)
    found = [*folder.glob(".*.tmp"), *folder.glob(".*.tmp.wal")]
    found += explorer_dir(warehouse).glob(f".{explorer_manifest_path(warehouse, month).name}.*.tmp")
    return sorted(found)


@contextmanager
def explorer_lock(warehouse: Path, month: str) -> Iterator[None]:
    """Hold the lock of a month's explorer data (apart from its move statistics' lock),
    failing at once if another run holds it."""
    lock_path = Path(warehouse) / ".locks" / f"explorer-{month}.lock"
    busy = f"the explorer's {month} is being indexed by another run (lock {lock_path}); try later"
    with exclusive_lock(lock_path, busy):
        yield
