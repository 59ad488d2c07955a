"""A month's book from a dump: resolve, ingest, build, publish; idempotent and safe to kill."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import Executor
from contextlib import ExitStack, contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, ParamSpec, Protocol, TypeVar

from pipelines.books.build import build_book
from pipelines.books.manifest import BookManifest
from pipelines.errors import ChesspipeError
from pipelines.explorer.index import WithIngest, index_month, with_ingest
from pipelines.explorer.layout import explorer_manifest_path, month_dir
from pipelines.explorer.manifest import ExplorerManifest
from pipelines.explorer.settings import ExplorerSettings
from pipelines.files import file_sha256, make_folder
from pipelines.ingest.manifest import IngestManifest, read_manifest
from pipelines.ingest.options import Download, RunPolicy, Runtime
from pipelines.ingest.run import ingest
from pipelines.monthly.manifest import IngestResult, MonthManifest
from pipelines.monthly.publish import (
    book_name,
    publish_step,
    published_paths,
    remove_stale_staging,
    unpublished,
    up_to_date_book,
)
from pipelines.monthly.settings import MonthSettings
from pipelines.monthly.source import ResolvedSource, SourceIdentity, resolve_source
from pipelines.progress import ProgressCallback
from pipelines.sources.options import DownloadOptions
from pipelines.warehouse.explorer_files import SHA256_FIELDS, month_file_names
from pipelines.warehouse.layout import check_month, manifest_path, partition_file
from pipelines.warehouse.locks import clean_month_if_free, month_lock
from schemas.atomic_files import OutputSet, check_output

if TYPE_CHECKING:
    from pipelines.sources.object_publish import Described

T = TypeVar("T")
P = ParamSpec("P")


class StepRunner(Protocol):
    """Runs one named step of a build, `function(*args)`, and returns what it returns.

    `run_directly` calls it; the Prefect flow passes one that makes each step a task run.
    """

    def __call__(
        self, name: str, function: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs
    ) -> T: ...


def run_directly(name: str, function: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
    """Run a build step as a plain call."""
    return function(*args, **kwargs)


def up_to_date_partition(
    warehouse: Path, month: str, identity: SourceIdentity | None, settings: MonthSettings
) -> IngestManifest | None:
    """Return the month's ingest manifest if its partition came from this content and filter."""
    if identity is None or identity.sha256 is None:
        return None
    manifest = read_manifest(warehouse, month)
    target = partition_file(warehouse, month)
    if manifest is None or not target.exists():
        return None
    if manifest.partial or manifest.source_sha256 != identity.sha256:
        return None
    if manifest.settings != settings.ingest:
        return None
    if manifest.output_sha256 != file_sha256(target):
        return None
    return manifest


@contextmanager
def build_lock(books: Path, month: str) -> Iterator[None]:
    """Hold the lock of a month's build, failing at once with a clear message if it is held.

    Once it is acquired, what dead builds of the month left in the books folder is removed.
    """
    with ExitStack() as stack:
        try:
            stack.enter_context(month_lock(Path(books), f"build-{month}", clean=False))
        except ChesspipeError:
            raise ChesspipeError(
                f"build-month {month} is already running into {books} "
                f"(lock {Path(books) / '.locks' / f'build-{month}.lock'}); wait for it or try later"
            ) from None
        remove_stale_staging(Path(books), month)
        yield


def ingest_step(
    resolved: ResolvedSource,
    month: str,
    warehouse: Path,
    settings: MonthSettings,
    download: DownloadOptions,
    force: bool,
    progress: ProgressCallback | None,
    explorer: WithIngest | None = None,
    executor: Executor | None = None,
) -> IngestResult:
    """Ingest the month unless its partition already holds this content; return its manifest.
    `explorer`: the explorer's index an ingest that runs makes from the games it keeps,
    published with the statistics as one set.
    `executor`: where the source's units of frames are read (a cluster's: the month split)."""
    if not force:
        existing = up_to_date_partition(warehouse, month, resolved.identity, settings)
        if existing is not None:
            return IngestResult(existing, reused=True)
    manifest = ingest(
        resolved.source,
        month,
        warehouse,
        settings.ingest,
        policy=RunPolicy(
            keep_partial=settings.keep_partial,
            allow_empty=settings.allow_empty,
            replace_month=force,
            also_staged=explorer,
        ),
        download=Download(
            expected_sha256=resolved.expected_sha256, http_options=download.http_options()
        ),
        runtime=Runtime(progress=progress, workers=settings.workers, executor=executor),
    )
    return IngestResult(manifest, reused=False)


