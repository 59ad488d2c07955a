"""Compacted years: the book from a year's yearly file is the book from its twelve months."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from pipelines.books.build import book_query, build_book
from pipelines.books.settings import BookSettings
from pipelines.errors import ChesspipeError
from pipelines.files import file_sha256
from pipelines.games.game_filter import GameFilter
from pipelines.ingest.options import RunPolicy, Runtime
from pipelines.ingest.run import ingest
from pipelines.ingest.settings import IngestSettings
from pipelines.warehouse.check import check_warehouse
from pipelines.warehouse.layout import manifest_path, partition_file
from pipelines.warehouse.sql import run_query
from pipelines.warehouse.yearly import (
    CompactProgress,
    compact_year,
    format_compact_progress,
    year_state,
    yearly_dir,
    yearly_file,
    yearly_manifest_path,
)
from schemas.move_stats import MOVE_STATS_SCHEMA
from schemas.speed import Speed
from tests.conftest import GAMES_2021, need, run_cli
from tests.legacy_partition import write_legacy_partition
from tests.recount import pgn_extract_elo, split_in_turn
from tests.test_book import make_book_reference

YEAR = "2021"
MONTHS = [f"{YEAR}-{m:02d}" for m in range(1, 13)]
SETTINGS = IngestSettings(GameFilter(0, frozenset(Speed), allow_bots=True))


@pytest.fixture(scope="module")
def year_warehouse(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, list[Path]]:
    """Twelve months of the real 2021 sample's games (a twelfth each), ingested; the kept PGN."""
    need(GAMES_2021, "real Lichess games (2021-10 sample)")
    folder = tmp_path_factory.mktemp("year")
    kept = pgn_extract_elo(GAMES_2021, 0, folder)
    parts = split_in_turn(kept, 12, folder)
    warehouse = folder / "warehouse"
    for month, part in zip(MONTHS, parts, strict=True):
        ingest(str(part), month, warehouse, SETTINGS, runtime=Runtime(workers=1))
    return warehouse, kept, parts


def copy_of(year_warehouse: tuple[Path, Path, list[Path]], tmp_path: Path) -> Path:
    warehouse = tmp_path / "warehouse"
    shutil.copytree(year_warehouse[0], warehouse)
    return warehouse


def test_book_from_the_compacted_year_is_the_months_book(
    tmp_path: Path, year_warehouse: tuple[Path, Path, list[Path]], monkeypatch: pytest.MonkeyPatch
) -> None:
    warehouse = copy_of(year_warehouse, tmp_path)
    settings = [
        BookSettings(1, 0.0),
        BookSettings(3, 0.35),
        BookSettings(2, 0.0, speeds=("blitz", "bullet"), min_band=1500),
    ]
    from_months = []
    for index, chosen in enumerate(settings):
        out = tmp_path / f"months-{index}.bin"
        build_book(warehouse, YEAR + "-01.." + YEAR + "-12", out, chosen)
        from_months.append(out.read_bytes())
    manifest = compact_year(warehouse, YEAR)
    table = pq.read_table(yearly_file(warehouse, YEAR))
    assert table.schema.equals(MOVE_STATS_SCHEMA)
    keys = table.column("key").to_numpy()
    assert (keys[1:] >= keys[:-1]).all()
    assert manifest.rows == table.num_rows < manifest.month_rows
    # The same sums as DuckDB's over the months, by every dimension.
    summed = (
        "SELECT count(*), sum(games), sum(wins), sum(draws), sum(rating_sum) FROM (SELECT key, "
        "move, speed, rating_band, rating_group, sum(games) AS games, sum(wins) AS wins, "
        "sum(draws) AS draws, sum(rating_sum) AS rating_sum FROM move_stats GROUP BY ALL)"
    )
    _, [months_row] = run_query(warehouse, summed)
    _, [yearly_row] = run_query(warehouse, summed.replace("move_stats", "move_stats_yearly"))
    assert yearly_row == months_row
    # The move_stats view still means the months: nothing counted twice.
    _, [(rows,)] = run_query(warehouse, "SELECT count(*) FROM move_stats")
    assert rows == manifest.month_rows
    for index, chosen in enumerate(settings):
        out = tmp_path / f"year-{index}.bin"
        build_book(warehouse, "all", out, chosen)
        assert out.read_bytes() == from_months[index] and from_months[index]
    # PolyGlot on the twelve months' games one after the other, in month order.
    in_month_order = tmp_path / "in-month-order.pgn"
    in_month_order.write_text("".join(part.read_text() for part in year_warehouse[2]))
    reference = make_book_reference(tmp_path, in_month_order, 0, 3, 0.35)
    assert (tmp_path / "year-1.bin").read_bytes() == reference.read_bytes()
    # The book read the yearly file, and no month.
    asked: list[tuple[list[str], list[Path] | None]] = []

    def spy(months: list[str], chosen: BookSettings, *, yearly: list[Path] | None = None) -> Any:
        asked.append((months, yearly))
        return book_query(months, chosen, yearly=yearly)

    monkeypatch.setattr("pipelines.books.build.book_query", spy)
    build_book(warehouse, "all", tmp_path / "spied.bin", settings[1])
    assert asked == [([], [yearly_file(warehouse, YEAR)])]


