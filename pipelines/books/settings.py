"""Book settings, their defaults and their checks: which moves enter a book, what a report shows."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

from pipelines.errors import SettingError
from schemas.speed import Speed


@dataclass(frozen=True)
class BookSettings:
    """Which moves enter a book: games, score, and optional filters on the stored dimensions.

    The one home of these defaults: the command line and the flows' parameters read them here.
    """

    min_games: int = 20
    min_score: float = 0.35
    speeds: tuple[str, ...] | None = None
    min_band: int | None = None
    side: Literal["white", "black"] | None = None

    def __post_init__(self) -> None:
        if self.side not in (None, "white", "black"):
            raise SettingError("BookSettings", "side", f"must be white or black, got {self.side!r}")
        if self.min_games < 1:
            raise SettingError("BookSettings", "min_games", "must be at least 1")
        if not 0.0 <= self.min_score <= 1.0:
            raise SettingError("BookSettings", "min_score", "must be between 0 and 1")
        if self.speeds is not None:
            unknown = set(self.speeds) - set(Speed)
            if unknown:
                says = f"unknown speed(s) {sorted(unknown)}"
                raise SettingError("BookSettings", "speeds", says=says)

    def record(self) -> dict[str, Any]:
        """Return the settings as plain JSON values, as manifests store them."""
        data = asdict(self)
        if self.speeds is not None:
            data["speeds"] = list(self.speeds)
        if self.side is None:
            del data["side"]  # so that books of both sides record what they recorded before
        return data


#: The opening tree's default depth, and moves shown per position by ply (the last repeating).
TREE_PLIES = 4
TREE_WIDTH = (5, 3)
#: How far the coverage walk goes by default: plies, and positions in all.
COVERAGE_PLIES = 60
COVERAGE_POSITIONS = 200_000


@dataclass(frozen=True)
class ReportSettings:
    """What a report shows: the opening tree's depth and width, the coverage walk's limits."""

    plies: int = TREE_PLIES
    width: tuple[int, ...] = TREE_WIDTH
    max_plies: int = COVERAGE_PLIES
    max_positions: int = COVERAGE_POSITIONS

    def __post_init__(self) -> None:
        if self.plies < 1 or self.max_plies < 0 or self.max_positions < 1:
            says = "{plies} and {max_positions} must be at least 1, {max_plies} at least 0"
            also = ("max_positions", "max_plies")
            raise SettingError("ReportSettings", "plies", says=says, also=also)
        if not self.width or min(self.width) < 1:
            raise SettingError("ReportSettings", "width", says="every {width} must be at least 1")


#: How deep a dump goes by default, and at most, in plies.
DUMP_PLIES = 12
DUMP_MOST_PLIES = 400


@dataclass(frozen=True)
class DumpSettings:
    """Which of a book's lines a dump writes: how deep, and the lightest move it follows."""

    plies: int = DUMP_PLIES
    min_weight: int = 1

    def __post_init__(self) -> None:
        if not 1 <= self.plies <= DUMP_MOST_PLIES:
            raise SettingError("DumpSettings", "plies", f"must be from 1 to {DUMP_MOST_PLIES}")
        if self.min_weight < 1:
            raise SettingError("DumpSettings", "min_weight", "must be at least 1")
