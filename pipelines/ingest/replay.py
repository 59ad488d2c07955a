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
_SQUARES = np.arange(64)
_WHITE_PAWN, _BLACK_PAWN, _WHITE_KING, _BLACK_KING = 1, 7, 6, 12


def polyglot_keys(
    boards: np.ndarray, castling: np.ndarray, en_passant: np.ndarray, white_to_move: np.ndarray
) -> np.ndarray:
    """Return the Polyglot keys of positions given as (N, 8, 8) boards and their state."""
    flat = boards.reshape(len(boards), 64)
    keys = np.bitwise_xor.reduce(_PIECE_SQUARE[flat, _SQUARES], axis=1)
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


def replay(movetexts: list[str]) -> Replayed:
    """Replay a batch of SAN move lists from the standard start position."""
    import rust_pgn_reader_python_binding as reader

    parsed = reader.parse_games_from_strings(movetexts, num_threads=1)
    keys: list[np.ndarray] = []
    moves: list[np.ndarray] = []
    games: list[np.ndarray] = []
    rejected: list[int] = []
    first_game = 0
    for chunk in parsed.chunks:
        count = chunk.num_games
        move_offsets = chunk.move_offsets.astype(np.int64)
        position_offsets = chunk.position_offsets.astype(np.int64)
        valid = chunk.valid
        boards = chunk.boards
        chunk_keys = polyglot_keys(boards, chunk.castling, chunk.en_passant, chunk.turn)
        n_moves = move_offsets[1 : count + 1] - move_offsets[:count]
        # Position i of a game is the one before its move i.
        game_of_move = np.repeat(np.arange(count), n_moves)
        move_in_game = np.arange(len(game_of_move)) - np.repeat(move_offsets[:count], n_moves)
        position = position_offsets[:count][game_of_move] + move_in_game
        keep = valid[game_of_move]
        codes = polyglot_moves(
            boards[position], chunk.from_squares, chunk.to_squares, chunk.promotions
        )
        keys.append(chunk_keys[position][keep])
        moves.append(codes[keep])
        games.append(game_of_move[keep] + first_game)
        rejected.extend(int(i) + first_game for i in np.flatnonzero(~valid[:count]))
        first_game += count
    if not keys:
        empty = np.zeros(0, dtype=np.uint64)
        return Replayed(empty, empty.astype(np.uint16), empty.astype(np.int64), rejected)
    return Replayed(np.concatenate(keys), np.concatenate(moves), np.concatenate(games), rejected)
