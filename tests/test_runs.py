"""Runs of move statistics: summing (compiled, and with NumPy for values beyond the design's)
and merging equal a plain Python sum of the same rows (the least first-play rank of a row's)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipelines.ingest import _sums, runs
from pipelines.ingest.counting import MoveRows
from pipelines.ingest.runs import StatsColumns, from_rows, merge_runs, summed, write_run
from schemas.dimensions import MAX_RATING, RATING_GROUPS
from schemas.first_play import BLACK_TO_MOVE
from schemas.speed import Speed

SPEEDS = list(Speed)

#: Few keys, so that rows meet; moves, bands and groups the design makes, and values beyond
#: them (a move past 15 bits, a band off the 100s, a group that is not one) that another
#: writer could make.
KEYS = st.sampled_from([0, 1, 2**63, 2**64 - 1, 0x0123456789ABCDEF, 2**32, 2**32 - 1])
MOVES = st.one_of(st.integers(0, 0x4FFF), st.sampled_from([0x8000, 0xFFFF]))
BANDS = st.one_of(st.sampled_from([0, 1500, 2500, MAX_RATING // 100 * 100]), st.just(1234))
GROUPS = st.one_of(st.sampled_from(RATING_GROUPS), st.just(1700))
#: First-play ranks: few, so that rows meet on them too, and the extremes.
RANKS = st.one_of(st.integers(0, 5), st.sampled_from([2**40, 2**63, 2**64 - 1]))
ROW = st.tuples(
    KEYS, MOVES, st.integers(0, len(SPEEDS) - 1), BANDS, GROUPS, RANKS,
    st.integers(0, 3), st.integers(0, 3), st.integers(0, 3), st.integers(0, 2**40),
)  # fmt: skip


def columns(rows: list[tuple[int, ...]]) -> StatsColumns:
    dtypes = (np.uint64, np.uint16, np.uint8, np.uint16, np.uint16) + (np.uint64,) * 5
    return StatsColumns(
        *(np.array([row[i] for row in rows], dtype=dtype) for i, dtype in enumerate(dtypes))
    )


def python_sum(rows: list[tuple[int, ...]]) -> list[tuple[int | str, ...]]:
    """The rows summed per dimensions, sorted as a month's file is (speed by its name), each
    with the least of their first-play ranks."""
    sums: dict[tuple[int | str, ...], Counter[int]] = {}
    firsts: dict[tuple[int | str, ...], int] = {}
    for key, move, speed, band, group, first, *counts in rows:
        dims = (key, move, SPEEDS[speed].value, band, group)
        total = sums.setdefault(dims, Counter())
        firsts[dims] = min(firsts.get(dims, first), first)
        for index, count in enumerate(counts):
            total[index] += count
    return [
        (*dims, firsts[dims], *(total[i] for i in range(4))) for dims, total in sorted(sums.items())
    ]


def as_rows(summed_columns: StatsColumns) -> list[tuple[int | str, ...]]:
    names = ("key", "move", "speed", "rating_band", "rating_group", "first_play")
    names += ("wins", "draws", "losses", "rating_sum")
    values = [getattr(summed_columns, name).tolist() for name in names]
    values[2] = [SPEEDS[speed].value for speed in values[2]]
    return list(zip(*values, strict=True))


@given(st.lists(ROW, max_size=300), st.booleans())
def test_summed_equals_a_python_sum(rows: list[tuple[int, ...]], laid_as_runs: bool) -> None:
    if laid_as_runs and rows:  # two runs end to end, each summed and sorted
        half = len(rows) // 2
        first, second = summed(columns(rows[:half])), summed(columns(rows[half:]))
        both = StatsColumns(
            *(
                np.concatenate([getattr(first, name), getattr(second, name)])
                for name in StatsColumns.__dataclass_fields__
            )
        )
        assert as_rows(summed(both, runs=True)) == python_sum(rows)
    else:
        assert as_rows(summed(columns(rows))) == python_sum(rows)


# (no deadline: the first example imports pyarrow's Parquet writer, seconds on a cold disk)
@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(st.lists(ROW, min_size=1, max_size=200), min_size=1, max_size=5))
def test_merged_runs_equal_a_python_sum(tmp_path: Path, runs: list[list[tuple[int, ...]]]) -> None:
    paths = []
    for index, rows in enumerate(runs):
        paths.append(tmp_path / f"run-{index}.run")
        write_run(summed(columns(rows)), paths[-1])
    expected = python_sum([row for rows in runs for row in rows])
    files = set()
    for in_memory_rows in (10**6, 0, 7):
        target = tmp_path / "month.parquet"
        assert merge_runs(paths, target, in_memory_rows=in_memory_rows, row_group_rows=16) == len(
            expected
        )
        files.add(target.read_bytes())
        table = pq.read_table(target)
        names = ("key", "move", "speed", "rating_band", "rating_group", "first_play")
        names += ("wins", "draws", "losses", "rating_sum")
        written = list(zip(*(table[name].to_pylist() for name in names), strict=True))
        # A counted rank's top bit is the side to move, written as its own column.
        sides = [row[5] < BLACK_TO_MOVE for row in expected]
        assert table["white_to_move"].to_pylist() == sides
        assert written == [(*row[:5], row[5] & ~BLACK_TO_MOVE, *row[6:]) for row in expected]
        assert table["games"].to_pylist() == [sum(row[6:9]) for row in expected]
    assert len(files) == 1


#: Rows of the design's values only: their dimensions pack into 32 bits and sum compiled.
PACKABLE_ROW = st.tuples(
    KEYS, st.integers(0, 0x7FFF), st.integers(0, len(SPEEDS) - 1),
    st.sampled_from([0, 1500, 2500, MAX_RATING // 100 * 100]), st.sampled_from(RATING_GROUPS),
    RANKS, st.integers(0, 3), st.integers(0, 3), st.integers(0, 3), st.integers(0, 2**40),
)  # fmt: skip


def counting_compiled_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record each call of the compiled sums (and still make it)."""
    calls: list[str] = []
    for name in ("sum_plies", "sum_counts"):
        function = getattr(_sums, name)

        def recorded(*args: object, _function: Any = function, _name: str = name) -> object:
            calls.append(_name)
            return _function(*args)

        monkeypatch.setattr(runs._sums, name, recorded)
    return calls


