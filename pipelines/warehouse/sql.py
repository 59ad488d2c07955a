"""Ad hoc SQL over the move statistics, in chess terms."""

from __future__ import annotations

import contextlib
import os
import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, TypeVar, overload

from pipelines.errors import ChesspipeError
from pipelines.sources.object_store import is_remote
from pipelines.warehouse.evals_files import eval_parts
from pipelines.warehouse.explorer_files import (
    GAMES_COLUMNS,
    GAMES_FILE,
    MONTH_FILES,
    explorer_dir,
    explorer_month_dir,
)
from pipelines.warehouse.integrity import DamagedMonth, check_opened
from pipelines.warehouse.layout import (
    available_months,
    complete_months,
    manifest_path,
    month_manifest,
    partition_file,
    recorded_plies,
    sql_list,
    sql_paths,
)
from pipelines.warehouse.openings import facts, opening_files, openings_dir
from pipelines.warehouse.read_only import ReadOnlyConnection
from pipelines.warehouse.resources import DEFAULT_RESOURCES, QueryResources
from pipelines.warehouse.stored import StoredMonth, pin_months, register, stored_months, stored_read
from pipelines.warehouse.yearly import fresh_yearly_files
from schemas.evals import EMPTY_EVALS_SQL, EVALS_ORDER, LINES_SQL, SCORE_SQL, parts_sql

if TYPE_CHECKING:
    import duckdb


class ReadNotAllowed(ValueError):
    """A query that opens a file outside the warehouse and the folders it may read."""

    def __init__(self, path: str) -> None:
        super().__init__(
            f"the query opens {path}: a query reads the warehouse's statistics and the "
            "bundled opening names, no other file"
        )
        self.path = path


#: DuckDB's message when a locked connection is asked for a file it may not open.
_NOT_ALLOWED = re.compile(r'Permission Error: Cannot access (?:file|directory) "(.*?)"')


class QueryTimedOut(ChesspipeError):
    """A query stopped because it ran longer than it was allowed."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"the query ran for {seconds:g} s and was stopped (its time limit)")
        self.seconds = seconds


#: How long a query may run unless told otherwise: far past any query of the statistics a
#: person means (a position over every month takes a fraction of a second), short of a
#: cross join that would run for days.
DEFAULT_TIMEOUT = 300.0


@contextlib.contextmanager
def time_limit(con: Any, seconds: float | None) -> Iterator[None]:
    """Interrupt what `con` (a DuckDB connection, or its read-only wrapper) runs once
    `seconds` have passed (None: no limit); DuckDB's interrupt then raises QueryTimedOut."""
    import duckdb

    if seconds is None:
        yield
        return
    fired = threading.Event()

    def interrupt() -> None:
        fired.set()
        con.interrupt()

    timer = threading.Timer(seconds, interrupt)
    timer.daemon = True
    timer.start()
    try:
        yield
    except duckdb.InterruptException:
        if fired.is_set():
            raise QueryTimedOut(seconds) from None
        raise
    finally:
        timer.cancel()


