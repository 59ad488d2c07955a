"""The explorer's counts of the months without explorer data, in memory, and how a request
sums a position's rows.

The months ingested but not indexed for the explorer are loaded once when the server starts
(DuckDB reads their move statistics and sums the rating bands away: the explorer filters by
Lichess's rating groups, not by bands) into NumPy columns sorted by key; a request finds its
position's rows by binary search. Their rows are counted the books' way (the plies ingest
counted, every visit of a position, no tournament flag: `NO_FLAG`). Months ingested before
`rating_group` and `rating_sum` were kept have no group (`NO_GROUP`) and no rating sum, and
`Totals` says which moves are missing them.

The months indexed for the explorer (`chesspipe explorer index`) are read from their lookup
files on disk instead (`pipelines.serve.lookup_store`), counted as lila-openingexplorer counts;
`sum_rows` sums a position's rows of both kinds alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np

from pipelines.explorer.lookup import SPEED_NAMES
from pipelines.serve.lookup_store import CountRows
from pipelines.warehouse.layout import available_months
from pipelines.warehouse.sql import DEFAULT_TIMEOUT, connect, time_limit
from schemas.dimensions import RATING_GROUPS

#: The group index of rows from months without rating groups.
NO_GROUP = 255
#: The tournament flag of rows from months without the explorer's data.
NO_FLAG = 2
#: Speed names in index order.


class Totals(NamedTuple):
    """A position's counts under a filter, per move and per month (mover's view)."""

    moves: np.ndarray  # Polyglot moves, ascending
    wins: np.ndarray  # per move
    draws: np.ndarray
    losses: np.ndarray
    rating_sum: np.ndarray  # per move, over the rows that have one
    unrated: np.ndarray  # per move: games from months without rating sums
    month_wins: np.ndarray  # per month of `StatsIndex.months`
    month_draws: np.ndarray
    month_losses: np.ndarray


@dataclass(frozen=True)
class Selection:
    """Which rows a request counts: boolean tables indexed by month, speed and group index."""

    months: np.ndarray
    speeds: np.ndarray
    groups: np.ndarray
    #: By tournament flag: not a tournament game, a tournament game, not known (NO_FLAG).
    flags: np.ndarray


def month_variant(warehouse: Path, month: str, explored: bool) -> str:
    """The variant of a month's games, as its explorer manifest (`explored`) or its ingest
    manifest records it ("standard" when neither says)."""
    from pipelines.explorer.manifest import ExplorerManifest
    from pipelines.ingest.manifest import read_manifest
    from pipelines.warehouse.explorer_files import explorer_manifest_path

    try:
        if explored:  # (its settings are ExplorerSettings.to_json()'s)
            indexed = ExplorerManifest.read(explorer_manifest_path(warehouse, month))
            variant = indexed.settings["rules"]["variant"]
        else:
            ingested = read_manifest(warehouse, month)
            variant = ingested.settings.rules.variant if ingested is not None else "standard"
    except (OSError, ValueError, KeyError, TypeError):
        return "standard"
    return variant if variant in ("standard", "chess960") else "standard"


class StatsIndex:
    """Every month's rows, summed per (key, move, month, speed, rating group), sorted by key."""

    def __init__(
        self,
        months: list[str],
        rated: list[bool],
        columns: dict[str, np.ndarray],
        explored: list[bool] | None = None,
        variants: list[str] | None = None,
    ):
        self.months = months
        #: Per month: the variant of its games (standard or chess960).
        self.variants = variants or ["standard"] * len(months)
        #: Per month: whether its rows have rating groups and rating sums.
        self.rated = np.array(rated, dtype=bool)
        #: Per month: whether its rows are the explorer's counts (else the move statistics').
        self.explored = np.array(explored or [False] * len(months), dtype=bool)
        self.tournament = columns.get("tournament", np.full(len(columns["key"]), NO_FLAG, np.uint8))
        self.keys = columns["key"]
        self.move = columns["move"]
        self.month = columns["month"]
        self.speed = columns["speed"]
        self.group = columns["group"]
        self.wins = columns["wins"]
        self.draws = columns["draws"]
        self.losses = columns["losses"]
        self.rating_sum = columns["rating_sum"]

    def __len__(self) -> int:
        return len(self.keys)

    @classmethod
    def load(cls, warehouse: Path, explored: Sequence[str] = ()) -> StatsIndex:
        """Read a warehouse's months (read-only): the move statistics of the months not in
        `explored` (those the explorer reads from their lookup files), numbered among all. A
        month is rated when all its rows have a rating group (months written before the
        column read it as null); an explored month is rated."""
        warehouse = Path(warehouse)
        explored = list(explored)
        stats_months = [m for m in available_months(warehouse) if m not in explored]
        months = sorted({*stats_months, *explored})
        found = cls._load_stats(warehouse, stats_months, months)
        found.variants = [month_variant(warehouse, m, m in explored) for m in months]
        found.explored = np.array([m in explored for m in months], dtype=bool)
        found.rated = found.rated | found.explored
        return found

    def column(self, name: str) -> np.ndarray:
        found: np.ndarray = getattr(self, "keys" if name == "key" else name)
        return found

    @classmethod
    def _load_stats(cls, warehouse: Path, stats_months: list[str], months: list[str]) -> StatsIndex:
        """The move statistics' rows of `stats_months`, numbered among `months`."""
        dtypes = {
            "key": np.uint64,
            "move": np.uint16,
            "month": np.uint16,
            "speed": np.uint8,
            "group": np.uint8,
            "wins": np.uint32,
            "draws": np.uint32,
            "losses": np.uint32,
            "rating_sum": np.uint64,
        }
        if not stats_months:
            empty = {name: np.zeros(0, dtype=t) for name, t in dtypes.items()}
            return cls(months, [False] * len(months), empty)
        con = connect(warehouse, threads=2)
        try:
            names = {row[0] for row in con.execute("DESCRIBE move_stats").fetchall()}
            rated_rows = "rating_group" in names
            group = "rating_group" if rated_rows else "NULL::USMALLINT"
            rating_sum = "rating_sum" if rated_rows else "NULL::UBIGINT"
            sql = f"""
                SELECT key, move, list_position($months, month) - 1 AS month,
                    list_position($speeds, speed) - 1 AS speed,
                    coalesce(list_position($groups, {group}) - 1, {NO_GROUP}) AS "group",
                    sum(wins) AS wins, sum(draws) AS draws, sum(losses) AS losses,
                    coalesce(sum({rating_sum}), 0) AS rating_sum
                FROM move_stats WHERE month IN (SELECT unnest($chosen))
                GROUP BY ALL ORDER BY key
            """
            with time_limit(con, DEFAULT_TIMEOUT):  # as long as `chesspipe sql` lets a query run
                found = con.execute(
                    sql,
                    {
                        "months": months,
                        "chosen": stats_months,
                        "speeds": list(SPEED_NAMES),
                        "groups": list(RATING_GROUPS),
                    },
                ).fetchnumpy()
        finally:
            con.close()
        columns = {name: np.asarray(found[name], dtype=t) for name, t in dtypes.items()}
        unrated = columns["month"][columns["group"] == NO_GROUP]
        rated = np.bincount(unrated, minlength=len(months)) == 0
        columns["tournament"] = np.full(len(columns["key"]), NO_FLAG, dtype=np.uint8)
        return cls(months, rated.tolist(), columns)

    def select(
        self,
        *,
        since: str | None = None,
        until: str | None = None,
        speeds: tuple[str, ...] = (),
        groups: tuple[int, ...] = (),
        tournament: bool | None = None,
        variant: str | None = None,
    ) -> Selection:
        """The rows of the months inside since/until and of the variant (None: any), of the
        speeds and groups (all if empty), tournament games or the others (None: both)."""
        months = np.array(
            [
                (since is None or m >= since)
                and (until is None or m <= until)
                and (variant is None or v == variant)
                for m, v in zip(self.months, self.variants, strict=True)
            ],
            dtype=bool,
        )
        speed_ok = np.array([not speeds or name in speeds for name in SPEED_NAMES], dtype=bool)
        group_ok = np.zeros(NO_GROUP + 1, dtype=bool)
        for index, bound in enumerate(RATING_GROUPS):
            group_ok[index] = not groups or bound in groups
        group_ok[NO_GROUP] = not groups
        flags = np.array([tournament is not True, tournament is not False, tournament is None])
        return Selection(months, speed_ok, group_ok, flags)

    def rows(self, key: int) -> CountRows:
        """A position's rows (the move statistics' months)."""
        value = np.uint64(key)
        low = int(np.searchsorted(self.keys, value, "left"))
        high = int(np.searchsorted(self.keys, value, "right"))
        part = slice(low, high)
        return CountRows(
            self.move[part], self.month[part].astype(np.int64), self.speed[part],
            self.group[part], self.tournament[part], self.wins[part], self.draws[part],
            self.losses[part], self.rating_sum[part],
        )  # fmt: skip

    def totals(self, key: int, selection: Selection, more: CountRows | None = None) -> Totals:
        """A position's counts per move and per month under a selection (with `more` rows:
        the explored months')."""
        rows = self.rows(key)
        if more is not None and len(more.move):
            rows = CountRows(*(np.concatenate([a, b]) for a, b in zip(rows, more, strict=True)))
        return sum_rows(rows, selection, self.rated)

    def unexplored_months(self, selection: Selection) -> list[str]:
        """The selected months counted from the move statistics (no explorer data)."""
        chosen = zip(self.months, selection.months, self.explored, strict=True)
        return [month for month, on, explored in chosen if on and not explored]

    def unrated_months(self, selection: Selection) -> list[str]:
        """The selected months whose rows have no rating groups nor rating sums."""
        chosen = zip(self.months, selection.months, self.rated, strict=True)
        return [month for month, on, rated in chosen if on and not rated]


