"""Flow parameters: the ingest, book and download options as one JSON-friendly model.

Its defaults are read from the settings dataclasses that own them (`GameFilter`,
`MonthSettings`, `BookSettings`, `DownloadOptions`), and so are its checks (`month_settings`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from pipelines.books.settings import BookSettings
from pipelines.games.game_filter import GameFilter
from pipelines.monthly.settings import DownloadOptions, MonthSettings

_MONTH = MonthSettings()
_DOWNLOAD = DownloadOptions()


def _default_speeds() -> list[str]:
    speeds: list[str] = _MONTH.rules.to_json()["speeds"]
    return speeds


class BuildOptions(BaseModel):
    """How a month is built: game filter, plies, book thresholds, download behaviour."""

    min_rating: int = _MONTH.rules.min_rating
    speeds: list[str] = Field(default_factory=_default_speeds)
    allow_bots: bool = _MONTH.rules.allow_bots
    plies: int = _MONTH.plies
    variant: str = _MONTH.rules.variant
    keep_partial: bool = _MONTH.keep_partial
    allow_empty: bool = _MONTH.allow_empty
    workers: int | None = _MONTH.workers
    min_games: int = _MONTH.book.min_games
    min_score: float = _MONTH.book.min_score
    book_speeds: list[str] | None = None
    min_band: int | None = _MONTH.book.min_band
    verify: bool = _DOWNLOAD.verify
    cache: str | None = None
    timeout: float = _DOWNLOAD.timeout
    retries: int = _DOWNLOAD.retries
    #: Seconds between progress lines in the flow's log.
    log_every: float = 30.0

    @classmethod
    def from_settings(cls, settings: MonthSettings, download: DownloadOptions) -> BuildOptions:
        """Return the parameters that describe these settings and download options."""
        return cls(
            min_rating=settings.rules.min_rating,
            speeds=settings.rules.to_json()["speeds"],
            allow_bots=settings.rules.allow_bots,
            plies=settings.plies,
            variant=settings.rules.variant,
            keep_partial=settings.keep_partial,
            allow_empty=settings.allow_empty,
            workers=settings.workers,
            min_games=settings.book.min_games,
            min_score=settings.book.min_score,
            book_speeds=list(settings.book.speeds) if settings.book.speeds else None,
            min_band=settings.book.min_band,
            verify=download.verify,
            cache=str(download.cache) if download.cache else None,
            timeout=download.timeout,
            retries=download.retries,
        )

    def month_settings(self) -> MonthSettings:
        """Return the settings a month's build depends on."""
        speeds: frozenset[Any] = frozenset(self.speeds)  # names: the filter checks them
        rules = GameFilter(self.min_rating, speeds, self.allow_bots, self.variant)
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
            allow_empty=self.allow_empty,
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