def run_query(
    warehouse: Path | str,
    query: str,
    *,
    allow_write: bool = False,
    allow_read: Sequence[Path] = (),
    timeout: float | None = DEFAULT_TIMEOUT,
    resources: QueryResources = DEFAULT_RESOURCES,
    functions: Sequence[SqlFunction] = (),
) -> tuple[list[str], list[tuple[Any, ...]]]:
    """Run a query over the warehouse; return column names and rows (`functions`: more
    functions to register, as `connect` takes them).

    Unless `allow_write`, only statements that read are taken, and they open no file but the
    warehouse's statistics, the bundled opening names and what lies under `allow_read`
    (`connect`). A query still running after `timeout` seconds (None: no limit) is stopped:
    QueryTimedOut. `resources`: DuckDB's memory limit and where it spills. A warehouse URL
    (s3://...) is read where it is.
    """
    import duckdb

    remote = is_remote(warehouse)
    if not remote:
        warehouse = Path(warehouse)
        if not warehouse.is_dir():
            reason = "is not a folder" if warehouse.exists() else "does not exist"
            raise ValueError(f"warehouse {warehouse} {reason}")

    def attempt(pinned: list[StoredMonth] | None = None) -> tuple[list[str], list[tuple[Any, ...]]]:
        con = connect(
            warehouse,
            pinned=pinned,
            chess_terms=uses_chess_terms(query),
            allow_read=allow_read,
            allow_write=allow_write,
            resources=resources,
            functions=functions,
            games=True,
        )
        try:
            with time_limit(con, timeout):
                result = con.execute(query)  # a read-only connection refuses what does not read
                columns = [d[0] for d in result.description] if result.description else []
                return columns, result.fetchall() if result.description else []
        finally:
            con.close()

    try:
        # A query that may write runs once; one that reads sees one version of each month.
        if allow_write:
            return attempt()
        if remote:
            return stored_read(str(warehouse), stored_months(str(warehouse)), attempt)
        return stable_read(Path(warehouse), attempt)
    except duckdb.PermissionException as exc:
        refused = _NOT_ALLOWED.search(str(exc))
        if refused is None:
            raise ValueError(f"SQL error: {duckdb_message(str(exc))}") from None
        raise ReadNotAllowed(refused.group(1)) from None
    except duckdb.Error as exc:
        raise ValueError(f"SQL error: {duckdb_message(str(exc))}") from None


T = TypeVar("T")

#: How many times a read runs while the files it reads keep being replaced (a month is
#: replaced once a run: a read that meets several replacements in a row meets a busy loop).
READ_ATTEMPTS = 5


def stable_read(warehouse: Path, read: Callable[[], T], *, attempts: int | None = None) -> T:
    """Return what `read` read from the warehouse's statistics while none of their files was
    replaced: a run publishing a month meanwhile (a new file under the same name) makes the
    read run again, so that it sees one version of each month, never parts of two.

    Raises ChesspipeError after `attempts` reads that each saw a file replaced.
    """
    import duckdb

    attempts = READ_ATTEMPTS if attempts is None else attempts
    for _ in range(attempts):
        files = statistics_files(warehouse)
        before = _identities(files)
        try:
            found = read()
        except (duckdb.Error, DamagedMonth):
            # A month's file and its manifest are renamed one after the other: a read between
            # the two sees a partition its manifest does not record, and reads again.
            time.sleep(0.01)
            if _identities(files) == before:
                raise
            continue
        if _identities(files) == before:
            return found
    raise ChesspipeError(
        f"the statistics in {warehouse} were replaced during each of {attempts} reads "
        "(a run is publishing them); try again"
    )


def statistics_files(warehouse: Path) -> list[Path]:
    """The files the views read: each month's partition and its manifest (renamed in after
    it), the fresh compacted years, the evaluation store's parts, and each explored month's
    games and manifest."""
    root = Path(warehouse).absolute()
    present = available_months(root)
    months = [partition_file(root, month) for month in present]
    manifests = [manifest_path(root, month) for month in present]
    explored = complete_months(explorer_dir(root), MONTH_FILES)
    games = [explorer_month_dir(root, month) / GAMES_FILE for month in explored]
    games += [month_manifest(explorer_dir(root), month) for month in explored]
    return months + manifests + fresh_yearly_files(root) + eval_parts(root) + games


def _identities(files: list[Path]) -> list[tuple[int, int, int] | None]:
    """Which file each path names now (inode, size, mtime; None: no file)."""
    found: list[tuple[int, int, int] | None] = []
    for path in files:
        try:
            stat = os.stat(path)
        except FileNotFoundError:
            found.append(None)
            continue
        found.append((stat.st_ino, stat.st_size, stat.st_mtime_ns))
    return found


