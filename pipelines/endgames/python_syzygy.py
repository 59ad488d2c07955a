"""The python-chess backend: `chess.syzygy`, always available."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import chess
import chess.syzygy

from pipelines.endgames.probing import RootProbe, TablebaseError


def move_dtz(tablebase: chess.syzygy.Tablebase, board: chess.Board, move: chess.Move) -> int:
    """Return a legal move's DTZ from the mover's view (1 for a mating move)."""
    zeroing = board.is_zeroing(move)
    board.push(move)
    try:
        if board.is_checkmate():
            return 1
        if zeroing:
            return chess.syzygy.dtz_before_zeroing(-tablebase.probe_wdl(board))
        v = -tablebase.probe_dtz(board)
    finally:
        board.pop()
    if v > 0:
        return v + 1
    if v < 0:
        return v - 1
    return 0


class PythonBackend:
    """Probes with python-chess's pure-Python Syzygy reader."""

    name = "python"

    def __init__(self, folders: Sequence[Path]) -> None:
        self.tablebase = chess.syzygy.Tablebase()
        for folder in folders:
            self.tablebase.add_directory(str(folder))

    def root(self, board: chess.Board) -> RootProbe:
        board = board.copy(stack=False)
        try:
            wdl = self.tablebase.probe_wdl(board)
            dtz = self.tablebase.probe_dtz(board)
            moves = tuple(
                (move, move_dtz(self.tablebase, board, move)) for move in board.legal_moves
            )
        except KeyError as exc:
            raise TablebaseError(f"{board.fen()}: table missing ({exc})") from None
        return RootProbe(wdl, dtz, moves)

    def probe_wdl(self, board: chess.Board) -> int:
        try:
            return self.tablebase.probe_wdl(board)
        except KeyError as exc:
            raise TablebaseError(f"{board.fen()}: table missing ({exc})") from None

    def close(self) -> None:
        self.tablebase.close()
