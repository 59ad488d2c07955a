"""The evaluation store: engine evaluations by Polyglot key in the warehouse, the deepest of a
position winning (the files: pipelines.warehouse.evals_files; the columns: schemas.evals)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

from pipelines.warehouse.evals_files import eval_parts, new_part_path
from pipelines.warehouse.layout import ROW_GROUP_ROWS, sql_paths, write_row_groups
from schemas.atomic_files import atomic_path
from schemas.evals import EVALS_ORDER, LINES_SQL, MATE_SCORE, evals_schema, parts_sql


def _score(cp: int | None, mate: int | None) -> int:
    if mate is None:
        assert cp is not None
        return cp
    return MATE_SCORE - mate if mate > 0 else -MATE_SCORE - mate


class EngineLine(NamedTuple):
    """One principal variation of a search of several (MultiPV): its first move (a Polyglot
    move), `cp` or `mate` from the side to move, its moves in UCI."""

    move: int
    cp: int | None
    mate: int | None
    pv: str | None

    @property
    def score(self) -> int:
        """The line's evaluation as one number from the side to move (mates as
        MATE_SCORE's scale has them)."""
        return _score(self.cp, self.mate)


class Evaluation(NamedTuple):
    """A position's evaluation, as a row of the store: `cp` or `mate` from the side to move;
    `lines`, where the search gave several, its principal variations in the engine's MultiPV
    order (the first is the row's own); `wdl`, where the engine gave it, its win/draw/loss
    expectation per mille from the side to move; `halfmove`, where known, the halfmove clock of
    the position searched (an engine's score depends on it)."""

    key: int
    fen: str
    cp: int | None
    mate: int | None
    best: int | None
    pv: str | None
    depth: int | None
    nodes: int | None
    limit: str | None
    engine: str | None
    source: str
    analysed_at: datetime
    lines: tuple[EngineLine, ...] | None = None
    wdl: tuple[int, int, int] | None = None
    halfmove: int | None = None

    @property
    def score(self) -> int:
        """The evaluation as one number from the side to move (a mate on MATE_SCORE's scale)."""
        return _score(self.cp, self.mate)

    def describe(self) -> str:
        """`+35` or `#3` / `#-2`, from the side to move."""
        return f"#{self.mate}" if self.mate is not None else f"{self.cp:+d}"


#: Columns a part's writer gives dictionaries (few values each).
_DICTIONARY = ["limit", "engine", "source"]

#: The store's columns in its order, as DuckDB names them (a position's `lines` as LINES_SQL
#: chooses them).
_NAMES = ", ".join(
    f"{LINES_SQL} AS lines" if name == "lines" else f'"{name}"' for name in Evaluation._fields
)

#: One row per position, its deepest evaluation, sorted by key (the rows of a part).
_RANKED = (
    f"SELECT {_NAMES} FROM {{source}} "
    f"QUALIFY row_number() OVER (PARTITION BY key ORDER BY {EVALS_ORDER}) = 1 ORDER BY key"
)


def _table(evaluations: Sequence[Evaluation]) -> Any:
    import pyarrow as pa

    schema = evals_schema()
    columns: list[list[Any]] = [[] for _ in schema]
    for evaluation in evaluations:
        for column, value in zip(columns, evaluation, strict=True):
            column.append(value)
    lines_at, wdl_at = Evaluation._fields.index("lines"), Evaluation._fields.index("wdl")
    columns[lines_at] = [
        None if lines is None else [line._asdict() for line in lines] for lines in columns[lines_at]
    ]
    columns[wdl_at] = [
        None if wdl is None else dict(zip(("win", "draw", "loss"), wdl, strict=True))
        for wdl in columns[wdl_at]
    ]
    return pa.Table.from_arrays(
        [pa.array(values, type=f.type) for values, f in zip(columns, schema, strict=True)],
        schema=schema,
    )


def _write_ranked(con: Any, source: str, target: Path) -> int:
    """Write the ranked rows of a DuckDB relation to a Parquet file; return the rows."""
    import pyarrow.parquet as pq

    schema = evals_schema()
    reader = con.sql(_RANKED.format(source=source)).to_arrow_reader(ROW_GROUP_ROWS)
    with pq.ParquetWriter(target, schema, compression="zstd", use_dictionary=_DICTIONARY) as writer:
        return write_row_groups(reader, writer, lambda table: table.cast(schema))


def _duckdb() -> Any:
    import duckdb

    con = duckdb.connect(config={"memory_limit": "1GB", "preserve_insertion_order": False})
    con.execute("SET enable_progress_bar = false")
    return con


