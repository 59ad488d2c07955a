"""Which moves enter a book: the book settings, their defaults and their checks."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from pipelines.errors import ChesspipeError
from schemas.dimensions import SPEEDS


@dataclass(frozen=True)
class BookSettings:
    """Which moves enter a book: games, score, and optional filters on the stored dimensions.

    The one home of these defaults: the command line and the flows' parameters read them here.
    """

    min_games: int = 20
    min_score: float = 0.35
    speeds: tuple[str, ...] | None = None
    min_band: int | None = None

    def __post_init__(self) -> None:
        if self.min_games < 1:
            raise ChesspipeError("min_games must be at least 1")
        if not 0.0 <= self.min_score <= 1.0:
            raise ChesspipeError("min_score must be between 0 and 1")
        if self.speeds is not None:
            unknown = set(self.speeds) - set(SPEEDS)
            if unknown:
                raise ChesspipeError(f"unknown speed(s) {sorted(unknown)}")

    def record(self) -> dict[str, Any]:
        """Return the settings as plain JSON values, as manifests store them."""
        data = asdict(self)
        if self.speeds is not None:
            data["speeds"] = list(self.speeds)
        return data
