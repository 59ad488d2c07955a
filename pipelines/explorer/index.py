"""`chesspipe explorer index`: a month of games into the explorer's data.

The same source and the same filter as `chesspipe ingest`, read again: each kept game's record
(schemas.explorer.GAMES_SCHEMA) and its positions once each (POSITIONS_SCHEMA), the first
`plies` of every game (50, as lila-openingexplorer; every ply for collections). Written
beside the move statistics with the lookup file the server reads (pipelines.explorer.lookup),
published whole (the five files, then the manifest) or not at all.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, closing, contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from pipelines import arrow_arrays as arrays
from pipelines.explorer.game_record import read_records
from pipelines.explorer.layout import (
    counts_file,
    explorer_manifest_path,
    games_file,
    lookup_file,
    positions_file,
    records_file,
)
from pipelines.explorer.lookup import SPEED_NAMES, write_lookup
from pipelines.explorer.manifest import ExplorerManifest
from pipelines.explorer.positions import GamePositions, replay_games
from pipelines.explorer.records import write_records
from pipelines.explorer.settings import ExplorerSettings
from pipelines.files import file_sha256, json_bytes
from pipelines.games.decompress import ReadAhead, decompressed_chunks
from pipelines.games.frames import Frame, unit_name
from pipelines.games.game_filter import KeptGame, NothingKept, ScanStats
from pipelines.games.plan import PARALLEL_MIN_BYTES, frames_for_workers
from pipelines.games.sanwalk import NO_CLOCK, NO_EVAL
from pipelines.games.scan import game_blocks, kept_games_in_blocks, reported_blocks
from pipelines.progress import ProgressCallback
from pipelines.sources.open import OpenSource, Source, open_source
from pipelines.warehouse.explorer_files import explorer_lock, explorer_temp_files
from pipelines.warehouse.layout import check_month
from schemas.atomic_files import OutputSet
from schemas.explorer import GAMES_SCHEMA, POSITIONS_SCHEMA
from schemas.version import __version__

#: Games replayed at once (one batch of the batch parser, one row group of each file).
BATCH_GAMES = 4096


#: The string columns of a game record, as GAMES_SCHEMA names them.
_RECORD_STRINGS = ("id", "event", "site", "round", "date", "white", "black", "white_title",
                   "black_title", "time_control", "eco", "opening")  # fmt: skip


#: The games' columns worth a dictionary: not each game's own moves, clocks and evals (a
#: dictionary of values that never repeat only slows their reading: a third off a search).
_DICTIONARY_COLUMNS = [
    f.name for f in GAMES_SCHEMA if f.name not in ("packed", "clocks", "evals", "moves")
]


def _after(table: pa.Table, first: int) -> pa.Array:
    """A table's seq column, numbered from `first`."""
    seq = arrays.numbers(table.column("seq")).astype(np.uint64) + np.uint64(first)
    if len(seq) and int(seq.max()) > np.iinfo(np.uint32).max:
        raise OverflowError(f"more than {np.iinfo(np.uint32).max:,} games in a month")
    return arrays.integers(seq.astype(np.uint32))


