"""The explorer's months read from their files on disk (`pipelines.explorer.lookup`).

A request reads its position's rows of the months it asks for from each place that holds them
(a month's files, or a compacted year's): its counts from the block file `counts.bin`, its
games' records from the months' `records.bin`, a player's games from `lookup.duckdb` (one
DuckDB connection, held to a memory limit, attaches every lookup file read-only; each thread
asks through a cursor of its own). It reads a few blocks, never the whole data, so the
server's memory does not grow with the games. A file not of the size its manifest records, or
of another layout, is refused when the server starts (`DamagedLookup`, one line naming it); a
block damaged since fails its checksum when read, so a damaged file answers an error, never a
wrong count.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import NamedTuple

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipelines.errors import ChesspipeError
from pipelines.explorer.blocks import BlockReader, DamagedBlocks
from pipelines.explorer.compact import YearFile
from pipelines.explorer.layout import ServedFiles
from pipelines.explorer.lookup import LOOKUP_VERSION, month_number
from pipelines.explorer.records import Record, RecordsReader
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


def group_of_bound(bound: np.ndarray) -> np.ndarray:
    """The index in RATING_GROUPS of lila's rating bounds (3200 counts as 2500's group)."""
    groups = np.array(RATING_GROUPS)
    return (np.searchsorted(groups, np.minimum(bound, groups[-1]), "right") - 1).astype(np.uint8)


def game_order(month: np.ndarray, seq: np.ndarray) -> np.ndarray:
    """Games' order across months (a later game larger), from their month and place."""
    return month.astype(np.int64) << np.int64(32) | seq.astype(np.int64)


class _Place(NamedTuple):
    """Files read for some months: a month's own, or a compacted year's."""

    alias: str  # the lookup file's name in the connection
    counts: BlockReader
    serves: frozenset[str]  # the months read here
    holds: frozenset[str]  # every month the files hold


