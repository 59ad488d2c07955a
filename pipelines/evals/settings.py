"""The settings of the evaluation room, their defaults and their checks: how positions are
analysed, how the Lichess dump is read, how books are pruned and checked. Light to import: the
command line reads the defaults here."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pipelines.errors import SettingError
from schemas.evals import MOST_LINES

if TYPE_CHECKING:
    import chess.engine

    from pipelines.evals.store import Evaluation

#: The limit when none is given: nodes per position.
DEFAULT_NODES = 100_000


#: How deep a book is walked and played by default, in plies (books count 20 plies by
#: default; a repetition cannot lead a walk on forever).
WALK_PLIES = 60


@dataclass(frozen=True)
class AnalysisSettings:
    """How positions are analysed: one limit (nodes, depth or movetime in milliseconds; nodes
    DEFAULT_NODES when none is given), the principal variations asked for (`multipv`: one, or
    several kept as the row's `lines`), workers (one engine each), positions per saved batch,
    the engine's hash, and how long an engine may stay silent before it is called hung.
    Engines that have `UCI_ShowWDL` give their win/draw/loss model, stored as `wdl`; with
    `wdl`, an engine must, and a position stored without one is analysed again."""

    nodes: int | None = None
    depth: int | None = None
    movetime: int | None = None
    multipv: int = 1
    wdl: bool = False
    workers: int = 1
    batch: int = 200
    hash_mb: int = 16
    #: Seconds a search may take beyond its movetime before the engine is called hung.
    timeout: float = 60.0
    #: Seconds an engine has to answer `uci` with `uciok` when it starts.
    start_timeout: float = 10.0
    #: Positions in a row that fail twice before the run stops (the engine cannot analyse).
    give_up_after: int = 3

    def __post_init__(self) -> None:
        given = [name for name in ("nodes", "depth", "movetime") if getattr(self, name) is not None]
        if len(given) > 1:
            says = "give one of {nodes}, {depth} and {movetime}"
            raise SettingError("AnalysisSettings", "nodes", says=says, also=("depth", "movetime"))
        for name in ("nodes", "depth", "movetime", "workers", "batch", "hash_mb"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise SettingError("AnalysisSettings", name, "must be at least 1")
        if self.depth is not None and self.depth > 245:
            raise SettingError("AnalysisSettings", "depth", "must be at most 245")
        if not 1 <= self.multipv <= MOST_LINES:
            raise SettingError("AnalysisSettings", "multipv", f"must be 1 to {MOST_LINES}")
        if not (self.timeout > 0 and self.start_timeout > 0 and self.give_up_after >= 1):
            says = "{timeout} and {start_timeout} must be above 0"
            raise SettingError("AnalysisSettings", "timeout", says=says, also=("start_timeout",))

    @property
    def kind(self) -> str:
        """Which limit: nodes, depth or movetime."""
        if self.depth is not None:
            return "depth"
        return "movetime" if self.movetime is not None else "nodes"

    @property
    def amount(self) -> int:
        """The limit's value (nodes, plies or milliseconds)."""
        value = {"nodes": self.nodes, "depth": self.depth, "movetime": self.movetime}[self.kind]
        return DEFAULT_NODES if value is None else value

    def limit_text(self) -> str:
        """The limit as the store records it: `nodes 100000`, `depth 12`, `movetime 100`."""
        return f"{self.kind} {self.amount}"

    def engine_limit(self) -> chess.engine.Limit:
        """The limit as python-chess gives it to the engine."""
        import chess.engine

        if self.kind == "depth":
            return chess.engine.Limit(depth=self.amount)
        if self.kind == "movetime":
            return chess.engine.Limit(time=self.amount / 1000)
        return chess.engine.Limit(nodes=self.amount)

    def satisfied_by(self, evaluation: Evaluation, *, legal_moves: int | None = None) -> bool:
        """Whether a stored evaluation is at this limit or deeper (then it is not analysed
        again): the rules' always; at a node limit one that searched as many nodes; at a depth
        limit one as deep; at a movetime one asked as long or longer. Asking for several lines,
        it must also have as many (or every legal move's, of a position with `legal_moves`)."""
        if evaluation.source == "rules":
            return True
        if self.wdl and evaluation.wdl is None:
            return False
        if self.multipv > 1:
            wanted = min(self.multipv, legal_moves or self.multipv)
            if wanted > 1 and len(evaluation.lines or ()) < wanted:
                return False
        asked_kind, _, asked = (evaluation.limit or "").partition(" ")
        if asked_kind == self.kind and asked.isdigit() and int(asked) >= self.amount:
            return True
        if self.kind == "nodes":
            return evaluation.nodes is not None and evaluation.nodes >= self.amount
        if self.kind == "depth":
            return evaluation.depth is not None and evaluation.depth >= self.amount
        return False

    def record(self) -> dict[str, Any]:
        record: dict[str, Any] = {"limit": self.limit_text(), "workers": self.workers}
        if self.multipv > 1:
            record["multipv"] = self.multipv
        if self.wdl:
            record["wdl"] = True
        return {**record, "batch": self.batch}


@dataclass(frozen=True)
class ImportSettings:
    """How a dump is read: whose view its scores are from, positions per part of the store."""

    point_of_view: Literal["white", "side-to-move"] = "white"
    batch: int = 200_000

    def __post_init__(self) -> None:
        if self.point_of_view not in ("white", "side-to-move"):
            raise SettingError("ImportSettings", "point_of_view", "must be white or side-to-move")
        if self.batch < 1:
            raise SettingError("ImportSettings", "batch", "must be at least 1")


@dataclass(frozen=True)
class PruneSettings:
    """The pruning rule's settings: the most a move may lose, the least it may leave."""

    max_loss: int | None = None
    min_eval: int | None = None

    def __post_init__(self) -> None:
        if self.max_loss is None and self.min_eval is None:
            says = "pruning by evaluation needs {max_loss} or {min_eval}"
            raise SettingError("PruneSettings", "max_loss", says=says, also=("min_eval",))
        if self.max_loss is not None and self.max_loss < 0:
            raise SettingError("PruneSettings", "max_loss", "must be at least 0")

    def record(self) -> dict[str, Any]:
        return {"max_loss": self.max_loss, "min_eval": self.min_eval}


@dataclass(frozen=True)
class CheckSettings:
    """Which moves a check lists: reached with at least `min_probability`; `losing`: the loss
    above which a move is listed as losing (centipawns); `plies`: how deep the book is played."""

    min_probability: float = 0.001
    losing: int = 100
    plies: int = WALK_PLIES

    def __post_init__(self) -> None:
        if not 0.0 < self.min_probability <= 1.0:
            raise SettingError("CheckSettings", "min_probability", "must be above 0, at most 1")
        if self.losing < 0:
            raise SettingError("CheckSettings", "losing", "must be at least 0")
        if self.plies < 1:
            raise SettingError("CheckSettings", "plies", "must be at least 1")
