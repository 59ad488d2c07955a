"""A game's moves packed: 2 bytes a ply, as the `packed` column of the explorer's games holds
them and the position search (pipelines.search) replays them.

Each move is its 16-bit Polyglot code (schemas.polyglot.encode_move: to-square in bits 0-5,
from-square in bits 6-11, a1 = 0; promotion in bits 12-14; castling as the king taking its own
rook, in Chess960 too), little-endian. The moves are legal from the game's start (the standard
position, or the `fen` beside them), so they read back with python-chess alone. The same two
bytes Scoutfish's index keeps a move in; zstd in Parquet takes them to about a byte (bench/).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import chess
import numpy as np

from schemas.polyglot import decode_move, encode_move


class DamagedMoves(ValueError):
    """Packed moves that do not read as legal moves from the game's start."""


def start_board(fen: str | None, *, chess960: bool = False) -> chess.Board:
    """The position a game's packed moves start from."""
    if fen is None:
        return chess.Board(chess960=chess960)
    return chess.Board(fen, chess960=chess960)


def pack_moves(board: chess.Board, moves: Iterable[chess.Move]) -> bytes:
    """Legal moves from `board`'s position, packed (`board` is left as it was)."""
    board = board.copy(stack=False)
    codes = []
    for move in moves:
        codes.append(encode_move(board, move))
        board.push(move)
    return np.array(codes, dtype="<u2").tobytes()


def unpacked_moves(board: chess.Board, packed: bytes) -> Iterator[chess.Move]:
    """The moves of `packed` from `board`'s position, each pushed onto `board` after it is
    given; DamagedMoves where one is not a legal move there."""
    if len(packed) % 2:
        raise DamagedMoves(f"{len(packed)} bytes is not a whole number of moves")
    for ply, code in enumerate(np.frombuffer(packed, dtype="<u2").tolist()):
        move = decode_move(board, code)
        if move is None:
            raise DamagedMoves(f"move {ply + 1} ({code:#06x}) is not legal in {board.fen()}")
        yield move
        board.push(move)


def unpack_moves(board: chess.Board, packed: bytes) -> list[chess.Move]:
    """The moves of `packed` from `board`'s position (`board` is left as it was)."""
    return list(unpacked_moves(board.copy(stack=False), packed))


def board_at(board: chess.Board, packed: bytes, ply: int) -> chess.Board | None:
    """The position after the first `ply` moves (a new board), None past the game's end."""
    if ply < 0 or 2 * ply > len(packed):
        return None
    board = board.copy(stack=False)
    for _ in unpacked_moves(board, packed[: 2 * ply]):
        pass
    return board
