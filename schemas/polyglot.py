"""The Polyglot opening book format: keys, move encoding, the 16-byte entry, reading books."""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from dataclasses import dataclass

import chess
import chess.polyglot
import numpy as np

from schemas.atomic_files import atomic_path
from schemas.polyglot_entry import ENTRY_FIELDS

#: One book entry, as schemas.polyglot_entry lays it out: key u64, move u16, weight u16,
#: learn u32, all big-endian.
ENTRY_DTYPE = np.dtype([(name, f">u{size}") for name, size in ENTRY_FIELDS])
ENTRY_SIZE = ENTRY_DTYPE.itemsize

#: Polyglot key of the standard starting position.
START_KEY = 0x463B96181691FC9C

_PROMOTION_CODES = {None: 0, chess.KNIGHT: 1, chess.BISHOP: 2, chess.ROOK: 3, chess.QUEEN: 4}
_PROMOTION_PIECES = {code: piece for piece, code in _PROMOTION_CODES.items()}


class BookFormatError(ValueError):
    """A file is not a valid Polyglot book."""


def polyglot_key(board: chess.Board) -> int:
    """Return the Polyglot key of a position."""
    return chess.polyglot.zobrist_hash(board)


_RANDOM = chess.polyglot.POLYGLOT_RANDOM_ARRAY


def _castling_part(board: chess.Board) -> int:
    """The key's castling part: one random number a right (the Polyglot standard's 768-771)."""
    part = 0
    rights = (
        board.has_kingside_castling_rights(chess.WHITE),
        board.has_queenside_castling_rights(chess.WHITE),
        board.has_kingside_castling_rights(chess.BLACK),
        board.has_queenside_castling_rights(chess.BLACK),
    )
    for offset, held in enumerate(rights):
        if held:
            part ^= _RANDOM[768 + offset]
    return part


def _en_passant_part(board: chess.Board) -> int:
    """The key's en passant part: the file's random number (772-779) when a pawn of the side to
    move stands beside the pawn that just moved two squares, whether or not it may capture."""
    square = board.ep_square
    if square is None:
        return 0
    target = chess.BB_SQUARES[square]
    behind = chess.shift_down(target) if board.turn == chess.WHITE else chess.shift_up(target)
    beside = chess.shift_left(behind) | chess.shift_right(behind)
    if beside & board.pawns & board.occupied_co[board.turn]:
        return _RANDOM[772 + chess.square_file(square)]
    return 0


def push_with_key(board: chess.Board, move: chess.Move, key: int) -> int:
    """Play a legal move on the board; return the new position's Polyglot key from the old one."""
    before = (board.pawns, board.knights, board.bishops, board.rooks, board.queens, board.kings)
    white_before = board.occupied_co[chess.WHITE]
    rights_before = board.castling_rights
    key ^= _en_passant_part(board) ^ _RANDOM[780]
    castling_before = _castling_part(board) if rights_before else 0
    board.push(move)
    after = (board.pawns, board.knights, board.bishops, board.rooks, board.queens, board.kings)
    changed = board.occupied_co[chess.WHITE] ^ white_before
    for old, new in zip(before, after, strict=True):
        changed |= old ^ new
    for square in chess.scan_reversed(changed):
        mask = chess.BB_SQUARES[square]
        for index, bitboard in enumerate(before):
            if bitboard & mask:
                colour = 1 if white_before & mask else 0
                key ^= _RANDOM[64 * (index * 2 + colour) + square]
                break
        piece_type = board.piece_type_at(square)
        if piece_type:
            colour = 1 if board.occupied_co[chess.WHITE] & mask else 0
            key ^= _RANDOM[64 * ((piece_type - 1) * 2 + colour) + square]
    if board.castling_rights != rights_before:
        key ^= castling_before ^ _castling_part(board)
    return key ^ _en_passant_part(board)


def encode_move(board: chess.Board, move: chess.Move) -> int:
    """Return the 16-bit Polyglot encoding of a legal move (castling as king takes rook)."""
    to_square = move.to_square
    if not board.chess960 and board.is_castling(move):
        rook_file = (
            7 if chess.square_file(move.to_square) > chess.square_file(move.from_square) else 0
        )
        to_square = chess.square(rook_file, chess.square_rank(move.from_square))
    return to_square | (move.from_square << 6) | (_PROMOTION_CODES[move.promotion] << 12)


def decode_move(board: chess.Board, raw: int) -> chess.Move | None:
    """Return the legal move a Polyglot move encodes in this position, or None."""
    from_square = (raw >> 6) & 0x3F
    to_square = raw & 0x3F
    code = (raw >> 12) & 0x7
    if code not in _PROMOTION_PIECES or raw >> 15:
        return None
    promotion = _PROMOTION_PIECES[code]
    piece = board.piece_at(from_square)
    target = board.piece_at(to_square)
    if (
        piece is not None
        and piece.piece_type == chess.KING
        and target is not None
        and target.piece_type == chess.ROOK
        and target.color == piece.color
        and promotion is None
        and not board.chess960
    ):
        king_file = 6 if chess.square_file(to_square) > chess.square_file(from_square) else 2
        to_square = chess.square(king_file, chess.square_rank(from_square))
    move = chess.Move(from_square, to_square, promotion)
    return move if board.is_legal(move) else None


