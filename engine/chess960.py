"""The 960 Chess960 starting positions, numbered 0-959 as Reinhard Scharnagl numbered them."""

from __future__ import annotations

import chess

#: Number of Chess960 starting positions.
COUNT = 960


def start_board(number: int) -> chess.Board:
    """Return Chess960 start position `number` as a Chess960 board (518 is the standard one)."""
    if not 0 <= number < COUNT:
        raise ValueError(f"Chess960 position number must be 0-959, not {number}")
    return chess.Board.from_chess960_pos(number)


def back_rank(number: int) -> str:
    """Return White's back rank (a-file first, e.g. "RNBQKBNR") of start position `number`."""
    return start_board(number).board_fen().rpartition("/")[2]


def start_fen(number: int, shredder: bool = False) -> str:
    """Return the FEN of start position `number` (X-FEN castling, or Shredder-FEN if asked)."""
    board = start_board(number)
    return board.shredder_fen() if shredder else board.fen()
