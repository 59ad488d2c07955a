"""A month's book from a dump: resolve, ingest, build, publish; idempotent and safe to kill."""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any, TypeVar

from pipelines.books.build import BookSettings, build_book
from pipelines.errors import ChesspipeError
from pipelines.files import file_sha256, write_json_atomic
from pipelines.ingest.game_filter import GameFilter
from pipelines.ingest.manifest import IngestManifest, read_manifest
from pipelines.ingest.run import ingest
from pipelines.ingest.settings import IngestSettings
from pipelines.progress import ProgressCallback
from pipelines.sources.open import is_url, resolve
from pipelines.warehouse.layout import check_month, manifest_path, partition_file
from pipelines.warehouse.locks import month_lock
from schemas.version import __version__

T = TypeVar("T")

#: Runs one named step of a build; the Prefect flow passes one that makes each step a task.
StepRunner = Callable[..., Any]


def run_directly(name: str, function: Callable[..., T], *args: Any) -> T:
    """Run a build step as a plain call."""
    return function(*args)


@dataclass(frozen=True)
class MonthSettings:
    """What a month's build depends on besides its source: filter, plies and book options."""

    rules: GameFilter = field(default_factory=GameFilter)
    plies: int = 20
    book: BookSettings = field(default_factory=BookSettings)
    keep_partial: bool = False
    #: Processes for the scan; results do not depend on it, so it is not recorded.
    workers: int | None = field(default=None, compare=False)

    def record(self) -> dict[str, Any]:
        """Return the settings as plain JSON values, as stored in the run manifest."""
        book = asdict(self.book)
        if book["speeds"] is not None:
            book["speeds"] = list(book["speeds"])
        return {
            "ingest": IngestSettings(self.rules, self.plies).to_json(),
            "book": book,
            "keep_partial": self.keep_partial,
        }


@dataclass(frozen=True)
class DownloadOptions:
    """How a remote source is fetched: checksum verification, cache folder, retries."""

    verify: bool = True
    cache: Path | None = None
    timeout: float = 60.0
    retries: int = 5
    backoff: float = 1.0

    def http_options(self) -> dict[str, Any]:
        """Return the keyword arguments of `pipelines.sources.http.open_url`."""
        return {
            "timeout": self.timeout,
            "retries": self.retries,
            "backoff": self.backoff,
            "cache": self.cache,
        }


@dataclass(frozen=True)
class ResolvedSource:
    """A source and what identifies its content: sha256 (and size) or URL + ETag."""

    source: str
    resolved: str
    kind: str
    identity: dict[str, Any] | None
    expected_sha256: str | None


def book_name(month: str, variant: str = "standard") -> str:
    """Return the published book's file name of a month: lichess-YYYY-MM.bin."""
    prefix = "lichess" if variant == "standard" else f"lichess-{variant}"
    return f"{prefix}-{month}.bin"


def published_paths(books: Path, month: str, variant: str = "standard") -> tuple[Path, Path]:
    """Return (book, run manifest) paths of a month under the books folder."""
    book = Path(books) / book_name(month, variant)
    return book, book.with_suffix(".json")


def resolve_source(source: str, variant: str, download: DownloadOptions) -> ResolvedSource:
    """Find where a source is and what identifies its content, without reading all of it."""
    resolved = resolve(source, variant)
    if resolved == "-":
        return ResolvedSource(source, resolved, "stdin", None, None)
    if is_url(resolved):
        from pipelines.sources.http import published_sha256, remote_identity

        if download.verify:
            digest = published_sha256(
                resolved,
                timeout=download.timeout,
                retries=download.retries,
                backoff=download.backoff,
            )
            return ResolvedSource(source, resolved, "url", {"sha256": digest}, digest)
        identity = remote_identity(resolved, timeout=download.timeout, retries=download.retries)
        return ResolvedSource(source, resolved, "url", identity, None)
    path = Path(resolved)
    if not path.is_file():
        raise ChesspipeError(f"cannot open {resolved}: no such file")
    digest = file_sha256(path)
    return ResolvedSource(
        source, resolved, "file", {"sha256": digest, "size": path.stat().st_size}, digest
    )


def up_to_date_book(
    books: Path, month: str, variant: str, identity: dict[str, Any] | None, settings: dict[str, Any]
) -> dict[str, Any] | None:
    """Return the published run manifest if it was made from this content and these settings."""
    import json

    book, manifest_file = published_paths(books, month, variant)
    if identity is None or not manifest_file.exists() or not book.exists():
        return None
    try:
        manifest: dict[str, Any] = json.loads(manifest_file.read_text())
    except ValueError:
        return None
    if manifest.get("source_identity") != identity or manifest.get("settings") != settings:
        return None
    if manifest.get("book_sha256") != file_sha256(book):
        return None
    return manifest


