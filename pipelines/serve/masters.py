"""`/masters` and `/masters/pgn/{id}` over a warehouse of collections (`chesspipe serve
--masters M`), as lila-openingexplorer's masters database answers (src/model/masters.rs,
src/main.rs `masters`, `masters_pgn`).

Collections are indexed whole (`chesspipe explorer index --plies all`), each position once per
game. `since`/`until` are years (of each game's Date); `topGames` are the games of the highest
rating sum (both players), at most 15, ties most recent in the warehouse first (lila leaves
their order open); a missing rating counts as 0 there and is `null` in the answer, and a
move's `averageRating` is over the games that have the mover's rating. A request sums the
position's rows pre-counted by year (pipelines/serve/masters_index.py), not its games.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import chess
import numpy as np

from pipelines.serve.explorer import Explorer, average_rating, parse_query
from pipelines.serve.games_index import GamesIndex
from pipelines.serve.masters_index import MAX_MASTERS_GAMES, Candidates, MastersIndex, YearCounts
from pipelines.serve.params import BadRequest
from schemas.polyglot import decode_move

__all__ = ["MAX_MASTERS_GAMES", "Masters"]
_YEAR = re.compile(r"[0-9]{1,4}")
_RESULT = {2: "1-0", 1: "1/2-1/2", 0: "0-1"}


def _year(text: str | None, name: str) -> int | None:
    if not text:
        return None
    if not _YEAR.fullmatch(text):
        raise BadRequest(f"{name} must be a year (YYYY), not {text[:40]!r}")
    return int(text)


class Masters:
    """Answers `/masters` from a warehouse of collections, read-only."""

    def __init__(self, warehouse: Path, names: Explorer) -> None:
        self.games = GamesIndex.load(Path(warehouse))
        self.index = MastersIndex(self.games)
        self.names = names  # the opening names, and how queries are read

    def answer(self, args: dict[str, str]) -> dict[str, Any]:
        since, until = _year(args.get("since"), "since"), _year(args.get("until"), "until")
        if since is not None and until is not None and since > until:
            raise BadRequest(f"since {since} is after until {until}")
        common = {k: v for k, v in args.items() if k not in ("since", "until")}
        query = parse_query(common)
        position = self.names.position_of(query)
        counted = self.index.counts(position.key, since=since, until=until)
        found = self.index.candidates(position.key, since=since, until=until)
        board = position.board
        moves: list[dict[str, Any]] = []
        uci: dict[int, str] = {}
        for raw in np.unique(counted.moves).tolist():
            move = decode_move(board, raw)
            if move is not None:
                uci[raw] = board.uci(move)
                moves.append(self._move(board, move, raw, position.key, counted, found))
        moves.sort(key=lambda m: (-(m["white"] + m["draws"] + m["black"]), m["uci"]))
        totals = {k: sum(m[k] for m in moves) for k in ("white", "draws", "black")}
        if query.moves is not None:
            moves = moves[: query.moves]
        wanted = MAX_MASTERS_GAMES
        if query.top_games is not None:
            wanted = min(wanted, query.top_games)
        best = [
            (raw, g)
            for raw, g in zip(found.moves.tolist(), found.games.tolist(), strict=True)
            if raw in uci
        ][:wanted]
        top = [{"uci": uci[raw], **self.games.game_json(g)} for raw, g in best]
        return {
            **totals,
            "moves": moves,
            "topGames": top,
            "opening": self.names.opening(query, position),
        }

    def _move(
        self,
        board: chess.Board,
        move: chess.Move,
        raw: int,
        key: int,
        counted: YearCounts,
        found: Candidates,
    ) -> dict[str, Any]:
        """A move's line of the answer: its rows summed over the years."""
        here = counted.moves == raw
        white, draws, black = (
            int(c[here].sum()) for c in (counted.white, counted.draws, counted.black)
        )
        rated = int(counted.rated[here].sum())
        rating = average_rating(int(counted.rating_sum[here].sum()), rated) if rated else None
        game = None
        if white + draws + black == 1:
            only = int(found.games[found.moves == raw][0])
            game = self.games.game_json(only)
        return {
            "uci": board.uci(move),
            "san": board.san(move),
            "averageRating": rating,
            "white": white,
            "draws": draws,
            "black": black,
            "game": game,
            "opening": self.names.opening_after(board, move, key),
        }

    def pgn(self, game_id: str) -> str | None:
        """A game's PGN as lila's masters database writes it (None: no such game, or its
        moves were not kept)."""
        g = self.games.by_id.get(game_id)
        if g is None:
            return None
        text = self.games.game_text(g)
        if text["moves"] is None:
            return None
        found = self.games.game_json(g)
        result = _RESULT[int(self.games.result[g])]
        lines = [
            f'[Event "{_escaped(text["event"])}"]',
            f'[Site "{_escaped(text["site"])}"]',
            f'[Date "{_escaped(str(self.games.dates[g]))}"]',
            f'[Round "{_escaped(text["round"])}"]',
            f'[White "{_escaped(found["white"]["name"])}"]',
            f'[Black "{_escaped(found["black"]["name"])}"]',
            f'[Result "{result}"]',
        ]
        for side in ("white", "black"):
            rating = found[side]["rating"]
            lines.append(f'[{side.capitalize()}Elo "{rating if rating is not None else "?"}"]')
        board = chess.Board()
        words = []
        for i, move_uci in enumerate(text["moves"].split()):
            if i % 2 == 0:
                words.append(f"{i // 2 + 1}.")
            move = chess.Move.from_uci(move_uci)
            words.append(board.san(move))
            board.push(move)
        words.append(result)
        return "\n".join(lines) + "\n\n" + " ".join(words) + "\n"


def _escaped(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')
