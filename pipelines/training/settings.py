"""What a whole-game export keeps: the game filter, evals, the position filters and the skips."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pipelines.errors import SettingError
from pipelines.games.game_filter import GameFilter
from pipelines.training.skip_settings import SkipSettings

#: Position filters, in the order they are tried (a position counts under the first that drops it).
POSITION_FILTERS = ("before_from_ply", "in_check", "capture_or_promotion", "no_score")

_OWN = ("require_eval", "skip_in_check", "skip_captures", "from_ply")


@dataclass(frozen=True)
class FromGamesSettings:
    """What a whole-game export keeps: the game filter, evals, the position filters, and the
    skips of nnue-pytorch's loader asked of the records made (as `training filter` asks them)."""

    rules: GameFilter = field(default_factory=GameFilter)
    #: Keep only games with an eval after every move; otherwise positions without a score
    #: (no eval, not covered by the tables) are dropped.
    require_eval: bool = True
    skip_in_check: bool = False
    skip_captures: bool = False
    from_ply: int = 0
    #: Asked of every record in output order, after the position filters.
    skips: SkipSettings = field(default_factory=SkipSettings)

    def __post_init__(self) -> None:
        if self.rules.variant != "standard":
            says = "variant: training files from games take Standard chess only"
            raise SettingError("FromGamesSettings", "variant", says=says)
        if self.from_ply < 0:
            raise SettingError("FromGamesSettings", "from_ply", "must be 0 or more")

    def to_json(self) -> dict[str, Any]:
        return {
            **self.rules.to_json(),
            **{key: getattr(self, key) for key in _OWN},
            "skips": self.skips.to_json(),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> FromGamesSettings:
        rules = GameFilter.from_json(data)
        if "skips" in data:
            skips = SkipSettings.from_json(data["skips"])
        else:  # written before the skips: a piece range of its own
            skips = SkipSettings(min_pieces=data["min_pieces"], max_pieces=data["max_pieces"])
        return cls(rules, **{key: data[key] for key in _OWN}, skips=skips)
