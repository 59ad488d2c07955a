"""How an ingest run runs, beside what it counts (settings.py): four groups of options.

- RunPolicy: what the run publishes, and when (a partial month, a month replaced, the kept games).
- Download: how the source is fetched and checked.
- Runtime: where the work runs, and who hears of it (workers, an executor, progress).
- Tuning: sizes that change speed and memory, never the output.

Each default is the field's; the tuning defaults are the constants of the modules they tune.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipelines.games.plan import PARALLEL_MIN_BYTES
from pipelines.ingest.count_runs import FLUSH_ROWS, IN_MEMORY_ROWS

if TYPE_CHECKING:
    from concurrent.futures import Executor

    from pipelines.games.processes import StartMethod
    from pipelines.games.workers import WorkerPool
    from pipelines.progress import ProgressCallback
    from schemas.atomic_files import OutputSet

#: A writer whose files are published with the month's (`RunPolicy.also_staged`): given the
#: games the run kept (a file of zstd frames, in the source's order, unless `write_kept` names
#: another form) and the month's output set before it is published, it stages its own files
#: into the set (OutputSet.include), so that they appear with the month's or not at all.
AlsoStaged = Callable[[Path, "OutputSet"], None]


@dataclass(frozen=True)
class RunPolicy:
    """What an ingest run publishes, and when."""

    #: On a truncated or corrupt stream, publish what was read, marked partial.
    keep_partial: bool = False
    #: Publish the month even when no game is kept (else NothingKept, and nothing published).
    allow_empty: bool = False
    #: Replace the published month even with a run that read far fewer games
    #: (run.check_replacement).
    replace_month: bool = False
    #: Also write the games kept (those counted) there, as the source has them, in its order,
    #: when the month is published (ingest.kept_text; a name ending in .zst gets zstd frames).
    write_kept: Path | None = None
    #: Files of another writer published with the month's, made from the games it kept
    #: (AlsoStaged: the explorer's index, in one read of the source).
    also_staged: AlsoStaged | None = None


@dataclass(frozen=True)
class Download:
    """How an ingest run fetches its source and checks it."""

    #: The compressed bytes read must hash to it, or nothing is published.
    expected_sha256: str | None = None
    #: The downloader's options (timeout, retries, backoff, cache: sources.http).
    http_options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Runtime:
    """Where an ingest run's work runs, and who hears of it."""

    #: Worker processes (None: all cores).
    workers: int | None = None
    progress: ProgressCallback | None = None
    #: An executor (such as `distributed.Client(...).get_executor()`) that scans units of frames.
    executor: Executor | None = None
    #: A WorkerPool of `workers` processes started beforehand (the run closes it in any case).
    pool: WorkerPool | None = None
    #: How helper processes start (None: forked when this process has a single thread).
    start_method: StartMethod | None = None


@dataclass(frozen=True)
class Tuning:
    """Sizes that change an ingest run's speed and memory, never its output."""

    #: Rows counted in memory before a run file is written.
    flush_rows: int = FLUSH_ROWS
    #: Most rows of run files merged in memory at once (more are merged a range of keys at a
    #: time).
    in_memory_rows: int = IN_MEMORY_ROWS
    #: The smallest file split among worker processes.
    parallel_min_bytes: int = PARALLEL_MIN_BYTES
