"""The 960 Chess960 starting positions, numbered 0-959 as Reinhard Scharnagl numbered them."""

from __future__ import annotations

from itertools import combinations

import chess

#: Number of Chess960 starting positions.
COUNT = 960

#: The number of the standard starting position.
STANDARD = 518

#: The ten ways to put two knights on five free squares, in the numbering's order.
_KNIGHT_PLACES = tuple(combinations(range(5), 2))


def back_rank(number: int) -> str:
    """Return White's back rank (a-file first, e.g. "RNBQKBNR") of start position `number`."""
    if not 0 <= number < COUNT:
        raise ValueError(f"Chess960 position number must be 0-959, not {number}")
    rank: list[str | None] = [None] * 8
    rest = number
    # Light-squared bishop on b, d, f or h; dark-squared bishop on a, c, e or g.
    rest, light = divmod(rest, 4)
    rank[2 * light + 1] = "B"
    rest, dark = divmod(rest, 4)
    rank[2 * dark] = "B"
    # The queen on one of the six free squares, then the knights on two of the five left.
    rest, queen = divmod(rest, 6)
    _place(rank, "Q", queen)
    first, second = _KNIGHT_PLACES[rest]
    free = [i for i, piece in enumerate(rank) if piece is None]
    rank[free[first]] = rank[free[second]] = "N"
    # Rook, king, rook on the last three squares, so the king stands between its rooks.
    for square, piece in zip((i for i, p in enumerate(rank) if p is None), "RKR", strict=True):
        rank[square] = piece
    return "".join(piece or "?" for piece in rank)


def _place(rank: list[str | None], piece: str, index: int) -> None:
    free = [i for i, p in enumerate(rank) if p is None]
    rank[free[index]] = piece


def start_board(number: int) -> chess.Board:
    """Return Chess960 start position `number` as a Chess960 board (518 is the standard one)."""
    white = back_rank(number)
    rook_files = "".join(chess.FILE_NAMES[i] for i, piece in enumerate(white) if piece == "R")
    rights = rook_files[::-1].upper() + rook_files[::-1]
    fen = f"{white.lower()}/pppppppp/8/8/8/8/PPPPPPPP/{white} w {rights} - 0 1"
    return chess.Board(fen, chess960=True)


def start_fen(number: int, shredder: bool = False) -> str:
    """Return the FEN of start position `number` (X-FEN castling, or Shredder-FEN if asked)."""
    board = start_board(number)
    return board.shredder_fen() if shredder else board.fen()
