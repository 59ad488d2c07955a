"""What a month's build depends on: the ingest settings (filter, plies) and the book's.

This dataclass owns its defaults and checks (through the settings it holds); the command line
and the Prefect parameters (`pipelines.flows.options.BuildOptions`) read them from here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pipelines.books.settings import BookSettings
from pipelines.ingest.settings import IngestSettings


@dataclass(frozen=True)
class MonthSettings:
    """What a month's build depends on besides its source: ingest settings and book options."""

    ingest: IngestSettings = field(default_factory=IngestSettings)
    book: BookSettings = field(default_factory=BookSettings)
    keep_partial: bool = False
    #: Whether the build also indexes the month for the explorer (`chesspipe explorer index`
    #: with the ingest filter: games and positions for `chesspipe serve`), into a local
    #: warehouse from a source that can be read twice (not standard input).
    explorer: bool = True
    #: Whether the explorer's games keep their moves, for the position search (`--no-games`).
    games: bool = True
    #: A month that keeps no game, or whose book no move enters, ends the build without a book
    #: (and publishes the empty month's statistics) instead of failing. Results do not depend
    #: on it (no book is ever published empty), so it is not recorded.
    allow_empty: bool = field(default=False, compare=False)
    #: Processes for the scan; results do not depend on it, so it is not recorded.
    workers: int | None = field(default=None, compare=False)

    def record(self) -> dict[str, Any]:
        """Return the settings as plain JSON values, as stored in the run manifest."""
        return {
            "ingest": self.ingest.to_json(),
            "book": self.book.record(),
            "keep_partial": self.keep_partial,
            "explorer": self.explorer,
            **({} if self.games else {"games": False}),
        }

    @classmethod
    def from_record(cls, record: Mapping[str, Any], workers: int | None = None) -> MonthSettings:
        """Return the settings a record holds (`record()`'s output), with `workers` processes."""
        book = dict(record["book"])
        if book.get("speeds") is not None:
            book["speeds"] = tuple(book["speeds"])
        return cls(
            ingest=IngestSettings.from_json(record["ingest"]),
            book=BookSettings(**book),
            keep_partial=bool(record["keep_partial"]),
            # Records written before the build indexed the explorer: it was not.
            explorer=bool(record.get("explorer", False)),
            games=bool(record.get("games", True)),
            workers=workers,
        )