def test_a_year_and_other_months(
    tmp_path: Path, year_warehouse: tuple[Path, Path, list[Path]]
) -> None:
    """Months outside the compacted year are read from their partitions, the year once."""
    warehouse = copy_of(year_warehouse, tmp_path)
    ingest(str(year_warehouse[2][0]), "2022-01", warehouse, SETTINGS, runtime=Runtime(workers=1))
    before = tmp_path / "before.bin"
    build_book(warehouse, "all", before, BookSettings(1, 0.0))
    compact_year(warehouse, YEAR)
    after = tmp_path / "after.bin"
    build_book(warehouse, "all", after, BookSettings(1, 0.0))
    assert after.read_bytes() == before.read_bytes()
    part = tmp_path / "part.bin"  # eleven months of the year: the yearly file is not used
    build_book(warehouse, f"{YEAR}-02..2022-01", part, BookSettings(1, 0.0))
    shutil.rmtree(yearly_dir(warehouse))
    again = tmp_path / "again.bin"
    build_book(warehouse, f"{YEAR}-02..2022-01", again, BookSettings(1, 0.0))
    assert part.read_bytes() == again.read_bytes() != before.read_bytes()


def test_a_month_re_ingested_makes_the_year_stale(
    tmp_path: Path, year_warehouse: tuple[Path, Path, list[Path]]
) -> None:
    warehouse = copy_of(year_warehouse, tmp_path)
    compact_year(warehouse, YEAR)
    state = year_state(warehouse, YEAR)
    assert state is not None and state.fresh
    assert check_warehouse(warehouse) == []
    # March now holds January's games too.
    both = tmp_path / "both.pgn"
    parts = year_warehouse[2]
    both.write_text(parts[0].read_text() + parts[2].read_text())
    run_cli(
        "ingest", str(both), "--month", MONTHS[2], "--warehouse", str(warehouse), "--force",
        "--quiet", "--min-rating", "0", "--speeds", ",".join(s.value for s in Speed),
        "--allow-bots",
    )  # fmt: skip
    state = year_state(warehouse, YEAR)
    assert state is not None and not state.fresh and MONTHS[2] in state.reason
    out = tmp_path / "book.bin"
    done = run_cli(
        "book", "build", "--warehouse", str(warehouse), "--months", "all", "--out", str(out),
        "--min-games", "1", "--min-score", "0",
    )  # fmt: skip
    assert done.stderr.count("\n") == 1 and "stale" in done.stderr and MONTHS[2] in done.stderr
    shutil.rmtree(yearly_dir(warehouse))
    months = tmp_path / "months.bin"
    build_book(warehouse, "all", months, BookSettings(1, 0.0))
    assert out.read_bytes() == months.read_bytes()
    # `warehouse check` reports it; --repair leaves it (compact again instead).
    compact_year(warehouse, YEAR)
    ingest(
        str(parts[2]),
        MONTHS[2],
        warehouse,
        SETTINGS,
        policy=RunPolicy(replace_month=True),
        runtime=Runtime(workers=1),
    )
    findings = check_warehouse(warehouse, repair=True)
    assert [f.kind for f in findings] == ["stale-yearly"]
    assert findings[0].path == yearly_manifest_path(warehouse, YEAR)
    assert yearly_file(warehouse, YEAR).exists()


def test_compaction_needs_all_twelve_months(
    tmp_path: Path, year_warehouse: tuple[Path, Path, list[Path]]
) -> None:
    warehouse = copy_of(year_warehouse, tmp_path)
    for month in (MONTHS[3], MONTHS[10]):
        shutil.rmtree(partition_file(warehouse, month).parent)
    with pytest.raises(ChesspipeError, match=f"{MONTHS[3]}, {MONTHS[10]} not in"):
        compact_year(warehouse, YEAR)
    done = run_cli("warehouse", "compact", str(warehouse), "--year", YEAR, check=False)
    assert done.returncode != 0 and f"{MONTHS[3]}, {MONTHS[10]}" in done.stderr
    assert done.stderr.count("\n") == 1
    assert not yearly_dir(warehouse).exists()


