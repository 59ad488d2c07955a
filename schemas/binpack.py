"""Stockfish `.binpack` training data: chains of consecutive plies, as Stockfish's tools write them.

A file is a sequence of blocks, each ``b"BINP"`` + little-endian u32 size + that many bytes. A
block holds whole chains; a chain is a 32-byte stem (the first position), a big-endian u16 count
of further plies and their movetext, a bit stream (most significant bit first, padded to a byte)
of one entry per ply:

- the moving piece, as its index among the mover's pieces in square order (a1 = 0), in as few
  bits as count those pieces (``used_bits``: 0 bits for 1 choice, 1 for 2, 2 for 3-4 ...);
- the move, as the index of its destination among the piece's pseudo-legal destinations in
  square order, in as few bits as count them: pawns (captures of enemy pieces and of the legal
  en-passant square, one and two squares forward), times 4 on the seventh rank (promotion to
  knight, bishop, rook, queen); a king's attacked squares not holding its own pieces, then one
  entry per castling right of the mover (queenside first); other pieces their attack sets;
- the score, as the zig-zag difference from the previous ply's score negated, in blocks of
  4 bits each followed by a "more" bit.

A ply continues the chain when it follows the previous record: its position is the previous
position after the previous move (pieces, side to move, castling rights, en-passant square where
a capture is legal), its ply is one more and its result the previous one negated. chesspipe also
asks that its halfmove clock be the one the move leads to (Stockfish does not look, and the chain
would silently replace it). The writer starts a new block at a new chain once the current block
holds 1 MiB or more, as Stockfish's writer does, so the same records give the same bytes.

Stem, big-endian: occupied bitboard (u64, a1 = bit 0), 16 bytes of 4-bit piece codes in square
order (first piece in the low nibble: 2 x piece type + colour, pawn 0 .. king 5, White 0; 12 a
pawn that just moved two squares and can be taken en passant, 13/14 a White/Black rook with
castling rights, 15 the Black king when Black is to move), the move (u16: type << 14 | from << 8
| to << 2 | promotion - knight; types normal 0, promotion 1, castling 2 with the rook's square as
`to`, en passant 3), the score, ply | result << 14 and the 50-move counter (u16 each). Score and
result are stored "zig-zag": 0, -1, 1, -2, 2 ... become 0, 1, 2, 3, 4 ...

Standard chess only (castling as the king's two-square move).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Iterator
from contextlib import suppress
from pathlib import Path
from typing import BinaryIO, NamedTuple

import chess

from schemas.atomic_files import atomic_path
from schemas.legal_record import legal_move, legal_position, usable_board
from schemas.plain import PlainRecord

MAGIC = b"BINP"
STEM_SIZE = 32
#: A block is written out once it holds this many bytes or more at the start of a chain.
BLOCK_SIZE = 1 << 20
#: Largest block the reader accepts (Stockfish's limit against malformed files).
MAX_BLOCK_SIZE = 100 << 20
#: Most plies after the stem in one chain (the count is a u16).
MAX_CHAIN_PLIES = 0xFFFF

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
    if occupied.bit_count() > 32:
        raise ValueError(f"{occupied.bit_count()} occupied squares")
    board = chess.Board(None)
    rights = 0
    for index, square in enumerate(chess.scan_forward(occupied)):
        nibble = (data[8 + index // 2] >> (4 * (index & 1))) & 0xF
        if nibble < 12:
            board.set_piece_at(square, chess.Piece(nibble // 2 + 1, not nibble & 1))
        elif nibble == 12:
            if chess.square_rank(square) not in (3, 4):
                raise ValueError(f"en-passant pawn on {chess.square_name(square)}")
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


def _parse(record: PlainRecord) -> tuple[chess.Board, chess.Move]:
    """Return a record's board and move, checked (schemas/legal_record.py)."""
    board = legal_position(record.fen)
    return board, legal_move(board, record.move)


