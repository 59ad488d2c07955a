"""The positions a book's evaluation needs: each book position and the position after each of
its book moves, found by walking the book's moves from the start position (a Polyglot key does
not give the board back; the walk does)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

import chess

from pipelines.evals.settings import WALK_PLIES
from pipelines.evals.store import Evaluation
from schemas.evals import PV_MOVES
from schemas.polyglot import Book, decode_move, polyglot_key, push_with_key


class Walk(NamedTuple):
    """What a walk reached: a board for each position (by key), and the move each raw book
    move of a reached position is there (a raw move that is illegal there is left out)."""

    boards: dict[int, chess.Board]
    moves: dict[tuple[int, int], tuple[chess.Move, int]]

    def child(self, key: int, raw: int) -> int | None:
        """The key of the position after a book move, if the walk reached it."""
        found = self.moves.get((key, raw))
        return None if found is None else found[1]


def book_moves(book: Book) -> dict[int, list[int]]:
    """A book's raw moves by key (entries of weight 0 left out, as readers skip them)."""
    moves: dict[int, list[int]] = {}
    for entry in book.entries:
        if int(entry["weight"]) > 0:
            moves.setdefault(int(entry["key"]), []).append(int(entry["move"]))
    return moves


def walk(
    moves: Mapping[int, Sequence[int]],
    *,
    start: chess.Board | None = None,
    plies: int = WALK_PLIES,
) -> Walk:
    """Walk `moves` (raw Polyglot moves by key) from the start position, breadth first, up to
    `plies` plies: every position reached has its board; keys no walk reaches (positions no
    line of the book leads to) have none."""
    first = (start or chess.Board()).copy(stack=False)
    boards = {polyglot_key(first): first}
    found: dict[tuple[int, int], tuple[chess.Move, int]] = {}
    frontier = dict(boards)
    for _ in range(plies):
        following: dict[int, chess.Board] = {}
        for key, board in frontier.items():
            for raw in moves.get(key, ()):
                move = decode_move(board, raw)
                if move is None:
                    continue
                child = board.copy(stack=False)
                child_key = push_with_key(child, move, key)
                found[(key, raw)] = (move, child_key)
                if child_key not in boards:
                    boards[child_key] = following[child_key] = child
        if not following:
            break
        frontier = following
    return Walk(boards, found)


def best_move_child(
    walk: Walk, key: int, evaluations: Mapping[int, Evaluation]
) -> tuple[chess.Board, int] | None:
    """The position after the engine's own best move (the stored `best`) in a position the
    walk reached, and its key; None where the store has no best move there."""
    board = walk.boards.get(key)
    own = evaluations.get(key)
    if board is None or own is None or own.best is None:
        return None
    move = decode_move(board, own.best)
    if move is None:
        return None
    child = board.copy(stack=False)
    return child, push_with_key(child, move, key)


def after_best_moves(
    walk: Walk, moves: Mapping[int, Sequence[int]], evaluations: Mapping[int, Evaluation]
) -> dict[int, chess.Board]:
    """The position after the engine's own best move in each book position where it is no
    book move, by key: a book move's loss compares it with the best move's value, both
    searches of the position after a move (pipelines.evals.pruning), so it needs evaluating
    too."""
    found = {}
    for key, raws in moves.items():
        own = evaluations.get(key)
        child = None if own is None or own.best in raws else best_move_child(walk, key, evaluations)
        if child is not None:
            found[child[1]] = child[0]
    return found


def fen_without_clocks(board: chess.Board) -> str:
    """The FEN's first four fields (as the Lichess evaluation dump writes them); en passant
    only where a capture is legal."""
    return " ".join(board.fen(en_passant="legal").split()[:4])


def pv_text(moves: Sequence[chess.Move]) -> str | None:
    """A principal variation as the store keeps it: its first moves (the best and PV_MOVES
    more) in UCI, as python-chess writes them; None for no move."""
    return " ".join(move.uci() for move in moves[: PV_MOVES + 1]) or None
