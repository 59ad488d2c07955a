"""Training records from every position of a month's kept games, results rescored by tablebases.

The export: the source read in order here, or a pzstd-style file by units of frames in worker
processes (games.parallel), each kept game's records (records.py) written in game order with
their lineage (lineage.py) and the run's manifest (manifest.py). Games are skipped and
counted by the game filter's reasons and `no_moves` (game_filter.keep_game: `games_kept`
counts the games ingest keeps), then by the records' own reasons; the records made are asked
the loader's skips (skips.py) here, in output order, as `training filter` would ask them of
the whole output, and only those kept are written and counted.
"""

from __future__ import annotations

import itertools
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path

from pipelines.errors import write_error
from pipelines.files import file_sha256, write_json
from pipelines.games.frames import Frame
from pipelines.games.game_filter import NothingKept, ScanStats, keep_game
from pipelines.games.in_order import games_in_order
from pipelines.games.plan import PARALLEL_MIN_BYTES, frames_for_workers
from pipelines.games.scan import split_games
from pipelines.progress import ProgressCallback
from pipelines.sources.open import OpenSource, Source, open_source
from pipelines.training.files import training_format, training_writer
from pipelines.training.lineage import LineageWriter
from pipelines.training.manifest import FromGamesManifest, manifest_path_for
from pipelines.training.records import (
    ExportCounts,
    GameRecord,
    Outcomes,
    game_id,
    game_records,
    site_of,
)
from pipelines.training.settings import POSITION_FILTERS, FromGamesSettings
from pipelines.training.skip_settings import SkipSettings
from pipelines.training.skips import SKIP_REASONS, SkipPredicate
from pipelines.warehouse.layout import check_month
from pipelines.warehouse.locks import output_lock
from schemas.atomic_files import OutputSet
from schemas.training_lineage import lineage_path_for
from schemas.version import __version__

#: What a kept game gives the output: its speed, rating band, game id and records.
Exported = tuple[str, int, str, list[GameRecord]]

#: What a unit of frames exported counted: the scan's counts and the export's.
_UnitCounts = tuple[ScanStats, ExportCounts]

#: Compressed bytes of a unit of frames exported by a worker.
UNIT_BYTES = 1 << 20
#: Exported games a worker pickles at a time.
SPOOL_BATCH = 256


def _exported(
    games: Iterable[bytes],
    settings: FromGamesSettings,
    outcomes: Outcomes | None,
    stats: ScanStats,
    counts: ExportCounts,
) -> Iterator[Exported]:
    """Yield the records of the games that pass the filter and give any, counting the rest."""
    for raw in games:
        kept = keep_game(raw, settings.rules, stats)
        if kept is None:
            continue
        rows = game_records(kept.result - 1, kept.movetext, settings, outcomes, counts)
        if not rows:
            continue
        yield kept.speed.value, kept.rating_band, game_id(site_of(raw)), rows


def _kept_by_skips(
    games: Iterable[Exported], skips: SkipSettings, counts: ExportCounts, skipped: Counter[str]
) -> Iterator[Exported]:
    """Yield the games with the records `skips` keep (asked in order, as `training filter`
    asks them; with no skip set, every record), counting the records skipped by reason and
    the games and records kept."""
    predicate = SkipPredicate(skips) if skips.skips_any else None
    for speed, band, gid, rows in games:
        kept = rows
        if predicate is not None:
            kept = []
            for row in rows:
                reason = predicate.record_reason(row.record)
                if reason is None:
                    kept.append(row)
                else:
                    skipped[reason] += 1
        if not kept:
            continue
        counts.exported += 1
        counts.records += len(kept)
        counts.records_changed += sum(row.result_changed for row in kept)
        counts.records_tb += sum(row.tablebase_scored for row in kept)
        yield speed, band, gid, kept


