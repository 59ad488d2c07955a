"""The games behind a book's moves, and how they ended, from the statistics it was built from.

A book's manifest names its warehouse, months and settings: the same rows of `move_stats`
(months, speeds, rating bands) give each book move's games and White/draw/Black counts,
aggregated by DuckDB over the key and move.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

import chess

from pipelines.books.build import stats_filter
from pipelines.books.manifest import BookManifest
from pipelines.errors import ChesspipeError
from pipelines.warehouse.layout import available_months
from pipelines.warehouse.sql import connect
from schemas.polyglot import decode_move, polyglot_key


class Outcomes(NamedTuple):
    """A move's games and their results, from White's view."""

    games: int
    white: int
    draws: int
    black: int

    def shares(self) -> tuple[float, float, float]:
        """White wins, draws and Black wins as fractions of the games."""
        total = self.games or 1
        return self.white / total, self.draws / total, self.black / total

    def describe(self) -> str:
        """`games 1,234 (white 40.5%, draws 20.3%, black 39.2%)`."""
        white, draws, black = self.shares()
        return f"games {self.games:,} (white {white:.1%}, draws {draws:.1%}, black {black:.1%})"


class BookStatistics:
    """The statistics a book was built from: its manifest's months and settings in a warehouse."""

    def __init__(self, manifest: BookManifest, warehouse: Path) -> None:
        self.manifest = manifest
        self.warehouse = Path(warehouse)

    @classmethod
    def find(cls, manifest: BookManifest | None, warehouse: Path | None = None) -> BookStatistics:
        """Return the statistics behind a book, in `warehouse` or the one its manifest names.

        Raise ChesspipeError when there is no manifest, no warehouse, or a month is missing.
        """
        if manifest is None:
            raise ChesspipeError(
                "the book has no manifest beside it (BOOK.json from book build): the months "
                "and settings of its statistics are unknown"
            )
        folder = warehouse if warehouse is not None else manifest.warehouse
        if folder is None:
            raise ChesspipeError("the book's manifest names no warehouse; name one")
        have = set(available_months(Path(folder)))
        missing = [month for month in manifest.months if month not in have]
        if missing:
            raise ChesspipeError(
                f"the warehouse {folder} lacks the book's months {', '.join(missing)}"
            )
        return cls(manifest, Path(folder))

    def outcomes(self, boards: Iterable[chess.Board]) -> dict[str, dict[chess.Move, Outcomes]]:
        """Return, by each board's FEN, its moves' games and results, in one query."""
        wanted = {board.fen(): board for board in boards}
        by_key: dict[int, list[chess.Board]] = {}
        for board in wanted.values():
            by_key.setdefault(polyglot_key(board), []).append(board)
        where, params = stats_filter(list(self.manifest.months), self.manifest.settings)
        sql = (
            "SELECT key, move, sum(games)::UBIGINT, sum(wins)::UBIGINT, sum(draws)::UBIGINT, "
            f"sum(losses)::UBIGINT FROM move_stats WHERE {' AND '.join(where)} "
            "AND key IN (SELECT unnest(?::UBIGINT[])) GROUP BY key, move"
        )
        con = connect(self.warehouse)
        try:
            rows = con.execute(sql, [*params, list(by_key)]).fetchall()
        finally:
            con.close()
        found: dict[str, dict[chess.Move, Outcomes]] = {fen: {} for fen in wanted}
        for key, raw, games, wins, draws, losses in rows:
            for board in by_key[int(key)]:
                move = decode_move(board, int(raw))
                if move is None:  # a key collision: not a move of this position
                    continue
                white, black = (wins, losses) if board.turn == chess.WHITE else (losses, wins)
                found[board.fen()][move] = Outcomes(int(games), int(white), int(draws), int(black))
        return found
