"""`/player`: a player's moves in the warehouse's games, as lila-openingexplorer's player
explorer answers (src/model/player.rs `PlayerEntry::prepare`, src/main.rs `player`).

Every game of the explorer's months that the player (by name, in any case) played with
`color`, each position once per game: per move the results, `averageOpponentRating`,
`performance` (FIDE's table) and `game` where played once; `recentGames`, the 8 most recent
(fewer with `recentGames`). lila streams answers while it indexes the player's games and ends
with `queuePosition` 0; here every game is indexed already, so the stream is that one line.
An unknown player has lila's empty answer.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pipelines.explorer.lookup import SPEED_NAMES
from pipelines.serve.explorer import (
    Explorer,
    Position,
    Query,
    average_rating,
    parse_query,
)
from pipelines.serve.lookup_store import PlayerRows, game_order
from pipelines.serve.params import BadRequest
from pipelines.serve.performance import performance
from schemas.polyglot import decode_move

#: recentGames at most (lila's MAX_PLAYER_GAMES).
MAX_PLAYER_GAMES = 8
MODES = ("rated", "casual")


def player_answer(explorer: Explorer, args: dict[str, str]) -> dict[str, Any]:
    """The answer to a `/player` query string."""
    name = args.get("player")
    if not name:
        raise BadRequest("player is required (a player's name)")
    color = args.get("color")
    if not color:
        raise BadRequest("color is required (white or black)")
    if color not in ("white", "black"):
        raise BadRequest(f"color must be white or black, not {color[:40]!r}")
    modes = [m for m in (args.get("modes") or "").split(",") if m]
    for mode in modes:
        if mode not in MODES:
            raise BadRequest(f"unknown mode {mode[:40]!r}; choose from rated, casual")
    common = {k: v for k, v in args.items() if k not in ("player", "color", "modes", "ratings")}
    query = parse_query(common)
    position = explorer.position_of(query)
    opening = explorer.opening(query, position)
    empty = {"white": 0, "draws": 0, "black": 0, "moves": [], "recentGames": []}
    answer: dict[str, Any] = {**empty, "opening": opening, "queuePosition": 0}
    months = [
        m for m in explorer.lookup.months
        if (query.since is None or m >= query.since) and (query.until is None or m <= query.until)
    ]  # fmt: skip
    rows = explorer.lookup.player(position.key, name, color == "white", months)
    keep = np.ones(len(rows.move), dtype=bool)
    if query.speeds:
        wanted = np.zeros(256, dtype=bool)
        wanted[: len(SPEED_NAMES)] = [speed in query.speeds for speed in SPEED_NAMES]
        keep &= wanted[rows.speed]
    if modes:
        keep &= np.where(rows.rated, "rated" in modes, "casual" in modes)
    rows = PlayerRows(*(column[keep] for column in rows))
    return {**answer, **_moves(explorer, query, position, rows, color)}


def _moves(
    explorer: Explorer, query: Query, position: Position, rows: PlayerRows, color: str
) -> dict[str, Any]:
    board = position.board
    result = rows.result
    opponent = rows.opponent.clip(0)
    order = game_order(rows.month, rows.seq)
    moves: list[dict[str, Any]] = []
    for raw in np.unique(rows.move).tolist():
        move = decode_move(board, raw)
        if move is None:
            continue
        here = rows.move == raw
        white = int((result[here] == 2).sum())
        draws = int((result[here] == 1).sum())
        black = int((result[here] == 0).sum())
        total = white + draws + black
        rating_sum = int(opponent[here].sum())
        wins, losses = (white, black) if color == "white" else (black, white)
        game = None
        if total == 1:
            only = int(np.flatnonzero(here)[0])
            game = explorer.games_json([(int(rows.month[only]), int(rows.seq[only]))])[0]
        moves.append(
            {
                "uci": board.uci(move),
                "san": board.san(move),
                "averageOpponentRating": average_rating(rating_sum, total),
                "performance": performance(wins, draws, losses, rating_sum),
                "white": white,
                "draws": draws,
                "black": black,
                "game": game,
                "opening": explorer.opening_after(board, move, position.key),
            }
        )
    moves.sort(key=lambda m: (-(m["white"] + m["draws"] + m["black"]), m["uci"]))
    totals = {k: sum(m[k] for m in moves) for k in ("white", "draws", "black")}
    if query.moves is not None:
        moves = moves[: query.moves]
    wanted = (
        MAX_PLAYER_GAMES
        if query.recent_games is None
        else min(query.recent_games, MAX_PLAYER_GAMES)
    )
    latest = [
        i for i in np.argsort(-order, kind="stable")[:wanted].tolist()
        if decode_move(board, int(rows.move[i])) is not None
    ]  # fmt: skip
    shown = explorer.games_json([(int(rows.month[i]), int(rows.seq[i])) for i in latest])
    recent = []
    for i, game in zip(latest, shown, strict=True):
        move = decode_move(board, int(rows.move[i]))
        assert move is not None
        recent.append({"uci": board.uci(move), **game})
    return {**totals, "moves": moves, "recentGames": recent}
