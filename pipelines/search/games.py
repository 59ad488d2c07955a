"""`chesspipe search`: the games of the warehouse's explored months whose positions match a
query (pipelines.search.query), streamed in the order of the months and of their games.

Each month's `explorer/month=YYYY-MM/games.parquet` is read a row group at a time: the games
the filters keep (speeds, ratings, a player) have their packed moves replayed by the compiled
scan (pipelines.search.scan) on `workers` threads at once (the scan runs without the GIL), in
order, at most two row groups a thread in flight: memory does not grow with the months. A
month's file is opened once and every row group read from that handle (at offsets, by each
thread's own reader), so a month indexed again meanwhile is read whole in the version first
opened; a file whose size is not its manifest's is refused. The matches' records are read on
the threads too.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipelines import arrow_arrays as arrays
from pipelines.errors import ChesspipeError, SettingError
from pipelines.explorer.layout import explorer_manifest_path, explorer_months, games_file
from pipelines.explorer.manifest import ExplorerManifest
from pipelines.search.query import Query
from pipelines.search.scan import scan_games
from pipelines.warehouse.months import missing_months, select_months
from schemas.packed_moves import start_board, unpack_moves
from schemas.speed import Speed

#: The columns a match reports, read for the games matched only.
MATCH_COLUMNS = ("id", "date", "white", "black", "white_elo", "black_elo", "result", "speed",
                 "event", "site", "round", "fen", "packed")  # fmt: skip
#: The columns the scan reads, and those each filter reads besides.
_SCAN_COLUMNS = ("packed", "fen", "result")
_FILTER_COLUMNS = {"speeds": ("speed",), "min_rating": ("white_elo", "black_elo"),
                   "player": ("white", "black")}  # fmt: skip


class GameMatch(NamedTuple):
    """A game that matched: its month and place there (seq), its record, and the ply at which
    each condition of the query matched (0: the start position)."""

    month: str
    seq: int
    id: str
    date: str
    white: str
    black: str
    white_elo: int | None
    black_elo: int | None
    result: str
    speed: str
    plies: tuple[int, ...]
    event: str
    site: str
    round: str
    #: The game's start when not the standard position, and its moves (schemas.packed_moves).
    fen: str | None
    packed: bytes
    chess960: bool

    def to_json(self) -> dict[str, object]:
        """The match as `search --format json` writes it (the moves left out)."""
        found = self._asdict()
        for name in ("event", "site", "round", "fen", "packed", "chess960"):
            del found[name]
        return found | {"plies": list(self.plies)}

    def pgn(self) -> str:
        """The game as PGN (its tags as kept, its moves unpacked by python-chess), a comment
        after the move into each matched position."""
        import chess.pgn

        board = start_board(self.fen, chess960=self.chess960)
        game = chess.pgn.Game.from_board(board)
        headers = {"Event": self.event, "Site": self.site, "Date": self.date,
                   "Round": self.round, "White": self.white, "Black": self.black,
                   "Result": self.result}  # fmt: skip
        game.headers.update(headers)
        for side, elo in (("WhiteElo", self.white_elo), ("BlackElo", self.black_elo)):
            if elo is not None:
                game.headers[side] = str(elo)
        if self.chess960:
            game.headers["Variant"] = "Chess960"
        node: chess.pgn.GameNode = game
        matched = set(self.plies)
        for ply, move in enumerate(unpack_moves(board, self.packed), start=1):
            node = node.add_variation(move)
            if ply in matched:
                node.comment = "matched"
        if 0 in matched:
            game.comment = "matched"
        return str(game)


@dataclass(frozen=True)
class SearchSettings:
    """Which games are searched: months (a selection, `all` by default), speeds (names, or
    `all`; None: all),
    both players rated at least `min_rating`, a player by name (either side, any case)."""

    months: str = "all"
    speeds: frozenset[str] | None = None
    min_rating: int = 0
    player: str | None = None

    def __post_init__(self) -> None:
        if self.speeds is not None:
            try:  # the speed names every command reads ("all" too)
                named = Speed.parse_many(self.speeds)
            except ValueError as exc:
                raise SettingError("SearchSettings", "speeds", says=str(exc)) from None
            if not named:
                raise SettingError("SearchSettings", "speeds", "must name one speed or more")
            object.__setattr__(self, "speeds", frozenset(speed.value for speed in named))
        if self.min_rating < 0:
            raise SettingError("SearchSettings", "min_rating", "must be 0 or more")


@dataclass
class SearchStats:
    """What a search read: months, games scanned (after the filters), positions replayed."""

    months: int = 0
    games: int = 0
    positions: int = 0
    matched: int = 0
    seconds: float = 0.0
    #: Months whose games keep no moves (indexed before they did, or with --no-games).
    without_moves: list[str] = field(default_factory=list)

    @property
    def positions_per_second(self) -> float:
        return self.positions / self.seconds if self.seconds > 0 else 0.0


_RESULT_TEXT = {2: "1-0", 1: "1/2-1/2", 0: "0-1"}


def search_games(
    warehouse: Path,
    query: Query,
    settings: SearchSettings | None = None,
    *,
    workers: int = 1,
    stats: SearchStats | None = None,
) -> Iterator[GameMatch]:
    """The games of `warehouse` that match `query`, in month and game order (the query's skip
    and limit applied). `stats`, when given, is filled in as the search goes."""
    settings = settings or SearchSettings()
    stats = stats if stats is not None else SearchStats()
    warehouse = Path(warehouse)
    available = explorer_months(warehouse)
    months = select_months(settings.months, available=available)
    missing = missing_months(months, available)
    if missing is not None:
        raise ChesspipeError(f"{missing} not explored in {warehouse} (chesspipe explorer index)")
    started = time.monotonic()
    skip, left = query.skip, query.limit
    if left == 0:
        return
    with ThreadPoolExecutor(max(1, workers)) as pool:
        for month in months:
            stats.months += 1
            for match in _search_month(warehouse, month, query, settings, pool, workers, stats):
                if skip:
                    skip -= 1
                    continue
                stats.matched += 1
                stats.seconds = time.monotonic() - started
                yield match
                if left is not None:
                    left -= 1
                    if left == 0:
                        return
    stats.seconds = time.monotonic() - started


class _Scanned(NamedTuple):
    """A row group's matches, and what was scanned."""

    matches: list[GameMatch]
    games: int
    positions: int