def feeds_explorer(settings: MonthSettings) -> bool:
    """Whether the games an ingest keeps are the explorer's, so that the explorer reads them
    from ingest instead of reading the source again: the same filter, no game left out as a
    duplicate, and no ply counted past the explorer's (a game illegal there is dropped by
    both)."""
    ingest = settings.ingest
    reads = explorer_settings(settings).reads_kept_games(ingest.rules, ingest.plies, ingest.dedupe)
    return settings.explorer and reads


def explorer_settings(settings: MonthSettings) -> ExplorerSettings:
    """The explorer's index of a month's build: the ingest filter, lila's 50 plies."""
    return ExplorerSettings(settings.ingest.rules, games=settings.games)


def up_to_date_explorer(
    warehouse: Path,
    month: str,
    identity: SourceIdentity | None,
    settings: MonthSettings,
    published: ExplorerManifest | None = None,
) -> ExplorerManifest | None:
    """The month's explorer manifest if its files were indexed from this content with these
    settings and still have their recorded sha256. `published`: the manifest of the month's
    explorer where the build publishes (object storage, whose files are not here to check),
    up to date when it records this content and these settings."""
    if identity is None or identity.sha256 is None:
        return None
    wanted = explorer_settings(settings).to_json()
    if published is not None:
        current = published.source_sha256 == identity.sha256 and published.settings == wanted
        return published if current else None
    path = explorer_manifest_path(warehouse, month)
    try:
        manifest = ExplorerManifest.read(path)
    except (OSError, ValueError, TypeError):
        return None
    if manifest.source_sha256 != identity.sha256 or manifest.settings != wanted:
        return None
    for name in month_file_names(manifest.positions_published):
        file = month_dir(warehouse, month) / name
        if not file.is_file() or file_sha256(file) != getattr(manifest, SHA256_FIELDS[name]):
            return None
    return manifest


def explorer_step(
    resolved: ResolvedSource,
    month: str,
    warehouse: Path,
    settings: MonthSettings,
    download: DownloadOptions,
    with_ingest: WithIngest | None = None,
    current: ExplorerManifest | None = None,
) -> ExplorerManifest | None:
    """Index the month for the explorer unless it already is from this content (`current`,
    up_to_date_explorer's; None: a source read once, standard input, is not indexed).
    `with_ingest`: the index this run's ingest made from the games it kept and published with
    the statistics (feeds_explorer), if it ran."""
    if with_ingest is not None and with_ingest.manifest is not None:
        return with_ingest.manifest
    if current is not None:
        return current
    digest = resolved.identity.sha256 if resolved.identity is not None else None
    if resolved.kind == "stdin":
        return None
    http = download.http_options()
    if resolved.expected_sha256 is not None:  # a URL read again is checked as ingest checks it
        http["expected_sha256"] = resolved.expected_sha256
    return index_month(
        resolved.source,
        month,
        warehouse,
        explorer_settings(settings),
        source_sha256=digest,
        http_options=http,
        allow_empty=settings.allow_empty,
    )


@contextmanager
def explorer_with_ingest(
    warehouse: Path,
    month: str,
    settings: MonthSettings,
    resolved: ResolvedSource,
    current: ExplorerManifest | None,
) -> Iterator[WithIngest | None]:
    """The explorer's index that ingest makes from the games it keeps, published with the
    statistics (the explorer's month held meanwhile). None: the explorer is up to date
    (`current`, up_to_date_explorer's), or does not read ingest's games (feeds_explorer)."""
    if not feeds_explorer(settings) or current is not None:
        yield None
        return
    digest = resolved.identity.sha256 if resolved.identity is not None else None
    with with_ingest(
        warehouse, month, explorer_settings(settings), recorded_source=str(resolved.source),
        source_sha256=digest, workers=settings.workers or os.cpu_count() or 1,
    ) as explorer:  # fmt: skip
        yield explorer


def explorer_described(local: Path, month: str, warehouse: str) -> Described:
    """A month's explorer files in a local warehouse, and their manifest, going to the same
    places in a remote one."""
    from pipelines.sources import object_store as store
    from pipelines.sources.object_publish import Described
    from pipelines.warehouse.explorer_files import month_file_names

    manifest_file = explorer_manifest_path(local, month)
    published = ExplorerManifest.read(manifest_file).positions_published
    files = [month_dir(local, month) / name for name in month_file_names(published)]

    def url(file: Path) -> str:
        return store.join(warehouse, file.relative_to(local).as_posix())

    *rest, last = files
    return Described(last, url(last), manifest_file, url(manifest_file), root=warehouse,
                     more=tuple((file, url(file)) for file in rest))  # fmt: skip


