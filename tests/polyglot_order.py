"""The order of a position's moves of equal points in a PolyGlot book, and the first-play ranks
chesspipe keeps to give it.

PolyGlot's make-book (1.4's book_make.cpp, 2.0.4's book_make.c) sorts in `book_sort` with
`qsort` and `key_compare`: by key, then by `entry_score`, the points, highest first. Moves of
equal points keep the order of its entry array, in which `find_entry` appends a (key, move)
the first time a game plays it (glibc's qsort is a merge sort, which keeps the order of
equals). chesspipe's statistics keep a first-play rank per row (schemas/first_play.py), by
which its books equal PolyGlot's bytes; months ingested before the ranks put such moves by
move (docs/books.md, "Entry order"). `ties_by_move` gives PolyGlot's book in that older order;
`first_plays` and `rank_order` give the order python-chess's replay of the games and the
warehouse's ranks put each position's moves in.
"""

from __future__ import annotations

import io
from pathlib import Path

import chess.pgn
import chess.polyglot
import numpy as np
import pyarrow.parquet as pq

from bench.data import read_text
from schemas.polyglot import encode_move, read_entries


def ties_by_move(book: Path) -> bytes:
    """The bytes of `book` with each position's moves of equal weight in move order, as
    chesspipe writes them from statistics without ranks; a book without such ties comes back
    unchanged."""
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


def moves_by_first_play(first: dict[tuple[int, int], int]) -> dict[int, list[int]]:
    """Each position's moves, in the order of their ranks."""
    moves: dict[int, list[tuple[int, int]]] = {}
    for (key, move), rank in first.items():
        moves.setdefault(key, []).append((rank, move))
    return {key: [move for _, move in sorted(ranked)] for key, ranked in moves.items()}


def rank_order(*partitions: Path) -> dict[int, list[int]]:
    """Each position's moves in the statistics files `partitions` (months, in month order), in
    the order of their first-play ranks: the least over a move's rows, the earlier file first."""
    first: dict[tuple[int, int], int] = {}
    for place, partition in enumerate(partitions):
        table = pq.read_table(partition, columns=["key", "move", "first_play"])
        assert table["first_play"].null_count == 0, partition
        least = table.group_by(["key", "move"]).aggregate([("first_play", "min")])
        for key, move, rank in zip(
            least["key"].to_pylist(),
            least["move"].to_pylist(),
            least["first_play_min"].to_pylist(),
            strict=True,
        ):
            first.setdefault((key, move), (place << 64) + rank)
    return moves_by_first_play(first)
