"""Ingest: a month of games from a source into the warehouse's Parquet move statistics."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipelines.errors import ChesspipeError, CorruptInput
from pipelines.files import file_sha256, write_json_atomic
from pipelines.ingest.allocator import reuse_large_buffers
from pipelines.ingest.counting_process import FLUSH_ROWS, CountingProcess
from pipelines.ingest.decompress import ReadAhead, decompressed_chunks
from pipelines.ingest.frames import Frame
from pipelines.ingest.game_filter import GameFilter, ScanStats
from pipelines.ingest.processes import may_start_processes
from pipelines.ingest.scan import game_blocks, kept_games_in_blocks
from pipelines.sources.open import OpenSource, is_url, open_source, resolve
from pipelines.warehouse.layout import (
    check_month,
    manifest_path,
    partition_file,
    publish_file,
    staging_dir,
)
from pipelines.warehouse.locks import month_lock
from schemas.dimensions import SPEEDS
from schemas.version import __version__

if TYPE_CHECKING:
    from concurrent.futures import Executor

from pipelines.ingest.counting_process import count_games
from pipelines.progress import Progress, ProgressCallback

#: Smallest compressed file read by several processes; below it, starting them costs more.
PARALLEL_MIN_BYTES = 16 << 20


def ingest(
    source: str,
    month: str,
    warehouse: Path,
    rules: GameFilter | None = None,
    plies: int = 20,
    keep_partial: bool = False,
    progress: ProgressCallback | None = None,
    flush_rows: int = FLUSH_ROWS,
    workers: int | None = None,
    expected_sha256: str | None = None,
    http_options: dict[str, Any] | None = None,
    executor: Executor | None = None,
    counting: CountingProcess | None = None,
) -> dict[str, Any]:
    """Stream a month's games into its move statistics partition; return the run manifest.

    With `expected_sha256`, the compressed bytes read must hash to it or nothing is published.
    `http_options` go to the downloader (timeout, retries, backoff, cache). With an `executor`
    (for example `distributed.Client(...).get_executor()`), a pzstd-style file or URL is split
    into units of frames scanned there; a URL is then read by byte ranges and not hashed, so
    `expected_sha256` cannot be checked and is refused. A source read in order is counted by a
    CountingProcess when there are several workers: `counting` hands over one started
    beforehand (it is closed here in any case).
    """
    try:
        if executor is not None and expected_sha256 is not None and is_url(resolve(source)):
            raise ChesspipeError("a URL read by byte ranges on an executor cannot be checksummed")
        rules = rules or GameFilter()
        check_month(month)
        if plies < 1:
            raise ChesspipeError("--plies must be at least 1")
        warehouse = Path(warehouse)
        workers = max(1, workers if workers is not None else (os.cpu_count() or 1))
        if not may_start_processes():
            workers = 1  # in a daemonic process, such as a Dask worker's
        reuse_large_buffers()
        started = time.monotonic()
        with month_lock(warehouse, month):
            remove_stale_files(warehouse, month)
            staging = staging_dir(warehouse, month)
            try:
                return _ingest_locked(
                    source,
                    month,
                    warehouse,
                    rules,
                    plies,
                    keep_partial,
                    progress,
                    flush_rows,
                    staging,
                    started,
                    workers,
                    expected_sha256,
                    http_options or {},
                    executor,
                    counting,
                )
            finally:
                shutil.rmtree(staging, ignore_errors=True)
    finally:
        if counting is not None:
            counting.close()


def _until_corrupt(
    blocks: Iterator[bytes], keep_partial: bool, errors: list[str]
) -> Iterator[bytes]:
    """Pass blocks through; on a corrupt stream, stop and note why if partial output is wanted."""
    try:
        yield from blocks
    except CorruptInput as exc:
        if not keep_partial:
            raise
        errors.append(str(exc))


def _ingest_locked(
    source: str,
    month: str,
    warehouse: Path,
    rules: GameFilter,
    plies: int,
    keep_partial: bool,
    progress: ProgressCallback | None,
    flush_rows: int,
    staging: Path,
    started: float,
    workers: int,
    expected_sha256: str | None,
    http_options: dict[str, Any],
    executor: Executor | None,
    counting: CountingProcess | None,
) -> dict[str, Any]:
    stats = ScanStats()
    errors: list[str] = []
    if expected_sha256 is not None:
        http_options = {**http_options, "expected_sha256": expected_sha256}
    runs: list[Path] = []
    hits = misses = 0
    with open_source(source, rules.variant, **http_options) as opened, ExitStack() as stack:
        # Keeping what was read of a damaged stream needs it read in order.
        plan = None if keep_partial else _parallel_plan(opened, workers, executor)
        # Read in order with cores to spare: kept games are counted by a second process.
        counts_apart = not plan and workers > 1 and executor is None
        if counting is not None and not counts_apart:
            counting.close()  # the workers count what they scan, or this process counts
            counting = None
        if plan:
            from pipelines.ingest.parallel import ingest_units

            frames, units = plan
            runs, hits, misses = ingest_units(
                opened,
                opened.name,
                frames,
                units,
                rules,
                plies,
                stats,
                staging,
                flush_rows,
                workers,
                progress,
                started,
                executor,
            )
        else:
            if counts_apart:
                # Started before the read-ahead thread: a process with a single thread forks
                # safely. Closed on leaving, before the caller removes the staging folder.
                counting = stack.enter_context(counting or CountingProcess())
                counting.begin(stats, plies, rules.variant == "chess960", staging, flush_rows)
            reader = opened.reader
            # A small source is decompressed inline, not in a thread: that leaves the other core
            # to the counting process's start-up.
            inline = counting is not None and 0 < (opened.size or 0) < PARALLEL_MIN_BYTES
            ahead = ReadAhead(
                decompressed_chunks(reader), 0 if inline else 16, mark=lambda: reader.bytes_read
            )
            blocks = game_blocks(iter(ahead), stats)
            # Progress counts the bytes read for the text scanned, not how far the thread read.
            reported = _reporting(blocks, progress, lambda: ahead.mark, opened.size, stats, started)
            blocks = _until_corrupt(reported, keep_partial, errors)
            if counting is not None:
                for kept in kept_games_in_blocks(blocks, rules, stats):
                    counting.add(kept)
                hits, misses = counting.finish()
            else:
                runs, tree = count_games(blocks, rules, plies, stats, staging, "run", flush_rows)
                hits, misses = (tree.hits, tree.misses) if tree is not None else (0, 0)
        error = errors[0] if errors else None
        if progress is not None:
            progress(_progress(opened.reader.bytes_read, opened.size, stats, started))
        source_sha256 = opened.reader.sha256.hexdigest()
        hashed = opened.kind != "url" or not plan  # a URL read by ranges is never read whole
        if expected_sha256 is not None and source_sha256 != expected_sha256.lower():
            raise ChesspipeError(
                f"{opened.name}: sha256 mismatch (got {source_sha256}, "
                f"expected {expected_sha256}); "
                "nothing published"
            )
        scanned = time.monotonic()
        target = partition_file(warehouse, month)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.{staging.name}.tmp")
        try:
            if counting is not None:
                row_count = counting.write(tmp)
            else:
                from pipelines.ingest.runs import merge_runs

                row_count = merge_runs(runs, tmp, staging)
            manifest = {
                "chesspipe_version": __version__,
                "month": month,
                "source": source,
                "source_resolved": opened.name,
                "source_kind": opened.kind,
                "source_size": opened.size,
                "source_bytes_read": opened.reader.bytes_read,
                "source_sha256": source_sha256 if hashed else None,
                "source_sha256_verified": expected_sha256 is not None,
                "settings": settings_dict(rules, plies),
                "games_read": stats.games_read,
                "games_kept": stats.games_kept,
                "games_dropped": dict(sorted(stats.dropped.items())),
                "pgn_bytes": stats.pgn_bytes,
                "rows": row_count,
                "partial": error is not None,
                "error": error,
                "output": str(target.relative_to(warehouse)),
                "output_sha256": file_sha256(tmp),
                "opening_tree": {"hits": hits, "misses": misses},
                "workers": (workers if executor is None else "executor") if plan else 1,
                "timings": {
                    "scan_seconds": round(scanned - started, 3),
                    "total_seconds": round(time.monotonic() - started, 3),
                },
                "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
            }
            publish_file(tmp, target)
        finally:
            tmp.unlink(missing_ok=True)
        write_json_atomic(manifest_path(warehouse, month), manifest)
        return manifest


def _parallel_plan(
    opened: OpenSource, workers: int, executor: Executor | None
) -> tuple[list[Frame], list[range]] | None:
    """Return the frames and units of parallel work for a pzstd-style source, or None.

    A local file is split for the worker processes when it is large enough; with an executor
    (such as a Dask client's) a file or an http(s) URL is split whatever its size.
    """
    from pipelines.ingest.frames import frame_index, frame_pieces, plan_units

    if not opened.size or (executor is None and (workers < 2 or opened.size < PARALLEL_MIN_BYTES)):
        return None
    if opened.kind == "file":
        handle: Any = opened.reader.stream
    elif opened.kind == "url" and executor is not None:
        from pipelines.sources.http import RangeFile

        handle = RangeFile(opened.name, opened.size)
    else:
        return None
    frames = frame_index(handle, opened.size)
    # CRLF text moves the blank lines between games: such files are read in order.
    crlf = frames is not None and b"\r\n" in next(frame_pieces(handle, frames[0]), b"")[:65536]
    if opened.kind == "file":
        handle.seek(0)
    if frames is None or len(frames) < 2 or crlf:
        return None
    units = plan_units(frames, workers if executor is None else max(workers, 8))
    return (frames, units) if len(units) > 1 or executor is not None else None


def _reporting(
    blocks: Iterator[bytes],
    progress: ProgressCallback | None,
    bytes_read: Callable[[], int],
    total: int | None,
    stats: ScanStats,
    started: float,
) -> Iterator[bytes]:
    """Pass blocks of games through, calling progress with the bytes read twice a second."""
    if progress is None:
        yield from blocks
        return
    last = 0.0
    for block in blocks:
        yield block  # report once the block is counted, so games match the bytes read
        now = time.monotonic()
        if now - last >= 0.5:
            last = now
            progress(_progress(bytes_read(), total, stats, started))


def remove_stale_files(warehouse: Path, month: str) -> None:
    """Delete what killed runs of a month left behind (call only while holding its lock)."""
    for leftover in (Path(warehouse) / ".staging").glob(f"{month}-*"):
        shutil.rmtree(leftover, ignore_errors=True)
    for leftover in partition_file(warehouse, month).parent.glob(".*.tmp"):
        leftover.unlink(missing_ok=True)


def _progress(bytes_read: int, total: int | None, stats: ScanStats, started: float) -> Progress:
    return Progress(
        bytes_read, total, stats.games_read, stats.games_kept, time.monotonic() - started
    )


def settings_dict(rules: GameFilter, plies: int) -> dict[str, Any]:
    """Return the settings of an ingest as plain JSON values."""
    data = asdict(rules)
    data["speeds"] = sorted(rules.speeds, key=SPEEDS.index)
    data["plies"] = plies
    return data
