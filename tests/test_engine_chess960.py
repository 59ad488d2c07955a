"""Chess960 start positions by number, and Chess960 games played through the UCI client."""

from __future__ import annotations

import chess
import chess.engine
import pytest

from engine.chess960 import COUNT, back_rank, start_board, start_fen
from tests.conftest import run_cli
from tests.engine_support import raw_engine, uci_engine

#: The number of the standard starting position.
STANDARD = 518


def test_all_960_positions_are_distinct_legal_and_well_formed() -> None:
    ranks = set()
    for number in range(COUNT):
        board = start_board(number)
        rank = back_rank(number)
        ranks.add(rank)
        assert board.is_valid(), (number, board.status())
        assert sorted(rank) == sorted("RNBQKBNR")
        bishops = [i for i, piece in enumerate(rank) if piece == "B"]
        assert (bishops[0] + bishops[1]) % 2 == 1, f"{number}: bishops on one colour ({rank})"
        rooks = [i for i, piece in enumerate(rank) if piece == "R"]
        assert rooks[0] < rank.index("K") < rooks[1], f"{number}: king not between rooks"
        # Black mirrors White, and all four castlings are allowed.
        assert board.board_fen().split("/")[0] == rank.lower()
        assert board.castling_rights == board.rooks & (chess.BB_RANK_1 | chess.BB_RANK_8)
    assert len(ranks) == COUNT


def test_numbering_matches_python_chess() -> None:
    for number in range(COUNT):
        ours = start_board(number)
        theirs = chess.Board.from_chess960_pos(number)
        assert ours.fen() == theirs.fen(), number
        assert ours.shredder_fen() == theirs.shredder_fen(), number
        assert theirs.chess960_pos() == number


def test_standard_position_is_518() -> None:
    assert start_fen(STANDARD) == chess.STARTING_FEN
    assert start_fen(STANDARD, shredder=True) == chess.Board().shredder_fen()


@pytest.mark.parametrize("number", [-1, 960, 10**6])
def test_out_of_range_numbers_are_refused(number: int) -> None:
    with pytest.raises(ValueError, match="0-959"):
        start_board(number)


def test_command_line_prints_start_positions() -> None:
    assert run_cli("chess960", "518").stdout.strip() == chess.STARTING_FEN
    fen = run_cli("chess960", "0", "--shredder").stdout.strip()
    assert fen == chess.Board.from_chess960_pos(0).shredder_fen()
    failed = run_cli("chess960", "960", check=False)
    assert failed.returncode == 2  # argparse's error, naming the argument
    assert failed.stderr.strip().splitlines()[-1] == (
        "chesspipe chess960: error: argument N: must be from 0 to 959, got '960'"
    )


def test_engine_castles_king_takes_rook_and_reads_both_notations() -> None:
    with raw_engine() as engine:
        # Standard notation while UCI_Chess960 is off.
        engine.ask("position fen r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1")
        assert engine.ask("d") == ["info string fen r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1"]
        engine.send("go depth 1 searchmoves e1g1")
        assert engine.until("bestmove")[-1].split()[:2] == ["bestmove", "e1g1"]
        # Input in either notation, even with UCI_Chess960 off.
        for notation in ("e1g1", "e1h1", "e1a1", "e1c1"):
            expected = chess.Board("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1")
            expected.push(
                expected.parse_uci({"e1h1": "e1g1", "e1a1": "e1c1"}.get(notation, notation))
            )
            lines = engine.ask(
                f"position fen r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1 moves {notation}", "d"
            )
            assert lines == [f"info string fen {expected.fen()}"], notation
            assert expected.king(chess.WHITE) in (chess.G1, chess.C1)

        engine.ask("position fen r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1")
        engine.ask("setoption name UCI_Chess960 value true")
        engine.send("go depth 1 searchmoves e1h1")
        assert engine.until("bestmove")[-1].split()[:2] == ["bestmove", "e1h1"]

        # King on d1, rooks on a1 and h1: O-O is d1h1 or d1g1; d1c1 is a plain king move.
        start = chess.Board("r2k3r/8/8/8/8/8/8/R2K3R w KQkq - 0 1", chess960=True)
        castled = start.copy()
        castled.push(chess.Move(chess.D1, chess.H1))
        for notation in ("d1h1", "d1g1"):
            lines = engine.ask(f"position fen {start.fen()} moves {notation}", "d")
            assert lines == [f"info string fen {castled.fen()}"], notation
        stepped = start.copy()
        stepped.push(chess.Move(chess.D1, chess.C1))
        assert engine.ask(f"position fen {start.fen()} moves d1c1", "d") == [
            f"info string fen {stepped.fen()}"
        ]
        engine.send(f"position fen {start.fen()}", "go depth 1 searchmoves d1g1")
        assert engine.until("bestmove")[-1].split()[:2] == ["bestmove", "d1h1"]

        # Position 518 with Chess960 on: e1g1 and e1h1 both castle.
        for notation in ("e1g1", "e1h1"):
            lines = engine.ask(
                f"position startpos moves e2e4 e7e5 g1f3 b8c6 f1c4 g8f6 {notation}", "d"
            )
            assert lines[-1].startswith("info string fen ")
            board = chess.Board(lines[-1].removeprefix("info string fen "))
            assert board.piece_at(chess.G1) == chess.Piece.from_symbol("K")
            assert board.piece_at(chess.F1) == chess.Piece.from_symbol("R")


@pytest.mark.slow
@pytest.mark.parametrize("number", [0, 105, 518, 777])
def test_chess960_self_play_finishes_without_illegal_moves(number: int) -> None:
    board = chess.Board.from_chess960_pos(number)
    castled = set()
    with uci_engine() as engine:
        while not board.is_game_over(claim_draw=True):
            castles = [m for m in board.legal_moves if board.is_castling(m)]
            # The first time a side may castle, have it castle (through `go searchmoves`).
            force = castles if castles and board.turn not in castled else None
            result = engine.play(board, chess.engine.Limit(nodes=300), root_moves=force)
            assert result.move is not None and board.is_legal(result.move), result
            if board.is_castling(result.move):
                castled.add(board.turn)
            board.push(result.move)
            assert len(board.move_stack) < 1000
    assert board.is_game_over(claim_draw=True)
    assert castled, "no castling was played"


def test_engine_command_line_prints_start_positions() -> None:
    import subprocess

    from tests.engine_support import ENGINE_COMMAND, ROOT, engine_env

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*ENGINE_COMMAND, *args],
            capture_output=True,
            text=True,
            env=engine_env(),
            cwd=ROOT,
            timeout=60,
        )

    done = run("--chess960", "959", "--shredder")
    assert done.returncode == 0
    assert done.stdout.strip() == chess.Board.from_chess960_pos(959).shredder_fen()
    refused = run("--chess960", "-5")
    assert refused.returncode == 2
    assert refused.stderr.strip().splitlines()[-1] == (
        "chesspipe-engine: error: argument --chess960: must be from 0 to 959, got '-5'"
    )
