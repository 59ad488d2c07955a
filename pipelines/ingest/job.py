"""One ingest run as its read strategies see it, and what a strategy counted."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from pipelines.ingest.settings import IngestSettings
from pipelines.progress import ProgressCallback
from pipelines.sources.open import Source

if TYPE_CHECKING:
    from pipelines.ingest.kept_text import KeptPart
    from pipelines.ingest.options import AlsoStaged


@dataclass(frozen=True)
class Job:
    """One ingest run as its strategies see it: what it reads, its settings, where it writes."""

    source: Source
    month: str
    warehouse: Path
    settings: IngestSettings
    #: The run's private folder for run files.
    staging: Path
    #: Rows counted in memory before a run file is written.
    flush_rows: int
    #: Most rows of runs merged in memory at once; more are merged a range of keys at a time.
    in_memory_rows: int
    progress: ProgressCallback | None
    #: time.monotonic() when the run started, for progress reports and timings.
    started: float
    keep_partial: bool
    #: Where the text of the kept games goes (ingest's `write_kept`), or None.
    write_kept: Path | None = None
    #: Files staged with the month's from the kept games (RunPolicy.also_staged), or None.
    also_staged: AlsoStaged | None = None

    @property
    def keeps_games(self) -> bool:
        """Whether the text of the kept games is staged (for write_kept or also_staged)."""
        return self.write_kept is not None or self.also_staged is not None


@dataclass(frozen=True)
class Counted:
    """What a strategy counted: opening tree hits and misses, and how to write the partition."""

    hits: int
    misses: int
    #: Writes the month's partition file at a path; returns its row count.
    write: Callable[[Path], int]
    #: Why reading stopped early, when a partial month is kept (keep_partial).
    error: str | None = None
    #: The staged text of the kept games, in source order (when they are written).
    kept: list[KeptPart] = field(default_factory=list)
