"""Syzygy tablebases for the engine: WDL probes in the search, DTZ ranking of root moves."""

from __future__ import annotations

import os
from collections.abc import Callable
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


#: The first four bytes of a Syzygy table: WDL (.rtbw) and DTZ (.rtbz).
MAGICS = {".rtbw": bytes([0x71, 0xE8, 0x23, 0x5D]), ".rtbz": bytes([0xD7, 0x66, 0x0C, 0xA5])}
_PIECE_CODES = {"P": 1, "N": 2, "B": 3, "R": 4, "Q": 5, "K": 6}


def table_problem(path: str) -> str | None:
    """What is wrong with a Syzygy table file, read from its header (None: nothing seen).

    Its magic, and the pieces its header lists for each side to move (and each pawn file),
    which must be the material its name says: python-chess trusts them, and a table of
    another material (a KQvK file named KQvKR) made its probe loop for ever.
    """
    name, suffix = os.path.splitext(os.path.basename(path))
    try:
        with open(path, "rb") as handle:
            head = handle.read(64)
    except OSError as exc:
        return exc.strerror or "unreadable"
    if suffix not in MAGICS or head[:4] != MAGICS[suffix]:
        return "not a Syzygy table (its first bytes)"
    white, _, black = name.partition("v")
    count = len(white) + len(black)
    if not white or not black or any(c not in _PIECE_CODES for c in white + black) or count > 7:
        return "not a table's name"
    wanted = sorted([_PIECE_CODES[c] for c in white] + [_PIECE_CODES[c] | 8 for c in black])
    mirrored = sorted(code ^ 8 for code in wanted)
    blocks: list[bytes] = []
    if "P" not in name:
        blocks.append(head[6 : 6 + count])  # after the flags byte and the order byte
    else:
        pawns_both = "P" in white and "P" in black
        step = count + 1 + int(pawns_both)
        for f in range(4):
            start = 5 + f * step + 1 + int(pawns_both)
            blocks.append(head[start : start + count])
    for block in blocks:
        if len(block) < count:
            return "shorter than its header"
        # WDL tables list the pieces for White and for Black to move (low and high nibbles),
        # DTZ tables for one side (low nibbles).
        sides = [[b & 0x0F for b in block], [b >> 4 for b in block]]
        for codes in sides if suffix == ".rtbw" else sides[:1]:
            if sorted(codes) not in (wanted, mirrored):
                return f"its header is not that of {name}"
    return None


class Tablebases:
    """Syzygy tables from one or more directories, probed through python-chess.

    Tables whose header is not what their name says are left out when loaded (`dropped`);
    a table whose probe fails later is dropped then, `on_drop` told why, and the probe
    answers None (not in the tables): the search never takes a failed probe's result."""

    def __init__(self, path: str, on_drop: Callable[[str], None] | None = None) -> None:
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
        self.on_drop = on_drop
        #: Why each table left out was left out, one line each.
        self.dropped: list[str] = []
        checked: set[str] = set()
        for tables in (self.tables.wdl, self.tables.dtz):
            for name in list(tables):  # each table is there under its name and its mirror's
                table = tables.get(name)
                if table is None or table.path in checked:
                    continue  # dropped, or checked, under the other name
                checked.add(table.path)
                problem = table_problem(table.path)
                if problem is not None:
                    self._drop(name, f"{table.path}: {problem}", tell=False)
        found = len({t.path for ts in (self.tables.wdl, self.tables.dtz) for t in ts.values()})
        if not found or not self.tables.wdl:
            self.tables.close()
            left_out = f" ({len(self.dropped)} left out: {self.dropped[0]})" if self.dropped else ""
            raise ValueError(f"no Syzygy WDL tables in {path}{left_out}")
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
        """Return WDL (2 win .. -2 loss, side to move) or None if no table has the position
        (or its table failed: it is dropped)."""
        try:
            return self.tables.probe_wdl(board)
        except (KeyError, chess.syzygy.MissingTableError):
            return None
        except Exception as exc:  # a damaged table: python-chess's errors are of many kinds
            self._failed(board, exc)
            return None

    def probe_dtz(self, board: chess.Board) -> int | None:
        """Return DTZ (side to move, signed like WDL) or None if no table has the position
        (or its table failed: it is dropped)."""
        try:
            return self.tables.probe_dtz(board)
        except (KeyError, chess.syzygy.MissingTableError):
            return None
        except Exception as exc:
            self._failed(board, exc)
            return None

    def _failed(self, board: chess.Board, exc: Exception) -> None:
        """Drop the table a failed probe names (a file in its message), else the table of the
        position's material, saying why."""
        reason = " ".join(str(exc).split()) or type(exc).__name__
        named = {
            table.path: name  # one name a table (it is there under its mirror's too)
            for tables in (self.tables.wdl, self.tables.dtz)
            for name, table in tables.items()
            if table.path in str(exc)
        }
        for name in list(named.values()) or [chess.syzygy.calc_key(board)]:
            self._drop(name, f"{name}: a probe failed ({reason})")

    def _drop(self, name: str, why: str, *, tell: bool = True) -> None:
        """Leave the tables of `name` (WDL and DTZ, under its name and its mirror's) out from
        now on."""
        mirrored = "v".join(reversed(name.split("v")))
        for tables in (self.tables.wdl, self.tables.dtz):
            for key in {name, mirrored}:
                table = tables.pop(key, None)
                if table is not None:
                    table.close()
        self.dropped.append(why)
        if tell and self.on_drop is not None:
            self.on_drop(f"tablebase dropped: {why}")

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
