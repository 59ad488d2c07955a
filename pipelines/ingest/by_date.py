"""Ingest by date: each game of a source into the month its Date tag names.

The source is read once, in this process. Each game goes to its month (pipelines.ingest.dates:
a year-only date to the year's January, no year to `UNDATED`), whose own counts the filter and
the counting keep; with dedupe, a main line repeating one of any month before it in the source
is dropped as duplicate. Then each month of the years found is published as a run of one month
publishes it (its partition, then its manifest, all or none, under the month's lock); every
month found is locked and checked first (the source's sha256, a shrinking replacement), so that
a refused run publishes none. The opening tree is shared: each manifest gives the run's hits
and misses.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterable
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from pipelines.errors import ChesspipeError
from pipelines.games.allocator import reuse_large_buffers
from pipelines.games.decompress import ReadAhead, decompressed_chunks
from pipelines.games.dedupe import MainLines
from pipelines.games.game_filter import NothingKept, ScanStats, filter_game
from pipelines.games.scan import split_games
from pipelines.ingest.count_runs import RunCounter
from pipelines.ingest.dates import UNDATED, game_month
from pipelines.ingest.job import Counted, Job
from pipelines.ingest.options import Download, RunPolicy, Runtime, Tuning
from pipelines.ingest.run import (
    check_replacement,
    check_scan,
    publish_month,
    source_sha256,
    until_corrupt,
)
from pipelines.ingest.settings import IngestSettings
from pipelines.sources.open import OpenSource, Source, open_source
from pipelines.warehouse.layout import month_range, staging_dir
from pipelines.warehouse.leftovers import pid_alive, pid_of, staging_root
from pipelines.warehouse.locks import month_lock

if TYPE_CHECKING:
    from collections.abc import Iterator

    from pipelines.ingest.counting import OpeningTree
    from pipelines.ingest.manifest import IngestManifest

#: The name a run by date stages its files under (`.staging/dated-PID-XXXXXXXX/`).
STAGING_NAME = "dated"


class DatedIngest(NamedTuple):
    """What an ingest by date did: the months it published, and the whole run's counts."""

    #: The months published, in month order.
    months: tuple[IngestManifest, ...]
    #: Months left unpublished (UNDATED, when none of its games was kept): their games read.
    left_out: dict[str, int]
    games_read: int
    games_kept: int
    #: Dropped games by reason, reasons sorted.
    games_dropped: dict[str, int]


@dataclass
class _Month:
    """A month's games as the run reads them: their counts, and their counter."""

    stats: ScanStats
    counter: RunCounter
    runs: list[Path] = field(default_factory=list)


def ingest_by_date(
    source: Source,
    warehouse: Path,
    settings: IngestSettings | None = None,
    *,
    policy: RunPolicy | None = None,
    download: Download | None = None,
    runtime: Runtime | None = None,
    tuning: Tuning | None = None,
) -> DatedIngest:
    """Stream a source's games into the move statistics of the months their dates name.

    The options are ingest's (pipelines.ingest.run.ingest), but for those of a run read
    elsewhere or writing one month's kept games (`runtime.executor`, `policy.write_kept`),
    refused. A run that keeps no game raises NothingKept, unless `policy.allow_empty`. A month
    whose games were all dropped is published empty, as is every month of the years from the
    first to the last found (dated_span), so that a book over any range of those years finds
    its months; `UNDATED` is published when it kept a game (or with `allow_empty`).
    """
    policy = policy or RunPolicy()
    download = download or Download()
    runtime = runtime or Runtime()
    tuning = tuning or Tuning()
    if runtime.pool is not None:
        runtime.pool.close()  # the source is read here alone
    if policy.write_kept is not None:
        raise ChesspipeError("the kept games are written by a run of one month, not by date")
    if runtime.executor is not None:
        raise ChesspipeError("a run by date reads its source in one process, not on an executor")
    settings = settings or IngestSettings()
    warehouse = Path(warehouse)
    http = dict(download.http_options)
    if download.expected_sha256 is not None:
        http["expected_sha256"] = download.expected_sha256
    reuse_large_buffers()
    started = time.monotonic()
    with open_source(source, settings.rules.variant, **http) as opened:
        _remove_dead_staging(warehouse)
        staging = staging_dir(warehouse, STAGING_NAME)
        try:
            job = Job(
                source=source,
                month=STAGING_NAME,  # no month of its own: each month's job names its own
                warehouse=warehouse,
                settings=settings,
                staging=staging,
                flush_rows=tuning.flush_rows,
                in_memory_rows=tuning.in_memory_rows,
                progress=runtime.progress,
                started=started,
                keep_partial=policy.keep_partial,
            )
            return _read_and_publish(opened, job, policy, download.expected_sha256)
        finally:
            shutil.rmtree(staging, ignore_errors=True)


def _remove_dead_staging(warehouse: Path) -> None:
    """Remove the staging folders of runs by date whose process is gone (no lock guards them:
    a live run's pid, this process's too, spares its folder)."""
    for folder in staging_root(warehouse).glob(f"{STAGING_NAME}-*"):
        pid = pid_of(folder.name, STAGING_NAME)
        if pid is not None and pid != os.getpid() and not pid_alive(pid):
            shutil.rmtree(folder, ignore_errors=True)


