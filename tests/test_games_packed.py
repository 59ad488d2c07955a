"""The games' packed moves (schemas/packed_moves.py) read back as python-chess reads each game's
main line, for every game the explorer keeps of the shared samples: Lichess months, the odd
cases, the over-the-board collections, Chess960 games and games from a FEN."""

from __future__ import annotations

import io
from pathlib import Path

import chess
import chess.pgn
import pyarrow.parquet as pq
import pytest

from pipelines.explorer.index import index_month
from pipelines.explorer.layout import games_file
from pipelines.explorer.settings import ExplorerSettings
from pipelines.games.game_filter import GameFilter
from schemas.packed_moves import (
    DamagedMoves,
    board_at,
    pack_moves,
    start_board,
    unpack_moves,
)
from tests.conftest import GAMES_2013, GAMES_2021, ODD_CASES, OTB, need
from tests.random_moves import chess960_games
from tests.recount import read_text
from tests.test_side_to_move import chess960_games_from_black_to_move

EVERY_GAME = GameFilter(0, frozenset({"all"}))
CHESS960 = GameFilter(0, frozenset({"all"}), False, "chess960")


def python_chess_lines(text: str, chess960: bool) -> list[tuple[str, str, list[chess.Move]]]:
    """Each game python-chess reads: its players and its main line (up to an illegal move)."""
    stream = io.StringIO(text)
    found = []
    while (game := chess.pgn.read_game(stream)) is not None:
        moves = list(game.mainline_moves())
        found.append((game.headers.get("White", "?"), game.headers.get("Black", "?"), moves))
    return found


def check_packed(pgn: Path, tmp_path: Path, rules: GameFilter, plies: int | None) -> int:
    """Index `pgn`, then match each kept game, in order, with python-chess's reading of the
    source; return the games compared."""
    chess960 = rules.variant == "chess960"
    index_month(str(pgn), "2024-01", tmp_path, ExplorerSettings(rules, plies))
    table = pq.read_table(games_file(tmp_path, "2024-01"))
    rows = table.select(["white", "black", "fen", "plies", "packed"]).to_pylist()
    text = read_text(pgn) if pgn.suffix == ".zst" else pgn.read_text(errors="replace")
    truth = iter(python_chess_lines(text, chess960))
    for row in rows:
        for white, black, moves in truth:
            if (white, black) == (row["white"], row["black"]) and moves:
                break
        else:
            pytest.fail(f"no game of {row['white']} v {row['black']} left in the source")
        board = start_board(row["fen"], chess960=chess960)
        assert unpack_moves(board, row["packed"]) == moves, (row["white"], row["black"])
        assert row["plies"] == len(moves)
    return len(rows)


@pytest.mark.slow
@pytest.mark.parametrize("plies", [50, None])
def test_lichess_games_read_back_as_python_chess_reads_them(
    tmp_path: Path, plies: int | None
) -> None:
    """Every game of the 2021 sample, 50 plies indexed (the compiled walk) and every ply (the
    moves kept: python-chess)."""
    sample = need(GAMES_2021, "Lichess sample")
    assert check_packed(sample, tmp_path / "w2021", EVERY_GAME, plies) > 900


@pytest.mark.slow
def test_every_game_of_a_month_reads_back(tmp_path: Path) -> None:
    """Every game of the 2013-01 sample (25,611)."""
    sample = need(GAMES_2013, "Lichess sample")
    assert check_packed(sample, tmp_path, EVERY_GAME, 50) > 25000


def test_odd_cases_read_back(tmp_path: Path) -> None:
    assert check_packed(need(ODD_CASES, "odd cases"), tmp_path, EVERY_GAME, 50) > 0


@pytest.mark.slow
@pytest.mark.parametrize("name", ["Capablanca.pgn", "London1851.pgn"])
def test_collections_read_back_whole(tmp_path: Path, name: str) -> None:
    pgn = need(OTB / name, "over-the-board collection")
    assert check_packed(pgn, tmp_path, EVERY_GAME, None) > 200


