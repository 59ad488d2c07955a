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
- Months indexed for the explorer (`chesspipe explorer index`) are counted as Lichess counts
  (50 plies, each position once per game) and have `topGames`, `recentGames`, each move's
  `game` where it was played once, and the `tournament` filter (true: arena, swiss and other
  tournament games only; false: the others); months with move statistics alone are counted
  the books' way (the plies ingest counted, every visit of a position) and have no games.
- Counts are from White's view (`white`, `draws`, `black`), converted from the mover's view.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, NamedTuple

import chess
import numpy as np

from pipelines.explorer.compact import explorer_years
from pipelines.explorer.layout import explorer_lookups
from pipelines.explorer.lookup import SPEED_NAMES
from pipelines.explorer.records import Record
from pipelines.serve import params
from pipelines.serve.answer_cache import CACHE_BYTES, AnswerCache
from pipelines.serve.lichess_games import pick
from pipelines.serve.line import Position, replay_line
from pipelines.serve.lookup_store import SERVE_MEMORY, Candidates, LookupMonths
from pipelines.serve.params import BadRequest
from pipelines.serve.stats_index import Selection, StatsIndex
from pipelines.warehouse.openings import names_by_key
from schemas.dimensions import RATING_GROUPS, rating_group
from schemas.polyglot import decode_move, push_with_key
from schemas.speed import Speed

#: Lichess's explorer speeds and the warehouse's names for them.
SPEEDS = {speed.api_name: speed.value for speed in Speed}
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
    top_games: int | None = None
    recent_games: int | None = None
    tournament: bool | None = None

    def filter(self) -> tuple[Any, ...]:
        """Everything but the position: what, beside the position, an answer depends on."""
        return (
            self.speeds,
            self.groups,
            self.since,
            self.until,
            self.moves,
            self.history,
            self.top_games,
            self.recent_games,
            self.tournament,
        )


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
    history = (args.get("history") or "").lower() in ("true", "1", "yes", "on")
    top_games, recent_games = (
        params.number(args[name], name) if args.get(name) else None
        for name in ("topGames", "recentGames")
    )
    since, until = (
        params.month(args.get("since"), "since"),
        params.month(args.get("until"), "until"),
    )
    if since and until and since > until:
        raise BadRequest(f"since {since} is after until {until}")
    return Query(
        variant,
        fen,
        play,
        tuple(sorted(set(speeds))),
        tuple(sorted(set(groups))),
        since,
        until,
        count,
        history,
        top_games,
        recent_games,
        params.flag(args.get("tournament"), "tournament"),
    )


def board_of(query: Query) -> Position:
    """The position a query asks for (FEN, then `play`)."""
    return replay_line(query.variant, query.fen, query.play)


def average_rating(rating_sum: int, games: int) -> int:
    """A mean rating rounded half up, as lila-openingexplorer rounds it."""
    return (2 * rating_sum + games) // (2 * games)


#: Positions whose moves' names the explorer keeps (each a few hundred bytes a move).
MOVE_NAMES = 20_000


class MoveName(NamedTuple):
    """A move of a position as an answer names it: UCI, SAN and the opening named exactly
    after it (lila's `classify_exact`), if any."""

    uci: str
    san: str
    opening: dict[str, str] | None


