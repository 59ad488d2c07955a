"""The run manifest a month's build publishes beside its book (lichess-YYYY-MM.json)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from pipelines.books.manifest import BookManifest
from pipelines.files import write_json_atomic
from pipelines.ingest.manifest import IngestManifest
from pipelines.monthly.settings import MonthSettings
from pipelines.monthly.source import SourceIdentity


class IngestResult(NamedTuple):
    """The month's ingest manifest, and whether its partition was reused as it was."""

    manifest: IngestManifest
    reused: bool


@dataclass(frozen=True)
class TopMove:
    """A book move of the start position, with its share of the position's weight."""

    move: str
    san: str
    weight: int
    share: float

    def to_json(self) -> dict[str, Any]:
        """Return the move as its JSON object."""
        return {"move": self.move, "san": self.san, "weight": self.weight, "share": self.share}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TopMove:
        """Return the move a JSON object holds."""
        return cls(str(data["move"]), str(data["san"]), int(data["weight"]), float(data["share"]))


@dataclass(frozen=True)
class MonthManifest:
    """What a month's build published, from what source and settings; status built/up-to-date.

    Its file holds `settings` as `MonthSettings.record()` records them, and `ingest` as the
    month's ingest manifest file does.
    """

    chesspipe_version: str
    month: str
    variant: str
    status: str
    source: str
    source_resolved: str
    source_kind: str
    source_identity: SourceIdentity | None
    settings: MonthSettings
    ingest: IngestManifest
    ingest_reused: bool
    book: BookManifest
    book_file: str
    book_sha256: str
    book_size: int
    top_moves: tuple[TopMove, ...]
    seconds: float
    finished_at: str

    def to_json(self) -> dict[str, Any]:
        """Return the manifest as the JSON object its file holds."""
        return {
            "chesspipe_version": self.chesspipe_version,
            "month": self.month,
            "variant": self.variant,
            "status": self.status,
            "source": self.source,
            "source_resolved": self.source_resolved,
            "source_kind": self.source_kind,
            "source_identity": identity.to_json() if (identity := self.source_identity) else None,
            "settings": self.settings.record(),
            "ingest": self.ingest.to_json(),
            "ingest_reused": self.ingest_reused,
            "book": self.book.to_json(),
            "book_file": self.book_file,
            "book_sha256": self.book_sha256,
            "book_size": self.book_size,
            "top_moves": [move.to_json() for move in self.top_moves],
            "seconds": self.seconds,
            "finished_at": self.finished_at,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> MonthManifest:
        """Return the manifest a JSON object holds (older files included)."""
        return cls(
            chesspipe_version=str(data["chesspipe_version"]),
            month=str(data["month"]),
            variant=str(data["variant"]),
            status=str(data["status"]),
            source=str(data["source"]),
            source_resolved=str(data["source_resolved"]),
            source_kind=str(data["source_kind"]),
            source_identity=SourceIdentity.from_json(identity)
            if (identity := data["source_identity"]) is not None
            else None,
            settings=MonthSettings.from_record(data["settings"]),
            ingest=IngestManifest.from_json(data["ingest"]),
            ingest_reused=bool(data["ingest_reused"]),
            book=BookManifest.from_json(data["book"]),
            book_file=str(data["book_file"]),
            book_sha256=str(data["book_sha256"]),
            book_size=int(data["book_size"]),
            top_moves=tuple(TopMove.from_json(move) for move in data["top_moves"]),
            seconds=float(data["seconds"]),
            finished_at=str(data["finished_at"]),
        )

    def write(self, path: Path) -> None:
        """Write the manifest file atomically."""
        write_json_atomic(path, self.to_json())

    @classmethod
    def read(cls, path: Path) -> MonthManifest | None:
        """Return the manifest of a file, or None if it is missing or not one."""
        try:
            return cls.from_json(json.loads(Path(path).read_text()))
        except (OSError, ValueError, KeyError, TypeError):
            return None


def summary_markdown(manifest: MonthManifest) -> str:
    """Return a short Markdown report of a month's build."""
    ingest_manifest = manifest.ingest
    lines = [
        f"# Book lichess {manifest.month} ({manifest.status})",
        "",
        f"- source: `{manifest.source_resolved}`",
        f"- games read: {ingest_manifest.games_read:,}",
        f"- games kept: {ingest_manifest.games_kept:,}",
        f"- book: `{manifest.book_file}`, {manifest.book_size:,} bytes, "
        f"{manifest.book.entries:,} entries, {manifest.book.positions:,} positions",
        f"- sha256: `{manifest.book_sha256}`",
        "",
        "| move | weight | share |",
        "|---|---:|---:|",
    ]
    for move in manifest.top_moves:
        lines.append(f"| {move.san} ({move.move}) | {move.weight:,} | {move.share:.1%} |")
    if not manifest.top_moves:
        lines.append("| (no book moves at the start position) | | |")
    dropped = ingest_manifest.games_dropped
    if dropped:
        lines += ["", "Dropped games: " + ", ".join(f"{k} {v:,}" for k, v in dropped.items())]
    return "\n".join(lines) + "\n"
