"""Speed categories of games, as Lichess names and computes them, and `otb` for games whose
time control is not known (over the board, or a TimeControl tag absent or unreadable)."""

from __future__ import annotations

import enum
from collections.abc import Iterable


class Speed(enum.StrEnum):
    """A Lichess speed category; its value is Lichess's name. Members run fastest first, then
    OTB: a game whose time control is not known (no TimeControl tag, `?`, or a value not
    read), as over-the-board collections have them."""

    ULTRABULLET = "ultrabullet"
    BULLET = "bullet"
    BLITZ = "blitz"
    RAPID = "rapid"
    CLASSICAL = "classical"
    CORRESPONDENCE = "correspondence"
    OTB = "otb"

    @property
    def ordinal(self) -> int:
        """Position in Lichess's order, 0 for ultrabullet: how runs store a speed."""
        return _INDEX[self]

    @property
    def api_name(self) -> str:
        """The name Lichess's APIs (the opening explorer's `speeds`) spell it with: camelCase."""
        return "ultraBullet" if self is Speed.ULTRABULLET else self.value

    @classmethod
    def parse_many(cls, names: Iterable[str]) -> frozenset[Speed]:
        """Return the speeds named (ALL, "all", names every one), or raise ValueError naming
        the unknown ones."""
        names = set(names)
        if ALL in names:
            return frozenset(cls)
        unknown = names - set(cls)
        if unknown:
            raise ValueError(
                f"unknown speed(s) {sorted(unknown)}; choose from {', '.join(cls)} or {ALL}"
            )
        return frozenset(cls(name) for name in names)

    @classmethod
    def from_time_control(cls, time_control: bytes) -> Speed | None:
        """Return the speed of a PGN TimeControl value, else None (`?`, or not read).

        Lichess's rule: estimated seconds = base + 40 x increment ("base+increment"); "-" is
        correspondence. The PGN standard's other forms estimate the seconds of 40 moves from
        the first period: "300" (sudden death) and "*300" (sandclock) are 300, "40/7200" is
        7200 and "1/259200" (chess.com's daily games) 40 x 259200; "40/7200:3600" reads its
        first period.
        """
        if time_control == b"-":
            return cls.CORRESPONDENCE
        seconds = _estimated_seconds(time_control)
        if seconds is None:
            return None
        for limit, speed in _LIMITS:
            if seconds < limit:
                return speed
        return cls.CORRESPONDENCE


#: The name that selects every speed.
ALL = "all"


def _estimated_seconds(time_control: bytes) -> int | None:
    """Return the estimated seconds of 40 moves of a TimeControl's first period, else None."""
    first = time_control.split(b":", 1)[0].removeprefix(b"*")
    base, plus, increment = first.partition(b"+")
    if plus:
        if not base.isdigit() or not increment.isdigit():
            return None
        return int(base) + 40 * int(increment)
    moves, slash, seconds = first.partition(b"/")
    if not slash:
        return int(first) if first.isdigit() else None
    if not moves.isdigit() or not seconds.isdigit() or int(moves) == 0:
        return None
    return int(seconds) * 40 // int(moves)


_INDEX = {speed: index for index, speed in enumerate(Speed)}

#: Estimated seconds below which a game has a speed, fastest first.
_LIMITS = (
    (30, Speed.ULTRABULLET),
    (180, Speed.BULLET),
    (480, Speed.BLITZ),
    (1500, Speed.RAPID),
    (21600, Speed.CLASSICAL),
)