class Explorer:
    """Answers `/lichess` requests from a warehouse, read-only: its explored months from their
    lookup files on disk, the others from an in-memory index of their move statistics."""

    def __init__(
        self,
        warehouse: Path,
        *,
        cache_bytes: int = CACHE_BYTES,
        memory_limit: int = SERVE_MEMORY,
    ) -> None:
        self.warehouse = Path(warehouse)
        files = explorer_lookups(self.warehouse)
        self.index = StatsIndex.load(self.warehouse, list(files))
        self.months = self.index.months
        #: The explored months, read from their lookup files (`memory_limit`: DuckDB's).
        years = explorer_years(self.warehouse)
        self.lookup = LookupMonths(files, self.months, years=years, memory_limit=memory_limit)
        self.cache = AnswerCache(max_bytes=cache_bytes)
        self._names: dict[int, tuple[str, str]] | None = None
        self._move_names: OrderedDict[tuple[object, ...], dict[int, MoveName | None]] = (
            OrderedDict()
        )
        self._names_lock = threading.Lock()
        #: How a query's position is found: in the calling thread, or by a replay.Replayer.
        self.position_of: Callable[[Query], Position] = board_of

    def close(self) -> None:
        """Close the lookup files."""
        self.lookup.close()

    def selected_months(self, selection: Selection) -> list[str]:
        """The months a selection chooses."""
        return [m for m, on in zip(self.months, selection.months, strict=True) if on]

    def game_json(self, month: int, game: Record) -> dict[str, Any]:
        """A game of a lookup file as lila-openingexplorer's `ExplorerGame`."""
        result, speed = game.result, game.speed
        found: dict[str, Any] = {
            "id": game.id,
            "winner": "white" if result == 2 else "black" if result == 0 else None,
            "speed": Speed(SPEED_NAMES[speed]).api_name if speed < len(SPEED_NAMES) else None,
            "mode": "rated" if game.rated else "casual",
            "white": {"name": game.white, "rating": game.white_elo},
            "black": {"name": game.black, "rating": game.black_elo},
        }
        name = self.months[month]
        found["year"] = int(name[:4])
        found["month"] = name
        return found

    def games_json(self, wanted: list[tuple[int, int]]) -> list[dict[str, Any]]:
        """Games by (month, seq), as game_json() shows them, in the order asked."""
        records = self.lookup.games(wanted)
        return [self.game_json(month, records[(month, seq)]) for month, seq in wanted]

    def opening_names(self) -> dict[int, tuple[str, str]]:
        """Polyglot key -> (eco, name) of the named openings (the shortest line's name)."""
        if self._names is None:
            self._names = names_by_key()
        return self._names

    def opening(self, query: Query, position: Position) -> dict[str, str] | None:
        """The deepest named position on the way from the FEN (the FEN's own included), as
        lila-openingexplorer's `classify_and_play`."""
        if query.variant != "standard":
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

    def lichess_json(self, args: dict[str, str], *, history_only: bool = False) -> bytes:
        """The `/lichess` answer for a query string, encoded as JSON (`/lichess/history`
        with `history_only`: no moves nor games, the history). Answers are cached by the
        position reached (not the `play` that reached it), the opening named on the way and
        the filter."""
        query = parse_query(args)
        if history_only:
            query = replace(query, history=True, moves=0, top_games=0, recent_games=0)
        position = self.position_of(query)
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
            since=query.since,
            until=query.until,
            speeds=query.speeds,
            groups=query.groups,
            tournament=query.tournament,
            variant=query.variant,
        )
        unexplored = index.unexplored_months(selection)  # ingest alone: every month
        if query.tournament is not None and unexplored:
            months = ", ".join(unexplored)
            raise BadRequest(
                f"tournament cannot filter months {months}: they have no explorer data "
                "(chesspipe explorer index); choose since/until without them"
            )
        unrated = index.unrated_months(selection)
        if query.groups and unrated:
            raise BadRequest(
                f"ratings cannot filter months {', '.join(unrated)}: they were ingested before "
                "the statistics kept rating groups; re-ingest them, or choose since/until "
                "without them"
            )
        explored, candidates = self.lookup.counts(position.key, self.selected_months(selection))
        totals = index.totals(position.key, selection, explored)
        white_moves = board.turn == chess.WHITE
        moves: list[dict[str, Any]] = []
        names = self.move_names(board, position.key, totals.moves.tolist())
        for i, named in enumerate(names):
            if named is None:  # a key collision: not a move of this position
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
                    "uci": named.uci,
                    "san": named.san,
                    "averageRating": rating,
                    "white": white,
                    "draws": draws,
                    "black": black,
                    "game": None,
                    "opening": named.opening,
                }
            )
        moves.sort(key=lambda m: (-(m["white"] + m["draws"] + m["black"]), m["uci"]))
        total = [sum(m[k] for m in moves) for k in ("white", "draws", "black")]
        if query.moves is not None:
            moves = moves[: query.moves]
        top: list[dict[str, Any]] = []
        recent: list[dict[str, Any]] = []
        if self.lookup.months:
            top, recent = self._games(query, position, selection, moves, candidates)
        answer: dict[str, Any] = {
            "white": total[0],
            "draws": total[1],
            "black": total[2],
            "moves": moves,
            "recentGames": recent,
            "topGames": top,
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
        notes = []
        if unrated:
            notes.append(
                f"averageRating is null for moves played in {', '.join(unrated)}: those months "
                "were ingested before the statistics kept rating sums; re-ingest them"
            )
        if unexplored:
            notes.append(
                f"months {', '.join(unexplored)} are counted from the move statistics (the plies "
                "ingest counted, each visit of a position) and have no games: index them with "
                "chesspipe explorer index"
            )
        if notes:
            answer["notes"] = notes
        return answer

    def move_names(self, board: chess.Board, key: int, raws: list[int]) -> list[MoveName | None]:
        """The names of Polyglot moves in a position (None: not a legal move of it), each
        named once and kept (MOVE_NAMES positions at most, the least recently used dropped):
        a move's SAN and opening never change, and SAN costs more than the counts."""
        place = (key, board.epd(), type(board).uci_variant, board.chess960)
        with self._names_lock:
            known = self._move_names.get(place)
            if known is not None:
                self._move_names.move_to_end(place)
        known = dict(known or {})
        fresh = False
        for raw in raws:
            if raw not in known:
                move = decode_move(board, raw)
                known[raw] = None if move is None else MoveName(
                    board.uci(move), board.san(move), self.opening_after(board, move, key)
                )  # fmt: skip
                fresh = True
        if fresh:
            with self._names_lock:
                self._move_names[place] = known
                self._move_names.move_to_end(place)
                while len(self._move_names) > MOVE_NAMES:
                    self._move_names.popitem(last=False)
        return [known[raw] for raw in raws]

    def opening_after(
        self, board: chess.Board, move: chess.Move, key: int
    ) -> dict[str, str] | None:
        """The opening named exactly at the position after a move (lila's `classify_exact`)."""
        after = board.copy(stack=False)
        found = self.opening_names().get(push_with_key(after, move, key))
        return {"eco": found[0], "name": found[1]} if found else None

    def _games(
        self,
        query: Query,
        position: Position,
        selection: Selection,
        moves: list[dict[str, Any]],
        found: Candidates,
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """topGames and recentGames, and each move's `game` where it was played once, from a
        position's candidate games."""
        allowed = (
            selection.months[found.month]
            & selection.speeds[np.minimum(found.speed, len(selection.speeds) - 1)]
            & selection.groups[found.group]
            & selection.flags[found.tournament]
        )
        board = position.board
        uci: dict[int, str] = {}
        for raw in np.unique(found.move[allowed]).tolist():
            move = decode_move(board, raw)
            if move is not None:
                uci[raw] = board.uci(move)
        known = np.isin(found.move, np.array(list(uci), dtype=found.move.dtype))
        rows = np.flatnonzero(allowed & known) if len(found.move) else np.zeros(0, np.int64)
        single = {m["uci"] for m in moves if m["white"] + m["draws"] + m["black"] == 1}
        if single:
            latest: dict[str, int] = {}
            for r in rows.tolist():
                move_uci = uci[int(found.move[r])]
                if move_uci in single and (
                    move_uci not in latest or found.order[r] > found.order[latest[move_uci]]
                ):
                    latest[move_uci] = r
            shown = self.games_json(
                [(int(found.month[r]), int(found.seq[r])) for r in latest.values()]
            )
            by_move = dict(zip(latest, shown, strict=True))
            for m in moves:
                if m["uci"] in by_move:
                    m["game"] = by_move[m["uci"]]
        picked = pick(
            found.order[rows],
            found.bound[rows],
            found.speed[rows],
            query.groups,
            top_games=query.top_games,
            recent_games=query.recent_games,
        )
        chosen = [int(rows[i]) for i in picked.top + picked.recent]
        shown = self.games_json([(int(found.month[r]), int(found.seq[r])) for r in chosen])
        answers = [
            {"uci": uci[int(found.move[r])], **game} for r, game in zip(chosen, shown, strict=True)
        ]
        return answers[: len(picked.top)], answers[len(picked.top) :]


def encode(answer: object) -> bytes:
    """An answer as JSON bytes, as Starlette's JSONResponse writes it."""
    text = json.dumps(answer, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return text.encode("utf-8")