@contextmanager
def book_staging(books: Path, month: str) -> Iterator[Path]:
    """A private staging folder for a month's book under BOOKS/.staging, removed at the end
    (one a killed run left is removed by the next build of the month: build_lock)."""
    staging = Path(books) / ".staging" / f"{month}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    staging.mkdir(parents=True)
    try:
        yield staging
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def book_step(warehouse: Path, month: str, settings: MonthSettings, staging: Path) -> BookManifest:
    """Build the month's book into a hidden staging folder; return its manifest.

    A book no move enters raises EmptyBook, unless the settings allow an empty result: its
    manifest then has no entry, and it is not published.
    """
    staged = staging / book_name(month, settings.ingest.rules.variant)
    return build_book(warehouse, [month], staged, settings.book, allow_empty=settings.allow_empty)


def build_month(
    source: str,
    month: str,
    warehouse: Path | str,
    books: Path | str,
    settings: MonthSettings | None = None,
    download: DownloadOptions | None = None,
    force: bool = False,
    progress: ProgressCallback | None = None,
    run_step: StepRunner = run_directly,
    *,
    executor: Executor | None = None,
    published_explorer: ExplorerManifest | None = None,
) -> MonthManifest:
    """Build and publish a month's book; return the run manifest (status built or up-to-date).

    `warehouse` and `books` are folders, or URLs of object storage (s3://...) handled by fsspec.
    `executor` (a Dask cluster's): the month's source is read by units of frames there, the
    month split over its workers (a pzstd-style file or URL they reach; a URL read by ranges is
    not hashed, so a published checksum cannot be checked: pipelines.ingest.run).
    `published_explorer`: the month's explorer manifest where a remote build publishes (its
    files are not in the local warehouse): the explorer is not indexed while it is current.
    """
    settings = settings or MonthSettings()
    download = download or DownloadOptions()
    check_month(month)
    from pipelines.sources.object_store import is_remote

    if is_remote(warehouse) or is_remote(books):
        return _build_month_remote(
            source,
            str(warehouse),
            str(books),
            month,
            settings,
            download,
            force,
            progress,
            run_step,
            executor,
        )
    warehouse, books = Path(warehouse), Path(books)
    started = time.monotonic()
    make_folder(books)
    with build_lock(books, month):
        # Whatever path follows (up to date, reuse of the partition, rebuild), what killed runs
        # of the month left in the warehouse goes; a month another run is ingesting is left alone.
        clean_month_if_free(warehouse, month)
        resolved: ResolvedSource = run_step(
            "resolve-source", resolve_source, source, settings.ingest.rules.variant, download
        )
        if not force:
            current = up_to_date_book(books, month, resolved.identity, settings, warehouse)
            if current is not None:
                return replace(current, status="up-to-date")
        explored = None  # (the explorer's files hashed once: before ingest, and for its step)
        if settings.explorer and not force:
            explored = up_to_date_explorer(
                warehouse, month, resolved.identity, settings, published_explorer
            )
        with explorer_with_ingest(warehouse, month, settings, resolved, explored) as explorer:
            ingested: IngestResult = run_step(
                "ingest", ingest_step, resolved, month, warehouse, settings, download, force,
                progress, explorer, executor,
            )  # fmt: skip
            if settings.explorer:
                run_step(
                    "explorer-index", explorer_step, resolved, month, warehouse, settings,
                    download, explorer, explored,
                )  # fmt: skip
        with book_staging(books, month) as staging:
            book_manifest: BookManifest = run_step(
                "build-book", book_step, warehouse, month, settings, staging
            )
            if book_manifest.entries == 0:  # allowed empty (book_step): never published
                return unpublished(month, resolved, settings, ingested, book_manifest, started)
            manifest: MonthManifest = run_step(
                "publish",
                publish_step,
                books,
                month,
                resolved,
                settings,
                ingested,
                book_manifest,
                staging,
                started,
            )
        return manifest


