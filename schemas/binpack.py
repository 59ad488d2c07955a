"""Stockfish `.binpack` training data, stem-only chains: one 32-byte entry per position.

A file is a sequence of blocks, each ``b"BINP"`` + little-endian u32 size + that many bytes. A
block holds chains; a chain is a 32-byte stem, a big-endian u16 count of further plies and their
movetext. Chains written here have no further plies (count 0), so each position costs 34 bytes.

Stem, big-endian: occupied bitboard (u64, a1 = bit 0), 16 bytes of 4-bit piece codes in square
order (first piece in the low nibble: 2 x piece type + colour, pawn 0 .. king 5, White 0; 12 a
pawn that just moved two squares and can be taken en passant, 13/14 a White/Black rook with
castling rights, 15 the Black king when Black is to move), the move (u16: type << 14 | from << 8
| to << 2 | promotion - knight; types normal 0, promotion 1, castling 2 with the rook's square as
`to`, en passant 3), the score, ply | result << 14 and the 50-move counter (u16 each). Score and
result are stored "zig-zag": 0, -1, 1, -2, 2 ... become 0, 1, 2, 3, 4 ...
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from pathlib import Path

import chess

from schemas.atomic_files import atomic_path
from schemas.plain import PlainRecord

MAGIC = b"BINP"
STEM_SIZE = 32
#: Largest block written; readers take any size.
BLOCK_SIZE = 1 << 20

_NORMAL, _PROMOTION, _CASTLING, _EN_PASSANT = 0, 1, 2, 3


class BinpackFormatError(ValueError):
    """A .binpack file this reader cannot take."""


def zigzag(value: int) -> int:
    """Return a signed 16-bit value in the format's unsigned encoding."""
    raw = value & 0xFFFF
    if raw & 0x8000:
        raw ^= 0x7FFF
    return ((raw << 1) | (raw >> 15)) & 0xFFFF


def unzigzag(raw: int) -> int:
    """Return the signed value of an unsigned-encoded 16-bit field."""
    raw = ((raw << 15) | (raw >> 1)) & 0xFFFF
    if raw & 0x8000:
        raw ^= 0x7FFF
    return raw - 0x10000 if raw & 0x8000 else raw


def _nibble(board: chess.Board, square: int, piece: chess.Piece) -> int:
    if piece.piece_type == chess.PAWN and board.ep_square is not None:
        behind = board.ep_square + (8 if piece.color == chess.WHITE else -8)
        if behind == square and piece.color != board.turn:
            return 12
    if piece.piece_type == chess.ROOK and board.castling_rights & chess.BB_SQUARES[square]:
        return 13 if piece.color == chess.WHITE else 14
    if piece.piece_type == chess.KING and piece.color == chess.BLACK and board.turn == chess.BLACK:
        return 15
    return 2 * (piece.piece_type - 1) + (piece.color == chess.BLACK)


def pack_position(board: chess.Board) -> bytes:
    """Return the 24-byte compressed position (en passant kept only when a capture is legal)."""
    if board.ep_square is not None and not board.has_legal_en_passant():
        board = board.copy(stack=False)
        board.ep_square = None
    nibbles = [_nibble(board, sq, board.piece_at(sq)) for sq in chess.scan_forward(board.occupied)]  # type: ignore[arg-type]
    if len(nibbles) > 32:
        raise ValueError("more than 32 pieces")
    nibbles += [0] * (32 - len(nibbles))
    packed = bytes(nibbles[i] | (nibbles[i + 1] << 4) for i in range(0, 32, 2))
    return struct.pack(">Q", board.occupied) + packed


