"""`suite check`: what a suite holds (openings, plies, sides, duplicates, unusable lines) and
how its evaluations and draw rates are spread, the bias for White included."""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import chess

from pipelines.suites.files import SuitePosition, SuiteProblem, read_suite, suite_format
from schemas.polyglot import polyglot_key

#: Problems listed by their place in the file (the rest are counted).
PROBLEMS_SHOWN = 10


@dataclass(frozen=True)
class Spread:
    """How values are spread: how many, their mean, and quantiles (min, 10%, median, 90%,
    max)."""

    count: int
    mean: float | None
    quantiles: tuple[float, ...]

    @classmethod
    def of(cls, values: list[float]) -> Spread:
        if not values:
            return cls(0, None, ())
        ordered = sorted(values)

        def at(share: float) -> float:
            return ordered[min(len(ordered) - 1, int(share * len(ordered)))]

        points = (ordered[0], at(0.1), at(0.5), at(0.9), ordered[-1])
        return cls(len(values), round(statistics.fmean(values), 3), points)

    def to_json(self) -> dict[str, Any]:
        return {"count": self.count, "mean": self.mean, "quantiles": list(self.quantiles)}


@dataclass(frozen=True)
class SuiteReport:
    """What a suite holds.

    `openings`: usable positions (duplicates included); `plies`: how many openings at each
    ply (from the line where the suite gives one, else from the move number); `white_to_move`;
    `duplicates`: openings whose position (the FEN's four fields) came before; `problems` by
    reason, and the first few; `evaluations` (centipawns from the side to move), `bias` (the
    same from White's view: what a pair of games played from each side cancels) and
    `draw_rates` (the engine's WDL), from the suite's opcodes or the store given.
    """

    path: str
    format: str
    openings: int
    plies: dict[int, int]
    white_to_move: int
    duplicates: int
    problems: dict[str, int]
    first_problems: tuple[SuiteProblem, ...]
    evaluations: Spread
    bias: Spread
    draw_rates: Spread
    evaluated_from: str = field(default="suite")

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "format": self.format,
            "openings": self.openings,
            "unique": self.openings - self.duplicates,
            "duplicates": self.duplicates,
            "white_to_move": self.white_to_move,
            "black_to_move": self.openings - self.white_to_move,
            "plies": {str(ply): n for ply, n in sorted(self.plies.items())},
            "problems": dict(sorted(self.problems.items())),
            "first_problems": [p._asdict() for p in self.first_problems],
            "evaluated_from": self.evaluated_from,
            "evaluations": self.evaluations.to_json(),
            "bias": self.bias.to_json(),
            "draw_rates": self.draw_rates.to_json(),
        }

    def table(self) -> str:
        """The report as a few aligned lines for people."""
        rows = [
            ("suite", f"{self.path} ({self.format})"),
            ("openings", f"{self.openings:,} ({self.openings - self.duplicates:,} unique)"),
            (
                "side to move",
                f"White {self.white_to_move:,}, Black {self.openings - self.white_to_move:,}",
            ),
            ("plies", ", ".join(f"{p}: {n:,}" for p, n in sorted(self.plies.items())) or "-"),
            (
                "problems",
                ", ".join(f"{r} {n:,}" for r, n in sorted(self.problems.items())) or "none",
            ),
        ]
        for name, spread in (
            (f"evaluation ({self.evaluated_from})", self.evaluations),
            ("bias for White", self.bias),
            ("draw rate", self.draw_rates),
        ):
            if spread.count:
                points = " / ".join(f"{q:g}" for q in spread.quantiles)
                rows.append((name, f"{spread.count:,}, mean {spread.mean:g}; {points}"))
            else:
                rows.append((name, "none"))
        width = max(len(name) for name, _ in rows)
        lines = [f"{name:<{width}}  {value}" for name, value in rows]
        lines += [f"  line {p.number}: {p.reason}: {p.text}" for p in self.first_problems]
        return "\n".join(lines)


def check_suite(path: Path, *, evals: Path | None = None) -> SuiteReport:
    """Read a suite whole and report on it; `evals`, a warehouse whose store gives the
    evaluations (else the suite's own `ce` and `c2 "wdl ..."` opcodes)."""
    kind = suite_format(path)
    positions: list[SuitePosition] = []
    problems: Counter[str] = Counter()
    first: list[SuiteProblem] = []
    seen: set[str] = set()
    duplicates = 0
    for found in read_suite(path):
        if isinstance(found, SuiteProblem):
            problems[found.reason] += 1
            if len(first) < PROBLEMS_SHOWN:
                first.append(found)
            continue
        if found.position in seen:
            duplicates += 1
        seen.add(found.position)
        positions.append(found)
    scores: list[tuple[bool, float]] = []
    rates: list[float] = []
    if evals is not None:
        from pipelines.evals.store import read_evaluations

        keys = [polyglot_key(p.board) for p in positions]
        stored = read_evaluations(evals, keys)
        for position, key in zip(positions, keys, strict=True):
            evaluation = stored.get(key)
            if evaluation is None:
                continue
            scores.append((position.board.turn == chess.WHITE, float(evaluation.score)))
            if evaluation.wdl is not None:
                rates.append(evaluation.wdl[1] / 1000)
    else:
        for position in positions:
            if position.cp is not None:
                scores.append((position.board.turn == chess.WHITE, float(position.cp)))
            if position.wdl is not None:
                rates.append(position.wdl[1] / 1000)
    return SuiteReport(
        path=str(path),
        format=kind,
        openings=len(positions),
        plies=dict(Counter(p.ply for p in positions)),
        white_to_move=sum(p.board.turn == chess.WHITE for p in positions),
        duplicates=duplicates,
        problems=dict(problems),
        first_problems=tuple(first),
        evaluations=Spread.of([score for _, score in scores]),
        bias=Spread.of([score if white else -score for white, score in scores]),
        draw_rates=Spread.of(rates),
        evaluated_from="suite" if evals is None else "store",
    )