def _build_month_remote(
    source: str,
    warehouse: str,
    books: str,
    month: str,
    settings: MonthSettings,
    download: DownloadOptions,
    force: bool,
    progress: ProgressCallback | None,
    run_step: StepRunner,
    executor: Executor | None = None,
) -> MonthManifest:
    """Build in a local scratch folder seeded from object storage, then publish what changed.

    Each changed file goes up with its manifest as `pipelines.sources.object_publish` does it:
    partition and ingest manifest, then book and run manifest, the run manifest (the set's
    record) deleted first and put in place last. A local books folder is published last.
    """
    import tempfile

    from pipelines.sources import object_store as store
    from pipelines.sources.object_lease import StoreLease, supports_leases
    from pipelines.sources.object_publish import Described, put_in_place, remove_stale, stage

    remote_wh, remote_books = store.is_remote(warehouse), store.is_remote(books)
    remote_roots = [
        root for root, remote in ((warehouse, remote_wh), (books, remote_books)) if remote
    ]
    for root in remote_roots:  # no credentials, or no endpoint: fail before any work
        store.check_access(root)
    key = hashlib.sha256(f"{warehouse}\n{books}".encode()).hexdigest()[:16]
    lock_root = Path(tempfile.gettempdir()) / "chesspipe-locks" / key
    with ExitStack() as stack:
        stack.enter_context(build_lock(lock_root, month))  # this machine's runs
        # Every machine's runs: a lease in each store that takes them (S3), held until the end
        leases = [
            stack.enter_context(StoreLease(root, name, what=f"month {month} in {root}"))
            for root, name in ((warehouse, month), (books, f"build-{month}"))
            if store.is_remote(root) and supports_leases(root)
        ]
        if not remote_books:
            make_folder(Path(books))
            stack.enter_context(build_lock(Path(books), month))
        scratch = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="chesspipe-")))
        for root in remote_roots:  # every other run of the month here is dead, or has lost
            remove_stale(root, month)  # its lease and publishes nothing (confirm below)
        local_wh = scratch / "warehouse" if remote_wh else Path(warehouse)
        # The book is built in scratch even for a local books folder, so that it is published
        # after the statistics it was built from.
        local_books = scratch / "books"
        variant = settings.ingest.rules.variant
        book, manifest_file = published_paths(local_books, month, variant)
        # A local books folder's book and run manifest, published from scratch last
        local_targets = None if remote_books else published_paths(Path(books), month, variant)
        stats_file = partition_file(local_wh, month)
        stats_manifest = manifest_path(local_wh, month)

        def url(base: str, local: Path, root: Path) -> str:
            return store.join(base, local.relative_to(root).as_posix())

        def described(file: Path, file_manifest: Path, base: str, root: Path) -> Described:
            """A local file and its manifest under `root`, going to the same place under `base`."""
            return Described(
                file,
                url(base, file, root),
                file_manifest,
                url(base, file_manifest, root),
                root=base,
            )

        if remote_books and not force:
            for local in (manifest_file, book):
                store.download_if_exists(url(books, local, local_books), local)
        if local_targets is not None and not force:
            make_folder(local_books)
            for local, published in zip((book, manifest_file), local_targets, strict=True):
                if published.is_file():
                    shutil.copyfile(published, local)
        if remote_wh and not force:
            store.download_if_exists(url(warehouse, stats_manifest, local_wh), stats_manifest)
            previous = read_manifest(local_wh, month)
            wanted = settings.ingest
            if previous is not None and previous.settings == wanted:
                got = store.download_if_exists(url(warehouse, stats_file, local_wh), stats_file)
                recorded = previous.output_mtime_ns
                if got and recorded is not None:  # the copy's time is the one published
                    os.utime(stats_file, ns=(recorded, recorded))
        explorer_file = explorer_manifest_path(local_wh, month)
        published_explorer = None
        if remote_wh and settings.explorer and not force:
            seen = scratch / "published-explorer.json"
            if store.download_if_exists(url(warehouse, explorer_file, local_wh), seen):
                with contextlib.suppress(ValueError, TypeError):
                    published_explorer = ExplorerManifest.read(seen)
        manifest = build_month(
            source, month, local_wh, local_books, settings, download, force, progress, run_step,
            executor=executor, published_explorer=published_explorer,
        )  # fmt: skip
        if manifest.status != "built":
            return manifest
        if remote_wh:  # the book's statistics are in the store, not in the scratch folder
            manifest = replace(manifest, book=replace(manifest.book, warehouse=warehouse))
            manifest.write(manifest_file)
        changed: list[Described] = []
        if remote_wh and not manifest.ingest_reused:
            changed.append(described(stats_file, stats_manifest, warehouse, local_wh))
        if remote_wh and explorer_file.is_file():  # indexed by this run: its files go with it
            changed.append(explorer_described(local_wh, month, warehouse))
        if remote_books:
            changed.append(described(book, manifest_file, books, local_books))
        for published in local_targets or ():  # a device or a folder in the way: say so first
            check_output(published)
        staged = stage(changed, month=month)
        for lease in leases:  # still ours: no successor has published in the meantime
            lease.confirm()
        if local_targets is None:
            put_in_place(staged)
            return manifest
        local_book, local_manifest = local_targets
        local_manifest.unlink(missing_ok=True)  # the set's record goes first, as in the store
        put_in_place(staged)
        with OutputSet(local_book, local_manifest) as outputs:
            shutil.copyfile(book, outputs.path(local_book))
            shutil.copyfile(manifest_file, outputs.path(local_manifest))
        return manifest
