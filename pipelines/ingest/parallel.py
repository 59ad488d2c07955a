"""Ingest on several cores: units of zstd frames scanned and counted in worker processes."""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Executor, Future, ProcessPoolExecutor, wait
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from pipelines.ingest.allocator import reuse_large_buffers
from pipelines.ingest.counting_process import count_games
from pipelines.ingest.frames import Frame, UnitText
from pipelines.ingest.game_filter import ScanStats
from pipelines.ingest.kept_text import KeptPart, KeptText
from pipelines.ingest.plan import Counted, Job, ReadPlan
from pipelines.ingest.processes import (
    StartMethod,
    die_with_parent,
    forking_parent,
    process_context,
)
from pipelines.ingest.scan import MAX_GAME_BYTES, game_blocks
from pipelines.ingest.settings import IngestSettings
from pipelines.progress import Progress
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
) -> tuple[ScanStats, list[Path], int, int]:
    """Count the games one unit owns; return its scan counts, run files and tree hits/misses.

    With `write_kept`, the text of the games kept is staged in `unit-NNNNNNN.kept` under
    staging, and the scan counts name those counting dropped (ScanStats.rejected).
    """
    reuse_large_buffers()  # a worker started by a fork server has its own allocator settings
    stats = ScanStats()
    # The opening tree is kept across the units of this worker process (openings repeat).
    global _TREE
    before = (_TREE.hits, _TREE.misses) if _TREE is not None else (0, 0)
    prefix = f"unit-{unit.start:07d}"
    kept = KeptText(staging / f"{prefix}.kept") if write_kept else None
    try:
        with open_location(location, frames[-1].offset + frames[-1].size) as handle:
            # Pieces about the size a stream decompresses to: the scanner's work stays in the
            # caches.
            text = UnitText(handle, frames, unit, MAX_GAME_BYTES)
            # Only the last unit's text ends where the source ends: its tail tells a cut source.
            blocks = game_blocks(text, stats, check_end=unit.stop == len(frames))
            runs, _TREE = count_games(
                blocks, settings, stats, staging, prefix=prefix, flush_rows=flush_rows,
                tree=_TREE, keep=kept.add if kept is not None else None,
            )  # fmt: skip
    finally:
        if kept is not None:
            kept.close()
    after = (_TREE.hits, _TREE.misses) if _TREE is not None else (0, 0)
    stats.pgn_bytes = text.own_length
    return stats, runs, after[0] - before[0], after[1] - before[1]


_TREE: OpeningTree | None = None


@contextmanager
def open_location(location: str, size: int) -> Iterator[BinaryIO]:
    """Open a local path, or an http(s) URL of `size` bytes read by byte ranges."""
    if location.startswith(("http://", "https://")):
        from pipelines.sources.http import RangeFile

        yield RangeFile(location, size)  # type: ignore[misc]
        return
    with open(location, "rb") as handle:
        yield handle


def count_units(
    opened: OpenSource,
    plan: ReadPlan,
    job: Job,
    stats: ScanStats,
    *,
    workers: int,
    executor: Executor | None = None,
    start_method: StartMethod | None = None,
) -> Counted:
    """Scan the plan's units in worker processes (or on an executor such as Dask's).

    For a local file this process hashes it meanwhile; a URL is read only by the workers.
    """
    hash_source = opened.kind == "file"
    frames = plan.frames
    runs: list[Path] = []
    kept: dict[int, KeptPart] = {}
    hits = misses = 0
    done_bytes = 0
    own_pool = None
    if executor is None:
        context = process_context(start_method)
        executor = own_pool = ProcessPoolExecutor(
            max_workers=workers,
            mp_context=context,
            initializer=die_with_parent,
            initargs=(forking_parent(context),),
        )
    try:
        pending: dict[Future[tuple[ScanStats, list[Path], int, int]], int] = {}
        units: dict[Future[tuple[ScanStats, list[Path], int, int]], range] = {}
        for unit in plan.units:
            future = executor.submit(
                scan_unit, opened.name, frames, unit, job.settings, job.staging, job.flush_rows,
                job.write_kept is not None,
            )  # fmt: skip
            pending[future] = sum(frames[i].size for i in unit)
            units[future] = unit
        # The merge that follows needs pyarrow and NumPy: import them while the workers scan.
        import pyarrow.parquet  # noqa: F401

        from pipelines.ingest.runs import merge_runs

        hashed_everything = not hash_source
        try:
            while pending:
                if not hashed_everything:
                    # Hash the file in the gaps: the manifest records its sha256.
                    hashed_everything = not opened.reader.read(4 << 20)
                    finished = {f for f in pending if f.done()}
                else:
                    finished, _ = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
                for future in finished:
                    unit_stats, unit_runs, unit_hits, unit_misses = future.result()
                    done_bytes += pending.pop(future)
                    stats.merge(unit_stats)
                    if job.write_kept is not None:
                        unit = units[future]
                        path = job.staging / f"unit-{unit.start:07d}.kept"
                        kept[unit.start] = KeptPart(path, unit_stats.rejected)
                    runs.extend(unit_runs)
                    hits += unit_hits
                    misses += unit_misses
                    if job.progress is not None:
                        job.progress(
                            Progress(
                                done_bytes,
                                opened.size,
                                stats.games_read,
                                stats.games_kept,
                                time.monotonic() - job.started,
                            )
                        )
        except BaseException:
            for future in pending:
                future.cancel()
            raise
    finally:
        if own_pool is not None:
            own_pool.shutdown(cancel_futures=True)
    while hash_source and opened.reader.read(4 << 20):
        pass
    write = partial(merge_runs, sorted(runs), in_memory_rows=job.in_memory_rows)
    return Counted(hits, misses, write, kept=[kept[start] for start in sorted(kept)])
