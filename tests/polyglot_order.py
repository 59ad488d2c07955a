"""The one way a PolyGlot book's bytes may differ from ours on the same games: the order of
a position's moves of equal points.

PolyGlot's make-book (1.4's book_make.cpp, 2.0.4's book_make.c) sorts in `book_sort` with
`qsort` and `key_compare`: by key, then by `entry_score`, the points, highest first. Moves of
equal points keep the order of its entry array, in which `find_entry` appends a (key, move)
the first time a game plays it (glibc's qsort is a merge sort, which keeps the order of
equals). Statistics summed by (key, move) do not hold that order, so chesspipe puts them by
move (docs/books.md, "Entry order"). Each function here turns one order into the other, so
that a test compares the books byte for byte.
"""

from __future__ import annotations

import io
from pathlib import Path

import chess.pgn
import chess.polyglot
import numpy as np

from bench.data import read_text
from schemas.polyglot import encode_move, read_entries


def ties_by_move(book: Path) -> bytes:
    """The bytes of `book` with each position's moves of equal weight in move order, as
    chesspipe writes them; a book without such ties comes back unchanged."""
    entries = read_entries(book)
    weight = entries["weight"].astype(np.int64)
    order = np.lexsort((entries["move"], -weight, entries["key"]))
    return bytes(entries[order].tobytes())


def first_plays(pgn: Path, *, plies: int = 20) -> dict[tuple[int, int], int]:
    """For each (key, move) the games of `pgn` play in their first `plies` plies, the rank of
    its first play: games in file order, plies in game order (python-chess's main lines)."""
    first: dict[tuple[int, int], int] = {}
    stream = io.StringIO(read_text(pgn))
    while (game := chess.pgn.read_game(stream)) is not None:
        board = game.board()
        for move in list(game.mainline_moves())[:plies]:
            first.setdefault(
                (chess.polyglot.zobrist_hash(board), encode_move(board, move)), len(first)
            )
            board.push(move)
    return first


def ties_by_first_play(book: Path, pgn: Path, *, plies: int = 20) -> bytes:
    """The bytes of `book` with each position's moves of equal weight in the order the games
    of `pgn` first played them, as PolyGlot's make-book writes them."""
    first = first_plays(pgn, plies=plies)
    entries = read_entries(book)
    rank = np.array(
        [first[(int(k), int(m))] for k, m in zip(entries["key"], entries["move"], strict=True)],
        dtype=np.int64,
    )
    weight = entries["weight"].astype(np.int64)
    order = np.lexsort((rank, -weight, entries["key"]))
    return bytes(entries[order].tobytes())
