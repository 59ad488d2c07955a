"""The labeller: WDL, DTZ and the best move of a position, from either Syzygy backend.

A backend answers one question, `root(board)`: the position's WDL and DTZ as python-chess's
`probe_wdl`/`probe_dtz` define them (side to move, halfmove clock taken as 0), and for every
legal move its DTZ from the mover's view ("move DTZ", ``v``): positive wins in ``v`` plies to the
next zeroing move, negative loses, 0 draws; a mating move has ``v = 1``. Ranking those moves with
the position's halfmove clock is shared here, so both backends pick the same move.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import chess
import chess.syzygy

from pipelines.errors import ChesspipeError

WDL_WORDS = {2: "win", 1: "cursed win", 0: "draw", -1: "blessed loss", -2: "loss"}

BACKENDS = ("auto", "python", "fathom")


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


# --- which positions the tables cover ----------------------------------------------------------


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


def split_paths(spec: str | os.PathLike[str] | Sequence[str | os.PathLike[str]]) -> list[Path]:
    """Return the folders of a tablebase path: one folder, or several joined by os.pathsep."""
    if isinstance(spec, str | os.PathLike):
        parts = [p for p in str(spec).split(os.pathsep) if p]
    else:
        parts = [str(p) for p in spec]
    return [Path(p) for p in parts]


def syzygy_path(option: str | None) -> list[Path]:
    """Return the tablebase folders from an option, else from SYZYGY_PATH; fail if neither."""
    spec = option or os.environ.get("SYZYGY_PATH")
    if not spec:
        raise TablebaseError("no tablebase folder: pass --syzygy DIR or set SYZYGY_PATH")
    folders = split_paths(spec)
    for folder in folders:
        if not folder.is_dir():
            raise TablebaseError(f"tablebase folder {folder} does not exist")
    return folders


class TableSet:
    """The materials a set of folders holds with both WDL and DTZ tables."""

    def __init__(self, folders: Sequence[Path]) -> None:
        self.folders = list(folders)
        wdl: set[str] = set()
        dtz: set[str] = set()
        for folder in self.folders:
            for entry in os.listdir(folder):
                stem, ext = os.path.splitext(entry)
                if not chess.syzygy.is_tablename(stem, piece_count=None):
                    continue
                if ext == ".rtbw":
                    wdl.add(stem)
                elif ext == ".rtbz":
                    dtz.add(stem)
        self.tables = frozenset(wdl & dtz)
        if not self.tables:
            where = ", ".join(str(f) for f in self.folders)
            raise TablebaseError(f"no Syzygy tables (.rtbw with .rtbz) found in {where}")
        self.largest = max(len(name) - 1 for name in self.tables)
        self._complete: dict[str, str | None] = {}

    def missing_for(self, material: str) -> str | None:
        """Return the first table a material needs that is absent (itself or a sub-table)."""
        if material not in self._complete:
            needed = [material, *chess.syzygy.dependencies(material)]
            missing = None
            for name in needed:
                if name == "KvK":
                    continue
                if chess.syzygy.normalize_tablename(name) not in self.tables:
                    missing = chess.syzygy.normalize_tablename(name)
                    break
            self._complete[material] = missing
        return self._complete[material]

    def check(self, board: chess.Board, validated: bool = False) -> None:
        """Fail with the reason when the tables cannot label a position.

        ``validated`` skips the legality test for boards known to be valid (samples, replayed
        games, checked EPD lines); Fathom must never see an illegal position.
        """
        if board.castling_rights:
            raise TablebaseError(f"{board.fen()}: castling rights; no table covers castling")
        pieces = chess.popcount(board.occupied)
        if pieces > self.largest:
            raise TablebaseError(
                f"{board.fen()}: {pieces} pieces; the largest table here has {self.largest}"
            )
        if not validated and board.status() != chess.STATUS_VALID:
            raise TablebaseError(f"{board.fen()}: not a legal position")
        if board.occupied == board.kings:
            return
        missing = self.missing_for(material_key(board))
        if missing:
            raise TablebaseError(f"{board.fen()}: table {missing} is missing")

    def covers(self, board: chess.Board) -> bool:
        """Tell whether the tables can label a position."""
        try:
            self.check(board)
        except TablebaseError:
            return False
        return True


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
