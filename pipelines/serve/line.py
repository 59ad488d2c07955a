"""A position reached by a line: a FEN, then UCI moves, replayed by python-chess with the
Polyglot key of every position on the way. Light on purpose (python-chess and the key only):
the replay process (`pipelines.serve.replay`) imports nothing else."""

from __future__ import annotations

import time
from typing import NamedTuple

import chess

from pipelines.serve.params import BadRequest
from schemas.polyglot import polyglot_key, push_with_key

#: Plies replayed between two offers of the interpreter to other threads (about 0.2 ms).
YIELD_EVERY = 16


class Position(NamedTuple):
    """The position asked for, its Polyglot key, and the keys of every position on the way
    (the FEN's first, the position's last); whether the FEN is the start position."""

    board: chess.Board
    key: int
    path: list[int]
    from_start: bool


def replay_line(
    variant: str, fen: str, play: tuple[str, ...], *, offer_every: int = YIELD_EVERY
) -> Position:
    """The position of `fen` after the UCI moves `play`; every `offer_every` plies (0: never)
    the interpreter is offered to other threads."""
    try:
        board = chess.Board(fen, chess960=variant == "chess960")
    except ValueError as exc:
        raise BadRequest(f"invalid fen: {exc}") from None
    if board.status() != chess.STATUS_VALID:
        raise BadRequest(f"invalid fen: not a legal position ({fen})")
    from_start = board.board_fen() == chess.STARTING_BOARD_FEN
    key = polyglot_key(board)
    path = [key]
    for i, text in enumerate(play):
        if offer_every and i % offer_every == offer_every - 1:
            time.sleep(0)  # let other threads (the event loop, short requests) run
        try:
            move = board.parse_uci(text)
        except ValueError:
            raise BadRequest(f"illegal move {text!r} in play from {board.fen()}") from None
        key = push_with_key(board, move, key)
        path.append(key)
    return Position(board, key, path, from_start)
