"""Ingest: a month of games from a source into the warehouse's Parquet move statistics."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from pipelines.errors import ChesspipeError, CorruptInput, CutShort
from pipelines.files import file_sha256, json_bytes
from pipelines.games.allocator import reuse_large_buffers
from pipelines.games.decompress import ReadAhead, decompressed_chunks
from pipelines.games.game_filter import NothingKept, ScanStats
from pipelines.games.plan import ReadPlan, Strategy, plan_read
from pipelines.games.processes import StartMethod, may_start_processes
from pipelines.games.scan import game_blocks, reported_blocks
from pipelines.games.workers import WorkerPool
from pipelines.ingest.count_runs import count_games
from pipelines.ingest.job import Counted, Job
from pipelines.ingest.kept_text import KeptPart, write_kept_games
from pipelines.ingest.manifest import IngestManifest, Timings, TreeCounts, read_manifest
from pipelines.ingest.options import Download, RunPolicy, Runtime, Tuning
from pipelines.ingest.settings import WORKER_MODULES, IngestSettings
from pipelines.sources.open import OpenSource, Source, SourceList, is_url, open_source, resolve
from pipelines.warehouse.layout import check_month, manifest_path, partition_file, staging_dir
from pipelines.warehouse.locks import month_lock
from schemas.atomic_files import OutputSet, check_output
from schemas.version import __version__

if TYPE_CHECKING:
    from concurrent.futures import Executor


def ingest(
    source: Source,
    month: str,
    warehouse: Path,
    settings: IngestSettings | None = None,
    *,
    policy: RunPolicy | None = None,
    download: Download | None = None,
    runtime: Runtime | None = None,
    tuning: Tuning | None = None,
) -> IngestManifest:
    """Stream a month's games into its move statistics partition; return the run manifest.

    `settings` say what is counted; the other groups how the run runs (ingest.options):
    `policy` what it publishes, `download` how the source is fetched and checked, `runtime`
    where the work runs, `tuning` sizes that never change the output.

    The source is read by one of three strategies (pipelines.games.plan): units of pzstd
    frames scanned by `runtime.workers` processes (default: all cores), in order here with its
    blocks of games scanned and counted by those processes, or in order here alone. With
    `policy.keep_partial`, a truncated or corrupt stream publishes what was read, marked
    partial.
    A run that keeps no game raises NothingKept (naming why the games were dropped) and
    publishes nothing, unless `policy.allow_empty`: then the empty month is published.

    With `download.expected_sha256`, the compressed bytes read must hash to it or nothing is
    published. With `runtime.executor`, a pzstd-style file or URL is split into units of frames
    scanned there; a URL is then read by byte ranges and not hashed, so an expected sha256
    cannot be checked and is refused. `runtime.pool` hands over a WorkerPool started
    beforehand (it is closed here in any case).
    """
    policy = policy or RunPolicy()
    download = download or Download()
    runtime = runtime or Runtime()
    tuning = tuning or Tuning()
    pool = runtime.pool
    try:
        expected_sha256 = download.expected_sha256
        executor = runtime.executor
        if executor is not None and expected_sha256 is not None and is_url(resolve(source)):
            raise ChesspipeError("a URL read by byte ranges on an executor cannot be checksummed")
        settings = settings or IngestSettings()
        check_month(month)
        write_kept = Path(policy.write_kept) if policy.write_kept is not None else None
        if write_kept is not None:
            _check_kept_target(source, write_kept)
        warehouse = Path(warehouse)
        workers = runtime.workers
        workers = max(1, workers if workers is not None else (os.cpu_count() or 1))
        if settings.dedupe:
            workers, executor = 1, None  # one set of main lines, the games in source order
        if not may_start_processes():
            workers = 1  # in a daemonic process, such as a Dask worker's
        http = dict(download.http_options)
        if expected_sha256 is not None:
            http["expected_sha256"] = expected_sha256
        reuse_large_buffers()
        started = time.monotonic()
        # The source opens before the lock is taken: a missing source leaves nothing behind.
        with (
            open_source(source, settings.rules.variant, **http) as opened,
            month_lock(warehouse, month),
        ):
            staging = staging_dir(warehouse, month)
            job = Job(
                source=source,
                month=month,
                warehouse=warehouse,
                settings=settings,
                staging=staging,
                flush_rows=tuning.flush_rows,
                in_memory_rows=tuning.in_memory_rows,
                progress=runtime.progress,
                started=started,
                keep_partial=policy.keep_partial,
                write_kept=write_kept,
                also_staged=policy.also_staged,
            )
            try:
                with ExitStack() as stack:
                    plan = plan_read(
                        opened,
                        workers=workers,
                        executor=executor,
                        keep_partial=policy.keep_partial,
                        parallel_min_bytes=tuning.parallel_min_bytes,
                    )
                    pool = _pool_for(plan, pool, stack, workers, executor, runtime.start_method)
                    stats = ScanStats()
                    counted = _count(opened, plan, job, stats, pool, executor)
                    error = check_scan(opened.name, stats, counted.error, policy.keep_partial)
                    counted = replace(counted, error=error)
                    if job.progress is not None:
                        # The scan's and the counting's totals: the manifest's numbers.
                        reader, elapsed = opened.reader, time.monotonic() - started
                        done = stats.progress(reader.bytes_read, opened.size, elapsed, done=True)
                        job.progress(done)
                    used = workers if executor is None else "executor"
                    parallel = plan.strategy is not Strategy.IN_PROCESS
                    return publish_month(
                        job,
                        opened,
                        stats,
                        counted,
                        expected_sha256=expected_sha256,
                        replace_month=policy.replace_month,
                        allow_empty=policy.allow_empty,
                        # A URL read by byte ranges is never read whole.
                        hashed=opened.kind != "url" or plan.strategy is not Strategy.UNITS,
                        workers=used if parallel else 1,
                        release=pool.close if pool is not None else None,
                    )
            except OSError as exc:
                if exc.filename is not None or exc.errno is None:
                    raise
                exc.filename = str(warehouse)  # a full disk while counting (the run files)
                raise
            finally:
                shutil.rmtree(staging, ignore_errors=True)
    finally:
        if pool is not None:
            pool.close()


def _check_kept_target(source: Source, target: Path) -> None:
    """Refuse a kept games file that is the source itself, or one of its files (it would
    replace what it reads), or that exists and is not a regular file (a folder, a device:
    NotARegularFile)."""
    check_output(target)
    if isinstance(source, SourceList):
        files = source.files()
    else:
        resolved = resolve(source)
        local = source != "-" and not is_url(resolved) and Path(resolved).exists()
        files = [resolved] if local else []
    if target.exists() and any(target.samefile(file) for file in files):
        raise ChesspipeError(f"the kept games file {target} is the source itself")


def _pool_for(
    plan: ReadPlan,
    pool: WorkerPool | None,
    stack: ExitStack,
    workers: int,
    executor: Executor | None,
    start_method: StartMethod | None,
) -> WorkerPool | None:
    """Return the worker pool the plan needs (the one handed over, or a new one), or None.

    The one returned is closed when `stack` closes; one handed over and not needed (this
    process reads alone, or the executor's workers do) is closed at once.
    """
    if plan.strategy is Strategy.BLOCKS or (plan.strategy is Strategy.UNITS and executor is None):
        # Started before any thread of this process: a process with a single thread forks safely.
        return stack.enter_context(
            pool or WorkerPool(workers, preload=WORKER_MODULES, start_method=start_method)
        )
    if pool is not None:
        pool.close()
    return None


def _count(
    opened: OpenSource,
    plan: ReadPlan,
    job: Job,
    stats: ScanStats,
    pool: WorkerPool | None,
    executor: Executor | None,
) -> Counted:
    """Scan the source and count its kept games by the plan's strategy."""
    if plan.strategy is Strategy.UNITS:
        from pipelines.ingest.parallel import count_units

        there = pool if pool is not None else executor
        assert there is not None  # (_pool_for)
        return count_units(opened, plan, job, stats, there, merge_there=pool is not None)
    errors: list[str] = []
    if plan.strategy is Strategy.BLOCKS:
        assert pool is not None  # (_pool_for)
        from pipelines.ingest.parallel import count_blocks

        # The workers do the heavy work: this process decompresses and splits, no thread needed.
        blocks = _blocks_in_order(opened, job, stats, errors, read_ahead=False, report=False)
        counted = count_blocks(
            blocks,
            job,
            stats,
            pool,
            unit_bytes=plan.unit_bytes,
            in_flight=plan.in_flight,
            mark=lambda: opened.reader.bytes_read,
            total=opened.size,
            ready=lambda: pool.ready,
        )
    else:
        blocks = _blocks_in_order(opened, job, stats, errors, read_ahead=True, report=True)
        counted = _count_here(blocks, job, stats)
    return replace(counted, error=errors[0] if errors else None)


def _blocks_in_order(
    opened: OpenSource,
    job: Job,
    stats: ScanStats,
    errors: list[str],
    *,
    read_ahead: bool,
    report: bool,
) -> Iterator[bytes]:
    """Return the source's blocks of whole games (scan.game_blocks), read in order.

    With `read_ahead`, a thread decompresses while the blocks are used; with `report`, progress
    is reported as blocks are taken. A corrupt stream stops the blocks, its reason in `errors`,
    when partial months are kept; otherwise it raises.
    """
    reader = opened.reader
    ahead = ReadAhead(
        decompressed_chunks(reader), 16 if read_ahead else 0, mark=lambda: reader.bytes_read
    )
    blocks = game_blocks(iter(ahead), stats, check_end=True)
    if report:
        # Progress counts the bytes read for the text scanned, not how far the thread read.
        blocks = reported_blocks(
            blocks, stats, job.progress, job.started, lambda: ahead.mark, opened.size
        )
    return until_corrupt(blocks, job.keep_partial, errors)


def _count_here(blocks: Iterator[bytes], job: Job, stats: ScanStats) -> Counted:
    """Scan and count blocks in this process (staging the text of the games kept if asked)."""
    kept_text_file = job.staging / "source.kept" if job.keeps_games else None
    runs, tree, _ = count_games(
        blocks,
        job.settings,
        stats,
        job.staging,
        flush_rows=job.flush_rows,
        kept_text_file=kept_text_file,
    )
    hits, misses = (tree.hits, tree.misses) if tree is not None else (0, 0)

    def write(target: Path) -> int:
        from pipelines.ingest.runs import merge_runs

        return merge_runs(runs, target, in_memory_rows=job.in_memory_rows)

    kept = [KeptPart(kept_text_file, stats.rejected)] if kept_text_file is not None else []
    return Counted(hits, misses, write, kept=kept)


def until_corrupt(
    blocks: Iterator[bytes], keep_partial: bool, errors: list[str]
) -> Iterator[bytes]:
    """Pass blocks through; on a corrupt stream, stop and note why if partial output is wanted."""
    try:
        yield from blocks
    except CorruptInput as exc:
        if not keep_partial:
            raise
        errors.append(str(exc))


def check_scan(name: str, stats: ScanStats, error: str | None, keep_partial: bool) -> str | None:
    """Fail a scan that found no game, or that ended inside one (unless keeping partial months);
    return why reading stopped early (`error`, the counting's, or the cut end), or None.

    Text that is only blank (or no text at all) is an empty month, not a failure.
    """
    if stats.games_found == 0 and (stats.games_read or stats.ends_inside_game):
        seen = ", ".join(f"{n} {reason}" for reason, n in sorted(stats.dropped.items()))
        raise CorruptInput(
            f"no PGN game found in {name}: {stats.pgn_bytes} bytes of text read as "
            f"{stats.games_read} pieces ({seen}); nothing published"
        )
    if stats.ends_inside_game and error is None:
        reason = f"{name} ends inside a game (no result after its last moves): it was cut short"
        if not keep_partial:
            raise CutShort(f"{reason}; nothing published")
        return reason
    return error


def source_sha256(opened: OpenSource, expected_sha256: str | None, *, hashed: bool) -> str | None:
    """Return the sha256 of the source read (None unless `hashed`: it was read whole); raise
    when it is not `expected_sha256`, if given."""
    sha256 = opened.reader.sha256.hexdigest() if hashed else None
    if expected_sha256 is not None and sha256 != expected_sha256.lower():
        raise ChesspipeError(
            f"{opened.name}: sha256 mismatch (got {sha256}, expected {expected_sha256}); "
            "nothing published"
        )
    return sha256


def _unreadable_warning(stats: ScanStats) -> list[str]:
    """Return a warning when more than half the text was skipped as malformed or oversized."""
    if stats.pgn_bytes and stats.unreadable_bytes * 2 > stats.pgn_bytes:
        share = stats.unreadable_bytes / stats.pgn_bytes
        return [
            f"{share:.0%} of the text was unreadable ({stats.unreadable_bytes} of "
            f"{stats.pgn_bytes} bytes skipped as malformed or oversized games)"
        ]
    return []


def publish_month(
    job: Job,
    opened: OpenSource,
    stats: ScanStats,
    counted: Counted,
    *,
    expected_sha256: str | None,
    replace_month: bool,
    allow_empty: bool,
    hashed: bool,
    workers: int | str,
    dated: bool = False,
    release: Callable[[], None] | None = None,
) -> IngestManifest:
    """Write the month's partition file and its manifest into place; return the manifest.

    The source must hash to `expected_sha256` if given. Unless `hashed`, the source was not
    read whole and its sha256 is not recorded. A run that kept no game publishes only if
    `allow_empty` (NothingKept). `dated`: the month holds the source's games of its date.
    `release` frees the counting's workers once the partition is written, before the files
    staged with it (`job.also_staged`, which starts workers of its own) are made.
    """
    sha256 = source_sha256(opened, expected_sha256, hashed=hashed)
    if not replace_month:
        check_replacement(job.warehouse, job.month, stats.games_read)
    if stats.games_kept == 0 and not allow_empty:
        raise NothingKept(opened.name, stats, job.settings.rules)
    scanned = time.monotonic()
    target = partition_file(job.warehouse, job.month)
    manifest_file = manifest_path(job.warehouse, job.month)
    # The partition, the kept games if asked, the manifest last: all or none (OutputSet).
    files = [target] if job.write_kept is None else [target, job.write_kept]
    with OutputSet(*files, manifest_file) as outputs:
        tmp = outputs.path(target)
        rows = counted.write(tmp)
        written = tmp.stat()
        manifest = IngestManifest(
            chesspipe_version=__version__,
            month=job.month,
            source=str(job.source),
            source_resolved=opened.name,
            source_kind=opened.kind,
            source_size=opened.size,
            source_bytes_read=opened.reader.bytes_read,
            source_sha256=sha256,
            source_sha256_verified=expected_sha256 is not None,
            settings=job.settings,
            games_read=stats.games_read,
            games_kept=stats.games_kept,
            games_dropped=dict(sorted(stats.dropped.items())),
            pgn_bytes=stats.pgn_bytes,
            rows=rows,
            partial=counted.error is not None,
            error=counted.error,
            output=str(target.relative_to(job.warehouse)),
            output_sha256=file_sha256(tmp),
            opening_tree=TreeCounts(counted.hits, counted.misses),
            workers=workers,
            timings=Timings(
                scan_seconds=round(scanned - job.started, 3),
                total_seconds=round(time.monotonic() - job.started, 3),
            ),
            finished_at=datetime.now(UTC).isoformat(timespec="seconds"),
            unreadable_bytes=stats.unreadable_bytes,
            warnings=_unreadable_warning(stats),
            dated=dated,
            output_size=written.st_size,
            output_mtime_ns=written.st_mtime_ns,
        )
        kept_games = None
        if job.write_kept is not None:
            kept_games = outputs.path(job.write_kept)
            compressed = job.write_kept.name.endswith(".zst")
        elif job.also_staged is not None:
            kept_games, compressed = job.staging / "kept.pgn.zst", True
        if kept_games is not None:
            write_kept_games(
                counted.kept, kept_games, crlf=stats.crlf, expected=stats.games_kept,
                compressed=compressed,
            )  # fmt: skip
        if job.also_staged is not None:
            assert kept_games is not None
            if release is not None:
                release()
            job.also_staged(kept_games, outputs)
        outputs.path(manifest_file).write_bytes(json_bytes(manifest.to_json()))
    return manifest


#: A run that read fewer than this share of the games of the month it would replace is refused
#: (a truncated download, an error page or an empty file must not replace a good month).
MIN_REPLACED_SHARE = 0.1


class WouldShrinkMonth(ChesspipeError):
    """A run that read far fewer games than the month it would replace."""


def check_replacement(warehouse: Path, month: str, games_read: int) -> None:
    """Refuse to replace a published month with a run that read far fewer games.

    The rule: a month published with N games read is replaced only by a run that read at least
    a tenth of N (and at least one game when N > 0); `RunPolicy.replace_month` states the
    intent to replace it anyway.
    """
    previous = read_manifest(warehouse, month)
    if previous is None or not partition_file(warehouse, month).exists():
        return
    if previous.games_read > 0 and games_read < max(1, previous.games_read * MIN_REPLACED_SHARE):
        raise WouldShrinkMonth(
            f"month {month} is published with {previous.games_read:,} games read; this run read "
            f"{games_read:,}, fewer than a tenth of them: the published month stays as it was "
            "(replace it on purpose to publish this run)"
        )