def _search_month(
    warehouse: Path,
    month: str,
    query: Query,
    settings: SearchSettings,
    pool: ThreadPoolExecutor,
    workers: int,
    stats: SearchStats,
) -> Iterator[GameMatch]:
    manifest = ExplorerManifest.read(explorer_manifest_path(warehouse, month))
    chess960 = manifest.settings.get("rules", {}).get("variant") == "chess960"
    path = games_file(warehouse, month)
    with pa.OSFile(str(path)) as opened:
        if opened.size() != manifest.games_bytes:
            raise ChesspipeError(
                f"{path} has {opened.size():,} bytes, its manifest says "
                f"{manifest.games_bytes:,}: the month is damaged (chesspipe warehouse check)"
            )
        games = pq.ParquetFile(opened)
        if "packed" not in games.schema_arrow.names or manifest.settings.get("games") is False:
            stats.without_moves.append(month)
            return
        columns = list(_SCAN_COLUMNS) + [
            column
            for name, read in _FILTER_COLUMNS.items()
            if getattr(settings, name) not in (None, 0)
            for column in read
        ]
        metadata = games.metadata
        starts = np.cumsum(
            [0] + [metadata.row_group(g).num_rows for g in range(games.num_row_groups)]
        )
        pending: deque[tuple[int, Future[_Scanned]]] = deque()
        groups = iter(range(games.num_row_groups))

        place = _Place(opened, metadata, month, chess960)

        def submit() -> None:
            for group in groups:
                task = partial(_scan, place, group, int(starts[group]), columns, query, settings)
                pending.append((group, pool.submit(task)))
                return

        for _ in range(2 * max(1, workers)):
            submit()
        while pending:
            group, future = pending.popleft()
            submit()
            scanned = future.result()
            stats.games += scanned.games
            stats.positions += scanned.positions
            yield from scanned.matches


class _Place(NamedTuple):
    """A month's games file being searched: the file opened once, its metadata, its month."""

    opened: pa.NativeFile
    metadata: pq.FileMetaData
    month: str
    chess960: bool

    def reader(self) -> pq.ParquetFile:
        """A reader of its own (a worker thread's) over the file, which reads at offsets."""
        return pq.ParquetFile(self.opened, metadata=self.metadata)


