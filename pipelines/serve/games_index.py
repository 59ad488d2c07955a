"""The explorer's games in memory: every indexed game's record, and every position of them
once per game, sorted by Polyglot key (from `chesspipe explorer index`, read-only).

Games are numbered across months in order (month, then place in the month's source): a
larger number is a more recent game, as lila-openingexplorer's game index. For each
position, move, month, speed, rating group and tournament flag, lila-openingexplorer keeps
only the 8 most recent games (`MAX_LICHESS_GAMES`, src/model/lichess.rs): those are the
`picked` rows, the candidates of topGames and recentGames.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq

from pipelines.explorer.layout import explorer_months, games_file, positions_file
from schemas.dimensions import RATING_GROUPS, rating_group
from schemas.speed import Speed

#: Games kept per position, move, month, speed, rating group and flag (lila's
#: MAX_LICHESS_GAMES).
KEPT_PER_GROUP = 8
#: Speed names in index order (as the statistics index numbers them).
SPEED_NAMES = tuple(speed.value for speed in Speed)
#: lila-openingexplorer's group of an average of 2800 or more (`Group3200`): its lower bound
#: orders top games; a filter reads it as 2500.
TOP_BOUND = 3200
#: lila-openingexplorer's rating groups' lower bounds (`RatingGroup::ALL`).
LILA_BOUNDS = np.array((*RATING_GROUPS, 2800, TOP_BOUND))


def group_index(average: np.ndarray) -> np.ndarray:
    """The index in RATING_GROUPS of averages' groups."""
    bounds = rating_group(average)
    return np.searchsorted(np.array(RATING_GROUPS), bounds).astype(np.uint8)


def lila_bound(average: np.ndarray) -> np.ndarray:
    """lila-openingexplorer's group lower bound of averages (`RatingGroup::select_avg`)."""
    return np.where(average >= 2800, TOP_BOUND, rating_group(average)).astype(np.int16)


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
        speed_number = {name: i for i, name in enumerate(SPEED_NAMES)}
        self.speed = np.array([speed_number.get(s, 255) for s in joined("speed")], dtype=np.uint8)
        self.rated = joined("rated", bool)
        self.tournament = joined("tournament", bool)
        average = (np.maximum(self.white_elo, 0) + np.maximum(self.black_elo, 0)) // 2
        self.group = group_index(average)
        self.bound = lila_bound(average)
        self.year = np.array([_year(d) for d in self.dates], dtype=np.int32)
        self.by_id = {str(game_id): g for g, game_id in enumerate(self.ids)}
        self.players = _players(self.white, self.black)
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
        # Rows come in game order; a stable sort by key and group keeps it inside each group.
        code = (
            move.astype(np.uint64) << np.uint64(24)
            | self.month[game].astype(np.uint64) << np.uint64(8)
            | self.speed[game].astype(np.uint64) << np.uint64(4)
            | np.searchsorted(LILA_BOUNDS, self.bound[game]).astype(np.uint64)
        ) << np.uint64(1) | self.tournament[game].astype(np.uint64)
        order = np.lexsort((code, key))
        self.keys = key[order]
        self.moves = move[order]
        self.games = game[order]
        self.white_moved = (ply[order] % 2) == 0
        code = code[order]
        # The last KEPT_PER_GROUP rows of each run of equal (key, code) are picked.
        n = len(order)
        if n:
            starts = np.r_[True, (self.keys[1:] != self.keys[:-1]) | (code[1:] != code[:-1])]
            run_end = np.r_[np.flatnonzero(starts)[1:], n]
            end_of_row = np.repeat(run_end, np.diff(np.r_[np.flatnonzero(starts), n]))
            picked = end_of_row - np.arange(n) <= KEPT_PER_GROUP
        else:
            picked = np.zeros(0, dtype=bool)
        self.picked = np.flatnonzero(picked)
        self.picked_keys = self.keys[self.picked]

    @classmethod
    def load(cls, warehouse: Path) -> GamesIndex:
        return cls(warehouse, explorer_months(warehouse))

    def rows(self, key: int) -> slice:
        """The rows (of keys, moves, games) of a position."""
        value = np.uint64(key)
        low = int(np.searchsorted(self.keys, value, "left"))
        high = int(np.searchsorted(self.keys, value, "right"))
        return slice(low, high)

    def picked_rows(self, key: int) -> np.ndarray:
        """The picked rows of a position (indexes into keys, moves, games)."""
        value = np.uint64(key)
        low = int(np.searchsorted(self.picked_keys, value, "left"))
        high = int(np.searchsorted(self.picked_keys, value, "right"))
        return self.picked[low:high]

    def game_json(self, g: int, *, lichess: bool = True) -> dict[str, Any]:
        """A game as lila-openingexplorer's `ExplorerGame` (masters games have no speed nor
        mode; their month is their date's, if it has one)."""
        result = int(self.result[g])
        winner = "white" if result == 2 else "black" if result == 0 else None
        found: dict[str, Any] = {"id": str(self.ids[g]), "winner": winner}
        if lichess:
            found["speed"] = (
                Speed(SPEED_NAMES[self.speed[g]]).api_name if self.speed[g] < 6 else None
            )
            found["mode"] = "rated" if self.rated[g] else "casual"
        for side, names, elos in (
            ("white", self.white, self.white_elo),
            ("black", self.black, self.black_elo),
        ):
            rating = int(elos[g])
            found[side] = {"name": str(names[g]), "rating": rating if rating >= 0 else None}
        if lichess:
            month = self.months[self.month[g]]
            found["year"] = int(month[:4])
            found["month"] = month
        else:
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
    "result", "speed", "rated", "tournament",
)  # fmt: skip