@pytest.mark.slow
def test_chess960_and_fen_games_read_back(tmp_path: Path) -> None:
    pgn = tmp_path / "960.pgn"
    pgn.write_text(chess960_games(80, seed=3) + "\n" + chess960_games_from_black_to_move(40, 4))
    assert check_packed(pgn, tmp_path / "w", CHESS960, 50) == 120
    fens = pq.read_table(games_file(tmp_path / "w", "2024-01"), columns=["fen"]).column(0)
    assert 0 < fens.null_count < 120  # null where a game starts from the standard position


def test_a_line_past_the_plies_stops_at_its_first_illegal_move(tmp_path: Path) -> None:
    """An illegal move after the indexed plies ends the packed line (python-chess's main line
    ends there too); within them, the game is dropped, as before."""
    moves = "1. e4 e5 2. Nf3 Nc6 3. Bb5 a6 4. Ba4 Nf6 5. Qxh7 Be7"
    pgn = tmp_path / "g.pgn"
    pgn.write_text(
        '[White "a"]\n[Black "b"]\n[Result "1-0"]\n[WhiteElo "2000"]\n[BlackElo "2000"]\n\n'
        f"{moves} 1-0\n"
    )
    assert check_packed(pgn, tmp_path / "w", EVERY_GAME, 4) == 1
    row = pq.read_table(games_file(tmp_path / "w", "2024-01")).to_pylist()[0]
    assert row["plies"] == 8


def test_damaged_moves_are_told_not_read() -> None:
    board = chess.Board()
    packed = pack_moves(board, [chess.Move.from_uci(u) for u in ("e2e4", "e7e5", "e1e2")])
    assert len(packed) == 6
    assert board_at(board, packed, 2) == chess.Board(
        "rnbqkbnr/pppp1ppp/8/4p3/4P3/8/PPPP1PPP/RNBQKBNR w KQkq - 0 2"
    )
    assert board_at(board, packed, 4) is None
    with pytest.raises(DamagedMoves, match="not a whole number"):
        unpack_moves(board, packed[:3])
    with pytest.raises(DamagedMoves, match="move 2"):
        unpack_moves(board, packed[:2] + packed[:2])


Comments = tuple[str, str, list[int | None], list[int | None]]


def python_chess_comments(text: str) -> list[Comments]:
    """Each game's clock (tenths) and eval (White's view, a mate in n as +-(32000 - n)) after
    each main-line move, as python-chess reads its comments."""
    stream = io.StringIO(text)
    found = []
    while (game := chess.pgn.read_game(stream)) is not None:
        clocks: list[int | None] = []
        evals: list[int | None] = []
        for node in game.mainline():
            clock = node.clock()
            clocks.append(None if clock is None else int(round(clock * 100)) // 10)
            score = node.eval()
            if score is None:
                evals.append(None)
                continue
            white = score.white()
            mate = white.mate()
            if mate is None:
                evals.append(white.score())
            elif mate == 0:  # python-chess: the side to move is mated
                evals.append(32000 if node.turn() == chess.BLACK else -32000)
            else:
                evals.append(32000 - mate if mate > 0 else -(32000 + mate))
        found.append((game.headers["White"], game.headers["Black"], clocks, evals))
    return found


@pytest.mark.slow
def test_clocks_and_evals_are_python_chess_readings_of_the_comments(tmp_path: Path) -> None:
    """Every game of the 2021 sample (clocks in all, evals in a tenth): the games' clocks and
    evals after each move, as python-chess reads the comments."""
    sample = need(GAMES_2021, "Lichess sample")
    index_month(str(sample), "2024-01", tmp_path, ExplorerSettings(EVERY_GAME))
    columns = ["white", "black", "clocks", "evals"]
    table = pq.read_table(games_file(tmp_path, "2024-01"), columns=columns)
    truth = iter(python_chess_comments(read_text(sample)))
    assert table.num_rows > 900
    with_evals = 0
    for row in table.to_pylist():
        for game in truth:  # (games the filter drops are passed by)
            if game[:2] == (row["white"], row["black"]):
                clocks, evals = game[2], game[3]
                break
        else:
            pytest.fail(f"no game of {row['white']} v {row['black']} left in the source")
        assert row["clocks"] == (clocks if any(c is not None for c in clocks) else None)
        assert row["evals"] == (evals if any(e is not None for e in evals) else None)
        with_evals += row["evals"] is not None
    assert with_evals > 50 and table.column("clocks").null_count == 0
