"""Ingest on several cores: units of games scanned and counted in worker processes.

A unit is a range of a pzstd-style file's frames, which the worker reads itself (scan_unit), or
blocks of whole games read in order here, from any source (count_blocks_unit); the units run
by games.parallel's driver. Each unit's runs are files in the run's staging folder; its kept
games' text too, when asked for.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Executor
from contextlib import closing
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from pipelines.games.allocator import reuse_large_buffers
from pipelines.games.frames import Frame, unit_name
from pipelines.games.game_filter import KeptGame, ScanStats
from pipelines.games.parallel import block_units, in_order, open_unit
from pipelines.games.plan import ReadPlan
from pipelines.games.scan import game_blocks, kept_games_in_blocks
from pipelines.ingest.count_runs import count_games
from pipelines.ingest.job import Counted, Job
from pipelines.ingest.kept_text import KeptPart, KeptText
from pipelines.ingest.settings import IngestSettings
from pipelines.sources.open import OpenSource

if TYPE_CHECKING:
    from pipelines.ingest.counting import OpeningTree


def scan_unit(
    location: str,
    frames: list[Frame],
    unit: range,
    settings: IngestSettings,
    staging: Path,
    flush_rows: int,
    write_kept: bool = False,
) -> UnitCounts:
    """Count the games one unit of frames owns (see UnitText), read from the source here."""
    stats = ScanStats()
    with open_unit(location, frames, unit) as text:
        # Only the last unit's text ends where the source ends: its tail tells a cut source.
        blocks = game_blocks(text, stats, check_end=unit.stop == len(frames))
        counts = _count_unit(unit.start, stats, settings, staging, flush_rows, write_kept, blocks)
    stats.pgn_bytes = text.own_length
    return counts


def count_blocks_unit(
    index: int,
    blocks: list[bytes],
    settings: IngestSettings,
    staging: Path,
    flush_rows: int,
    write_kept: bool = False,
) -> UnitCounts:
    """Count the games of blocks of whole games (from game_blocks), the unit `index` in order.

    The text's own counts (bytes, line ends, oversized and cut games) were taken where it was
    split into blocks; these are the filter's and the counting's.
    """
    return _count_unit(index, ScanStats(), settings, staging, flush_rows, write_kept, blocks)


def count_kept_unit(
    index: int, games: list[KeptGame], settings: IngestSettings, staging: Path, flush_rows: int
) -> UnitCounts:
    """Count games that passed the filter where the text was read, the unit `index` in order
    (their text, if asked for, was staged there)."""
    return _count_unit(index, ScanStats(), settings, staging, flush_rows, False, (), games)


class UnitCounts(NamedTuple):
    """What a unit of work counted: its scan counts, run files, opening tree hits/misses and
    the games that passed the filter (their first-play ranks are placed in the unit: the merge
    adds the games of the units before)."""

    stats: ScanStats
    runs: list[Path]
    hits: int
    misses: int
    games: int


def _count_unit(
    index: int,
    stats: ScanStats,
    settings: IngestSettings,
    staging: Path,
    flush_rows: int,
    write_kept: bool,
    blocks: Iterable[bytes],
    games: Iterable[KeptGame] = (),
) -> UnitCounts:
    """Count `games` that passed the filter, then those of `blocks` that pass it, into run files
    named after unit `index` under staging (count_runs.count_games).

    With `write_kept`, the text of the games of `blocks` kept is staged in the unit's `.kept`
    file under staging (_kept_path), and the scan counts name those counting dropped
    (ScanStats.rejected).
    """
    reuse_large_buffers()  # a worker started by a fork server has its own allocator settings
    # The opening tree is kept across the units of this worker process (openings repeat).
    global _TREE
    before = (_TREE.hits, _TREE.misses) if _TREE is not None else (0, 0)
    counted = count_games(
        blocks,
        settings,
        stats,
        staging,
        prefix=unit_name(index),
        flush_rows=flush_rows,
        tree=_TREE,
        kept_elsewhere=games,
        kept_text_file=_kept_path(staging, index) if write_kept else None,
    )
    _TREE = counted.tree
    after = (_TREE.hits, _TREE.misses) if _TREE is not None else (0, 0)
    hits, misses = after[0] - before[0], after[1] - before[1]
    return UnitCounts(stats, counted.runs, hits, misses, counted.games)


_TREE: OpeningTree | None = None


def _kept_path(staging: Path, index: int) -> Path:
    """Return where the text of the games unit `index` kept is staged."""
    return staging / f"{unit_name(index)}.kept"


def count_units(
    opened: OpenSource,
    plan: ReadPlan,
    job: Job,
    stats: ScanStats,
    executor: Executor,
    *,
    merge_there: bool,
) -> Counted:
    """Scan the plan's units of frames on an executor: worker processes, or Dask's.

    For a local file this process hashes it meanwhile; a URL is read only by the workers. With
    `merge_there`, the executor's workers also merge the runs (see merge_in_worker); else this
    process does.
    """
    hash_source = opened.kind == "file"
    frames = plan.frames
    write_kept = job.keeps_games
    common = (job.settings, job.staging, job.flush_rows, write_kept)
    units = (
        (
            (unit.start, sum(frames[i].size for i in unit)),
            partial(scan_unit, opened.name, frames, unit, *common),
        )
        for unit in plan.units
    )
    merge_ready = merge_there

    def idle() -> bool:
        """Work here while the workers scan; return whether there is more."""
        nonlocal merge_ready
        if not merge_ready:
            # The merge that follows needs pyarrow and NumPy: import them while the workers scan.
            import pyarrow.parquet  # noqa: F401

            merge_ready = True
            return True
        # Hash the file in the gaps: the manifest records its sha256.
        return hash_source and bool(opened.reader.read(4 << 20))

    gathered = _Gathered(job, stats, opened.size)
    with closing(in_order(executor, units, in_flight=len(plan.units), idle=idle)) as results:
        for (place, size), counts in results:
            gathered.add(place, size, counts)
    while hash_source and opened.reader.read(4 << 20):
        pass
    return gathered.counted(executor if merge_there else None)


def count_blocks(
    blocks: Iterator[bytes],
    job: Job,
    stats: ScanStats,
    executor: Executor,
    *,
    unit_bytes: int,
    in_flight: int,
    mark: Callable[[], int],
    total: int | None,
    ready: Callable[[], bool] = lambda: True,
) -> Counted:
    """Count blocks of whole games read here in order, in units of about `unit_bytes`, on an
    executor whose workers also merge the runs (see merge_in_worker).

    At most `in_flight` units wait or run at once: memory stays bounded whatever the source's
    size. `mark()` tells how many of the source's `total` bytes have been read, for progress.
    Until `ready()` (the workers have started), this process scans the units itself and sends
    the workers the games kept, at most KEPT_UNIT_GAMES at a time, rather than wait.
    """
    common = (job.settings, job.staging, job.flush_rows)
    write_kept = job.keeps_games

    def units() -> Iterator[tuple[tuple[int, int], Callable[[], UnitCounts]]]:
        """Each unit's place in source order and share of the bytes read, and its call."""
        read = sent = 0  # source bytes read, units sent
        here: _KeptHere | None = None

        def placed(
            call: Callable[[], UnitCounts],
        ) -> tuple[tuple[int, int], Callable[[], UnitCounts]]:
            nonlocal read, sent
            now = mark()
            key = (sent, now - read)
            read, sent = now, sent + 1
            return key, call

        def from_here() -> tuple[tuple[int, int], Callable[[], UnitCounts]]:
            nonlocal here
            assert here is not None and here.index == sent
            games = here.close()
            here = None
            return placed(partial(count_kept_unit, sent, games, *common))

        try:
            for unit in block_units(blocks, unit_bytes):
                if not ready():
                    here = here or _KeptHere(sent, job)  # (sent next: nothing goes before it)
                    here.scan(unit, stats)
                    if len(here.games) >= KEPT_UNIT_GAMES:
                        yield from_here()
                    continue
                if here is not None:
                    yield from_here()
                yield placed(partial(count_blocks_unit, sent, unit, *common, write_kept))
            if here is not None:
                yield from_here()
        finally:
            if here is not None:
                here.close()

    gathered = _Gathered(job, stats, total)
    with closing(in_order(executor, units(), in_flight=in_flight)) as results:
        for (place, size), counts in results:
            gathered.add(place, size, counts)
    return gathered.counted(executor)


