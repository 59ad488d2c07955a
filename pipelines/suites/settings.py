"""The settings of suite building and learning, their defaults and their checks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pipelines.errors import SettingError


@dataclass(frozen=True)
class SuiteSettings:
    """Which exits a suite holds.

    Exits are the positions reached at plies `first_ply` to `last_ply` by at least `min_games`
    games, walking the statistics' moves from the start position; a line goes on through a move
    only while at least `stop_early` games played it (`min_games` when None). `side` keeps one
    side to move; `count` draws that many exits with `seed` (`white_share` of them with White
    to move); `window` (centipawns from the side to move, both ends included) or `draw_rate`
    (the engine's WDL model) keeps the exits whose stored evaluation lies in it.
    """

    first_ply: int = 8
    last_ply: int = 16
    min_games: int = 10
    stop_early: int | None = None
    side: Literal["white", "black"] | None = None
    white_share: float | None = None
    count: int | None = None
    seed: int = 0
    window: tuple[int, int] | None = None
    draw_rate: tuple[float, float] | None = None

    def __post_init__(self) -> None:
        if not 1 <= self.first_ply <= self.last_ply:
            says = "{first_ply} must be at least 1 and at most {last_ply}"
            raise SettingError("SuiteSettings", "first_ply", says=says, also=("last_ply",))
        if self.last_ply > MOST_PLIES:
            raise SettingError("SuiteSettings", "last_ply", f"must be at most {MOST_PLIES}")
        for name in ("min_games", "stop_early", "count"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise SettingError("SuiteSettings", name, "must be at least 1")
        if self.side not in (None, "white", "black"):
            raise SettingError("SuiteSettings", "side", "must be white or black")
        if self.white_share is not None:
            if not 0.0 <= self.white_share <= 1.0:
                raise SettingError("SuiteSettings", "white_share", "must be between 0 and 1")
            if self.count is None or self.side is not None:
                says = "{white_share} needs {count} and both sides to move"
                raise SettingError("SuiteSettings", "white_share", says=says, also=("count",))
        if self.window is not None and self.draw_rate is not None:
            says = "give one of {window} and {draw_rate}"
            raise SettingError("SuiteSettings", "window", says=says, also=("draw_rate",))
        if self.window is not None and self.window[0] > self.window[1]:
            raise SettingError("SuiteSettings", "window", "must be LOW..HIGH with LOW <= HIGH")
        if self.draw_rate is not None:
            low, high = self.draw_rate
            if not 0.0 <= low <= high <= 1.0:
                says = "{draw_rate} must be LOW..HIGH within 0..1"
                raise SettingError("SuiteSettings", "draw_rate", says=says)

    @property
    def least_line_games(self) -> int:
        """The games a move needs for a line to go on through it."""
        return self.min_games if self.stop_early is None else self.stop_early

    @property
    def judged(self) -> bool:
        """Whether exits are kept by their evaluations."""
        return self.window is not None or self.draw_rate is not None

    def record(self) -> dict[str, Any]:
        """The settings as plain JSON values, as the suite's manifest stores them."""
        return {
            "plies": [self.first_ply, self.last_ply],
            "min_games": self.min_games,
            "stop_early": self.least_line_games,
            "side": self.side,
            "white_share": self.white_share,
            "count": self.count,
            "seed": self.seed,
            "window": None if self.window is None else list(self.window),
            "draw_rate": None if self.draw_rate is None else list(self.draw_rate),
        }


#: The deepest exit a suite takes (statistics count 20 plies by default; a deeper exit needs
#: months ingested with more `--plies`).
MOST_PLIES = 100


@dataclass(frozen=True)
class LearnSettings:
    """How matches prune a suite: an exit with at least `min_games` games is dropped when its
    draw rate lies outside `draw_rate` (both ends included), as fishtest's second UHO suite
    was pruned."""

    min_games: int = 10
    draw_rate: tuple[float, float] = (0.1, 0.9)

    def __post_init__(self) -> None:
        if self.min_games < 1:
            raise SettingError("LearnSettings", "min_games", "must be at least 1")
        low, high = self.draw_rate
        if not 0.0 <= low <= high <= 1.0:
            says = "{draw_rate} must be LOW..HIGH within 0..1"
            raise SettingError("LearnSettings", "draw_rate", says=says)

    def record(self) -> dict[str, Any]:
        return {"min_games": self.min_games, "draw_rate": list(self.draw_rate)}