#: What DuckDB puts before the message of an exception raised in a Python function.
_UDF_PREFIX = re.compile(
    r"Invalid Input Error: Python exception occurred while executing the UDF: (\w+Error: )?"
)


def _udf_message(message: str) -> str:
    """A chess function's error as its own message, without DuckDB's wrapping."""
    return _UDF_PREFIX.sub("", message)


def duckdb_message(message: str) -> str:
    """A DuckDB error on one line: its message and hints ("Did you mean", candidate bindings).

    DuckDB puts the hints on lines after the message, then a blank line and the query's text
    with a caret under the fault; the quoted query is left out, the hints are kept.
    """
    lines = []
    for line in _udf_message(message).splitlines():
        if not line.strip():
            break
        lines.append(line.strip())
    return " ".join(lines)


#: Words of a query that need the chess functions, the openings view or `moves_after`; and
#: the queries that list what there is to query (so that they list those too).
_CHESS_TERMS = re.compile(
    r"\b(key_of_fen|key_after|fen_after|san|openings|moves_after)\b"
    r"|\bshow\s+(all\s+)?tables\b|\binformation_schema\b|\bduckdb_(views|tables)\b",
    re.IGNORECASE,
)

#: A line given as a string literal to the functions that play one from the start position.
_LINE_ARGUMENT = re.compile(
    r"\b(?:key_after|fen_after|moves_after)\s*\(\s*'((?:[^']|'')*)'", re.IGNORECASE
)


class DeepLine(NamedTuple):
    """A line of a query that reaches deeper than some months were counted."""

    line: str
    plies: int
    counted: int
    months: tuple[str, ...]


def deep_lines(warehouse: Path | str, query: str) -> list[DeepLine]:
    """The lines written in a query (`key_after('...')`, ...) that reach a ply no month of the
    warehouse counted: the statistics have no rows there, and the query answers nothing.

    Lines that cannot be played are left to the query's own error.
    """
    lines = [m.group(1).replace("''", "'") for m in _LINE_ARGUMENT.finditer(query)]
    if not lines:
        return []
    from pipelines.warehouse.chess_functions import ChessInputError, board_after

    counted: dict[int, list[str]] = {}
    if is_remote(warehouse):
        pinned = pin_months(str(warehouse), stored_months(str(warehouse)))
        recorded = [(month.month, month.plies) for month in pinned]
    else:
        present = available_months(Path(warehouse))
        recorded = [(month, recorded_plies(Path(warehouse), month)) for month in present]
    for month, plies in recorded:
        if plies is not None:
            counted.setdefault(plies, []).append(month)
    if not counted:
        return []
    deepest = max(counted)
    found = []
    for line in dict.fromkeys(lines):
        try:
            plies = board_after(line).ply()
        except ChessInputError:
            continue
        # A position after N plies has rows only where more than N plies were counted.
        if plies >= deepest:
            short = tuple(m for depth, ms in sorted(counted.items()) for m in ms if depth <= plies)
            found.append(DeepLine(line, plies, deepest, short))
    return found


def uses_chess_terms(query: str) -> bool:
    """Whether a query may call a chess function or read the openings view."""
    return _CHESS_TERMS.search(query) is not None


#: No statistics: the columns of MOVE_STATS_SCHEMA and the partition's, no rows.
_EMPTY_STATS = (
    "(SELECT NULL::UBIGINT AS key, NULL::USMALLINT AS move, NULL::VARCHAR AS speed, "
    "NULL::USMALLINT AS rating_band, NULL::USMALLINT AS rating_group, NULL::UBIGINT AS games, "
    "NULL::UBIGINT AS wins, NULL::UBIGINT AS draws, NULL::UBIGINT AS losses, "
    "NULL::UBIGINT AS rating_sum, NULL::UBIGINT AS first_play, NULL::BOOLEAN AS white_to_move, "
    "{partition} WHERE false)"
)


