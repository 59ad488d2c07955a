"""The lila-openingexplorer API (`/lichess`) over the warehouse's move statistics.

What the statistics allow, and where the answer differs from explorer.lichess.ovh:

- `ratings` picks Lichess rating groups (0, 1000, 1200, 1400, 1600, 1800, 2000, 2200, 2500) of
  the players' *average* rating, as lila-openingexplorer's `RatingGroup`: any number names the
  group it falls in (1500 is 1400; 2800 and above select nothing, as on Lichess).
- `averageRating` of a move is the mean rating of the players who played it, rounded
  (lila-openingexplorer sums the mover's rating), from `rating_sum / games`.
- Months ingested before the statistics kept `rating_group` and `rating_sum`: their moves have
  `averageRating` null and the answer's `notes` says which months to re-ingest; a `ratings`
  filter over them is refused (400) with the same advice, or can be narrowed with since/until.
- `topGames` and `recentGames` are empty (no game ids are kept); moves after the counted plies
  (20 by default) have no statistics.
- Counts are from White's view (`white`, `draws`, `black`), converted from the mover's view.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import chess

from pipelines.serve import params
from pipelines.serve.answer_cache import CACHE_BYTES, AnswerCache
from pipelines.serve.params import BadRequest
from pipelines.serve.stats_index import StatsIndex
from pipelines.warehouse.openings import names_by_key
from schemas.dimensions import RATING_GROUPS, rating_group
from schemas.polyglot import decode_move, polyglot_key, push_with_key
from schemas.speed import Speed

#: Lichess's explorer speeds and the warehouse's names for them.
SPEEDS = {speed.api_name: speed.value for speed in Speed}
#: Plies replayed between two offers of the interpreter to other threads (about 0.2 ms).
YIELD_EVERY = 16
#: Lichess's rating group 3200 (averages of 2800 and above): a filter on it selects nothing.
NO_SUCH_GROUP = 3200


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

    def filter(self) -> tuple[Any, ...]:
        """Everything but the position: what, beside the position, an answer depends on."""
        return (self.speeds, self.groups, self.since, self.until, self.moves, self.history)


def parse_query(args: dict[str, str]) -> Query:
    """Validate the query string of a `/lichess` request."""
    variant = args.get("variant") or "standard"
    if variant not in ("standard", "chess960"):
        raise BadRequest(f"variant {variant!r} not supported; use standard or chess960")
    fen = (args.get("fen") or chess.STARTING_FEN).replace("_", " ")
    play = params.play(args.get("play"))
    speeds = []
    for name in (args.get("speeds") or "").split(","):
        if name:
            if name not in SPEEDS:
                raise BadRequest(f"unknown speed {name!r}; choose from {', '.join(SPEEDS)}")
            speeds.append(SPEEDS[name])
    groups = []
    for text in (args.get("ratings") or "").split(","):
        if text:
            try:
                value = params.number(text, "a rating group")
            except BadRequest:
                raise BadRequest(
                    f"unknown rating group {text[:40]!r}; choose from "
                    f"{', '.join(map(str, RATING_GROUPS))} (ASCII digits)"
                ) from None
            groups.append(NO_SUCH_GROUP if value >= 2800 else rating_group(value))
    moves = args.get("moves")
    count = params.number(moves, "moves") if moves else None
    history = (args.get("history") or "").lower() in ("true", "1", "yes")
    return Query(
        variant,
        fen,
        play,
        tuple(sorted(set(speeds))),
        tuple(sorted(set(groups))),
        params.month(args.get("since"), "since"),
        params.month(args.get("until"), "until"),
        count,
        history,
    )


class Position(NamedTuple):
    """The position asked for, its Polyglot key, and the keys of every position on the way
    (the FEN's first, the position's last); whether the FEN is the start position."""

    board: chess.Board
    key: int
    path: list[int]
    from_start: bool


def board_of(query: Query) -> Position:
    """The position a query asks for (FEN, then `play`)."""
    try:
        board = chess.Board(query.fen, chess960=query.variant == "chess960")
    except ValueError as exc:
        raise BadRequest(f"invalid fen: {exc}") from None
    if board.status() != chess.STATUS_VALID:
        raise BadRequest(f"invalid fen: not a legal position ({query.fen})")
    from_start = board.board_fen() == chess.STARTING_BOARD_FEN
    key = polyglot_key(board)
    path = [key]
    for i, text in enumerate(query.play):
        if i % YIELD_EVERY == YIELD_EVERY - 1:
            time.sleep(0)  # let other threads (the event loop, short requests) run
        try:
            move = board.parse_uci(text)
        except ValueError:
            raise BadRequest(f"illegal move {text!r} in play from {board.fen()}") from None
        key = push_with_key(board, move, key)
        path.append(key)
    return Position(board, key, path, from_start)


def average_rating(rating_sum: int, games: int) -> int:
    """A mean rating rounded half up, as lila-openingexplorer rounds it."""
    return (2 * rating_sum + games) // (2 * games)


class Explorer:
    """Answers `/lichess` requests from a warehouse, read-only, from an in-memory index."""

    def __init__(self, warehouse: Path, *, cache_bytes: int = CACHE_BYTES) -> None:
        self.warehouse = Path(warehouse)
        self.index = StatsIndex.load(self.warehouse)
        self.months = self.index.months
        self.cache = AnswerCache(max_bytes=cache_bytes)
        self._names: dict[int, tuple[str, str]] | None = None

    def close(self) -> None:
        """Nothing to release: the index lives in memory."""

    def opening_names(self) -> dict[int, tuple[str, str]]:
        """Polyglot key -> (eco, name) of the named openings (the shortest line's name)."""
        if self._names is None:
            self._names = names_by_key()
        return self._names

    def opening(self, query: Query, position: Position) -> dict[str, str] | None:
        """The deepest named position on the way, when the FEN is the start position."""
        if query.variant != "standard" or not position.from_start:
            return None
        names = self.opening_names()
        for key in reversed(position.path):
            found = names.get(key)
            if found:
                return {"eco": found[0], "name": found[1]}
        return None

    def lichess(self, args: dict[str, str]) -> dict[str, Any]:
        """The `/lichess` answer for a query string."""
        answer: dict[str, Any] = json.loads(self.lichess_json(args))
        return answer

    def lichess_json(self, args: dict[str, str]) -> bytes:
        """The `/lichess` answer for a query string, encoded as JSON. Answers are cached by the
        position reached (not the `play` that reached it), the opening named on the way and
        the filter."""
        query = parse_query(args)
        position = board_of(query)
        opening = self.opening(query, position)
        named = (opening["eco"], opening["name"]) if opening else ("", "")
        key = (query.variant, position.board.epd(), *named, *query.filter())
        found = self.cache.get(key)
        if found is None:
            found = encode(self.answer(query, position, opening))
            self.cache.put(key, found)
        return found

    def answer(
        self, query: Query, position: Position, opening: dict[str, str] | None
    ) -> dict[str, Any]:
        """The `/lichess` answer for a validated query at its position."""
        board = position.board
        index = self.index
        selection = index.select(
            since=query.since, until=query.until, speeds=query.speeds, groups=query.groups
        )
        unrated = index.unrated_months(selection)
        if query.groups and unrated:
            raise BadRequest(
                f"ratings cannot filter months {', '.join(unrated)}: they were ingested before "
                "the statistics kept rating groups; re-ingest them, or choose since/until "
                "without them"
            )
        totals = index.totals(position.key, selection)
        white_moves = board.turn == chess.WHITE
        moves: list[dict[str, Any]] = []
        for i, raw in enumerate(totals.moves.tolist()):
            move = decode_move(board, raw)
            if move is None:  # a key collision: not a move of this position
                continue
            wins, draws, losses = int(totals.wins[i]), int(totals.draws[i]), int(totals.losses[i])
            games = wins + draws + losses
            if not games:
                continue
            rating = None
            if not totals.unrated[i]:
                rating = average_rating(int(totals.rating_sum[i]), games)
            white, black = (wins, losses) if white_moves else (losses, wins)
            moves.append(
                {
                    "uci": board.uci(move),
                    "san": board.san(move),
                    "averageRating": rating,
                    "white": white,
                    "draws": draws,
                    "black": black,
                    "game": None,
                }
            )
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
            "opening": opening,
        }
        if query.history:
            wins, losses = totals.month_wins.tolist(), totals.month_losses.tolist()
            whites, blacks = (wins, losses) if white_moves else (losses, wins)
            draws = totals.month_draws.tolist()
            answer["history"] = [
                {"month": m, "white": whites[i], "draws": draws[i], "black": blacks[i]}
                for i, m in enumerate(self.months)
                if selection.months[i]
            ]
        if unrated:
            answer["notes"] = [
                f"averageRating is null for moves played in {', '.join(unrated)}: those months "
                "were ingested before the statistics kept rating sums; re-ingest them"
            ]
        return answer


def encode(answer: object) -> bytes:
    """An answer as JSON bytes, as Starlette's JSONResponse writes it."""
    text = json.dumps(answer, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return text.encode("utf-8")
