"""What a tablebase probe answers: WDL, DTZ, root moves ranked, and the label of a position."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

import chess
import chess.syzygy

from pipelines.errors import ChesspipeError

WDL_WORDS = {2: "win", 1: "cursed win", 0: "draw", -1: "blessed loss", -2: "loss"}


class TablebaseError(ChesspipeError):
    """A position the tables cannot answer: missing tables, castling rights, too many pieces."""


@dataclass(frozen=True)
class RootProbe:
    """A backend's answer for a position: WDL, DTZ and every legal move's move DTZ."""

    wdl: int
    dtz: int
    moves: tuple[tuple[chess.Move, int], ...]
    suggested: chess.Move | None = None  # the backend's own choice, when it makes one


@dataclass(frozen=True)
class RankedMove:
    """A legal move with its move DTZ and its rank (higher is better for the mover)."""

    move: chess.Move
    dtz: int
    rank: int


@dataclass(frozen=True)
class Label:
    """A position's tablebase labels."""

    wdl: int  # -2..2 from the side to move, halfmove clock taken as 0
    dtz: int  # as python-chess's probe_dtz
    wdl50: int  # -2..2 with the position's own halfmove clock
    best_move: chess.Move | None  # None when there is no legal move
    best_move_dtz: int  # the best move's move DTZ (0 when there is no move)


class Backend(Protocol):
    """A Syzygy prober."""

    name: str

    def root(self, board: chess.Board) -> RootProbe:
        """Return WDL, DTZ and the move DTZ of every legal move of a covered position."""
        ...

    def probe_wdl(self, board: chess.Board) -> int:
        """Return the WDL of a covered position."""
        ...

    def close(self) -> None:
        """Release the tables."""
        ...


def dtz_to_wdl(dtz: int, clock: int) -> int:
    """Return the result under the 50-move rule of a DTZ reached with a halfmove clock."""
    if dtz > 0:
        return 2 if dtz + clock <= 100 else 1
    if dtz < 0:
        return -2 if -dtz + clock <= 100 else -1
    return 0


def move_rank(v: int, clock: int) -> int:
    """Rank a move DTZ: real wins (shortest first), 50-move draws, draws, losses (longest first).

    Like probetool's root ranking: a win within the 50-move budget beats a win that the clock
    turns into a draw, which beats a draw; among losses, longer is better.
    """
    if v > 0:
        return 1000 - v if v + clock <= 100 else max(1, 1000 - (v + clock))
    if v < 0:
        return -1000 - v if -v + clock <= 100 else min(-1, -1000 + (-v + clock))
    return 0


def _tie_key(move: chess.Move) -> tuple[int, int, int]:
    return (move.from_square, move.to_square, -(move.promotion or 0))


def rank_moves(moves: Iterable[tuple[chess.Move, int]], clock: int) -> list[RankedMove]:
    """Return the moves best first; ties in a fixed order (from, to, stronger promotion first)."""
    ranked = [RankedMove(move, v, move_rank(v, clock)) for move, v in moves]
    ranked.sort(key=lambda m: (-m.rank, *_tie_key(m.move)))
    return ranked


def label_from_root(root: RootProbe, clock: int) -> Label:
    """Return the labels of a position from its root probe and halfmove clock."""
    best_move: chess.Move | None = None
    best_dtz = 0
    best_key: tuple[int, int, int, int] | None = None
    for move, v in root.moves:
        key = (-move_rank(v, clock), *_tie_key(move))
        if best_key is None or key < best_key:
            best_key, best_move, best_dtz = key, move, v
    return Label(
        wdl=root.wdl,
        dtz=root.dtz,
        wdl50=dtz_to_wdl(root.dtz, clock),
        best_move=best_move,
        best_move_dtz=best_dtz,
    )


def material_key(board: chess.BaseBoard) -> str:
    """Return a position's material as a table name, White first (e.g. KRvKP)."""
    return chess.syzygy.calc_key(board)


def parse_material(text: str) -> str:
    """Return a material such as 'KRvKP' in canonical piece order, or fail with the reason."""
    name = text.strip()
    if not chess.syzygy.TABLENAME_REGEX.match(name):
        raise TablebaseError(f"bad material {text!r}: expected pieces like KRvKP (White v Black)")
    white, black = name.split("v", 1)
    if white.count("K") != 1 or black.count("K") != 1:
        raise TablebaseError(f"bad material {text!r}: each side needs exactly one king")
    order = "KQRBNP"
    return "".join(sorted(white, key=order.index)) + "v" + "".join(sorted(black, key=order.index))
