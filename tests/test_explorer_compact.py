"""`chesspipe explorer compact`: a year's explored months merged into one lookup and counts
file, read by the server instead of each month's; answers unchanged (every filter, since and
until inside the year), a month indexed again read from its own files, the rest from the year.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipelines.explorer.compact import explorer_years, yearly_lookup_file
from pipelines.explorer.index import index_month
from pipelines.explorer.settings import ExplorerSettings
from pipelines.games.game_filter import GameFilter
from pipelines.serve.explorer import Explorer
from pipelines.serve.player import player_answer
from schemas.speed import Speed
from tests.conftest import GAMES_2013, GAMES_2021, first_games, need, run_cli

RULES = GameFilter(min_rating=0, speeds=frozenset(Speed))
LINES = ["", "e2e4", "e2e4,e7e5", "d2d4,d7d5,c2c4", "e2e4,c7c5,g1f3", "g1f3"]
FILTERS = [
    {},
    {"since": "2021-11"},
    {"until": "2021-10"},
    {"since": "2021-10", "until": "2021-11", "speeds": "blitz,rapid"},
    {"ratings": "1600,1800,2000", "topGames": "2"},
    {"history": "true", "recentGames": "3"},
]


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("warehouse")
    games = tmp_path_factory.mktemp("games")
    index_month(str(need(GAMES_2021, "real Lichess games")), "2021-10", folder,
                ExplorerSettings(RULES))  # fmt: skip
    index_month(str(first_games(GAMES_2013, 3000, games / "a.pgn")), "2021-11", folder,
                ExplorerSettings(RULES))  # fmt: skip
    index_month(str(first_games(GAMES_2013, 500, games / "b.pgn")), "2022-01", folder,
                ExplorerSettings(RULES))  # fmt: skip
    return folder


def answers(warehouse: Path) -> list[object]:
    explorer = Explorer(warehouse, cache_bytes=0)
    try:
        found: list[object] = []
        for line in LINES:
            for extra in FILTERS:
                args = {**({"play": line} if line else {}), **extra}
                found.append(explorer.lichess(args))
            for player in ("xtc99", "MequinhoCover"):
                query = {"play": line, "player": player, "color": "white"}
                found.append(player_answer(explorer, query))
        return found
    finally:
        explorer.close()


@pytest.mark.slow
def test_a_compacted_year_answers_as_its_months(warehouse: Path) -> None:
    before = answers(warehouse)
    done = run_cli("explorer", "compact", "--warehouse", str(warehouse), "--year", "2021")
    manifest = json.loads(done.stdout)
    assert sorted(manifest["months"]) == ["2021-10", "2021-11"]
    assert yearly_lookup_file(warehouse, "2021").is_file()
    (year,) = explorer_years(warehouse)
    assert year.fresh == ("2021-10", "2021-11")
    explorer = Explorer(warehouse, cache_bytes=0)
    try:  # the year is read, not the months
        aliases = {place.alias: sorted(place.serves) for place in explorer.lookup._places}
        assert aliases == {"y2021": ["2021-10", "2021-11"], f"m{2022 * 12}": ["2022-01"]}
    finally:
        explorer.close()
    assert answers(warehouse) == before


@pytest.mark.slow
def test_a_month_indexed_again_is_read_from_its_own_files(warehouse: Path, tmp_path: Path) -> None:
    run_cli("explorer", "compact", "--warehouse", str(warehouse), "--year", "2021")
    source = first_games(GAMES_2013, 1200, tmp_path / "c.pgn")
    index_month(str(source), "2021-11", warehouse, ExplorerSettings(RULES))
    (year,) = explorer_years(warehouse)
    assert year.fresh == ("2021-10",)
    stale = answers(warehouse)
    fresh_copy = tmp_path / "fresh"
    import shutil

    shutil.copytree(warehouse, fresh_copy)
    shutil.rmtree(fresh_copy / "explorer_yearly")
    assert stale == answers(fresh_copy)


def test_compacting_a_year_without_explored_months_is_one_line(warehouse: Path) -> None:
    found = run_cli("explorer", "compact", "--warehouse", str(warehouse), "--year", "1999",
                    check=False)  # fmt: skip
    assert found.returncode == 1
    assert found.stderr.strip().count("\n") == 0 and "no month of 1999" in found.stderr


@pytest.mark.slow
def test_warehouse_check_names_a_damaged_compacted_year(warehouse: Path, tmp_path: Path) -> None:
    import shutil

    run_cli("explorer", "compact", "--warehouse", str(warehouse), "--year", "2021")
    copy = tmp_path / "copy"
    shutil.copytree(warehouse, copy)
    assert run_cli("warehouse", "check", str(copy)).returncode == 0
    counts = yearly_lookup_file(copy, "2021").with_name("counts.bin")
    data = bytearray(counts.read_bytes())
    data[len(data) // 2] ^= 0x5A
    counts.write_bytes(bytes(data))
    found = run_cli("warehouse", "check", str(copy), check=False)
    assert found.returncode == 1
    assert "sha256-mismatch" in found.stdout and str(counts) in found.stdout