def _lines(packed: list[bytes | None]) -> dict[str, pa.Array]:
    """The games' `plies` and `packed` columns (null where their moves are not kept)."""
    if any(line is None for line in packed):
        return {"plies": pa.nulls(len(packed), pa.uint16()),
                "packed": pa.nulls(len(packed), pa.binary())}  # fmt: skip
    lines = [line or b"" for line in packed]
    plies = np.array([len(line) // 2 for line in lines], dtype=np.uint16)
    return {"plies": arrays.integers(plies), "packed": arrays.binaries(lines)}


def _comments(values: list[np.ndarray | None], missing: int, dtype: type) -> pa.Array:
    """A list column of the games' clocks or evals: null for a game without any, a null item
    for a move without one."""
    present = np.array([v is not None for v in values], dtype=bool)
    lengths = np.array([0 if v is None else len(v) for v in values], dtype=np.int32)
    offsets = np.zeros(len(values) + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    items = [v for v in values if v is not None]
    flat = np.concatenate(items) if items else np.zeros(0, np.int32)
    kind = pa.int32() if dtype is np.int32 else pa.int16()
    validity = arrays.validity(flat != missing)
    numbers = pa.py_buffer(np.where(flat == missing, 0, flat).astype(dtype))
    inner = pa.Array.from_buffers(kind, len(flat), [validity, numbers])
    return pa.ListArray.from_buffers(
        pa.list_(kind), len(values), [arrays.validity(present), pa.py_buffer(offsets)],
        children=[inner],
    )  # fmt: skip


class _Writer:
    """The month's two Parquet files, a batch of games at a time."""

    def __init__(self, games_path: Path, positions_path: Path) -> None:
        self.games = pq.ParquetWriter(
            games_path, GAMES_SCHEMA, compression="zstd", use_dictionary=_DICTIONARY_COLUMNS
        )
        self.positions = pq.ParquetWriter(positions_path, POSITIONS_SCHEMA, compression="zstd")
        self.seq = 0
        self.rows = 0

    def add(self, batch: list[tuple[KeptGame, bytes, GamePositions]]) -> None:
        if not batch:
            return
        seqs = np.arange(self.seq, self.seq + len(batch), dtype=np.uint32)
        self.seq += len(batch)
        records = read_records([text for _, text, _ in batch])
        columns = {
            "seq": arrays.integers(seqs),
            **{name: arrays.strings(getattr(records, name)) for name in _RECORD_STRINGS},
            "white_elo": arrays.optional_integers(records.white_elo, np.uint16),
            "black_elo": arrays.optional_integers(records.black_elo, np.uint16),
            "result": arrays.integers(np.array([kept.result for kept, _, _ in batch], np.uint8)),
            "speed": arrays.strings([kept.speed.value for kept, _, _ in batch]),
            "rated": arrays.booleans(np.array(records.rated, dtype=bool)),
            "tournament": arrays.booleans(np.array(records.tournament, dtype=bool)),
            "moves": arrays.strings([found.uci for _, _, found in batch]),
            "fen": arrays.strings([kept.fen for kept, _, _ in batch]),
            **_lines([found.packed for _, _, found in batch]),
            "clocks": _comments([found.clocks for _, _, found in batch], NO_CLOCK, np.int32),
            "evals": _comments([found.evals for _, _, found in batch], NO_EVAL, np.int16),
        }
        self.games.write_table(
            pa.Table.from_arrays([columns[f.name] for f in GAMES_SCHEMA], schema=GAMES_SCHEMA)
        )
        lengths = np.array([len(found.keys) for _, _, found in batch], dtype=np.int64)
        positions = pa.Table.from_arrays(
            [
                arrays.integers(np.repeat(seqs, lengths)),
                arrays.integers(np.concatenate([found.keys for _, _, found in batch])),
                arrays.integers(np.concatenate([found.moves for _, _, found in batch])),
                arrays.integers(np.concatenate([found.plies for _, _, found in batch])),
            ],
            schema=POSITIONS_SCHEMA,
        )
        self.positions.write_table(positions)
        self.rows += len(positions)

    def append(self, games: Path, positions: Path) -> None:
        """Add another writer's files (games numbered from 0), renumbered after these."""
        first = self.seq
        for batch in pq.ParquetFile(games).iter_batches(batch_size=BATCH_GAMES):
            table = pa.Table.from_batches([batch])
            seq = GAMES_SCHEMA.field("seq")
            self.games.write_table(table.set_column(0, seq, _after(table, first)))
            self.seq += batch.num_rows
        for batch in pq.ParquetFile(positions).iter_batches(batch_size=64 * BATCH_GAMES):
            table = pa.Table.from_batches([batch])
            seq = POSITIONS_SCHEMA.field("seq")
            self.positions.write_table(table.set_column(0, seq, _after(table, first)))
            self.rows += batch.num_rows

    def close(self) -> None:
        self.games.close()
        self.positions.close()


def index_month(
    source: Source,
    month: str,
    warehouse: Path,
    settings: ExplorerSettings | None = None,
    *,
    source_sha256: str | None = None,
    http_options: Mapping[str, Any] | None = None,
    allow_empty: bool = False,
    progress: ProgressCallback | None = None,
    workers: int = 1,
    parallel_min_bytes: int = PARALLEL_MIN_BYTES,
    recorded_source: str | None = None,
) -> ExplorerManifest:
    """Index a month's games for the explorer; return the manifest published with them.

    A pzstd-style file (Lichess's dumps, the kept games `ingest --write-kept` writes) of at
    least `parallel_min_bytes` is read by units of frames in `workers` processes, each unit's
    games replayed and written there and the parts joined here in order: the month's data is
    the same as one process makes.

    The month's lock is held meanwhile (another run of it fails at once), and what killed
    runs of it left is removed first. `source_sha256`, when the caller knows the source's
    content, is recorded in the manifest (the monthly build reuses a month indexed from it);
    `http_options` are how a URL is read (`pipelines.sources.download.open_url`'s: timeout,
    retries, backoff, cache). A run that keeps no game raises NothingKept (naming why the games
    were dropped) and publishes nothing, unless `allow_empty`. `progress` hears of the bytes
    read and the games read and kept, as ingest's does. `recorded_source` is the source the
    manifest names (the source's own name by default; the monthly build names the month's
    source when it indexes the games its ingest kept).
    """
    settings = settings or ExplorerSettings()
    check_month(month)
    warehouse = Path(warehouse)
    with (
        month_held(warehouse, month),
        OutputSet(explorer_manifest_path(warehouse, month)) as output,
    ):
        return stage_month(
            source, month, warehouse, settings, output, source_sha256=source_sha256,
            http_options=http_options, allow_empty=allow_empty, progress=progress,
            workers=workers, parallel_min_bytes=parallel_min_bytes,
            recorded_source=recorded_source,
        )  # fmt: skip


def stage_month(
    source: Source,
    month: str,
    warehouse: Path,
    settings: ExplorerSettings,
    output: OutputSet,
    *,
    source_sha256: str | None = None,
    http_options: Mapping[str, Any] | None = None,
    allow_empty: bool = False,
    progress: ProgressCallback | None = None,
    workers: int = 1,
    parallel_min_bytes: int = PARALLEL_MIN_BYTES,
    recorded_source: str | None = None,
) -> ExplorerManifest:
    """Index a month's games into `output`, an output set not yet published (the month's
    files join it, their manifest after them, before the set's last target): they appear with
    the rest of the set or not at all. The caller holds the month (`month_held`). The options
    are index_month()'s."""
    started = time.monotonic()
    stats = ScanStats()
    targets = _targets(warehouse, month)
    for target in targets:
        if target not in output.targets:
            output.include(target)
    with open_source(source, settings.rules.variant, **(http_options or {})) as opened:
        writer = _Writer(output.path(targets[0]), output.path(targets[1]))
        try:
            frames = frames_for_workers(
                opened, workers=workers, parallel_min_bytes=parallel_min_bytes
            )
            if frames is not None:
                _by_units(opened, frames, settings, stats, writer, (warehouse, month), workers,
                          started, progress)  # fmt: skip
            else:
                _in_order(opened, settings, stats, writer, started, progress)
            _report_done(opened, stats, started, progress)
        finally:
            writer.close()
        if stats.games_kept == 0 and not allow_empty:
            raise NothingKept(opened.name, stats, settings.rules)
        manifest = _write_manifest(
            output, targets, writer, stats, month=month,
            source=recorded_source or str(source),
            settings=settings.to_json(), ends_inside_game=stats.ends_inside_game,
            started=started, source_sha256=source_sha256,
            publish_positions=settings.keeps_moves,
        )  # fmt: skip
    return manifest


@dataclass
class WithIngest:
    """The explorer's index of a month, made from the games an ingest of it keeps and
    published with its statistics, as one set (ingest's `RunPolicy.also_staged`): one read
    of the source. `manifest` is the month's once the ingest has staged it."""

    month: str
    warehouse: Path
    settings: ExplorerSettings
    #: The source the manifest names, and its content's sha256 where the caller knows it.
    recorded_source: str
    source_sha256: str | None = None
    workers: int = 1
    manifest: ExplorerManifest | None = None
    #: Holds the month from when the ingest stages it until with_ingest's block ends.
    held: ExitStack = field(default_factory=ExitStack)

    def __call__(self, kept: Path, output: OutputSet) -> None:
        self.held.enter_context(month_held(self.warehouse, self.month))
        self.manifest = stage_month(
            str(kept), self.month, self.warehouse, self.settings, output,
            source_sha256=self.source_sha256, allow_empty=True, workers=self.workers,
            recorded_source=self.recorded_source,
        )  # fmt: skip


@contextmanager
def with_ingest(
    warehouse: Path,
    month: str,
    settings: ExplorerSettings,
    *,
    recorded_source: str,
    source_sha256: str | None = None,
    workers: int = 1,
) -> Iterator[WithIngest]:
    """What to give an ingest as its `RunPolicy.also_staged` to index the explorer's month with
    its statistics. The month is held (another index run of it fails) from when the ingest has
    read its source until the block ends, after the ingest has published: nothing is made in
    the warehouse before the source is read."""
    check_month(month)
    with ExitStack() as held:
        yield WithIngest(month, Path(warehouse), settings, recorded_source, source_sha256,
                         workers, held=held)  # fmt: skip


def _in_order(
    opened: OpenSource,
    settings: ExplorerSettings,
    stats: ScanStats,
    writer: _Writer,
    started: float,
    progress: ProgressCallback | None,
) -> None:
    """Read a source in order here, writing its kept games' records and positions."""
    chunks = ReadAhead(decompressed_chunks(opened.reader), 16)
    blocks = _reported(game_blocks(iter(chunks), stats, check_end=True), opened, stats,
                       started, progress)  # fmt: skip
    _index_blocks(blocks, settings, stats, writer)


def _index_blocks(
    blocks: Iterator[bytes], settings: ExplorerSettings, stats: ScanStats, writer: _Writer
) -> None:
    """Write the kept games of `blocks`, replayed, BATCH_GAMES at a time."""
    chess960 = settings.rules.variant == "chess960"
    texts: list[bytes] = []
    pending: list[tuple[KeptGame, bytes]] = []
    for kept in kept_games_in_blocks(blocks, settings.rules, stats, keep=texts.append):
        pending.append((kept, texts.pop()))
        if len(pending) >= BATCH_GAMES:
            writer.add(_replayed(pending, settings, stats, chess960))
            pending = []
    writer.add(_replayed(pending, settings, stats, chess960))


#: Compressed bytes of a unit of frames a worker reads.
UNIT_BYTES = 4 << 20


class UnitIndexed(NamedTuple):
    """What a worker made of a unit of frames: its counts and its two files (seq from 0)."""

    stats: ScanStats
    games: Path
    positions: Path


def index_unit(
    location: str,
    frames: list[Frame],
    unit: range,
    settings: ExplorerSettings,
    folder: Path,
) -> UnitIndexed:
    """Index the games one unit of frames owns into two files in `folder` (in a worker)."""
    from pipelines.games.parallel import open_unit

    stats = ScanStats()
    name = unit_name(unit.start)
    paths = folder / f"{name}.games.parquet", folder / f"{name}.positions.parquet"
    writer = _Writer(*paths)
    try:
        with open_unit(location, frames, unit) as text:
            blocks = game_blocks(text, stats, check_end=unit.stop == len(frames))
            _index_blocks(blocks, settings, stats, writer)
        stats.pgn_bytes = text.own_length
    finally:
        writer.close()
    return UnitIndexed(stats, *paths)


def _by_units(
    opened: OpenSource,
    frames: list[Frame],
    settings: ExplorerSettings,
    stats: ScanStats,
    writer: _Writer,
    place: tuple[Path, str],
    workers: int,
    started: float,
    progress: ProgressCallback | None,
) -> None:
    """Index units of frames in worker processes; join their files into `writer`'s in order,
    their games renumbered after the units' before them. A local file is hashed here meanwhile
    (its sha256 is the reader's)."""
    from pipelines.games.frames import plan_units
    from pipelines.games.parallel import in_order
    from pipelines.games.workers import WorkerPool
    from pipelines.warehouse.layout import staging_dir

    folder = staging_dir(*place)
    try:
        units = (
            (
                frames[unit.stop - 1].offset + frames[unit.stop - 1].size,
                partial(index_unit, opened.name, frames, unit, settings, folder),
            )
            for unit in plan_units(frames, workers, max_unit_bytes=UNIT_BYTES)
        )

        def idle() -> bool:  # hash the file while the workers read it
            return opened.kind == "file" and bool(opened.reader.read(4 << 20))

        with (
            WorkerPool(workers, preload=[__name__]) as pool,
            closing(in_order(pool, units, in_flight=2 * workers, idle=idle)) as results,
        ):
            for done_bytes, found in results:
                stats.merge(found.stats)
                writer.append(found.games, found.positions)
                found.games.unlink()
                found.positions.unlink()
                if progress is not None:
                    elapsed = time.monotonic() - started
                    progress(stats.progress(done_bytes, opened.size, elapsed))
        while opened.kind == "file" and opened.reader.read(4 << 20):
            pass
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _reported(
    blocks: Iterator[bytes],
    opened: OpenSource,
    stats: ScanStats,
    started: float,
    progress: ProgressCallback | None,
) -> Iterator[bytes]:
    """The source's blocks of games, `progress` told of them as ingest tells its own."""
    read = opened.reader
    return reported_blocks(blocks, stats, progress, started, lambda: read.bytes_read, opened.size)


def _report_done(
    opened: OpenSource, stats: ScanStats, started: float, progress: ProgressCallback | None
) -> None:
    """The last report of a run, its numbers the run's."""
    if progress is not None:
        elapsed = time.monotonic() - started
        progress(stats.progress(opened.reader.bytes_read, opened.size, elapsed, done=True))


#: A month's files and its manifest (pipelines.explorer.layout), in the order published.
Targets = tuple[Path, Path, Path, Path, Path, Path]


def _targets(warehouse: Path, month: str) -> Targets:
    """A month's five files and its manifest, in the order they are published."""
    return (
        games_file(warehouse, month),
        positions_file(warehouse, month),
        lookup_file(warehouse, month),
        counts_file(warehouse, month),
        records_file(warehouse, month),
        explorer_manifest_path(warehouse, month),
    )


@contextmanager
def month_held(warehouse: Path, month: str) -> Iterator[None]:
    """Hold a month's lock (another run of it fails at once), what killed runs of it left
    removed first."""
    with explorer_lock(warehouse, month):
        for leftover in explorer_temp_files(warehouse, month):
            leftover.unlink(missing_ok=True)
        yield


def _write_manifest(
    output: OutputSet,
    targets: Targets,
    writer: _Writer,
    stats: ScanStats,
    *,
    month: str,
    source: str,
    settings: dict[str, Any],
    ends_inside_game: bool,
    started: float,
    source_sha256: str | None = None,
    publish_positions: bool,
) -> ExplorerManifest:
    """Write a month's lookup and records files from its two written files (all staged in
    `output`), then their manifest; return it. positions.parquet is published only when
    `publish_positions` (months whose moves are kept: `/masters` reads it); otherwise it only
    feeds the lookup file, and a file of an earlier index at its place goes when the month is
    published."""
    games_path, positions_path = output.path(targets[0]), output.path(targets[1])
    lookup_path, counts_path = output.path(targets[2]), output.path(targets[3])
    records_path = output.path(targets[4])
    write_lookup(games_path, positions_path, lookup_path, counts_path, month)
    write_records(games_path, records_path, SPEED_NAMES)
    positions_bytes, positions_sha256 = 0, None
    if publish_positions:
        positions_bytes, positions_sha256 = (
            positions_path.stat().st_size,
            file_sha256(positions_path),
        )
    else:
        output.withdraw(targets[1])
    manifest = ExplorerManifest(
        chesspipe_version=__version__,
        month=month,
        source=source,
        settings=settings,
        games_read=stats.games_read,
        games_kept=stats.games_kept,
        games_dropped=dict(sorted(stats.dropped.items())),
        positions=writer.rows,
        ends_inside_game=ends_inside_game,
        games_bytes=games_path.stat().st_size,
        positions_bytes=positions_bytes,
        seconds=round(time.monotonic() - started, 3),
        games_sha256=file_sha256(games_path),
        positions_sha256=positions_sha256,
        positions_published=publish_positions,
        source_sha256=source_sha256,
        lookup_bytes=lookup_path.stat().st_size,
        lookup_sha256=file_sha256(lookup_path),
        counts_bytes=counts_path.stat().st_size,
        counts_sha256=file_sha256(counts_path),
        records_bytes=records_path.stat().st_size,
        records_sha256=file_sha256(records_path),
    )
    output.path(targets[5]).write_bytes(json_bytes(manifest.to_json()))
    return manifest


def index_by_date(
    source: Source,
    warehouse: Path,
    settings: ExplorerSettings | None = None,
    *,
    http_options: Mapping[str, Any] | None = None,
    allow_empty: bool = False,
    progress: ProgressCallback | None = None,
) -> tuple[list[ExplorerManifest], ScanStats]:
    """Index a source's games for the explorer, each game into the month its Date tag names
    (pipelines.ingest.dates: a year alone in its January, no year in UNDATED), as for a
    player's own export or a collection spanning years; return the months' manifests in month
    order and the run's counts (the filter's drops are the run's, not a month's).

    Each month's lock is taken when its first game comes (another run of that month fails at
    once); each month is published whole, its five files then its manifest, once the whole
    source is read: a failure before publishes none. A month's manifest counts the games that
    passed the filter into it (`games_read`), those kept and those its replay dropped. A run
    that keeps no game raises NothingKept and publishes nothing, unless `allow_empty`.
    """
    from pipelines.ingest.dates import game_month

    settings = settings or ExplorerSettings()
    warehouse = Path(warehouse)
    started = time.monotonic()
    stats = ScanStats()
    chess960 = settings.rules.variant == "chess960"
    months: dict[str, _DatedMonth] = {}
    with (
        ExitStack() as held,
        open_source(source, settings.rules.variant, **(http_options or {})) as opened,
    ):

        def month_of(text: bytes) -> _DatedMonth:
            month = game_month(text)
            found = months.get(month)
            if found is None:
                held.enter_context(month_held(warehouse, month))
                targets = _targets(warehouse, month)
                output = held.enter_context(OutputSet(*targets))
                writer = _Writer(output.path(targets[0]), output.path(targets[1]))
                held.callback(writer.close)
                found = months[month] = _DatedMonth(month, targets, output, writer)
            return found

        def flush() -> None:
            for dated in months.values():
                if dated.pending:
                    dated.writer.add(_replayed(dated.pending, settings, dated.stats, chess960))
                    dated.pending = []

        texts: list[bytes] = []
        chunks = ReadAhead(decompressed_chunks(opened.reader), 16)
        blocks = _reported(game_blocks(iter(chunks), stats, check_end=True), opened, stats,
                           started, progress)  # fmt: skip
        waiting = 0
        for kept in kept_games_in_blocks(blocks, settings.rules, stats, keep=texts.append):
            text = texts.pop()
            dated = month_of(text)
            dated.pending.append((kept, text))
            dated.stats.games_read += 1
            waiting += 1
            if waiting >= BATCH_GAMES:
                flush()
                waiting = 0
        flush()
        if not any(m.stats.games_kept for m in months.values()) and not allow_empty:
            for dated in months.values():  # (the games the replay dropped)
                stats.dropped.update(dated.stats.dropped)
            raise NothingKept(opened.name, stats, settings.rules)
        manifests = []
        for dated in sorted(months.values(), key=lambda d: d.month):
            dated.writer.close()
            manifest = _write_manifest(
                dated.output, dated.targets, dated.writer, dated.stats, month=dated.month,
                source=str(source), settings={**settings.to_json(), "month_by": "date"},
                ends_inside_game=stats.ends_inside_game, started=started,
                publish_positions=settings.keeps_moves,
            )  # fmt: skip
            manifests.append(manifest)
        stats.games_kept = sum(m.games_kept for m in manifests)
        _report_done(opened, stats, started, progress)
    return manifests, stats


@dataclass
class _DatedMonth:
    """A month of an index by date while the source is read: its files and its games."""

    month: str
    targets: Targets
    output: OutputSet
    writer: _Writer
    pending: list[tuple[KeptGame, bytes]] = field(default_factory=list)
    stats: ScanStats = field(default_factory=ScanStats)


def _replayed(
    pending: list[tuple[KeptGame, bytes]],
    settings: ExplorerSettings,
    stats: ScanStats,
    chess960: bool,
) -> list[tuple[KeptGame, bytes, GamePositions]]:
    """The pending games that replay, with their texts; the others counted as dropped."""
    found = replay_games(
        [kept for kept, _ in pending],
        plies=settings.plies,
        keep_moves=settings.keeps_moves,
        chess960=chess960,
        whole=settings.games,
    )
    done = []
    for (kept, text), result in zip(pending, found, strict=True):
        if isinstance(result, str):
            stats.drop(result)
            continue
        stats.games_kept += 1
        done.append((kept, text, result))
    return done