def _scan(
    place: _Place,
    group: int,
    first_seq: int,
    columns: list[str],
    query: Query,
    settings: SearchSettings,
) -> _Scanned:
    """Read one row group of a month's games, scan those the filters keep and make their
    matches (on a worker thread)."""
    reader = place.reader()
    table = reader.read_row_group(group, columns=columns)
    keep = _kept(table, settings)
    rows = np.arange(table.num_rows) if keep is None else np.flatnonzero(keep)
    if keep is not None:
        table = table.filter(arrays.booleans(keep))
    result = scan_games(
        table.column("packed").combine_chunks(),
        arrays.numbers(table.column("result")),
        query,
        starts=table.column("fen").to_pylist()
        if table.column("fen").null_count < table.num_rows
        else None,
        chess960=place.chess960,
        limit=None if query.limit is None else query.skip + query.limit,
    )
    found: list[GameMatch] = []
    if len(result.games):
        scanned = table.select(["fen", "packed"]).take(
            arrays.integers(result.games.astype(np.uint32))
        )
        found = _matches(place, reader, group, first_seq, rows[result.games], result.plies,
                         scanned)  # fmt: skip
    return _Scanned(found, table.num_rows, result.positions)


def _kept(table: pa.Table, settings: SearchSettings) -> np.ndarray | None:
    """Which rows the filters keep (None: all)."""
    masks: list[pa.ChunkedArray] = []
    if settings.speeds is not None:
        masks.append(pc.is_in(table.column("speed"), arrays.strings(sorted(settings.speeds))))
    if settings.min_rating:
        for side in ("white_elo", "black_elo"):
            masks.append(pc.fill_null(pc.greater_equal(table.column(side), settings.min_rating),
                                      False))  # fmt: skip
    if settings.player is not None:
        name = settings.player.lower()
        masks.append(
            pc.or_(pc.equal(pc.utf8_lower(table.column("white")), name),
                   pc.equal(pc.utf8_lower(table.column("black")), name))
        )  # fmt: skip
    if not masks:
        return None
    keep = masks[0]
    for mask in masks[1:]:
        keep = pc.and_(keep, mask)
    return arrays.truths(keep)


def _matches(
    place: _Place,
    reader: pq.ParquetFile,
    group: int,
    first_seq: int,
    rows: np.ndarray,
    plies: np.ndarray,
    scanned: pa.Table,
) -> list[GameMatch]:
    """The matches of a row group's rows: their records read for them alone, their moves and
    start as the scan read them (`scanned`, a row a match)."""
    records = [name for name in MATCH_COLUMNS if name not in scanned.column_names]
    table = reader.read_row_group(group, columns=records)
    table = table.take(arrays.integers(rows.astype(np.uint32)))
    for name in scanned.column_names:
        table = table.append_column(name, scanned.column(name))
    return [
        GameMatch(
            month=place.month,
            seq=first_seq + seq,
            id=row["id"],
            date=row["date"],
            white=row["white"],
            black=row["black"],
            white_elo=row["white_elo"],
            black_elo=row["black_elo"],
            result=_RESULT_TEXT.get(row["result"], "*"),
            speed=row["speed"],
            plies=tuple(found),
            event=row["event"],
            site=row["site"],
            round=row["round"],
            fen=row["fen"],
            packed=row["packed"],
            chess960=place.chess960,
        )
        for row, seq, found in zip(table.to_pylist(), rows.tolist(), plies.tolist(), strict=True)
    ]


def read_query_file(text: str) -> str:
    """A query given as text, or as @FILE (read from that file)."""
    if text.startswith("@"):
        try:
            return Path(text[1:]).read_text()
        except OSError as error:
            raise ChesspipeError(f"cannot read the query {text[1:]}: {error.strerror}") from None
    return text


def condition_json(
    *,
    fen: Sequence[str] = (),
    sub_fen: Sequence[str] = (),
    material: Sequence[str] = (),
    imbalance: Sequence[str] = (),
    stm: str | None = None,
    result: Sequence[str] = (),
) -> dict[str, object]:
    """One condition's JSON from the command line's rule flags (each repeatable: any)."""
    found: dict[str, object] = {}
    for key, values in (("fen", fen), ("sub-fen", sub_fen), ("material", material),
                        ("imbalance", imbalance), ("result", result)):  # fmt: skip
        if values:
            found[key] = list(values)
    if stm is not None:
        found["stm"] = stm
    return found
