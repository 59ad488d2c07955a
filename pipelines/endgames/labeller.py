"""The labeller: WDL, DTZ and the best move of a position, from either Syzygy backend.

A backend answers one question, `root(board)`: the position's WDL and DTZ as python-chess's
`probe_wdl`/`probe_dtz` define them (side to move, halfmove clock taken as 0), and for every
legal move its DTZ from the mover's view ("move DTZ", ``v``): positive wins in ``v`` plies to the
next zeroing move, negative loses, 0 draws; a mating move has ``v = 1``. Ranking those moves with
the position's halfmove clock is shared here, so both backends pick the same move.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import chess
import chess.syzygy

from pipelines.endgames.probing import (
    Backend,
    Label,
    RankedMove,
    TablebaseError,
    label_from_root,
    rank_moves,
)
from pipelines.endgames.tables import TableSet

BACKENDS = ("auto", "python", "fathom")


def open_backend(folders: Sequence[Path], backend: str = "auto") -> Backend:
    """Open a prober on tablebase folders: python-chess, Fathom, or Fathom when installed."""
    if backend not in BACKENDS:
        raise TablebaseError(f"unknown backend {backend!r}; choose {', '.join(BACKENDS)}")
    if backend in ("auto", "fathom"):
        from pipelines.endgames import fathom

        if fathom.available():
            return fathom.FathomBackend(folders)
        if backend == "fathom":
            raise TablebaseError(f"Fathom backend unavailable: {fathom.unavailable_reason()}")
    from pipelines.endgames.python_syzygy import PythonBackend

    return PythonBackend(folders)


class Labeller:
    """Labels positions with one backend, after checking the tables cover them."""

    def __init__(self, folders: Sequence[Path], backend: str = "auto") -> None:
        self.tables = TableSet(folders)
        self.backend = open_backend(folders, backend)

    @property
    def backend_name(self) -> str:
        return self.backend.name

    def label(self, board: chess.Board, validated: bool = False) -> Label:
        """Return the labels of a position, or fail with the reason it cannot be labelled."""
        self.tables.check(board, validated)
        return label_from_root(self.backend.root(board), board.halfmove_clock)

    def ranked_moves(self, board: chess.Board) -> list[RankedMove]:
        """Return every legal move ranked, best first."""
        self.tables.check(board)
        return rank_moves(self.backend.root(board).moves, board.halfmove_clock)

    def close(self) -> None:
        self.backend.close()

    def __enter__(self) -> Labeller:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
