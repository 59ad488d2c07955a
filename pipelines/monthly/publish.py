"""Where a month's book is published, the publish step and its run manifest, stale staging."""

from __future__ import annotations

import os
import time
from concurrent.futures import Executor
from contextlib import ExitStack
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from pipelines.books.manifest import BookManifest
from pipelines.books.settings import BookSettings
from pipelines.errors import ChesspipeError
from pipelines.files import file_sha256, write_json
from pipelines.monthly.manifest import IngestResult, MonthManifest, TopMove
from pipelines.monthly.settings import MonthSettings
from pipelines.monthly.source import ResolvedSource, SourceIdentity
from pipelines.warehouse.integrity import recorded_sha256
from pipelines.warehouse.leftovers import month_staging, remove_leftovers
from schemas.atomic_files import OutputSet
from schemas.version import __version__


def book_name(month: str, variant: str = "standard") -> str:
    """Return the published book's file name of a month: lichess-YYYY-MM.bin."""
    prefix = "lichess" if variant == "standard" else f"lichess-{variant}"
    return f"{prefix}-{month}.bin"


def published_paths(books: Path, month: str, variant: str = "standard") -> tuple[Path, Path]:
    """Return (book, run manifest) paths of a month under the books folder."""
    book = Path(books) / book_name(month, variant)
    return book, book.with_suffix(".json")


def range_book_path(books: Path, name: str, months: list[str]) -> Path:
    """Return where a book over many months is written: BOOKS/NAME.bin (NAME may end in .bin).

    NAME is a plain file name, and not the name of one of the months' own books.
    """
    stem = name[: -len(".bin")] if name.endswith(".bin") else name
    if not stem or stem.startswith(".") or "/" in stem or "\\" in stem:
        raise ChesspipeError(f"book name must be a plain file name, got {name!r}")
    if any(
        f"{stem}.bin" == book_name(month, variant)
        for month in months
        for variant in ("standard", "chess960")
    ):
        raise ChesspipeError(f"book name {name!r} is the name of a month's own book")
    return Path(books) / f"{stem}.bin"


def range_book_url(books: str, name: str, months: list[str]) -> str:
    """Return where a book over many months goes in a books folder or store: range_book_path's
    name, under a URL as is (a URL is no path: s3://b/x is not s3:/b/x)."""
    from pipelines.sources.object_store import is_remote, join

    checked = range_book_path(Path("books"), name, months)  # the name's own checks
    return join(books, checked.name) if is_remote(books) else str(Path(books) / checked.name)


def publish_range_book(
    warehouse: Path | str,
    months: list[str],
    url: str,
    settings: BookSettings,
    *,
    executor: Executor | None = None,
) -> BookManifest:
    """Build a book over many months into a temporary folder, then publish it and its
    manifest into a store as a pair (pipelines.sources.object_publish), under a lease on the
    book's name: of two runs writing one book, the second is refused."""
    import tempfile

    from pipelines.books.build import build_book
    from pipelines.books.manifest import book_manifest_path
    from pipelines.sources.object_lease import StoreLease, supports_leases
    from pipelines.sources.object_publish import Described, put_in_place, remove_stale, stage
    from pipelines.sources.object_store import check_access, join

    root, name = url.rsplit("/", 1)
    check_access(root)
    with ExitStack() as stack:
        lease = None
        if supports_leases(root):
            lease = stack.enter_context(StoreLease(root, name, what=f"book {url}"))
            remove_stale(root, name)  # what runs killed while publishing it staged
        scratch = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="chesspipe-")))
        book = scratch / name
        manifest = build_book(warehouse, months, book, settings, executor=executor)
        beside = book_manifest_path(book)
        record = join(root, beside.name)
        staged = stage([Described(book, url, beside, record, root=root)], month=name)
        if lease is not None:
            lease.confirm()
        put_in_place(staged)
    return manifest


