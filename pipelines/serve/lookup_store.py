"""The explorer's months read from their lookup files (`pipelines.explorer.lookup`), on disk.

One DuckDB connection, held to a memory limit, attaches every month's lookup file read-only;
a request reads its position's rows of the months it asks for (a few blocks of each file,
found by the files' sort order), never the whole data, so the server's memory does not grow
with the games. Each thread asks through a cursor of its own. A file that is not the size its
manifest records, or of another layout, is refused when the server starts (`DamagedLookup`,
one line naming it); a block damaged since fails its checksum when read, so a damaged file
answers an error, never a wrong count.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import NamedTuple

import duckdb
import numpy as np
import pyarrow as pa

from pipelines.errors import ChesspipeError
from pipelines.explorer.lookup import LOOKUP_VERSION, month_number
from pipelines.warehouse.resources import QueryResources
from schemas.dimensions import RATING_GROUPS

#: The memory DuckDB may hold for the server's reads (its block cache) by default.
SERVE_MEMORY = 256 << 20


class DamagedLookup(ChesspipeError):
    """A month's lookup file is not the one its manifest describes."""


class CountRows(NamedTuple):
    """A position's counted rows: per (move, month, speed, rating group, tournament flag) the
    results for the mover and the movers' rating sum. `month` numbers the explorer's months."""

    move: np.ndarray  # uint16 Polyglot moves
    month: np.ndarray  # int64
    speed: np.ndarray  # uint8 index in SPEED_NAMES
    group: np.ndarray  # uint8 index in RATING_GROUPS
    tournament: np.ndarray  # uint8: 0 not a tournament game, 1 one, 2 not known
    wins: np.ndarray
    draws: np.ndarray
    losses: np.ndarray
    rating_sum: np.ndarray


class Candidates(NamedTuple):
    """A position's candidate games (the most recent of each counted group): for each, the
    move played, the group it was counted in and the game's place."""

    move: np.ndarray  # uint16
    month: np.ndarray  # int64, numbering the explorer's months
    speed: np.ndarray  # uint8
    group: np.ndarray  # uint8
    tournament: np.ndarray  # uint8
    bound: np.ndarray  # int16: lila's rating bound (3200: an average of 2800 or more)
    seq: np.ndarray  # int64: the game's place in its month
    order: np.ndarray  # int64: later games larger, across months


class PlayerRows(NamedTuple):
    """A player's games through a position (each once): the move played, White's points and
    the opponent's rating (-1: none), the game's month (numbering the explorer's months),
    place, speed and mode."""

    move: np.ndarray
    result: np.ndarray
    opponent: np.ndarray
    month: np.ndarray
    seq: np.ndarray
    speed: np.ndarray
    rated: np.ndarray


class LookupGame(NamedTuple):
    """What an answer shows of a game (a lookup file's `games`; ratings None when missing)."""

    id: str
    white: str
    black: str
    white_elo: int | None
    black_elo: int | None
    result: int  # White's points: 2, 1 or 0
    speed: int  # index in SPEED_NAMES (255: none)
    rated: bool


def group_of_bound(bound: np.ndarray) -> np.ndarray:
    """The index in RATING_GROUPS of lila's rating bounds (3200 counts as 2500's group)."""
    groups = np.array(RATING_GROUPS)
    return (np.searchsorted(groups, np.minimum(bound, groups[-1]), "right") - 1).astype(np.uint8)


def game_order(month: np.ndarray, seq: np.ndarray) -> np.ndarray:
    """Games' order across months (a later game larger), from their month and place."""
    return month.astype(np.int64) << np.int64(32) | seq.astype(np.int64)


