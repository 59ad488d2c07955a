"""Ingest: the move statistics equal a plain python-chess recount of the same games."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from pipelines.ingest.game_filter import GameFilter
from pipelines.ingest.run import ingest
from pipelines.warehouse.layout import manifest_path, partition_file
from schemas.move_stats import MOVE_STATS_SCHEMA, SPEEDS
from tests.conftest import run_cli
from tests.recount import pgn_extract_elo, read_text, recount

ALL_SPEEDS = frozenset(SPEEDS)


def stats_counter(warehouse: Path, month: str) -> Counter[tuple[int, int, str, int, str]]:
    table = pq.read_table(partition_file(warehouse, month))
    counts: Counter[tuple[int, int, str, int, str]] = Counter()
    for row in table.to_pylist():
        assert row["games"] == row["wins"] + row["draws"] + row["losses"]
        base = (row["key"], row["move"], row["speed"], row["rating_band"])
        for outcome, column in (("win", "wins"), ("draw", "draws"), ("loss", "losses")):
            if row[column]:
                counts[(*base, outcome)] += row[column]
    return counts


@pytest.mark.parametrize(
    ("min_rating", "speeds", "allow_bots"),
    [
        (0, ALL_SPEEDS, True),
        (2200, frozenset({"blitz", "rapid", "classical", "correspondence"}), False),
        (1800, frozenset({"bullet", "blitz"}), False),
    ],
)
def test_stats_equal_python_chess_recount(
    tmp_path: Path, games_2021: Path, min_rating: int, speeds: frozenset[str], allow_bots: bool
) -> None:
    rules = GameFilter(min_rating, speeds, allow_bots)
    manifest = ingest(str(games_2021), "2021-10", tmp_path, rules)
    expected, kept = recount(games_2021, min_rating, set(speeds), allow_bots)
    assert stats_counter(tmp_path, "2021-10") == expected
    assert manifest["games_kept"] == kept
    assert manifest["games_read"] == manifest["games_kept"] + sum(
        manifest["games_dropped"].values()
    )
    assert manifest["games_read"] == 999


def test_recount_on_a_week_of_2013_and_odd_cases(
    tmp_path: Path, games_2013: Path, odd_cases: Path
) -> None:
    for path, month, rating in ((games_2013, "2013-01", 1900), (odd_cases, "2013-02", 0)):
        rules = GameFilter(rating, ALL_SPEEDS, allow_bots=False)
        manifest = ingest(str(path), month, tmp_path, rules, flush_rows=5000)  # several spill runs
        expected, kept = recount(path, rating, set(ALL_SPEEDS))
        assert manifest["games_kept"] == kept > 0
        assert stats_counter(tmp_path, month) == expected


def test_partition_schema_and_manifest(tmp_path: Path, games_2021: Path) -> None:
    manifest = ingest(str(games_2021), "2021-10", tmp_path)
    schema = pq.read_schema(partition_file(tmp_path, "2021-10"))
    assert [(f.name, f.type) for f in schema] == [(f.name, f.type) for f in MOVE_STATS_SCHEMA]
    on_disk = json.loads(manifest_path(tmp_path, "2021-10").read_text())
    assert on_disk == manifest
    assert on_disk["source_size"] == games_2021.stat().st_size
    import hashlib

    assert on_disk["source_sha256"] == hashlib.sha256(games_2021.read_bytes()).hexdigest()
    assert on_disk["games_dropped"]["bot"] == 1  # the one BOT vs BOT game (SOURCE.md)
    assert set(on_disk["settings"]) == {"min_rating", "speeds", "allow_bots", "variant", "plies"}


def test_filter_keeps_what_pgn_extract_keeps(
    tmp_path: Path, games_2021: Path, games_2013: Path
) -> None:
    """Same Elo criteria: our byte-level filter and pgn-extract keep the same games."""
    from pipelines.ingest.game_filter import ScanStats, filter_game
    from pipelines.ingest.scan import split_games

    for source, rating in ((games_2021, 2200), (games_2021, 1500), (games_2013, 1800)):
        out = pgn_extract_elo(source, rating, tmp_path)
        theirs = [line for line in out.read_text().splitlines() if line.startswith("[Site ")]
        stats = ScanStats()
        rules = GameFilter(rating, ALL_SPEEDS, allow_bots=True)
        ours = []
        for game in split_games([read_text(source).encode()], stats):
            if filter_game(game, rules, stats) is not None:
                site = game[game.index(b"[Site ") : game.index(b"\n", game.index(b"[Site "))]
                ours.append(site.decode())
        assert ours == theirs
        assert len(ours) > 0


def test_reingest_replaces_the_month(tmp_path: Path, games_2021: Path) -> None:
    rules = GameFilter(0, ALL_SPEEDS, True)
    ingest(str(games_2021), "2021-10", tmp_path, rules)
    first = stats_counter(tmp_path, "2021-10")
    ingest(str(games_2021), "2021-10", tmp_path, rules)
    assert stats_counter(tmp_path, "2021-10") == first
    files = sorted(p.name for p in partition_file(tmp_path, "2021-10").parent.iterdir())
    assert files == ["part-0.parquet"]


def test_cli_sources_file_stdin_and_plain(tmp_path: Path, games_2021: Path) -> None:
    args = ["--min-rating", "1500", "--quiet"]
    run_cli(
        "ingest", str(games_2021), "--month", "2021-10", "--warehouse", str(tmp_path / "a"), *args
    )
    plain = tmp_path / "games.pgn"
    plain.write_text(read_text(games_2021))
    run_cli("ingest", str(plain), "--month", "2021-10", "--warehouse", str(tmp_path / "b"), *args)
    run_cli(
        "ingest",
        "-",
        "--month",
        "2021-10",
        "--warehouse",
        str(tmp_path / "c"),
        *args,
        stdin=plain.read_bytes(),
    )
    reference = stats_counter(tmp_path / "a", "2021-10")
    assert reference
    assert stats_counter(tmp_path / "b", "2021-10") == reference
    assert stats_counter(tmp_path / "c", "2021-10") == reference


def test_cli_rejects_bad_arguments(tmp_path: Path, games_2021: Path) -> None:
    bad_month = run_cli(
        "ingest", str(games_2021), "--month", "2021-13", "--warehouse", str(tmp_path), check=False
    )
    assert bad_month.returncode != 0 and "YYYY-MM" in bad_month.stderr
    bad_speed = run_cli(
        "ingest",
        str(games_2021),
        "--month",
        "2021-10",
        "--warehouse",
        str(tmp_path),
        "--speeds",
        "blitz,lightning",
        check=False,
    )
    assert bad_speed.returncode != 0 and "lightning" in bad_speed.stderr
    missing = run_cli(
        "ingest",
        str(tmp_path / "nope.pgn.zst"),
        "--month",
        "2021-10",
        "--warehouse",
        str(tmp_path),
        check=False,
    )
    assert missing.returncode != 0 and "cannot open" in missing.stderr
    assert len(missing.stderr.strip().splitlines()) == 1


def test_duckdb_and_in_memory_merges_write_the_same_table(
    tmp_path: Path, games_2013: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Large months are merged by DuckDB, small ones in memory: the tables must be equal."""
    import pipelines.ingest.runs

    rules = GameFilter(1900, ALL_SPEEDS)
    tables = []
    for limit in (pipelines.ingest.runs.IN_MEMORY_ROWS, 0):
        monkeypatch.setattr(pipelines.ingest.runs, "IN_MEMORY_ROWS", limit)
        warehouse = tmp_path / f"limit-{limit}"
        ingest(str(games_2013), "2013-01", warehouse, rules, flush_rows=3000)
        tables.append(pq.read_table(partition_file(warehouse, "2013-01")))
    in_memory, by_duckdb = tables
    assert by_duckdb.num_rows == in_memory.num_rows > 1000
    assert by_duckdb.to_pylist() == in_memory.to_pylist()  # same rows, same order
    keys = [(r["key"], r["move"], r["speed"], r["rating_band"]) for r in in_memory.to_pylist()]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
