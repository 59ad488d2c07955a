"""What a training file holds: results, material, scores, checks, captures, plies."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import chess

from pipelines.progress import ReadCallback
from pipelines.training.files import read_training
from schemas.plain import SCORE_NONE, PlainRecord

#: |score| from here up is a mate or tablebase score (Stockfish's VALUE_TB_WIN_IN_MAX_PLY).
SCORE_DECISIVE = 31507
#: Scores between -SCORE_RANGE and SCORE_RANGE fall in bins of SCORE_BIN centipawns.
SCORE_BIN, SCORE_RANGE = 100, 1000
PLY_BIN, PLY_RANGE = 20, 200


def score_bin(score: int) -> str:
    """Return the score histogram's bin of a score."""
    if score == SCORE_NONE:
        return "none"
    if score >= SCORE_DECISIVE:
        return "mate/tb win"
    if score <= -SCORE_DECISIVE:
        return "mate/tb loss"
    if score < -SCORE_RANGE:
        return f"< -{SCORE_RANGE}"
    if score >= SCORE_RANGE:
        return f">= {SCORE_RANGE}"
    low = score // SCORE_BIN * SCORE_BIN
    return f"{low}..{low + SCORE_BIN - 1}"


def score_bins() -> list[str]:
    """Every bin of the score histogram, in order."""
    middle = [score_bin(s) for s in range(-SCORE_RANGE, SCORE_RANGE, SCORE_BIN)]
    return [
        "mate/tb loss",
        f"< -{SCORE_RANGE}",
        *middle,
        f">= {SCORE_RANGE}",
        "mate/tb win",
        "none",
    ]


def ply_bin(ply: int) -> str:
    """Return the ply histogram's bin of a ply."""
    if ply >= PLY_RANGE:
        return f"{PLY_RANGE}+"
    low = ply // PLY_BIN * PLY_BIN
    return f"{low}..{low + PLY_BIN - 1}"


@dataclass
class TrainingStats:
    """Counts over the records of one file."""

    records: int = 0
    results: Counter[str] = field(default_factory=Counter)
    pieces: Counter[int] = field(default_factory=Counter)
    scores: Counter[str] = field(default_factory=Counter)
    plies: Counter[str] = field(default_factory=Counter)
    in_check: int = 0
    captures: int = 0
    ply_min: int | None = None
    ply_max: int | None = None

    def add(self, record: PlainRecord) -> None:
        board = chess.Board(record.fen)
        move = chess.Move.from_uci(record.move)
        self.records += 1
        self.results[("loss", "draw", "win")[record.result + 1]] += 1
        self.pieces[chess.popcount(board.occupied)] += 1
        self.scores[score_bin(record.score)] += 1
        self.plies[ply_bin(record.ply)] += 1
        self.in_check += board.is_check()
        self.captures += board.is_capture(move)
        self.ply_min = record.ply if self.ply_min is None else min(self.ply_min, record.ply)
        self.ply_max = record.ply if self.ply_max is None else max(self.ply_max, record.ply)

    def to_json(self) -> dict[str, Any]:
        share = (lambda n: round(n / self.records, 4)) if self.records else (lambda n: None)
        ply_order = [ply_bin(p) for p in range(0, PLY_RANGE + 1, PLY_BIN)]
        return {
            "records": self.records,
            "results": {k: self.results[k] for k in ("win", "draw", "loss")},
            "pieces": {str(n): self.pieces[n] for n in sorted(self.pieces)},
            "scores": {k: self.scores[k] for k in score_bins() if self.scores[k]},
            "in_check_share": share(self.in_check),
            "capture_share": share(self.captures),
            "ply_min": self.ply_min,
            "ply_max": self.ply_max,
            "plies": {k: self.plies[k] for k in ply_order if self.plies[k]},
        }


def gather(records: Iterable[PlainRecord]) -> TrainingStats:
    """Return the counts over records."""
    stats = TrainingStats()
    for record in records:
        stats.add(record)
    return stats


def file_stats(path: Path, *, progress: ReadCallback | None = None) -> dict[str, Any]:
    """Return the counts over a .plain or .binpack file, as JSON-ready values; `progress`
    hears of the read (read_training)."""
    records = read_training(path, legal=True, progress=progress)
    return {"file": str(path), **gather(records).to_json()}


def _bars(counts: dict[str, int], total: int) -> list[str]:
    width = max((len(k) for k in counts), default=0)
    most = max(counts.values(), default=0)
    return [
        f"  {key:>{width}}  {count:>10}  {count / total:6.1%}  {'#' * round(40 * count / most)}"
        for key, count in counts.items()
    ]


def format_stats(stats: dict[str, Any]) -> str:
    """Return the counts as text for people."""
    total = stats["records"]
    lines = [f"{stats['file']}: {total} records"]
    if not total:
        return lines[0]
    results = stats["results"]
    lines.append(
        "results (side to move): "
        + ", ".join(f"{k} {v} ({v / total:.1%})" for k, v in results.items())
    )
    lines.append(
        f"in check: {stats['in_check_share']:.1%}   captures: {stats['capture_share']:.1%}"
    )
    lines.append(f"plies: {stats['ply_min']}..{stats['ply_max']}")
    lines += _bars(stats["plies"], total)
    lines.append("pieces on the board:")
    lines += _bars(stats["pieces"], total)
    lines.append("scores (side to move, centipawns):")
    lines += _bars(stats["scores"], total)
    return "\n".join(lines)
