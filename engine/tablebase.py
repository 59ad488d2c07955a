"""Syzygy tablebases for the engine: WDL probes in the search, DTZ ranking of root moves."""

from __future__ import annotations

import os
from dataclasses import dataclass
from enum import IntEnum

import chess
import chess.syzygy


class Outcome(IntEnum):
    """A move's result for the side that plays it, under the 50-move rule; higher is better."""

    LOSS = 0
    BLESSED_LOSS = 1
    DRAW = 2
    CURSED_WIN = 3
    WIN = 4
    MATE = 5


@dataclass(frozen=True)
class RankedMove:
    """A root move with its tablebase outcome and DTZ (plies to the next zeroing move).

    `pipelines.endgames.probing.RankedMove` ranks moves for labels, by probetool's numbers.
    The engine may not import pipelines, and a ranked move is no format that crosses between
    them (nothing writes it), so it has no place in `schemas/`: each keeps its own.
    """

    move: chess.Move
    outcome: Outcome
    dtz: int

    def key(self) -> tuple[int, int]:
        """Sort key, larger is better: best outcome, then fastest win or slowest loss."""
        if self.outcome >= Outcome.CURSED_WIN:
            return (self.outcome, -abs(self.dtz))
        if self.outcome <= Outcome.BLESSED_LOSS:
            return (self.outcome, abs(self.dtz))
        return (self.outcome, 0)


def _table_pieces(name: str) -> int:
    return sum(1 for char in name if char != "v")


class Tablebases:
    """Syzygy tables from one or more directories, probed through python-chess."""

    def __init__(self, path: str) -> None:
        """Open every table in the directories of a SyzygyPath (separated by ':' or ';')."""
        directories = [d for d in path.replace(";", os.pathsep).split(os.pathsep) if d.strip()]
        if not directories:
            raise ValueError("empty Syzygy path")
        self.tables = chess.syzygy.Tablebase()
        found = 0
        for directory in directories:
            if not os.path.isdir(directory):
                self.tables.close()
                raise ValueError(f"Syzygy directory not found: {directory}")
            found += self.tables.add_directory(directory)
        if not found or not self.tables.wdl:
            self.tables.close()
            raise ValueError(f"no Syzygy WDL tables in {path}")
        self.path = path
        self.files = found
        #: Most pieces (kings included) any loaded WDL table covers.
        self.max_pieces = max(_table_pieces(name) for name in self.tables.wdl)

    def close(self) -> None:
        """Release the table files."""
        self.tables.close()

    def covers(self, board: chess.Board, limit: int = 7) -> bool:
        """Whether a position may be in the tables: few enough pieces and no castling rights."""
        return (
            chess.popcount(board.occupied) <= min(limit, self.max_pieces)
            and not board.castling_rights
        )

    def probe_wdl(self, board: chess.Board) -> int | None:
        """Return WDL (2 win .. -2 loss, side to move) or None if no table has the position."""
        try:
            return self.tables.probe_wdl(board)
        except (KeyError, chess.syzygy.MissingTableError):
            return None

    def probe_dtz(self, board: chess.Board) -> int | None:
        """Return DTZ (side to move, signed like WDL) or None if no table has the position."""
        try:
            return self.tables.probe_dtz(board)
        except (KeyError, chess.syzygy.MissingTableError):
            return None

    def rank_root_moves(self, board: chess.Board) -> list[RankedMove] | None:
        """Rank every legal move by its tablebase outcome and DTZ, best first; None if unknown."""
        ranked = []
        clock = board.halfmove_clock
        for move in board.legal_moves:
            zeroing = board.is_zeroing(move)
            board.push(move)
            try:
                if board.is_checkmate():
                    ranked.append(RankedMove(move, Outcome.MATE, 1))
                    continue
                wdl_after = self.probe_wdl(board)
                dtz_after = None if zeroing else self.probe_dtz(board)
            finally:
                board.pop()
            if wdl_after is None or (not zeroing and dtz_after is None):
                return None
            wdl = -wdl_after
            if zeroing:
                dtz = (wdl > 0) - (wdl < 0)
            else:
                assert dtz_after is not None
                dtz = -dtz_after + (1 if dtz_after < 0 else -1 if dtz_after > 0 else 0)
            within_rule = zeroing or clock + abs(dtz) <= 100
            if wdl == 2:
                outcome = Outcome.WIN if within_rule else Outcome.CURSED_WIN
            elif wdl == -2:
                outcome = Outcome.LOSS if within_rule else Outcome.BLESSED_LOSS
            else:
                outcome = {1: Outcome.CURSED_WIN, 0: Outcome.DRAW, -1: Outcome.BLESSED_LOSS}[wdl]
            ranked.append(RankedMove(move, outcome, dtz))
        ranked.sort(key=RankedMove.key, reverse=True)
        return ranked

    def best_root_moves(self, board: chess.Board, limit: int = 7) -> list[chess.Move] | None:
        """Return the legal moves the tables rank best, or None if the tables don't decide."""
        if not self.covers(board, limit):
            return None
        ranked = self.rank_root_moves(board)
        if not ranked:
            return None
        best = ranked[0].key()
        return [r.move for r in ranked if r.key() == best]