@overload
def connect(
    warehouse: Path | str,
    *,
    pinned: Sequence[StoredMonth] | None = ...,
    resources: QueryResources = ...,
    threads: int | None = ...,
    chess_terms: bool = ...,
    allow_read: Sequence[Path] = ...,
    allow_write: Literal[False] = ...,
    functions: Sequence[SqlFunction] = ...,
    games: bool = ...,
) -> ReadOnlyConnection: ...
@overload
def connect(
    warehouse: Path | str,
    *,
    pinned: Sequence[StoredMonth] | None = ...,
    resources: QueryResources = ...,
    threads: int | None = ...,
    chess_terms: bool = ...,
    allow_read: Sequence[Path] = ...,
    allow_write: Literal[True],
    functions: Sequence[SqlFunction] = ...,
    games: bool = ...,
) -> duckdb.DuckDBPyConnection: ...
@overload
def connect(
    warehouse: Path | str,
    *,
    pinned: Sequence[StoredMonth] | None = ...,
    resources: QueryResources = ...,
    threads: int | None = ...,
    chess_terms: bool = ...,
    allow_read: Sequence[Path] = ...,
    allow_write: bool,
    functions: Sequence[SqlFunction] = ...,
    games: bool = ...,
) -> ReadOnlyConnection | duckdb.DuckDBPyConnection: ...
def connect(
    warehouse: Path | str,
    *,
    pinned: Sequence[StoredMonth] | None = None,
    resources: QueryResources = DEFAULT_RESOURCES,
    threads: int | None = None,
    chess_terms: bool = False,
    allow_read: Sequence[Path] = (),
    allow_write: bool = False,
    functions: Sequence[SqlFunction] = (),
    games: bool = False,
) -> ReadOnlyConnection | duckdb.DuckDBPyConnection:
    """Open DuckDB with a view `move_stats` over every month, `move_stats_yearly` over the
    compacted years that still match their months (pipelines.warehouse.yearly; the same rows
    summed over each year's months, with a `year` column), and the `uci(move)` and
    `hexkey(key)` macros; with `chess_terms`, also the chess functions and the `openings` view
    (`register_chess_terms`); with `games`, the view `games` over the explorer's games of every
    explored month (`_games_view`: off for the readers that never query it, such as book
    builds, which a damaged explorer month must not stop).
    `functions` are more functions to register (SqlFunction: the rooms above this one give
    theirs, as `pipelines.search.sql.SEARCH_FUNCTIONS`), and the macros that call them.

    The connection only reads: it runs only statements that read (a ReadOnlyConnection:
    others raise WriteNotAllowed before anything runs), DuckDB may open the files its views
    read and whatever lies under `allow_read` (files or folders), no other file, and no
    setting can be changed (`enable_external_access = false`, `allowed_paths`,
    `lock_configuration`). So no query reads elsewhere, loads an extension, creates a file
    or overwrites one of the views' own (which DuckDB's lock alone would let a
    `COPY ... (USE_TMP_FILE false)` do). `allow_write` gives DuckDB's own connection as it
    comes: any statement, any file, any setting.

    `resources` say how much memory DuckDB may hold (half the machine's by default) and where
    it spills past that: a private folder made for the connection (pipelines.warehouse.
    resources), removed with it.

    `chess_terms` is off by default because DuckDB imports NumPy to register a Python function
    (about 0.1 s), which a book build does not need.

    A warehouse URL (s3://...) is read where it is (pipelines.warehouse.stored): `move_stats`
    over the months `pinned` (by default every published month, pinned now); its
    `move_stats_yearly` and `evals` have no rows.
    """
    import duckdb

    config: dict[str, Any] = {"preserve_insertion_order": False}
    if threads is not None:
        config["threads"] = threads
    con = resources.connect(**config)  # spilling into a private folder of its own
    # No bar on a server's or a command's terminal (the setting is locked below); in Jupyter
    # without ipywidgets DuckDB refuses the setting, and has no bar to turn off.
    with contextlib.suppress(duckdb.InvalidInputException):
        con.execute("SET enable_progress_bar = false")
    con.execute(UCI_MACRO)
    read: list[Path] = []
    if chess_terms:
        read += register_chess_terms(con)
    months: list[Path | str]
    yearly: list[Path]
    parts: list[Path]
    if is_remote(warehouse):
        if pinned is None:
            pinned = pin_months(str(warehouse), stored_months(str(warehouse)))
        register(con, str(warehouse))
        months, yearly, parts = [month.url for month in pinned], [], []
    else:
        root = Path(warehouse).absolute()
        present = available_months(root)
        check_opened(Path(warehouse), present)  # sizes and times, as the manifests record them
        months = [partition_file(root, month) for month in present]
        yearly, parts = fresh_yearly_files(root), eval_parts(root)
    _stats_view(con, "move_stats", months, "month")
    _stats_view(con, "move_stats_yearly", yearly, "year")
    _evals_view(con, parts)
    games_read = (
        _games_view(con, Path(warehouse).absolute()) if games and not is_remote(warehouse) else []
    )
    for function in functions:
        function.register(con)
    if chess_terms:
        columns = {row[0] for row in con.execute("DESCRIBE move_stats").fetchall()}
        rated = "rating_sum" in columns
        con.execute(MOVES_AFTER.format(rating_sum="rating_sum" if rated else "NULL::UBIGINT"))
    if allow_write:
        return con
    lock(con, [*months, *yearly, *parts, *read, *games_read], allow_read)
    return ReadOnlyConnection(con)