def _exported_in_order(
    opened: OpenSource,
    settings: FromGamesSettings,
    outcomes: Outcomes | None,
    stats: ScanStats,
    counts: ExportCounts,
    started: float,
    progress: ProgressCallback | None,
) -> Iterator[Exported]:
    """Yield the exported games of a source read in order, reporting progress."""
    games = games_in_order(opened, stats, started=started, progress=progress)
    return _exported(games, settings, outcomes, stats, counts)


def export_unit(
    location: str,
    frames: list[Frame],
    unit: range,
    settings: FromGamesSettings,
    outcomes: Outcomes | None,
    spool: str,
) -> _UnitCounts:
    """Export the games one unit of frames owns (in a worker process); return its counts.

    The exported games go to the file `spool`, pickled a batch of SPOOL_BATCH games at a time
    (a unit's records may be many more than its compressed size suggests).
    """
    import pickle

    from pipelines.games.parallel import open_unit

    stats = ScanStats()
    counts = ExportCounts()
    with open_unit(location, frames, unit) as text, open(spool, "wb") as out:
        games = _exported(split_games(text, stats), settings, outcomes, stats, counts)
        while batch := list(itertools.islice(games, SPOOL_BATCH)):
            pickle.dump(batch, out, protocol=pickle.HIGHEST_PROTOCOL)
    return stats, counts


def _spooled(path: Path) -> Iterator[Exported]:
    """Yield the exported games of a unit's spool file (see export_unit), then remove it."""
    import pickle

    with open(path, "rb") as handle:
        while True:
            try:
                batch = pickle.load(handle)
            except EOFError:
                break
            yield from batch
    path.unlink()


def _exported_by_units(
    opened: OpenSource,
    frames: list[Frame],
    settings: FromGamesSettings,
    outcomes: Outcomes | None,
    stats: ScanStats,
    counts: ExportCounts,
    *,
    workers: int,
    spool: Path,
    started: float,
    progress: ProgressCallback | None,
) -> Iterator[Exported]:
    """Yield the exported games of units of frames exported by worker processes, in order.

    At most two units a worker are exported ahead of the one written, each spooled to a file
    in a temporary folder under `spool` while it waits.
    """
    import tempfile
    from contextlib import closing
    from functools import partial

    from pipelines.games.frames import plan_units, unit_name
    from pipelines.games.parallel import in_order
    from pipelines.games.workers import WorkerPool

    # What the workers need, imported by each as it starts.
    preload = [__name__] + ([type(outcomes).__module__] if outcomes is not None else [])
    folder = tempfile.TemporaryDirectory(prefix=".from-games-", dir=spool)

    def units() -> Iterator[tuple[tuple[Path, int], Callable[[], _UnitCounts]]]:
        for unit in plan_units(frames, workers, max_unit_bytes=UNIT_BYTES):
            path = Path(folder.name) / f"{unit_name(unit.start)}.pickle"
            done_bytes = frames[unit.stop - 1].offset + frames[unit.stop - 1].size
            call = partial(export_unit, opened.name, frames, unit, settings, outcomes, str(path))
            yield (path, done_bytes), call

    try:
        with (
            WorkerPool(workers, preload=preload) as pool,
            closing(in_order(pool, units(), in_flight=2 * workers)) as results,
        ):
            for (path, done_bytes), (unit_stats, unit_counts) in results:
                stats.merge(unit_stats)
                counts.merge(unit_counts)
                yield from _spooled(path)
                if progress is not None:
                    elapsed = time.monotonic() - started
                    progress(stats.progress(done_bytes, opened.size, elapsed))
    finally:
        folder.cleanup()