def _read_and_publish(
    opened: OpenSource, job: Job, policy: RunPolicy, expected_sha256: str | None
) -> DatedIngest:
    """Route the source's games to their months, then publish the months that kept games."""
    scan = ScanStats()  # what the scan itself counts: bytes, oversized and cut games
    errors: list[str] = []
    months = _route(opened, job, scan, errors)
    total = _total(scan, months.values())
    error = check_scan(opened.name, total, errors[0] if errors else None, job.keep_partial)
    if job.progress is not None:
        elapsed = time.monotonic() - job.started
        job.progress(total.progress(opened.reader.bytes_read, opened.size, elapsed, done=True))
    source_sha256(opened, expected_sha256, hashed=True)
    if total.games_kept == 0 and not policy.allow_empty:
        raise NothingKept(opened.name, total, job.settings.rules)
    chosen = dated_span(months)
    for name in chosen:
        if name not in months:  # a month no game's date names: published empty
            empty = ScanStats()
            months[name] = _Month(empty, RunCounter(job.settings, empty, job.staging))
    undated = months.get(UNDATED)
    if undated is not None and (undated.stats.games_kept or policy.allow_empty):
        chosen.insert(0, UNDATED)
    published = _publish(opened, job, months, chosen, policy, expected_sha256, error)
    return DatedIngest(
        months=tuple(published),
        left_out={m: months[m].stats.games_read for m in sorted(set(months) - set(chosen))},
        games_read=total.games_read,
        games_kept=total.games_kept,
        games_dropped=dict(sorted(total.dropped.items())),
    )


def dated_span(months: Iterable[str]) -> list[str]:
    """Every month of the years from the first to the last of `months` (UNDATED aside), so
    that any range of them a book chooses is in the warehouse."""
    years = sorted({month[:4] for month in months if month != UNDATED})
    return month_range(f"{years[0]}-01..{years[-1]}-12") if years else []


def _route(opened: OpenSource, job: Job, scan: ScanStats, errors: list[str]) -> dict[str, _Month]:
    """Read the source's games in order, each filtered and counted in its month's counts."""
    settings = job.settings
    lines = MainLines() if settings.dedupe else None
    tree: OpeningTree | None = None
    months: dict[str, _Month] = {}
    last_report = 0.0
    for game in _games(opened, scan, errors, keep_partial=job.keep_partial):
        name = game_month(game)
        month = months.get(name)
        if month is None:
            stats = ScanStats()
            prefix = f"run-{name}"
            counter = RunCounter(
                settings, stats, job.staging, prefix=prefix, flush_rows=job.flush_rows, lines=lines
            )
            month = months[name] = _Month(stats, counter)
        month.stats.pgn_bytes += len(game) + 1  # and its leading "["
        kept = filter_game(game, settings.rules, month.stats)
        if kept is not None:
            if month.counter.tree is None:
                month.counter.tree = tree
            month.counter.add(kept)
            tree = month.counter.tree
        if job.progress is not None and time.monotonic() - last_report >= 0.5:
            last_report = time.monotonic()
            seen = _total(scan, months.values())
            elapsed = last_report - job.started
            job.progress(seen.progress(opened.reader.bytes_read, opened.size, elapsed))
    for month in months.values():
        month.runs = month.counter.finish().runs
    return months


def _games(
    opened: OpenSource, scan: ScanStats, errors: list[str], *, keep_partial: bool
) -> Iterator[bytes]:
    """The source's games (each without its leading "["), read in order with a thread
    decompressing ahead; a corrupt stream stops them (ingest.run.until_corrupt)."""
    reader = opened.reader
    ahead = ReadAhead(decompressed_chunks(reader), 16, mark=lambda: reader.bytes_read)
    return until_corrupt(split_games(iter(ahead), scan, check_end=True), keep_partial, errors)


def _total(scan: ScanStats, months: Iterable[_Month]) -> ScanStats:
    """The whole run's counts: the scan's and every month's (the scan's bytes of text)."""
    total = ScanStats()
    total.merge(scan)
    for month in months:
        total.merge(month.stats)
    total.pgn_bytes = scan.pgn_bytes
    return total


def _publish(
    opened: OpenSource,
    job: Job,
    months: dict[str, _Month],
    chosen: list[str],
    policy: RunPolicy,
    expected_sha256: str | None,
    error: str | None,
) -> list[IngestManifest]:
    """Publish the chosen months, each as ingest publishes one, all locked and checked first."""
    from pipelines.ingest.runs import merge_runs

    with ExitStack() as locks:
        for name in chosen:
            locks.enter_context(month_lock(job.warehouse, name))
        if not policy.replace_month:
            for name in chosen:
                check_replacement(job.warehouse, name, months[name].stats.games_read)
        published = []
        for name in chosen:
            month = months[name]
            tree = month.counter.tree
            hits, misses = (tree.hits, tree.misses) if tree is not None else (0, 0)

            def write(target: Path, runs: list[Path] = month.runs) -> int:
                return merge_runs(runs, target, in_memory_rows=job.in_memory_rows)

            published.append(
                publish_month(
                    replace(job, month=name),
                    opened,
                    month.stats,
                    Counted(hits, misses, write, error=error),
                    expected_sha256=expected_sha256,
                    replace_month=True,  # checked above, for every month before the first
                    allow_empty=True,  # chosen: it kept games, or empty months are wanted
                    hashed=True,
                    workers=1,
                    dated=True,
                )
            )
    return published
