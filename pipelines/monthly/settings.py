"""What a month's build depends on (filter, plies, book options) and how it downloads."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pipelines.books.build import BookSettings
from pipelines.ingest.game_filter import GameFilter
from pipelines.ingest.run import settings_dict


@dataclass(frozen=True)
class MonthSettings:
    """What a month's build depends on besides its source: filter, plies and book options."""

    rules: GameFilter = field(default_factory=GameFilter)
    plies: int = 20
    book: BookSettings = field(default_factory=BookSettings)
    keep_partial: bool = False
    #: Processes for the scan; results do not depend on it, so it is not recorded.
    workers: int | None = field(default=None, compare=False)

    def record(self) -> dict[str, Any]:
        """Return the settings as plain JSON values, as stored in the run manifest."""
        book = asdict(self.book)
        if book["speeds"] is not None:
            book["speeds"] = list(book["speeds"])
        return {
            "ingest": settings_dict(self.rules, self.plies),
            "book": book,
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
