"""Compacted years: a year's twelve months of move statistics summed into one sorted file.

`DIR/move_stats_yearly/year=YYYY/part-0.parquet` holds the twelve months' rows summed over the
months (MOVE_STATS_SCHEMA, sorted by key, in row groups like the months'; a row's first-play
rank is the least over the months of its month's rank with the month in the top bits,
schemas.first_play, so that the year's ranks order its months as a book over them does, and
null when a month was ingested before the ranks were kept), and
`DIR/move_stats_yearly/year=YYYY.json` records what it was made from: each month's partition
sha256 (its manifest's output_sha256) and size. A month re-ingested since no longer matches, and
the yearly file is stale: readers then go back to the months. The `move_stats` view never reads
this folder (no double counting).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

from pipelines.errors import ChesspipeError
from pipelines.files import file_sha256, write_json
from pipelines.progress import bar
from pipelines.warehouse.integrity import Expected, recorded_sha256
from pipelines.warehouse.layout import (
    PARQUET_OPTIONS,
    ROW_GROUP_ROWS,
    available_months,
    month_range,
    partition_file,
    sql_paths,
    write_row_groups,
)
from pipelines.warehouse.locks import month_lock
from pipelines.warehouse.resources import DEFAULT_RESOURCES, QueryResources
from schemas import first_play
from schemas.atomic_files import OutputSet
from schemas.version import __version__


def yearly_dir(warehouse: Path) -> Path:
    """Return the folder of the compacted years."""
    return Path(warehouse) / "move_stats_yearly"


def yearly_file(warehouse: Path, year: str) -> Path:
    """Return the Parquet file of a compacted year."""
    return yearly_dir(warehouse) / f"year={year}" / "part-0.parquet"


def yearly_manifest_path(warehouse: Path, year: str) -> Path:
    """Return the manifest of a compacted year, beside its folder."""
    return yearly_dir(warehouse) / f"year={year}.json"


def year_months(year: str) -> list[str]:
    """Return a year's twelve months; the year must be four digits."""
    if not isinstance(year, str) or len(year) != 4 or not year.isascii() or not year.isdigit():
        raise ChesspipeError(f"year must be YYYY, got {year!r}")
    return month_range(f"{year}-01..{year}-12")


@dataclass(frozen=True)
class MonthSource:
    """A month's partition as a compaction read it."""

    sha256: str
    size: int


@dataclass(frozen=True)
class YearlyManifest:
    """A compacted year, as written to DIR/move_stats_yearly/year=YYYY.json."""

    chesspipe_version: str
    year: str
    #: Each month's partition at compaction: its manifest's output_sha256 and its size.
    months: dict[str, MonthSource]
    rows: int
    #: Rows of the twelve months together, before summing.
    month_rows: int
    #: The yearly file, relative to the warehouse.
    output: str
    output_sha256: str
    output_size: int
    seconds: float
    finished_at: str

    def to_json(self) -> dict[str, Any]:
        """Return the manifest as plain JSON values."""
        return asdict(self)

    @classmethod
    def read(cls, path: Path) -> YearlyManifest:
        """Read a yearly manifest; a file that is not one raises ValueError."""
        data = json.loads(Path(path).read_text())
        try:
            data["months"] = {m: MonthSource(**s) for m, s in data["months"].items()}
            return cls(**data)
        except (KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"{path} is not a yearly manifest ({exc})") from None


def month_source(warehouse: Path, month: str) -> MonthSource | None:
    """Return a month's partition as its manifest records it, or None without both."""
    recorded = recorded_sha256(warehouse, month)
    try:
        size = partition_file(warehouse, month).stat().st_size
    except OSError:
        return None
    return MonthSource(recorded, size) if recorded is not None else None


def stale_months(warehouse: Path, manifest: YearlyManifest) -> list[str]:
    """Return the months whose partition no longer matches what a compaction read.

    Compares each month's manifest output_sha256 and partition size with the yearly manifest's
    (no partition is hashed: a month replaced by an ingest gets a new manifest).
    """
    return [
        month
        for month in year_months(manifest.year)
        if month_source(warehouse, month) != manifest.months.get(month)
    ]


@dataclass(frozen=True)
class YearState:
    """Whether a compacted year can stand in for its twelve months."""

    year: str
    fresh: bool
    #: Why not, in one line ("" when fresh).
    reason: str = ""


def year_state(warehouse: Path, year: str) -> YearState | None:
    """Return a compacted year's state, or None if the year was never compacted."""
    path = yearly_manifest_path(warehouse, year)
    part = yearly_file(warehouse, year)
    if not path.exists() and not part.exists():
        return None
    try:
        manifest = YearlyManifest.read(path)
    except (OSError, ValueError) as exc:
        return YearState(year, False, f"compacted year {year} has no readable manifest ({exc})")
    try:
        size = part.stat().st_size
    except OSError:
        size = None
    if size != manifest.output_size:
        return YearState(year, False, f"compacted year {year}: {part} does not match its manifest")
    stale = stale_months(warehouse, manifest)
    if stale:
        return YearState(
            year,
            False,
            f"compacted year {year} is stale ({', '.join(stale)} changed since); compact it again",
        )
    return YearState(year, True)


