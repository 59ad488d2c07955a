"""Text views of a Polyglot book: a position's moves, or a whole-book summary."""

from __future__ import annotations

from pathlib import Path

import chess

from pipelines.books.analysis import book_facts
from pipelines.errors import ChesspipeError
from pipelines.warehouse.chess_functions import ChessInputError, play_moves
from schemas.polyglot import open_book, polyglot_key


def position_from(fen: str | None, moves: str | None, chess960: bool = False) -> chess.Board | None:
    """Return the board a FEN and a move list name (SAN, UCI or PGN movetext), None for neither."""
    if fen is None and moves is None:
        return None
    try:
        board = chess.Board(fen, chess960=chess960) if fen else chess.Board(chess960=chess960)
    except ValueError as exc:
        raise ChesspipeError(f"invalid FEN: {exc}") from None
    try:
        return play_moves(board, moves or "")
    except ChessInputError as exc:
        raise ChesspipeError(str(exc)) from None


def describe_position(path: Path, board: chess.Board) -> str:
    """Return the position's book moves in SAN, heaviest first, with weights and percentages."""
    book = open_book(path)
    moves = book.moves(board)
    lines = [f"key {polyglot_key(board):016x}  {board.fen()}"]
    if not moves:
        lines.append("no book moves")
        return "\n".join(lines)
    total = sum(m.weight for m in moves)
    width = max(len(board.san(m.move)) for m in moves)
    for m in moves:
        lines.append(
            f"{board.san(m.move):<{width}}  weight {m.weight:>5} ({m.weight / total:6.2%})"
        )
    return "\n".join(lines)


def describe_book(path: Path) -> str:
    """Return a summary: entries, positions, weight totals, and the start position's moves."""
    facts = book_facts(open_book(path), path)
    lines = [
        f"book       {path}",
        f"entries    {facts.entries:,}",
        f"positions  {facts.positions:,}",
        f"weight     total {facts.weight_total:,}, max {facts.weight_max:,}",
        f"zero-weight entries {facts.zero_weight:,}",
        "",
        describe_position(path, chess.Board()),
    ]
    return "\n".join(lines)