class SqlFunction(NamedTuple):
    """A function to register on a connection: a Python function of Arrow arrays (DuckDB's
    `type='arrow'`, a vector of rows a call) under `name`, and macros over it (SQL text each:
    `CREATE MACRO ...`), so that its public names can take optional arguments."""

    name: str
    function: Callable[..., Any]
    parameters: tuple[str, ...]
    result: str
    macros: tuple[str, ...] = ()

    def register(self, con: duckdb.DuckDBPyConnection) -> None:
        from duckdb.func import ARROW, SPECIAL

        con.create_function(self.name, self.function, list(self.parameters), self.result,
                            type=ARROW, null_handling=SPECIAL)  # fmt: skip
        for macro in self.macros:
            con.execute(macro)


def _games_view(con: duckdb.DuckDBPyConnection, warehouse: Path) -> list[Path]:
    """Create the view `games`: the explorer's games of every explored month (`month` from
    the folder), the columns of schemas.explorer.GAMES_SCHEMA (GAMES_COLUMNS; those a month
    indexed before a column came read as null); return the files it reads. Each file's size is
    checked against its month's manifest first (DamagedMonth)."""
    import json

    files = []
    for month in complete_months(explorer_dir(warehouse), MONTH_FILES):
        path = explorer_month_dir(warehouse, month) / GAMES_FILE
        manifest = month_manifest(explorer_dir(warehouse), month)
        try:
            recorded = json.loads(manifest.read_text()).get("games_bytes")
            size = path.stat().st_size
        except (OSError, ValueError, AttributeError) as error:
            raise DamagedMonth(warehouse, f"explorer month {month}", path, str(error)) from None
        if recorded is not None and size != recorded:
            why = f"{size:,} bytes, the manifest says {recorded:,}"
            raise DamagedMonth(warehouse, f"explorer month {month}", path, why)
        files.append(path)
    columns = ", ".join(f"NULL::{kind} AS {name}" for name, kind in GAMES_COLUMNS)
    if files:
        source = (f"read_parquet({sql_paths(files)}, hive_partitioning = true, "
                  "union_by_name = true)")  # fmt: skip
        names = ", ".join(name for name, _ in GAMES_COLUMNS)
        con.execute(f"CREATE VIEW games AS SELECT month::VARCHAR AS month, {names} FROM "
                    f"(SELECT * FROM (SELECT {columns}, NULL::VARCHAR AS month WHERE false) "
                    f"UNION ALL BY NAME SELECT * FROM {source})")  # fmt: skip
    else:
        con.execute(f"CREATE VIEW games AS SELECT NULL::VARCHAR AS month, {columns} WHERE false")
    return files


