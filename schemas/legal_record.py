"""What a training record's position and move must be for Stockfish's tools to take them.

One set of rules for every reader and writer of training files: the `.binpack` writer (and so
`training convert`), the `.binpack` reader's stems, and the `.plain` reader when asked to check
(`training shuffle`, `interleave`, `stats`). Each failure is a ValueError naming the problem.

- the FEN parses (python-chess), with one king of each colour and the side not to move not in
  check (a position no game reaches; the king could be taken);
- the move is UCI and legal there, castling written as the king's destination (`e1g1`):
  python-chess reads king takes rook (`e1h1`) as castling short, Stockfish's tools as long.
"""

from __future__ import annotations

import chess

_ROOK_CORNERS = (chess.A1, chess.H1, chess.A8, chess.H8)


def usable_board(board: chess.Board) -> chess.Board:
    """Return `board` if a record may stand on it: a king of each colour, no king en prise."""
    for colour in chess.COLORS:
        if chess.popcount(board.kings & board.occupied_co[colour]) != 1:
            name = chess.COLOR_NAMES[colour]
            raise ValueError(f"{board.fen()}: not one {name} king")
    if board.was_into_check():
        raise ValueError(f"{board.fen()}: the side not to move is in check")
    return board


def legal_position(fen: str) -> chess.Board:
    """Return the board of a record's FEN, refusing one a record may not stand on."""
    return usable_board(chess.Board(fen))


def legal_move(board: chess.Board, uci: str) -> chess.Move:
    """Return the move `uci` of `board`, refusing one that is not legal or not written as
    Stockfish's tools read it."""
    move = chess.Move.from_uci(uci)
    if (
        move.from_square in (chess.E1, chess.E8)
        and move.to_square in _ROOK_CORNERS
        and board.is_castling(move)
    ):
        raise ValueError(f"castling is written as the king's destination, not {uci}")
    if not board.is_legal(move):
        raise ValueError(f"move {uci} is not legal in {board.fen()}")
    return move
