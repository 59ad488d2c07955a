"""The warehouse folder: move statistics partitioned by month, manifests, atomic publishing."""

from __future__ import annotations

import hashlib
import json
import os
import re
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipelines.errors import ChesspipeError
from schemas.atomic_files import atomic_path

if TYPE_CHECKING:
    import duckdb

MONTH_RE = re.compile(r"^(\d{4})-(0[1-9]|1[0-2])$")


def check_month(month: str) -> str:
    """Return a YYYY-MM month unchanged, or raise a clear error."""
    if not MONTH_RE.match(month):
        raise ChesspipeError(f"month must be YYYY-MM, got {month!r}")
    return month


def month_range(spec: str) -> list[str]:
    """Return the months of 'YYYY-MM' or 'YYYY-MM..YYYY-MM' (inclusive), in order."""
    first, _, last = spec.partition("..")
    first = check_month(first.strip())
    last = check_month(last.strip()) if last else first
    if last < first:
        raise ChesspipeError(f"month range {spec!r} ends before it starts")
    months = []
    year, month = int(first[:4]), int(first[5:])
    while f"{year:04d}-{month:02d}" <= last:
        months.append(f"{year:04d}-{month:02d}")
        month += 1
        if month == 13:
            year, month = year + 1, 1
    return months


def stats_dir(warehouse: Path) -> Path:
    """Return the folder holding all months of move statistics."""
    return Path(warehouse) / "move_stats"


def partition_dir(warehouse: Path, month: str) -> Path:
    """Return a month's hive partition folder."""
    return stats_dir(warehouse) / f"month={month}"


def partition_file(warehouse: Path, month: str) -> Path:
    """Return the Parquet file of a month's statistics."""
    return partition_dir(warehouse, month) / "part-0.parquet"


def manifest_path(warehouse: Path, month: str) -> Path:
    """Return the path of a month's ingest manifest, beside its partition."""
    return stats_dir(warehouse) / f"month={month}.json"


def staging_dir(warehouse: Path, month: str) -> Path:
    """Return a fresh private folder for a run's temporary files."""
    path = Path(warehouse) / ".staging" / f"{month}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    path.mkdir(parents=True)
    return path


def publish_file(tmp: Path, target: Path) -> None:
    """Move a finished file into place atomically (same filesystem)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    os.replace(tmp, target)


def file_sha256(path: Path) -> str:
    """Return the sha256 of a file's bytes, as hex."""
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def write_json_atomic(path: Path, payload: dict[str, Any]) -> None:
    """Write a JSON document so that it appears whole or not at all."""
    write_bytes_atomic(path, (json.dumps(payload, indent=2, sort_keys=True) + "\n").encode())


def write_bytes_atomic(path: Path, data: bytes, sync: bool = False) -> None:
    """Write a file so that it appears whole or not at all (flushed to disk first if `sync`)."""
    with atomic_path(path) as tmp, open(tmp, "wb") as handle:
        handle.write(data)
        if sync:
            handle.flush()
            os.fsync(handle.fileno())


def read_manifest(warehouse: Path, month: str) -> dict[str, Any] | None:
    """Return a month's ingest manifest, or None if the month was never ingested."""
    path = manifest_path(warehouse, month)
    if not path.exists():
        return None
    result: dict[str, Any] = json.loads(path.read_text())
    return result


def available_months(warehouse: Path) -> list[str]:
    """Return the months that have statistics, in order."""
    root = stats_dir(warehouse)
    if not root.is_dir():
        return []
    months = []
    for child in root.iterdir():
        if (
            child.is_dir()
            and child.name.startswith("month=")
            and (child / "part-0.parquet").exists()
        ):
            months.append(child.name[len("month=") :])
    return sorted(months)


def _sql_path(path: Path) -> str:
    return str(path).replace("'", "''")


def connect(warehouse: Path, memory_limit: str = "2GB") -> duckdb.DuckDBPyConnection:
    """Open DuckDB with a view `move_stats` over every month and the `uci(move)` macro."""
    import duckdb

    con = duckdb.connect()
    con.execute(f"SET memory_limit = '{memory_limit}'")
    con.execute("SET preserve_insertion_order = false")
    con.execute(UCI_MACRO)
    files = stats_dir(Path(warehouse)) / "month=*" / "*.parquet"
    if available_months(Path(warehouse)):
        con.execute(
            "CREATE VIEW move_stats AS SELECT * FROM read_parquet("
            f"'{_sql_path(files)}', hive_partitioning = true, hive_types = {{'month': VARCHAR}})"
        )
    else:
        con.execute(
            "CREATE VIEW move_stats AS SELECT NULL::UBIGINT AS key, NULL::USMALLINT AS move, "
            "NULL::VARCHAR AS speed, NULL::USMALLINT AS rating_band, NULL::UBIGINT AS games, "
            "NULL::UBIGINT AS wins, NULL::UBIGINT AS draws, NULL::UBIGINT AS losses, "
            "NULL::VARCHAR AS month WHERE false"
        )
    return con


#: `uci(move)`: a Polyglot move as UCI text (castling as king takes rook, e1h1).
#: `hexkey(key)`: a Polyglot key as 16 hex digits.
UCI_MACRO = """
CREATE MACRO uci(m) AS
    chr(97 + ((m >> 6) & 7)::INTEGER) || chr(49 + ((m >> 9) & 7)::INTEGER)
    || chr(97 + (m & 7)::INTEGER) || chr(49 + ((m >> 3) & 7)::INTEGER)
    || CASE (m >> 12) & 7
        WHEN 1 THEN 'n' WHEN 2 THEN 'b' WHEN 3 THEN 'r' WHEN 4 THEN 'q' ELSE '' END;
CREATE MACRO hexkey(k) AS lpad(lower(printf('%x', k)), 16, '0');
"""


#: File descriptors of the month locks this process holds.
_HELD_LOCKS: set[int] = set()


def _drop_locks_after_fork() -> None:
    """In a forked child, let go of the parent's lock files; the parent keeps its locks.

    A child holding a copy would keep a month locked after its parent was killed.
    """
    if not _HELD_LOCKS:
        return
    null = os.open(os.devnull, os.O_RDONLY)
    for fd in _HELD_LOCKS:
        os.dup2(null, fd)  # the number stays valid, now naming /dev/null
    os.close(null)
    _HELD_LOCKS.clear()


os.register_at_fork(after_in_child=_drop_locks_after_fork)


@contextmanager
def month_lock(warehouse: Path, month: str) -> Iterator[None]:
    """Hold an exclusive lock on a month, failing at once if another run holds it.

    Forked child processes do not hold it: the lock ends with this process.
    """
    import fcntl

    lock_path = Path(warehouse) / ".locks" / f"{month}.lock"
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "a+") as handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ChesspipeError(
                f"month {month} is being built by another run (lock {lock_path}); try again later"
            ) from None
        _HELD_LOCKS.add(handle.fileno())
        try:
            yield
        finally:
            _HELD_LOCKS.discard(handle.fileno())
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
