"""The warehouse folder: move statistics partitioned by month, manifests, the files' row groups,
atomic publishing."""

from __future__ import annotations

import json
import os
import re
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pipelines.errors import ChesspipeError

#: ASCII digits only (\d would take "２０２１"); fullmatch, so no trailing newline either.
MONTH_RE = re.compile(r"([0-9]{4})-(0[1-9]|1[0-2])")


#: Rows per row group of a month's (or a compacted year's) file: the file is sorted by key, so
#: a query for a position reads the one row group whose key range holds it (DuckDB skips the
#: others by their min/max statistics).
ROW_GROUP_ROWS = 1 << 17

#: How statistics files are written: the few-valued columns get dictionaries; the keys (sorted,
#: so their differences are small) and the counts (mostly small numbers) are delta-encoded
#: before zstd, which writes a month in about 0.7 of the time plain values took, in a file 17%
#: smaller, that DuckDB reads as fast or faster (measured on a month of 1 million rows). The
#: first-play ranks too: in no order within a key, they still make a file 4% smaller than as
#: plain values, a little faster (the 2013 sample's month, every game kept).
PARQUET_OPTIONS: dict[str, Any] = {
    "compression": "zstd",
    "use_dictionary": ["move", "speed", "rating_band", "rating_group"],
    "column_encoding": {
        name: "DELTA_BINARY_PACKED"
        for name in ("key", "games", "wins", "draws", "losses", "rating_sum", "first_play")
    },
}


def write_row_groups(reader: Any, writer: Any, cast: Callable[[Any], Any]) -> int:
    """Write the batches of an Arrow record batch reader through a Parquet writer in row
    groups of ROW_GROUP_ROWS rows (the last one shorter; a single empty one when there is no
    row), each table cast by `cast` first; return the rows written."""
    import pyarrow as pa

    rows = 0
    pending: list[pa.RecordBatch] = []
    pending_rows = 0
    for batch in reader:
        pending.append(batch)
        pending_rows += batch.num_rows
        while pending_rows >= ROW_GROUP_ROWS:
            table = pa.Table.from_batches(pending)
            head, tail = table.slice(0, ROW_GROUP_ROWS), table.slice(ROW_GROUP_ROWS)
            writer.write_table(cast(head))
            rows += head.num_rows
            pending, pending_rows = tail.to_batches(), tail.num_rows
    if pending_rows or rows == 0:
        writer.write_table(cast(pa.Table.from_batches(pending, schema=reader.schema)))
        rows += pending_rows
    return rows


def check_month(month: str) -> str:
    """Return a YYYY-MM month unchanged, or raise a clear error."""
    if not isinstance(month, str) or not MONTH_RE.fullmatch(month):
        raise ChesspipeError(f"month must be YYYY-MM, got {month!r}")
    return month


def month_range(spec: str) -> list[str]:
    """Return the months of 'YYYY-MM' or 'YYYY-MM..YYYY-MM' (inclusive), in order.

    A bad range is quoted whole in the error (`../x`, `2024-01..`), as it was given.
    """
    first, dots, last = spec.partition("..")
    try:
        first = check_month(first.strip())
        last = check_month(last.strip()) if dots else first
    except ChesspipeError:
        if not dots:
            raise
        raise ChesspipeError(f"month range must be YYYY-MM..YYYY-MM, got {spec!r}") from None
    if last < first:
        raise ChesspipeError(f"month range {spec!r} ends before it starts")
    months = [first]
    while months[-1] < last:
        months.append(next_month(months[-1]))
    return months


def next_month(month: str) -> str:
    """Return the month after a 'YYYY-MM' month."""
    year, number = int(month[:4]), int(month[5:])
    return f"{year + number // 12:04d}-{number % 12 + 1:02d}"


def stats_dir(warehouse: Path) -> Path:
    """Return the folder holding all months of move statistics."""
    return Path(warehouse) / "move_stats"


def month_folder(root: Path, month: str) -> Path:
    """Return a month's folder among the months of `root`: `root/month=YYYY-MM/`."""
    return Path(root) / f"month={month}"


def month_manifest(root: Path, month: str) -> Path:
    """Return the manifest beside a month's folder among the months of `root`:
    `root/month=YYYY-MM.json`."""
    return Path(root) / f"month={month}.json"


def partition_dir(warehouse: Path, month: str) -> Path:
    """Return a month's hive partition folder."""
    return month_folder(stats_dir(warehouse), month)


