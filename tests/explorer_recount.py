"""A python-chess recount of the explorer's data, done as lila-openingexplorer does it.

Written again from lila-openingexplorer's source, not from ours: `src/indexer/lichess.rs` (the
first 50 plies, each position once per game: a repeated position keeps the move played from it
last), `src/model/lichess.rs` (the 8 most recent games per move, speed and rating group of a
month; top games from the groups the filter allows down to 2000, ordered by the speed's high
score less the group's bound, then most recent; recent games the rest, most recent first; 8 in
all), `src/model/player.rs` and `src/model/stats.rs` (performance). Games are read by
`chess.pgn.read_game`, kept by the filter of tests/recount.py.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass, field
from pathlib import Path

import chess
import chess.pgn
import chess.polyglot

from tests.recount import games_where, keeps, read_text, speed

#: lila's RatingGroup::select_avg lower bounds (2800 and above is Group3200).
LILA_BOUNDS = (0, 1000, 1200, 1400, 1600, 1800, 2000, 2200, 2500, 2800, 3200)
HIGHSCORE = {"ultrabullet": 2644, "bullet": 3352, "blitz": 2974, "rapid": 2949,
             "classical": 2533, "correspondence": 4000}  # fmt: skip


def lila_bound(white: int, black: int) -> int:
    average = (white + black) // 2
    if average >= 2800:
        return 3200
    return max(b for b in LILA_BOUNDS[:9] if average >= b)


@dataclass
class Game:
    """A kept game: what the explorer shows of it, and where it went."""

    number: int  # order over all months (month, then source order): larger is more recent
    month: str
    id: str
    white: str
    black: str
    white_elo: int
    black_elo: int
    result: str
    speed: str
    rated: bool
    tournament: bool
    year: int | None
    uci: list[str]  # every move
    headers: dict[str, str]
    #: Polyglot key -> (uci, mover is White), each position once (first 50 plies or all)
    positions: dict[int, tuple[str, bool]] = field(default_factory=dict)

    @property
    def bound(self) -> int:
        return lila_bound(self.white_elo, self.black_elo)

    @property
    def group(self) -> int:
        return min(self.bound, 2500)


def read_games(
    sources: dict[str, Path], min_rating: int, speeds: set[str], *, plies: int | None = 50
) -> list[Game]:
    """Every kept game with moves, in order, with its positions counted lila's way."""
    games: list[Game] = []
    for month, path in sources.items():
        stream = io.StringIO(read_text(path))
        for game in games_where(stream, lambda h: keeps(h, min_rating, speeds, allow_bots=False)):
            headers = game.headers
            moves = list(game.mainline_moves())
            if not moves:
                continue
            site = headers.get("Site", "")
            found = re.match(r"https://lichess\.org/(\w{8})", site)
            event = headers.get("Event", "")
            date = headers.get("UTCDate") or headers.get("Date", "")
            record = Game(
                len(games), month, found.group(1) if found else "", headers["White"],
                headers["Black"], int(headers["WhiteElo"]), int(headers["BlackElo"]),
                headers["Result"], speed(headers.get("TimeControl", "")) or "",
                not event.startswith("Casual"),
                any(w in event.lower() for w in ("tournament", "arena", "swiss")),
                int(date[:4]) if date[:4].isdigit() else None, [m.uci() for m in moves],
                dict(headers),
            )  # fmt: skip
            board = game.board()
            for move in moves[:plies] if plies else moves:
                key = chess.polyglot.zobrist_hash(board)
                record.positions[key] = (board.uci(move), board.turn == chess.WHITE)
                board.push(move)
            games.append(record)
    return games


def white_view(result: str) -> str:
    return {"1-0": "white", "0-1": "black", "1/2-1/2": "draws"}[result]


def counts(games: list[Game], board: chess.Board) -> dict[str, dict[str, int]]:
    """Per move: White's view of the results and the movers' mean rating, rounded half up."""
    key = chess.polyglot.zobrist_hash(board)
    found: dict[str, dict[str, int]] = {}
    sums: dict[str, int] = {}
    for game in games:
        if key in game.positions:
            uci, white = game.positions[key]
            row = found.setdefault(uci, {"white": 0, "draws": 0, "black": 0})
            row[white_view(game.result)] += 1
            sums[uci] = sums.get(uci, 0) + (game.white_elo if white else game.black_elo)
    for uci, row in found.items():
        total = row["white"] + row["draws"] + row["black"]
        row["averageRating"] = (2 * sums[uci] + total) // (2 * total)
    return found


def lila_games(
    games: list[Game], board: chess.Board, groups: set[int] | None = None
) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(uci, id) of topGames and recentGames, picked as lila-openingexplorer picks them."""
    key = chess.polyglot.zobrist_hash(board)
    kept: dict[tuple[str, str, str, int, bool], list[Game]] = {}
    for game in games:  # in order: the last 8 of each group are the most recent
        if key in game.positions:
            uci = game.positions[key][0]
            kept.setdefault((game.month, uci, game.speed, game.bound, game.tournament), []).append(
                game
            )
    candidates = [(g, k[1]) for k, found in kept.items() for g in found[-8:]]
    candidates = [(g, u) for g, u in candidates if groups is None or g.group in groups]

    def allowed(bound: int) -> bool:
        return groups is None or min(bound, 2500) in groups

    top_bound = None
    for bound in reversed(LILA_BOUNDS):
        if not allowed(bound) or bound < 2000:
            break
        top_bound = bound
    top: list[tuple[Game, str]] = []
    if top_bound is not None:
        high = [(g, u) for g, u in candidates if g.bound >= top_bound]
        high.sort(key=lambda c: (HIGHSCORE[c[0].speed] - c[0].bound, -c[0].number))
        top = high[:4]
    chosen = {g.number for g, _ in top}
    rest = sorted((c for c in candidates if c[0].number not in chosen), key=lambda c: -c[0].number)
    recent = rest[: 8 - len(top)]
    return [(u, g.id) for g, u in top], [(u, g.id) for g, u in recent]


#: FIDE's rating differences by score in whole percent, 50% and up (table 8.1(b) of the
#: FIDE handbook B.02; below 50% they are the same, negated).
FIDE_DP = (0, 7, 14, 21, 29, 36, 43, 50, 57, 65, 72, 80, 87, 95, 102, 110, 117, 125, 133, 141,
           149, 158, 166, 175, 184, 193, 202, 211, 220, 230, 240, 251, 262, 273, 284, 296, 309,
           322, 336, 351, 366, 383, 401, 422, 444, 470, 501, 538, 589, 677, 800)  # fmt: skip


def fide_dp(percent: int) -> int:
    return FIDE_DP[percent - 50] if percent >= 50 else -FIDE_DP[50 - percent]


def performance(points_x2: int, games: int, opponents: int) -> int:
    """Mean opponent rating plus dp, interpolated between whole percents (as lila)."""
    from fractions import Fraction

    score = Fraction(50 * points_x2, games)
    whole = int(score)
    part = score - whole
    upper = fide_dp(whole + 1) if whole < 100 else 800
    value = Fraction(opponents, games) + fide_dp(whole) * (1 - part) + upper * part
    return int(value + Fraction(1, 2)) if value >= 0 else -int(-value + Fraction(1, 2))