@given(rows=st.lists(PACKABLE_ROW, min_size=1, max_size=300))
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_compiled_sums_equal_a_python_sum(
    monkeypatch: pytest.MonkeyPatch, rows: list[tuple[int, ...]]
) -> None:
    calls = counting_compiled_calls(monkeypatch)
    assert as_rows(summed(columns(rows))) == python_sum(rows)
    assert calls[-1:] == ["sum_counts"]


@given(
    plies=st.lists(
        st.tuples(
            KEYS,
            st.integers(0, 0x7FFF),
            st.integers(0, len(SPEEDS) - 1),
            st.sampled_from([0, 1500, MAX_RATING // 100 * 100]),
            st.sampled_from(RATING_GROUPS),
            st.integers(0, 2),
            st.integers(0, MAX_RATING),
            RANKS,
        ),
        max_size=300,
    )  # fmt: skip
)
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_rows_of_plies_sum_as_a_python_sum(
    monkeypatch: pytest.MonkeyPatch, plies: list[tuple[int, ...]]
) -> None:
    calls = counting_compiled_calls(monkeypatch)
    rows = MoveRows()
    as_counts = []
    for key, move, speed, band, group, points, rating, first in plies:
        for column, value in zip(
            (rows.keys, rows.moves, rows.speeds, rows.bands, rows.groups, rows.points),
            (key, move, speed, band, group, points),
            strict=True,
        ):
            column.append(value)
        rows.ratings.append(rating)
        rows.first_plays.append(first)
        as_counts.append((key, move, speed, band, group, first))
        as_counts[-1] += (points == 2, points == 1, points == 0, rating)
    assert as_rows(from_rows(rows)) == python_sum([tuple(map(int, row)) for row in as_counts])
    assert calls == (["sum_plies"] if plies else [])


def test_compiled_sums_equal_numpys_on_a_month_sized_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    """Many rows, keys over all 64 bits (every digit of the radix sort) and heavy repeats."""
    generator = np.random.default_rng(33)
    distinct = generator.integers(0, 2**64, size=20_000, dtype=np.uint64)
    size = 300_000
    batch = StatsColumns(
        distinct[generator.zipf(1.3, size) % len(distinct)],
        generator.integers(0, 0x8000, size, dtype=np.uint16) % 40,
        generator.integers(0, len(SPEEDS), size, dtype=np.uint8),
        generator.choice(np.arange(0, MAX_RATING + 1, 100, dtype=np.uint16), size),
        generator.choice(np.array(RATING_GROUPS, dtype=np.uint16), size),
        generator.integers(0, 2**63, size, dtype=np.uint64),
        *(generator.integers(0, 3, size, dtype=np.uint64) for _ in range(3)),
        generator.integers(0, 3000, size, dtype=np.uint64),
    )
    compiled = summed(batch)
    monkeypatch.setattr(runs, "_COMPILED_ROWS", 0)
    with_numpy = summed(batch)
    assert 10_000 < len(compiled) < size
    for name in StatsColumns.__dataclass_fields__:
        np.testing.assert_array_equal(getattr(compiled, name), getattr(with_numpy, name))
        assert getattr(compiled, name).dtype == getattr(with_numpy, name).dtype


def test_compiled_sums_name_columns_of_the_wrong_length() -> None:
    keys = np.zeros(3, dtype=np.uint64)
    ranks = np.zeros(3, dtype=np.uint64)
    with pytest.raises(ValueError, match="packed holds 8 bytes, not 3 rows of 4 bytes"):
        _sums.sum_plies(
            keys, np.zeros(2, np.uint32), ranks, np.zeros(3, np.uint8), np.zeros(3, np.uint16)
        )
    with pytest.raises(ValueError, match="first_play holds 16 bytes, not 3 rows of 8 bytes"):
        _sums.sum_plies(
            keys, np.zeros(3, np.uint32), ranks[:2], np.zeros(3, np.uint8), np.zeros(3, np.uint16)
        )
    assert _sums.sum_plies(b"", b"", b"", b"", b"") == (b"",) * 7
