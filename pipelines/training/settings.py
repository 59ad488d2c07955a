"""What a whole-game export keeps: the game filter, evals, and the position filters."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pipelines.errors import SettingError
from pipelines.games.game_filter import GameFilter

#: Position filters, in the order they are tried (a position counts under the first that drops it).
POSITION_FILTERS = ("before_from_ply", "pieces", "in_check", "capture_or_promotion", "no_score")


@dataclass(frozen=True)
class FromGamesSettings:
    """What a whole-game export keeps: the game filter, evals, and the position filters."""

    rules: GameFilter = field(default_factory=GameFilter)
    #: Keep only games with an eval after every move; otherwise positions without a score
    #: (no eval, not covered by the tables) are dropped.
    require_eval: bool = True
    skip_in_check: bool = False
    skip_captures: bool = False
    from_ply: int = 0
    min_pieces: int = 2
    max_pieces: int = 32

    def __post_init__(self) -> None:
        if self.rules.variant != "standard":
            says = "variant: training files from games take Standard chess only"
            raise SettingError("FromGamesSettings", "variant", says=says)
        if self.from_ply < 0:
            raise SettingError("FromGamesSettings", "from_ply", "must be 0 or more")
        if not 2 <= self.min_pieces <= self.max_pieces <= 32:
            says = "pieces: need 2 <= min_pieces <= max_pieces <= 32"
            raise SettingError("FromGamesSettings", "min_pieces", says=says)

    def to_json(self) -> dict[str, Any]:
        return {
            **self.rules.to_json(),
            "require_eval": self.require_eval,
            "skip_in_check": self.skip_in_check,
            "skip_captures": self.skip_captures,
            "from_ply": self.from_ply,
            "min_pieces": self.min_pieces,
            "max_pieces": self.max_pieces,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> FromGamesSettings:
        rules = GameFilter.from_json(data)
        keys = (
            "require_eval",
            "skip_in_check",
            "skip_captures",
            "from_ply",
            "min_pieces",
            "max_pieces",
        )
        return cls(rules, **{key: data[key] for key in keys})
