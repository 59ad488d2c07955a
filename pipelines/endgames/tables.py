"""Syzygy table folders: where they are, and which materials they cover."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import chess
import chess.syzygy

from pipelines.endgames.probing import TablebaseError, material_key


def split_paths(spec: str | os.PathLike[str] | Sequence[str | os.PathLike[str]]) -> list[Path]:
    """Return the folders of a tablebase path: one folder, or several joined by os.pathsep."""
    if isinstance(spec, str | os.PathLike):
        parts = [p for p in str(spec).split(os.pathsep) if p]
    else:
        parts = [str(p) for p in spec]
    return [Path(p) for p in parts]


class NoTablebasePath(TablebaseError):
    """No tablebase folder was given, and SYZYGY_PATH is not set."""


def syzygy_path(given: str | None) -> list[Path]:
    """Return the tablebase folders given, else those of SYZYGY_PATH; fail if neither."""
    spec = given or os.environ.get("SYZYGY_PATH")
    if not spec:
        raise NoTablebasePath("no tablebase folder given, and SYZYGY_PATH is not set")
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
