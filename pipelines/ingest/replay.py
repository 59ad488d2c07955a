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

#: The start position as the batch parser writes boards (a1 first), and its pieces' key part.
_START = np.array(
    [4, 2, 3, 5, 6, 3, 2, 4] + [1] * 8 + [0] * 32 + [7] * 8 + [10, 8, 9, 11, 12, 9, 8, 10],
    dtype=np.uint8,
)
_START_KEY = np.bitwise_xor.reduce(_PIECE_SQUARE[_START, np.arange(64)])
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
    flat = boards.reshape(len(boards), 64)
    keys = _piece_keys(flat)
    keys ^= _state_keys(flat, np.arange(len(flat)), castling, en_passant, white_to_move)
    return keys


def _state_keys(
    flat: np.ndarray,
    position: np.ndarray,
    castling: np.ndarray,
    en_passant: np.ndarray,
    white_to_move: np.ndarray,
) -> np.ndarray:
    """Return the castling, side to move and en passant part of the Polyglot keys of the
    positions `position` of (P, 64) boards, whose state is given per position."""
    # Castling rights: four flags, one byte each, read as one number into a table of 16.
    flags = np.ascontiguousarray(castling, dtype=np.bool_).view(np.uint32).reshape(-1)
    rights = (flags | flags >> 7 | flags >> 14 | flags >> 21) & 15
    keys = _CASTLING[rights]
    keys ^= np.where(white_to_move, _RANDOM[780], np.uint64(0))
    # The en passant file counts only where a pawn of the side to move stands beside the pawn
    # that just made the double step.
    double_step = np.flatnonzero(en_passant >= 0)
    if len(double_step):
        files = en_passant[double_step].astype(np.int64)
        white = white_to_move[double_step]
        rank = np.where(white, 4, 3)
        pawn = np.where(white, _WHITE_PAWN, _BLACK_PAWN)
        at = position[double_step]
        capturer = np.zeros(len(double_step), dtype=bool)
        for side in (-1, 1):
            beside = files + side
            inside = (beside >= 0) & (beside <= 7)
            capturer |= inside & (flat[at, rank * 8 + np.clip(beside, 0, 7)] == pawn)
        keys[double_step[capturer]] ^= _RANDOM[772 + files[capturer]]
    return keys


#: The castling part of Polyglot keys by rights (bit 0: White O-O, 1: White O-O-O, 2: Black
#: O-O, 3: Black O-O-O).
_CASTLING = np.array(
    [
        np.bitwise_xor.reduce(
            np.array(
                [_RANDOM[768 + bit] for bit in range(4) if rights >> bit & 1] or [0],
                dtype=np.uint64,
            )
        )
        for rights in range(16)
    ],
    dtype=np.uint64,
)


def _board_keys(flat: np.ndarray) -> np.ndarray:
    """Return the pieces' part of the Polyglot keys of (N, 64) boards, each hashed whole."""
    return np.bitwise_xor.reduce(_PIECE_SQUARE[flat, np.arange(64)], axis=1)


def _toggled(
    flat: np.ndarray, before: np.ndarray, after: np.ndarray, square: np.ndarray
) -> np.ndarray:
    """Return what a square changes in the pieces' part of a key between two boards."""
    return _PIECE_SQUARE[flat[before, square], square] ^ _PIECE_SQUARE[flat[after, square], square]


def _game_piece_keys(
    flat: np.ndarray,
    position: np.ndarray,
    first: np.ndarray,
    from_squares: np.ndarray,
    to_squares: np.ndarray,
) -> np.ndarray:
    """Return the pieces' part of the Polyglot keys of positions `position` of (P, 64) boards.

    Rows come a game at a time, each game's from its first position (`first`) on, one move
    apart: from_squares and to_squares give, for each later row, the move that led to it.
    A game's first key is hashed from its board (the start position's is known); each later
    one is its predecessor's with the squares the move changed toggled: its origin and target,
    the rook's two squares for castling (a king moving two files) and the pawn taken en
    passant (a pawn moving to an empty square of another file). Far fewer squares are looked
    at than hashing every board.
    """
    later = ~first
    after = position[later]
    before = after - 1
    origin = from_squares.astype(np.int64)
    target = to_squares.astype(np.int64)
    was_origin, was_target = flat[before, origin], flat[before, target]
    delta = _toggled(flat, before, after, origin) ^ _toggled(flat, before, after, target)
    other_file = (origin & 7) != (target & 7)
    king = (was_origin == _WHITE_KING) | (was_origin == _BLACK_KING)
    pawn = (was_origin == _WHITE_PAWN) | (was_origin == _BLACK_PAWN)
    castles = king & (np.abs((origin & 7) - (target & 7)) == 2)
    # Castling also moves a rook; en passant takes a pawn beside the target.
    castling = np.flatnonzero(castles)
    if len(castling):
        rank = origin[castling] & ~7
        kingside = (target[castling] & 7) > (origin[castling] & 7)
        for square in (rank | np.where(kingside, 7, 0), rank | np.where(kingside, 5, 3)):
            delta[castling] ^= _toggled(flat, before[castling], after[castling], square)
    en_passant = np.flatnonzero(pawn & other_file & (was_target == 0))
    if len(en_passant):
        taken = (origin[en_passant] & ~7) | (target[en_passant] & 7)
        delta[en_passant] ^= _toggled(flat, before[en_passant], after[en_passant], taken)
    steps = np.empty(len(position), dtype=np.uint64)
    boards = flat[position[first]]
    steps[first] = _START_KEY
    other_start = np.flatnonzero((boards != _START).any(axis=1))
    if len(other_start):
        steps[np.flatnonzero(first)[other_start]] = _board_keys(boards[other_start])
    steps[later] = delta
    keys = np.bitwise_xor.accumulate(steps)
    # Each game starts afresh: undo what the games before it accumulated.
    starts = np.flatnonzero(first)
    carried = np.zeros(len(starts), dtype=np.uint64)
    carried[1:] = keys[starts[1:] - 1]
    keys ^= np.repeat(carried, np.diff(np.r_[starts, len(keys)]))
    return keys


def _moves(
    piece: np.ndarray, from_squares: np.ndarray, to_squares: np.ndarray, promotions: np.ndarray
) -> np.ndarray:
    """Return Polyglot move codes of moves whose moving pieces are `piece`."""
    origin = from_squares.astype(np.int64)
    target = to_squares.astype(np.int64)
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
        flat = chunk.boards.reshape(len(chunk.boards), 64)
        first = move_in_game == 0
        led_here = move[~first] - 1  # the move before each later row's position
        pieces = _game_piece_keys(
            flat, position, first, chunk.from_squares[led_here], chunk.to_squares[led_here]
        )
        keys.append(
            pieces
            ^ _state_keys(
                flat,
                position,
                chunk.castling[position],
                chunk.en_passant[position],
                chunk.turn[position],
            )
        )
        origin = chunk.from_squares[move]
        moves.append(
            _moves(
                flat[position, origin.astype(np.int64)],
                origin,
                chunk.to_squares[move],
                chunk.promotions[move],
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
