"""Ad hoc SQL over the move statistics."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipelines.warehouse.layout import available_months, stats_dir

if TYPE_CHECKING:
    import duckdb


def run_query(warehouse: Path, query: str) -> tuple[list[str], list[tuple[Any, ...]]]:
    """Run a query over the warehouse; return column names and rows."""
    import duckdb

    con = connect(Path(warehouse))
    try:
        result = con.execute(query)
    except duckdb.Error as exc:
        raise ValueError(f"SQL error: {exc}") from None
    columns = [d[0] for d in result.description] if result.description else []
    rows = result.fetchall() if result.description else []
    con.close()
    return columns, rows


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
