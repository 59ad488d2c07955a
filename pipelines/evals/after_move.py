"""Book moves judged by the store where people read books (`book show`, `book report`): the
stored evaluation of the position each move leads to, from the view of the side that moved."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import chess

from pipelines.evals.store import Evaluation, read_evaluations
from pipelines.warehouse.evals_files import eval_parts
from schemas.polyglot import polyglot_key

if TYPE_CHECKING:
    import chess.engine


class MoveEvaluation(NamedTuple):
    """The stored evaluation of the position a move leads to (`after`, from its side to move),
    and the same from the mover's view."""

    after: Evaluation

    @property
    def score(self) -> chess.engine.Score:
        """From the mover's view, as python-chess scores it (a move that mates: MateGiven)."""
        import chess.engine  # (asyncio and all: only when an evaluation is shown)

        if self.after.mate is not None:
            return -chess.engine.Mate(self.after.mate)
        assert self.after.cp is not None
        return -chess.engine.Cp(self.after.cp)

    def describe(self) -> str:
        """`+35`, `#3`, `#-2` or `#+0` (the move mates), from the mover's view, with the depth
        or node count of the search: `+35 (d20)`."""
        searched = ""
        if self.after.depth:
            searched = f" (d{self.after.depth})"
        elif self.after.nodes:
            searched = f" ({self.after.nodes:,} nodes)"
        return f"{self.score}{searched}"


def has_evaluations(warehouse: Path) -> bool:
    """Whether the warehouse holds an evaluation store."""
    return bool(eval_parts(warehouse))


def evaluations_after(
    warehouse: Path, moves: Iterable[tuple[chess.Board, chess.Move]]
) -> dict[tuple[str, chess.Move], MoveEvaluation]:
    """Return, by (the board's FEN, the move), the stored evaluation after each move the store
    has, in one read of the store."""
    wanted: dict[int, list[tuple[str, chess.Move]]] = {}
    for board, move in moves:
        board.push(move)
        key = polyglot_key(board)
        board.pop()
        wanted.setdefault(key, []).append((board.fen(), move))
    stored = read_evaluations(warehouse, wanted)
    return {
        place: MoveEvaluation(stored[key])
        for key, places in wanted.items()
        if key in stored
        for place in places
    }
