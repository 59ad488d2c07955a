"""Ad hoc SQL over the move statistics."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pipelines.warehouse import connect


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
