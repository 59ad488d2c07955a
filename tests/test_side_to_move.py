"""The statistics' `white_to_move`: whose move it is in each row's position, as python-chess's
replay of the same games says, however the games were counted (the compiled walk in batches,
python-chess one by one for Chess960 games from FENs with either side to move, worker
processes), through a compacted year; books of one side read it, and months ingested before it
still give the books the walk gave them. The truths: python-chess's `board.turn`, PolyGlot's
make-book -only-white / -only-black.
"""

from __future__ import annotations

import io
import random
import shutil
import subprocess
from pathlib import Path

import chess
import chess.pgn
import chess.polyglot
import pyarrow.parquet as pq
import pytest

from pipelines.books.build import build_book, rows_have_sides
from pipelines.books.settings import BookSettings
from pipelines.games.game_filter import GameFilter
from pipelines.ingest.options import Runtime, Tuning
from pipelines.ingest.run import ingest
from pipelines.ingest.settings import IngestSettings
from pipelines.warehouse.layout import partition_file
from pipelines.warehouse.sql import connect
from pipelines.warehouse.yearly import compact_year, yearly_file
from schemas.speed import Speed
from tests.conftest import need_program
from tests.legacy_partition import write_manifest_for, write_sideless_partition
from tests.random_moves import chess960_games, random_move
from tests.recount import read_text
from tests.test_first_play import SETTINGS, capablanca, year_of_capablanca  # noqa: F401

EVERY_SPEED = IngestSettings(GameFilter(0, frozenset(Speed), True))


def turns(text: str, *, plies: int = 20) -> dict[int, bool]:
    """Whose move it is (True: White's) in each position of the games' first plies, by
    python-chess's replay."""
    found: dict[int, bool] = {}
    stream = io.StringIO(text)
    while (game := chess.pgn.read_game(stream)) is not None:
        board = game.board()
        for move in list(game.mainline_moves())[:plies]:
            found[chess.polyglot.zobrist_hash(board)] = board.turn == chess.WHITE
            board.push(move)
    return found


def assert_sides_are_python_chess(partition: Path, expected: dict[int, bool]) -> int:
    """Every row of a statistics file says whose move it is as python-chess does; return the
    rows."""
    table = pq.read_table(partition, columns=["key", "white_to_move"])
    assert table["white_to_move"].null_count == 0
    rows = list(zip(table["key"].to_pylist(), table["white_to_move"].to_pylist(), strict=True))
    assert {key for key, _ in rows} == set(expected)
    wrong = [(key, white) for key, white in rows if expected[key] != white]
    assert not wrong, wrong[:5]
    assert {white for _, white in rows} == {True, False}
    return len(rows)


@pytest.mark.slow
def test_real_games_counted_in_batches_and_by_workers(tmp_path: Path, games_2021: Path) -> None:
    expected = turns(read_text(games_2021))
    files = set()
    for workers in (1, 2):
        warehouse = tmp_path / f"w{workers}"
        ingest(
            str(games_2021), "2021-01", warehouse, EVERY_SPEED,
            runtime=Runtime(workers=workers), tuning=Tuning(parallel_min_bytes=0),
        )  # fmt: skip
        partition = partition_file(warehouse, "2021-01")
        assert assert_sides_are_python_chess(partition, expected) > 10_000
        files.add(partition.read_bytes())
    assert len(files) == 1  # the same file however many processes counted


