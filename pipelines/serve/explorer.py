"""The lila-openingexplorer API (`/lichess`) over the warehouse's move statistics.

What the statistics allow, and where the answer differs from explorer.lichess.ovh:

- `ratings` picks Lichess rating groups (0, 1000, 1200, 1400, 1600, 1800, 2000, 2200, 2500).
  Lichess files a game under the group of the players' *average* rating; the warehouse keeps
  the *lower* player's rating floored to 100 (`rating_band`). A group is answered with the
  bands inside it (group 1600: bands 1600 and 1700; group 2500: bands 2500 and above), so a
  game counts under its weaker player's group.
- `averageRating` is null: the bands cannot give Lichess's mean rating of the games. It needs
  a `rating_sum` column (sum of both players' average rating per row) and a re-ingest of every
  month.
- `topGames` and `recentGames` are empty (no game ids are kept); moves after the counted plies
  (20 by default) have no statistics.
- Counts are from White's view (`white`, `draws`, `black`), converted from the mover's view.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import chess
import chess.polyglot

from pipelines.warehouse.layout import available_months
from pipelines.warehouse.openings import names_by_key
from pipelines.warehouse.sql import connect
from schemas.polyglot import decode_move

#: Lichess's explorer speeds and the warehouse's names for them.
SPEEDS = {
    "ultraBullet": "ultrabullet",
    "bullet": "bullet",
    "blitz": "blitz",
    "rapid": "rapid",
    "classical": "classical",
    "correspondence": "correspondence",
}
#: Lichess's rating groups (lower bounds); a group ends where the next begins.
RATING_GROUPS = (0, 1000, 1200, 1400, 1600, 1800, 2000, 2200, 2500)
CACHE_SIZE = 4096


class BadRequest(ValueError):
    """A request the API refuses (HTTP 400), with the reason."""


@dataclass(frozen=True)
class Query:
    """An explorer request, validated."""

    variant: str
    fen: str
    play: tuple[str, ...]
    speeds: tuple[str, ...]  # warehouse names; empty: all
    groups: tuple[int, ...]  # rating groups; empty: all
    since: str | None
    until: str | None
    moves: int | None
    history: bool


def _month(value: str | None, name: str) -> str | None:
    if not value:
        return None
    text = value[:7]
    parts = text.split("-")
    if len(parts) != 2 or not all(p.isdigit() for p in parts) or len(parts[0]) != 4:
        raise BadRequest(f"{name} must be YYYY-MM, not {value!r}")
    if not 1 <= int(parts[1]) <= 12:
        raise BadRequest(f"{name} must be YYYY-MM, not {value!r}")
    return text


def parse_query(params: dict[str, str]) -> Query:
    """Validate the query string of a `/lichess` request."""
    variant = params.get("variant") or "standard"
    if variant not in ("standard", "chess960"):
        raise BadRequest(f"variant {variant!r} not supported; use standard or chess960")
    fen = (params.get("fen") or chess.STARTING_FEN).replace("_", " ")
    play = tuple(m for m in (params.get("play") or "").split(",") if m)
    speeds = []
    for name in (params.get("speeds") or "").split(","):
        if name:
            if name not in SPEEDS:
                raise BadRequest(f"unknown speed {name!r}; choose from {', '.join(SPEEDS)}")
            speeds.append(SPEEDS[name])
    groups = []
    for text in (params.get("ratings") or "").split(","):
        if text:
            if not text.isdigit() or int(text) not in RATING_GROUPS:
                raise BadRequest(
                    f"unknown rating group {text!r}; choose from "
                    f"{', '.join(map(str, RATING_GROUPS))}"
                )
            groups.append(int(text))
    moves = params.get("moves")
    if moves is not None and moves != "":
        if not moves.isdigit():
            raise BadRequest(f"moves must be a non-negative number, not {moves!r}")
        count: int | None = int(moves)
    else:
        count = None
    history = (params.get("history") or "").lower() in ("true", "1", "yes")
    return Query(
        variant, fen, play, tuple(sorted(set(speeds))), tuple(sorted(set(groups))),
        _month(params.get("since"), "since"), _month(params.get("until"), "until"), count,
        history,
    )  # fmt: skip


def board_of(query: Query) -> tuple[chess.Board, list[chess.Board]]:
    """The position asked for and every position on the way (the FEN's first)."""
    try:
        board = chess.Board(query.fen, chess960=query.variant == "chess960")
    except ValueError as exc:
        raise BadRequest(f"invalid fen: {exc}") from None
    if board.status() != chess.STATUS_VALID:
        raise BadRequest(f"invalid fen: not a legal position ({query.fen})")
    path = [board.copy(stack=False)]
    for text in query.play:
        try:
            move = board.parse_uci(text)
        except ValueError:
            raise BadRequest(f"illegal move {text!r} in play from {board.fen()}") from None
        board.push(move)
        path.append(board.copy(stack=False))
    return board, path


def band_ranges(groups: tuple[int, ...]) -> list[tuple[int, int]]:
    """The rating bands (lower bound, upper bound exclusive) a list of groups covers."""
    ranges = []
    for group in groups:
        index = RATING_GROUPS.index(group)
        upper = RATING_GROUPS[index + 1] if index + 1 < len(RATING_GROUPS) else 100_000
        ranges.append((group, upper))
    return ranges


class Explorer:
    """Answers `/lichess` requests from a warehouse, read-only."""

    def __init__(self, warehouse: Path) -> None:
        self.warehouse = Path(warehouse)
        self.months = available_months(self.warehouse)
        self.con = connect(self.warehouse)
        self._local = threading.local()
        self._cache: OrderedDict[tuple[Any, ...], list[tuple[Any, ...]]] = OrderedDict()
        self._cache_lock = threading.Lock()
        self._names: dict[int, tuple[str, str]] | None = None

    def close(self) -> None:
        self.con.close()

    def _cursor(self) -> Any:
        cursor = getattr(self._local, "cursor", None)
        if cursor is None:
            cursor = self._local.cursor = self.con.cursor()
        return cursor

    def rows(self, key: int, query: Query) -> list[tuple[Any, ...]]:
        """(move, month, wins, draws, losses) of a position under the request's filters."""
        cache_key = (key, query.speeds, query.groups, query.since, query.until)
        with self._cache_lock:
            found = self._cache.get(cache_key)
            if found is not None:
                self._cache.move_to_end(cache_key)
                return found
        where = ["key = ?"]
        args: list[Any] = [key]
        if query.speeds:
            where.append(f"speed IN ({', '.join('?' for _ in query.speeds)})")
            args.extend(query.speeds)
        if query.groups:
            ranges = band_ranges(query.groups)
            where.append(
                "(" + " OR ".join("(rating_band >= ? AND rating_band < ?)" for _ in ranges) + ")"
            )
            for low, high in ranges:
                args.extend((low, high))
        if query.since:
            where.append("month >= ?")
            args.append(query.since)
        if query.until:
            where.append("month <= ?")
            args.append(query.until)
        sql = (
            "SELECT move, month, sum(wins)::BIGINT, sum(draws)::BIGINT, sum(losses)::BIGINT "
            f"FROM move_stats WHERE {' AND '.join(where)} GROUP BY move, month"
        )
        result = [tuple(row) for row in self._cursor().execute(sql, args).fetchall()]
        with self._cache_lock:
            self._cache[cache_key] = result
            if len(self._cache) > CACHE_SIZE:
                self._cache.popitem(last=False)
        return result

    def opening_names(self) -> dict[int, tuple[str, str]]:
        """Polyglot key -> (eco, name) of the named openings (the shortest line's name)."""
        if self._names is None:
            self._names = names_by_key()
        return self._names

    def opening(self, query: Query, path: list[chess.Board]) -> dict[str, str] | None:
        """The deepest named position on the way, when the FEN is the start position."""
        if query.variant != "standard" or path[0].board_fen() != chess.STARTING_BOARD_FEN:
            return None
        names = self.opening_names()
        for board in reversed(path):
            found = names.get(chess.polyglot.zobrist_hash(board))
            if found:
                return {"eco": found[0], "name": found[1]}
        return None

    def lichess(self, params: dict[str, str]) -> dict[str, Any]:
        """The `/lichess` answer for a query string."""
        query = parse_query(params)
        board, path = board_of(query)
        rows = self.rows(chess.polyglot.zobrist_hash(board), query)
        white_moves = board.turn == chess.WHITE
        per_move: dict[int, list[int]] = {}
        per_month: dict[str, list[int]] = {}
        for raw, month, wins, draws, losses in rows:
            white, black = (wins, losses) if white_moves else (losses, wins)
            for table, name in ((per_move, raw), (per_month, month)):
                counts = table.setdefault(name, [0, 0, 0])
                counts[0] += white
                counts[1] += draws
                counts[2] += black
        moves: list[dict[str, Any]] = []
        for raw, (white, draws, black) in per_move.items():
            move = decode_move(board, raw)
            if move is None:  # a key collision: not a move of this position
                continue
            moves.append(
                {"uci": board.uci(move), "san": board.san(move), "averageRating": None,
                 "white": white, "draws": draws, "black": black, "game": None}
            )  # fmt: skip
        moves.sort(key=lambda m: (-(m["white"] + m["draws"] + m["black"]), m["uci"]))
        total = [sum(m[k] for m in moves) for k in ("white", "draws", "black")]
        if query.moves is not None:
            moves = moves[: query.moves]
        answer: dict[str, Any] = {
            "white": total[0],
            "draws": total[1],
            "black": total[2],
            "moves": moves,
            "topGames": [],
            "recentGames": [],
            "opening": self.opening(query, path),
        }
        if query.history:
            months = [
                m
                for m in self.months
                if (query.since is None or m >= query.since)
                and (query.until is None or m <= query.until)
            ]
            answer["history"] = [
                {"month": m, "white": c[0], "draws": c[1], "black": c[2]}
                for m in months
                for c in [per_month.get(m, [0, 0, 0])]
            ]
        return answer
