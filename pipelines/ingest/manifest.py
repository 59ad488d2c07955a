"""The run manifest of an ingest: what a month's move statistics were made from, and how."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from pipelines.files import write_json_atomic
from pipelines.ingest.settings import IngestSettings
from pipelines.warehouse.layout import manifest_path


@dataclass(frozen=True)
class TreeCounts:
    """Plies found in the opening tree (hits) and replayed on a board (misses)."""

    hits: int = 0
    misses: int = 0


@dataclass(frozen=True)
class Timings:
    """Seconds from the start of a run to the end of the scan, and to the end of the run."""

    scan_seconds: float
    total_seconds: float


@dataclass(frozen=True)
class IngestManifest:
    """A month's ingest run, as written to DIR/move_stats/month=YYYY-MM.json."""

    chesspipe_version: str
    month: str
    source: str
    source_resolved: str
    source_kind: str
    source_size: int | None
    source_bytes_read: int
    #: None when the source was read by byte ranges, never whole.
    source_sha256: str | None
    source_sha256_verified: bool
    settings: IngestSettings
    games_read: int
    games_kept: int
    #: Dropped games by reason, reasons sorted.
    games_dropped: dict[str, int]
    pgn_bytes: int
    rows: int
    partial: bool
    error: str | None
    #: The partition file, relative to the warehouse.
    output: str
    output_sha256: str
    opening_tree: TreeCounts
    #: Worker processes that scanned, or "executor" when an executor did.
    workers: int | str
    timings: Timings
    finished_at: str
    #: Bytes of text skipped as malformed or oversized games (in the file when not 0).
    unreadable_bytes: int = 0
    #: What the run noticed and published anyway, one line each, such as mostly unreadable text
    #: (in the file when there are any).
    warnings: list[str] = field(default_factory=list)
    #: The month holds the games of the source whose Date tag puts them in it, not all of its
    #: games (ingest by date: pipelines.ingest.by_date; in the file when true).
    dated: bool = False
    #: The partition's size in bytes and its modification time (ns) as published: readers
    #: compare them with the file's on every open (pipelines.warehouse.integrity); None in
    #: manifests written before they were recorded.
    output_size: int | None = None
    output_mtime_ns: int | None = None

    def to_json(self) -> dict[str, Any]:
        """Return the manifest as plain JSON values, in the file's order."""
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["settings"] = self.settings.to_json()
        data["games_dropped"] = dict(self.games_dropped)
        # Written only when there is something to say: other manifests keep their fields.
        if self.warnings:
            data["warnings"] = list(self.warnings)
        else:
            del data["warnings"]
        if not self.unreadable_bytes:
            del data["unreadable_bytes"]
        if not self.dated:
            del data["dated"]
        for recorded in ("output_size", "output_mtime_ns"):
            if data[recorded] is None:
                del data[recorded]
        data["opening_tree"] = asdict(self.opening_tree)
        data["timings"] = asdict(self.timings)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> IngestManifest:
        """Return the manifest JSON values describe (those of to_json, or of older files)."""
        values = {f.name: data[f.name] for f in fields(cls) if f.name in data}
        values["settings"] = IngestSettings.from_json(data["settings"])
        values["opening_tree"] = TreeCounts(**data["opening_tree"])
        values["timings"] = Timings(**data["timings"])
        # Recorded since checksum verification and parallel reads came.
        values.setdefault("source_sha256_verified", False)
        values.setdefault("workers", 1)
        return cls(**values)

    def write(self, warehouse: Path) -> None:
        """Write the manifest beside its month's partition, atomically."""
        write_json_atomic(manifest_path(warehouse, self.month), self.to_json())


def read_manifest(warehouse: Path, month: str) -> IngestManifest | None:
    """Return a month's ingest manifest, or None if the month was never ingested."""
    path = manifest_path(warehouse, month)
    if not path.exists():
        return None
    return IngestManifest.from_json(json.loads(path.read_text()))
