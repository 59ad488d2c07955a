"""Where a month's book is published, the publish step, its run manifest and its summaries."""

from __future__ import annotations

import os
import shutil
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pipelines.files import file_sha256, write_json_atomic
from pipelines.monthly.settings import MonthSettings
from pipelines.monthly.source import ResolvedSource
from pipelines.version import __version__


def book_name(month: str, variant: str = "standard") -> str:
    """Return the published book's file name of a month: lichess-YYYY-MM.bin."""
    prefix = "lichess" if variant == "standard" else f"lichess-{variant}"
    return f"{prefix}-{month}.bin"


def published_paths(books: Path, month: str, variant: str = "standard") -> tuple[Path, Path]:
    """Return (book, run manifest) paths of a month under the books folder."""
    book = Path(books) / book_name(month, variant)
    return book, book.with_suffix(".json")


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
