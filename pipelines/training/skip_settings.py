"""The settings of the loader's skips (`skips.py`): one frozen dataclass owning the defaults.

Free of python-chess, so the command line's parser can read its defaults.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from pipelines.errors import SettingError
from schemas.plain import SCORE_MAX, SCORE_MIN


@dataclass(frozen=True)
class SkipSettings:
    """The skips, named as nnue-pytorch's loader names them, and chesspipe's ranges."""

    #: Skip positions in check and positions whose move captures (the loader's definition).
    filtered: bool = False
    #: Skip at random by how unlikely the result is given the score (the loader's model).
    wld_filtered: bool = False
    #: Skip each position with probability N / (N + 1); 0 skips none.
    random_fen_skipping: int = 0
    #: Skip plies 0..N; -1 skips none.
    early_fen_skipping: int = -1
    #: Skip positions whose material balance is below N in size; 0 or less skips none.
    simple_eval_skipping: int = -1
    #: Keep scores from min_score to max_score (side to move; VALUE_NONE is skipped first).
    min_score: int = SCORE_MIN
    max_score: int = SCORE_MAX
    #: Keep positions with min_pieces..max_pieces on the board, kings included.
    min_pieces: int = 2
    max_pieces: int = 32
    #: Seed of the random skips' draws.
    seed: int = 0

    def __post_init__(self) -> None:
        if self.random_fen_skipping < 0:
            raise SettingError("SkipSettings", "random_fen_skipping", "must be 0 or more")
        if self.early_fen_skipping < -1:
            raise SettingError("SkipSettings", "early_fen_skipping", "must be -1 or more")
        if not SCORE_MIN <= self.min_score <= self.max_score <= SCORE_MAX:
            says = f"scores: need {SCORE_MIN} <= {{min_score}} <= {{max_score}} <= {SCORE_MAX}"
            raise SettingError("SkipSettings", "min_score", says=says, also=("max_score",))
        if not 2 <= self.min_pieces <= self.max_pieces <= 32:
            says = "pieces: need 2 <= {min_pieces} <= {max_pieces} <= 32"
            raise SettingError("SkipSettings", "min_pieces", says=says, also=("max_pieces",))

    @property
    def skips_any(self) -> bool:
        """Whether any skip is set (the seed alone sets none). `training filter` asks the
        loader's first two questions (VALUE_NONE, placeholder zeros) always; a producer of
        records (from-games) asks them only with a skip set, as the loader asks them only
        when it skips at all."""
        return (
            self.filtered
            or self.wld_filtered
            or self.random_fen_skipping > 0
            or self.early_fen_skipping >= 0
            or self.simple_eval_skipping > 0
            or (self.min_score, self.max_score) != (SCORE_MIN, SCORE_MAX)
            or (self.min_pieces, self.max_pieces) != (2, 32)
        )

    @property
    def needs_board(self) -> bool:
        """Whether a question needs the position itself (not only score, ply and result)."""
        return (
            self.filtered
            or self.simple_eval_skipping > 0
            or (self.min_pieces, self.max_pieces) != (2, 32)
        )

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SkipSettings:
        return cls(**data)