class LookupMonths:
    """The months of a warehouse's explorer, read from their lookup files."""

    def __init__(
        self,
        files: dict[str, ServedFiles],
        months: list[str],
        *,
        years: Sequence[YearFile] = (),
        memory_limit: int = SERVE_MEMORY,
    ) -> None:
        """`files`: each explored month's files; `months`: every month the explorer answers
        (numbering the rows); `years`: compacted years, each read for the months it still
        matches instead of their own files."""
        self.months = sorted(files)
        self._number = {month: months.index(month) for month in self.months}
        self._by_number = {month_number(m): self._number[m] for m in self.months}
        self._names = {number: month for month, number in self._number.items()}
        resources = QueryResources(memory_limit=memory_limit)
        self._con = resources.connect(threads=1)
        self._local = threading.local()
        self._records: dict[str, RecordsReader] = {}
        self._places: list[_Place] = []
        try:
            by_year: set[str] = set()
            for year in years:
                fresh = frozenset(m for m in year.fresh if m in files)
                if fresh:
                    place = self._open_place(f"y{year.year}", year.path, year.size,
                                             year.counts, year.counts_size)  # fmt: skip
                    self._places.append(place._replace(serves=fresh, holds=frozenset(year.months)))
                    by_year |= fresh
            for month, served in sorted(files.items()):
                _check_size(served.records, served.records_bytes)
                try:
                    self._records[month] = RecordsReader(served.records)
                except (OSError, DamagedBlocks) as exc:
                    raise DamagedLookup(_damaged(served.records, exc)) from None
                if month not in by_year:
                    place = self._open_place(f"m{month_number(month)}", served.lookup,
                                             served.lookup_bytes, served.counts,
                                             served.counts_bytes)  # fmt: skip
                    one = frozenset([month])
                    self._places.append(place._replace(serves=one, holds=one))
        except BaseException:
            self.close()
            raise

    def _open_place(
        self, alias: str, lookup: Path, size: int | None, counts: Path, counts_size: int | None
    ) -> _Place:
        """Attach a lookup file read-only as `alias` and open its counts file (each of the
        size recorded, unless None)."""
        _check_size(lookup, size)
        _check_size(counts, counts_size)
        try:
            self._con.execute(f"ATTACH '{_quoted(lookup)}' AS {alias} (READ_ONLY)")
            version = self._con.execute(f"SELECT version FROM {alias}.meta").fetchone()
        except duckdb.Error as exc:
            raise DamagedLookup(_damaged(lookup, exc)) from None
        if version is None or version[0] != LOOKUP_VERSION:
            raise DamagedLookup(
                f"explorer lookup file {lookup} has layout {version and version[0]}, not "
                f"{LOOKUP_VERSION}: index the month again (chesspipe explorer index)"
            )
        try:
            reader = BlockReader(counts, "key")
        except (OSError, DamagedBlocks) as exc:
            raise DamagedLookup(_damaged(counts, exc)) from None
        return _Place(alias, reader, frozenset(), frozenset())

    def close(self) -> None:
        self._con.close()
        for reader in self._records.values():
            reader.close()
        for place in self._places:
            place.counts.close()
        self._records = {}
        self._places = []

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

    def _chosen(self, months: list[str]) -> Iterator[tuple[_Place, frozenset[str]]]:
        """The places that answer for some of `months`, each with those months."""
        wanted = set(months)
        for place in self._places:
            chosen = place.serves & wanted
            if chosen:
                yield place, chosen

    def _union(self, months: list[str], select: str, month: str = "month") -> str:
        """`select` (with `{m}` for a file's alias, ending in a WHERE clause) over the files
        that hold the months, as one query: a file that holds others too is asked for these
        months' rows."""
        parts = []
        for place, chosen in self._chosen(months):
            part = select.format(m=place.alias)
            if chosen != place.holds:
                numbers = ", ".join(str(month_number(m)) for m in sorted(chosen))
                part += f" AND {month} IN ({numbers})"
            parts.append(part)
        return " UNION ALL ".join(parts)

    def counts(self, key: int, months: list[str]) -> tuple[CountRows, Candidates]:
        """A position's counted rows and candidate games in `months` (explored ones)."""
        parts = []
        for place, chosen in self._chosen(months):
            try:
                found = place.counts.rows(key)
            except DamagedBlocks as exc:
                raise DamagedLookup(f"explorer counts cannot be read: {exc}") from None
            if found is None:
                continue
            if chosen != place.holds:
                numbers = pa.array(sorted(month_number(m) for m in chosen), pa.uint16())
                found = found.filter(pc.is_in(found.column("month"), value_set=numbers))
            parts.append(found)
        if not parts:
            return _empty_counts(), _empty_candidates()
        table = pa.concat_tables(parts)
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
        if not len(numbers):
            return np.zeros(0, dtype=np.int64)
        found, inverse = np.unique(numbers, return_inverse=True)
        table = self._by_number
        return np.array([table[int(n)] for n in found], dtype=np.int64)[inverse]

    def games(self, wanted: list[tuple[int, int]]) -> dict[tuple[int, int], Record]:
        """Records of games by (month as the explorer numbers it, seq)."""
        names = self.months_by_number
        try:
            return {(month, seq): self._records[names[month]].get(seq) for month, seq in wanted}
        except DamagedBlocks as exc:
            raise DamagedLookup(f"explorer game records cannot be read: {exc}") from None

    @property
    def months_by_number(self) -> dict[int, str]:
        """The explored months by their number among the explorer's."""
        return self._names

    def player(self, key: int, name: str, white: bool, months: list[str]) -> PlayerRows:
        """A player's games through a position in `months`, as White or as Black."""
        months = [m for m in months if m in self._records]
        if not months:
            return _empty_player()
        sql = self._union(
            months,
            "SELECT p.move, pl.result, pl.opponent, pl.month, pl.seq, pl.speed, pl.rated "
            "FROM {m}.positions p JOIN {m}.players pl ON pl.month = p.month AND pl.seq = p.seq "
            "WHERE p.key = $key AND pl.name = lower($name) AND pl.white = $white",
            "p.month",
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
        return sum(reader.count for reader in self._records.values())


def check_lookups(files: dict[str, ServedFiles]) -> None:
    """Refuse (DamagedLookup) files not of their recorded size or layout."""
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


def _check_size(path: Path, size: int | None) -> None:
    """Refuse a file not of the size its manifest records (None: not recorded)."""
    try:
        found = path.stat().st_size
    except OSError as exc:
        raise DamagedLookup(f"explorer file {path}: {exc.strerror}") from None
    if size is not None and found != size:
        raise DamagedLookup(
            f"explorer file {path} is {found:,} bytes, its manifest records {size:,}: damaged; "
            "run chesspipe warehouse check"
        )


def _damaged(path: Path, error: BaseException) -> str:
    text = _line(error)
    return text if str(path) in text else f"explorer file {path} cannot be read: {text}"


def _quoted(path: Path) -> str:
    return str(path).replace("'", "''")


def _line(error: BaseException) -> str:
    return " ".join(str(error).split())