def _stem(board: chess.Board, move: chess.Move, record: PlainRecord) -> bytes:
    if not 0 <= record.ply < 1 << 14:
        raise ValueError(f"ply {record.ply} does not fit in 14 bits")
    if not 0 <= board.halfmove_clock < 1 << 16:
        raise ValueError(f"halfmove clock {board.halfmove_clock} does not fit in 16 bits")
    return pack_position(board) + struct.pack(
        ">HHHH",
        pack_move(board, move),
        zigzag(record.score),
        record.ply | (zigzag(record.result) << 14),
        board.halfmove_clock,
    )


def pack_record(record: PlainRecord) -> bytes:
    """Return a record's 32-byte stem."""
    board, move = _parse(record)
    return _stem(board, move, record)


def unpack_record(stem: bytes) -> PlainRecord:
    """Return the record of a 32-byte stem; its FEN's fullmove number is ply / 2 + 1."""
    board = unpack_position(stem[:24])
    move_code, score, ply_result, rule50 = struct.unpack(">HHHH", stem[24:32])
    board.halfmove_clock = rule50
    ply = ply_result & 0x3FFF
    board.fullmove_number = ply // 2 + 1
    move = unpack_move(board, move_code)
    return PlainRecord(
        board.fen(en_passant="legal"), move.uci(), unzigzag(score), ply, unzigzag(ply_result >> 14)
    )


def used_bits(choices: int) -> int:
    """Return how many bits the movetext spends on one of `choices` (0 for none or one)."""
    return (choices - 1).bit_length() if choices > 1 else 0


def _nth_square(bb: int, n: int) -> int:
    for _ in range(n):
        bb &= bb - 1
    return (bb & -bb).bit_length() - 1


def _legal_ep(board: chess.Board) -> int:
    """Return the en-passant square's bit where a capture is legal (Stockfish keeps no other)."""
    if board.ep_square is None or not board.has_legal_en_passant():
        return 0
    return chess.BB_SQUARES[board.ep_square]


def _pawn_targets(board: chess.Board, square: int, us: bool) -> int:
    """Return a pawn's destinations as the movetext counts them."""
    occupied = board.occupied
    targets = chess.BB_PAWN_ATTACKS[us][square] & (board.occupied_co[not us] | _legal_ep(board))
    forward = square + 8 if us else square - 8
    if not occupied & chess.BB_SQUARES[forward]:
        targets |= chess.BB_SQUARES[forward]
        start_rank = 1 if us else 6
        if chess.square_rank(square) == start_rank:
            two = forward + 8 if us else forward - 8
            if not occupied & chess.BB_SQUARES[two]:
                targets |= chess.BB_SQUARES[two]
    return targets


def _castling_rights(board: chess.Board, us: bool) -> tuple[int, bool]:
    """Return how many castling rights the mover has, and whether one is queenside."""
    rights = board.clean_castling_rights() & (chess.BB_RANK_1 if us else chess.BB_RANK_8)
    return rights.bit_count(), bool(rights & chess.BB_FILE_A)