def partition_file(warehouse: Path, month: str) -> Path:
    """Return the Parquet file of a month's statistics."""
    return partition_dir(warehouse, month) / "part-0.parquet"


def manifest_path(warehouse: Path, month: str) -> Path:
    """Return the path of a month's ingest manifest, beside its partition."""
    return month_manifest(stats_dir(warehouse), month)


def recorded_plies(warehouse: Path, month: str) -> int | None:
    """Return the plies a month's manifest says were counted (None: no readable one)."""
    try:
        plies = json.loads(manifest_path(warehouse, month).read_text())["settings"]["plies"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return plies if isinstance(plies, int) else None


#: The folders of a warehouse that hold its data, each written only by the runs that own it
#: (ingest, explorer index and compact, evals, warehouse compact) and the runs' staging folder.
DATA_FOLDERS = (
    "move_stats", "move_stats_yearly", "explorer", "explorer_yearly", "evals", ".staging",
)  # fmt: skip


def _holds_data(folder: Path) -> bool:
    """Whether a folder named as one of DATA_FOLDERS holds what its runs write there: months,
    years, evaluation parts, runs' staging folders."""
    try:
        names = [child.name for child in folder.iterdir()]
    except OSError:
        return False
    if folder.name == ".staging":
        return any(MONTH_RE.match(name) for name in names)
    return any(
        name.startswith(("month=", "year=")) or re.fullmatch(r"part-[0-9]{8}T.*\.parquet", name)
        for name in names
    )


def data_folder_holding(path: Path) -> Path | None:
    """The data folder of a warehouse (DATA_FOLDERS: `move_stats/`, `explorer/`, ...) that
    `path` lies in or is, after symlinks; None when it lies in none."""
    target = Path(os.path.realpath(path))
    for folder in (target, *target.parents):
        if folder.name in DATA_FOLDERS and folder.is_dir() and _holds_data(folder):
            return folder
    return None


def staging_dir(warehouse: Path, month: str) -> Path:
    """Return a fresh private folder for a run's temporary files."""
    path = Path(warehouse) / ".staging" / f"{month}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    path.mkdir(parents=True)
    return path


def available_months(warehouse: Path) -> list[str]:
    """Return the months that have statistics, in order: folders named `month=YYYY-MM` that
    hold a `part-0.parquet` file, with the month's manifest beside them (ingest publishes the
    manifest last: a partition without one is a run that did not finish, which `warehouse
    check` reports; a `month=2021-10.bak` is no month)."""
    return complete_months(stats_dir(warehouse), ("part-0.parquet",))


def complete_months(root: Path, files: tuple[str, ...]) -> list[str]:
    """Return the months of `root` whose folder (`month_folder`) holds each of `files` and
    whose manifest (`month_manifest`) is beside it, in order."""
    if not root.is_dir():
        return []
    months = []
    for child in root.iterdir():
        month = child.name[len("month=") :]
        if (
            child.name.startswith("month=")
            and MONTH_RE.fullmatch(month)
            and all((child / name).is_file() for name in files)
            and month_manifest(root, month).is_file()
        ):
            months.append(month)
    return sorted(months)


#: What DuckDB's file readers take as a pattern in a path, whatever the quoting.
GLOB_CHARACTERS = frozenset("*?[")


def sql_paths(paths: Sequence[Path | str]) -> str:
    """Return paths as a DuckDB list of string literals, for its file readers.

    DuckDB reads `*`, `?` and `[` in a path as a pattern, with no escape: `wh?q` would also
    read `whXq`. A path with one is refused (ChesspipeError) rather than read as a pattern.
    """
    for path in paths:
        check_no_pattern(path)
    return sql_list([str(path) for path in paths])


def check_no_pattern(path: Path | str) -> None:
    """Refuse (ChesspipeError) a path with `*`, `?` or `[`, which DuckDB's readers take as a
    pattern: a warehouse there could be written and never read, so it is refused first."""
    found = sorted(GLOB_CHARACTERS.intersection(str(path)))
    if found:
        raise ChesspipeError(
            f"{path}: DuckDB reads {' '.join(found)} in a path as a pattern (it would read "
            "other files too); give a path without * ? ["
        )


def sql_list(texts: list[str]) -> str:
    """Return texts as a DuckDB list of string literals (quotes doubled)."""
    return "[" + ", ".join("'" + text.replace("'", "''") + "'" for text in texts) + "]"