def export_games(
    source: Source,
    month: str,
    out: Path,
    settings: FromGamesSettings | None = None,
    outcomes: Outcomes | None = None,
    tables: list[str] | None = None,
    *,
    progress: ProgressCallback | None = None,
    workers: int = 1,
    parallel_min_bytes: int = PARALLEL_MIN_BYTES,
    allow_empty: bool = False,
) -> FromGamesManifest:
    """Write every position of the kept games of `source` as training records; return the run.

    Writes `out` (.plain or .binpack), its lineage `OUT.lineage.parquet` and the manifest
    `OUT.json`, each whole or not at all. Without `outcomes`, results are the games' own.
    A pzstd-style file of at least `parallel_min_bytes` is read as ingest reads it with
    `workers` processes: units of frames exported at once, their records written in game
    order, a few units at a time (the output is the same byte for byte). Otherwise the source
    is read in order, one game at a time. Worker processes get `outcomes` pickled: it must
    reopen its tables there (as the command's do). `progress` hears of the run twice a
    second (games kept counts the games that gave records). A source of which no game is kept
    raises NothingKept and writes nothing, unless `allow_empty`.
    """
    started = time.monotonic()
    settings = settings or FromGamesSettings()
    check_month(month)
    out = Path(out)
    training_format(out)
    lineage = Path(lineage_path_for(str(out)))
    stats = ScanStats()
    counts = ExportCounts()
    manifest_file = manifest_path_for(out)
    try:
        with (
            output_lock(out, lineage, manifest_file),
            open_source(source, settings.rules.variant) as opened,
            # The records, their lineage, the manifest last: all or none.
            OutputSet(out, lineage, manifest_file) as outputs,
        ):
            with training_writer(outputs.path(out), kind=training_format(out)) as write:
                lineage_writer = LineageWriter(outputs.path(lineage))
                games: Iterator[Exported] | None = None
                used = 1
                frames = frames_for_workers(
                    opened, workers=workers, parallel_min_bytes=parallel_min_bytes
                )
                if frames is not None:
                    games = _exported_by_units(
                        opened,
                        frames,
                        settings,
                        outcomes,
                        stats,
                        counts,
                        workers=workers,
                        spool=out.parent,
                        started=started,
                        progress=progress,
                    )
                    used = workers
                if games is None:
                    games = _exported_in_order(
                        opened, settings, outcomes, stats, counts, started, progress
                    )
                skipped: Counter[str] = Counter()
                for speed, band, gid, rows in _kept_by_skips(
                    games, settings.skips, counts, skipped
                ):
                    for row in rows:
                        write(row.record)
                    lineage_writer.add(month, speed, band, gid, rows)
                lineage_writer.close()
                if progress is not None:
                    done = opened.reader.bytes_read if opened.size is None else opened.size
                    progress(stats.progress(done, opened.size, time.monotonic() - started))
            if stats.games_kept == 0 and not allow_empty:
                raise NothingKept(opened.name, stats, settings.rules)
            dropped = Counter(stats.dropped)
            dropped.update(counts.skipped)
            manifest = FromGamesManifest(
                chesspipe_version=__version__,
                month=month,
                source=str(source),
                output=str(out),
                lineage=str(lineage),
                settings=settings,
                tables=list(tables or []),
                games_read=stats.games_read,
                games_kept=stats.games_kept,
                games_skipped=dict(sorted(dropped.items())),
                games_exported=counts.exported,
                games_reaching_tables=counts.reaching,
                results_changed=dict(sorted(counts.changed.items())),
                positions=counts.positions,
                positions_skipped={k: counts.positions_skipped[k] for k in POSITION_FILTERS},
                records=counts.records,
                records_skipped={k: skipped[k] for k in SKIP_REASONS if skipped[k]},
                records_result_changed=counts.records_changed,
                records_tablebase_scored=counts.records_tb,
                output_sha256=file_sha256(outputs.path(out)),
                seconds=round(time.monotonic() - started, 3),
                finished_at=datetime.now(UTC).isoformat(timespec="seconds"),
                workers=used,
            )
            write_json(outputs.path(manifest_file), manifest.to_json())
    except OSError as exc:
        raise write_error(exc, out) from None
    return manifest
