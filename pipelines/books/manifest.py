"""The manifest `book build` writes beside a book (BOOK.json for BOOK.bin), as a type."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipelines.books.settings import BookSettings
from pipelines.files import file_sha256, write_json_atomic

if TYPE_CHECKING:
    from pipelines.evals.pruning import PruningCounts
    from pipelines.evals.settings import PruneSettings


@dataclass(frozen=True)
class PruningRecord:
    """How a book was pruned by evaluation: the warehouse whose store judged the moves, the
    rule's settings, and the counts (moves checked, pruned of those, unchecked)."""

    evals: str
    settings: PruneSettings
    counts: PruningCounts

    def to_json(self) -> dict[str, Any]:
        return {"evals": self.evals, **self.settings.record(), **self.counts._asdict()}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PruningRecord:
        from pipelines.evals.pruning import PruningCounts
        from pipelines.evals.settings import PruneSettings

        return cls(
            str(data["evals"]),
            PruneSettings(data.get("max_loss"), data.get("min_eval")),
            PruningCounts(int(data["checked"]), int(data["pruned"]), int(data["unchecked"])),
        )


@dataclass(frozen=True)
class BookManifest:
    """What a book was built from and what it holds.

    `entry_games` is the sum of the games behind each entry (a game counts once for every
    book move it played), not a number of games; files written before it had that name call
    it `games`, and still read. `warehouse`, `months` and `settings` find the statistics
    behind the book's moves again (pipelines.books.outcomes).
    """

    chesspipe_version: str
    out: str
    months: tuple[str, ...]
    settings: BookSettings
    entries: int
    positions: int
    entry_games: int
    size: int
    sha256: str
    seconds: float
    finished_at: str
    #: The warehouse the statistics came from (absolute); None in files written before it.
    warehouse: str | None = None
    #: The pruning by evaluation (`book build --evals`); None for a book as PolyGlot makes it.
    pruning: PruningRecord | None = None

    def to_json(self) -> dict[str, Any]:
        """Return the manifest as the JSON object its file holds."""
        return {
            "chesspipe_version": self.chesspipe_version,
            "out": self.out,
            "months": list(self.months),
            "settings": self.settings.record(),
            "entries": self.entries,
            "positions": self.positions,
            "entry_games": self.entry_games,
            "size": self.size,
            "sha256": self.sha256,
            "seconds": self.seconds,
            "finished_at": self.finished_at,
            **({"warehouse": self.warehouse} if self.warehouse is not None else {}),
            **({"evals": self.pruning.to_json()} if self.pruning is not None else {}),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> BookManifest:
        """Return the manifest a JSON object holds (the older `games` key included)."""
        settings = dict(data["settings"])
        if settings.get("speeds") is not None:
            settings["speeds"] = tuple(settings["speeds"])
        return cls(
            chesspipe_version=str(data["chesspipe_version"]),
            out=str(data["out"]),
            months=tuple(data["months"]),
            settings=BookSettings(**settings),
            entries=int(data["entries"]),
            positions=int(data["positions"]),
            entry_games=int(data["entry_games"] if "entry_games" in data else data["games"]),
            size=int(data["size"]),
            sha256=str(data["sha256"]),
            seconds=float(data["seconds"]),
            finished_at=str(data["finished_at"]),
            warehouse=str(data["warehouse"]) if data.get("warehouse") is not None else None,
            pruning=PruningRecord.from_json(data["evals"]) if data.get("evals") else None,
        )

    def write(self, path: Path) -> None:
        """Write the manifest file atomically."""
        write_json_atomic(path, self.to_json())


def book_manifest_path(book: Path) -> Path:
    """Return the manifest path beside a book: BOOK.json for BOOK.bin."""
    return Path(book).with_suffix(".json")


def read_manifest_beside(book: Path) -> BookManifest | None:
    """Return the manifest `book build` wrote beside this very book (same sha256), if any.

    Beside a book `build-month` published, its run manifest holds the book's.
    """
    try:
        data = json.loads(book_manifest_path(book).read_text())
        digest = file_sha256(Path(book))
    except (OSError, ValueError):
        return None
    if isinstance(data, dict) and isinstance(data.get("book"), dict):
        data = data["book"]  # a monthly build's manifest: the book's manifest is inside
    if not isinstance(data, dict) or data.get("sha256") != digest:
        return None
    try:
        return BookManifest.from_json(data)
    except (KeyError, TypeError, ValueError):
        return None
