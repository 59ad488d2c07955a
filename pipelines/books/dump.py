"""A book's lines as PGN: every line from the start position, the heaviest moves first."""

from __future__ import annotations

import io
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import chess
import chess.pgn

from pipelines.books.settings import DumpSettings
from pipelines.errors import ChesspipeError
from pipelines.files import write_bytes_atomic
from schemas.polyglot import Book, BookFormatError, open_book, polyglot_key

#: The comment on a line's last move when its position was already followed in an earlier line.
TRANSPOSITION = "transposition"


class BookLine(NamedTuple):
    """One line of a book: its moves, each move's weight and share of its position's weights."""

    moves: tuple[chess.Move, ...]
    weights: tuple[int, ...]
    shares: tuple[float, ...]
    transposition: bool


class Dump(NamedTuple):
    """What a dump wrote: where (None for standard output), and how many lines."""

    out: Path | None
    lines: int


def book_lines(
    book: Book, *, board: chess.Board | None = None, settings: DumpSettings | None = None
) -> Iterator[BookLine]:
    """Yield the book's lines from a position (the start position by default), depth first.

    At each position the book moves of at least `min_weight` are followed heaviest first, so
    the lines come out most-weighted first. A line ends after `plies` moves, where the book has
    no move to follow, or on reaching a position an earlier line already followed (marked as a
    transposition): every position is followed once.
    """
    settings = settings or DumpSettings()
    start = board.copy(stack=False) if board is not None else chess.Board()
    followed: set[int] = set()

    def walk(board: chess.Board, key: int, line: BookLine) -> Iterator[BookLine]:
        followed.add(key)
        every = book.moves(board, key)
        moves = [m for m in every if m.weight >= settings.min_weight]
        if len(line.moves) >= settings.plies or not moves:
            if line.moves:
                yield line
            return
        total = sum(m.weight for m in every)
        for book_move in moves:
            board.push(book_move.move)
            child_key = polyglot_key(board)
            child = BookLine(
                (*line.moves, book_move.move),
                (*line.weights, book_move.weight),
                (*line.shares, book_move.weight / total),
                child_key in followed,
            )
            if child.transposition:
                yield child
            else:
                yield from walk(board, child_key, child)
            board.pop()

    yield from walk(start, polyglot_key(start), BookLine((), (), (), False))


def line_pgn(start: chess.Board, line: BookLine, number: int, source: str) -> str:
    """Return one line as a PGN game; each move's comment gives its weight and share."""
    game = chess.pgn.Game.from_board(start)
    game.headers["Event"] = f"Book line {number}"
    game.headers["Site"] = source
    node: chess.pgn.GameNode = game
    for move, weight, share in zip(line.moves, line.weights, line.shares, strict=True):
        node = node.add_main_variation(move, comment=f"weight {weight} ({share:.1%})")
    if line.transposition:
        node.comment += f"; {TRANSPOSITION}"
    return str(game)


def write_dump(
    path: Path,
    out: Path | None = None,
    *,
    board: chess.Board | None = None,
    settings: DumpSettings | None = None,
) -> Dump:
    """Write a book's lines as PGN games to `out` (atomically), or to standard output."""
    try:
        book = open_book(path)
    except BookFormatError as exc:
        raise ChesspipeError(str(exc)) from None
    start = board.copy(stack=False) if board is not None else chess.Board()
    text = io.StringIO()
    count = 0
    for count, line in enumerate(book_lines(book, board=start, settings=settings), start=1):
        text.write(line_pgn(start, line, count, str(path)) + "\n\n")
    if out is None:
        sys.stdout.write(text.getvalue())
        return Dump(None, count)
    write_bytes_atomic(Path(out), text.getvalue().encode("utf-8"))
    return Dump(Path(out), count)
