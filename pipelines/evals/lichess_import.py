"""The Lichess evaluation dump into the evaluation store, streamed.

`lichess_db_eval.jsonl.zst` holds one JSON object a line: `{"fen": ..., "evals": [{"pvs":
[{"cp": 311, "line": "g2e4 f7f5"}, ...], "knodes": 206765, "depth": 36}, ...]}`, `mate` instead
of `cp` when a mate is certain, lines in UCI with castling as king takes rook, the FEN without
clocks. Its Parquet form (`fen, line, depth, knodes, cp, mate`: one row per line of each
evaluation, a position's rows together) reads the same. Of each position the deepest
evaluation's first line is taken (its documentation's advice), its other lines kept beside it
(the row's `lines`, up to the first that has no integer score or no legal first move).
Lichess's scores are from White's view (`point_of_view`), the store's from the side to move.

Lines that cannot be used are counted by reason, never stored: `not_json`, `bad_fen`,
`no_evaluation`, `bad_value` (a score that is no integer, or beyond the mate scale),
`illegal_line` (the line's first move is not legal), `mate_contradicts` (a mate the position
denies: the mating side lacks the material, or the line played out does not mate when it
should, or there is no legal move and yet no mate).
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

import chess

from pipelines.errors import ChesspipeError
from pipelines.evals.positions import fen_without_clocks, pv_text
from pipelines.evals.settings import ImportSettings
from pipelines.evals.store import EngineLine, Evaluation, compact_if_many, write_part
from pipelines.warehouse.evals_files import evals_lock
from schemas.evals import MATE_SCORE, MOST_LINES
from schemas.polyglot import encode_move, polyglot_key

#: Why a line of the dump is not stored.
REASONS = (
    "not_json",
    "bad_fen",
    "no_evaluation",
    "bad_value",
    "illegal_line",
    "mate_contradicts",
)


class Line(NamedTuple):
    """One principal variation of an evaluation: its score (cp or mate) and its moves."""

    cp: Any
    mate: Any
    moves: str


class DumpEvaluation(NamedTuple):
    """One evaluation of a position in the dump: its depth, its knodes, its lines."""

    depth: Any
    knodes: Any
    lines: list[Line]


@dataclass(frozen=True)
class ImportResult:
    """What an import read: lines (positions), those stored, those skipped by reason (with
    the first line number of each), parts written, seconds."""

    lines: int
    imported: int
    skipped: dict[str, int]
    first_skipped: dict[str, int]
    parts: int
    seconds: float

    def to_json(self) -> dict[str, Any]:
        return {
            "lines": self.lines,
            "imported": self.imported,
            "skipped": dict(self.skipped),
            "first_skipped_line": dict(self.first_skipped),
            "parts": self.parts,
            "seconds": round(self.seconds, 3),
        }


class Skip(Exception):
    """A position of the dump that cannot be stored, and why (one of REASONS)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _integer(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise Skip("bad_value")
    return value


def _board(fen: Any) -> chess.Board:
    if not isinstance(fen, str):
        raise Skip("bad_fen")
    try:
        board = chess.Board(fen)
    except ValueError:
        raise Skip("bad_fen") from None
    if not board.is_valid():
        raise Skip("bad_fen")
    return board


def _deepest(evaluations: list[DumpEvaluation]) -> DumpEvaluation:
    """The deepest evaluation with a line (most knodes among equal depths; the first of equals)."""
    usable = [e for e in evaluations if e.lines and isinstance(e.depth, int)]
    if not usable:
        raise Skip("no_evaluation")
    return max(usable, key=lambda e: (e.depth, e.knodes if isinstance(e.knodes, int) else -1))


def _mates(board: chess.Board, mate: int, moves: list[chess.Move]) -> bool:
    """Whether a mate score (from the side to move) agrees with the position and its line."""
    if mate == 0 or not any(board.generate_legal_moves()):
        return mate == 0 and board.is_checkmate()
    winner = board.turn if mate > 0 else not board.turn
    if board.has_insufficient_material(winner):
        return False
    plies = 2 * mate - 1 if mate > 0 else -2 * mate
    if len(moves) < plies:
        return True  # a line cut short: nothing to check it by
    played = board.copy(stack=False)
    for move in moves[:plies]:
        played.push(move)
    return played.is_checkmate()


def _line_moves(board: chess.Board, line: Line) -> list[chess.Move]:
    """A line's moves as far as they are legal (king takes rook is read as castling)."""
    moves: list[chess.Move] = []
    played = board.copy(stack=False)
    for text in line.moves.split() if isinstance(line.moves, str) else ():
        try:
            move = played.parse_uci(text)
        except ValueError:
            break
        moves.append(move)
        played.push(move)
    return moves


def _other_lines(
    board: chess.Board, first: EngineLine, lines: list[Line], *, flip: bool
) -> tuple[EngineLine, ...] | None:
    """The store's `lines` of an evaluation with several: the first (already checked), then
    the others as long as each has one integer score and a legal first move."""
    if len(lines) < 2:
        return None
    kept = [first]
    for line in lines[1:MOST_LINES]:
        moves = _line_moves(board, line)
        if not moves or (line.cp is None) == (line.mate is None):
            break
        try:
            value = _integer(line.mate if line.cp is None else line.cp)
        except Skip:
            break
        value = -value if flip else value
        if line.cp is not None and abs(value) >= MATE_SCORE:
            break
        cp, mate = (value, None) if line.cp is not None else (None, value)
        kept.append(EngineLine(encode_move(board, moves[0]), cp, mate, pv_text(moves)))
    return tuple(kept) if len(kept) > 1 else None


def evaluation_of(
    fen: Any,
    evaluations: list[DumpEvaluation],
    *,
    settings: ImportSettings,
    when: datetime,
) -> Evaluation:
    """The store's row for a position of the dump (its deepest evaluation's first line, and
    its other lines as the row's `lines`), or Skip with the reason."""
    board = _board(fen)
    chosen = _deepest(evaluations)
    first = chosen.lines[0]
    if (first.cp is None) == (first.mate is None):
        raise Skip("bad_value")
    flip = settings.point_of_view == "white" and board.turn == chess.BLACK
    moves = _line_moves(board, first)
    if not moves and any(board.generate_legal_moves()):
        raise Skip("illegal_line")
    cp = mate = None
    if first.mate is not None:
        mate = -_integer(first.mate) if flip else _integer(first.mate)
        if not _mates(board, mate, moves):
            raise Skip("mate_contradicts")
    else:
        cp = -_integer(first.cp) if flip else _integer(first.cp)
        if abs(cp) >= MATE_SCORE:
            raise Skip("bad_value")
        if board.is_checkmate():
            raise Skip("mate_contradicts")
        if cp and not any(board.generate_legal_moves()):
            raise Skip("bad_value")  # a stalemate is 0
    knodes = chosen.knodes if isinstance(chosen.knodes, int) and chosen.knodes >= 0 else None
    depth = chosen.depth if 0 <= chosen.depth < 1 << 16 else None
    pv = pv_text(moves)
    best = encode_move(board, moves[0]) if moves else None
    lines = None
    if best is not None:
        lines = _other_lines(board, EngineLine(best, cp, mate, pv), chosen.lines, flip=flip)
    return Evaluation(
        key=polyglot_key(board),
        fen=fen_without_clocks(board),
        cp=cp,
        mate=mate,
        best=best,
        pv=pv,
        depth=depth,
        nodes=None if knodes is None else knodes * 1000,
        limit=None,
        engine=None,
        source="lichess",
        analysed_at=when,
        lines=lines,
    )


def _json_positions(lines: Iterable[bytes]) -> Iterator[tuple[Any, list[DumpEvaluation]]]:
    """The dump's JSON lines as (fen, evaluations); a line that is not a JSON object with a
    list of evaluations raises Skip('not_json') in its place."""
    for raw in lines:
        try:
            record = json.loads(raw)
        except ValueError:
            yield Skip("not_json"), []
            continue
        if not isinstance(record, dict) or not isinstance(record.get("evals", []), list):
            yield Skip("not_json"), []
            continue
        evaluations = []
        for item in record.get("evals", []):
            if not isinstance(item, dict) or not isinstance(item.get("pvs"), list):
                continue
            found = [
                Line(pv.get("cp"), pv.get("mate"), pv.get("line", ""))
                for pv in item["pvs"]
                if isinstance(pv, dict)
            ]
            evaluations.append(DumpEvaluation(item.get("depth"), item.get("knodes"), found))
        yield record.get("fen"), evaluations


#: The longest line read whole (the dump's longest are a few KB); a longer one is not JSON.
MOST_LINE_BYTES = 1 << 20


def _text_lines(path: Path) -> Iterator[bytes]:
    """The lines of a file, zstd-compressed or not, streamed: memory stays bounded whatever
    the input (a line past MOST_LINE_BYTES is given as b"" and the rest of it dropped)."""
    from pipelines.games.decompress import decompressed_chunks

    rest = b""
    too_long = False
    with open(path, "rb") as handle:
        for chunk in decompressed_chunks(handle):
            rest += chunk
            *whole, rest = rest.split(b"\n")
            for line in whole:
                if too_long:
                    too_long = False  # the end of the long line
                elif line.strip():
                    yield line
            if len(rest) > MOST_LINE_BYTES:
                if not too_long:
                    yield b""
                too_long, rest = True, b""
    if rest.strip() and not too_long:
        yield rest


def _parquet_positions(path: Path) -> Iterator[tuple[Any, list[DumpEvaluation]]]:
    """The Parquet form's rows as (fen, evaluations), a position's consecutive rows together:
    rows of equal depth and knodes are lines of one evaluation, in order."""
    import pyarrow.parquet as pq

    wanted = ["fen", "line", "depth", "knodes", "cp", "mate"]
    try:
        handle = pq.ParquetFile(path)
    except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ChesspipeError(f"{path}: not readable as Parquet ({first})") from None
    missing = sorted(set(wanted) - set(handle.schema_arrow.names))
    if missing:
        raise ChesspipeError(f"{path}: no column {', '.join(missing)}: not the Lichess evaluations")
    fen: Any = None
    evaluations: list[DumpEvaluation] = []
    for batch in handle.iter_batches(batch_size=65_536, columns=wanted):
        columns = batch.to_pydict()
        for row in zip(*(columns[name] for name in wanted), strict=True):
            if row[0] != fen and fen is not None:
                yield fen, evaluations
                evaluations = []
            fen = row[0]
            line = Line(row[4], row[5], row[1] or "")
            if evaluations and evaluations[-1][:2] == (row[2], row[3]):
                evaluations[-1].lines.append(line)
            else:
                evaluations.append(DumpEvaluation(row[2], row[3], [line]))
    if fen is not None:
        yield fen, evaluations


def is_parquet(path: Path) -> bool:
    """Whether a file starts as Parquet does (`PAR1`)."""
    with open(path, "rb") as handle:
        return handle.read(4) == b"PAR1"


@dataclass
class _Counts:
    lines: int = 0
    imported: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    first: dict[str, int] = field(default_factory=dict)


def import_dump(
    warehouse: Path,
    dump: Path,
    settings: ImportSettings | None = None,
    *,
    progress: Callable[[int, int, float], None] | None = None,
) -> ImportResult:
    """Import a Lichess evaluation dump (JSON lines, zstd or plain, or its Parquet form) into
    the warehouse's evaluation store; return the counts. Streamed: at most `settings.batch`
    positions are held, then saved as a part of the store; a failure keeps the parts saved
    and everything stored before."""
    settings = settings or ImportSettings()
    dump = Path(dump)
    if not dump.is_file():
        raise ChesspipeError(f"{dump}: no such file")
    started = time.monotonic()
    when = datetime.now(UTC).replace(microsecond=0)
    counts = _Counts()
    parts = 0
    positions = _parquet_positions(dump) if is_parquet(dump) else _json_positions(_text_lines(dump))
    with evals_lock(Path(warehouse)):
        pending: list[Evaluation] = []
        try:
            for fen, evaluations in positions:
                counts.lines += 1
                try:
                    if isinstance(fen, Skip):
                        raise fen
                    pending.append(evaluation_of(fen, evaluations, settings=settings, when=when))
                except Skip as skip:
                    counts.skipped[skip.reason] += 1
                    counts.first.setdefault(skip.reason, counts.lines)
                    continue
                counts.imported += 1
                if len(pending) >= settings.batch:
                    write_part(Path(warehouse), pending)
                    parts += 1
                    pending.clear()
                    if progress is not None:
                        progress(counts.lines, counts.imported, time.monotonic() - started)
        finally:
            if pending:
                write_part(Path(warehouse), pending)
                parts += 1
            compact_if_many(Path(warehouse))
    return ImportResult(
        lines=counts.lines,
        imported=counts.imported,
        skipped={reason: counts.skipped[reason] for reason in REASONS if counts.skipped[reason]},
        first_skipped={r: counts.first[r] for r in REASONS if r in counts.first},
        parts=parts,
        seconds=time.monotonic() - started,
    )
