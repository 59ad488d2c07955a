"""The explorer's lookup files (pipelines/explorer/lookup.py), read by the server from disk.

Their answers are the recount's in tests/test_explorer_games.py; here, what a damaged or
half-written file does: a file not of its recorded size is refused when the server starts, in
one line naming it; a flipped byte in a block answers an error (503), never another count;
`warehouse check` names the file; what a killed index run left is removed by the next run.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pipelines.explorer.index import index_month
from pipelines.explorer.layout import lookup_file
from pipelines.explorer.settings import ExplorerSettings
from pipelines.games.game_filter import GameFilter
from pipelines.serve.explorer import Explorer
from pipelines.serve.lookup_store import DamagedLookup
from schemas.speed import Speed
from tests.conftest import GAMES_2021, need, run_cli
from tests.serving import free_port

MONTH = "2021-10"
#: Lines of the sample's first games, as `play` (the start position first).
LINES = ["", "e2e4", "e2e4,e7e5", "d2d4", "d2d4,d7d5,c2c4", "e2e4,c7c5", "g1f3", "c2c4"]


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("warehouse")
    rules = GameFilter(min_rating=0, speeds=frozenset(Speed))
    index_month(str(need(GAMES_2021, "real Lichess games (2021-10)")), MONTH, folder,
                ExplorerSettings(rules))  # fmt: skip
    return folder


def copied(warehouse: Path, folder: Path) -> Path:
    target = folder / "copy"
    shutil.copytree(warehouse, target)
    return target


#: The files the server reads of a month.
SERVED = ("counts.bin", "records.bin", "lookup.duckdb")
PLAYER = "xtc99"


def answers(warehouse: Path) -> list[dict[str, object] | str]:
    """The answers for LINES (with top and recent games) and a player's, or the error of
    each."""
    from pipelines.serve.player import player_answer

    explorer = Explorer(warehouse, cache_bytes=0)
    found: list[dict[str, object] | str] = []
    try:
        for line in LINES:
            args = {"play": line} if line else {}
            for player in (None, PLAYER):
                try:
                    if player is None:
                        found.append(explorer.lichess(args))
                    else:
                        query = {**args, "player": player, "color": "white"}
                        found.append(player_answer(explorer, query))
                except DamagedLookup as exc:
                    found.append(f"error: {exc}")
    finally:
        explorer.close()
    return found


@pytest.mark.slow
def test_a_truncated_lookup_file_is_refused_when_the_server_starts(
    indexed: Path, tmp_path: Path
) -> None:
    for name in SERVED:
        warehouse = copied(indexed, tmp_path / name)
        path = lookup_file(warehouse, MONTH).parent / name
        with path.open("r+b") as handle:
            handle.truncate(path.stat().st_size // 2)
        refused(warehouse, path)


def refused(warehouse: Path, path: Path) -> None:
    for workers in ("1", "2"):
        found = run_cli("serve", "--warehouse", str(warehouse), "--port", str(free_port()),
                        "--workers", workers, check=False)  # fmt: skip
        assert found.returncode == 1, found.stderr
        lines = found.stderr.strip().splitlines()
        assert len(lines) == 1 and str(path) in lines[0] and "Traceback" not in found.stderr
        assert "manifest records" in lines[0]


@pytest.mark.slow
def test_a_flipped_byte_answers_an_error_never_another_count(indexed: Path, tmp_path: Path) -> None:
    good = answers(indexed)
    assert all(isinstance(answer, dict) for answer in good)
    assert any(answer["moves"] for answer in good[1::2])  # type: ignore[index]
    for name in SERVED:
        flipped(indexed, tmp_path / name, name, good)


def flipped(indexed: Path, folder: Path, name: str, good: list[dict[str, object] | str]) -> None:
    """Flip a byte at several places of a served file: every answer is the good one or an
    error, and some are errors."""
    size = (lookup_file(indexed, MONTH).parent / name).stat().st_size
    errors = 0
    for share in (0.1, 0.2, 0.35, 0.5, 0.65, 0.8, 0.95, 0.999):
        warehouse = copied(indexed, folder / f"at-{share}")
        path = lookup_file(warehouse, MONTH).parent / name
        with path.open("r+b") as handle:
            handle.seek(int(size * share))
            byte = handle.read(1)
            handle.seek(int(size * share))
            handle.write(bytes([byte[0] ^ 0x5A]))
        try:
            found = answers(warehouse)
        except DamagedLookup as exc:  # the block read on opening
            assert str(path) in str(exc)
            errors += 1
            continue
        for before, after in zip(good, found, strict=True):
            if isinstance(after, str):
                errors += 1
            else:
                assert after == before, share
        check = run_cli("warehouse", "check", str(warehouse), check=False)
        assert check.returncode == 1 and name in check.stdout + check.stderr
    assert errors, f"no flipped byte of {name} was in a block the answers read"


@pytest.mark.parametrize("name", SERVED)
def test_a_block_damaged_while_serving_answers_503(
    indexed: Path, tmp_path: Path, name: str
) -> None:
    from starlette.testclient import TestClient

    from pipelines.serve.app import make_app

    warehouse = copied(indexed, tmp_path)
    path = lookup_file(warehouse, MONTH).parent / name
    explorer = Explorer(warehouse, cache_bytes=0)  # opened whole, damaged while it serves
    try:
        size = path.stat().st_size
        with path.open("r+b") as handle:
            for at in range(
                size // 4, size * 9 // 10, 1024
            ):  # a byte of every block past the first
                handle.seek(at)
                byte = handle.read(1)
                handle.seek(at)
                handle.write(bytes([byte[0] ^ 0x5A]))
        client = TestClient(make_app(explorer, None))
        route = "/player" if name == "lookup.duckdb" else "/lichess"
        player = f"&player={PLAYER}&color=white" if route == "/player" else ""
        statuses = {client.get(f"{route}?play={line}{player}").status_code for line in LINES}
        assert 503 in statuses and statuses <= {200, 503}
        error = next(
            client.get(f"{route}?play={line}{player}").json()
            for line in LINES
            if client.get(f"{route}?play={line}{player}").status_code == 503
        )["error"]
        assert "checksum" in error and "warehouse check" in error or "Corrupt" in error
    finally:
        explorer.close()


def test_what_a_killed_index_left_is_removed_by_the_next_run(indexed: Path, tmp_path: Path) -> None:
    warehouse = copied(indexed, tmp_path)
    folder = lookup_file(warehouse, MONTH).parent
    leftovers = [folder / ".lookup.duckdb.abcdefgh.tmp", folder / ".lookup.duckdb.abcdefgh.tmp.wal"]
    for leftover in leftovers:
        leftover.write_bytes(b"half")
    rules = GameFilter(min_rating=0, speeds=frozenset(Speed))
    index_month(str(GAMES_2021), MONTH, warehouse, ExplorerSettings(rules))
    assert not any(p.exists() for p in leftovers)
    assert answers(warehouse) == answers(indexed)


#: `explorer index` with the lookup files' DuckDB held to 1 MB: DuckDB runs out of memory.
STARVED_INDEX = """
import sys
from pipelines.explorer import lookup
from pipelines.cli import main
from pipelines.warehouse.resources import QueryResources
lookup.write_lookup.__kwdefaults__["resources"] = QueryResources(memory_limit=1 << 20)
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.slow
def test_a_database_out_of_memory_is_one_line_and_publishes_nothing(tmp_path: Path) -> None:
    """What DuckDB raises that no layer names (out of memory here) ends the command in one
    line, not a traceback, and the month is not published."""
    import subprocess
    import sys

    from tests.conftest import ROOT

    source = need(GAMES_2021, "real Lichess games (2021-10)")
    warehouse = tmp_path / "w"
    done = subprocess.run(
        [sys.executable, "-c", STARVED_INDEX, "explorer", "index", str(source), "--month", MONTH,
         "--warehouse", str(warehouse), "--min-rating", "0", "--quiet"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("chesspipe: error: DuckDB: "), done.stderr
    assert "Out of Memory" in lines[0]
    assert not (warehouse / "explorer" / f"month={MONTH}.json").exists()
    assert not list((warehouse / "explorer").glob(f"month={MONTH}/*"))
