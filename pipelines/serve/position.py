"""One position of the explorer, asked from Python: what `/lichess` answers, as typed values."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple


class ExplorerMove(NamedTuple):
    """A move played in the position: UCI and SAN, games won by White, drawn and won by Black,
    and the movers' average rating (None without one)."""

    uci: str
    san: str
    white: int
    draws: int
    black: int
    average_rating: int | None

    @property
    def games(self) -> int:
        return self.white + self.draws + self.black


class ExplorerPosition(NamedTuple):
    """The games through a position (White wins, draws, Black wins), its moves (most played
    first) and the opening it is in (ECO, name; None where no named line leads to it)."""

    white: int
    draws: int
    black: int
    moves: tuple[ExplorerMove, ...]
    opening: tuple[str, str] | None

    @property
    def games(self) -> int:
        return self.white + self.draws + self.black


def explore(
    warehouse: str | Path,
    *,
    fen: str | None = None,
    play: Sequence[str] = (),
    speeds: Sequence[str] = (),
    ratings: Sequence[int] = (),
    since: str | None = None,
    until: str | None = None,
    moves: int | None = None,
) -> ExplorerPosition:
    """What the explorer answers for the position `fen` (the start position by default) after
    the UCI moves `play`, over the warehouse's months, as `chesspipe serve` answers `/lichess`
    (the same filters: Lichess's speed names, rating groups, `since`/`until` as YYYY-MM, the
    most moves listed). Raises BadRequest (pipelines.serve.params) for a query the server
    would refuse."""
    from pipelines.serve.explorer import Explorer

    args = {"play": ",".join(play)}
    for name, value in (
        ("fen", fen),
        ("speeds", ",".join(speeds)),
        ("ratings", ",".join(str(r) for r in ratings)),
        ("since", since),
        ("until", until),
        ("moves", None if moves is None else str(moves)),
    ):
        if value:
            args[name] = value
    explorer = Explorer(Path(warehouse))
    try:
        answer = explorer.lichess(args)
    finally:
        explorer.close()
    opening = answer.get("opening")
    return ExplorerPosition(
        answer["white"],
        answer["draws"],
        answer["black"],
        tuple(
            ExplorerMove(
                m["uci"], m["san"], m["white"], m["draws"], m["black"], m.get("averageRating")
            )
            for m in answer["moves"]
        ),
        None if not opening else (opening["eco"], opening["name"]),
    )