def _year(date: str) -> int:
    head = date[:4]
    return int(head) if head.isascii() and head.isdigit() else -1


def _month_known(date: str) -> bool:
    return len(date) >= 7 and date[:4].isdigit() and date[5:7].isdigit() and date[5:7] != "00"


def _players(white: np.ndarray, black: np.ndarray) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Each player's games as White and as Black, by name in lower case (game numbers
    ascending)."""
    found: dict[str, tuple[list[int], list[int]]] = {}
    for g, name in enumerate(white):
        found.setdefault(str(name).lower(), ([], []))[0].append(g)
    for g, name in enumerate(black):
        found.setdefault(str(name).lower(), ([], []))[1].append(g)
    return {
        name: (np.array(w, dtype=np.uint32), np.array(b, dtype=np.uint32))
        for name, (w, b) in found.items()
    }


def counted_rows(index: GamesIndex, month_numbers: list[int]) -> dict[str, np.ndarray]:
    """The explorer's counts as statistics rows: per (key, move, month, speed, rating group,
    tournament flag) the results for the mover and the movers' rating sum, counted as lila
    counts (each position once per game). `month_numbers` renumbers the index's months."""
    n = len(index.keys)
    game = index.games
    if not n:
        return {}
    starts = np.r_[
        True,
        (index.keys[1:] != index.keys[:-1])
        | (index.moves[1:] != index.moves[:-1])
        | (index.month[game[1:]] != index.month[game[:-1]])
        | (index.speed[game[1:]] != index.speed[game[:-1]])
        | (index.group[game[1:]] != index.group[game[:-1]])
        | (index.tournament[game[1:]] != index.tournament[game[:-1]]),
    ]
    first = np.flatnonzero(starts)
    white = index.white_moved
    points = np.where(white, index.result[game], 2 - index.result[game].astype(np.int16))
    rating = np.where(white, index.white_elo[game], index.black_elo[game]).clip(0)
    reduce = np.add.reduceat
    return {
        "key": index.keys[first],
        "move": index.moves[first],
        "month": np.array(month_numbers, dtype=np.uint16)[index.month[game[first]]],
        "speed": index.speed[game[first]],
        "group": index.group[game[first]],
        "tournament": index.tournament[game[first]].astype(np.uint8),
        "wins": reduce((points == 2).astype(np.uint32), first),
        "draws": reduce((points == 1).astype(np.uint32), first),
        "losses": reduce((points == 0).astype(np.uint32), first),
        "rating_sum": reduce(rating.astype(np.uint64), first),
    }
