"""A collection's games in memory, for `/masters`: every indexed game's record, and every
position of them once per game, sorted by Polyglot key (from `chesspipe explorer index
--plies all`, read-only). Lichess months are read from their lookup files instead
(`pipelines.serve.lookup_store`).

Games are numbered across months in order (month, then place in the month's source): a
larger number is a more recent game.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq

from pipelines.explorer.layout import explorer_months, games_file, positions_file


class GamesIndex:
    """Every game of the explorer's months, and their positions sorted by key."""

    def __init__(self, warehouse: Path, months: list[str]) -> None:
        self.warehouse = Path(warehouse)
        self.months = months
        columns: dict[str, list[Any]] = {}
        positions: list[dict[str, np.ndarray]] = []
        first = 0
        self.month_first: list[int] = []
        wanted = list(_GAME_COLUMNS)
        for number, month in enumerate(months):
            table = pq.read_table(games_file(warehouse, month), columns=wanted)
            for name in wanted:
                columns.setdefault(name, []).append(
                    table.column(name).to_numpy(zero_copy_only=False)
                )
            columns.setdefault("month", []).append(np.full(len(table), number, dtype=np.uint16))
            found = pq.read_table(positions_file(warehouse, month))
            positions.append(
                {
                    "game": found.column("seq").to_numpy().astype(np.uint32) + np.uint32(first),
                    "key": found.column("key").to_numpy(),
                    "move": found.column("move").to_numpy(),
                    "ply": found.column("ply").to_numpy(),
                }
            )
            self.month_first.append(first)
            first += len(table)
        self.count = first

        def joined(name: str, dtype: Any = None) -> np.ndarray:
            parts = columns.get(name) or [np.zeros(0, dtype=dtype or object)]
            values = np.concatenate(parts)
            return values if dtype is None else values.astype(dtype)

        self.ids: np.ndarray = joined("id")
        self.white: np.ndarray = joined("white")
        self.black: np.ndarray = joined("black")
        self.white_title: np.ndarray = joined("white_title")
        self.black_title: np.ndarray = joined("black_title")
        self.dates: np.ndarray = joined("date")
        self.month = joined("month", np.uint16)
        # Ratings: -1 when missing.
        self.white_elo = np.array(
            [-1 if v is None or v != v else int(v) for v in joined("white_elo")], dtype=np.int32
        )
        self.black_elo = np.array(
            [-1 if v is None or v != v else int(v) for v in joined("black_elo")], dtype=np.int32
        )
        self.result = joined("result", np.uint8)
        self.year = np.array([_year(d) for d in self.dates], dtype=np.int32)
        self.by_id = {str(game_id): g for g, game_id in enumerate(self.ids)}
        self._sort_positions(positions)

    def _sort_positions(self, parts: list[dict[str, np.ndarray]]) -> None:
        if parts:
            game = np.concatenate([p["game"] for p in parts])
            key = np.concatenate([p["key"] for p in parts]).astype(np.uint64)
            move = np.concatenate([p["move"] for p in parts]).astype(np.uint16)
            ply = np.concatenate([p["ply"] for p in parts]).astype(np.uint16)
        else:
            game = np.zeros(0, np.uint32)
            key = np.zeros(0, np.uint64)
            move = np.zeros(0, np.uint16)
            ply = np.zeros(0, np.uint16)
        # Rows come in game order; a stable sort by key keeps it inside each position.
        order = np.argsort(key, kind="stable")
        self.keys = key[order]
        self.moves = move[order]
        self.games = game[order]
        self.white_moved = (ply[order] % 2) == 0

    @classmethod
    def load(cls, warehouse: Path) -> GamesIndex:
        return cls(warehouse, explorer_months(warehouse))

    def rows(self, key: int) -> slice:
        """The rows (of keys, moves, games) of a position."""
        value = np.uint64(key)
        low = int(np.searchsorted(self.keys, value, "left"))
        high = int(np.searchsorted(self.keys, value, "right"))
        return slice(low, high)

    def game_json(self, g: int) -> dict[str, Any]:
        """A game as lila-openingexplorer's masters `ExplorerGame`: no speed nor mode; its
        month is its date's, if it has one."""
        result = int(self.result[g])
        winner = "white" if result == 2 else "black" if result == 0 else None
        found: dict[str, Any] = {"id": str(self.ids[g]), "winner": winner}
        for side, names, elos in (
            ("white", self.white, self.white_elo),
            ("black", self.black, self.black_elo),
        ):
            rating = int(elos[g])
            found[side] = {"name": str(names[g]), "rating": rating if rating >= 0 else None}
        date = str(self.dates[g])
        found["year"] = int(self.year[g]) if self.year[g] >= 0 else None
        found["month"] = f"{date[:4]}-{date[5:7]}" if _month_known(date) else None
        return found

    def game_text(self, g: int) -> dict[str, Any]:
        """Event, site, round and moves (UCI) of a game, read from its month's file."""
        month = int(self.month[g])
        seq = g - self.month_first[month]
        table = pq.read_table(
            games_file(self.warehouse, self.months[month]),
            columns=["seq", "event", "site", "round", "moves"],
            filters=[("seq", "=", seq)],
        )
        row = table.to_pylist()[0]
        return row


#: The columns of games.parquet the index holds (the others are read for a PGN).
_GAME_COLUMNS = (
    "id", "date", "white", "black", "white_elo", "black_elo", "white_title", "black_title",
    "result",
)  # fmt: skip


def _year(date: str) -> int:
    head = date[:4]
    return int(head) if head.isascii() and head.isdigit() else -1


def _month_known(date: str) -> bool:
    return len(date) >= 7 and date[:4].isdigit() and date[5:7].isdigit() and date[5:7] != "00"
