"""What a month's build depends on (filter, plies, book options) and how it downloads.

These dataclasses own the defaults and their checks; the command line and the Prefect
parameters (`pipelines.flows.options.BuildOptions`) read them from here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipelines.books.settings import BookSettings
from pipelines.games.game_filter import GameFilter
from pipelines.ingest.settings import IngestSettings

#: Plies counted per game: the ingest settings' own default, written in one place.
DEFAULT_PLIES: int = IngestSettings().plies


@dataclass(frozen=True)
class MonthSettings:
    """What a month's build depends on besides its source: filter, plies and book options."""

    rules: GameFilter = field(default_factory=GameFilter)
    plies: int = DEFAULT_PLIES
    book: BookSettings = field(default_factory=BookSettings)
    keep_partial: bool = False
    #: A month that keeps no game, or whose book no move enters, ends the build without a book
    #: (and publishes the empty month's statistics) instead of failing. Results do not depend
    #: on it (no book is ever published empty), so it is not recorded.
    allow_empty: bool = field(default=False, compare=False)
    #: Processes for the scan; results do not depend on it, so it is not recorded.
    workers: int | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        self.ingest  # noqa: B018 - the ingest settings check plies (SettingError)

    @property
    def ingest(self) -> IngestSettings:
        """The settings the month's move statistics depend on."""
        return IngestSettings(self.rules, self.plies)

    def record(self) -> dict[str, Any]:
        """Return the settings as plain JSON values, as stored in the run manifest."""
        return {
            "ingest": self.ingest.to_json(),
            "book": self.book.record(),
            "keep_partial": self.keep_partial,
        }


@dataclass(frozen=True)
class DownloadOptions:
    """How a remote source is fetched: checksum verification, cache folder, retries."""

    verify: bool = True
    cache: Path | None = None
    timeout: float = 60.0
    retries: int = 5
    backoff: float = 1.0

    def http_options(self) -> dict[str, Any]:
        """Return the keyword arguments of `pipelines.sources.http.open_url`."""
        return {
            "timeout": self.timeout,
            "retries": self.retries,
            "backoff": self.backoff,
            "cache": self.cache,
        }
