"""Runs of move statistics: partial counts written while ingesting, merged into a month's file.

A run holds (key, move, speed index, rating band, rating group, wins, draws, losses, rating sum),
summed and sorted. Small
months are merged in memory with NumPy and written with pyarrow; large ones are merged by DuckDB,
which spills to disk and keeps memory bounded.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from schemas.speed import Speed

if TYPE_CHECKING:
    import pyarrow as pa

    from pipelines.ingest.counting import MoveRows

#: The dimensions, in sort order, and the summed columns.
_DIMENSIONS = ("key", "move", "speed", "rating_band", "rating_group")
_COUNT_COLUMNS = ("wins", "draws", "losses", "rating_sum")

#: Sort rank of each speed index, so that runs sort by speed name as the month's file does.
_SPEED_RANK = np.argsort(np.argsort(np.array([speed.value for speed in Speed]))).astype(np.uint8)


@dataclass
class StatsColumns:
    """Move statistics as NumPy columns; speed is a Speed's index."""

    key: np.ndarray
    move: np.ndarray
    speed: np.ndarray
    rating_band: np.ndarray
    rating_group: np.ndarray
    wins: np.ndarray
    draws: np.ndarray
    losses: np.ndarray
    rating_sum: np.ndarray

    def __len__(self) -> int:
        return len(self.key)


#: Columns of a run, with their NumPy types.
_DTYPES = {
    "key": np.uint64,
    "move": np.uint16,
    "speed": np.uint8,
    "rating_band": np.uint16,
    "rating_group": np.uint16,
    "wins": np.uint64,
    "draws": np.uint64,
    "losses": np.uint64,
    "rating_sum": np.uint64,
}


def summed(columns: StatsColumns) -> StatsColumns:
    """Return the columns summed per (key, move, speed, band, group), sorted as a month's file
    is."""
    if not len(columns):
        return columns
    order = np.lexsort(
        (columns.rating_group, columns.rating_band, _SPEED_RANK[columns.speed], columns.move,
         columns.key)
    )  # fmt: skip
    dims = [getattr(columns, name)[order] for name in _DIMENSIONS]
    change = np.zeros(len(order), dtype=bool)
    change[0] = True
    for values in dims:
        change[1:] |= values[1:] != values[:-1]
    starts = np.flatnonzero(change)
    counts = [np.add.reduceat(getattr(columns, name)[order], starts) for name in _COUNT_COLUMNS]
    return StatsColumns(*(values[starts] for values in dims), *counts)


def from_rows(rows: MoveRows) -> StatsColumns:
    """Return the per-ply rows of move counting, summed."""
    points = np.frombuffer(rows.points, dtype=np.uint8)
    return summed(
        StatsColumns(
            np.frombuffer(rows.keys, dtype=np.uint64),
            np.frombuffer(rows.moves, dtype=np.uint16),
            np.frombuffer(rows.speeds, dtype=np.uint8),
            np.frombuffer(rows.bands, dtype=np.uint16),
            np.frombuffer(rows.groups, dtype=np.uint16),
            (points == 2).astype(np.uint64),
            (points == 1).astype(np.uint64),
            (points == 0).astype(np.uint64),
            np.frombuffer(rows.ratings, dtype=np.uint16).astype(np.uint64),
        )
    )


def _arrow(values: np.ndarray) -> pa.Array:
    """Return a non-null Arrow array over a NumPy column (pa.array would import pandas)."""
    import pyarrow as pa

    values = np.ascontiguousarray(values)
    kind = {
        np.dtype(np.uint64): pa.uint64(),
        np.dtype(np.uint16): pa.uint16(),
        np.dtype(np.uint8): pa.uint8(),
    }[values.dtype]
    return pa.Array.from_buffers(kind, len(values), [None, pa.py_buffer(values)])