def up_to_date_partition(
    warehouse: Path, month: str, identity: dict[str, Any] | None, settings: MonthSettings
) -> IngestManifest | None:
    """Return the month's ingest manifest if its partition came from this content and filter."""
    if identity is None or "sha256" not in identity:
        return None
    manifest = read_manifest(warehouse, month)
    target = partition_file(warehouse, month)
    if manifest is None or not target.exists():
        return None
    if manifest.partial or manifest.source_sha256 != identity["sha256"]:
        return None
    if manifest.settings != IngestSettings(settings.rules, settings.plies):
        return None
    if manifest.output_sha256 != file_sha256(target):
        return None
    return manifest


@contextmanager
def build_lock(books: Path, month: str) -> Iterator[None]:
    """Hold the lock of a month's build, failing at once with a clear message if it is held."""
    with ExitStack() as stack:
        try:
            stack.enter_context(month_lock(Path(books), f"build-{month}"))
        except ChesspipeError:
            raise ChesspipeError(
                f"build-month {month} is already running into {books} "
                f"(lock {Path(books) / '.locks' / f'build-{month}.lock'}); wait for it or try later"
            ) from None
        yield


def top_moves(book: Path, count: int = 5) -> list[dict[str, Any]]:
    """Return the heaviest book moves of the start position with their share of the weight."""
    import chess

    from schemas.polyglot import Book

    board = chess.Board()
    moves = Book.open(book).moves(board)
    total = sum(m.weight for m in moves) or 1
    return [
        {
            "move": m.move.uci(),
            "san": board.san(m.move),
            "weight": m.weight,
            "share": round(m.weight / total, 4),
        }
        for m in moves[:count]
    ]


def ingest_step(
    resolved: ResolvedSource,
    month: str,
    warehouse: Path,
    settings: MonthSettings,
    download: DownloadOptions,
    force: bool,
    progress: ProgressCallback | None,
) -> dict[str, Any]:
    """Ingest the month unless its partition already holds this content; return its manifest."""
    if not force:
        existing = up_to_date_partition(warehouse, month, resolved.identity, settings)
        if existing is not None:
            return {**existing.to_json(), "reused": True}
    manifest = ingest(
        resolved.source,
        month,
        warehouse,
        IngestSettings(settings.rules, settings.plies),
        keep_partial=settings.keep_partial,
        progress=progress,
        workers=settings.workers,
        expected_sha256=resolved.expected_sha256,
        http_options=download.http_options(),
    )
    return {**manifest.to_json(), "reused": False}


def book_step(
    warehouse: Path, month: str, settings: MonthSettings, staging: Path
) -> dict[str, Any]:
    """Build the month's book into a hidden staging folder; return its manifest."""
    staged = staging / book_name(month, settings.rules.variant)
    return build_book(warehouse, [month], staged, settings.book)


