"""A whole-game export's run manifest, written beside the training file as OUT.json."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pipelines.training.settings import FromGamesSettings


@dataclass
class FromGamesManifest:
    """A whole-game export's run, as written to OUT.json."""

    chesspipe_version: str
    month: str
    source: str
    output: str
    lineage: str
    settings: FromGamesSettings
    tables: list[str]
    games_read: int = 0
    games_kept: int = 0
    #: Games not exported, by reason (the filter's, no_moves, illegal_move, bad_eval,
    #: missing_eval); reasons sorted.
    games_skipped: dict[str, int] = field(default_factory=dict)
    #: Kept games with at least one record.
    games_exported: int = 0
    #: Kept games reaching a position the tables cover.
    games_reaching_tables: int = 0
    #: Games whose first covered position's outcome differs from the PGN result, by direction
    #: from White's view (win_to_draw, loss_to_draw, draw_to_win, ...).
    results_changed: dict[str, int] = field(default_factory=dict)
    positions: int = 0
    #: Positions left out, by the first filter that dropped them.
    positions_skipped: dict[str, int] = field(default_factory=dict)
    #: Records written.
    records: int = 0
    #: Records the loader's skips dropped, by the first of skips.SKIP_REASONS that applied
    #: (as `training filter` counts them); reasons that dropped none left out.
    records_skipped: dict[str, int] = field(default_factory=dict)
    records_result_changed: int = 0
    records_tablebase_scored: int = 0
    output_sha256: str = ""
    seconds: float = 0.0
    finished_at: str = ""
    #: Worker processes that exported units of frames (1: read in order here).
    workers: int = 1

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["settings"] = self.settings.to_json()
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> FromGamesManifest:
        values = dict(data)
        values["settings"] = FromGamesSettings.from_json(data["settings"])
        return cls(**values)


def manifest_path_for(output: Path) -> Path:
    """Return the run manifest's path for a training file: OUT.json."""
    return output.with_name(output.name + ".json")


def read_manifest(path: Path) -> FromGamesManifest:
    """Return the manifest written beside a training file."""
    return FromGamesManifest.from_json(json.loads(Path(path).read_text()))
