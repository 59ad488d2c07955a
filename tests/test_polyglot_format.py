"""Polyglot keys, move encoding and book reading, checked against python-chess."""

from __future__ import annotations

import random
from pathlib import Path

import chess
import chess.polyglot
import numpy as np
import pytest

from schemas.polyglot import (
    ENTRY_DTYPE,
    START_KEY,
    Book,
    BookFormatError,
    decode_move,
    encode_move,
    move_to_uci,
    polyglot_key,
    read_entries,
    write_entries,
)
from tests.random_moves import random_move

SPECIAL_FENS = [
    chess.STARTING_FEN,
    "r3k2r/pppppppp/8/8/8/8/PPPPPPPP/R3K2R w KQkq - 0 1",  # both castlings, both sides
    "r3k2r/pppppppp/8/8/8/8/PPPPPPPP/R3K2R b KQkq - 0 1",
    "4k3/1P6/8/8/8/8/6p1/4K3 w - - 0 1",  # promotions
    "4k3/1P6/8/8/8/8/6p1/4K3 b - - 0 1",
    "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3",  # en passant
]


def random_positions(count: int, seed: int) -> list[chess.Board]:
    rng = random.Random(seed)
    boards = [chess.Board(fen) for fen in SPECIAL_FENS]
    while len(boards) < count:
        board = chess.Board()
        for _ in range(rng.randrange(1, 80)):
            moves = list(board.legal_moves)
            if not moves:
                break
            board.push(rng.choice(moves))
        boards.append(board)
    return boards


def one_entry_book(tmp_path: Path, key: int, raw: int) -> Path:
    path = tmp_path / "one.bin"
    entries = np.zeros(1, dtype=ENTRY_DTYPE)
    entries[0] = (key, raw, 1, 0)
    write_entries(path, entries)
    return path


def test_start_key() -> None:
    assert polyglot_key(chess.Board()) == START_KEY == 0x463B96181691FC9C


@pytest.mark.slow
def test_encoding_is_what_python_chess_reads(tmp_path: Path) -> None:
    """Every legal move in many positions: python-chess's book reader decodes our encoding."""
    checked = 0
    for board in random_positions(120, seed=1):
        key = chess.polyglot.zobrist_hash(board)
        assert polyglot_key(board) == key
        for move in board.legal_moves:
            raw = encode_move(board, move)
            with chess.polyglot.open_reader(one_entry_book(tmp_path, key, raw)) as reader:
                found = [entry.move for entry in reader.find_all(board)]
            assert found == [move], (board.fen(), move)
            assert decode_move(board, raw) == move
            checked += 1
    assert checked > 2000


def test_castling_is_king_takes_rook() -> None:
    board = chess.Board("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1")
    assert move_to_uci(encode_move(board, chess.Move.from_uci("e1g1"))) == "e1h1"
    assert move_to_uci(encode_move(board, chess.Move.from_uci("e1c1"))) == "e1a1"
    board960 = chess.Board("1r2k1r1/8/8/8/8/8/8/1R2K1R1 w GBgb - 0 1", chess960=True)
    castle = chess.Move.from_uci("e1g1")  # king takes the g1 rook
    assert board960.is_castling(castle)
    assert move_to_uci(encode_move(board960, castle)) == "e1g1"


def test_decode_rejects_illegal_and_bad_codes() -> None:
    board = chess.Board()
    assert decode_move(board, encode_move(board, chess.Move.from_uci("e2e4"))) is not None
    assert decode_move(board, chess.square(4, 4) | (chess.square(4, 1) << 6)) is None  # e2e5
    assert decode_move(board, 0x7000 | 28 | (12 << 6)) is None  # promotion code 7


def test_reader_agrees_with_python_chess_on_a_real_book(polyglot_book: Path) -> None:
    book = Book.open(polyglot_book)
    rng = random.Random(7)
    positions = 0
    with chess.polyglot.open_reader(polyglot_book) as reader:
        for _ in range(40):
            board = chess.Board()
            for _ in range(16):
                ours = [(m.move, m.weight) for m in book.moves(board)]
                theirs: dict[chess.Move, int] = {}
                for entry in reader.find_all(board):
                    theirs.setdefault(entry.move, entry.weight)
                assert sorted(ours, key=str) == sorted(theirs.items(), key=str)
                positions += 1
                if not ours:
                    break
                board.push(rng.choice(ours)[0])
    assert positions > 200


def test_weighted_choice_follows_weights(polyglot_book: Path) -> None:
    book = Book.open(polyglot_book)
    board = chess.Board()
    moves = book.moves(board)
    total = sum(m.weight for m in moves)
    rng = random.Random(3)
    draws = 20000
    counts: dict[chess.Move, int] = {}
    for _ in range(draws):
        picked = book.weighted_choice(board, rng)
        assert picked is not None
        counts[picked.move] = counts.get(picked.move, 0) + 1
    for m in moves:
        expected = m.weight / total
        assert abs(counts.get(m.move, 0) / draws - expected) < 0.02


def test_bad_books_are_rejected(tmp_path: Path) -> None:
    odd = tmp_path / "odd.bin"
    odd.write_bytes(b"\0" * 17)
    with pytest.raises(BookFormatError, match="multiple of 16"):
        read_entries(odd)
    unsorted = tmp_path / "unsorted.bin"
    entries = np.zeros(2, dtype=ENTRY_DTYPE)
    entries["key"] = [5, 3]
    entries.tofile(unsorted)
    with pytest.raises(BookFormatError, match="not sorted"):
        read_entries(unsorted)


def test_book_skips_illegal_and_zero_weight_entries(tmp_path: Path) -> None:
    board = chess.Board()
    entries = np.zeros(3, dtype=ENTRY_DTYPE)
    e2e4 = encode_move(board, chess.Move.from_uci("e2e4"))
    d2d4 = encode_move(board, chess.Move.from_uci("d2d4"))
    illegal = chess.square(4, 4) | (chess.square(4, 1) << 6)
    entries[0] = (START_KEY, e2e4, 10, 0)
    entries[1] = (START_KEY, d2d4, 0, 0)
    entries[2] = (START_KEY, illegal, 50, 0)
    path = tmp_path / "b.bin"
    write_entries(path, entries)
    assert [m.move.uci() for m in Book.open(path).moves(board)] == ["e2e4"]
    with chess.polyglot.open_reader(path) as reader:
        assert [e.move.uci() for e in reader.find_all(board)] == ["e2e4"]


def test_incremental_keys_equal_zobrist_hash() -> None:
    """push_with_key after every move of random games, Chess960 and special moves included."""
    from schemas.polyglot import push_with_key

    rng = random.Random(5)
    moves = 0
    for number in range(150):
        board = chess.Board.from_chess960_pos(rng.randrange(960)) if number % 2 else chess.Board()
        key = chess.polyglot.zobrist_hash(board)
        for _ in range(rng.randrange(10, 150)):
            move = random_move(board, rng, special_share=0.5)
            if move is None:
                break
            key = push_with_key(board, move, key)
            assert key == chess.polyglot.zobrist_hash(board), (board.fen(), move)
            moves += 1
    assert moves > 5000
