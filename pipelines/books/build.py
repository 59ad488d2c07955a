"""Polyglot books from the move statistics, aggregated by DuckDB."""

from __future__ import annotations

import io
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Executor, ThreadPoolExecutor
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, NamedTuple

from pipelines.books.manifest import BookManifest, PruningRecord, book_manifest_path
from pipelines.books.settings import BookSettings
from pipelines.errors import ChesspipeError
from pipelines.files import file_sha256, write_json
from pipelines.games.parallel import in_order
from pipelines.sources.object_store import is_remote
from pipelines.warehouse.integrity import DamagedMonth, check_contents, month_expected
from pipelines.warehouse.layout import available_months, sql_paths
from pipelines.warehouse.locks import output_lock
from pipelines.warehouse.months import missing_months, month_runs, select_months
from pipelines.warehouse.resources import (
    DEFAULT_RESOURCES,
    QueryResources,
    default_memory_limit,
)
from pipelines.warehouse.sql import connect, stable_read
from pipelines.warehouse.stored import StoredMonth, check_stored, stored_months, stored_read
from pipelines.warehouse.yearly import YearlyChoice, choose_years, year_expected, yearly_file
from schemas import first_play
from schemas.atomic_files import OutputSet, check_output
from schemas.polyglot_entry import ENTRY_HEX_FORMAT
from schemas.version import __version__

if TYPE_CHECKING:
    from pipelines.evals.pruning import Pruning
    from pipelines.evals.settings import PruneSettings

MAX_WEIGHT = 65535

#: A book's entries in book order. PolyGlot's make-book sorts by key, then points descending
#: (its `key_compare`), which is weight descending, and points descending where scaling made
#: weights equal. Moves of equal points it leaves in the order the games first played them:
#: here by their first-play rank, or by move where the statistics read lack ranks
#: (docs/books.md, "Entry order").
ENTRY_ORDER = "key, weight DESC, points DESC, first_play, move"

#: An entry as hex, its fields as schemas.polyglot_entry lays them out (learn 0); its bytes.
ENTRY_HEX = f"printf('{ENTRY_HEX_FORMAT}', key, move, weight, 0)"
ENTRY_BYTES = f"from_hex({ENTRY_HEX})"

#: Entries DuckDB hands over at a time (sorted by DuckDB, which spills past its memory limit).
ENTRY_BATCH = 1 << 16

#: A small book's entries as one string, in book order (`write_entries` without streaming).
ENTRIES_HEX = f"string_agg({ENTRY_HEX}, '' ORDER BY {ENTRY_ORDER})"

#: Books summed from fewer statistics rows than this come as one string (their entries are
#: fewer: a few MB); larger ones stream, a batch at a time.
STREAM_ROWS = 1_000_000


#: A month row's first-play rank among the months of a book: its month (year, then the month
#: in the rank's top bits) before its place in the month's source, as PolyGlot ranks the games
#: of the months' files read one after the other in month order. Null without a rank.
_MONTH_RANK = (
    "((left(month, 4)::HUGEINT << 64) "
    f"+ (((right(month, 2)::UBIGINT - 1) << {first_play.MONTH_SHIFT}) | first_play))"
)

#: A compacted year's row rank, likewise: its file's ranks hold the month in the top bits.
_YEAR_RANK = "((year::HUGEINT << 64) + first_play)"


def stats_filter(months: list[str], settings: BookSettings) -> tuple[list[str], list[Any]]:
    """Return the conditions (and parameters) on move_stats rows that a book is built from."""
    where = ["month IN (SELECT unnest(?::VARCHAR[]))"]
    params: list[Any] = [months]
    if settings.speeds is not None:
        where.append("speed IN (SELECT unnest(?::VARCHAR[]))")
        params.append(list(settings.speeds))
    if settings.min_band is not None:
        where.append("rating_band >= ?")
        params.append(settings.min_band)
    return where, params


