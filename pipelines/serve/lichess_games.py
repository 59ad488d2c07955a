"""topGames and recentGames of `/lichess`, picked as lila-openingexplorer picks them
(`LichessEntry::prepare`, src/model/lichess.rs).

The candidates are a position's kept games (the 8 most recent of each move, month, speed,
rating bound and flag: the lookup files' `games`) that the filter allows. Top games come from
the rating groups the filter allows from the highest down to 2000 (none unless it allows the
highest), at most 4, ordered by the speed's leaderboard high score less the group's lower
bound, then most recent first; recent games are the other candidates, most recent first, as
many as make 8 with the top games.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from pipelines.explorer.lookup import SPEED_NAMES, TOP_BOUND
from schemas.dimensions import RATING_GROUPS

#: Games in an answer at most (lila's MAX_LICHESS_GAMES), and top games at most (MAX_TOP_GAMES).
MAX_GAMES = 8
MAX_TOP_GAMES = 4
#: Each speed's leaderboard high score, as lila-openingexplorer has them (`Speed::highscore`).
HIGHSCORES = {
    "ultrabullet": 2644,
    "bullet": 3352,
    "blitz": 2974,
    "rapid": 2949,
    "classical": 2533,
    "correspondence": 4000,
}
#: lila-openingexplorer's rating groups' lower bounds (`RatingGroup::ALL`).
LILA_BOUNDS = (*RATING_GROUPS, 2800, TOP_BOUND)
#: By speed index, and one past them for a game of no known speed; a speed Lichess has no
#: leaderboard for (over the board) scores as an unknown one.
_HIGHSCORE = np.array([HIGHSCORES.get(name, 0) for name in SPEED_NAMES] + [0], dtype=np.int32)


def top_bound(groups: tuple[int, ...]) -> int | None:
    """The lowest rating group whose games may be top games (`LichessQueryFilter::top_group`):
    from the highest group down, while the filter allows it and it is 2000 or more."""
    found = None
    for bound in reversed(LILA_BOUNDS):
        allowed = not groups or min(bound, RATING_GROUPS[-1]) in groups
        if not allowed or bound < 2000:
            break
        found = bound
    return found


class Picked(NamedTuple):
    """The candidates chosen for an answer (their indexes)."""

    top: list[int]
    recent: list[int]


def pick(
    order: np.ndarray,
    bound: np.ndarray,
    speed: np.ndarray,
    groups: tuple[int, ...],
    *,
    top_games: int | None = None,
    recent_games: int | None = None,
) -> Picked:
    """Top and recent games among candidates (the filter already applied), each given by its
    order (a later game larger), lila's rating bound and speed index; the picked candidates'
    indexes."""
    games = order.astype(np.int64)
    top: list[int] = []
    rest = np.arange(len(games))
    chosen_bound = top_bound(groups)
    if chosen_bound is not None and len(games):
        high = np.flatnonzero(bound >= chosen_bound)
        score = _HIGHSCORE[np.minimum(speed[high], len(SPEED_NAMES))].astype(np.int64) - bound[
            high
        ].astype(np.int64)
        ranked = np.lexsort((-games[high], score))[:MAX_TOP_GAMES]
        top = high[ranked].tolist()
        rest = np.flatnonzero(~np.isin(games, games[top]))
    wanted = MAX_GAMES - len(top)
    if recent_games is not None:
        wanted = min(wanted, recent_games)
    recent = rest[np.argsort(-games[rest], kind="stable")[:wanted]].tolist() if len(rest) else []
    if top_games is not None:
        top = top[:top_games]
    return Picked([int(i) for i in top], [int(i) for i in recent])