class _BitWriter:
    """Bits appended most significant first; `data()` pads the last byte with zeros."""

    __slots__ = ("value", "bits")

    def __init__(self) -> None:
        self.value = 0
        self.bits = 0

    def add(self, value: int, count: int) -> None:
        self.value = (self.value << count) | value
        self.bits += count

    def data(self) -> bytes:
        pad = -self.bits % 8
        return (self.value << pad).to_bytes((self.bits + pad) // 8, "big")


def encode_ply(
    bits: _BitWriter, board: chess.Board, move: chess.Move, score: int, last: int
) -> int:
    """Append one ply (a legal move in `board` and its score) to a chain's movetext.

    `last` is the previous ply's score negated (as a 16-bit value); return this one's negation.
    """
    us = board.turn
    ours = board.occupied_co[us]
    source = move.from_square
    below = chess.BB_SQUARES[move.to_square] - 1
    piece_type = board.piece_type_at(source)
    if piece_type == chess.PAWN:
        targets = _pawn_targets(board, source, us)
        moves = targets.bit_count()
        move_id = (targets & below).bit_count()
        if chess.square_rank(source) == (6 if us else 1):
            move_id = move_id * 4 + (move.promotion or chess.KNIGHT) - chess.KNIGHT
            moves *= 4
    elif piece_type == chess.KING:
        attacks = chess.BB_KING_ATTACKS[source] & ~ours
        rights, queenside = _castling_rights(board, us)
        moves = attacks.bit_count() + rights
        if board.is_castling(move):
            kingside = chess.square_file(move.to_square) > chess.square_file(source)
            move_id = attacks.bit_count() - 1 + queenside + kingside
        else:
            move_id = (attacks & below).bit_count()
    else:
        attacks = board.attacks_mask(source) & ~ours
        moves = attacks.bit_count()
        move_id = (attacks & below).bit_count()
    pieces = ours.bit_count()
    bits.add((ours & (chess.BB_SQUARES[source] - 1)).bit_count(), used_bits(pieces))
    bits.add(move_id, used_bits(moves))
    delta = zigzag(score - last)
    while True:
        more = delta > 15
        bits.add((delta & 15) | (more << 4), 5)
        delta >>= 4
        if not delta:
            break
    return -score & 0xFFFF


_RUNS = tuple(("1" * n, str(n)) for n in range(8, 1, -1))


def fen_prefix(board: chess.Board) -> str:
    """Return `board.fen(en_passant="legal")` without its fullmove number, faster."""
    squares = ["1"] * 64
    white = board.occupied_co[chess.WHITE]
    for bb, upper, lower in (
        (board.pawns, "P", "p"),
        (board.knights, "N", "n"),
        (board.bishops, "B", "b"),
        (board.rooks, "R", "r"),
        (board.queens, "Q", "q"),
        (board.kings, "K", "k"),
    ):
        while bb:
            bit = bb & -bb
            squares[(bit.bit_length() - 1) ^ 56] = upper if white & bit else lower
            bb ^= bit
    text = "".join(squares)
    placement = "/".join([text[i : i + 8] for i in range(0, 64, 8)])
    for run, digit in _RUNS:
        placement = placement.replace(run, digit)
    if placement.find("11") >= 0:
        placement = placement.replace("11", "2")
    ep = _legal_ep(board)
    ep_name = chess.SQUARE_NAMES[ep.bit_length() - 1] if ep else "-"
    turn = "w" if board.turn else "b"
    return f"{placement} {turn} {board.castling_xfen()} {ep_name} {board.halfmove_clock}"


def position_key(board: chess.Board) -> tuple[int, ...]:
    """What a chain compares to decide two positions are one: pieces, side, rights, en passant
    (where a capture is legal) and the halfmove clock."""
    return (
        board.pawns,
        board.knights,
        board.bishops,
        board.rooks,
        board.queens,
        board.kings,
        board.occupied_co[chess.WHITE],
        board.turn,
        board.clean_castling_rights(),
        _legal_ep(board),
        board.halfmove_clock,
    )


class WriterState(NamedTuple):
    """Where a BinpackWriter stands between two records, for another writer of the same bytes
    to go on from (the compiled codec, pipelines/training/codec.py): the block so far, the
    current chain's movetext (its bytes, zero-padded, and its length in bits), its plies after
    the stem, whether a chain is open, the last record's position (a FEN, None before the
    first record) and move, its ply and result, and its score negated (16 bits)."""

    block: bytes
    bits: bytes
    bit_count: int
    plies: int
    started: bool
    fen: str | None
    move: str
    ply: int
    result: int
    last: int


class BinpackWriter:
    """Write records to an open binary file as chains, block by block, as Stockfish's tools do.

    Memory holds one block (about 1 MiB) and the current chain. Call `close()` to write the rest.
    """

    def __init__(self, handle: BinaryIO) -> None:
        self._handle = handle
        self._block = bytearray()
        self._bits = _BitWriter()
        self._plies = 0
        self._started = False
        self._board: chess.Board | None = None
        self._move = chess.Move.null()
        self._ply = -2
        self._result = 2
        self._last = 0
        self.records = 0

    def state(self) -> WriterState:
        """Where this writer stands (whole blocks are written already)."""
        board = self._board
        return WriterState(
            bytes(self._block),
            self._bits.data(),
            self._bits.bits,
            self._plies,
            self._started,
            None if board is None else board.fen(),
            self._move.uci(),
            self._ply,
            self._result,
            self._last,
        )

    @classmethod
    def resume(cls, handle: BinaryIO, state: WriterState) -> BinpackWriter:
        """Return a writer to `handle` that goes on from `state` as the writer it came from."""
        writer = cls(handle)
        writer._block = bytearray(state.block)
        writer._bits.value = int.from_bytes(state.bits, "big") >> (-state.bit_count % 8)
        writer._bits.bits = state.bit_count
        writer._plies = state.plies
        writer._started = state.started
        writer._board = None if state.fen is None else chess.Board(state.fen)
        writer._move = chess.Move.from_uci(state.move)
        writer._ply, writer._result, writer._last = state.ply, state.result, state.last
        return writer

    def _follows(self, record: PlainRecord) -> chess.Board | None:
        """Return the board after the previous move if `record` continues the chain."""
        if (
            self._board is None
            or record.ply != self._ply + 1
            or record.result != -self._result
            or self._plies >= MAX_CHAIN_PLIES
        ):
            return None
        board = self._board
        board.push(self._move)
        if fen_prefix(board) == record.fen.rsplit(" ", 1)[0]:
            return board
        if position_key(board) == position_key(chess.Board(record.fen)):
            return board
        return None

    def add(self, record: PlainRecord) -> None:
        """Add one record: a further ply of the current chain, or a new chain's stem."""
        board = self._follows(record)
        move = None
        if board is not None:
            # if not, the stem below names what is wrong with the record itself
            with suppress(ValueError):
                move = legal_move(board, record.move)
        if board is not None and move is not None:
            self._last = encode_ply(self._bits, board, move, record.score, self._last)
            self._plies += 1
        else:
            board, move = _parse(record)
            stem = _stem(board, move, record)
            self._end_chain()
            if len(self._block) >= BLOCK_SIZE:
                self._flush()
            self._block += stem
            self._started = True
            self._last = -record.score & 0xFFFF
        if len(board.move_stack) > 64:
            board = board.copy(stack=False)
        self._board, self._move = board, move
        self._ply, self._result = record.ply, record.result
        self.records += 1

    def _end_chain(self) -> None:
        if self._started:
            self._block += struct.pack(">H", self._plies)
            if self._plies:
                self._block += self._bits.data()
            self._bits = _BitWriter()
            self._plies = 0

    def _flush(self) -> None:
        if self._block:
            self._handle.write(MAGIC + struct.pack("<I", len(self._block)) + self._block)
            self._block.clear()

    def close(self) -> None:
        """Write the last chain and block."""
        self._end_chain()
        self._started = False
        self._flush()


def write_binpack(records: Iterable[PlainRecord], path: Path) -> int:
    """Write records as chains; the file appears whole or not at all. Return the count."""
    with atomic_path(path) as tmp, open(tmp, "wb") as handle:
        writer = BinpackWriter(handle)
        for record in records:
            writer.add(record)
        writer.close()
    return writer.records


class _BitReader:
    """Bits of a block read most significant first from a byte offset, never past `end`."""

    __slots__ = ("data", "position", "end")

    def __init__(self, data: bytes, offset: int, end: int) -> None:
        self.data = data
        self.position = offset * 8
        self.end = end * 8

    def read(self, count: int) -> int:
        if not count:
            return 0
        stop = self.position + count
        if stop > self.end:
            raise BinpackFormatError("the movetext runs past the end of its block")
        first = self.position >> 3
        # count <= 8 bits from any bit of a byte: three bytes always hold them
        word = int.from_bytes(self.data[first : first + 3].ljust(3, b"\0"), "big")
        value = (word >> (24 - (self.position & 7) - count)) & ((1 << count) - 1)
        self.position = stop
        return value

    def offset(self) -> int:
        return (self.position + 7) >> 3


def decode_ply(bits: _BitReader, board: chess.Board, last: int) -> tuple[chess.Move, int]:
    """Read one ply of movetext in `board`; return its legal move and score.

    `last` is the previous ply's score negated (a 16-bit value). Raise BinpackFormatError when
    the bits name no piece, no destination, or an illegal move.
    """
    us = board.turn
    ours = board.occupied_co[us]
    pieces = ours.bit_count()
    piece_id = bits.read(used_bits(pieces))
    if piece_id >= pieces:
        raise BinpackFormatError(f"piece {piece_id} of {pieces}")
    source = _nth_square(ours, piece_id)
    piece_type = board.piece_type_at(source)
    if piece_type == chess.PAWN:
        targets = _pawn_targets(board, source, us)
        moves = targets.bit_count()
        if chess.square_rank(source) == (6 if us else 1):
            move_id = bits.read(used_bits(moves * 4))
            if move_id >= moves * 4:
                raise BinpackFormatError(f"move {move_id} of {moves * 4} for {board.fen()}")
            move = chess.Move(
                source, _nth_square(targets, move_id // 4), move_id % 4 + chess.KNIGHT
            )
        else:
            move_id = bits.read(used_bits(moves))
            if move_id >= moves:
                raise BinpackFormatError(f"move {move_id} of {moves} for {board.fen()}")
            move = chess.Move(source, _nth_square(targets, move_id))
    elif piece_type == chess.KING:
        attacks = chess.BB_KING_ATTACKS[source] & ~ours
        rights, queenside = _castling_rights(board, us)
        count = attacks.bit_count()
        move_id = bits.read(used_bits(count + rights))
        if move_id >= count + rights:
            raise BinpackFormatError(f"move {move_id} of {count + rights} for {board.fen()}")
        if move_id >= count:
            king_file = 2 if move_id == count and queenside else 6
            move = chess.Move(source, chess.square(king_file, chess.square_rank(source)))
        else:
            move = chess.Move(source, _nth_square(attacks, move_id))
    else:
        attacks = board.attacks_mask(source) & ~ours
        moves = attacks.bit_count()
        move_id = bits.read(used_bits(moves))
        if move_id >= moves:
            raise BinpackFormatError(f"move {move_id} of {moves} for {board.fen()}")
        move = chess.Move(source, _nth_square(attacks, move_id))
    if not board.is_legal(move):
        raise BinpackFormatError(f"illegal move {move.uci()} in {board.fen()}")
    delta = shift = 0
    while True:
        if shift >= 16:
            raise BinpackFormatError("a score longer than 16 bits")
        block = bits.read(5)
        delta |= (block & 15) << shift
        shift += 4
        if not block & 16:
            break
    score = (last + unzigzag(delta & 0xFFFF)) & 0xFFFF
    return move, score - 0x10000 if score & 0x8000 else score


def _record(board: chess.Board, move: chess.Move, score: int, ply: int, result: int) -> PlainRecord:
    return PlainRecord(f"{fen_prefix(board)} {ply // 2 + 1}", move.uci(), score, ply, result)


def _chains(block: bytes, where: str) -> Iterator[PlainRecord]:
    """Yield the records of one block's chains; `where` names the block in errors."""
    size = len(block)
    offset = 0
    while offset < size:
        if offset + STEM_SIZE + 2 > size:
            raise BinpackFormatError(
                f"{where}: {size - offset} stray bytes at offset {offset}, less than a chain"
            )
        stem = block[offset : offset + STEM_SIZE]
        try:
            board = usable_board(unpack_position(stem[:24]))
            move_code, score, ply_result, rule50 = struct.unpack(">HHHH", stem[24:32])
            board.halfmove_clock = rule50
            ply, result = ply_result & 0x3FFF, unzigzag(ply_result >> 14)
            if result not in (-1, 0, 1):
                raise ValueError(f"result {result}")
            move = unpack_move(board, move_code)
            if not board.is_legal(move):
                raise ValueError(f"illegal move {move.uci()} in {board.fen()}")
            score = unzigzag(score)
            record = _record(board, move, score, ply, result)
        except ValueError as exc:
            raise BinpackFormatError(
                f"{where}: chain at offset {offset}: bad stem: {exc}"
            ) from None
        yield record
        (plies,) = struct.unpack(">H", block[offset + STEM_SIZE : offset + STEM_SIZE + 2])
        bits = _BitReader(block, offset + STEM_SIZE + 2, size)
        last = -score & 0xFFFF
        for index in range(1, plies + 1):
            board.push(move)
            ply, result = ply + 1, -result
            try:
                move, score = decode_ply(bits, board, last)
            except BinpackFormatError as exc:
                raise BinpackFormatError(
                    f"{where}: chain at offset {offset}, ply {index} of {plies}: {exc}"
                ) from None
            last = -score & 0xFFFF
            if ply >= 1 << 14:
                raise BinpackFormatError(f"{where}: chain at offset {offset}: ply {ply} too large")
            yield _record(board, move, score, ply, result)
        offset = bits.offset() if plies else offset + STEM_SIZE + 2


def block_name(name: str, offset: int) -> str:
    """How errors name the block at byte `offset` of the stream `name`."""
    return f"{name}: block at byte {offset}"


def block_records(block: bytes, where: str) -> Iterator[PlainRecord]:
    """Yield the records of one block's chains; `where` (block_name) names it in errors."""
    return _chains(block, where)


def iter_blocks(handle: BinaryIO, name: str = "<binpack>") -> Iterator[tuple[int, bytes]]:
    """Yield each block of an open .binpack stream with its byte offset, one in memory at a
    time; raise BinpackFormatError at a block header or size that is wrong, or a block cut
    short."""
    offset = 0
    while True:
        header = handle.read(8)
        if not header:
            return
        if len(header) < 8 or header[:4] != MAGIC:
            raise BinpackFormatError(f"{name}: no block header at byte {offset}")
        (size,) = struct.unpack("<I", header[4:])
        if size > MAX_BLOCK_SIZE:
            raise BinpackFormatError(
                f"{name}: block at byte {offset} claims {size} bytes (at most {MAX_BLOCK_SIZE})"
            )
        block = handle.read(size)
        if len(block) != size:
            raise BinpackFormatError(
                f"{name}: block at byte {offset} is cut short ({len(block)} of {size} bytes)"
            )
        yield offset, block
        offset += 8 + size


def iter_binpack(
    handle: BinaryIO,
    name: str = "<binpack>",
    *,
    bad: Callable[[str, str], None] | None = None,
) -> Iterator[PlainRecord]:
    """Yield the records of an open .binpack stream, one block in memory at a time.

    With `bad`, what cannot be read is reported to it (a reason and the error's message) and
    passed over instead of failing: a chain that does not decode ends its block (`bad_chain`:
    the records before it stand, the rest of the block is skipped, as no chain can be found
    without decoding the one before); a block header or size that is wrong, or a block cut
    short, ends the file (`bad_block`).
    """
    blocks = iter_blocks(handle, name)
    while True:
        try:
            item = next(blocks, None)
        except BinpackFormatError as exc:
            if bad is None:
                raise
            bad("bad_block", f"{exc}; the rest of the file skipped")
            return
        if item is None:
            return
        offset, block = item
        try:
            yield from _chains(block, block_name(name, offset))
        except BinpackFormatError as exc:
            if bad is None:
                raise
            bad("bad_chain", f"{exc}; the rest of the block skipped")


def read_binpack(path: Path) -> Iterator[PlainRecord]:
    """Yield the records of a .binpack file, block by block."""
    with open(path, "rb") as handle:
        yield from iter_binpack(handle, str(path))
