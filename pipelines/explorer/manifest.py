"""The explorer index's manifest: what a month's explorer data was made from, and how."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class ExplorerManifest:
    """A month's explorer index run, as written to DIR/explorer/month=YYYY-MM.json."""

    chesspipe_version: str
    month: str
    source: str
    #: ExplorerSettings.to_json(): the filter and the plies indexed (None: every ply).
    settings: dict[str, Any]
    games_read: int
    games_kept: int
    games_dropped: dict[str, int]
    #: Positions once per game indexed (rows of positions.parquet, and of the lookup's table).
    positions: int
    #: The source ended inside a game (its last game is left out).
    ends_inside_game: bool
    games_bytes: int
    #: positions.parquet's size (0: not published, see positions_published).
    positions_bytes: int
    seconds: float
    #: The files' sha256 (None in manifests written before they were recorded).
    games_sha256: str | None = None
    positions_sha256: str | None = None
    #: The source's content as the caller identified it (the monthly build: a file's sha256 or
    #: a URL's published one; None when not given).
    source_sha256: str | None = None
    #: The lookup, counts and records files' sizes and sha256 (pipelines.explorer.lookup,
    #: .records).
    lookup_bytes: int | None = None
    lookup_sha256: str | None = None
    counts_bytes: int | None = None
    counts_sha256: str | None = None
    records_bytes: int | None = None
    records_sha256: str | None = None
    #: Whether positions.parquet is published (months whose moves are kept, for `/masters`;
    #: a 50-ply month's positions live in its lookup file only). Earlier manifests: always.
    positions_published: bool = True

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ExplorerManifest:
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in data.items() if k in known})

    @classmethod
    def read(cls, path: Path) -> ExplorerManifest:
        return cls.from_json(json.loads(Path(path).read_text()))
