"""What the explorer's index keeps: the game filter and how deep games are indexed."""

from __future__ import annotations

from dataclasses import dataclass, field

from pipelines.errors import SettingError
from pipelines.games.game_filter import GameFilter

#: Plies of each game the explorer indexes by default: lila-openingexplorer's `MAX_PLIES`
#: (src/indexer/lichess.rs).
EXPLORER_PLIES = 50


@dataclass(frozen=True)
class ExplorerSettings:
    """The games indexed (`rules`, the filter ingest uses) and the plies of each: a number,
    or None for every ply (collections served as /masters, as lila's masters database indexes
    whole games; their moves are then kept too, for their PGN). `games`: each game's whole
    line is kept too, packed, for the position search (`chesspipe search`); off (`--no-games`),
    the games' records only."""

    rules: GameFilter = field(default_factory=GameFilter)
    plies: int | None = EXPLORER_PLIES
    games: bool = True

    def __post_init__(self) -> None:
        if self.plies is not None and self.plies < 1:
            reason = f"must be at least 1 (or None: every ply), not {self.plies}"
            raise SettingError("ExplorerSettings", "plies", reason)

    @property
    def keeps_moves(self) -> bool:
        """Whether the games' moves are kept (whole games indexed)."""
        return self.plies is None

    def reads_kept_games(self, rules: GameFilter, plies: int | None, dedupe: bool) -> bool:
        """Whether the games an ingest with this filter, counting `plies` (None: every ply)
        and deduplicating or not, kept are this index's: the same filter, no game left out as a
        duplicate, and no ply counted past this index's (a game illegal there is dropped by
        both). Then the index reads ingest's kept games instead of the source again."""
        deep_enough = plies is not None and (self.plies is None or plies <= self.plies)
        return rules == self.rules and not dedupe and deep_enough

    def to_json(self) -> dict[str, object]:
        found: dict[str, object] = {"rules": self.rules.to_json(), "plies": self.plies}
        if not self.games:  # (recorded when off: months indexed before it kept no moves)
            found["games"] = False
        return found
