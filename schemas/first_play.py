"""The first-play rank of the move statistics' `first_play` column: where in the source's file
order a move was first played, so that a book orders moves of equal weight as PolyGlot's
make-book does (docs/books.md, "Entry order").

A ply's rank is one uint64 of three fields, from the top:

- the month within the year: 0 in a month's file, the month's number - 1 in a compacted year's
  (pipelines.warehouse.yearly), so that a year's ranks order its months first;
- the game's place in the source (from 0, in file order), among the games that passed the
  filter (those that counting then dropped included: the places have gaps);
- the visit: how many times the game reached the ply's position before (0 but for a position
  repeated within the plies counted), so that a game playing two moves from one position ranks
  them by ply; a visit beyond LAST_VISIT counts as LAST_VISIT.

Ranks are compared only between moves of one position, so the visit stands in for the ply, and
costs next to nothing in a file (it is nearly always 0, where a ply would be noise in every
row). A row's rank is the least of the plies it sums. Games counted in units (of zstd frames,
or of blocks of games) by worker processes are placed in their unit first; the merge then adds
the games of the units before (`rebase`), so that a month's file is the same however it was
read.
"""

from __future__ import annotations

from typing import Any

VISIT_BITS = 3
GAME_BITS = 57
MONTH_BITS = 4

MONTH_SHIFT = VISIT_BITS + GAME_BITS
LAST_VISIT = (1 << VISIT_BITS) - 1

assert MONTH_SHIFT + MONTH_BITS == 64

#: While a month is counted (rows, run files, their sums), a ply's rank carries in its top bit
#: whether Black is to move in its position: the month field is 0 in a month, and the rows
#: summed into one share their key, so their side (a Polyglot key holds it), and the least of
#: their ranks keeps it. The month's file has the bit as its `white_to_move` column
#: (`side_of`), its ranks without it.
BLACK_TO_MOVE = 1 << 63


def side_of(ranks: Any) -> tuple[Any, Any]:
    """Split counted ranks (a NumPy uint64 array) into (white to move, ranks without the
    side)."""
    import numpy as np

    black = np.uint64(BLACK_TO_MOVE)
    return (ranks & black) == 0, ranks & ~black


class RankOverflow(ValueError):
    """A game's place does not fit its field of the first-play rank."""


def game_rank(place: int) -> int:
    """Return the rank of a first visit of the game at `place` (from 0); its visit v of a
    position ranks game_rank + min(v, LAST_VISIT)."""
    if place >> GAME_BITS:
        raise RankOverflow(f"game {place:,} is beyond the first-play rank's {GAME_BITS} bits")
    return place << VISIT_BITS


def rebase(games_before: int) -> int:
    """Return what a rank counted in a unit gains when `games_before` games came before it."""
    return game_rank(games_before)
