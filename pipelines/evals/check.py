"""A book's quality by the stored evaluations (`chesspipe book check`).

The book is played as an engine plays it, both sides drawing their moves at random in
proportion to the weights, from the start position: each book move is reached with a
probability (a transposition adds the probabilities of its lines). Of the moves reached with at
least `min_probability`, each has its loss (pipelines.evals.pruning: the best value among the
position's book moves, or the engine's own best move's, minus its own); the check gives the
probability-weighted mean loss, the moves losing more than `losing` centipawns, and the
evaluation where the book ends (the first position without a book move), from White's view.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import chess

from pipelines.evals.positions import book_moves, walk
from pipelines.evals.pruning import judging_evaluations, move_values
from pipelines.evals.settings import CheckSettings
from pipelines.evals.store import Evaluation
from schemas.polyglot import Book, polyglot_key


class CheckedMove(NamedTuple):
    """A book move reached with `probability`: the line to its position (SAN), the move, its
    value (mover's view) and loss in centipawns (None: no evaluation after it)."""

    line: str
    san: str
    probability: float
    value: int | None
    loss: int | None


#: Where the book ends, by the evaluation there from White's view: bucket bounds (cp).
END_BOUNDS = (-100, -50, -20, 20, 50, 100)


def end_bucket(score: int) -> str:
    """The bucket of an evaluation where the book ends (White's view): `< -100`, `-100..-50`,
    ..., `> 100`; the middle one is `-20..20`."""
    if score < END_BOUNDS[0]:
        return f"< {END_BOUNDS[0]}"
    for low, high in zip(END_BOUNDS, END_BOUNDS[1:], strict=False):
        if score <= high:
            return f"{low}..{high}"
    return f"> {END_BOUNDS[-1]}"


def end_buckets() -> list[str]:
    """Every bucket's name, lowest first."""
    return [f"< {END_BOUNDS[0]}"] + [
        f"{low}..{high}" for low, high in zip(END_BOUNDS, END_BOUNDS[1:], strict=False)
    ] + [f"> {END_BOUNDS[-1]}"]  # fmt: skip


@dataclass(frozen=True)
class BookCheck:
    """A book's check: the moves reached (with at least the settings' probability), their
    probability-weighted mean loss over those with an evaluation, the share of that
    probability they carry, the losing moves, and where the book ends (probabilities by
    bucket of the evaluation there from White's view, `unknown` without one; the mean)."""

    book: str
    evals: str
    settings: CheckSettings
    moves: tuple[CheckedMove, ...]
    mean_loss: float | None
    checked_share: float
    ends: dict[str, float]
    end_mean: float | None

    @property
    def losing(self) -> list[CheckedMove]:
        return [m for m in self.moves if m.loss is not None and m.loss > self.settings.losing]

    def to_json(self) -> dict[str, Any]:
        return {
            "book": self.book,
            "evals": self.evals,
            "min_probability": self.settings.min_probability,
            "losing_above": self.settings.losing,
            "reachable_moves": len(self.moves),
            "checked_moves": sum(m.loss is not None for m in self.moves),
            "checked_share": round(self.checked_share, 6),
            "mean_loss": None if self.mean_loss is None else round(self.mean_loss, 2),
            "losing_moves": [_move_json(m) for m in self.losing],
            "ends": {name: round(p, 6) for name, p in self.ends.items()},
            "end_mean": None if self.end_mean is None else round(self.end_mean, 1),
            "moves": [_move_json(m) for m in self.moves],
        }

    def table(self) -> str:
        """The check as text: a summary, the losing moves, the ends."""
        checked = sum(m.loss is not None for m in self.moves)
        mean = "n/a" if self.mean_loss is None else f"{self.mean_loss:.1f} cp"
        lines = [
            f"book            {self.book}",
            f"evaluations     {self.evals}",
            f"reachable moves {len(self.moves):,} "
            f"(probability >= {self.settings.min_probability:g}), {checked:,} with an "
            f"evaluation ({self.checked_share:.1%} of their probability)",
            f"mean loss       {mean} (weighted by probability)",
            f"losing > {self.settings.losing} cp  {len(self.losing):,}",
        ]
        for move in self.losing:
            where = move.line or "start"
            lines.append(
                f"  {move.probability:7.2%}  {where}: {move.san}  loses {move.loss} cp "
                f"(leaves {move.value:+d})"
            )
        end = "n/a" if self.end_mean is None else f"{self.end_mean:+.1f} cp"
        lines.append(f"book ends at    mean {end} (White's view), by probability:")
        for name, probability in self.ends.items():
            lines.append(f"  {name:>10}  {probability:7.2%}")
        return "\n".join(lines)


def _numbered(board: chess.Board, move: chess.Move, line: str) -> str:
    """A move in SAN with its number where a line shows one (`3. Nf3`, `1... e5` first)."""
    if board.turn == chess.WHITE:
        return f"{board.fullmove_number}. {board.san(move)}"
    return f"{board.fullmove_number}... {board.san(move)}" if not line else board.san(move)


def _move_json(move: CheckedMove) -> dict[str, Any]:
    return {
        "line": move.line,
        "move": move.san,
        "probability": round(move.probability, 6),
        "value": move.value,
        "loss": move.loss,
    }


def check_book(
    book: Book,
    evals: Path,
    settings: CheckSettings | None = None,
    *,
    evaluations: Mapping[int, Evaluation] | None = None,
) -> BookCheck:
    """Check a book against the evaluation store of the warehouse `evals` (or against
    `evaluations` by key, when given)."""
    settings = settings or CheckSettings()
    moves = book_moves(book)
    reached = walk(moves, plies=settings.plies)
    if evaluations is None:
        evaluations = judging_evaluations(reached, moves, Path(evals))
    judged = move_values(reached, moves, evaluations)
    weights: dict[tuple[int, int], int] = {}
    for entry in book.entries:
        pair = (int(entry["key"]), int(entry["move"]))
        if int(entry["weight"]) > 0 and pair in reached.moves:
            weights.setdefault(pair, int(entry["weight"]))
    by_key: dict[int, list[tuple[int, int]]] = {}
    for (key, raw), weight in weights.items():
        by_key.setdefault(key, []).append((raw, weight))

    start_key = polyglot_key(chess.Board())
    lines: dict[int, str] = {start_key: ""}
    frontier = {start_key: 1.0}
    reach: dict[tuple[int, int], float] = {}
    ends: dict[int, float] = {}
    for _ in range(settings.plies):
        following: dict[int, float] = {}
        for key, probability in frontier.items():
            choices = by_key.get(key)
            if not choices:
                ends[key] = ends.get(key, 0.0) + probability
                continue
            total = sum(weight for _, weight in choices)
            board = reached.boards[key]
            for raw, weight in choices:
                share = probability * weight / total
                reach[(key, raw)] = reach.get((key, raw), 0.0) + share
                move, child = reached.moves[(key, raw)]
                following[child] = following.get(child, 0.0) + share
                if child not in lines:
                    lines[child] = f"{lines[key]} {_numbered(board, move, lines[key])}".strip()
        frontier = following
        if not frontier:
            break

    listed: list[CheckedMove] = []
    for (key, raw), probability in reach.items():
        if probability < settings.min_probability:
            continue
        move, _ = reached.moves[(key, raw)]
        value = judged[(key, raw)]
        listed.append(
            CheckedMove(lines[key], reached.boards[key].san(move), probability, value.value,
                        value.loss)
        )  # fmt: skip
    listed.sort(key=lambda m: (-m.probability, m.line, m.san))
    with_loss = [m for m in listed if m.loss is not None]
    mass = sum(m.probability for m in listed)
    checked_mass = sum(m.probability for m in with_loss)
    mean_loss = (
        sum(m.probability * (m.loss or 0) for m in with_loss) / checked_mass
        if checked_mass
        else None
    )
    buckets = dict.fromkeys([*end_buckets(), "unknown"], 0.0)
    scored = weighted = 0.0
    for key, probability in ends.items():
        stored = evaluations.get(key)
        if stored is None:
            buckets["unknown"] += probability
            continue
        white = stored.score if reached.boards[key].turn == chess.WHITE else -stored.score
        buckets[end_bucket(white)] += probability
        scored += probability * white
        weighted += probability
    return BookCheck(
        book=book.name,
        evals=str(evals),
        settings=settings,
        moves=tuple(listed),
        mean_loss=mean_loss,
        checked_share=checked_mass / mass if mass else 0.0,
        ends=buckets,
        end_mean=scored / weighted if weighted else None,
    )
