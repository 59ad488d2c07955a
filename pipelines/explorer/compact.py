"""`chesspipe explorer compact`: a year's lookup files merged into one, so that a request over
many months reads a few files, not one per month.

`DIR/explorer_yearly/year=YYYY/lookup.duckdb` holds the `counts`, `positions` and `players` of
the year's explored months (the rows as the months have them, each with its month, sorted as a
month's are), and `DIR/explorer_yearly/year=YYYY.json` records the months merged and each one's
lookup sha256. A month indexed again since no longer matches: the server then reads that month
from its own file and the year's file for the others that still match (each row carries its
month, so since/until answer exactly either way). Game records stay in the months' files.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from pipelines.errors import ChesspipeError
from pipelines.explorer.blocks import BlockReader
from pipelines.explorer.layout import (
    counts_file,
    explorer_manifest_path,
    explorer_months,
    lookup_file,
)
from pipelines.explorer.lookup import (
    COUNTS_FILE,
    LOOKUP_FILE,
    LOOKUP_VERSION,
    database_written,
    write_counts,
)
from pipelines.explorer.manifest import ExplorerManifest
from pipelines.files import file_sha256, json_bytes
from pipelines.warehouse.explorer_files import explorer_yearly_dir
from pipelines.warehouse.locks import exclusive_lock
from pipelines.warehouse.resources import DEFAULT_RESOURCES, QueryResources
from schemas.atomic_files import OutputSet
from schemas.version import __version__

#: Each table of a lookup file and the order its rows are kept in.
TABLES = {
    "positions": "key, month, seq",
    "players": "name, white, month, seq",
}


def yearly_lookup_file(warehouse: Path, year: str) -> Path:
    return explorer_yearly_dir(warehouse) / f"year={year}" / LOOKUP_FILE


def yearly_counts_file(warehouse: Path, year: str) -> Path:
    return explorer_yearly_dir(warehouse) / f"year={year}" / COUNTS_FILE


def yearly_lookup_manifest(warehouse: Path, year: str) -> Path:
    return explorer_yearly_dir(warehouse) / f"year={year}.json"


@dataclass(frozen=True)
class YearlyLookup:
    """A compacted year of the explorer, as its manifest records it."""

    chesspipe_version: str
    year: str
    #: Each month merged and its lookup file's sha256 then.
    months: dict[str, str] = field(default_factory=dict)
    lookup_bytes: int = 0
    lookup_sha256: str = ""
    counts_bytes: int = 0
    counts_sha256: str = ""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def read(cls, path: Path) -> YearlyLookup:
        data = json.loads(Path(path).read_text())
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in data.items() if k in known})


class YearFile(NamedTuple):
    """A compacted year as the server reads it: its file, the size recorded, the months it
    holds and those of them that still match their own files."""

    year: str
    path: Path
    size: int
    counts: Path
    counts_size: int
    months: tuple[str, ...]
    fresh: tuple[str, ...]


def explorer_years(warehouse: Path) -> list[YearFile]:
    """The compacted years of a warehouse's explorer whose manifest reads."""
    found = []
    for path in sorted(explorer_yearly_dir(warehouse).glob("year=*.json")):
        try:
            yearly = YearlyLookup.read(path)
        except (OSError, ValueError, TypeError):
            continue
        target = yearly_lookup_file(warehouse, yearly.year)
        if target.is_file():
            months = tuple(sorted(yearly.months))
            fresh = tuple(fresh_months(warehouse, yearly))
            counts = yearly_counts_file(warehouse, yearly.year)
            found.append(
                YearFile(yearly.year, target, yearly.lookup_bytes, counts, yearly.counts_bytes,
                         months, fresh)
            )  # fmt: skip
    return found


def month_lookup_sha256(warehouse: Path, month: str) -> str | None:
    """A month's lookup sha256 as its explorer manifest records it (None: none recorded)."""
    try:
        return ExplorerManifest.read(explorer_manifest_path(warehouse, month)).lookup_sha256
    except (OSError, ValueError, TypeError):
        return None


