"""Counting the kept games of blocks of text into run files of statistics.

This runs wherever the games are scanned: in the process reading the source, or in a worker
process (pipelines.ingest.parallel). python-chess, NumPy and pyarrow are imported once a game
is kept, not before.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from pipelines.games.dedupe import MainLines
from pipelines.games.game_filter import ScanStats
from pipelines.games.scan import kept_games_in_blocks
from pipelines.ingest.kept_text import KeptText

if TYPE_CHECKING:
    from pipelines.games.game_filter import KeptGame
    from pipelines.ingest.counting import MoveCounter, OpeningTree
    from pipelines.ingest.settings import IngestSettings


#: Rows of (key, move, ...) held in memory before they are aggregated into a run file.
FLUSH_ROWS = 2_000_000

#: Runs with at most this many rows in all are merged in memory (about 40 bytes a row).
IN_MEMORY_ROWS = 4_000_000


class CountedRuns(NamedTuple):
    """What a counter wrote: its run files, the opening tree it used (None if no game came and
    none was given) and how many games it was handed (the places of their first-play ranks,
    schemas.first_play)."""

    runs: list[Path]
    tree: OpeningTree | None
    games: int


class RunCounter:
    """Counts games that passed the filter, handed over one at a time, into run files under
    staging; `finish` returns the run files, the opening tree used and the games handed over.

    `lines` leaves out a game whose main line repeats one it saw before (dedupe), shared by the
    counters that hand it to each other; `tree` likewise (None: a new one when a game comes).
    The games are placed for their first-play ranks in the order they are handed over.
    """

    def __init__(
        self,
        settings: IngestSettings,
        stats: ScanStats,
        staging: Path,
        *,
        prefix: str = "run",
        flush_rows: int = FLUSH_ROWS,
        tree: OpeningTree | None = None,
        lines: MainLines | None = None,
    ) -> None:
        self.settings = settings
        self.stats = stats
        self.staging = staging
        self.prefix = prefix
        self.flush_rows = flush_rows
        self.tree = tree
        self.lines = lines
        self.runs: list[Path] = []
        self._counter: MoveCounter | None = None

    def add(self, kept: KeptGame) -> None:
        """Count a game (or leave it out as a duplicate)."""
        counter = self._counter
        if counter is None:  # python-chess and NumPy are imported once a game is kept
            from pipelines.ingest.counting import MoveCounter

            chess960 = self.settings.rules.variant == "chess960"
            counter = MoveCounter(self.settings.plies, self.stats, self.tree, chess960)
            self._counter = counter
            self.tree = counter.tree
        if self.lines is not None and self.lines.repeats(kept):
            counter.skip("duplicate")
            return
        counter.add(kept)
        if len(counter.rows) >= self.flush_rows:
            self.runs.append(_write_counted(counter, self._next_run()))

    def finish(self) -> CountedRuns:
        """Count what is pending and write the last run file; return the run files, tree and
        games handed over."""
        counter = self._counter
        if counter is not None:
            counter.flush()
            if len(counter.rows):
                self.runs.append(_write_counted(counter, self._next_run()))
            self.tree = counter.tree
        return CountedRuns(self.runs, self.tree, counter.added if counter is not None else 0)

    def _next_run(self) -> Path:
        return _run_path(self.staging, self.prefix, len(self.runs))


def count_kept(
    games: Iterable[KeptGame],
    settings: IngestSettings,
    stats: ScanStats,
    staging: Path,
    *,
    prefix: str = "run",
    flush_rows: int = FLUSH_ROWS,
    tree: OpeningTree | None = None,
) -> CountedRuns:
    """Count the first plies of games that passed the filter into run files under staging
    (those whose main line repeats one before left out, with the settings' dedupe).
    """
    counter = RunCounter(
        settings,
        stats,
        staging,
        prefix=prefix,
        flush_rows=flush_rows,
        tree=tree,
        lines=MainLines() if settings.dedupe else None,
    )
    for kept in games:
        counter.add(kept)
    return counter.finish()


def _run_path(staging: Path, prefix: str, number: int) -> Path:
    """Return the path of the run file `number` (from 0) of those named after `prefix`."""
    return staging / f"{prefix}-{number:05d}.run"


def _write_counted(counter: MoveCounter, path: Path) -> Path:
    """Write the rows counted so far as a run file, and start new rows; return its path."""
    from pipelines.ingest.runs import from_rows, write_run

    write_run(from_rows(counter.take_rows()), path)
    return path


def count_games(
    blocks: Iterable[bytes],
    settings: IngestSettings,
    stats: ScanStats,
    staging: Path,
    *,
    prefix: str = "run",
    flush_rows: int = FLUSH_ROWS,
    tree: OpeningTree | None = None,
    kept_elsewhere: Iterable[KeptGame] = (),
    kept_text_file: Path | None = None,
) -> CountedRuns:
    """Count the first plies of the games of blocks (from game_blocks) that pass the filter,
    after `kept_elsewhere` (games that passed it where they were read), into run files under
    staging.

    Return the run files, the opening tree used and the games that passed (CountedRuns).
    With `kept_text_file`, the text of the games of blocks that pass is staged there (KeptText);
    the scan counts then name those counting dropped (ScanStats.rejected).
    """
    text = KeptText(kept_text_file) if kept_text_file is not None else None
    try:
        passed = kept_games_in_blocks(
            blocks, settings.rules, stats, keep=text.add if text is not None else None
        )
        return count_kept(
            chain(kept_elsewhere, passed),
            settings,
            stats,
            staging,
            prefix=prefix,
            flush_rows=flush_rows,
            tree=tree,
        )
    finally:
        if text is not None:
            text.close()