def lock(
    con: duckdb.DuckDBPyConnection,
    files: Sequence[Path | str],
    allow_read: Sequence[Path] = (),
) -> None:
    """Let a DuckDB connection open `files` (paths, or URLs of a registered filesystem) and
    what lies under `allow_read` only, and lock its configuration so that no statement can
    widen that."""
    paths = [str(path) if is_remote(path) else str(Path(path).absolute()) for path in files]
    folders = []
    for extra in allow_read:
        extra = Path(extra).absolute()
        if extra.is_dir():
            folders.append(os.path.join(extra, ""))  # a folder, not every name it begins
        else:
            paths.append(str(extra))
    con.execute(f"SET allowed_paths = {sql_list(paths)}")
    con.execute(f"SET allowed_directories = {sql_list(folders)}")
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")


def _stats_view(
    con: duckdb.DuckDBPyConnection, name: str, files: Sequence[Path | str], partition: str
) -> None:
    """Create a view of statistics files partitioned by `partition` (a VARCHAR hive column);
    without files, a view of no rows with the same columns. Files that all predate the
    first-play rank (schemas.first_play) give a `first_play` column of nulls, and files that
    all predate the side to move a `white_to_move` column of nulls."""
    source = (
        f"read_parquet({sql_paths(files)}, hive_partitioning = true, "
        f"hive_types = {{'{partition}': VARCHAR}}, union_by_name = true)"
        if files
        else _EMPTY_STATS.format(partition=f"NULL::VARCHAR AS {partition}")
    )
    con.execute(f"CREATE VIEW {name} AS SELECT * FROM {source}")
    result = con.execute(f"SELECT * FROM {name} LIMIT 0")
    columns = {column[0] for column in result.description}
    result.fetchall()  # (finished: a result left open holds the connection)
    added = [
        f"NULL::{kind} AS {column}"
        for column, kind in (("first_play", "UBIGINT"), ("white_to_move", "BOOLEAN"))
        if column not in columns
    ]
    if added:
        con.execute(f"CREATE OR REPLACE VIEW {name} AS SELECT *, {', '.join(added)} FROM {source}")


#: The store's columns (schemas.evals.evals_schema()), none of its rows: an empty store.
def _evals_view(con: duckdb.DuckDBPyConnection, parts: list[Path]) -> None:
    """Create the view `evals`: one row per position of the evaluation store, its deepest
    evaluation (schemas.evals.EVALS_ORDER) over every part, with `score`, the evaluation as
    one number from the side to move (a mate on schemas.evals.MATE_SCORE's scale), and the lines
    schemas.evals.LINES_SQL chooses. Parts
    written before a column of schemas.evals.LATER_COLUMNS came read it as null."""
    source = parts_sql(sql_paths(parts)) if parts else f"({EMPTY_EVALS_SQL})"
    con.execute(
        f"CREATE VIEW evals AS SELECT * REPLACE ({LINES_SQL} AS lines), ({SCORE_SQL}) AS score "
        f"FROM {source} "
        f"QUALIFY row_number() OVER (PARTITION BY key ORDER BY {EVALS_ORDER}) = 1"
    )


