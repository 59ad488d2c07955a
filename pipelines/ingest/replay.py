"""Replaying kept games in batches: the first plies of many games parsed at once by
`rust-pgn-reader-python-binding`, Polyglot keys and moves computed with NumPy.

Only Standard games go this way; python-chess stays the authority: a game the batch parser
rejects is replayed by python-chess, which decides whether it is illegal.
"""

from __future__ import annotations

from dataclasses import dataclass

import chess.polyglot
import numpy as np

_RANDOM = np.array(chess.polyglot.POLYGLOT_RANDOM_ARRAY, dtype=np.uint64)


def _piece_square_table() -> np.ndarray:
    """Polyglot randoms by (piece code 0-12 as the batch parser writes them, square)."""
    table = np.zeros((13, 64), dtype=np.uint64)
    for code in range(1, 13):
        piece_type = (code - 1) % 6 + 1
        white = code <= 6
        kind = (piece_type - 1) * 2 + (1 if white else 0)
        table[code] = _RANDOM[64 * kind : 64 * kind + 64]
    return table


_PIECE_SQUARE = _piece_square_table()
_WHITE_PAWN, _BLACK_PAWN, _WHITE_KING, _BLACK_KING = 1, 7, 6, 12


def _piece_keys(flat: np.ndarray) -> np.ndarray:
    """Return the pieces' part of the Polyglot keys of (N, 64) boards.

    Each key is its predecessor's with the squares that changed between the two boards
    toggled (the first board's from an empty board), accumulated by XOR: positions of a game
    differ in a few squares, so this looks at far fewer squares than hashing every board.
    """
    if not len(flat):
        return np.zeros(0, dtype=np.uint64)
    changed = np.empty(flat.shape, dtype=bool)
    changed[0] = flat[0] != 0
    np.not_equal(flat[1:], flat[:-1], out=changed[1:])
    where = np.flatnonzero(changed)
    rows, squares = where >> 6, where & 63
    toggled = _PIECE_SQUARE[flat[rows, squares], squares]
    before = rows > 0
    toggled[before] ^= _PIECE_SQUARE[flat[rows[before] - 1, squares[before]], squares[before]]
    deltas = np.zeros(len(flat), dtype=np.uint64)
    if len(rows):
        starts = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]])
        deltas[rows[starts]] = np.bitwise_xor.reduceat(toggled, starts)
    return np.bitwise_xor.accumulate(deltas)


def polyglot_keys(
    boards: np.ndarray, castling: np.ndarray, en_passant: np.ndarray, white_to_move: np.ndarray
) -> np.ndarray:
    """Return the Polyglot keys of positions given as (N, 8, 8) boards and their state."""
    keys = _piece_keys(boards.reshape(len(boards), 64))
    for index in range(4):
        keys ^= np.where(castling[:, index], _RANDOM[768 + index], np.uint64(0))
    keys ^= np.where(white_to_move, _RANDOM[780], np.uint64(0))
    # The en passant file counts only where a pawn of the side to move stands beside the pawn
    # that just made the double step.
    files = en_passant.astype(np.int64)
    has_file = files >= 0
    rank = np.where(white_to_move, 4, 3)
    pawn = np.where(white_to_move, _WHITE_PAWN, _BLACK_PAWN)
    rows = np.arange(len(boards))
    capturer = np.zeros(len(boards), dtype=bool)
    for side in (-1, 1):
        beside = files + side
        inside = has_file & (beside >= 0) & (beside <= 7)
        capturer |= inside & (boards[rows, rank, np.clip(beside, 0, 7)] == pawn)
    keys ^= np.where(capturer, _RANDOM[772 + np.clip(files, 0, 7)], np.uint64(0))
    return keys


def polyglot_moves(
    boards_before: np.ndarray,
    from_squares: np.ndarray,
    to_squares: np.ndarray,
    promotions: np.ndarray,
) -> np.ndarray:
    """Return Polyglot move codes (castling as king takes rook) of moves from (N, 8, 8) boards."""
    origin = from_squares.astype(np.int64)
    target = to_squares.astype(np.int64)
    piece = boards_before.reshape(len(boards_before), 64)[np.arange(len(origin)), origin]
    king = (piece == _WHITE_KING) | (piece == _BLACK_KING)
    two_files = np.abs((target & 7) - (origin & 7)) == 2
    castles = king & two_files
    rook_file = np.where((target & 7) > (origin & 7), 7, 0)
    target = np.where(castles, (origin & ~7) | rook_file, target)
    promotion = np.where(promotions > 0, promotions.astype(np.int64) - 1, 0)
    return (target | (origin << 6) | (promotion << 12)).astype(np.uint16)


@dataclass
class Replayed:
    """Per-ply keys and moves of a batch, with the game each row belongs to."""

    keys: np.ndarray
    moves: np.ndarray
    games: np.ndarray  # index of the game in the batch, per row
    rejected: list[int]  # games the batch parser could not replay
    lengths: np.ndarray  # rows per game of the batch (0 for a rejected game)


def replay(movetexts: list[str], *, plies: int | None = None) -> Replayed:
    """Replay a batch of movetexts from the standard start position, at most `plies` each.

    Keys are computed only for the positions before the moves kept.
    """
    import rust_pgn_reader_python_binding as reader

    parsed = reader.parse_games_from_strings(movetexts, num_threads=1)
    keys: list[np.ndarray] = []
    moves: list[np.ndarray] = []
    games: list[np.ndarray] = []
    lengths: list[np.ndarray] = []
    rejected: list[int] = []
    first_game = 0
    for chunk in parsed.chunks:
        count = chunk.num_games
        move_offsets = chunk.move_offsets.astype(np.int64)
        position_offsets = chunk.position_offsets.astype(np.int64)
        valid = chunk.valid[:count]
        n_moves = move_offsets[1 : count + 1] - move_offsets[:count]
        if plies is not None:
            n_moves = np.minimum(n_moves, plies)
        n_moves = np.where(valid, n_moves, 0)
        # Position i of a game is the one before its move i.
        game_of_move = np.repeat(np.arange(count), n_moves)
        move_in_game = np.arange(len(game_of_move)) - np.repeat(
            np.cumsum(n_moves) - n_moves, n_moves
        )
        position = position_offsets[:count][game_of_move] + move_in_game
        move = move_offsets[:count][game_of_move] + move_in_game
        boards = chunk.boards[position]
        keys.append(
            polyglot_keys(
                boards, chunk.castling[position], chunk.en_passant[position], chunk.turn[position]
            )
        )
        moves.append(
            polyglot_moves(
                boards, chunk.from_squares[move], chunk.to_squares[move], chunk.promotions[move]
            )
        )
        games.append(game_of_move + first_game)
        lengths.append(n_moves)
        rejected.extend(int(i) + first_game for i in np.flatnonzero(~valid))
        first_game += count
    if not keys:
        empty = np.zeros(0, dtype=np.uint64)
        return Replayed(
            empty, empty.astype(np.uint16), empty.astype(np.int64), rejected, empty.astype(np.int64)
        )
    return Replayed(
        np.concatenate(keys),
        np.concatenate(moves),
        np.concatenate(games),
        rejected,
        np.concatenate(lengths),
    )