class LookupMonths:
    """The months of a warehouse's explorer, read from their lookup files."""

    def __init__(
        self,
        files: dict[str, tuple[Path, int | None]],
        months: list[str],
        *,
        memory_limit: int = SERVE_MEMORY,
    ) -> None:
        """`files`: each explored month's lookup file and the size its manifest records (None:
        not recorded); `months`: every month the explorer answers (numbering the rows)."""
        self.months = sorted(files)
        self._number = {month: months.index(month) for month in self.months}
        self._alias = {month: f"m{month_number(month)}" for month in self.months}
        self._by_number = {month_number(m): self._number[m] for m in self.months}
        resources = QueryResources(memory_limit=memory_limit)
        self._con = resources.connect(threads=1)
        self._local = threading.local()
        for month, (path, size) in files.items():
            self._attach(month, path, size)

    def _attach(self, month: str, path: Path, size: int | None) -> None:
        try:
            found = path.stat().st_size
        except OSError as exc:
            raise DamagedLookup(f"explorer lookup file {path}: {exc.strerror}") from None
        if size is not None and found != size:
            raise DamagedLookup(
                f"explorer lookup file {path} is {found:,} bytes, its manifest records "
                f"{size:,}: damaged; run chesspipe warehouse check"
            )
        alias = self._alias[month]
        try:
            self._con.execute(f"ATTACH '{_quoted(path)}' AS {alias} (READ_ONLY)")
            version = self._con.execute(f"SELECT version FROM {alias}.meta").fetchone()
        except duckdb.Error as exc:
            raise DamagedLookup(
                f"explorer lookup file {path} cannot be read: {_line(exc)}"
            ) from None
        if version is None or version[0] != LOOKUP_VERSION:
            raise DamagedLookup(
                f"explorer lookup file {path} has layout {version and version[0]}, not "
                f"{LOOKUP_VERSION}: index the month again (chesspipe explorer index)"
            )

    def close(self) -> None:
        self._con.close()

    def _cursor(self) -> duckdb.DuckDBPyConnection:
        cursor: duckdb.DuckDBPyConnection | None = getattr(self._local, "cursor", None)
        if cursor is None:
            cursor = self._local.cursor = self._con.cursor()
        return cursor

    def _query(self, sql: str, params: dict[str, int | str | bool]) -> pa.Table:
        try:
            return self._cursor().sql(sql, params=params).to_arrow_table()
        except duckdb.Error as exc:
            raise DamagedLookup(f"explorer lookup files cannot be read: {_line(exc)}") from None

    def _union(self, months: list[str], select: str) -> str:
        """`select` (with `{m}` for a month's alias) over the months, as one query."""
        return " UNION ALL ".join(select.format(m=self._alias[month]) for month in months)

    def counts(self, key: int, months: list[str]) -> tuple[CountRows, Candidates]:
        """A position's counted rows and candidate games in `months` (explored ones)."""
        months = [m for m in months if m in self._alias]
        if not months:
            return _empty_counts(), _empty_candidates()
        sql = self._union(
            months,
            "SELECT move, month, speed, bound, tournament, wins, draws, losses, rating_sum, "
            "games FROM {m}.counts WHERE key = $key",
        )
        table = self._query(sql, {"key": key})
        month = self._renumber(table.column("month").to_numpy())
        bound = table.column("bound").to_numpy().astype(np.int16)
        group = group_of_bound(bound)
        speed = table.column("speed").to_numpy().astype(np.uint8)
        flag = table.column("tournament").to_numpy(zero_copy_only=False).astype(np.uint8)
        move = table.column("move").to_numpy().astype(np.uint16)
        rows = CountRows(
            move, month, speed, group, flag,
            table.column("wins").to_numpy().astype(np.int64),
            table.column("draws").to_numpy().astype(np.int64),
            table.column("losses").to_numpy().astype(np.int64),
            table.column("rating_sum").to_numpy().astype(np.int64),
        )  # fmt: skip
        games = table.column("games").combine_chunks()
        lengths = np.diff(games.offsets.to_numpy())
        seq = games.values.to_numpy().astype(np.int64)
        each = np.repeat(np.arange(len(table)), lengths)
        raw_month = np.repeat(table.column("month").to_numpy().astype(np.int64), lengths)
        candidates = Candidates(
            move[each], month[each], speed[each], group[each], flag[each], bound[each], seq,
            game_order(raw_month, seq),
        )  # fmt: skip
        return rows, candidates

    def _renumber(self, numbers: np.ndarray) -> np.ndarray:
        """Lookup files' month numbers as the explorer's."""
        table = self._by_number
        return np.array([table[int(n)] for n in numbers], dtype=np.int64)

    def games(self, wanted: list[tuple[int, int]]) -> dict[tuple[int, int], LookupGame]:
        """Records of games by (month as the explorer numbers it, seq): the fields of an
        answer's games."""
        by_month: dict[str, list[int]] = {}
        names = self.months_by_number
        for number, seq in wanted:
            by_month.setdefault(names[number], []).append(seq)
        if not by_month:
            return {}
        parts = []
        for name, seqs in by_month.items():
            alias = self._alias[name]
            parts.append(
                "SELECT month, seq, id, white, black, white_elo, black_elo, result, speed, "
                f"rated FROM {alias}.games WHERE seq IN ({', '.join(str(int(s)) for s in seqs)})"
            )
        sql = " UNION ALL ".join(parts)
        table = self._query(sql, {})
        return {
            (self._by_number[row.pop("month")], row.pop("seq")): LookupGame(**row)
            for row in table.to_pylist()
        }

    @property
    def months_by_number(self) -> dict[int, str]:
        return {number: month for month, number in self._number.items()}

    def player(self, key: int, name: str, white: bool, months: list[str]) -> PlayerRows:
        """A player's games through a position in `months`, as White or as Black."""
        months = [m for m in months if m in self._alias]
        if not months:
            return _empty_player()
        sql = self._union(
            months,
            "SELECT p.move, pl.result, pl.opponent, pl.month, pl.seq, pl.speed, pl.rated "
            "FROM {m}.positions p JOIN {m}.players pl ON pl.seq = p.seq "
            "WHERE p.key = $key AND pl.name = lower($name) AND pl.white = $white",
        )
        table = self._query(sql, {"key": key, "name": name, "white": white})
        opponent = table.column("opponent").to_numpy(zero_copy_only=False)
        return PlayerRows(
            table.column("move").to_numpy().astype(np.uint16),
            table.column("result").to_numpy().astype(np.int64),
            np.where(np.isnan(opponent.astype(float)), -1, opponent).astype(np.int64)
            if len(opponent) else np.zeros(0, np.int64),
            self._renumber(table.column("month").to_numpy()),
            table.column("seq").to_numpy().astype(np.int64),
            table.column("speed").to_numpy().astype(np.uint8),
            table.column("rated").to_numpy(zero_copy_only=False).astype(bool),
        )  # fmt: skip

    def game_count(self) -> int:
        """The games of every month."""
        if not self.months:
            return 0
        sql = self._union(self.months, "SELECT count(*) AS n FROM {m}.games")
        return int(sum(self._query(sql, {}).column("n").to_pylist()))


def check_lookups(files: dict[str, tuple[Path, int | None]]) -> None:
    """Refuse (DamagedLookup) lookup files not of their recorded size or layout."""
    LookupMonths(files, sorted(files)).close()


def _empty_counts() -> CountRows:
    z = np.zeros(0, dtype=np.int64)
    return CountRows(z.astype(np.uint16), z, z.astype(np.uint8), z.astype(np.uint8),
                     z.astype(np.uint8), z, z, z, z)  # fmt: skip


def _empty_candidates() -> Candidates:
    z = np.zeros(0, dtype=np.int64)
    return Candidates(z.astype(np.uint16), z, z.astype(np.uint8), z.astype(np.uint8),
                      z.astype(np.uint8), z.astype(np.int16), z, z)  # fmt: skip


def _empty_player() -> PlayerRows:
    z = np.zeros(0, dtype=np.int64)
    return PlayerRows(z.astype(np.uint16), z, z, z, z, z.astype(np.uint8), z.astype(bool))


def _quoted(path: Path) -> str:
    return str(path).replace("'", "''")


def _line(error: BaseException) -> str:
    return " ".join(str(error).split())
