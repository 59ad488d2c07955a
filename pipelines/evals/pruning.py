"""Which book moves lose, by the stored evaluations, and the rule that prunes them.

A book move's value is the evaluation of the position after it, from the mover's view (the
stored score there, from the side to move, negated). The position's reference is the best
value among its book moves, or the value of the engine's own best move there (the stored
position's `best`) when the store has the position after it and it is higher: values of
positions after a move, all alike, never a position's own score beside its children's (a
search of a position and searches of the positions after its moves at one node limit differ
by tens of centipawns). A move's loss is the reference minus its value. `max_loss`
prunes a move losing more than that many centipawns; `min_eval` one whose value is below it.
A move without an evaluation after it (or in a position no line of the book reaches) is kept,
and counted as unchecked.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

from pipelines.evals.positions import Walk, after_best_moves, best_move_child
from pipelines.evals.settings import PruneSettings
from pipelines.evals.store import Evaluation, read_evaluations


class MoveValue(NamedTuple):
    """A book move judged by the store: its value (mover's view) and the position's
    reference, in centipawns (mates on schemas.evals.MATE_SCORE's scale); None: unknown."""

    value: int | None
    reference: int | None

    @property
    def loss(self) -> int | None:
        if self.value is None or self.reference is None:
            return None
        return max(0, self.reference - self.value)


def _engine_best_value(walk: Walk, key: int, evaluations: Mapping[int, Evaluation]) -> int | None:
    """The value of the engine's own best move in a position (the stored evaluation after it,
    from the mover's view), where the store has the position and the one after that move."""
    child = best_move_child(walk, key, evaluations)
    after = evaluations.get(child[1]) if child is not None else None
    return -after.score if after is not None else None


def move_values(
    walk: Walk, moves: Mapping[int, Sequence[int]], evaluations: Mapping[int, Evaluation]
) -> dict[tuple[int, int], MoveValue]:
    """Judge every book move of `moves` (raw moves by key) by the stored `evaluations`."""
    judged: dict[tuple[int, int], MoveValue] = {}
    for key, raws in moves.items():
        values: dict[int, int | None] = {}
        for raw in raws:
            child = walk.child(key, raw)
            stored = evaluations.get(child) if child is not None else None
            values[raw] = -stored.score if stored is not None else None
        known = [v for v in values.values() if v is not None]
        engine_best = _engine_best_value(walk, key, evaluations)
        candidates = known + ([engine_best] if engine_best is not None else [])
        reference = max(candidates) if candidates else None
        for raw, value in values.items():
            judged[(key, raw)] = MoveValue(value, reference)
    return judged


class PruningCounts(NamedTuple):
    """Book moves with an evaluation (checked), of those the ones dropped (pruned), and the
    moves without one (unchecked, kept)."""

    checked: int
    pruned: int
    unchecked: int


class Pruning(NamedTuple):
    """The moves a rule drops, as (key, raw move) pairs, and the counts."""

    pruned: frozenset[tuple[int, int]]
    counts: PruningCounts


def prune(
    walk: Walk,
    moves: Mapping[int, Sequence[int]],
    evaluations: Mapping[int, Evaluation],
    settings: PruneSettings,
) -> Pruning:
    """Apply the rule to every book move of `moves`."""
    pruned = set()
    checked = unchecked = 0
    for pair, judged in move_values(walk, moves, evaluations).items():
        if judged.value is None:
            unchecked += 1
            continue
        checked += 1
        loss = judged.loss
        if (settings.max_loss is not None and loss is not None and loss > settings.max_loss) or (
            settings.min_eval is not None and judged.value < settings.min_eval
        ):
            pruned.add(pair)
    return Pruning(frozenset(pruned), PruningCounts(checked, len(pruned), unchecked))


def needed_keys(walk: Walk, moves: Mapping[int, Sequence[int]]) -> set[int]:
    """The positions whose evaluations judge the book's moves: each position the walk
    reached, and the position after each of its moves."""
    keys = {key for key in moves if key in walk.boards}
    keys.update(child for (_, _), (_, child) in walk.moves.items())
    return keys


def judging_evaluations(
    walk: Walk, moves: Mapping[int, Sequence[int]], evals: Path
) -> dict[int, Evaluation]:
    """The stored evaluations that judge a book's moves: the positions the walk reached, the
    positions after their book moves, and those after the engine's own best moves."""
    evaluations = read_evaluations(evals, needed_keys(walk, moves))
    after_best = set(after_best_moves(walk, moves, evaluations))
    if after_best - set(evaluations):
        evaluations.update(read_evaluations(evals, after_best - set(evaluations)))
    return evaluations
