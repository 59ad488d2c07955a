"""What an ingest counts: the games it keeps and the plies of each; the defaults live here."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pipelines.errors import SettingError
from pipelines.games.game_filter import GameFilter


@dataclass(frozen=True)
class IngestSettings:
    """The settings a month's move statistics depend on: the game filter, plies counted and
    whether duplicate games are dropped."""

    rules: GameFilter = field(default_factory=GameFilter)
    #: Plies counted from the start of each kept game.
    plies: int = 20
    #: Drop a game whose main line repeats one kept before (pipelines.games.dedupe), counted
    #: as "duplicate"; the source is then read by this process alone, in order.
    dedupe: bool = False

    def __post_init__(self) -> None:
        if self.plies < 1:
            raise SettingError("IngestSettings", "plies", "must be at least 1")

    def to_json(self) -> dict[str, Any]:
        """Return the settings as plain JSON values, as the run manifest records them (dedupe
        only when on: the settings of other runs read as they always did)."""
        dedupe = {"dedupe": True} if self.dedupe else {}
        return {**self.rules.to_json(), "plies": self.plies, **dedupe}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> IngestSettings:
        """Return the settings a run manifest records (to_json's output)."""
        return cls(GameFilter.from_json(data), data["plies"], data.get("dedupe", False))


#: The modules a worker process imports before it counts (pipelines.games.workers preloads them).
WORKER_MODULES = ("pyarrow.parquet", "pipelines.ingest.counting", "pipelines.ingest.runs")
