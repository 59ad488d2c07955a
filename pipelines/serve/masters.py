"""`/masters` and `/masters/pgn/{id}` over a warehouse of collections (`chesspipe serve
--masters M`), as lila-openingexplorer's masters database answers (src/model/masters.rs,
src/main.rs `masters`, `masters_pgn`).

Collections are indexed whole (`chesspipe explorer index --plies all`), each position once per
game. `since`/`until` are years (of each game's Date); `topGames` are the games of the highest
rating sum (both players), at most 15, ties most recent in the warehouse first (lila leaves
their order open); a missing rating counts as 0 there and is `null` in the answer, and a
move's `averageRating` is over the games that have the mover's rating.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import chess
import numpy as np

from pipelines.serve.explorer import Explorer, average_rating, board_of, parse_query
from pipelines.serve.games_index import GamesIndex
from pipelines.serve.params import BadRequest
from schemas.polyglot import decode_move

#: topGames at most (lila's MAX_MASTERS_GAMES).
MAX_MASTERS_GAMES = 15
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
        self.names = names  # the opening names, and how queries are read

    def answer(self, args: dict[str, str]) -> dict[str, Any]:
        since, until = _year(args.get("since"), "since"), _year(args.get("until"), "until")
        if since is not None and until is not None and since > until:
            raise BadRequest(f"since {since} is after until {until}")
        common = {k: v for k, v in args.items() if k not in ("since", "until")}
        query = parse_query(common)
        position = board_of(query)
        games = self.games
        rows = np.arange(games.rows(position.key).start, games.rows(position.key).stop)
        g = games.games[rows].astype(np.int64)
        year = games.year[g]
        keep = np.ones(len(g), dtype=bool)
        if since is not None:
            keep &= year >= since
        if until is not None:
            keep &= (year <= until) & (year >= 0)
        rows, g = rows[keep], g[keep]
        board = position.board
        result = games.result[g].astype(np.int64)
        white_moved = games.white_moved[rows]
        mover = np.where(white_moved, games.white_elo[g], games.black_elo[g])
        raw_moves = games.moves[rows]
        moves: list[dict[str, Any]] = []
        uci: dict[int, str] = {}
        for raw in np.unique(raw_moves).tolist():
            move = decode_move(board, raw)
            if move is None:
                continue
            uci[raw] = board.uci(move)
            here = raw_moves == raw
            counts = [int((result[here] == points).sum()) for points in (2, 1, 0)]
            rated = mover[here] >= 0
            games_rated = int(rated.sum())
            rating = (
                average_rating(int(mover[here][rated].sum()), games_rated) if games_rated else None
            )
            total = sum(counts)
            moves.append(
                {
                    "uci": uci[raw],
                    "san": board.san(move),
                    "averageRating": rating,
                    "white": counts[0],
                    "draws": counts[1],
                    "black": counts[2],
                    "game": games.game_json(int(g[here][0]), lichess=False) if total == 1 else None,
                    "opening": self.names.opening_after(board, move, position.key),
                }
            )
        moves.sort(key=lambda m: (-(m["white"] + m["draws"] + m["black"]), m["uci"]))
        totals = {k: sum(m[k] for m in moves) for k in ("white", "draws", "black")}
        if query.moves is not None:
            moves = moves[: query.moves]
        wanted = MAX_MASTERS_GAMES
        if query.top_games is not None:
            wanted = min(wanted, query.top_games)
        valid = np.array([int(r) in uci for r in raw_moves.tolist()], dtype=bool)
        sums = games.white_elo[g].clip(0) + games.black_elo[g].clip(0)
        order = [i for i in np.lexsort((-g, -sums)).tolist() if valid[i]][:wanted]
        top = [
            {"uci": uci[int(raw_moves[i])], **games.game_json(int(g[i]), lichess=False)}
            for i in order
        ]
        return {
            **totals,
            "moves": moves,
            "topGames": top,
            "opening": self.names.opening(query, position),
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
        found = self.games.game_json(g, lichess=False)
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
