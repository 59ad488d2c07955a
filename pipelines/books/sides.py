"""Which side is to move in the statistics' positions, for books of one side (a repertoire).

A Polyglot key does not say whose move it is, and the statistics store keys, not boards. Every
position in them was reached by games from a start position (the standard one, or one of
Chess960's 960), through moves that are in the statistics too: so walking the statistics' own
moves from the start positions reaches every position, and the walk's boards say whose move it
is. The walk follows the moves played in at least `min_games` games first (the book's moves and
the paths to them, so usually the walk is about the book's size), and every move only for the
positions that walk did not reach (a transposition through rarer moves).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any

import chess

from schemas.polyglot import polyglot_key, push_with_key

#: A Polyglot move's promotion code, as a piece type.
_PROMOTIONS = (None, chess.KNIGHT, chess.BISHOP, chess.ROOK, chess.QUEEN, None, None, None)

#: The statistics' moves of the frontier's positions, played in at least ? games.
_MOVES_SQL = """
    SELECT key, list(move) FROM (
        SELECT key, move FROM move_stats
        WHERE month IN (SELECT unnest(?::VARCHAR[])) AND key IN (SELECT unnest(?::UBIGINT[]))
        GROUP BY key, move HAVING sum(games) >= ?
    ) GROUP BY key
"""


def start_positions() -> list[chess.Board]:
    """The positions games start from: the standard one and Chess960's other 959."""
    return [chess.Board()] + [chess.Board.from_chess960_pos(n) for n in range(960) if n != 518]


def sides_to_move(
    con: Any, months: list[str], wanted: Collection[int], *, min_games: int = 1
) -> dict[int, chess.Color]:
    """Return whose move it is in each wanted position the statistics reach (a DuckDB `con`).

    Positions no game reached from a start position (none, in games from the start) are left
    out.
    """
    boards = {polyglot_key(board): board for board in start_positions()}
    sides = {key: board.turn for key, board in boards.items()}
    missing = set(wanted) - set(sides)
    reached = dict(boards)
    frontier = dict(boards)
    for least in (max(1, min_games), 1) if min_games > 1 else (1,):
        if least < min_games:  # again from every position reached, through every move
            frontier = dict(reached)
        while frontier and missing:
            following: dict[int, chess.Board] = {}
            for key, moves in _moves(con, months, frontier, least):
                board = frontier[key]
                for raw in moves:
                    move = _played(board, raw)
                    child = board.copy(stack=False)
                    child_key = push_with_key(child, move, key)
                    if child_key in reached:
                        continue
                    reached[child_key] = following[child_key] = child
                    sides[child_key] = child.turn
                    missing.discard(child_key)
            frontier = following
    return {key: sides[key] for key in wanted if key in sides}


def _played(board: chess.Board, raw: int) -> chess.Move:
    """A Polyglot move played in this position (so legal: not checked again, for speed)."""
    from_square, to_square = (raw >> 6) & 0x3F, raw & 0x3F
    if (
        not board.chess960
        and board.kings & chess.BB_SQUARES[from_square]
        and board.rooks & board.occupied_co[board.turn] & chess.BB_SQUARES[to_square]
    ):  # castling, king takes rook in Polyglot
        to_square = chess.square(6 if to_square > from_square else 2, from_square >> 3)
    return chess.Move(from_square, to_square, _PROMOTIONS[raw >> 12 & 7])


def _moves(
    con: Any, months: list[str], frontier: dict[int, chess.Board], least: int
) -> Iterable[tuple[int, list[int]]]:
    rows = con.execute(_MOVES_SQL, [months, list(frontier), least]).fetchall()
    return ((int(key), [int(m) for m in moves]) for key, moves in rows)
