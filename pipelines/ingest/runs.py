"""Runs of move statistics: partial counts written while ingesting, merged into a month's file.

A run holds (key, move, speed index, rating band, rating group, first-play rank, wins, draws,
losses, rating sum), summed and sorted by key,
as raw NumPy columns with where each range of keys starts. The runs are merged a range of keys
at a time (memory stays bounded), summed and written with pyarrow in row groups.

Summing sorts rows by (key, move, speed, band, group) and adds up equal ones, each row's
first-play rank the least of theirs (schemas.move_stats, FIRST_PLAY_*): compiled (`_sums.c`)
when the dimensions pack into 32 bits, as the design's always do; with NumPy otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np

from pipelines.ingest import _sums
from pipelines.warehouse import layout
from schemas.dimensions import MAX_RATING, RATING_BAND_WIDTH, RATING_GROUPS
from schemas.first_play import rebase, side_of
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
    #: The least first-play rank of the plies summed (schemas.first_play), whether Black is to
    #: move in its top bit (first_play.BLACK_TO_MOVE) until the month's file is written.
    first_play: np.ndarray
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
    "first_play": np.uint64,
    "wins": np.uint64,
    "draws": np.uint64,
    "losses": np.uint64,
    "rating_sum": np.uint64,
}


def summed(columns: StatsColumns, *, runs: bool = False) -> StatsColumns:
    """Return the columns summed per (key, move, speed, band, group), sorted as a month's file
    is.

    `runs`: the columns are sorted runs laid end to end (a merge), which the NumPy way sorts
    faster.
    """
    if not len(columns):
        return columns
    packed = _packed_dimensions(
        columns.move, columns.speed, columns.rating_band, columns.rating_group
    )
    if packed is not None and len(columns) <= _COMPILED_ROWS:
        contiguous = np.ascontiguousarray
        sums = _sums.sum_counts(
            contiguous(columns.key),
            contiguous(packed),
            contiguous(columns.first_play),
            contiguous(columns.wins),
            contiguous(columns.draws),
            contiguous(columns.losses),
            contiguous(columns.rating_sum),
        )
        return _unpacked(sums)
    if packed is None:  # a value beyond the one-word sort key: sort column by column
        order = np.lexsort(
            (
                columns.rating_group,
                columns.rating_band,
                _SPEED_RANK[columns.speed],
                columns.move,
                columns.key,
            )
        )
        change = np.zeros(len(order), dtype=bool)
        for name in _DIMENSIONS:
            values = getattr(columns, name)[order]
            change[1:] |= values[1:] != values[:-1]
    else:
        order, ordered = _sort_order(columns.key, packed, runs=runs)
        change = np.empty(len(order), dtype=bool)
        np.not_equal(ordered[1:], ordered[:-1], out=change[1:])
    change[0] = True
    starts = np.flatnonzero(change)
    firsts = order[starts]
    dimensions = {name: getattr(columns, name)[firsts] for name in _DIMENSIONS}
    counts = {
        name: np.add.reduceat(getattr(columns, name)[order], starts) for name in _COUNT_COLUMNS
    }
    first_play = np.minimum.reduceat(columns.first_play[order], starts)
    return StatsColumns(**dimensions, first_play=first_play, **counts)


#: Rows summed compiled at most in one call (its row numbers are 32 bits).
_COMPILED_ROWS = (1 << 32) - 1


def _unpacked(sums: tuple[bytes, bytes, bytes, bytes, bytes, bytes, bytes]) -> StatsColumns:
    """Return the compiled sums (keys, packed dimensions, first-play ranks and counts) as
    columns."""
    keys, packed, first_play, *counts = (
        np.frombuffer(values, dtype=dtype)
        for values, dtype in zip(sums, (np.uint64, np.uint32, *(np.uint64,) * 5), strict=True)
    )
    group = packed & ((1 << _GROUP_BITS) - 1)
    band = (packed >> _GROUP_BITS) & ((1 << _BAND_BITS) - 1)
    speed_rank = (packed >> (_GROUP_BITS + _BAND_BITS)) & ((1 << _SPEED_BITS) - 1)
    move = packed >> (_GROUP_BITS + _BAND_BITS + _SPEED_BITS)
    return StatsColumns(
        keys,
        move.astype(np.uint16),
        _SPEED_OF_RANK[speed_rank],
        _BAND_VALUES[band],
        _GROUP_VALUES[group],
        first_play,
        *counts,
    )


def _index_table(values: range | tuple[int, ...]) -> np.ndarray:
    """Return a table from 16-bit values to their place in `values` (_NOT_LISTED elsewhere)."""
    table = np.full(1 << 16, _NOT_LISTED, dtype=np.uint16)
    table[np.asarray(values, dtype=np.int64)] = np.arange(len(values), dtype=np.uint16)
    return table


_NOT_LISTED = 0xFFFF

#: The places of rating bands and rating groups: with the move (15 bits: Polyglot's to, from
#: and promotion) and the speed's rank, they pack into 32 bits in the order a month's file
#: sorts them.
_BANDS = range(0, MAX_RATING + 1, RATING_BAND_WIDTH)
_BAND_INDEX = _index_table(_BANDS)
_GROUP_INDEX = _index_table(RATING_GROUPS)
_GROUP_BITS = (len(RATING_GROUPS) - 1).bit_length()
_BAND_BITS = (len(_BANDS) - 1).bit_length()
_SPEED_BITS = (len(Speed) - 1).bit_length()
_MOVE_BITS = 32 - _SPEED_BITS - _BAND_BITS - _GROUP_BITS
#: And back: the speed index, band and group of each place.
_SPEED_OF_RANK = np.argsort(_SPEED_RANK).astype(np.uint8)
_BAND_VALUES = np.array(_BANDS, dtype=np.uint16)
_GROUP_VALUES = np.array(RATING_GROUPS, dtype=np.uint16)


def _packed_dimensions(
    move: np.ndarray, speed: np.ndarray, rating_band: np.ndarray, rating_group: np.ndarray
) -> np.ndarray | None:
    """Return (move, speed, band, group) packed in 32 bits that sort as the month's file sorts
    them, or None when a value does not fit (a move beyond 15 bits, a band or group not one of
    the design's)."""
    band = _BAND_INDEX[rating_band]
    group = _GROUP_INDEX[rating_group]
    if (
        int(move.max()) >> _MOVE_BITS
        or int(band.max()) == _NOT_LISTED
        or int(group.max()) == (_NOT_LISTED)
    ):
        return None
    packed = move.astype(np.uint32)
    packed <<= _SPEED_BITS
    packed |= _SPEED_RANK[speed]
    packed <<= _BAND_BITS
    packed |= band
    packed <<= _GROUP_BITS
    packed |= group
    return packed


def _sort_order(
    key: np.ndarray, packed: np.ndarray, *, runs: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Return the order sorting rows by (key, packed), and the rows' one-word sort keys in it.

    The keys are sorted first; each row's sort key is then its key's rank among the distinct
    keys (high 32 bits) and its packed dimensions (low 32 bits). Sorted runs laid end to end
    (`runs`) are merged by a stable sort (Timsort finds the runs); other rows sort faster by
    quicksort. Rows with the same sort key are the same dimensions: their order does not matter.
    """
    kind: Literal["stable", "quicksort"] = "stable" if runs else "quicksort"
    order = np.argsort(key, kind=kind)
    ordered_keys = key[order]
    ranked = np.empty(len(order), dtype=np.uint64)
    ranked[0] = 0
    np.cumsum(ordered_keys[1:] != ordered_keys[:-1], out=ranked[1:])
    ranked <<= np.uint64(32)
    ranked |= packed[order]
    within = np.argsort(ranked, kind=kind)
    return order[within], ranked[within]


def from_rows(rows: MoveRows) -> StatsColumns:
    """Return the per-ply rows of move counting, summed."""
    keys = np.frombuffer(rows.keys, dtype=np.uint64)
    dimensions = (
        np.frombuffer(rows.moves, dtype=np.uint16),
        np.frombuffer(rows.speeds, dtype=np.uint8),
        np.frombuffer(rows.bands, dtype=np.uint16),
        np.frombuffer(rows.groups, dtype=np.uint16),
    )
    first_play = np.frombuffer(rows.first_plays, dtype=np.uint64)
    points = np.frombuffer(rows.points, dtype=np.uint8)
    ratings = np.frombuffer(rows.ratings, dtype=np.uint16)
    packed = _packed_dimensions(*dimensions) if len(keys) else None
    if packed is not None and len(keys) <= _COMPILED_ROWS:
        # Compiled straight from the points and ratings: no 64-bit counts a ply.
        return _unpacked(_sums.sum_plies(keys, packed, first_play, points, ratings))
    return summed(
        StatsColumns(
            keys,
            *dimensions,
            first_play,
            (points == 2).astype(np.uint64),
            (points == 1).astype(np.uint64),
            (points == 0).astype(np.uint64),
            ratings.astype(np.uint64),
        )
    )


def _speed_names(speed: np.ndarray) -> pa.Array:
    """Return speed indexes as an Arrow string array of their names."""
    import pyarrow as pa

    from pipelines import arrow_arrays as arrays

    names = [speed.value.encode() for speed in Speed]
    offsets = np.cumsum([0, *map(len, names)], dtype=np.int32)
    dictionary = pa.Array.from_buffers(
        pa.string(), len(names), [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(names))]
    )  # (not pa.array: it imports pandas)
    return pa.DictionaryArray.from_arrays(arrays.integers(speed), dictionary).cast(pa.string())


#: Runs are cut into 2**BUCKET_BITS ranges of keys (by their top bits), merged range by range.
BUCKET_BITS = 8

ROW_GROUP_ROWS = layout.ROW_GROUP_ROWS
_PARQUET_OPTIONS = layout.PARQUET_OPTIONS

#: (3: the ranks carry the side to move.)
_RUN_MAGIC = b"CPRUN3\0\0"


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


def _month_table(columns: StatsColumns) -> pa.Table:
    """Return summed columns as a table of move statistics (MOVE_STATS_SCHEMA)."""
    import pyarrow as pa

    from pipelines import arrow_arrays as arrays
    from schemas.move_stats import MOVE_STATS_SCHEMA

    games = columns.wins + columns.draws + columns.losses
    white_to_move, ranks = side_of(columns.first_play)
    built = [
        arrays.integers(columns.key),
        arrays.integers(columns.move),
        _speed_names(columns.speed),
        arrays.integers(columns.rating_band),
        arrays.integers(columns.rating_group),
        arrays.integers(games),
        arrays.integers(columns.wins),
        arrays.integers(columns.draws),
        arrays.integers(columns.losses),
        arrays.integers(columns.rating_sum),
        arrays.integers(ranks),
        arrays.booleans(white_to_move),
    ]
    return pa.Table.from_arrays(built, schema=MOVE_STATS_SCHEMA)


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
    games_before: Sequence[int] | None = None,
) -> int:
    """Sum run files into one sorted month file at target; return its row count.

    `games_before`: for each run, the games counted before its unit's in the source, which
    its first-play ranks (placed in the unit) are moved on by (schemas.first_play.rebase);
    none: the ranks are the source's already.

    The runs are summed a range of keys at a time, three ranges holding at most `in_memory_rows`
    rows of runs (unless one of the 2**BUCKET_BITS ranges holds more on its own), and written
    in row groups of `row_group_rows` rows (the last one shorter): the file is the same however
    the ranges fall. A thread writes each range while the next ones are summed.
    """
    from collections import deque
    from concurrent.futures import Future, ThreadPoolExecutor

    index = np.array([_run_index(path) for path in runs], dtype=np.int64).reshape(
        len(runs), (1 << BUCKET_BITS) + 1
    )
    # Three ranges at a time in memory: two being summed, one being written.
    steps = _steps(index, max(1, min(in_memory_rows // 3, _MERGE_STEP_ROWS))) if len(runs) else []

    bases = [rebase(games) for games in games_before or [0] * len(runs)]
    if len(bases) != len(runs):
        raise ValueError(f"{len(bases)} counts of games before for {len(runs)} run files")

    def summed_range(first: int, stop: int) -> StatsColumns:
        merged = _read_range(runs, index, first, stop, bases)
        return summed(merged, runs=True) if len(runs) > 1 else merged

    total = 0
    with _RowGroupWriter(target, row_group_rows) as writer, ThreadPoolExecutor(2) as threads:
        # Two threads: while one range is written, the next ones are summed.
        summing = deque(threads.submit(summed_range, *step) for step in steps[:2])
        following = iter(steps[2:])
        writing: Future[None] | None = None
        while summing:
            merged = summing.popleft().result()
            if writing is not None:
                writing.result()
            writing = threads.submit(writer.write, merged)
            step = next(following, None)
            if step is not None:
                summing.append(threads.submit(summed_range, *step))
            total += len(merged)
        if writing is not None:
            writing.result()
    return total


#: Rows of runs summed at a time at most, however much memory is allowed: a range is written
#: while the next ones are summed, in other threads.
_MERGE_STEP_ROWS = 1 << 19


def _read_range(
    runs: list[Path], index: np.ndarray, first: int, stop: int, bases: list[int]
) -> StatsColumns:
    """Read key ranges first:stop of all runs, one after the other, as one set of columns,
    each run's first-play ranks moved on by its base."""
    starts, stops = index[:, first], index[:, stop]
    size = int((stops - starts).sum())
    columns = {name: np.empty(size, dtype=dtype) for name, dtype in _DTYPES.items()}
    at = 0
    for path, row, start, stop_row, base in zip(runs, index, starts, stops, bases, strict=True):
        count = int(stop_row - start)
        if not count:
            continue
        rows = int(row[-1])
        offset = len(_RUN_MAGIC) + row.nbytes
        with open(path, "rb", buffering=0) as handle:
            for values in columns.values():
                size_of = values.itemsize
                handle.seek(offset + int(start) * size_of)
                view = values[at : at + count].data.cast("B")
                if handle.readinto(view) != view.nbytes:
                    raise ValueError(f"run file {path} is shorter than its index says")
                offset += rows * size_of
        if base:
            columns["first_play"][at : at + count] += np.uint64(base)
        at += count
    return StatsColumns(**columns)


class _RowGroupWriter:
    """Writes summed columns, in order, to a month file in row groups of a fixed size."""

    def __init__(self, target: Path, row_group_rows: int) -> None:
        import pyarrow.parquet as pq

        from schemas.move_stats import MOVE_STATS_SCHEMA

        self._writer = pq.ParquetWriter(target, MOVE_STATS_SCHEMA, **_PARQUET_OPTIONS)
        self._rows = row_group_rows
        self._held: pa.Table | None = None  # the rows of a row group not yet full
        self._written = 0

    def write(self, columns: StatsColumns) -> None:
        """Write the rows that fill row groups; hold the rest for the next call or close."""
        if not len(columns):
            return
        import pyarrow as pa

        table = _month_table(columns)
        if self._held is not None:
            fill = min(self._rows - self._held.num_rows, table.num_rows)
            self._held = pa.concat_tables([self._held, table.slice(0, fill)])
            table = table.slice(fill)
            if self._held.num_rows < self._rows:
                return
            self._writer.write_table(self._held, row_group_size=self._rows)
            self._written += self._held.num_rows
            self._held = None
        whole = table.num_rows - table.num_rows % self._rows
        if whole:
            self._writer.write_table(table.slice(0, whole), row_group_size=self._rows)
            self._written += whole
        if whole < table.num_rows:
            self._held = table.slice(whole)

    def close(self) -> None:
        """Write the rows held (or an empty file's schema) and close the file."""
        if self._held is not None:
            self._writer.write_table(self._held, row_group_size=self._rows)
            self._written += self._held.num_rows
        elif not self._written:  # (not MOVE_STATS_SCHEMA.empty_table(): it imports pandas)
            empty = StatsColumns(*(np.zeros(0, dtype=dtype) for dtype in _DTYPES.values()))
            self._writer.write_table(_month_table(empty))
        self._writer.close()

    def __enter__(self) -> _RowGroupWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