def fresh_months(warehouse: Path, yearly: YearlyLookup) -> list[str]:
    """The months of a compacted year that still match their own files."""
    return [
        month
        for month, sha256 in sorted(yearly.months.items())
        if month_lookup_sha256(warehouse, month) == sha256
    ]


def compact_year(
    warehouse: Path, year: str, *, resources: QueryResources = DEFAULT_RESOURCES
) -> YearlyLookup:
    """Merge a year's explored months' lookup files into the year's; return its manifest."""
    warehouse = Path(warehouse)
    months = [m for m in explorer_months(warehouse) if m.startswith(f"{year}-")]
    if not months:
        raise ChesspipeError(f"no month of {year} is indexed for the explorer in {warehouse}")
    target = yearly_lookup_file(warehouse, year)
    counts_target = yearly_counts_file(warehouse, year)
    manifest_path = yearly_lookup_manifest(warehouse, year)
    lock = Path(warehouse) / ".locks" / f"explorer-year-{year}.lock"
    busy = f"the explorer's {year} is being compacted by another run (lock {lock}); try later"
    with exclusive_lock(lock, busy):
        for leftover in target.parent.glob(".*.tmp*"):
            leftover.unlink()
        return _compact(warehouse, year, months, (target, counts_target, manifest_path),
                        resources)  # fmt: skip


def _compact(
    warehouse: Path,
    year: str,
    months: list[str],
    targets: tuple[Path, Path, Path],
    resources: QueryResources,
) -> YearlyLookup:
    recorded = {m: month_lookup_sha256(warehouse, m) for m in months}
    target, counts_target, manifest_path = targets
    with OutputSet(*targets) as output:
        staged, counts_staged = output.path(target), output.path(counts_target)
        with database_written(staged):
            _write_year(warehouse, year, months, resources, staged, counts_staged)
        for month in months:  # each month unchanged while it was read
            if month_lookup_sha256(warehouse, month) != recorded[month]:
                raise ChesspipeError(
                    f"explorer month {month} was indexed again while {year} was compacted; "
                    "compact again"
                )
        manifest = YearlyLookup(
            __version__,
            year,
            {m: s for m, s in recorded.items() if s is not None},
            staged.stat().st_size,
            file_sha256(staged),
            counts_staged.stat().st_size,
            file_sha256(counts_staged),
        )
        output.path(manifest_path).write_bytes(json_bytes(manifest.to_json()))
    return manifest


def _write_year(
    warehouse: Path,
    year: str,
    months: list[str],
    resources: QueryResources,
    staged: Path,
    counts_staged: Path,
) -> None:
    """Write a year's lookup file at `staged` and its counts file at `counts_staged` from its
    months' files."""
    con = resources.connect(str(staged))
    try:
        for number, month in enumerate(months):
            path = str(lookup_file(warehouse, month)).replace("'", "''")
            con.execute(f"ATTACH '{path}' AS m{number} (READ_ONLY)")
        con.execute(f"CREATE TABLE meta AS SELECT {LOOKUP_VERSION} AS version, $year AS year",
                    {"year": year})  # fmt: skip
        for table, order in TABLES.items():
            union = " UNION ALL ".join(f"SELECT * FROM m{i}.{table}" for i in range(len(months)))
            con.execute(f"CREATE TABLE {table} AS SELECT * FROM ({union}) ORDER BY {order}")
        readers = [BlockReader(counts_file(warehouse, month), "key") for month in months]
        try:
            for number, reader in enumerate(readers):
                con.register(f"counts{number}", reader.batches())
            union = " UNION ALL ".join(f"SELECT * FROM counts{i}" for i in range(len(months)))
            write_counts(con, f"SELECT * FROM ({union})", counts_staged)
        finally:
            for reader in readers:
                reader.close()
        con.execute("CHECKPOINT")
    finally:
        con.close()