def year_expected(warehouse: Path, year: str) -> Expected:
    """A compacted year's file and the sha256 its manifest records (None: no readable
    manifest, which fresh_yearly_files never chooses)."""
    try:
        recorded: str | None = YearlyManifest.read(
            yearly_manifest_path(warehouse, year)
        ).output_sha256
    except (OSError, ValueError):
        recorded = None
    return Expected(f"compacted year {year}", yearly_file(warehouse, year), recorded)


def fresh_yearly_files(warehouse: Path) -> list[Path]:
    """Return the files of the compacted years that still match their months, by year."""
    root = yearly_dir(warehouse)
    if not root.is_dir():
        return []
    years = sorted(p.name[len("year=") :] for p in root.glob("year=*") if p.is_dir())
    return [
        yearly_file(warehouse, year)
        for year in years
        if (state := _year_state_or_none(warehouse, year)) is not None and state.fresh
    ]


def _year_state_or_none(warehouse: Path, year: str) -> YearState | None:
    try:
        return year_state(warehouse, year)
    except ChesspipeError:  # a folder whose name is no year
        return None


@dataclass(frozen=True)
class YearlyChoice:
    """Which compacted years stand in for months of a selection, and which were stale."""

    years: tuple[str, ...]
    #: The months still read from their partitions.
    months: tuple[str, ...]
    #: One line per compacted year left out because it no longer matches its months.
    notes: tuple[str, ...]


def choose_years(warehouse: Path, months: list[str]) -> YearlyChoice:
    """Return the fresh compacted years whose twelve months are all in `months`."""
    chosen = set(months)
    years: list[str] = []
    notes: list[str] = []
    for year in sorted({m[:4] for m in months}):
        if not set(year_months(year)) <= chosen:
            continue
        state = year_state(warehouse, year)
        if state is None:
            continue
        if state.fresh:
            years.append(year)
        else:
            notes.append(state.reason)
    rest = tuple(m for m in months if m[:4] not in years)
    return YearlyChoice(tuple(years), rest, tuple(notes))


#: The yearly file's rows: the months' rows summed over the months, sorted by key.
_SUMMED = """
    SELECT key, move, speed, rating_band, rating_group,
        sum(games)::UBIGINT AS games, sum(wins)::UBIGINT AS wins, sum(draws)::UBIGINT AS draws,
        sum(losses)::UBIGINT AS losses, sum(rating_sum)::UBIGINT AS rating_sum,
        {first_play} AS first_play, {white_to_move} AS white_to_move
    FROM read_parquet(
        {files}, hive_partitioning = true, hive_types = {{'month': VARCHAR}},
        union_by_name = true
    )
    GROUP BY key, move, speed, rating_band, rating_group
    ORDER BY key, move, speed, rating_band, rating_group
"""

#: A year's first-play rank: the least of its months' with the month in the top bits.
_YEAR_FIRST_PLAY = (
    f"min(((right(month, 2)::UBIGINT - 1) << {first_play.MONTH_SHIFT}) | first_play)::UBIGINT"
)


class CompactProgress(NamedTuple):
    """How far a compaction is: its stage (`checking` the months' files against their
    manifests, `summing` them in DuckDB, `writing` the year's rows), how far in that stage
    (months checked of twelve, DuckDB's percent, rows written), seconds since it started."""

    stage: str
    done: float
    seconds: float
    finished: bool = False


def format_compact_progress(report: CompactProgress) -> str:
    """One line: a bar over the stages (checking a tenth, summing most, writing the rest)."""
    if report.stage == "checking":
        fraction, said = 0.1 * report.done / 12, f"checking {int(report.done)} of 12 months"
    elif report.stage == "summing":
        fraction, said = 0.1 + 0.8 * report.done / 100, f"summing {report.done:.0f}%"
    else:
        fraction, said = (1.0 if report.finished else 0.9), f"writing {int(report.done):,} rows"
    seconds = int(report.seconds)
    return f"{bar(fraction)} {said}  {seconds // 60}:{seconds % 60:02d}"


