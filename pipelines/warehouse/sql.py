"""Ad hoc SQL over the move statistics, in chess terms."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipelines.warehouse.layout import available_months, sql_paths, sql_string, stats_dir
from pipelines.warehouse.openings import facts, opening_files, openings_dir
from pipelines.warehouse.yearly import fresh_yearly_files

if TYPE_CHECKING:
    import duckdb


#: Statements that only read: anything else (COPY ... TO, EXPORT, ATTACH, CREATE, INSERT, ...)
#: needs `allow_write`, so that a query cannot overwrite the warehouse's files by accident.
READ_ONLY_STATEMENTS = frozenset({"SELECT", "EXPLAIN", "SET", "VARIABLE_SET", "PRAGMA"})


class WriteNotAllowed(ValueError):
    """A statement that may write files, in a query that was to read only."""

    def __init__(self, kind: str) -> None:
        super().__init__(f"{kind} statements may write files; queries only read")
        self.kind = kind


def run_query(
    warehouse: Path, query: str, *, allow_write: bool = False
) -> tuple[list[str], list[tuple[Any, ...]]]:
    """Run a query over the warehouse; return column names and rows.

    Only statements that read are taken unless `allow_write`.
    """
    import duckdb

    warehouse = Path(warehouse)
    if not warehouse.is_dir():
        reason = "is not a folder" if warehouse.exists() else "does not exist"
        raise ValueError(f"warehouse {warehouse} {reason}")
    con = connect(warehouse, chess_terms=uses_chess_terms(query))
    try:
        if not allow_write:
            for statement in con.extract_statements(query):
                kind = statement.type.name
                if kind not in READ_ONLY_STATEMENTS:
                    raise WriteNotAllowed(kind)
        result = con.execute(query)
        columns = [d[0] for d in result.description] if result.description else []
        rows = result.fetchall() if result.description else []
    except duckdb.Error as exc:
        raise ValueError(f"SQL error: {duckdb_message(str(exc))}") from None
    finally:
        con.close()
    return columns, rows


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


#: Words of a query that need the chess functions or the openings view.
_CHESS_TERMS = re.compile(r"\b(key_of_fen|key_after|fen_after|san|openings)\b", re.IGNORECASE)


def uses_chess_terms(query: str) -> bool:
    """Whether a query may call a chess function or read the openings view."""
    return _CHESS_TERMS.search(query) is not None


#: No statistics: the columns of MOVE_STATS_SCHEMA and the partition's, no rows.
_EMPTY_STATS = (
    "(SELECT NULL::UBIGINT AS key, NULL::USMALLINT AS move, NULL::VARCHAR AS speed, "
    "NULL::USMALLINT AS rating_band, NULL::USMALLINT AS rating_group, NULL::UBIGINT AS games, "
    "NULL::UBIGINT AS wins, NULL::UBIGINT AS draws, NULL::UBIGINT AS losses, "
    "NULL::UBIGINT AS rating_sum, {partition} WHERE false)"
)


def connect(
    warehouse: Path, memory_limit: str = "2GB", chess_terms: bool = False
) -> duckdb.DuckDBPyConnection:
    """Open DuckDB with a view `move_stats` over every month, `move_stats_yearly` over the
    compacted years that still match their months (pipelines.warehouse.yearly; the same rows
    summed over each year's months, with a `year` column), and the `uci(move)` and
    `hexkey(key)` macros; with `chess_terms`, also the chess functions and the `openings` view
    (`register_chess_terms`).

    `chess_terms` is off by default because DuckDB imports NumPy to register a Python function
    (about 0.1 s), which a book build does not need.
    """
    import duckdb

    con = duckdb.connect()
    con.execute(f"SET memory_limit = '{memory_limit}'")
    con.execute("SET preserve_insertion_order = false")
    con.execute(UCI_MACRO)
    if chess_terms:
        register_chess_terms(con)
    months = stats_dir(Path(warehouse)) / "month=*" / "*.parquet"
    has_months = bool(available_months(Path(warehouse)))
    _stats_view(con, "move_stats", sql_string(months) if has_months else None, "month")
    yearly = fresh_yearly_files(Path(warehouse))
    _stats_view(con, "move_stats_yearly", sql_paths(yearly) if yearly else None, "year")
    return con


def _stats_view(
    con: duckdb.DuckDBPyConnection, name: str, files: str | None, partition: str
) -> None:
    """Create a view of statistics files (a DuckDB glob or list) partitioned by `partition`
    (a VARCHAR hive column); without files, a view of no rows with the same columns."""
    source = (
        f"read_parquet({files}, hive_partitioning = true, "
        f"hive_types = {{'{partition}': VARCHAR}}, union_by_name = true)"
        if files is not None
        else _EMPTY_STATS.format(partition=f"NULL::VARCHAR AS {partition}")
    )
    con.execute(f"CREATE VIEW {name} AS SELECT * FROM {source}")


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


def register_chess_terms(con: duckdb.DuckDBPyConnection, openings: Path | None = None) -> None:
    """Add the chess functions and the `openings` view to a DuckDB connection.

    `key_of_fen(fen)`, `key_after(moves)`, `fen_after(moves)` and `san(move, fen)` run
    python-chess, imported on their first call; `openings` (eco, name, pgn, key, plies, fen)
    reads the named openings of `openings_dir()` (skipped when its files are absent).
    """
    for name, function, parameters, result in CHESS_FUNCTIONS:
        con.create_function(name, function, list(parameters), result)
    folder = openings_dir() if openings is None else Path(openings)
    files = opening_files(folder)
    if not files:
        return

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