def chess960_games_from_black_to_move(count: int, seed: int) -> str:
    """PGN of random Chess960 games from FENs with Black to move (a Standard game from a FEN is
    dropped; these are counted one by one, by python-chess)."""
    rng = random.Random(seed)
    out = []
    for number in range(count):
        board = chess.Board.from_chess960_pos(rng.randrange(960))
        for _ in range(rng.randrange(1, 12, 2)):  # an odd number of plies: Black to move
            board.push(rng.choice(list(board.legal_moves)))
        game = chess.pgn.Game()
        game.headers.update(
            {"Variant": "Chess960", "FEN": board.fen(), "SetUp": "1", "WhiteElo": "2300",
             "BlackElo": "2300", "TimeControl": "300+0", "Site": f"https://lichess.org/{number}",
             "Result": rng.choice(["1-0", "0-1", "1/2-1/2"])}
        )  # fmt: skip
        game.setup(board)
        node: chess.pgn.GameNode = game
        for _ in range(30):
            move = random_move(board, rng, 0.3)
            if move is None:
                break
            node = node.add_main_variation(move)
            board.push(move)
        out.append(str(game))
    return "\n\n".join(out) + "\n"


@pytest.mark.slow  # (1.5 s or more: the fast lane leaves it out)
@pytest.mark.parametrize("start", ["start positions", "black to move"])
def test_chess960_games_counted_one_by_one(tmp_path: Path, start: str) -> None:
    if start == "black to move":
        text = chess960_games_from_black_to_move(80, 3)
    else:
        text = chess960_games(80, 5)
    pgn = tmp_path / "games.pgn"
    pgn.write_text(text)
    settings = IngestSettings(GameFilter(0, frozenset(Speed), True, "chess960"))
    ingest(str(pgn), "2024-01", tmp_path / "w", settings)
    assert_sides_are_python_chess(partition_file(tmp_path / "w", "2024-01"), turns(text))


def polyglot_side_book(pgn: Path, folder: Path, side: str, min_games: int) -> bytes:
    out = folder / f"polyglot-{side}-{min_games}.bin"
    subprocess.run(
        [need_program("polyglot"), "make-book", "-pgn", str(pgn), "-bin", str(out),
         "-max-ply", "20", "-min-game", str(min_games), "-min-score", "35", f"-only-{side}"],
        check=True, capture_output=True, cwd=folder,
    )  # fmt: skip
    return out.read_bytes()


@pytest.mark.slow
def test_a_compacted_year_keeps_the_side_and_its_books_are_polyglots(
    tmp_path: Path,
    year_of_capablanca: tuple[Path, Path],  # noqa: F811
) -> None:
    warehouse, in_order = year_of_capablanca
    compact_year(warehouse, "1901")
    assert_sides_are_python_chess(yearly_file(warehouse, "1901"), turns(read_text(in_order)))
    settings = BookSettings(3, 0.35, side="white")
    con = connect(warehouse)
    try:  # (the year's file stands in for its months)
        assert rows_have_sides(con, [], settings, [yearly_file(warehouse, "1901")])
    finally:
        con.close()
    for side in ("white", "black"):
        ours = tmp_path / f"{side}.bin"
        build_book(warehouse, "1901-01..1901-12", ours, BookSettings(3, 0.35, side=side))
        assert ours.read_bytes() == polyglot_side_book(in_order, tmp_path, side, 3)
        assert ours.stat().st_size > 100


@pytest.mark.slow
def test_months_without_the_column_read_as_null_and_books_walk_as_before(
    tmp_path: Path, games_2021: Path
) -> None:
    """A month ingested before `white_to_move` beside one with it: the SQL view reads null
    for the old month's rows, and a book of one side over both finds the sides by the walk,
    the same bytes as over two months with the column."""
    warehouse = tmp_path / "w"
    for month in ("2021-01", "2021-02"):
        ingest(str(games_2021), month, warehouse, EVERY_SPEED)
    months = "2021-01..2021-02"
    books = {}
    for side in ("white", "black"):
        books[side] = tmp_path / f"{side}.bin"
        build_book(warehouse, months, books[side], BookSettings(3, 0.35, side=side))
    old = tmp_path / "old"
    shutil.copytree(warehouse, old)
    partition = partition_file(old, "2021-01")
    write_sideless_partition(partition_file(warehouse, "2021-01"), partition)
    write_manifest_for(partition)
    con = connect(old)
    try:
        nulls = dict(
            con.execute(
                "SELECT month, count(*) - count(white_to_move) FROM move_stats GROUP BY month"
            ).fetchall()
        )
        settings = BookSettings(3, 0.35, side="white")
        assert not rows_have_sides(con, ["2021-01", "2021-02"], settings, [])
        assert rows_have_sides(con, ["2021-02"], settings, [])
    finally:
        con.close()
    assert nulls["2021-02"] == 0
    assert nulls["2021-01"] == pq.read_metadata(partition).num_rows
    for side in ("white", "black"):
        walked = tmp_path / f"walked-{side}.bin"
        build_book(old, months, walked, BookSettings(3, 0.35, side=side))
        assert walked.read_bytes() == books[side].read_bytes()
        assert walked.stat().st_size > 100