def _speed_names(speed: np.ndarray) -> pa.Array:
    """Return speed indexes as an Arrow string array of their names."""
    import pyarrow as pa

    names = [speed.value.encode() for speed in Speed]
    width = max(map(len, names))
    table = np.zeros((len(names), width), dtype=np.uint8)
    for index, name in enumerate(names):
        table[index, : len(name)] = np.frombuffer(name, dtype=np.uint8)
    lengths = np.array([len(name) for name in names], dtype=np.int32)[speed]
    offsets = np.zeros(len(speed) + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    data = table[speed][np.arange(width) < lengths[:, None]]
    return pa.Array.from_buffers(
        pa.string(), len(speed), [None, pa.py_buffer(offsets), pa.py_buffer(data)]
    )


def write_run(columns: StatsColumns, path: Path) -> None:
    """Write summed columns as a run file."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    arrays = [_arrow(getattr(columns, name)) for name in _DTYPES]
    pq.write_table(pa.Table.from_arrays(arrays, names=list(_DTYPES)), path, compression="lz4")


def read_run(path: Path) -> StatsColumns:
    """Read a run file back as NumPy columns."""
    import pyarrow.parquet as pq

    table = pq.ParquetFile(path).read()
    columns = []
    for name, dtype in _DTYPES.items():
        parts = [
            np.frombuffer(chunk.buffers()[1], dtype=dtype)[chunk.offset : chunk.offset + len(chunk)]
            for chunk in table.column(name).chunks
        ]
        columns.append(np.concatenate(parts) if parts else np.zeros(0, dtype=dtype))
    return StatsColumns(*columns)


def run_rows(runs: list[Path]) -> int:
    """Return the number of rows in run files."""
    import pyarrow.parquet as pq

    return sum(pq.ParquetFile(path).metadata.num_rows for path in runs)


def write_month(columns: StatsColumns, path: Path) -> None:
    """Write summed columns as a month's move statistics file (MOVE_STATS_SCHEMA)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from schemas.move_stats import MOVE_STATS_SCHEMA

    games = columns.wins + columns.draws + columns.losses
    arrays = [
        _arrow(columns.key),
        _arrow(columns.move),
        _speed_names(columns.speed),
        _arrow(columns.rating_band),
        _arrow(columns.rating_group),
        _arrow(games),
        _arrow(columns.wins),
        _arrow(columns.draws),
        _arrow(columns.losses),
        _arrow(columns.rating_sum),
    ]
    table = pa.Table.from_arrays(arrays, schema=MOVE_STATS_SCHEMA)
    pq.write_table(table, path, compression="zstd", row_group_size=1_000_000)


def merge_runs(runs: list[Path], target: Path, staging: Path, *, in_memory_rows: int) -> int:
    """Sum run files into one sorted month file at target; return its row count.

    Runs of at most `in_memory_rows` rows in all are merged in memory, larger ones by DuckDB.
    """
    if run_rows(runs) <= in_memory_rows:
        parts = [read_run(path) for path in runs]
        merged = StatsColumns(
            *(
                np.concatenate([getattr(part, name) for part in parts])
                if parts
                else np.zeros(0, dtype=dtype)
                for name, dtype in _DTYPES.items()
            )
        )
        merged = summed(merged) if len(parts) > 1 else merged
        write_month(merged, target)
        return len(merged)
    return _merge_runs_duckdb(runs, target, staging)


def _merge_runs_duckdb(runs: list[Path], target: Path, staging: Path) -> int:
    """Sum many run files with DuckDB, spilling to staging; return the row count."""
    import duckdb
    import pyarrow.parquet as pq

    from schemas.move_stats import MOVE_STATS_SCHEMA

    speeds = "[" + ", ".join(f"'{speed.value}'" for speed in Speed) + "]"
    files = "[" + ", ".join("'" + str(p).replace("'", "''") + "'" for p in runs) + "]"
    source = (
        f"SELECT key, move, {speeds}[speed::BIGINT + 1] AS speed, rating_band, rating_group, "
        "sum(wins)::UBIGINT AS w, sum(draws)::UBIGINT AS d, sum(losses)::UBIGINT AS l, "
        "sum(rating_sum)::UBIGINT AS r "
        f"FROM read_parquet({files}) GROUP BY key, move, speed, rating_band, rating_group"
    )
    query = (
        "SELECT key::UBIGINT AS key, move::USMALLINT AS move, speed, "
        "rating_band::USMALLINT AS rating_band, rating_group::USMALLINT AS rating_group, "
        "(w + d + l)::UBIGINT AS games, w AS wins, d AS draws, l AS losses, r AS rating_sum "
        f"FROM ({source}) ORDER BY key, move, speed, rating_band, rating_group"
    )
    con = duckdb.connect()
    try:
        con.execute("SET memory_limit = '1GB'")
        con.execute(f"SET temp_directory = '{staging / 'duckdb.tmp'}'")
        con.execute("SET threads = 2")
        con.execute(
            f"COPY ({query}) TO '{target}' (FORMAT parquet, COMPRESSION zstd, "
            "ROW_GROUP_SIZE 1000000)"
        )
    finally:
        con.close()
    got = [(f.name, f.type) for f in pq.read_schema(target)]
    want = [(f.name, f.type) for f in MOVE_STATS_SCHEMA]
    if got != want:  # DuckDB marks columns nullable; the types must still match exactly
        raise AssertionError(f"move statistics schema drifted: {got} != {want}")
    return int(pq.ParquetFile(target).metadata.num_rows)
