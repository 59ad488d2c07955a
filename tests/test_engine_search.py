"""The search as a library: time budgets, score conventions, and agreement with python-chess."""

from __future__ import annotations

import chess
import pytest

from engine.evaluation import evaluate
from engine.search import (
    MATE,
    MATE_BOUND,
    TB_BOUND,
    TB_WIN,
    Limits,
    Searcher,
    score_from_tt,
    score_to_tt,
    time_budget,
)
from engine.uci import uci_score


@pytest.mark.parametrize("left", [50, 300, 1000, 10_000, 600_000])
@pytest.mark.parametrize("increment", [0, 100, 2000])
@pytest.mark.parametrize("moves_to_go", [None, 1, 5, 40])
def test_clock_budget_stays_inside_the_clock(
    left: int, increment: int, moves_to_go: int | None
) -> None:
    overhead = 50
    for turn in chess.COLORS:
        mine, theirs = left, 1
        limits = Limits(
            wtime=mine if turn == chess.WHITE else theirs,
            btime=theirs if turn == chess.WHITE else mine,
            winc=increment,
            binc=increment,
            movestogo=moves_to_go,
        )
        budget = time_budget(limits, turn, overhead)
        assert budget is not None
        soft, hard = budget
        assert 0 < soft <= hard
        # Never more than the clock holds after the overhead (a tiny floor aside).
        assert hard * 1000 <= max(0.8 * max(left - overhead, 1), 2)


def test_budget_for_movetime_infinite_and_no_clock() -> None:
    assert time_budget(Limits(movetime=1000), chess.WHITE, 50) == (0.95, 0.95)
    assert time_budget(Limits(movetime=40), chess.WHITE, 50) == (0.02, 0.02)
    assert time_budget(Limits(infinite=True, wtime=1000), chess.WHITE, 50) is None
    assert time_budget(Limits(depth=3), chess.WHITE, 50) is None
    assert time_budget(Limits(wtime=1000), chess.BLACK, 50) is None


def test_score_bands_are_ordered() -> None:
    board = chess.Board("QQQQQQQK/QQQQQQQQ/8/8/8/8/8/k7 w - - 0 1")
    assert abs(evaluate(board)) < TB_BOUND
    assert TB_BOUND < TB_WIN < MATE_BOUND < MATE
    for score in (MATE - 3, TB_WIN - 7, -(MATE - 4), -(TB_WIN - 2), 123, -5):
        for ply in (0, 1, 17):
            assert score_from_tt(score_to_tt(score, ply), ply) == score
    assert uci_score(MATE - 1) == "mate 1"
    assert uci_score(MATE - 3) == "mate 2"
    assert uci_score(-(MATE - 2)) == "mate -1"
    # Tablebase wins and losses in Stockfish's band: cp 20000 - plies.
    assert uci_score(TB_WIN - 5) == "cp 19995"
    assert uci_score(-(TB_WIN - 7)) == "cp -19993"
    assert uci_score(TB_BOUND - 1) == f"cp {TB_BOUND - 1}"


def test_evaluation_is_colour_symmetric() -> None:
    for fen in (
        chess.STARTING_FEN,
        "r1bqkb1r/pppp1ppp/2n2n2/4p3/2B1P3/5N2/PPPP1PPP/RNBQK2R w KQkq - 4 4",
        "8/5pk1/6p1/8/3P4/8/5PPP/6K1 b - - 0 40",
        "8/8/8/4k3/8/8/8/KQ6 w - - 0 1",
    ):
        board = chess.Board(fen)
        assert evaluate(board) == evaluate(board.mirror()), fen


def test_search_returns_legal_moves_and_legal_lines() -> None:
    searcher = Searcher(1)
    board = chess.Board("r1bqkb1r/pppp1ppp/2n2n2/4p3/2B1P3/5N2/PPPP1PPP/RNBQK2R w KQkq - 4 4")
    result = searcher.search(board, Limits(depth=3))
    assert result.best_move in board.legal_moves
    line = board.copy()
    for move in result.pv:
        assert line.is_legal(move)
        line.push(move)
    # A small table fills, forgets its oldest entries, and the search goes on.
    result = searcher.search(board, Limits(nodes=20_000))
    assert len(searcher.tt) <= searcher.tt_limit
    assert result.best_move in board.legal_moves


def test_repetition_counts_as_a_draw() -> None:
    # Black, a queen down, has shuffled Kh8-g8-h8 once; going back to g8 repeats a position,
    # which the search scores as a draw, far better than anything else Black has.
    board = chess.Board("7k/8/8/8/8/8/8/K2Q4 b - - 0 1")
    for uci in ("h8g8", "d1e1", "g8h8", "e1d1"):
        board.push_uci(uci)
    result = Searcher().search(board, Limits(depth=3))
    assert result.best_move == chess.Move.from_uci("h8g8")
    assert result.score == 0
    # The same position without its history is simply lost.
    fresh = Searcher().search(chess.Board(board.fen()), Limits(depth=3))
    assert fresh.score < -500
