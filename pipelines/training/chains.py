"""A training file's records as games: runs of records each following the one before.

A record follows the previous one when its ply is one more and its position is the previous
position after the previous move: pieces, side to move, castling rights, the en-passant square
where a capture is legal, and the halfmove clock (`schemas.binpack.position_key`). That is the
chained `.binpack` writer's rule without its result condition, so a game is one or more chains
(a rescored game's results need not alternate once it reaches the tables). The fullmove number
is not compared (a `.binpack` does not store it). A game holds at most MAX_GAME_RECORDS records
(more than any `.binpack` game, whose ply is 14 bits), so memory stays bounded.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import NamedTuple

import chess

from schemas.binpack import position_key
from schemas.plain import PlainRecord

MAX_GAME_RECORDS = 1 << 14


class Position(NamedTuple):
    """A record with its board (before the move) and move."""

    record: PlainRecord
    board: chess.Board
    move: chess.Move


class Game(NamedTuple):
    """Records that follow one another, and the board after the last one's move."""

    positions: list[Position]
    end: chess.Board


def _after(position: Position) -> chess.Board:
    board = position.board.copy(stack=False)
    board.push(position.move)
    return board


def games(records: Iterable[PlainRecord]) -> Iterator[Game]:
    """Yield the records as games, in order (each record in exactly one)."""
    current: list[Position] = []
    after: chess.Board | None = None
    for record in records:
        board = chess.Board(record.fen)
        position = Position(record, board, chess.Move.from_uci(record.move))
        if (
            after is None
            or len(current) >= MAX_GAME_RECORDS
            or record.ply != current[-1].record.ply + 1
            or position_key(after) != position_key(board)
        ):
            if current:
                assert after is not None
                yield Game(current, after)
            current = []
        current.append(position)
        after = _after(position)
    if current:
        assert after is not None
        yield Game(current, after)