def unpack_position(data: bytes) -> chess.Board:
    """Return the board of a 24-byte compressed position (clocks zero, White to move unless 15)."""
    (occupied,) = struct.unpack(">Q", data[:8])
    board = chess.Board(None)
    rights = 0
    for index, square in enumerate(chess.scan_forward(occupied)):
        nibble = (data[8 + index // 2] >> (4 * (index & 1))) & 0xF
        if nibble < 12:
            board.set_piece_at(square, chess.Piece(nibble // 2 + 1, not nibble & 1))
        elif nibble == 12:
            white = chess.square_rank(square) == 3
            board.set_piece_at(square, chess.Piece(chess.PAWN, white))
            board.ep_square = square - 8 if white else square + 8
        elif nibble in (13, 14):
            board.set_piece_at(square, chess.Piece(chess.ROOK, nibble == 13))
            rights |= chess.BB_SQUARES[square]
        else:
            board.set_piece_at(square, chess.Piece(chess.KING, chess.BLACK))
            board.turn = chess.BLACK
    board.castling_rights = rights
    return board


def pack_move(board: chess.Board, move: chess.Move) -> int:
    """Return a legal move's 16-bit code."""
    to = move.to_square
    if board.is_castling(move):
        kind = _CASTLING
        if not board.chess960:
            rook_file = 7 if chess.square_file(to) > chess.square_file(move.from_square) else 0
            to = chess.square(rook_file, chess.square_rank(move.from_square))
    elif board.is_en_passant(move):
        kind = _EN_PASSANT
    elif move.promotion:
        kind = _PROMOTION
    else:
        kind = _NORMAL
    promotion = move.promotion - chess.KNIGHT if move.promotion else 0
    return (kind << 14) | (move.from_square << 8) | (to << 2) | promotion


def unpack_move(board: chess.Board, code: int) -> chess.Move:
    """Return the move a 16-bit code stands for in a position (castling as king's destination)."""
    kind, from_square, to = code >> 14, (code >> 8) & 63, (code >> 2) & 63
    if kind == _PROMOTION:
        return chess.Move(from_square, to, (code & 3) + chess.KNIGHT)
    if kind == _CASTLING:
        king_file = 6 if chess.square_file(to) > chess.square_file(from_square) else 2
        return chess.Move(from_square, chess.square(king_file, chess.square_rank(from_square)))
    return chess.Move(from_square, to)


def pack_record(record: PlainRecord) -> bytes:
    """Return a record's 32-byte stem."""
    board = chess.Board(record.fen)
    move = chess.Move.from_uci(record.move)
    if move not in board.legal_moves:
        raise ValueError(f"move {record.move} is not legal in {record.fen}")
    if not 0 <= record.ply < 1 << 14:
        raise ValueError(f"ply {record.ply} does not fit in 14 bits")
    return pack_position(board) + struct.pack(
        ">HHHH",
        pack_move(board, move),
        zigzag(record.score),
        record.ply | (zigzag(record.result) << 14),
        board.halfmove_clock,
    )


def unpack_record(stem: bytes) -> PlainRecord:
    """Return the record of a 32-byte stem; its FEN's fullmove number is ply / 2 + 1."""
    board = unpack_position(stem[:24])
    move_code, score, ply_result, rule50 = struct.unpack(">HHHH", stem[24:32])
    board.halfmove_clock = rule50
    ply = ply_result & 0x3FFF
    board.fullmove_number = ply // 2 + 1
    move = unpack_move(board, move_code)
    return PlainRecord(board.fen(en_passant="legal"), move.uci(), unzigzag(score), ply,
                       unzigzag(ply_result >> 14))  # fmt: skip


def write_binpack(records: Iterable[PlainRecord], path: Path) -> int:
    """Write records as stem-only chains; the file appears whole or not at all. Return the count."""
    count = 0
    block = bytearray()
    with atomic_path(path) as tmp, open(tmp, "wb") as handle:
        for record in records:
            block += pack_record(record) + b"\x00\x00"
            count += 1
            if len(block) + STEM_SIZE + 2 > BLOCK_SIZE:
                handle.write(MAGIC + struct.pack("<I", len(block)) + block)
                block.clear()
        if block:
            handle.write(MAGIC + struct.pack("<I", len(block)) + block)
    return count


def read_binpack(path: Path) -> Iterator[PlainRecord]:
    """Yield the records of a .binpack file made of stem-only chains."""
    with open(path, "rb") as handle:
        data = handle.read()
    offset = 0
    while offset < len(data):
        if data[offset : offset + 4] != MAGIC or offset + 8 > len(data):
            raise BinpackFormatError(f"{path}: no block header at byte {offset}")
        (size,) = struct.unpack("<I", data[offset + 4 : offset + 8])
        block = data[offset + 8 : offset + 8 + size]
        if len(block) != size:
            raise BinpackFormatError(f"{path}: block at byte {offset} is cut short")
        position = 0
        while position + STEM_SIZE + 2 <= size:
            stem = block[position : position + STEM_SIZE]
            (plies,) = struct.unpack(">H", block[position + STEM_SIZE : position + STEM_SIZE + 2])
            if plies:
                raise BinpackFormatError(f"{path}: a chain with {plies} more plies (not stem-only)")
            yield unpack_record(stem)
            position += STEM_SIZE + 2
        offset += 8 + size
