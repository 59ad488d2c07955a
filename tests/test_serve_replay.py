"""Long `play` lines replayed in the server's worker process (pipelines.serve.replay): the same
positions, keys and errors as the thread's replay and python-chess's, a process of lower
priority, and a worker that dies is replaced without a request failing."""

from __future__ import annotations

import os
import random
from collections.abc import Iterator

import chess
import chess.polyglot
import pytest

from pipelines.serve.explorer import board_of, parse_query
from pipelines.serve.params import BadRequest
from pipelines.serve.replay import LONG_PLAY, NICENESS, Replayer
from tests.random_moves import random_move


@pytest.fixture(scope="module")
def replayer() -> Iterator[Replayer]:
    replaying = Replayer()
    replaying.start()
    assert replaying.wait_ready(60)
    yield replaying
    replaying.close()


def random_line(rng: random.Random, plies: int, board: chess.Board) -> list[str]:
    moves = []
    for _ in range(plies):
        move = random_move(board, rng, 0.3)
        if move is None:
            break
        moves.append(board.uci(move))
        board.push(move)
    return moves


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["standard", "chess960"])
def test_long_lines_give_python_chess_positions_and_keys(replayer: Replayer, variant: str) -> None:
    rng = random.Random(4)
    for _ in range(30):
        start = (
            chess.Board.from_chess960_pos(rng.randrange(960))
            if variant == "chess960"
            else (chess.Board())
        )
        board = start.copy()
        moves = random_line(rng, rng.randrange(LONG_PLAY, 300), board)
        query = parse_query(
            {"variant": variant, "fen": start.fen(), "play": ",".join(moves)}
            if variant == "chess960"
            else {"play": ",".join(moves)}
        )
        replayed = replayer.position(query)
        assert replayed.board.fen() == board.fen()
        assert replayed.key == chess.polyglot.zobrist_hash(board)
        keys = [chess.polyglot.zobrist_hash(start)]
        for move in board.move_stack:
            start.push(move)
            keys.append(chess.polyglot.zobrist_hash(start))
        assert replayed.path == keys
        assert replayed == board_of(query)._replace(board=replayed.board)


def test_errors_are_the_threads(replayer: Replayer) -> None:
    rng = random.Random(5)
    moves = random_line(rng, 60, chess.Board())
    cases = [
        {"play": ",".join([*moves[:50], "e1e8", *moves[50:]])},  # illegal at ply 51
        {"play": ",".join(moves), "fen": "8/8/8/8/8/8/8/8 w - - 0 1"},  # no kings
    ]
    for args in cases:
        query = parse_query(args)
        with pytest.raises(BadRequest) as in_thread:
            board_of(query)
        with pytest.raises(BadRequest) as in_process:
            replayer.position(query)
        assert str(in_process.value) == str(in_thread.value)


def test_the_worker_runs_at_lower_priority_and_a_dead_one_is_replaced() -> None:
    replaying = Replayer()
    replaying.start()
    try:
        assert replaying.wait_ready(60)
        process = replaying._process
        assert process is not None and process.pid != os.getpid()
        if hasattr(os, "SCHED_IDLE"):  # Linux: runs only when no other process wants the core
            assert os.sched_getscheduler(process.pid) == os.SCHED_IDLE
        else:
            assert os.getpriority(os.PRIO_PROCESS, process.pid) == (
                os.getpriority(os.PRIO_PROCESS, 0) + NICENESS
            )
        query = parse_query(
            {"play": ",".join(random_line(random.Random(6), LONG_PLAY + 20, chess.Board()))}
        )
        expected = board_of(query)
        process.kill()
        process.join()
        assert replaying.position(query).path == expected.path  # (in the thread)
        again = replaying._process
        assert again is not None and again.is_alive() and again.pid != process.pid
        assert replaying.wait_ready(60)
        assert replaying.position(query).path == expected.path  # (by the new worker)
    finally:
        replaying.close()
    assert replaying._process is None
    closed = replaying.position(query)  # closed: in the thread
    assert closed.path == expected.path