#: Most games scanned here sent to a worker at once (while the workers start).
KEPT_UNIT_GAMES = 4096


class _KeptHere:
    """The games of units scanned here that passed the filter, to be counted as one unit."""

    def __init__(self, index: int, job: Job) -> None:
        self.index = index
        self.rules = job.settings.rules
        self.games: list[KeptGame] = []
        self._text = None
        if job.keeps_games:
            self._text = KeptText(_kept_path(job.staging, index))

    def scan(self, blocks: list[bytes], stats: ScanStats) -> None:
        """Add the games of blocks that pass the filter (counting the others in stats)."""
        keep = self._text.add if self._text is not None else None
        self.games.extend(kept_games_in_blocks(blocks, self.rules, stats, keep=keep))

    def close(self) -> list[KeptGame]:
        """Stop staging text; return the games."""
        if self._text is not None:
            self._text.close()
            self._text = None
        return self.games


def merge_in_worker(
    runs: list[Path], target: Path, in_memory_rows: int, games_before: list[int]
) -> int:
    """Merge run files into the month's file (runs.merge_runs), in a worker that has pyarrow."""
    from pipelines.ingest.runs import merge_runs

    return merge_runs(runs, target, in_memory_rows=in_memory_rows, games_before=games_before)


class _Gathered:
    """What the units done counted, gathered as they come (in order)."""

    def __init__(self, job: Job, stats: ScanStats, total: int | None) -> None:
        self.job = job
        self.stats = stats
        self.total = total
        self.runs: list[Path] = []
        #: The games of the units before each run's (its ranks' place in the source).
        self.games_before: dict[Path, int] = {}
        self.games = 0
        self.kept: dict[int, KeptPart] = {}
        self.hits = self.misses = 0
        self.done_bytes = 0

    def add(self, place: int, size: int, counts: UnitCounts) -> None:
        """Add a unit's counts (the units come in source order): its place in source order and
        its share of the source's bytes (for progress)."""
        self.stats.merge(counts.stats)
        if self.job.keeps_games:
            path = _kept_path(self.job.staging, place)
            self.kept[place] = KeptPart(path, counts.stats.rejected)
        self.runs.extend(counts.runs)
        self.games_before.update((run, self.games) for run in counts.runs)
        self.games += counts.games
        self.hits += counts.hits
        self.misses += counts.misses
        self.done_bytes += size
        if self.job.progress is not None:
            elapsed = time.monotonic() - self.job.started
            self.job.progress(self.stats.progress(self.done_bytes, self.total, elapsed))

    def counted(self, merging: Executor | None) -> Counted:
        """Return what the units counted; their runs are merged in this process, or on
        `merging` (whose workers have the libraries imported)."""
        runs = sorted(self.runs)
        before = [self.games_before[run] for run in runs]
        in_memory_rows = self.job.in_memory_rows
        write: Callable[[Path], int]
        if merging is None:
            from pipelines.ingest.runs import merge_runs

            write = partial(merge_runs, runs, in_memory_rows=in_memory_rows, games_before=before)
        else:

            def write(target: Path) -> int:
                merged = merging.submit(merge_in_worker, runs, target, in_memory_rows, before)
                return merged.result()

        return Counted(
            self.hits, self.misses, write, kept=[self.kept[p] for p in sorted(self.kept)]
        )