def write_part(warehouse: Path, evaluations: Sequence[Evaluation]) -> Path | None:
    """Add a part holding `evaluations` to the store (one row per position, its deepest,
    sorted by key); return it, or None for no evaluation. The part appears whole or not at
    all; the caller holds the store's lock (evals_lock)."""
    if not evaluations:
        return None
    target = new_part_path(warehouse)
    con = _duckdb()
    try:
        con.register("batch", _table(evaluations))
        with atomic_path(target) as staged:
            _write_ranked(con, "batch", staged)
    finally:
        con.close()
    return target


@dataclass(frozen=True)
class Compaction:
    """What a compaction did: the parts it merged, the positions in the merged part."""

    parts: int
    positions: int
    part: Path | None


def compact(warehouse: Path) -> Compaction:
    """Merge the store's parts into one (each position's deepest evaluation, sorted by key) and
    remove the merged parts once the new one is in place: a kill at any point leaves every
    evaluation stored (a part merged but not yet removed is read again, and ranks the same).
    The caller holds the store's lock (evals_lock)."""
    parts = eval_parts(warehouse)
    if len(parts) < 2:
        return Compaction(len(parts), 0, parts[0] if parts else None)
    target = new_part_path(warehouse)
    con = _duckdb()
    try:
        with atomic_path(target, sync=True) as staged:
            source = parts_sql(sql_paths(parts))
            positions = _write_ranked(con, source, staged)
    finally:
        con.close()
    for part in parts:
        part.unlink(missing_ok=True)
    return Compaction(len(parts), positions, target)


#: Parts a run leaves before it merges them (each batch of an analysis adds one).
MOST_PARTS = 16


def compact_if_many(warehouse: Path) -> Compaction | None:
    """Compact the store when it has more than MOST_PARTS parts (the caller holds its lock)."""
    return compact(warehouse) if len(eval_parts(warehouse)) > MOST_PARTS else None


#: The columns read back, the time as seconds (a TIMESTAMPTZ would need pytz in Python).
_COLUMNS = ", ".join(
    "epoch(analysed_at)::BIGINT" if name == "analysed_at" else f'"{name}"'
    for name in Evaluation._fields
)


def _evaluation(row: tuple[Any, ...]) -> Evaluation:
    *fields, seconds, lines, wdl, halfmove = row
    return Evaluation._make(
        [
            *fields,
            datetime.fromtimestamp(seconds, UTC),
            None if lines is None else tuple(EngineLine(**line) for line in lines),
            None if wdl is None else (wdl["win"], wdl["draw"], wdl["loss"]),
            halfmove,
        ]
    )


def read_evaluations(warehouse: Path, keys: Iterable[int] | None = None) -> dict[int, Evaluation]:
    """Return the stored evaluation of each position of `keys` the store has (every position
    when None), by key: the deepest of each (the `evals` view of pipelines.warehouse.sql)."""
    from pipelines.warehouse.sql import connect, stable_read

    wanted = None if keys is None else [int(k) for k in keys]
    if not eval_parts(warehouse) or wanted == []:
        return {}

    def read() -> list[tuple[Any, ...]]:
        con = connect(Path(warehouse))
        try:
            if wanted is None:
                return con.execute(f"SELECT {_COLUMNS} FROM evals").fetchall()
            return con.execute(
                f"SELECT {_COLUMNS} FROM evals WHERE key IN (SELECT unnest(?::UBIGINT[]))",
                [wanted],
            ).fetchall()
        finally:
            con.close()

    return {int(row[0]): _evaluation(row) for row in stable_read(Path(warehouse), read)}


@dataclass(frozen=True)
class StoreFacts:
    """How much the store holds: parts, positions, and positions by source."""

    parts: int
    positions: int
    by_source: dict[str, int]


def store_facts(warehouse: Path) -> StoreFacts:
    """Count the store's parts and positions (each position once, by its deepest evaluation)."""
    from pipelines.warehouse.sql import connect, stable_read

    parts = eval_parts(warehouse)
    if not parts:
        return StoreFacts(0, 0, {})

    def read() -> list[tuple[Any, ...]]:
        con = connect(Path(warehouse))
        try:
            return con.execute("SELECT source, count(*) FROM evals GROUP BY source").fetchall()
        finally:
            con.close()

    by_source = {str(s): int(n) for s, n in stable_read(Path(warehouse), read)}
    return StoreFacts(len(parts), sum(by_source.values()), dict(sorted(by_source.items())))
