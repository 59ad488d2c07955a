"""Like with like in the evaluation store: a book analysis also evaluates the position after
the engine's own best move where no book move plays it, and each score records the halfmove
clock it was searched with; both checked against a fresh Stockfish run at the same nodes."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import chess
import chess.engine
import chess.polyglot
import pytest

from pipelines.evals.store import read_evaluations
from schemas.polyglot import decode_move
from tests.conftest import need_program, run_cli

NODES = 3000


def fresh(board: chess.Board) -> int:
    """A fresh Stockfish's score of the board (centipawns from the side to move), a new game."""
    with chess.engine.SimpleEngine.popen_uci(need_program("stockfish")) as engine:
        engine.configure({"Threads": 1, "Hash": 16})
        info = engine.analyse(board, chess.engine.Limit(nodes=NODES), game=object())
    return info["score"].pov(board.turn).score(mate_score=100_000)


@pytest.mark.slow
def test_the_position_after_the_engines_best_move_is_evaluated_too(tmp_path: Path) -> None:
    # A book of one move the engine never prefers: 1. a3 (and, after 1. e4, 1... a6).
    start = chess.Board()
    after_e4 = chess.Board()
    after_e4.push_san("e4")
    entries = sorted(
        [
            (chess.polyglot.zobrist_hash(start), 8 << 6 | 16),  # a2a3
            (chess.polyglot.zobrist_hash(after_e4), 48 << 6 | 40),  # a7a6
        ]
    )
    book = tmp_path / "book.bin"
    book.write_bytes(b"".join(struct.pack(">QHHI", key, move, 1, 0) for key, move in entries))
    warehouse = tmp_path / "wh"
    warehouse.mkdir()
    proc = run_cli(
        "evals", "analyse", "--warehouse", str(warehouse), "--book", str(book),
        "--engine", "stockfish", "--nodes", str(NODES), "--quiet",
    )  # fmt: skip
    summary = json.loads(proc.stdout)
    stored = read_evaluations(warehouse)
    own = stored[chess.polyglot.zobrist_hash(start)]
    move = decode_move(start, own.best)  # (the stored best is a Polyglot move)
    assert move is not None and move != chess.Move.from_uci("a2a3")
    child = start.copy()
    child.push(move)
    key = chess.polyglot.zobrist_hash(child)
    assert key in stored, "the position after the engine's best move is stored"
    assert stored[key].score == fresh(child)
    assert stored[key].halfmove == child.halfmove_clock
    assert summary["after_best_moves"]["analysed"] >= 1
    # every score was searched with the clock it records, and a fresh run agrees
    for evaluation in stored.values():
        board = chess.Board(evaluation.fen + f" {evaluation.halfmove} 1")
        assert evaluation.score == fresh(board)
    # the second run has nothing left to do
    again = json.loads(
        run_cli(
            "evals", "analyse", "--warehouse", str(warehouse), "--book", str(book),
            "--engine", "stockfish", "--nodes", str(NODES), "--quiet",
        ).stdout
    )  # fmt: skip
    assert again["analysed"] == 0 and again["after_best_moves"]["analysed"] == 0