def sum_rows(rows: CountRows, selection: Selection, rated: np.ndarray) -> Totals:
    """Rows' counts per move and per month under a selection (`rated`: per month, whether its
    rows have rating sums)."""
    month = rows.month
    keep = (
        selection.months[month]
        & selection.speeds[rows.speed]
        & selection.groups[rows.group]
        & selection.flags[rows.tournament]
    )
    month = month[keep]
    moves, inverse = np.unique(rows.move[keep], return_inverse=True)
    counts = []
    for column in (rows.wins, rows.draws, rows.losses):
        values = column[keep]
        counts.append(np.bincount(inverse, weights=values, minlength=len(moves)))
        counts.append(np.bincount(month, weights=values, minlength=len(selection.months)))
    games = sum(column[keep].astype(np.int64) for column in (rows.wins, rows.draws, rows.losses))
    unrated = np.bincount(inverse, weights=np.where(rated[month], 0, games), minlength=len(moves))
    rating_sum = np.bincount(inverse, weights=rows.rating_sum[keep], minlength=len(moves))
    as_int = [np.rint(c).astype(np.int64) for c in counts]
    return Totals(
        moves, as_int[0], as_int[2], as_int[4], rating_sum, np.rint(unrated).astype(np.int64),
        as_int[1], as_int[3], as_int[5],
    )  # fmt: skip