def reached_from_starts(text: str, *, plies: int = 20) -> set[int]:
    """The positions of the games' first plies that their moves reach from a start position
    (the standard one or Chess960's), by python-chess."""
    moves: dict[int, set[str]] = {}
    stream = io.StringIO(text)
    while (game := chess.pgn.read_game(stream)) is not None:
        board = game.board()
        for move in list(game.mainline_moves())[:plies]:
            moves.setdefault(chess.polyglot.zobrist_hash(board), set()).add(move.uci())
            board.push(move)
    frontier = [chess.Board.from_chess960_pos(n) for n in range(960)]
    for board in frontier:
        board.chess960 = True
    reached = {chess.polyglot.zobrist_hash(board) for board in frontier}
    while frontier:
        following = []
        for board in frontier:
            for uci in moves.get(chess.polyglot.zobrist_hash(board), ()):
                child = board.copy(stack=False)
                child.push(chess.Move.from_uci(uci))
                key = chess.polyglot.zobrist_hash(child)
                if key not in reached:
                    reached.add(key)
                    following.append(child)
        frontier = following
    return reached


@pytest.mark.slow
def test_positions_no_walk_reaches_are_in_the_book_and_named_where_months_predate_it(
    tmp_path: Path,
) -> None:
    """Games from FENs start where no walk from a start position goes: the column puts their
    positions in a book of one side; over a month without it they are left out, and a note
    says how many."""
    from schemas.polyglot import read_entries

    text = chess960_games_from_black_to_move(60, 11)
    expected = turns(text)
    pgn = tmp_path / "games.pgn"
    pgn.write_text(text)
    warehouse = tmp_path / "w"
    settings = IngestSettings(GameFilter(0, frozenset(Speed), True, "chess960"))
    ingest(str(pgn), "2024-01", warehouse, settings)
    every = tmp_path / "all.bin"
    build_book(warehouse, "2024-01", every, BookSettings(1, 0.0))
    entries = read_entries(every)
    old = tmp_path / "old"
    shutil.copytree(warehouse, old)
    partition = partition_file(old, "2024-01")
    write_sideless_partition(partition_file(warehouse, "2024-01"), partition)
    write_manifest_for(partition)
    for side, white in (("white", True), ("black", False)):
        wanted = entries[[expected[int(key)] == white for key in entries["key"]]]
        out = tmp_path / f"{side}.bin"
        notes: list[str] = []
        build_book(warehouse, "2024-01", out, BookSettings(1, 0.0, side=side), notes=notes)
        assert read_entries(out).tobytes() == wanted.tobytes() and len(wanted) and not notes
        walked = tmp_path / f"walked-{side}.bin"
        build_book(old, "2024-01", walked, BookSettings(1, 0.0, side=side), notes=notes)
        book_keys = {int(key) for key in entries["key"]}
        unreached = len(book_keys - reached_from_starts(text))
        assert unreached > 0 and len(notes) == 1
        assert notes[0].startswith(f"{unreached:,} positions of the book are reached by no walk")
        assert len(read_entries(walked)) < len(wanted)
