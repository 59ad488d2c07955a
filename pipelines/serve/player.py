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

from pipelines.serve.explorer import (
    Explorer,
    Position,
    Query,
    average_rating,
    parse_query,
)
from pipelines.serve.games_index import SPEED_NAMES
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
    games = explorer.games
    found = games.players.get(name.lower()) if games is not None else None
    if games is None or found is None:
        return answer
    theirs = found[0] if color == "white" else found[1]
    rows = np.arange(games.rows(position.key).start, games.rows(position.key).stop)
    g = games.games[rows]
    at = np.searchsorted(theirs, g)
    mine = (at < len(theirs)) & (theirs[np.minimum(at, len(theirs) - 1)] == g)
    rows, g = rows[mine], g[mine]
    keep = _filtered(explorer, query, modes, g)
    rows, g = rows[keep], g[keep].astype(np.int64)
    return {**answer, **_moves(explorer, query, position, rows, g, color)}


def _filtered(explorer: Explorer, query: Query, modes: list[str], g: np.ndarray) -> np.ndarray:
    games = explorer.games
    assert games is not None
    months = np.array(
        [(query.since is None or m >= query.since) and (query.until is None or m <= query.until)
         for m in games.months] + [False],
        dtype=bool,
    )  # fmt: skip
    keep = months[games.month[g]]
    if query.speeds:
        wanted = np.zeros(256, dtype=bool)
        wanted[: len(SPEED_NAMES)] = [name in query.speeds for name in SPEED_NAMES]
        keep &= wanted[games.speed[g]]
    if modes:
        rated = games.rated[g]
        keep &= np.where(rated, "rated" in modes, "casual" in modes)
    return keep


def _moves(
    explorer: Explorer,
    query: Query,
    position: Position,
    rows: np.ndarray,
    g: np.ndarray,
    color: str,
) -> dict[str, Any]:
    games = explorer.games
    assert games is not None
    board = position.board
    result = games.result[g].astype(np.int64)
    opponent = (games.black_elo if color == "white" else games.white_elo)[g].clip(0)
    raw_moves = games.moves[rows]
    moves: list[dict[str, Any]] = []
    for raw in np.unique(raw_moves).tolist():
        move = decode_move(board, raw)
        if move is None:
            continue
        here = raw_moves == raw
        white = int((result[here] == 2).sum())
        draws = int((result[here] == 1).sum())
        black = int((result[here] == 0).sum())
        total = white + draws + black
        rating_sum = int(opponent[here].sum())
        wins, losses = (white, black) if color == "white" else (black, white)
        moves.append(
            {
                "uci": board.uci(move),
                "san": board.san(move),
                "averageOpponentRating": average_rating(rating_sum, total),
                "performance": performance(wins, draws, losses, rating_sum),
                "white": white,
                "draws": draws,
                "black": black,
                "game": games.game_json(int(g[here].max())) if total == 1 else None,
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
    recent = []
    for i in np.argsort(-g, kind="stable")[:wanted].tolist():
        move = decode_move(board, int(raw_moves[i]))
        if move is not None:
            recent.append({"uci": board.uci(move), **games.game_json(int(g[i]))})
    return {**totals, "moves": moves, "recentGames": recent}