def test_compaction_waits_for_no_month(
    tmp_path: Path, year_warehouse: tuple[Path, Path, list[Path]]
) -> None:
    """A month being built (its lock held) fails the compaction at once; nothing is written."""
    from pipelines.warehouse.locks import month_lock

    warehouse = copy_of(year_warehouse, tmp_path)
    with month_lock(warehouse, MONTHS[5]), pytest.raises(ChesspipeError, match=MONTHS[5]):
        compact_year(warehouse, YEAR)
    assert not yearly_file(warehouse, YEAR).exists()


def test_check_reports_leftovers_of_a_compaction(
    tmp_path: Path, year_warehouse: tuple[Path, Path, list[Path]]
) -> None:
    warehouse = copy_of(year_warehouse, tmp_path)
    compact_year(warehouse, YEAR)
    tmp = yearly_file(warehouse, YEAR).with_name(".part-0.parquet.0123abcd.tmp")
    tmp.write_bytes(b"half")
    assert [f.kind for f in check_warehouse(warehouse)] == ["temp-file"]
    assert [(f.kind, f.repaired) for f in check_warehouse(warehouse, repair=True)] == [
        ("temp-file", True)
    ]
    assert not tmp.exists() and check_warehouse(warehouse) == []


def test_compaction_refuses_partitions_that_disagree_or_lack_columns(
    tmp_path: Path, year_warehouse: tuple[Path, Path, list[Path]]
) -> None:
    """A partition not matching its manifest, or from before rating groups, is not summed."""
    warehouse = copy_of(year_warehouse, tmp_path)
    part = partition_file(warehouse, MONTHS[7])
    write_legacy_partition(partition_file(year_warehouse[0], MONTHS[7]), part)
    with pytest.raises(ChesspipeError, match=f"does not match its manifest; re-ingest {MONTHS[7]}"):
        compact_year(warehouse, YEAR)
    manifest = manifest_path(warehouse, MONTHS[7])
    record = json.loads(manifest.read_text())
    manifest.write_text(json.dumps({**record, "output_sha256": file_sha256(part)}))
    with pytest.raises(ChesspipeError, match="lacks rating_group or rating_sum"):
        compact_year(warehouse, YEAR)
    assert not yearly_file(warehouse, YEAR).exists()
    assert not list(yearly_dir(warehouse).rglob("*.tmp"))


def test_compaction_tells_how_far_it_is_and_draws_a_bar_on_a_terminal(
    tmp_path: Path, year_warehouse: tuple[Path, Path, list[Path]]
) -> None:
    from tests.test_build_month_output import on_a_terminal

    warehouse = copy_of(year_warehouse, tmp_path)
    reports: list[CompactProgress] = []
    manifest = compact_year(warehouse, YEAR, progress=reports.append)
    stages = [r.stage for r in reports]
    assert stages[:12] == ["checking"] * 12 and [r.done for r in reports[:12]] == list(range(12))
    assert set(stages[12:]) <= {"summing", "writing"} and stages[-1] == "writing"
    written = [r.done for r in reports if r.stage == "writing"]
    assert written == sorted(written) and written[-1] == manifest.rows and reports[-1].finished
    assert not any(r.finished for r in reports[:-1])
    assert all(0 <= r.done <= 100 for r in reports if r.stage == "summing")
    line = format_compact_progress(CompactProgress("summing", 50.0, 75.0))
    assert line == f"[{'#' * 10}{' ' * 10}] summing 50%  1:15"
    # The command: the same on a terminal, ending on the manifest's rows.
    again = copy_of(year_warehouse, tmp_path / "again")
    out, terminal = on_a_terminal("warehouse", "compact", str(again), "--year", YEAR)
    summary = json.loads(out)
    drawn = [p for line in terminal.replace("\r\n", "\n").split("\n") for p in line.split("\r")]
    drawn = [p.replace("\x1b[K", "") for p in drawn if p.strip()]
    assert any("checking 0 of 12 months" in p for p in drawn), terminal
    assert drawn[-1].startswith(f"[{'#' * 20}] writing {summary['rows']:,} rows"), terminal
