"""A suite's exits: the positions many games reach, found by walking the statistics' moves
from the start position, a ply at a time.

A Polyglot key does not give the board back, so the walk plays the moves: each position it
reaches has a board, and the line that reached it (through the most played move into it).
A position's games are the games of the moves into it from the positions of the ply before
(transpositions add up); a position reached at an earlier ply is not reached again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple

import chess

from pipelines.suites.settings import SuiteSettings
from schemas.polyglot import decode_move, polyglot_key, push_with_key


class Exit(NamedTuple):
    """A position of the suite: its key, its FEN as its line reaches it (clocks included),
    the line (moves from the start position), its ply, and the games that reached it."""

    key: int
    fen: str
    moves: tuple[chess.Move, ...]
    games: int

    @property
    def ply(self) -> int:
        return len(self.moves)

    @property
    def white_to_move(self) -> bool:
        return self.fen.split()[1] == "w"

    def board(self) -> chess.Board:
        return chess.Board(self.fen)

    def san_line(self) -> str:
        """The line in SAN, numbered as PGN numbers it (`1. e4 e5 2. Nf3`)."""
        return chess.Board().variation_san(self.moves)


class ExitWalk(NamedTuple):
    """What a walk found: the exits (in the order the walk reached them: by ply, then by
    key) and how many positions it reached in all."""

    exits: list[Exit]
    positions: int


#: The moves of (key, move, games) the walk asks for: those of the frontier's keys played in
#: at least so many games.
MovesOf = Callable[[Sequence[int], int], Iterable[tuple[int, int, int]]]


class _Node(NamedTuple):
    board: chess.Board
    moves: tuple[chess.Move, ...]


def walk_exits(moves_of: MovesOf, settings: SuiteSettings) -> ExitWalk:
    """Walk from the start position to `settings.last_ply`; return the exits."""
    start = chess.Board()
    start_key = polyglot_key(start)
    seen = {start_key}
    frontier = {start_key: _Node(start, ())}
    exits: list[Exit] = []
    least = settings.least_line_games
    for ply in range(1, settings.last_ply + 1):
        arrivals: dict[int, int] = {}
        best: dict[int, tuple[tuple[int, int, int], _Node]] = {}
        for key, raw, games in moves_of(sorted(frontier), least):
            node = frontier[key]
            move = decode_move(node.board, raw)
            if move is None:  # (two positions of one key: not this one's move)
                continue
            child = node.board.copy(stack=False)
            child_key = push_with_key(child, move, key)
            if child_key in seen:
                continue
            arrivals[child_key] = arrivals.get(child_key, 0) + games
            rank = (-games, key, raw)  # the line through the most played move into it
            if child_key not in best or rank < best[child_key][0]:
                best[child_key] = (rank, _Node(child, (*node.moves, move)))
        frontier = {}
        for child_key in sorted(best):
            node = best[child_key][1]
            seen.add(child_key)
            frontier[child_key] = node
            if ply >= settings.first_ply and arrivals[child_key] >= settings.min_games:
                exits.append(Exit(child_key, node.board.fen(), node.moves, arrivals[child_key]))
        if not frontier:
            break
    return ExitWalk(exits, len(seen))


#: The moves of the frontier's positions played in at least ? games, over the statistics rows
#: the conditions choose.
_MOVES_SQL = """
    SELECT key, move, sum(games)::UBIGINT FROM move_stats
    WHERE {where} AND key IN (SELECT unnest(?::UBIGINT[]))
    GROUP BY key, move HAVING sum(games) >= ?
"""


def statistics_moves(con: Any, where: list[str], params: list[Any]) -> MovesOf:
    """The walk's moves from a warehouse's DuckDB connection (`pipelines.warehouse.sql.connect`),
    over the rows `where` (conditions with `params`, as books choose them) choose."""
    sql = _MOVES_SQL.format(where=" AND ".join(where))

    def moves_of(keys: Sequence[int], least: int) -> Iterable[tuple[int, int, int]]:
        rows = con.execute(sql, [*params, list(keys), least]).fetchall()
        return sorted((int(key), int(move), int(games)) for key, move, games in rows)

    return moves_of
