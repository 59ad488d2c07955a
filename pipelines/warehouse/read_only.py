"""A DuckDB connection that runs only statements that read.

DuckDB's own lock (`enable_external_access = false`, `allowed_paths`, `lock_configuration`)
keeps a connection to the files its views read, but it cannot tell reading a file from
writing it: `COPY ... TO '<one of those files>' (USE_TMP_FILE false)` overwrites it. A
`ReadOnlyConnection` closes that by refusing, before DuckDB runs anything, every statement
that is not a read, wherever SQL text enters: `execute`, `executemany`, `sql`, `query`,
`from_query`, a cursor's, and a relation's `query`.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import duckdb

#: Statements that only read. DuckDB parses WITH, VALUES, FROM-first queries, DESCRIBE, SHOW,
#: SUMMARIZE and UNPIVOT as SELECT; anything else (SET, PRAGMA, CALL, COPY, EXPORT, ATTACH,
#: CREATE, INSERT, LOAD, ...) is refused.
READ_ONLY_STATEMENTS = frozenset({"SELECT", "EXPLAIN"})


class WriteNotAllowed(ValueError):
    """A statement that does not only read, on a connection that only reads."""

    def __init__(self, kind: str, what: str = "statements") -> None:
        super().__init__(
            f"{kind} {what} are refused: a query only reads (SELECT, WITH, VALUES, "
            "DESCRIBE, SHOW, SUMMARIZE, EXPLAIN)"
        )
        self.kind = kind


def check_reads(con: duckdb.DuckDBPyConnection, query: str | duckdb.Statement) -> None:
    """Raise WriteNotAllowed unless every statement of `query` (SQL text or a parsed
    statement) only reads; DuckDB's parser decides what each statement is."""
    statements = con.extract_statements(query) if isinstance(query, str) else [query]
    for statement in statements:
        kind = statement_kind(statement)
        if kind == "MULTI" and _PIVOT.match(statement.query):
            continue  # PIVOT reads: DuckDB runs it as a query and the enum types it makes
        if kind not in READ_ONLY_STATEMENTS:
            raise WriteNotAllowed(kind)


#: A PIVOT statement (DuckDB parses it as MULTI: it makes the enum types of its columns, then
#: selects), comments and spaces before it allowed.
_PIVOT = re.compile(r"(?:\s|--[^\n]*\n|/\*.*?\*/)*PIVOT\b", re.IGNORECASE | re.DOTALL)


def statement_kind(statement: duckdb.Statement) -> str:
    """A statement's type as DuckDB names it, or, for a type this DuckDB's Python binding has
    no name for (UPDATE EXTENSIONS), the statement's first two words."""
    try:
        return str(statement.type.name)
    except ValueError:
        return " ".join(statement.query.split()[:2]).upper()


#: A relation's methods that create or change a table or a view, or write a file: refused as
#: the statements that do it are (`rel.create_view('move_stats', replace=True)` would make
#: every later query of the view recurse for ever).
RELATION_WRITERS = frozenset(
    {"create", "create_view", "to_view", "to_table", "insert", "insert_into", "update",
     "to_csv", "to_parquet", "write_csv", "write_parquet"}
)  # fmt: skip

#: A connection's methods that insert rows, load code, profile to a file or add a file system.
CONNECTION_WRITERS = frozenset(
    {"append", "appender", "query_appender", "install_extension", "load_extension",
     "register_filesystem", "unregister_filesystem", "enable_profiling"}
)  # fmt: skip


def _refuse_writer(name: str, writers: frozenset[str]) -> None:
    if name in writers:
        raise WriteNotAllowed(f"{name}()", what="calls")


def _public(name: str) -> None:
    """Refuse DuckDB's private attributes (a relation's `_con` is the unchecked connection);
    IPython's display hooks stay reachable."""
    if name.startswith("_") and not name.startswith(("_repr_", "_ipython_")):
        raise AttributeError(name)