def _write_summed(
    files: list[Path],
    target: Path,
    *,
    resources: QueryResources,
    progress: Callable[[str, float], None] | None = None,
) -> tuple[int, int]:
    """Write the summed rows of month files to target; return (rows written, rows read).
    `progress` hears DuckDB's percent while it sums, then the rows written."""
    import pyarrow.parquet as pq

    from schemas.move_stats import MOVE_STATS_SCHEMA

    listed = sql_paths(files)
    month_rows = sum(pq.ParquetFile(f).metadata.num_rows for f in files)
    # Ranks only where every month has them: one month without would leave its moves unranked.
    names = [set(pq.read_schema(f).names) for f in files]
    rank = _YEAR_FIRST_PLAY if all("first_play" in n for n in names) else "NULL::UBIGINT"
    # Likewise the side to move (one per key: any month's).
    sided = all("white_to_move" in n for n in names)
    side = "bool_and(white_to_move)" if sided else "NULL::BOOLEAN"
    con = resources.connect()
    summed = threading.Event()

    def poll() -> None:  # DuckDB answers query_progress from another thread mid-query
        assert progress is not None
        while not summed.wait(0.25):
            percent = con.query_progress()
            if percent >= 0:
                progress("summing", percent)

    written = 0

    def cast(table: Any) -> Any:
        nonlocal written
        stats = _as_stats(table, MOVE_STATS_SCHEMA)
        written += table.num_rows
        if progress is not None:
            progress("writing", written)
        return stats

    try:
        poller = None
        if progress is not None:
            con.execute("SET enable_progress_bar = true; SET enable_progress_bar_print = false")
            poller = threading.Thread(target=poll, daemon=True)
            poller.start()
        try:
            query = _SUMMED.format(files=listed, first_play=rank, white_to_move=side)
            reader = con.sql(query).to_arrow_reader(ROW_GROUP_ROWS)
        finally:
            summed.set()
            if poller is not None:
                poller.join()
        with pq.ParquetWriter(target, MOVE_STATS_SCHEMA, **PARQUET_OPTIONS) as writer:
            rows = write_row_groups(reader, writer, cast)
    finally:
        con.close()
    return rows, int(month_rows)


def _as_stats(table: Any, schema: Any) -> Any:
    """Cast summed rows to MOVE_STATS_SCHEMA; months without rating_group or rating_sum cannot
    be (first_play and white_to_move may be null: months ingested before them)."""
    optional = ("first_play", "white_to_move")
    if any(table[name].null_count for name in table.column_names if name not in optional):
        raise ChesspipeError(
            "a month lacks rating_group or rating_sum (ingested by an older chesspipe); "
            "re-ingest it before compacting its year"
        )
    return table.cast(schema)


@dataclass(frozen=True)
class CompactSettings:
    """How a year is compacted."""

    #: DuckDB's memory limit while summing (it spills to disk past it) and where it spills.
    resources: QueryResources = DEFAULT_RESOURCES


def compact_year(
    warehouse: Path,
    year: str,
    *,
    settings: CompactSettings | None = None,
    progress: Callable[[CompactProgress], None] | None = None,
) -> YearlyManifest:
    """Sum a year's twelve months into its compacted file and manifest; return the manifest.

    All twelve months must be in the warehouse; their locks are held while they are read, so
    that no month is re-ingested half-way through (a month being built fails the compaction at
    once). The file and then its manifest appear atomically; a reader checks the file against
    the manifest, and the manifest against the months. `progress` hears how far it is.
    """
    import time

    settings = settings or CompactSettings()
    warehouse = Path(warehouse)
    months = year_months(year)
    started = time.monotonic()

    def report(stage: str, done: float, finished: bool = False) -> None:
        if progress is not None:
            progress(CompactProgress(stage, done, time.monotonic() - started, finished))

    have = set(available_months(warehouse))
    missing = [m for m in months if m not in have]
    if missing:
        raise ChesspipeError(
            f"cannot compact {year}: month{'s' if len(missing) > 1 else ''} "
            f"{', '.join(missing)} not in {warehouse} (all twelve are needed)"
        )
    with ExitStack() as locks:
        for month in months:
            locks.enter_context(month_lock(warehouse, month, clean=False))
        sources: dict[str, MonthSource] = {}
        for checked, month in enumerate(months):
            report("checking", checked)
            source = month_source(warehouse, month)
            part = partition_file(warehouse, month)
            if source is None or source.sha256 != file_sha256(part):
                raise ChesspipeError(
                    f"cannot compact {year}: {part} does not match its manifest; re-ingest {month}"
                )
            sources[month] = source
        target = yearly_file(warehouse, year)
        manifest_file = yearly_manifest_path(warehouse, year)
        with OutputSet(target, manifest_file) as outputs:  # the year's file, then its manifest
            tmp = outputs.path(target)
            rows, month_rows = _write_summed(
                [partition_file(warehouse, m) for m in months],
                tmp,
                resources=settings.resources,
                progress=report if progress is not None else None,
            )
            manifest = YearlyManifest(
                chesspipe_version=__version__,
                year=year,
                months=sources,
                rows=rows,
                month_rows=month_rows,
                output=str(target.relative_to(warehouse)),
                output_sha256=file_sha256(tmp),
                output_size=tmp.stat().st_size,
                seconds=round(time.monotonic() - started, 3),
                finished_at=datetime.now(UTC).isoformat(timespec="seconds"),
            )
            write_json(outputs.path(manifest_file), manifest.to_json())
    report("writing", rows, finished=True)
    return manifest