#: `moves_after(line, ...)`: the moves played from the position a line reaches, as a table:
#: SAN and UCI, games, White wins, draws and Black wins, the mover's score, the movers' mean
#: rating; the filters as named arguments.
MOVES_AFTER = """
CREATE MACRO moves_after(line, since := NULL, until := NULL, speeds := NULL, min_band := 0)
AS TABLE
SELECT san(move::INTEGER, fen_after(line)) AS san, uci(move) AS uci, sum(games) AS games,
    CASE WHEN split_part(fen_after(line), ' ', 2) = 'w' THEN sum(wins) ELSE sum(losses) END
        AS white,
    sum(draws) AS draws,
    CASE WHEN split_part(fen_after(line), ' ', 2) = 'w' THEN sum(losses) ELSE sum(wins) END
        AS black,
    round((sum(wins) + sum(draws) / 2) / sum(games), 3) AS score,
    round(sum({rating_sum}) / sum(games))::INTEGER AS average_rating
FROM move_stats
WHERE key = key_after(line)
    AND (since IS NULL OR month >= since) AND (until IS NULL OR month <= until)
    AND (speeds IS NULL OR list_contains(string_split(speeds, ','), speed))
    AND rating_band >= min_band
GROUP BY move
ORDER BY games DESC, uci
"""


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


# The chess functions import python-chess on their first call, not before (`chesspipe sql`
# starts light). DuckDB reads their parameters from their signatures.


def _key_of_fen(fen: str) -> int:
    from pipelines.warehouse.chess_functions import key_of_fen

    return key_of_fen(fen)


def _key_after(moves: str) -> int:
    from pipelines.warehouse.chess_functions import key_after

    return key_after(moves)


def _fen_after(moves: str) -> str:
    from pipelines.warehouse.chess_functions import fen_after

    return fen_after(moves)


def _san(move: int, fen: str) -> str:
    from pipelines.warehouse.chess_functions import san

    return san(move, fen)


#: The chess functions: name, Python function, parameter types, return type (DuckDB types).
CHESS_FUNCTIONS: tuple[tuple[str, Callable[..., Any], tuple[str, ...], str], ...] = (
    ("key_of_fen", _key_of_fen, ("VARCHAR",), "UBIGINT"),
    ("key_after", _key_after, ("VARCHAR",), "UBIGINT"),
    ("fen_after", _fen_after, ("VARCHAR",), "VARCHAR"),
    ("san", _san, ("INTEGER", "VARCHAR"), "VARCHAR"),
)


def register_chess_terms(
    con: duckdb.DuckDBPyConnection, openings: Path | None = None
) -> list[Path]:
    """Add the chess functions and the `openings` view to a DuckDB connection; return the
    files the view reads (for `lock`).

    `key_of_fen(fen)`, `key_after(moves)`, `fen_after(moves)` and `san(move, fen)` run
    python-chess, imported on their first call; `openings` (eco, name, pgn, key, plies, fen)
    reads the named openings of `openings_dir()` (skipped when its files are absent).
    """
    for name, function, parameters, result in CHESS_FUNCTIONS:
        con.create_function(name, function, list(parameters), result)
    folder = openings_dir() if openings is None else Path(openings)
    files = opening_files(folder)
    if not files:
        return []

    def fact(index: int) -> Callable[[str], Any]:
        def call(pgn: str) -> Any:
            found = facts(folder).get(pgn)
            if found is None:  # not a line of the files: replay it
                from pipelines.warehouse.chess_functions import opening_facts

                found = opening_facts(pgn)
            return found[index]

        return call

    for index, (name, result) in enumerate(
        (("_opening_key", "UBIGINT"), ("_opening_plies", "INTEGER"), ("_opening_fen", "VARCHAR"))
    ):
        con.create_function(name, fact(index), ["VARCHAR"], result)
    con.execute(
        "CREATE VIEW openings AS SELECT eco, name, pgn, _opening_key(pgn) AS key, "
        "_opening_plies(pgn) AS plies, _opening_fen(pgn) AS fen "
        f"FROM read_csv({sql_paths(files)}, delim = '\t', header = true, quote = '', escape = '', "
        "auto_detect = false, columns = {'eco': 'VARCHAR', 'name': 'VARCHAR', 'pgn': 'VARCHAR'})"
    )
    return files
