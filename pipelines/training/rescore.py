"""`training rescore`: the results of any training file corrected by the tablebases.

The records are read as games (`chains.games`: runs of records each following the one before).
Once a game reaches a position the tables cover (its records' positions, and the position
after its last move), each covered record takes its own outcome under the 50-move rule (WDL
from DTZ and the halfmove clock: cursed wins and blessed losses are draws), and every other
record of the game the outcome of the first covered position, from its own side to move, as
Leela's rescorer carries a game's result back (and as `from-games` rescores its records). With
`tb_scores`, covered records also take the tablebase score (31753 - min(|DTZ|, 246) for a
win, negated for a loss, 0 for a draw: inside Stockfish's tablebase range, 31507..31753).
Records are written in their order; a record that does not change is written as it was read.

Writes OUT and its manifest OUT.json (`RescoreManifest`), both whole or not at all.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import chess

from pipelines.errors import ChesspipeError
from pipelines.files import file_sha256, write_json
from pipelines.progress import ReadCallback
from pipelines.training.chains import Game, games
from pipelines.training.files import BadInput, read_training, training_format, training_writer
from pipelines.warehouse.locks import output_lock
from schemas.atomic_files import OutputSet
from schemas.plain import PlainRecord
from schemas.version import __version__

if TYPE_CHECKING:
    from pipelines.training.from_games import Outcomes

_WORDS = {1: "win", 0: "draw", -1: "loss"}


@dataclass
class RescoreCounts:
    """What rescoring changed."""

    records: int = 0
    games: int = 0
    games_reaching_tables: int = 0
    #: Records whose own position the tables cover.
    records_covered: int = 0
    #: Records whose result changed, by direction from their side to move (win_to_draw, ...).
    results_changed: Counter[str] = field(default_factory=Counter)
    records_score_changed: int = 0


@dataclass
class RescoreManifest:
    """A rescore run, as written to OUT.json."""

    chesspipe_version: str
    input: str
    output: str
    tables: list[str]
    tb_scores: bool
    records: int = 0
    games: int = 0
    games_reaching_tables: int = 0
    records_covered: int = 0
    records_result_changed: int = 0
    results_changed: dict[str, int] = field(default_factory=dict)
    records_score_changed: int = 0
    #: What --skip-bad passed over, by reason, and its first message (None: not asked).
    bad_input: dict[str, Any] | None = None
    output_sha256: str = ""
    seconds: float = 0.0
    finished_at: str = ""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RescoreManifest:
        return cls(**data)


def manifest_path_for(output: Path) -> Path:
    """The rescore manifest's path: OUT.json."""
    return output.with_name(output.name + ".json")


def _covered(board: chess.Board, outcomes: Outcomes) -> tuple[int, int] | None:
    if chess.popcount(board.occupied) > outcomes.largest or board.clean_castling_rights():
        return None
    return outcomes.outcome(board)


def rescore_game(
    game: Game, outcomes: Outcomes, counts: RescoreCounts, *, tb_scores: bool = False
) -> list[PlainRecord]:
    """Return a game's records rescored by the tables (the same objects where unchanged)."""
    found = [_covered(position.board, outcomes) for position in game.positions]
    end = _covered(game.end, outcomes)
    counts.games += 1
    counts.records += len(found)
    first = next(
        ((index, outcome) for index, outcome in enumerate(found) if outcome is not None),
        (len(found), end) if end is not None else None,
    )
    if first is None:
        return [position.record for position in game.positions]
    counts.games_reaching_tables += 1
    first_index, (first_result, _) = first
    first_turn = (
        game.positions[first_index].board.turn if first_index < len(found) else game.end.turn
    )
    out = []
    for position, outcome in zip(game.positions, found, strict=True):
        record = position.record
        score = record.score
        if outcome is not None:
            counts.records_covered += 1
            result = outcome[0]
            if tb_scores:
                score = outcome[1]
        else:
            result = first_result if position.board.turn == first_turn else -first_result
        if result != record.result:
            counts.results_changed[f"{_WORDS[record.result]}_to_{_WORDS[result]}"] += 1
        counts.records_score_changed += score != record.score
        if (result, score) != (record.result, record.score):
            record = PlainRecord(record.fen, record.move, score, record.ply, result)
        out.append(record)
    return out


def rescored(
    records: Iterator[PlainRecord], outcomes: Outcomes, counts: RescoreCounts, *, tb_scores: bool
) -> Iterator[PlainRecord]:
    """Yield every record, rescored game by game."""
    for game in games(records):
        yield from rescore_game(game, outcomes, counts, tb_scores=tb_scores)


def rescore_file(
    source: Path,
    out: Path,
    outcomes: Outcomes,
    tables: list[str],
    *,
    tb_scores: bool = False,
    skip_bad: bool = False,
    progress: ReadCallback | None = None,
) -> RescoreManifest:
    """Rescore `source` into `out`, with the manifest OUT.json; both whole or not at all.

    `progress` hears of the read (read_training).
    """
    started = time.monotonic()
    kind = training_format(out)
    bad = BadInput() if skip_bad else None
    counts = RescoreCounts()
    manifest_file = manifest_path_for(out)
    with output_lock(out, manifest_file), OutputSet(out, manifest_file) as outputs:
        written = 0
        with training_writer(outputs.path(out), kind=kind) as write:
            records = read_training(source, legal=True, bad=bad, progress=progress)
            for written, record in enumerate(  # noqa: B007 - the count is checked below
                rescored(records, outcomes, counts, tb_scores=tb_scores), 1
            ):
                try:
                    write(record)
                except ValueError as exc:
                    raise ChesspipeError(f"{source}: record {written}: {exc}") from None
        assert written == counts.records
        manifest = RescoreManifest(
            __version__,
            str(source),
            str(out),
            tables,
            tb_scores,
            records=counts.records,
            games=counts.games,
            games_reaching_tables=counts.games_reaching_tables,
            records_covered=counts.records_covered,
            records_result_changed=sum(counts.results_changed.values()),
            results_changed=dict(sorted(counts.results_changed.items())),
            records_score_changed=counts.records_score_changed,
            bad_input=bad.to_json() if bad is not None else None,
            output_sha256=file_sha256(outputs.path(out)),
            seconds=round(time.monotonic() - started, 3),
            finished_at=datetime.now(UTC).isoformat(timespec="seconds"),
        )
        write_json(outputs.path(manifest_file), manifest.to_json())
    return manifest
