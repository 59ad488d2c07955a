"""Runs of move statistics: partial counts written while ingesting, merged into a month's file.

A run holds (key, move, speed index, rating band, rating group, wins, draws, losses, rating sum),
summed and sorted by key,
as raw NumPy columns with where each range of keys starts. The runs are merged a range of keys
at a time (memory stays bounded), summed with NumPy and written with pyarrow in row groups.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from pipelines.warehouse import layout
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


#: Runs are cut into 2**BUCKET_BITS ranges of keys (by their top bits), merged range by range.
BUCKET_BITS = 8

ROW_GROUP_ROWS = layout.ROW_GROUP_ROWS
_PARQUET_OPTIONS = layout.PARQUET_OPTIONS

_RUN_MAGIC = b"CPRUN1\0\0"


def _bucket_starts(key: np.ndarray) -> np.ndarray:
    """Return where each key range starts in sorted keys, and their end (2**BUCKET_BITS + 1)."""
    top = key >> np.uint64(64 - BUCKET_BITS)
    return np.searchsorted(top, np.arange((1 << BUCKET_BITS) + 1, dtype=np.uint64))


def write_run(columns: StatsColumns, path: Path) -> None:
    """Write summed columns as a run file: the raw columns, with where each key range starts."""
    with open(path, "wb") as out:
        out.write(_RUN_MAGIC)
        out.write(_bucket_starts(columns.key).astype("<i8").tobytes())
        for name, dtype in _DTYPES.items():
            out.write(np.ascontiguousarray(getattr(columns, name), dtype=dtype).tobytes())


def _run_index(path: Path) -> np.ndarray:
    """Return where each key range starts in a run file (and its row count, last)."""
    with open(path, "rb") as handle:
        head = handle.read(len(_RUN_MAGIC))
        if head != _RUN_MAGIC:
            raise ValueError(f"{path} is not a run file")
        return np.fromfile(handle, dtype="<i8", count=(1 << BUCKET_BITS) + 1)


def _read_rows(path: Path, index: np.ndarray, start: int, stop: int) -> StatsColumns:
    """Read rows start:stop of a run file whose index is `index`."""
    rows = int(index[-1])
    offset = len(_RUN_MAGIC) + index.nbytes
    columns = []
    for dtype in _DTYPES.values():
        size = np.dtype(dtype).itemsize
        columns.append(
            np.fromfile(path, dtype=dtype, count=stop - start, offset=offset + start * size)
        )
        offset += rows * size
    return StatsColumns(*columns)


def read_run(path: Path) -> StatsColumns:
    """Read a run file back as NumPy columns."""
    index = _run_index(path)
    return _read_rows(path, index, 0, int(index[-1]))


def run_rows(runs: list[Path]) -> int:
    """Return the number of rows in run files."""
    return sum(int(_run_index(path)[-1]) for path in runs)


def _month_table(columns: StatsColumns) -> pa.Table:
    """Return summed columns as a table of move statistics (MOVE_STATS_SCHEMA)."""
    import pyarrow as pa

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
    return pa.Table.from_arrays(arrays, schema=MOVE_STATS_SCHEMA)


def _steps(index: np.ndarray, most_rows: int) -> list[tuple[int, int]]:
    """Return consecutive key ranges (first, stop) of at most `most_rows` rows in all runs.

    `index` holds the runs' range starts, one run a row. A range larger than `most_rows` on its
    own is a step of its own.
    """
    sizes = np.diff(index, axis=1).sum(axis=0)
    steps: list[tuple[int, int]] = []
    first, rows = 0, 0
    for bucket, size in enumerate(sizes.tolist()):
        if rows and rows + size > most_rows:
            steps.append((first, bucket))
            first, rows = bucket, 0
        rows += size
    steps.append((first, len(sizes)))
    return steps


def merge_runs(
    runs: list[Path],
    target: Path,
    *,
    in_memory_rows: int,
    row_group_rows: int = ROW_GROUP_ROWS,
) -> int:
    """Sum run files into one sorted month file at target; return its row count.

    The runs are summed a range of keys at a time, each range holding at most `in_memory_rows`
    rows of runs (unless one of the 2**BUCKET_BITS ranges holds more on its own), and written
    in row groups of `row_group_rows` rows.
    """
    import pyarrow.parquet as pq

    from schemas.move_stats import MOVE_STATS_SCHEMA

    index = np.array([_run_index(path) for path in runs], dtype=np.int64).reshape(
        len(runs), (1 << BUCKET_BITS) + 1
    )
    total = 0
    with pq.ParquetWriter(target, MOVE_STATS_SCHEMA, **_PARQUET_OPTIONS) as writer:
        for first, stop in _steps(index, max(1, in_memory_rows)) if len(runs) else []:
            parts = [
                _read_rows(path, row, int(row[first]), int(row[stop]))
                for path, row in zip(runs, index, strict=True)
            ]
            merged = StatsColumns(
                *(np.concatenate([getattr(part, name) for part in parts]) for name in _DTYPES)
            )
            if len(parts) > 1:
                merged = summed(merged)
            if len(merged):
                writer.write_table(_month_table(merged), row_group_size=row_group_rows)
                total += len(merged)
        if total == 0:  # (not MOVE_STATS_SCHEMA.empty_table(): it imports pandas)
            empty = StatsColumns(*(np.zeros(0, dtype=dtype) for dtype in _DTYPES.values()))
            writer.write_table(_month_table(empty))
    return total