def _book_rows(
    months: list[str],
    settings: BookSettings,
    yearly: list[Path],
    key_range: KeyRange | None = None,
) -> tuple[str, list[Any]]:
    """Return the SQL (and parameters) of the statistics rows a book sums: the months' rows,
    and those of compacted yearly files standing in for whole years, each with its first-play
    rank among them (`rank`; null where the file has none). One month, or one year, is ranked
    by its own ranks (UBIGINT); several by (year, rank within the year) (HUGEINT), which costs
    more to sum. `key_range`: only the rows of those keys."""
    where, params = stats_filter(months, settings)
    if key_range is not None:
        where.append("key BETWEEN ?::UBIGINT AND ?::UBIGINT")
        params += [key_range.first, key_range.last]
    columns = "key, move, speed, rating_band, games, wins, draws, white_to_move"
    alone = len(months) + len(yearly) == 1
    month_rank, year_rank = ("first_play", "first_play") if alone else (_MONTH_RANK, _YEAR_RANK)
    sql = f"SELECT {columns}, {month_rank} AS rank FROM move_stats WHERE {' AND '.join(where)}"
    if not yearly:
        return sql, params
    # Years compacted before the ranks (or the side to move) were kept have no first_play (or
    # white_to_move) column: null, by name.
    years = (
        f"(SELECT * FROM read_parquet({sql_paths(yearly)}, hive_partitioning = true, "
        "hive_types = {'year': VARCHAR}, union_by_name = true) "
        "UNION ALL BY NAME SELECT NULL::UBIGINT AS first_play, NULL::BOOLEAN AS white_to_move "
        "WHERE false)"
    )
    # The same conditions but the month's (the first).
    year_sql = f"SELECT {columns}, {year_rank} AS rank FROM {years} WHERE true"
    year_sql += "".join(f" AND {condition}" for condition in where[1:])
    if not months:  # the months' files are not even opened
        return year_sql, params[1:]
    return f"{sql} UNION ALL {year_sql}", params + params[1:]


class KeyRange(NamedTuple):
    """Polyglot keys from `first` to `last`, both included."""

    first: int
    last: int


