"""Checking a books folder against the warehouse its months were built from.

A month's run manifest (`lichess-YYYY-MM.json`) records the statistics its book was built from
(its `ingest`, with the partition's `output_sha256`). A build stopped after its ingest step
leaves the new statistics beside the previous book and run manifest: the manifest then records
a partition the month no longer has, and the book is older than its month. `check_books`
reports that (and books whose bytes are not the recorded ones, run manifests that cannot be
read, and temporary files killed runs left); with `repair`, it builds such a month's book again
from the statistics the month has now and publishes it with a new run manifest, under the
month's build lock.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from pipelines.errors import ChesspipeError
from pipelines.explorer.manifest import ExplorerManifest
from pipelines.files import file_sha256
from pipelines.ingest.manifest import IngestManifest, read_manifest
from pipelines.monthly.build import book_staging, book_step, build_lock
from pipelines.monthly.manifest import IngestResult, MonthManifest
from pipelines.monthly.publish import publish_step, published_paths
from pipelines.monthly.source import ResolvedSource
from pipelines.warehouse.check import Finding
from pipelines.warehouse.explorer_files import explorer_manifest_path
from pipelines.warehouse.layout import MONTH_RE
from pipelines.warehouse.locks import month_lock, output_lock

#: A month's book or run manifest (publish.book_name): lichess-YYYY-MM.bin or .json, or
#: lichess-VARIANT-YYYY-MM.bin or .json; the month is the first group, the suffix the second.
MONTH_FILE_RE = re.compile(r"lichess(?:-[a-z0-9]+)?-([0-9]{4}-[0-9]{2})\.(bin|json)")

#: A temporary file a writer of the books folder leaves while it writes: `.NAME.XXXXXXXX.tmp`.
TEMP_RE = re.compile(r"\.(.+)\.([0-9a-f]{8})\.tmp")


def check_books(warehouse: Path, books: Path, *, repair: bool = False) -> list[Finding]:
    """Return what is wrong in a books folder against the warehouse; with `repair`, build the
    books that are older than their month again and remove killed runs' temporary files."""
    findings = list(_temp_findings(Path(books), repair))
    for manifest_file in sorted(Path(books).glob("lichess*-*.json")):
        found = MONTH_FILE_RE.fullmatch(manifest_file.name)
        if found is None or not MONTH_RE.fullmatch(found.group(1)):
            continue
        findings += _month_findings(
            Path(warehouse), Path(books), manifest_file, found.group(1), repair
        )
    return findings


def _month_findings(
    warehouse: Path, books: Path, manifest_file: Path, month: str, repair: bool
) -> Iterator[Finding]:
    try:
        fields = json.loads(manifest_file.read_bytes())
    except (OSError, ValueError):
        fields = None
    if isinstance(fields, dict) and "ingest" not in fields:
        return  # a book's own manifest (`book build --out BOOKS/lichess-YYYY-MM.bin`)
    try:
        run: MonthManifest | None = MonthManifest.from_json(fields)
    except (KeyError, TypeError, ValueError):  # as MonthManifest.read
        run = None
    if run is None:
        detail = "not readable as a run manifest; build the month again"
        yield Finding("bad-manifest", manifest_file, month, detail)
        return
    book = published_paths(books, month, run.variant)[0]
    current = read_manifest_or_none(warehouse, month)
    if current is None:
        detail = f"its month has no statistics in {warehouse}: the book cannot be checked"
        yield Finding("no-statistics", manifest_file, month, detail, repair="leaves it")
        return
    if run.settings.explorer:
        yield from _explorer_finding(warehouse, month, current)
    if not book.is_file():
        problem, detail = "no-book", "run manifest without its book"
    elif current.output_sha256 != run.ingest.output_sha256:
        problem = "stale-book"
        detail = (
            "built from statistics the month no longer has (a build stopped after its "
            "ingest, or the month was ingested again since)"
        )
    elif file_sha256(book) != run.book_sha256:
        problem, detail = "sha256-mismatch", f"does not match book_sha256 of {manifest_file.name}"
        manifest_file = book
    else:
        return
    if not repair:
        yield Finding(problem, manifest_file, month, detail, repair="builds the book again")
        return
    try:
        rebuilt = rebuild_book(warehouse, books, month, run, current)
    except ChesspipeError as exc:
        yield Finding(problem, manifest_file, month, f"{detail}; not rebuilt: {exc}")
        return
    done = f"book built again from the month's statistics ({rebuilt.book.entries:,} entries)"
    yield Finding(problem, book, month, done, True)


def _explorer_finding(warehouse: Path, month: str, current: IngestManifest) -> Iterator[Finding]:
    """The month's explorer data when it was indexed from another source than its statistics
    (a build stopped between its ingest and its explorer index)."""
    path = explorer_manifest_path(warehouse, month)
    try:
        indexed = ExplorerManifest.read(path).source_sha256
    except (OSError, ValueError, TypeError, KeyError):
        return  # no explorer data, or data `warehouse check` reports
    if (
        indexed is not None
        and current.source_sha256 is not None
        and indexed != current.source_sha256
    ):
        detail = (
            "indexed from another source than the month's statistics (a build stopped after "
            "its ingest); build-month of the month indexes it again"
        )
        yield Finding("stale-explorer", path, month, detail, repair="leaves it")


def read_manifest_or_none(warehouse: Path, month: str) -> IngestManifest | None:
    """The month's ingest manifest, or None when there is none that reads."""
    try:
        return read_manifest(warehouse, month)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def rebuild_book(
    warehouse: Path, books: Path, month: str, run: MonthManifest, current: IngestManifest
) -> MonthManifest:
    """Build a month's book again from the statistics it has now, with the book settings its
    run manifest records, and publish it with a new run manifest (status "repaired") that
    records those statistics and no source identity; under the month's build lock (a live
    build: ChesspipeError)."""
    started = time.monotonic()
    settings = replace(run.settings, ingest=current.settings)
    # No source identity: the repair read no source, so the next build-month of the month
    # does every step again (the explorer's index included), reusing what is up to date.
    resolved = ResolvedSource(
        current.source, current.source_resolved, current.source_kind, None, None
    )
    with build_lock(books, month), book_staging(books, month) as staging:
        book_manifest = book_step(warehouse, month, settings, staging)
        ingested = IngestResult(current, reused=True)
        return publish_step(
            books, month, resolved, settings, ingested, book_manifest, staging, started,
            status="repaired",
        )  # fmt: skip


def _temp_findings(books: Path, repair: bool) -> Iterator[Finding]:
    """Temporary files of books and manifests that killed runs left in the books folder
    (`.NAME.XXXXXXXX.tmp`), each reported (and removed with `repair`) only while no run can
    be writing NAME: a month's book and run manifest under the month's build lock, any other
    book and its manifest under the book's output lock."""
    for tmp in sorted(books.glob(".*.tmp")):
        found = TEMP_RE.fullmatch(tmp.name)
        if found is None or not tmp.is_file():
            continue
        target = books / found.group(1)
        book = target.with_suffix(".bin") if target.suffix == ".json" else target
        month_book = MONTH_FILE_RE.fullmatch(book.name)
        try:
            with (
                month_lock(books, f"build-{month_book.group(1)}", clean=False)
                if month_book is not None
                else output_lock(book)
            ):
                if repair:
                    tmp.unlink(missing_ok=True)
                    yield Finding("temp-file", tmp, None, "removed", True)
                else:
                    detail = "left by a killed book build or build-month"
                    yield Finding("temp-file", tmp, None, detail, repair="removes it")
        except ChesspipeError:
            continue  # a run is writing it now