class ReadOnlyRelation:
    """A DuckDB relation whose `query` runs only statements that read; every other method is
    DuckDB's but those that create or change a table or a view or write a file
    (RELATION_WRITERS), and relations it returns are read-only too."""

    __slots__ = ("_connection", "_relation")

    def __init__(self, relation: Any, connection: duckdb.DuckDBPyConnection) -> None:
        self._relation = relation
        self._connection = connection

    def query(self, virtual_table_name: str, sql_query: str) -> ReadOnlyRelation:
        """DuckDB's `query`, refusing SQL that does not only read."""
        check_reads(self._connection, sql_query)
        return ReadOnlyRelation(
            self._relation.query(virtual_table_name, sql_query), self._connection
        )

    def __getattr__(self, name: str) -> Any:
        _public(name)
        _refuse_writer(name, RELATION_WRITERS)
        return _guarded(getattr(self._relation, name), self._connection, self)

    def __getitem__(self, item: Any) -> Any:
        return _wrap(self._relation[item], self._connection, self)

    def __len__(self) -> int:
        return len(self._relation)

    def __repr__(self) -> str:
        return repr(self._relation)

    def __str__(self) -> str:
        return str(self._relation)


class ReadOnlyConnection:
    """A DuckDB connection that runs only statements that read (`READ_ONLY_STATEMENTS`):
    any other raises WriteNotAllowed before anything runs, and one refused statement refuses
    the whole query. Every other method is DuckDB's; the relations and cursors it gives are
    read-only too."""

    __slots__ = ("_connection",)

    def __init__(self, connection: duckdb.DuckDBPyConnection) -> None:
        self._connection = connection

    def execute(
        self, query: str | duckdb.Statement, parameters: object | None = None
    ) -> ReadOnlyConnection:
        """DuckDB's `execute`, refusing SQL that does not only read; returns this connection
        (`con.execute(...).fetchall()`)."""
        check_reads(self._connection, query)
        self._connection.execute(query, parameters)
        return self

    def executemany(
        self, query: str | duckdb.Statement, parameters: object | None = None
    ) -> ReadOnlyConnection:
        """DuckDB's `executemany`, refusing SQL that does not only read."""
        check_reads(self._connection, query)
        self._connection.executemany(query, parameters)
        return self

    def sql(self, query: str | duckdb.Statement, *args: Any, **kwargs: Any) -> ReadOnlyRelation:
        """DuckDB's `sql`, refusing SQL that does not only read."""
        check_reads(self._connection, query)
        return ReadOnlyRelation(self._connection.sql(query, *args, **kwargs), self._connection)

    query = sql
    from_query = sql

    def cursor(self) -> ReadOnlyConnection:
        """A cursor of the same database (its lock included), read-only too."""
        return ReadOnlyConnection(self._connection.cursor())

    duplicate = cursor

    def close(self) -> None:
        self._connection.close()

    def __enter__(self) -> ReadOnlyConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __getattr__(self, name: str) -> Any:
        _public(name)
        _refuse_writer(name, CONNECTION_WRITERS)
        return _guarded(getattr(self._connection, name), self._connection, self)

    def __repr__(self) -> str:
        return f"ReadOnlyConnection({self._connection!r})"


def _guarded(value: Any, connection: duckdb.DuckDBPyConnection, owner: Any) -> Any:
    """A DuckDB attribute as the read-only wrappers give it: methods whose result is wrapped."""
    if not callable(value):
        return value

    def call(*args: Any, **kwargs: Any) -> Any:
        return _wrap(value(*args, **kwargs), connection, owner)

    call.__doc__ = value.__doc__
    return call


def _wrap(result: Any, connection: duckdb.DuckDBPyConnection, owner: Any) -> Any:
    """A result of DuckDB's: the connection itself as its read-only wrapper, a relation as a
    read-only relation, anything else as it is."""
    import duckdb

    if result is connection:
        return owner if isinstance(owner, ReadOnlyConnection) else ReadOnlyConnection(result)
    if isinstance(result, duckdb.DuckDBPyConnection):
        return ReadOnlyConnection(result)
    if isinstance(result, duckdb.DuckDBPyRelation):
        return ReadOnlyRelation(result, connection)
    return result