def key_ranges(count: int) -> list[KeyRange]:
    """The key space cut into `count` ranges of equal width, in order: keys are hashes, so
    each holds about the same share of any month's rows."""
    bounds = [(1 << 64) * n // count for n in range(count + 1)]
    return [KeyRange(bounds[n], bounds[n + 1] - 1) for n in range(count)]


#: A book is cut into as many key ranges as give each about this many bytes of the memory
#: limit per statistics row it sums; DuckDB's aggregate and sort spill past the limit. Measured
#: over 48 generated months (46.5 M rows) at a 256 MB limit: 12 ranges, 289 MB peak, 10 s;
#: one range peaked at 448 MB (bench/RESULTS.md, "A book over many months").
RANGE_ROW_BYTES = 64


def ranges_for(rows: int, memory_limit: int) -> int:
    """How many key ranges a book of `rows` statistics rows is built in under a limit."""
    return max(1, -(-rows * RANGE_ROW_BYTES // memory_limit))


def book_query(
    months: list[str],
    settings: BookSettings,
    *,
    yearly: list[Path] | None = None,
    without: str | None = None,
    key_range: KeyRange | None = None,
    ranked: bool | None = None,
) -> tuple[str, list[Any]]:
    """Return the SQL (and parameters) that yields a book's (key, move, weight, games, points,
    first_play, white_to_move) rows (points: 2 per win, 1 per draw, before scaling; first_play:
    the move's first-play rank over the rows summed, null for every move unless every row read
    has one: then moves of equal weight go by move, as before the ranks were kept;
    white_to_move: whose move it is, null where no row summed has it (months ingested before
    it): rows_have_sides says whether only_side may narrow by it).

    `yearly`: compacted yearly files (pipelines.warehouse.yearly) read besides `months`; the
    months they stand for must not be in `months`. `without`: a relation of (key, move) pairs
    the book leaves out (moves pruned by evaluation), before weights are scaled.

    `key_range`: the book's entries of those keys only (a position's entries are all in one
    range, so a book is its ranges' entries in order). `ranked`: whether every row of the whole
    book has a first-play rank (`survey`), which a range cannot tell from its own rows.
    """
    rows, params = _book_rows(months, settings, yearly or [], key_range)
    all_ranked = (
        "(SELECT coalesce(bool_and(ranked), true) FROM totals)" if ranked is None else str(ranked)
    )
    # The score test is PolyGlot's, in doubles: (points / n) / 2 >= min score. `totals` is
    # materialized: inlined, DuckDB turns the window into a join that sums the rows twice.
    sql = f"""
        WITH totals AS MATERIALIZED (
            SELECT key, move, sum(games)::UBIGINT AS n, sum(2 * wins + draws)::UBIGINT AS points,
                min(rank) AS rank, count(rank) = count(*) AS ranked,
                bool_and(white_to_move) AS white
            FROM ({rows})
            GROUP BY key, move
        ), kept AS (
            SELECT key, move, n, points, rank, white,
                max(points) OVER (PARTITION BY key) AS top
            FROM totals {f"ANTI JOIN {without} USING (key, move)" if without else ""}
            WHERE n >= ? AND points > 0 AND (points::DOUBLE / n::DOUBLE) / 2.0 >= ?
        )
        SELECT key, move,
            CASE WHEN top > {MAX_WEIGHT}
                 THEN greatest(1, (points::HUGEINT * {2 * MAX_WEIGHT} + top) // (2 * top::HUGEINT))
                 ELSE points END::USMALLINT AS weight,
            n AS games, points,
            CASE WHEN {all_ranked} THEN rank END AS first_play,
            white AS white_to_move
        FROM kept
    """
    params += [settings.min_games, settings.min_score]
    return sql, params


class SideKeys(NamedTuple):
    """The positions of a book where its side is to move, as a walk found them, and how many
    of the book's positions no walk reached (left out)."""

    keys: list[int]
    unreached: int


def side_keys(
    con: Any, months: list[str], sql: str, params: list[Any], settings: BookSettings
) -> SideKeys:
    """The positions of a book's query where `settings.side` is to move, found by walking the
    statistics (pipelines.books.sides): for rows without `white_to_move` (rows_have_sides)."""
    from pipelines.books.sides import sides_to_move

    keys = [int(k) for (k,) in con.execute(f"SELECT DISTINCT key FROM ({sql})", params).fetchall()]
    sides = sides_to_move(con, months, keys, min_games=settings.min_games)
    colour = settings.side == "white"
    return SideKeys([key for key in keys if sides.get(key) == colour], len(keys) - len(sides))


class Survey(NamedTuple):
    """What a book's statistics rows are, over all of them: how many; whether every one has a
    first-play rank; whether every one says whose move it is (`white_to_move`: months
    ingested before it have none). What was not asked is None."""

    rows: int
    ranked: bool | None
    sided: bool | None


def survey(
    con: Any,
    months: list[str],
    settings: BookSettings,
    yearly: list[Path],
    *,
    ranked: bool = True,
    sided: bool = True,
) -> Survey:
    """Survey a book's statistics rows (the count from row groups; ranks and sides, when
    asked, by reading those columns: nothing is summed)."""
    rows, params = _book_rows(months, settings, yearly)
    columns = ["count(*)"]
    columns += ["count(rank) = count(*)"] if ranked else []
    columns += ["count(white_to_move) = count(*)"] if sided else []
    (found,) = con.execute(f"SELECT {', '.join(columns)} FROM ({rows})", params).fetchall()
    answers = iter(found[1:])  # (all fetched: a result left unfinished holds the connection)
    return Survey(
        int(found[0]),
        bool(next(answers)) if ranked else None,
        bool(next(answers)) if sided else None,
    )


def rows_have_sides(
    con: Any, months: list[str], settings: BookSettings, yearly: list[Path]
) -> bool:
    """Whether every statistics row a book reads says whose move it is (`white_to_move`: months
    ingested before it have none)."""
    return bool(survey(con, months, settings, yearly, ranked=False).sided)


def only_side(sql: str, params: list[Any], settings: BookSettings) -> tuple[str, list[Any]]:
    """Narrow a book's query to the positions where `settings.side` is to move, by its
    `white_to_move` column."""
    return f"SELECT * FROM ({sql}) WHERE white_to_move = ?", [*params, settings.side == "white"]


def only_keys(sql: str, params: list[Any], keys: list[int]) -> tuple[str, list[Any]]:
    """Narrow a book's query to the positions `keys`."""
    return f"SELECT * FROM ({sql}) WHERE key IN (SELECT unnest(?::UBIGINT[]))", [*params, keys]


class EntryCounts(NamedTuple):
    """How many entries a book (or a key range of one) has, of how many positions, and the
    games of its entries."""

    entries: int
    positions: int
    games: int


def write_entries(
    con: Any, query: str, values: list[Any], sink: BinaryIO, *, stream: bool = True
) -> EntryCounts:
    """Write the entries a book query (or a range's) yields to `sink` as a book's bytes, in
    book order: with `stream`, a batch at a time (pyarrow), the book never whole in memory;
    without, as one string (a small book: no pyarrow to import)."""
    if not stream:
        (found,) = con.execute(
            f"SELECT {ENTRIES_HEX}, count(*), count(DISTINCT key), coalesce(sum(games), 0) "
            f"FROM ({query})",
            values,
        ).fetchall()
        sink.write(bytes.fromhex(found[0] or ""))
        return EntryCounts(int(found[1]), int(found[2]), int(found[3]))
    import pyarrow as pa
    import pyarrow.compute as pc

    reader = con.sql(
        f"SELECT {ENTRY_BYTES} AS entry, key, games FROM ({query}) ORDER BY {ENTRY_ORDER}",
        params=values,
    ).to_arrow_reader(ENTRY_BATCH)
    entries = positions = games = 0
    last_key = None
    for batch in reader:
        if not batch.num_rows:
            continue
        column = batch.column(0).cast(pa.binary(16))
        start = column.offset * 16
        sink.write(memoryview(column.buffers()[1])[start : start + 16 * len(column)])
        keys = batch.column(1)
        changes = pc.sum(pc.not_equal(keys.slice(1), keys.slice(0, len(keys) - 1))).as_py()
        positions += (changes or 0) + (keys[0].as_py() != last_key)
        last_key = keys[-1].as_py()
        entries += batch.num_rows
        games += pc.sum(batch.column(2)).as_py() or 0
    return EntryCounts(entries, positions, games)


class RangeEntries(NamedTuple):
    """A key range's part of a book, as a cluster's task hands it back: its bytes, and their
    counts."""

    data: bytes
    counts: EntryCounts


def range_entries(
    warehouse: Path | str,
    pinned: list[StoredMonth] | None,
    query: str,
    values: list[Any],
    resources: QueryResources,
    stream: bool = True,
) -> RangeEntries:
    """A range's entries, read on a connection of its own (a cluster's task)."""
    con = connect(warehouse, pinned=pinned, resources=resources)
    try:
        sink = io.BytesIO()
        counts = write_entries(con, query, values, sink, stream=stream)
        return RangeEntries(sink.getvalue(), counts)
    finally:
        con.close()


def written(ranges: Iterator[RangeEntries], sink: BinaryIO) -> Iterator[EntryCounts]:
    """Write each range's bytes to `sink` in turn; yield its counts."""
    for done in ranges:
        sink.write(done.data)
        yield done.counts


#: The least ranges a book summed on a cluster is cut into, whatever the memory asks: about
#: the tasks of a few workers each, the last range's wait short.
CLUSTER_RANGES = 16

#: Range tasks a cluster runs at once, the one written next among them (their bytes wait in
#: memory until it is their turn).
AHEAD = 8


class EvalPruning(NamedTuple):
    """Pruning a book by evaluation: the warehouse whose evaluation store judges the moves,
    and the rule's settings."""

    evals: Path
    settings: PruneSettings


def pruned_moves(con: Any, sql: str, params: list[Any], pruning: EvalPruning) -> Pruning:
    """The moves of a book's query that the rule drops, judged by the stored evaluations of
    the positions a walk of the book's moves from the start position reaches."""
    from pipelines.evals.positions import walk
    from pipelines.evals.pruning import judging_evaluations, prune

    moves: dict[int, list[int]] = {}
    for key, move in con.execute(f"SELECT key, move FROM ({sql})", params).fetchall():
        moves.setdefault(int(key), []).append(int(move))
    reached = walk(moves)
    evaluations = judging_evaluations(reached, moves, pruning.evals)
    return prune(reached, moves, evaluations, pruning.settings)


def _pairs_table(pairs: frozenset[tuple[int, int]]) -> Any:
    import pyarrow as pa

    ordered = sorted(pairs)
    return pa.table(
        {
            "key": pa.array([k for k, _ in ordered], pa.uint64()),
            "move": pa.array([m for _, m in ordered], pa.uint16()),
        }
    )


def no_move_passes(
    months: list[str], settings: BookSettings, names: Mapping[str, str] | None = None
) -> str:
    """Say that no move of `months` passes `settings`, naming each setting chosen.

    A setting is called by `names["BookSettings.field"]` where it has one (a command's flags),
    else by its name.
    """
    names = names or {}
    chosen = ", ".join(
        f"{names.get(f'BookSettings.{name}', name)} "
        f"{','.join(value) if isinstance(value, list) else value}"
        for name, value in settings.record().items()
        if value is not None
    )
    return f"no move of {', '.join(month_runs(months))} passes the book settings ({chosen})"


class EmptyBook(ChesspipeError):
    """No move passes the book settings, and an empty book was not asked for."""

    def __init__(self, months: list[str], settings: BookSettings) -> None:
        self.months = months
        self.settings = settings
        super().__init__(self.named({}))

    def named(self, names: Mapping[str, str]) -> str:
        """The message, the settings called as `no_move_passes` calls them."""
        passes = no_move_passes(self.months, self.settings, names)
        return f"{passes}: the book would be empty; nothing written"


def build_book(
    warehouse: Path | str,
    months: str | list[str],
    out: Path,
    settings: BookSettings | None = None,
    *,
    allow_empty: bool = True,
    notes: list[str] | None = None,
    pruning: EvalPruning | None = None,
    resources: QueryResources = DEFAULT_RESOURCES,
    ranges: int | None = None,
    executor: Executor | None = None,
) -> BookManifest:
    """Write a Polyglot book from the chosen months' statistics; return its manifest.

    `resources`: DuckDB's memory limit and where it spills (the machine's defaults). The book
    is summed a range of keys at a time, as many ranges (`ranges`, by default as many as keep
    each within the memory limit: `ranges_for`) in key order, each written before the next is
    read: the memory is one range's, however many months. (Pruning by evaluation, and a side's
    book over months without `white_to_move`, judge the whole book at once: one range.)

    `executor` (such as `distributed.Client(...).get_executor(retries=2)`): each range is
    summed in a task of its own, each month hashed in another, and the ranges written here in
    key order as they come: the same bytes. Its workers must reach the warehouse (a bucket, or
    a folder every machine mounts). A range that fails fails the book: none is written.

    With `pruning`, the moves that lose by the stored evaluations are left out
    (pipelines.evals.pruning) and the manifest records the rule and its counts; without it the
    book is PolyGlot's.

    `warehouse` may be a URL in object storage (s3://...): its months are read where they are
    (pipelines.warehouse.stored), each hashed while it is read, as a local month is.

    `months` is a list of months or a selection as `pipelines.warehouse.months` reads it
    (`2024-01,2024-03`, `2023-01..2024-06`, `all`); every month chosen must be in the warehouse.

    A book no move enters is an empty file, unless `allow_empty` is off: then EmptyBook is
    raised and nothing is written.

    A year whose twelve months are all chosen and which was compacted
    (pipelines.warehouse.yearly) is read from its yearly file while that still matches the
    months; a stale one is left out (the months are read), with a line in `notes`. A book of
    one side over months ingested before `white_to_move` leaves out the positions no walk from
    a start position reaches, with a line in `notes` saying how many.
    """
    out = Path(out)
    for path in (out, book_manifest_path(out)):
        check_output(path)
    with output_lock(out, book_manifest_path(out)):
        return _build_book(
            warehouse, months, out, settings, allow_empty=allow_empty, notes=notes,
            pruning=pruning, resources=resources, ranges=ranges, executor=executor,
        )  # fmt: skip


def _build_book(
    warehouse: Path | str,
    months: str | list[str],
    out: Path,
    settings: BookSettings | None,
    *,
    allow_empty: bool,
    notes: list[str] | None,
    pruning: EvalPruning | None = None,
    resources: QueryResources = DEFAULT_RESOURCES,
    ranges: int | None = None,
    executor: Executor | None = None,
) -> BookManifest:
    """build_book, under the output's lock."""
    settings = settings or BookSettings()
    started = time.monotonic()
    remote = is_remote(warehouse)
    have = stored_months(str(warehouse)) if remote else available_months(Path(warehouse))
    wanted = select_months(months, available=have) if isinstance(months, str) else list(months)
    missing = missing_months(wanted, have)
    if missing:
        raise ChesspipeError(f"{missing} in {warehouse} (ingest them first)")
    # A store's months are read as they are: its compacted years are not looked for.
    choice = (
        YearlyChoice((), tuple(wanted), ()) if remote else choose_years(Path(warehouse), wanted)
    )
    if notes is not None:
        notes.extend(f"{note}; its months were read instead" for note in choice.notes)
    yearly = [yearly_file(Path(warehouse), year) for year in choice.years]
    sql, params = book_query(list(choice.months), settings, yearly=yearly)
    judged: list[Pruning] = []
    walked: list[SideKeys] = []

    manifest_file = book_manifest_path(out)
    outputs = OutputSet(out, manifest_file, sync=True)  # the book, then its manifest
    staged = outputs.path(out)

    def read(pinned: list[StoredMonth] | None = None) -> tuple[int, int, int]:
        """Write the book's entries into `staged`, a key range at a time; return (entries,
        positions, games of the entries)."""
        con = connect(warehouse, pinned=pinned, resources=resources)
        judged.clear()
        walked.clear()
        try:
            rows = survey(
                con, list(choice.months), settings, yearly,
                ranked=False, sided=settings.side is not None,
            )  # fmt: skip
            keys = None
            if settings.side and not rows.sided:
                walked.append(side_keys(con, wanted, sql, params, settings))
                keys = walked[0].keys

            def narrowed(query: str, values: list[Any]) -> tuple[str, list[Any]]:
                if keys is not None:
                    return only_keys(query, values, keys)
                return only_side(query, values, settings) if settings.side else (query, values)

            parts = [narrowed(sql, params)]
            if pruning is not None:
                judged.append(pruned_moves(con, *parts[0], pruning))
                con.register("pruned", _pairs_table(judged[0].pruned))
                whole = book_query(list(choice.months), settings, yearly=yearly, without="pruned")
                parts = [narrowed(*whole)]
            elif keys is None:
                limit = resources.memory_limit or default_memory_limit()
                count = ranges if ranges is not None else ranges_for(rows.rows, limit)
                if executor is not None and ranges is None:
                    count = max(count, CLUSTER_RANGES)  # work for every worker
                if count > 1:
                    ranked = survey(con, list(choice.months), settings, yearly, sided=False)
                    parts = [
                        narrowed(
                            *book_query(
                                list(choice.months),
                                settings,
                                yearly=yearly,
                                key_range=key_range,
                                ranked=ranked.ranked,
                            )
                        )  # fmt: skip
                        for key_range in key_ranges(count)
                    ]
            stream = rows.rows >= STREAM_ROWS
            entries = positions = games = 0
            with open(staged, "wb") as sink:  # each attempt writes the book again
                counted: Iterator[EntryCounts]
                if executor is not None and keys is None and pruning is None:
                    calls = [(warehouse, pinned, *part, resources, stream) for part in parts]
                    units = ((n, partial(range_entries, *call)) for n, call in enumerate(calls))
                    done = (found for _, found in in_order(executor, units, in_flight=AHEAD))
                    counted = written(done, sink)
                else:
                    counted = (write_entries(con, *part, sink, stream=stream) for part in parts)
                for counts in counted:
                    entries += counts.entries
                    positions += counts.positions  # a position is in one range only
                    games += counts.games
        finally:
            con.close()
        return entries, positions, games

    # A month re-ingested meanwhile: the book reads one version of it (stable_read). Each file
    # read is hashed meanwhile, on threads of its own (on the cluster's workers, a month a
    # task): a book is never built from a file that is not the one its manifest records.
    def verified_read(pinned: list[StoredMonth] | None = None) -> tuple[int, int, int]:
        def checking(files: list[Any]) -> Callable[[], None]:
            if pinned is not None:
                return partial(check_stored, str(warehouse), files)
            return partial(check_contents, Path(warehouse), files)

        files: list[Any] = (
            list(pinned)
            if pinned is not None
            else [
                *(month_expected(Path(warehouse), month) for month in choice.months),
                *(year_expected(Path(warehouse), year) for year in choice.years),
            ]
        )
        with ThreadPoolExecutor(max_workers=1) as pool:
            if executor is not None:  # a file a task
                verified = [executor.submit(checking([file])) for file in files]
            else:  # all on a thread here, hashed two at a time
                verified = [pool.submit(checking(files))]
            try:
                found = read(pinned)
            except DamagedMonth:
                raise
            except BaseException:
                for check in verified:
                    check.result()  # a damaged file is what went wrong: say that
                raise
            for check in verified:
                check.result()
        return found

    with outputs:
        if remote:
            found = stored_read(str(warehouse), choice.months, verified_read)
        else:
            found = stable_read(Path(warehouse), verified_read)
        entries, positions, entry_games = found
        if walked and walked[0].unreached and notes is not None:
            notes.append(
                f"{walked[0].unreached:,} positions of the book are reached by no walk from a "
                "start position through the statistics' moves, so whose move it is there is "
                "not known: left out (months ingested before `white_to_move`; re-ingest them "
                "to keep these)"
            )
        if not entries and not allow_empty:
            raise EmptyBook(wanted, settings)
        manifest = BookManifest(
            chesspipe_version=__version__,
            out=str(out),
            months=tuple(wanted),
            settings=settings,
            entries=int(entries),
            positions=int(positions),
            entry_games=int(entry_games),
            size=staged.stat().st_size,
            sha256=file_sha256(staged),
            seconds=round(time.monotonic() - started, 3),
            finished_at=datetime.now(UTC).isoformat(timespec="seconds"),
            warehouse=str(warehouse) if remote else str(Path(warehouse).resolve()),
            pruning=(
                PruningRecord(
                    str(Path(pruning.evals).resolve()), pruning.settings, judged[0].counts
                )
                if pruning is not None
                else None
            ),
        )
        write_json(outputs.path(manifest_file), manifest.to_json())
    return manifest
