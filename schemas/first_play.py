"""The first-play rank of the move statistics' `first_play` column: where in the source's file
order a move was first played, so that a book orders moves of equal weight as PolyGlot's
make-book does (docs/books.md, "Entry order").

A ply's rank is one uint64 of four fields, from the top:

- the month within the year: 0 in a month's file, the month's number - 1 in a compacted year's
  (pipelines.warehouse.yearly), so that a year's ranks order its months first;
- the unit of parallel work (a unit of zstd frames or a block of games), in source order: 0
  when one process counts the whole source;
- the game's place in its unit, in order (games that passed the filter, those that counting
  then dropped included);
- the ply within the game, from 0 (so that a game reaching a position twice ranks its moves
  by ply); a ply beyond LAST_PLY counts as LAST_PLY.

Where one process counts the whole source (`unit` None) the game's place may also take the
unit's bits. The ranks are not dense: they increase in file order, which is all a book needs.
A row's rank is the least of the plies it sums.
"""

from __future__ import annotations

PLY_BITS = 12
GAME_BITS = 26
UNIT_BITS = 22
MONTH_BITS = 4

GAME_SHIFT = PLY_BITS
UNIT_SHIFT = PLY_BITS + GAME_BITS
MONTH_SHIFT = PLY_BITS + GAME_BITS + UNIT_BITS
LAST_PLY = (1 << PLY_BITS) - 1

assert MONTH_SHIFT + MONTH_BITS == 64


class RankOverflow(ValueError):
    """A unit or a game's place does not fit its field of the first-play rank."""


def game_rank(place: int, unit: int | None) -> int:
    """Return the rank of ply 0 of the game at `place` (from 0) in `unit` (None: the one
    process counting the whole source); its ply p ranks game_rank + min(p, LAST_PLY)."""
    if unit is None:
        if place >> (MONTH_SHIFT - GAME_SHIFT):
            raise RankOverflow(f"game {place:,} of one source is beyond the first-play rank")
        return place << GAME_SHIFT
    if unit >> UNIT_BITS:
        raise RankOverflow(f"unit {unit:,} is beyond the first-play rank's {UNIT_BITS} bits")
    if place >> GAME_BITS:
        raise RankOverflow(
            f"game {place:,} of unit {unit:,} is beyond the first-play rank's {GAME_BITS} bits"
        )
    return unit << UNIT_SHIFT | place << GAME_SHIFT
