"""Flow parameters: the ingest, book and download options as one JSON-friendly model."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

from pipelines.books.build import BookSettings
from pipelines.errors import ChesspipeError
from pipelines.ingest.game_filter import GameFilter
from pipelines.monthly.settings import DownloadOptions, MonthSettings

DEFAULT_SPEEDS = ["blitz", "rapid", "classical", "correspondence"]


class BuildOptions(BaseModel):
    """How a month is built: game filter, plies, book thresholds, download behaviour."""

    min_rating: int = 2200
    speeds: list[str] = DEFAULT_SPEEDS
    allow_bots: bool = False
    plies: int = 20
    variant: str = "standard"
    keep_partial: bool = False
    workers: int | None = None
    min_games: int = 20
    min_score: float = 0.35
    book_speeds: list[str] | None = None
    min_band: int | None = None
    verify: bool = True
    cache: str | None = None
    timeout: float = 60.0
    retries: int = 5
    #: Seconds between progress lines in the flow's log.
    log_every: float = 30.0

    def month_settings(self) -> MonthSettings:
        """Return the settings a month's build depends on."""
        try:
            rules = GameFilter(
                self.min_rating, frozenset(self.speeds), self.allow_bots, self.variant
            )
        except ValueError as exc:
            raise ChesspipeError(str(exc)) from None
        book = BookSettings(
            min_games=self.min_games,
            min_score=self.min_score,
            speeds=tuple(self.book_speeds) if self.book_speeds else None,
            min_band=self.min_band,
        )
        return MonthSettings(
            rules=rules,
            plies=self.plies,
            book=book,
            keep_partial=self.keep_partial,
            workers=self.workers,
        )

    def download(self) -> DownloadOptions:
        """Return how remote sources are fetched."""
        return DownloadOptions(
            verify=self.verify,
            cache=Path(self.cache) if self.cache else None,
            timeout=self.timeout,
            retries=self.retries,
        )
