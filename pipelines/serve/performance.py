"""A performance rating as lila-openingexplorer computes it (`Stats::performance`): the
average opponent rating plus FIDE's rating difference for the score (FIDE handbook B.02.2017,
table 8.1.2), interpolated between whole percents."""

from __future__ import annotations

import math

#: Rating difference by percentage score, 0% to 100%.
DELTAS = (
    -800, -677, -589, -538, -501, -470, -444, -422, -401, -383, -366, -351, -336, -322, -309,
    -296, -284, -273, -262, -251, -240, -230, -220, -211, -202, -193, -184, -175, -166, -158,
    -149, -141, -133, -125, -117, -110, -102, -95, -87, -80, -72, -65, -57, -50, -43, -36, -29,
    -21, -14, -7, 0, 7, 14, 21, 29, 36, 43, 50, 57, 65, 72, 80, 87, 95, 102, 110, 117, 125, 133,
    141, 149, 158, 166, 175, 184, 193, 202, 211, 220, 230, 240, 251, 262, 273, 284, 296, 309,
    322, 336, 351, 366, 383, 401, 422, 444, 470, 501, 538, 589, 677, 800,
)  # fmt: skip


def rounded(value: float) -> int:
    """Rounded half away from zero, as Rust's `f64::round`."""
    return int(math.copysign(math.floor(abs(value) + 0.5), value))


def performance(wins: int, draws: int, losses: int, opponent_rating_sum: int) -> int | None:
    """The performance of a player with these results against opponents of that rating sum
    (None without games)."""
    games = wins + draws + losses
    if not games:
        return None
    average = opponent_rating_sum / games
    score = (100 * wins + 50 * draws) / games
    index = math.trunc(score)
    part = score - index
    upper = DELTAS[index + 1] if index + 1 < len(DELTAS) else 800
    return rounded(average + DELTAS[index] * (1 - part) + upper * part)