def up_to_date_book(
    books: Path,
    month: str,
    identity: SourceIdentity | None,
    settings: MonthSettings,
    warehouse: Path,
) -> MonthManifest | None:
    """Return the published run manifest if it was made from this content and these settings,
    from the statistics the month has in `warehouse` now (not those of a build stopped after
    its ingest)."""
    book, manifest_file = published_paths(books, month, settings.ingest.rules.variant)
    if identity is None or not manifest_file.exists() or not book.exists():
        return None
    manifest = MonthManifest.read(manifest_file)
    if manifest is None:
        return None
    if manifest.source_identity != identity or manifest.settings != settings:
        return None
    if manifest.ingest.output_sha256 != recorded_sha256(warehouse, month):
        return None
    if manifest.book_sha256 != file_sha256(book):
        return None
    return manifest


def top_moves(book: Path, count: int = 5) -> tuple[TopMove, ...]:
    """Return the heaviest book moves of the start position with their share of the weight."""
    import chess

    from schemas.polyglot import Book

    board = chess.Board()
    moves = Book.open(book).moves(board)
    total = sum(m.weight for m in moves) or 1
    return tuple(
        TopMove(m.move.uci(), board.san(m.move), m.weight, round(m.weight / total, 4))
        for m in moves[:count]
    )


def publish_step(
    books: Path,
    month: str,
    resolved: ResolvedSource,
    settings: MonthSettings,
    ingested: IngestResult,
    book_manifest: BookManifest,
    staging: Path,
    started: float,
    status: str = "built",
) -> MonthManifest:
    """Move the staged book into place, then write the run manifest (of `status`) beside it;
    return it."""
    variant = settings.ingest.rules.variant
    book, manifest_file = published_paths(books, month, variant)
    staged = staging / book.name
    book_sha256 = file_sha256(staged)
    moves = top_moves(staged)
    with OutputSet(book, manifest_file) as outputs:  # the book, then the run manifest
        os.replace(staged, outputs.path(book))
        manifest = _run_manifest(
            status,
            month,
            resolved,
            settings,
            ingested,
            replace(book_manifest, out=book.name),
            started,
            book_sha256=book_sha256,
            book_size=outputs.path(book).stat().st_size,
            moves=moves,
        )
        write_json(outputs.path(manifest_file), manifest.to_json())
    return manifest


def unpublished(
    month: str,
    resolved: ResolvedSource,
    settings: MonthSettings,
    ingested: IngestResult,
    book_manifest: BookManifest,
    started: float,
) -> MonthManifest:
    """Return the run manifest of a build whose book no move enters (allowed empty): status
    "empty", and neither the book nor the manifest is written (no book is ever published
    empty; one published before stays, with its own manifest)."""
    name = book_name(month, settings.ingest.rules.variant)
    return _run_manifest(
        "empty", month, resolved, settings, ingested, replace(book_manifest, out=name), started
    )


def _run_manifest(
    status: str,
    month: str,
    resolved: ResolvedSource,
    settings: MonthSettings,
    ingested: IngestResult,
    book_manifest: BookManifest,
    started: float,
    *,
    book_sha256: str = "",
    book_size: int = 0,
    moves: tuple[TopMove, ...] = (),
) -> MonthManifest:
    """The run manifest of a build that ends now, its book named by `book_manifest.out`."""
    return MonthManifest(
        chesspipe_version=__version__,
        month=month,
        variant=settings.ingest.rules.variant,
        status=status,
        source=resolved.source,
        source_resolved=resolved.resolved,
        source_kind=resolved.kind,
        source_identity=resolved.identity,
        settings=settings,
        ingest=ingested.manifest,
        ingest_reused=ingested.reused,
        book=book_manifest,
        book_file=book_manifest.out,
        book_sha256=book_sha256,
        book_size=book_size,
        top_moves=moves,
        seconds=round(time.monotonic() - started, 3),
        finished_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )


def remove_stale_staging(books: Path, month: str) -> list[Path]:
    """Delete what killed builds of a month left in the books folder (call holding its lock).

    Their staging folders, and the temporary files of the book and run manifest.
    """
    temp_files = [
        tmp
        for tmp in Path(books).glob(f".lichess*-{month}.*.tmp")
        if tmp.name.split(".")[2] in ("bin", "json")
    ]
    return remove_leftovers(month_staging(books, month), temp_files, month)
