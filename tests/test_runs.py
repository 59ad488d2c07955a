"""Runs of move statistics: summing and merging equal a plain Python sum of the same rows."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipelines.ingest.runs import StatsColumns, merge_runs, summed, write_run
from schemas.dimensions import MAX_RATING, RATING_GROUPS
from schemas.speed import Speed

SPEEDS = list(Speed)

#: Few keys, so that rows meet; moves, bands and groups the design makes, and values beyond
#: them (a move past 15 bits, a band off the 100s, a group that is not one) that another
#: writer could make.
KEYS = st.sampled_from([0, 1, 2**63, 2**64 - 1, 0x0123456789ABCDEF, 2**32, 2**32 - 1])
MOVES = st.one_of(st.integers(0, 0x4FFF), st.sampled_from([0x8000, 0xFFFF]))
BANDS = st.one_of(st.sampled_from([0, 1500, 2500, MAX_RATING // 100 * 100]), st.just(1234))
GROUPS = st.one_of(st.sampled_from(RATING_GROUPS), st.just(1700))
ROW = st.tuples(
    KEYS, MOVES, st.integers(0, len(SPEEDS) - 1), BANDS, GROUPS,
    st.integers(0, 3), st.integers(0, 3), st.integers(0, 3), st.integers(0, 2**40),
)  # fmt: skip


def columns(rows: list[tuple[int, ...]]) -> StatsColumns:
    dtypes = (np.uint64, np.uint16, np.uint8, np.uint16, np.uint16) + (np.uint64,) * 4
    return StatsColumns(
        *(np.array([row[i] for row in rows], dtype=dtype) for i, dtype in enumerate(dtypes))
    )


def python_sum(rows: list[tuple[int, ...]]) -> list[tuple[int | str, ...]]:
    """The rows summed per dimensions, sorted as a month's file is (speed by its name)."""
    sums: dict[tuple[int | str, ...], Counter[int]] = {}
    for key, move, speed, band, group, *counts in rows:
        dims = (key, move, SPEEDS[speed].value, band, group)
        total = sums.setdefault(dims, Counter())
        for index, count in enumerate(counts):
            total[index] += count
    return [(*dims, *(total[i] for i in range(4))) for dims, total in sorted(sums.items())]


def as_rows(summed_columns: StatsColumns) -> list[tuple[int | str, ...]]:
    names = ("key", "move", "speed", "rating_band", "rating_group")
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


@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
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
        names = ("key", "move", "speed", "rating_band", "rating_group")
        names += ("wins", "draws", "losses", "rating_sum")
        written = list(zip(*(table[name].to_pylist() for name in names), strict=True))
        assert written == expected
        assert table["games"].to_pylist() == [sum(row[5:8]) for row in expected]
    assert len(files) == 1