def publish_step(
    books: Path,
    month: str,
    resolved: ResolvedSource,
    settings: MonthSettings,
    ingest_manifest: dict[str, Any],
    book_manifest: dict[str, Any],
    staging: Path,
    started: float,
) -> dict[str, Any]:
    """Move the staged book into place, then write the run manifest beside it; return it."""
    variant = settings.rules.variant
    book, manifest_file = published_paths(books, month, variant)
    staged = staging / book.name
    book_sha256 = file_sha256(staged)
    moves = top_moves(staged)
    os.replace(staged, book)
    manifest = {
        "chesspipe_version": __version__,
        "month": month,
        "variant": variant,
        "status": "built",
        "source": resolved.source,
        "source_resolved": resolved.resolved,
        "source_kind": resolved.kind,
        "source_identity": resolved.identity,
        "settings": settings.record(),
        "ingest": {k: v for k, v in ingest_manifest.items() if k != "reused"},
        "ingest_reused": bool(ingest_manifest.get("reused")),
        "book": {**book_manifest, "out": book.name},
        "book_file": book.name,
        "book_sha256": book_sha256,
        "book_size": book.stat().st_size,
        "top_moves": moves,
        "seconds": round(time.monotonic() - started, 3),
        "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    write_json_atomic(manifest_file, manifest)
    return manifest


def remove_stale_staging(books: Path, month: str) -> None:
    """Delete staging folders that killed builds of a month left (call holding its lock)."""
    for leftover in (Path(books) / ".staging").glob(f"{month}-*"):
        shutil.rmtree(leftover, ignore_errors=True)


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
) -> dict[str, Any]:
    """Build and publish a month's book; return the run manifest (status built or up-to-date).

    `warehouse` and `books` are folders, or URLs of object storage (s3://...) handled by fsspec.
    """
    settings = settings or MonthSettings()
    download = download or DownloadOptions()
    check_month(month)
    if settings.plies < 1:
        raise ChesspipeError("--plies must be at least 1")
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
        )
    warehouse, books = Path(warehouse), Path(books)
    started = time.monotonic()
    books.mkdir(parents=True, exist_ok=True)
    with build_lock(books, month):
        remove_stale_staging(books, month)
        resolved: ResolvedSource = run_step(
            "resolve-source", resolve_source, source, settings.rules.variant, download
        )
        if not force:
            current = up_to_date_book(
                books, month, settings.rules.variant, resolved.identity, settings.record()
            )
            if current is not None:
                return {**current, "status": "up-to-date"}
        ingest_manifest: dict[str, Any] = run_step(
            "ingest", ingest_step, resolved, month, warehouse, settings, download, force, progress
        )
        staging = books / ".staging" / f"{month}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        staging.mkdir(parents=True)
        try:
            book_manifest: dict[str, Any] = run_step(
                "build-book", book_step, warehouse, month, settings, staging
            )
            manifest: dict[str, Any] = run_step(
                "publish",
                publish_step,
                books,
                month,
                resolved,
                settings,
                ingest_manifest,
                book_manifest,
                staging,
                started,
            )
        finally:
            shutil.rmtree(staging, ignore_errors=True)
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
) -> dict[str, Any]:
    """Build in a local scratch folder seeded from object storage, then upload what changed."""
    import tempfile

    from pipelines.sources import object_store as store

    remote_wh, remote_books = store.is_remote(warehouse), store.is_remote(books)
    key = hashlib.sha256(f"{warehouse}\n{books}".encode()).hexdigest()[:16]
    lock_root = Path(tempfile.gettempdir()) / "chesspipe-locks" / key
    with build_lock(lock_root, month), tempfile.TemporaryDirectory(prefix="chesspipe-") as tmp:
        scratch = Path(tmp)
        local_wh = scratch / "warehouse" if remote_wh else Path(warehouse)
        local_books = scratch / "books" if remote_books else Path(books)
        book, manifest_file = published_paths(local_books, month, settings.rules.variant)
        stats_file = partition_file(local_wh, month)
        stats_manifest = manifest_path(local_wh, month)

        def url(base: str, local: Path, root: Path) -> str:
            return store.join(base, local.relative_to(root).as_posix())

        if remote_books and not force:
            for local in (manifest_file, book):
                store.download_if_exists(url(books, local, local_books), local)
        if remote_wh and not force:
            store.download_if_exists(url(warehouse, stats_manifest, local_wh), stats_manifest)
            previous = read_manifest(local_wh, month)
            wanted = IngestSettings(settings.rules, settings.plies)
            if previous is not None and previous.settings == wanted:
                store.download_if_exists(url(warehouse, stats_file, local_wh), stats_file)
        manifest = build_month(
            source, month, local_wh, local_books, settings, download, force, progress, run_step
        )
        if manifest["status"] != "built":
            return manifest
        if remote_wh and not manifest["ingest_reused"]:
            store.upload(stats_file, url(warehouse, stats_file, local_wh))
            store.upload(stats_manifest, url(warehouse, stats_manifest, local_wh))
        if remote_books:
            store.upload(book, url(books, book, local_books))
            store.upload(manifest_file, url(books, manifest_file, local_books))
        return manifest


def month_to_build(scheduled: datetime | date) -> str:
    """Return the month a run scheduled at this time builds: the previous calendar month."""
    year, month = scheduled.year, scheduled.month - 1
    if month == 0:
        year, month = year - 1, 12
    return f"{year:04d}-{month:02d}"


def summary_markdown(manifest: dict[str, Any]) -> str:
    """Return a short Markdown report of a month's build."""
    ingest_manifest = manifest["ingest"]
    lines = [
        f"# Book lichess {manifest['month']} ({manifest['status']})",
        "",
        f"- source: `{manifest['source_resolved']}`",
        f"- games read: {ingest_manifest['games_read']:,}",
        f"- games kept: {ingest_manifest['games_kept']:,}",
        f"- book: `{manifest['book_file']}`, {manifest['book_size']:,} bytes, "
        f"{manifest['book']['entries']:,} entries, {manifest['book']['positions']:,} positions",
        f"- sha256: `{manifest['book_sha256']}`",
        "",
        "| move | weight | share |",
        "|---|---:|---:|",
    ]
    for move in manifest["top_moves"]:
        lines.append(
            f"| {move['san']} ({move['move']}) | {move['weight']:,} | {move['share']:.1%} |"
        )
    if not manifest["top_moves"]:
        lines.append("| (no book moves at the start position) | | |")
    dropped = ingest_manifest.get("games_dropped") or {}
    if dropped:
        lines += ["", "Dropped games: " + ", ".join(f"{k} {v:,}" for k, v in dropped.items())]
    return "\n".join(lines) + "\n"


def print_status(manifest: dict[str, Any]) -> None:
    """Tell the user on stderr whether the book was built or already up to date."""
    if manifest["status"] == "up-to-date":
        print(
            f"chesspipe: {manifest['book_file']} is up to date (same source and settings); "
            "nothing changed (use --force to rebuild)",
            file=sys.stderr,
        )
