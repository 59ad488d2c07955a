"""Text views of a Polyglot book: a position's moves, or a whole-book summary."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import chess

from pipelines.books.analysis import book_facts
from pipelines.books.manifest import read_manifest_beside
from pipelines.books.outcomes import BookStatistics, Outcomes
from pipelines.errors import ChesspipeError
from pipelines.warehouse.chess_functions import ChessInputError, play_moves
from pipelines.warehouse.openings import names_by_key
from schemas.polyglot import open_book, polyglot_key

if TYPE_CHECKING:
    from pipelines.evals.after_move import MoveEvaluation


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


def describe_position(
    path: Path,
    board: chess.Board,
    *,
    statistics: BookStatistics | None = None,
    names: Mapping[int, tuple[str, str]] | None = None,
    evaluations: Mapping[tuple[str, chess.Move], MoveEvaluation] | None = None,
) -> str:
    """Return the position's book moves in SAN, heaviest first, with weights and percentages.

    With `statistics` (the ones the book was built from), each move's games and White/draw/
    Black shares follow; with `evaluations` (pipelines.evals.after_move), the stored evaluation
    after each move, from the mover's view (`eval -` where the store has none); each move's
    opening name (of the position it leads to) ends its line, and the position's own name has
    a line, from `names` (default: names_by_key()).
    """
    book = open_book(path)
    moves = book.moves(board)
    names = names_by_key() if names is None else names
    lines = [f"key {polyglot_key(board):016x}  {board.fen()}"]
    if (named := names.get(polyglot_key(board))) is not None:
        lines.append(f"opening  {named[0]} {named[1]}")
    if not moves:
        lines.append("no book moves")
        return "\n".join(lines)
    outcomes = statistics.outcomes([board])[board.fen()] if statistics is not None else {}
    total = sum(m.weight for m in moves)
    width = max(len(board.san(m.move)) for m in moves)
    for m in moves:
        line = f"{board.san(m.move):<{width}}  weight {m.weight:>5} ({m.weight / total:6.2%})"
        if statistics is not None:
            line += "  " + outcomes.get(m.move, Outcomes(0, 0, 0, 0)).describe()
        if evaluations is not None:
            judged = evaluations.get((board.fen(), m.move))
            line += f"  eval {judged.describe() if judged is not None else '-'}"
        board.push(m.move)
        after = names.get(polyglot_key(board))
        board.pop()
        if after is not None:
            line += f"  {after[0]} {after[1]}"
        lines.append(line)
    return "\n".join(lines)


def describe_book(
    path: Path,
    *,
    statistics: BookStatistics | None = None,
    evaluations: Mapping[tuple[str, chess.Move], MoveEvaluation] | None = None,
) -> str:
    """Return a summary: entries, positions, weight totals, and the start position's moves."""
    facts = book_facts(open_book(path), path)
    lines = [
        f"book       {path}",
        f"entries    {facts.entries:,}",
        f"positions  {facts.positions:,}",
        f"weight     total {facts.weight_total:,}, max {facts.weight_max:,}",
        f"zero-weight entries {facts.zero_weight:,}",
        "",
        describe_position(path, chess.Board(), statistics=statistics, evaluations=evaluations),
    ]
    return "\n".join(lines)


def book_evaluations(
    path: Path, board: chess.Board, warehouse: Path
) -> dict[tuple[str, chess.Move], MoveEvaluation] | None:
    """Return the stored evaluations after the position's book moves, None when the warehouse
    holds no evaluation store."""
    from pipelines.evals.after_move import evaluations_after, has_evaluations

    if not has_evaluations(warehouse):
        return None
    return evaluations_after(warehouse, ((board, m.move) for m in open_book(path).moves(board)))


def statistics_for(book: Path, warehouse: Path | None = None) -> BookStatistics | None:
    """Return the statistics behind a book: in `warehouse` (or an error saying why not), else
    in the warehouse its manifest names when that is at hand, else None."""
    manifest = read_manifest_beside(book)
    if warehouse is not None:
        return BookStatistics.find(manifest, warehouse)
    try:
        return BookStatistics.find(manifest)
    except ChesspipeError:
        return None
