"""Speed categories of games, as Lichess names and computes them."""

from __future__ import annotations

import enum
from collections.abc import Iterable


class Speed(enum.StrEnum):
    """A Lichess speed category; its value is Lichess's name. Members run fastest first."""

    ULTRABULLET = "ultrabullet"
    BULLET = "bullet"
    BLITZ = "blitz"
    RAPID = "rapid"
    CLASSICAL = "classical"
    CORRESPONDENCE = "correspondence"

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
        """Return the speeds named, or raise ValueError naming the unknown ones."""
        names = set(names)
        unknown = names - set(cls)
        if unknown:
            raise ValueError(f"unknown speed(s) {sorted(unknown)}; choose from {', '.join(cls)}")
        return frozenset(cls(name) for name in names)

    @classmethod
    def from_time_control(cls, time_control: bytes) -> Speed | None:
        """Return the speed of a PGN TimeControl value ("base+increment" or "-"), else None.

        Lichess's rule: estimated seconds = base + 40 x increment; "-" is correspondence.
        """
        if time_control == b"-":
            return cls.CORRESPONDENCE
        base, plus, increment = time_control.partition(b"+")
        if not plus or not base.isdigit() or not increment.isdigit():
            return None
        seconds = int(base) + 40 * int(increment)
        for limit, speed in _LIMITS:
            if seconds < limit:
                return speed
        return cls.CORRESPONDENCE


_INDEX = {speed: index for index, speed in enumerate(Speed)}

#: Estimated seconds below which a game has a speed, fastest first.
_LIMITS = (
    (30, Speed.ULTRABULLET),
    (180, Speed.BULLET),
    (480, Speed.BLITZ),
    (1500, Speed.RAPID),
    (21600, Speed.CLASSICAL),
)