def move_to_uci(raw: int) -> str:
    """Return a Polyglot move as UCI text, castling left as king takes rook (e1h1)."""
    promotion = _PROMOTION_PIECES.get((raw >> 12) & 0x7)
    return chess.Move((raw >> 6) & 0x3F, raw & 0x3F, promotion).uci()


def read_entries(path: str | os.PathLike[str]) -> np.ndarray:
    """Return all entries of a book file, checking its size and key order."""
    size = os.path.getsize(path)
    if size % ENTRY_SIZE:
        raise BookFormatError(
            f"{path}: size {size} is not a multiple of {ENTRY_SIZE} bytes; not a Polyglot book"
        )
    entries = np.fromfile(path, dtype=ENTRY_DTYPE)
    keys = entries["key"]
    if len(keys) > 1:
        unsorted = np.flatnonzero(keys[1:] < keys[:-1])
        if len(unsorted):
            raise BookFormatError(
                f"{path}: keys are not sorted (entry {int(unsorted[0]) + 1}); not a Polyglot book"
            )
    return entries


def write_entries(path: str | os.PathLike[str], entries: np.ndarray) -> None:
    """Write entries to a book file atomically (the file appears whole or not at all)."""
    with atomic_path(path) as tmp, open(tmp, "wb") as handle:
        handle.write(np.ascontiguousarray(entries, dtype=ENTRY_DTYPE).tobytes())
        handle.flush()
        os.fsync(handle.fileno())


@dataclass(frozen=True)
class BookMove:
    """A legal book move in a position, with its weight and raw entry fields."""

    move: chess.Move
    weight: int
    raw_move: int
    learn: int


class Book:
    """A Polyglot book held in memory, looked up by binary search.

    Not `chess.polyglot.MemoryMappedReader`, although its lookups are as fast (0.47 s against
    0.45 s for the 5,919 positions a walk of performance.bin reaches): a Book checks the file
    (size, sorted keys) as it opens, holds the entries as a NumPy array for whole-book numbers,
    takes a key already computed, and keeps no file open; python-chess's reader stays the
    independent check of it in the tests.
    """

    def __init__(self, entries: np.ndarray, name: str = "<book>") -> None:
        self.entries = entries
        self.keys = np.ascontiguousarray(entries["key"], dtype=np.uint64)
        self.name = name

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> Book:
        """Read and validate a book file."""
        return cls(read_entries(path), str(path))

    def __len__(self) -> int:
        return len(self.entries)

    def raw_entries(self, key: int) -> np.ndarray:
        """Return the entries stored under a key, legal or not."""
        lo = int(np.searchsorted(self.keys, np.uint64(key), side="left"))
        hi = int(np.searchsorted(self.keys, np.uint64(key), side="right"))
        return self.entries[lo:hi]

    def moves(self, board: chess.Board, key: int | None = None) -> list[BookMove]:
        """Return the legal book moves with weight > 0 in a position, heaviest first.

        `key` is the position's Polyglot key, when the caller has already computed it.
        """
        found: dict[chess.Move, BookMove] = {}
        for entry in self.raw_entries(polyglot_key(board) if key is None else key):
            weight = int(entry["weight"])
            move = decode_move(board, int(entry["move"]))
            if weight <= 0 or move is None or move in found:
                continue
            found[move] = BookMove(move, weight, int(entry["move"]), int(entry["learn"]))
        return sorted(found.values(), key=lambda m: -m.weight)

    def weighted_choice(
        self, board: chess.Board, rng: random.Random | None = None
    ) -> BookMove | None:
        """Return a book move drawn at random in proportion to the weights, or None."""
        moves = self.moves(board)
        if not moves:
            return None
        rng = rng or random.Random()
        pick = rng.randrange(sum(m.weight for m in moves))
        for book_move in moves:
            pick -= book_move.weight
            if pick < 0:
                return book_move
        raise AssertionError("unreachable")

    def positions(self) -> int:
        """Return the number of distinct keys."""
        return int(len(np.unique(self.keys)))

    def __iter__(self) -> Iterator[np.void]:
        return iter(self.entries)


def open_book(path: str | os.PathLike[str]) -> Book:
    """Read and validate a book file; a file that cannot be used raises BookFormatError.

    The one way every reader of ours (the engine, `book show`, the report) opens a book: the
    error is one line naming the file and what is wrong with it.
    """
    try:
        return Book.open(path)
    except FileNotFoundError:
        raise BookFormatError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise BookFormatError(f"{path}: a folder, not a book file") from None
    except OSError as exc:
        raise BookFormatError(f"{path}: {exc.strerror or exc}") from None
