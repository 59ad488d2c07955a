"""The masters warehouse pre-counted by year: what `/masters` sums per request.

Built once when the server starts, from the games index (every position once per game): per
(position, move, year of the game's Date) the results for White, the games with the mover's
rating and their rating sum, and the candidates of topGames, the `MAX_MASTERS_GAMES` games of
the highest rating sum of each (position, move, year), most recent first among equal sums. A
request sums the rows of its position inside since/until (a few per move, not a row per game),
and its topGames are the best of those candidates: a game of the best 15 of some years is one
of the best 15 of its own year and move, so the answer is the one a count over every game
gives.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from pipelines.serve.games_index import GamesIndex

#: topGames at most (lila's MAX_MASTERS_GAMES).
MAX_MASTERS_GAMES = 15


class YearCounts(NamedTuple):
    """A position's pre-counted rows inside since/until, one per (move, year)."""

    moves: np.ndarray  # Polyglot moves
    white: np.ndarray  # games won by White
    draws: np.ndarray
    black: np.ndarray
    rated: np.ndarray  # games with the mover's rating
    rating_sum: np.ndarray  # of the mover's ratings


class Candidates(NamedTuple):
    """A position's topGames candidates inside since/until, best first."""

    moves: np.ndarray  # Polyglot moves
    games: np.ndarray  # game numbers of the games index


class MastersIndex:
    """Per (position, move, year) counts and topGames candidates, sorted by position."""

    def __init__(self, games: GamesIndex) -> None:
        g = games.games.astype(np.int64)
        year = games.year[g]
        result = games.result[g]
        mover = np.where(games.white_moved, games.white_elo[g], games.black_elo[g])
        rating_sum = games.white_elo[g].clip(0).astype(np.int64) + games.black_elo[g].clip(0)
        # Rows by position, move and year; inside each, the highest rating sum first, then
        # the most recent game.
        order = np.lexsort((-g, -rating_sum, year, games.moves, games.keys))
        keys, moves, year = games.keys[order], games.moves[order], year[order]
        n = len(order)
        starts = np.flatnonzero(
            np.r_[
                n > 0,
                (keys[1:] != keys[:-1]) | (moves[1:] != moves[:-1]) | (year[1:] != year[:-1]),
            ]
        )
        self.keys, self.moves, self.year = keys[starts], moves[starts], year[starts]
        result, mover = result[order], mover[order]
        self.white = _sums(result == 2, starts)
        self.draws = _sums(result == 1, starts)
        self.black = _sums(result == 0, starts)
        self.rated = _sums(mover >= 0, starts)
        self.rating_sum = _sums(mover.clip(0), starts)
        rank = np.arange(n) - np.repeat(starts, np.diff(np.r_[starts, n]))
        kept = np.flatnonzero(rank < MAX_MASTERS_GAMES)
        self.top_keys = keys[kept]
        self.top_moves = moves[kept]
        self.top_year = year[kept]
        self.top_games = g[order][kept]
        self.top_sum = rating_sum[order][kept]

    def counts(self, key: int, *, since: int | None, until: int | None) -> YearCounts:
        """The position's rows of the years inside since/until (a game of no known year is
        inside when neither is given)."""
        rows = _rows(self.keys, key)
        keep = _in_years(self.year[rows], since, until)
        return YearCounts(
            moves=self.moves[rows][keep],
            white=self.white[rows][keep],
            draws=self.draws[rows][keep],
            black=self.black[rows][keep],
            rated=self.rated[rows][keep],
            rating_sum=self.rating_sum[rows][keep],
        )

    def candidates(self, key: int, *, since: int | None, until: int | None) -> Candidates:
        """The position's topGames candidates inside since/until, the highest rating sum first,
        then the most recent."""
        rows = _rows(self.top_keys, key)
        keep = _in_years(self.top_year[rows], since, until)
        games = self.top_games[rows][keep]
        order = np.lexsort((-games, -self.top_sum[rows][keep]))
        return Candidates(self.top_moves[rows][keep][order], games[order])


def _sums(values: np.ndarray, starts: np.ndarray) -> np.ndarray:
    if not len(starts):
        return np.zeros(0, dtype=np.int64)
    found: np.ndarray = np.add.reduceat(values.astype(np.int64), starts)
    return found


def _rows(keys: np.ndarray, key: int) -> slice:
    value = np.uint64(key)
    low = int(np.searchsorted(keys, value, "left"))
    return slice(low, int(np.searchsorted(keys, value, "right")))


def _in_years(year: np.ndarray, since: int | None, until: int | None) -> np.ndarray:
    keep = np.ones(len(year), dtype=bool)
    if since is not None:
        keep &= year >= since
    if until is not None:
        keep &= (year <= until) & (year >= 0)
    return keep
