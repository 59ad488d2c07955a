"""Training records from every position of a month's kept games, results rescored by tablebases.

Each kept game is replayed with python-chess, one game at a time (memory holds one game). A
position's record: the move played, the Lichess `[%eval]` written after it as the score from the
mover's view (a mate announcement `#n` is 32000 - n, negated when the mover is mated), its ply,
and the result from the side to move. Positions the tablebases cover take their score and
result from the tables (`Outcomes`, handed in by the caller), and every earlier position takes
the outcome of the game's first covered position, as Leela's rescorer does.

Games are skipped and counted: by the ingest filter's reasons and `no_moves` (as ingest
drops them, so `games_kept` counts the games ingest keeps), `missing_eval` (with
`require_eval`, a move without an eval), `no_eval` (without
`require_eval`: no eval in the game, and too few captures (SAN `x`) to reach the tables, so no
position could have a score; such games are not replayed), `bad_eval` (an eval comment that does
not parse), `no_moves`, `too_long` (more than 16,383 plies), `illegal_move`. Positions of the
games replayed are skipped and counted by the first filter that drops them, in the order
`before_from_ply`, `pieces`, `in_check`, `capture_or_promotion`, `no_score`.
"""

from __future__ import annotations

import array
import itertools
import json
import re
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

import chess

from pipelines.errors import ChesspipeError, SettingError
from pipelines.files import file_sha256, write_json
from pipelines.games.frames import Frame
from pipelines.games.game_filter import GameFilter, ScanStats, keep_game, may_reach
from pipelines.games.in_order import games_in_order
from pipelines.games.plan import PARALLEL_MIN_BYTES
from pipelines.games.scan import split_games
from pipelines.progress import ProgressCallback
from pipelines.sources.open import OpenSource, open_source
from pipelines.training.files import training_format, training_writer
from pipelines.warehouse.layout import check_month
from schemas.atomic_files import OutputSet
from schemas.binpack import fen_prefix
from schemas.movetext import are_moves, move_words, san_tokens
from schemas.plain import PlainRecord
from schemas.training_lineage import TRAINING_LINEAGE_SCHEMA, lineage_path_for
from schemas.version import __version__

#: A mate announcement #n scores 32000 - n from the mating side (Stockfish's VALUE_MATE).
VALUE_MATE = 32000
#: Centipawn evals from here up would read as mate or tablebase scores: refused as bad_eval.
MAX_CP = 31506
#: Most plies of a game exported (a .binpack stores a ply in 14 bits).
MAX_PLIES = (1 << 14) - 1
#: Lineage rows held before they are written as a Parquet row group.
LINEAGE_BATCH = 1 << 16

_COMMENT = re.compile(rb"\{([^}]*)\}")
_EVAL = re.compile(rb"\[%eval\s([^\]]*)\]")
_EVAL_VALUE = re.compile(rb"(?:#([+-]?\d{1,4})|([+-]?)(\d{1,10})?(?:\.(\d{1,2}))?)(?:,\d+)?")
_SITE = re.compile(rb'(?:^|\n\[)Site "([^"\n]*)"\]')
_LICHESS_ID = re.compile(r"https?://(?:[a-z]+\.)?lichess\.org/([A-Za-z0-9]{8,12})/?$")

#: Position filters, in the order they are tried (a position counts under the first that drops it).
POSITION_FILTERS = ("before_from_ply", "pieces", "in_check", "capture_or_promotion", "no_score")


class BadEval(ValueError):
    """An [%eval] comment that does not parse."""


class Outcomes(Protocol):
    """The tablebases as rescoring sees them."""

    #: The most pieces a table covers.
    largest: int

    def outcome(self, board: chess.Board) -> tuple[int, int] | None:
        """Return (result, score) of a position, or None when the tables do not cover it.

        Both from the side to move: result 1, 0 or -1 under the 50-move rule with the board's
        halfmove clock (cursed wins and blessed losses are draws); score in the export's
        tablebase scheme.
        """
        ...


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


@dataclass
class FromGamesManifest:
    """A whole-game export's run, as written to OUT.json."""

    chesspipe_version: str
    month: str
    source: str
    output: str
    lineage: str
    settings: FromGamesSettings
    tables: list[str]
    games_read: int = 0
    games_kept: int = 0
    #: Games not exported, by reason (the filter's, no_moves, illegal_move, bad_eval,
    #: missing_eval); reasons sorted.
    games_skipped: dict[str, int] = field(default_factory=dict)
    #: Kept games with at least one record.
    games_exported: int = 0
    #: Kept games reaching a position the tables cover.
    games_reaching_tables: int = 0
    #: Games whose first covered position's outcome differs from the PGN result, by direction
    #: from White's view (win_to_draw, loss_to_draw, draw_to_win, ...).
    results_changed: dict[str, int] = field(default_factory=dict)
    positions: int = 0
    #: Positions left out, by the first filter that dropped them.
    positions_skipped: dict[str, int] = field(default_factory=dict)
    records: int = 0
    records_result_changed: int = 0
    records_tablebase_scored: int = 0
    output_sha256: str = ""
    seconds: float = 0.0
    finished_at: str = ""
    #: Worker processes that exported units of frames (1: read in order here).
    workers: int = 1

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["settings"] = self.settings.to_json()
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> FromGamesManifest:
        values = dict(data)
        values["settings"] = FromGamesSettings.from_json(data["settings"])
        return cls(**values)


def manifest_path_for(output: Path) -> Path:
    """Return the run manifest's path for a training file: OUT.json."""
    return output.with_name(output.name + ".json")


def game_id(site: str) -> str:
    """Return a Lichess game id from a Site tag value (the value itself when not lichess.org)."""
    match = _LICHESS_ID.match(site)
    return match.group(1) if match else site


def parse_eval(text: bytes, white_moved: bool) -> int:
    """Return an [%eval] value (White's view) as a score from the mover's view."""
    match = _EVAL_VALUE.fullmatch(text.strip())
    if match is None:
        raise BadEval(f"eval {text.decode('ascii', 'replace')!r}")
    mate, sign, whole, fraction = match.groups()
    if mate is not None:
        n = int(mate)
        # #0 (not written by Lichess): the side to move after the move is mated
        mover_mates = n == 0 or (n > 0) == white_moved
        return VALUE_MATE - abs(n) if mover_mates else -(VALUE_MATE - abs(n))
    if whole is None and fraction is None:
        raise BadEval(f"eval {text.decode('ascii', 'replace')!r}")
    cp = int(whole or b"0") * 100 + int((fraction or b"0").ljust(2, b"0"))
    if cp > MAX_CP:
        raise BadEval(f"eval {text.decode('ascii', 'replace')!r} out of range")
    white = -cp if sign == b"-" else cp
    return white if white_moved else -white


def moves_and_evals(movetext: bytes) -> tuple[list[bytes], list[int | None]]:
    """Return a movetext's mainline SAN moves and, for each, the score of the [%eval] after it.

    Scores are from the mover's view (White moves first), None where a move has no eval. Raise
    BadEval when a comment holds an [%eval without a well-formed value. The moves are
    san_tokens's: words between comments that are each a move, else what python-chess finds.
    """
    tokens, evals = _moves_and_evals(movetext, move_words)
    if are_moves(tokens):
        return tokens, evals
    return _moves_and_evals(movetext, san_tokens)


def _moves_and_evals(
    movetext: bytes, read: Callable[[bytes], list[bytes]]
) -> tuple[list[bytes], list[int | None]]:
    """moves_and_evals, the text between comments read by `read`."""
    tokens: list[bytes] = []
    evals: list[int | None] = []
    pieces = _COMMENT.split(movetext) if b"{" in movetext else [movetext]
    for index, piece in enumerate(pieces):
        if index % 2:
            if b"%eval" not in piece:
                continue
            found = _EVAL.search(piece)
            if found is None:
                raise BadEval("an [%eval] comment that does not parse")
            if tokens and evals[-1] is None:
                evals[-1] = parse_eval(found.group(1), len(tokens) % 2 == 1)
            continue
        for token in read(piece):
            tokens.append(token)
            evals.append(None)
    return tokens, evals


def _site(game: bytes) -> str:
    header_end = game.find(b"\n\n")
    match = _SITE.search(game, 0, header_end if header_end >= 0 else len(game))
    return match.group(1).decode("utf-8", "replace") if match else ""


@dataclass
class _ExportCounts:
    """Counts while exporting."""

    skipped: Counter[str] = field(default_factory=Counter)
    positions_skipped: Counter[str] = field(default_factory=Counter)
    changed: Counter[str] = field(default_factory=Counter)
    positions: int = 0
    exported: int = 0
    reaching: int = 0
    records: int = 0
    records_changed: int = 0
    records_tb: int = 0

    def merge(self, other: _ExportCounts) -> None:
        """Add another part's counts to these."""
        self.skipped.update(other.skipped)
        self.positions_skipped.update(other.positions_skipped)
        self.changed.update(other.changed)
        self.positions += other.positions
        self.exported += other.exported
        self.reaching += other.reaching
        self.records += other.records
        self.records_changed += other.records_changed
        self.records_tb += other.records_tb


_RESULT_WORDS = {1: "win", 0: "draw", -1: "loss"}


@dataclass(frozen=True)
class GameRecord:
    """A record with its lineage: ply, result changed, first covered ply."""

    record: PlainRecord
    ply: int
    result_changed: bool
    first_covered_ply: int | None


def game_records(
    white_result: int,
    movetext: bytes,
    settings: FromGamesSettings,
    outcomes: Outcomes | None,
    counts: _ExportCounts,
) -> list[GameRecord] | None:
    """Return a game's records, or None after counting why the game was skipped.

    `white_result` is 1, 0 or -1 from White's view.
    """
    if b"%eval" not in movetext:
        # no score anywhere: only positions the tables cover could give records
        if settings.require_eval:
            counts.skipped["missing_eval"] += 1
            return None
        if outcomes is None or not may_reach(movetext, outcomes.largest):
            counts.skipped["no_eval"] += 1
            return None
    try:
        tokens, evals = moves_and_evals(movetext)
    except BadEval:
        counts.skipped["bad_eval"] += 1
        return None
    if not tokens:
        counts.skipped["no_moves"] += 1
        return None
    if len(tokens) > MAX_PLIES:
        counts.skipped["too_long"] += 1
        return None
    if settings.require_eval and None in evals:
        counts.skipped["missing_eval"] += 1
        return None
    board = chess.Board()
    # per position before a move: None when skipped, else (fen, uci, eval, side to move,
    # tablebase outcome)
    positions: list[tuple[str, str, int | None, bool, tuple[int, int] | None] | None] = []
    largest = outcomes.largest if outcomes is not None else 0
    first_covered: int | None = None
    first_outcome: tuple[int, int] | None = None
    first_turn = chess.WHITE
    from_ply, low, high = settings.from_ply, settings.min_pieces, settings.max_pieces
    skipped: Counter[str] = Counter()
    for ply in range(len(tokens) + 1):
        move = None
        if ply < len(tokens):
            try:
                move = board.parse_san(tokens[ply].decode("ascii"))
            except (ValueError, UnicodeDecodeError):
                counts.skipped["illegal_move"] += 1
                return None
        pieces = chess.popcount(board.occupied)
        outcome = None
        if outcomes is not None and pieces <= largest and not board.castling_rights:
            outcome = outcomes.outcome(board)
            if outcome is not None and first_covered is None:
                first_covered, first_outcome, first_turn = ply, outcome, board.turn
        if move is None:
            break
        reason = None
        if ply < from_ply:
            reason = "before_from_ply"
        elif not low <= pieces <= high:
            reason = "pieces"
        elif settings.skip_in_check and board.is_check():
            reason = "in_check"
        elif settings.skip_captures and (move.promotion or board.is_capture(move)):
            reason = "capture_or_promotion"
        else:
            score = evals[ply]
            if outcome is None and score is None:
                reason = "no_score"
        if reason is not None:
            skipped[reason] += 1
            positions.append(None)
        else:
            fen = f"{fen_prefix(board)} {ply // 2 + 1}"
            positions.append((fen, move.uci(), score, board.turn, outcome))
        board.push(move)
    counts.positions += len(tokens)
    counts.positions_skipped.update(skipped)
    if first_covered is not None and first_outcome is not None:
        counts.reaching += 1
        rescored_white = first_outcome[0] if first_turn == chess.WHITE else -first_outcome[0]
        if rescored_white != white_result:
            words = _RESULT_WORDS[white_result], _RESULT_WORDS[rescored_white]
            counts.changed[f"{words[0]}_to_{words[1]}"] += 1
    records = []
    for ply, position in enumerate(positions):
        if position is None:
            continue
        fen, uci, score, turn, outcome = position
        game = white_result if turn == chess.WHITE else -white_result
        if outcome is not None:
            result, score = outcome
        elif first_outcome is not None:
            result = first_outcome[0] if turn == first_turn else -first_outcome[0]
        else:
            result = game
        assert score is not None
        records.append(
            GameRecord(
                PlainRecord(fen, uci, score, ply, result), ply, result != game, first_covered
            )
        )
        counts.records_tb += outcome is not None
    return records


def _bitmap(flags: list[bool]) -> bytes:
    """Arrow's bit-packed booleans (least significant bit first)."""
    value = 0
    for index, flag in enumerate(flags):
        if flag:
            value |= 1 << index
    return value.to_bytes((len(flags) + 7) // 8 or 1, "little")


# Arrow arrays built from buffers: pa.array on Python lists would import pandas (0.25 s).


def _uint16(values: list[int | None]) -> Any:
    import pyarrow as pa

    validity = None
    if None in values:
        validity = pa.py_buffer(_bitmap([v is not None for v in values]))
    data = array.array("H", [v or 0 for v in values])
    return pa.Array.from_buffers(pa.uint16(), len(values), [validity, pa.py_buffer(data)])


def _bools(values: list[bool]) -> Any:
    import pyarrow as pa

    return pa.Array.from_buffers(pa.bool_(), len(values), [None, pa.py_buffer(_bitmap(values))])


def _strings(values: list[str]) -> Any:
    import pyarrow as pa

    encoded = [value.encode() for value in values]
    offsets = array.array("i", [0, *itertools.accumulate(map(len, encoded))])
    data = b"".join(encoded)
    return pa.Array.from_buffers(
        pa.string(), len(values), [None, pa.py_buffer(offsets), pa.py_buffer(data)]
    )


class _LineageWriter:
    """Lineage rows written to Parquet a batch at a time."""

    def __init__(self, path: Path) -> None:
        import pyarrow.parquet as pq

        self._pq = pq
        self._writer = pq.ParquetWriter(path, TRAINING_LINEAGE_SCHEMA, compression="zstd")
        self._columns: dict[str, list[Any]] = {name: [] for name in TRAINING_LINEAGE_SCHEMA.names}

    def add(self, month: str, speed: str, band: int, gid: str, rows: list[GameRecord]) -> None:
        columns = self._columns
        count = len(rows)
        columns["month"] += [month] * count
        columns["speed"] += [speed] * count
        columns["rating_band"] += [band] * count
        columns["game_id"] += [gid] * count
        columns["ply"] += [row.ply for row in rows]
        columns["result_changed"] += [row.result_changed for row in rows]
        columns["first_covered_ply"] += [row.first_covered_ply for row in rows]
        if len(columns["ply"]) >= LINEAGE_BATCH:
            self.flush()

    def flush(self) -> None:
        import pyarrow as pa

        columns = self._columns
        if columns["ply"]:
            arrays = [
                _strings(columns["month"]),
                _strings(columns["speed"]),
                _uint16(columns["rating_band"]),
                _strings(columns["game_id"]),
                _uint16(columns["ply"]),
                _bools(columns["result_changed"]),
                _uint16(columns["first_covered_ply"]),
            ]
            table = pa.Table.from_arrays(arrays, schema=TRAINING_LINEAGE_SCHEMA)
            self._writer.write_table(table)
            self._columns = {name: [] for name in TRAINING_LINEAGE_SCHEMA.names}

    def close(self) -> None:
        self.flush()
        self._writer.close()


#: What a kept game gives the output: its speed, rating band, game id and records.
Exported = tuple[str, int, str, list[GameRecord]]

#: What a unit of frames exported counted: the scan's counts and the export's.
_UnitCounts = tuple[ScanStats, _ExportCounts]

#: Compressed bytes of a unit of frames exported by a worker.
UNIT_BYTES = 1 << 20
#: Exported games a worker pickles at a time.
SPOOL_BATCH = 256


def _exported(
    games: Iterable[bytes],
    settings: FromGamesSettings,
    outcomes: Outcomes | None,
    stats: ScanStats,
    counts: _ExportCounts,
) -> Iterator[Exported]:
    """Yield the records of the games that pass the filter and give any, counting the rest."""
    for raw in games:
        kept = keep_game(raw, settings.rules, stats)
        if kept is None:
            continue
        rows = game_records(kept.result - 1, kept.movetext, settings, outcomes, counts)
        if not rows:
            continue
        counts.exported += 1
        counts.records += len(rows)
        counts.records_changed += sum(row.result_changed for row in rows)
        yield kept.speed.value, kept.rating_band, game_id(_site(raw)), rows


def _exported_in_order(
    opened: OpenSource,
    settings: FromGamesSettings,
    outcomes: Outcomes | None,
    stats: ScanStats,
    counts: _ExportCounts,
    started: float,
    progress: ProgressCallback | None,
) -> Iterator[Exported]:
    """Yield the exported games of a source read in order, reporting progress."""
    games = games_in_order(opened, stats, started=started, progress=progress)
    return _exported(games, settings, outcomes, stats, counts)


def export_unit(
    location: str,
    frames: list[Frame],
    unit: range,
    settings: FromGamesSettings,
    outcomes: Outcomes | None,
    spool: str,
) -> _UnitCounts:
    """Export the games one unit of frames owns (in a worker process); return its counts.

    The exported games go to the file `spool`, pickled a batch of SPOOL_BATCH games at a time
    (a unit's records may be many more than its compressed size suggests).
    """
    import pickle

    from pipelines.games.parallel import open_unit

    stats = ScanStats()
    counts = _ExportCounts()
    with open_unit(location, frames, unit) as text, open(spool, "wb") as out:
        games = _exported(split_games(text, stats), settings, outcomes, stats, counts)
        while batch := list(itertools.islice(games, SPOOL_BATCH)):
            pickle.dump(batch, out, protocol=pickle.HIGHEST_PROTOCOL)
    return stats, counts


def _spooled(path: Path) -> Iterator[Exported]:
    """Yield the exported games of a unit's spool file (see export_unit), then remove it."""
    import pickle

    with open(path, "rb") as handle:
        while True:
            try:
                batch = pickle.load(handle)
            except EOFError:
                break
            yield from batch
    path.unlink()


def _exported_by_units(
    opened: OpenSource,
    frames: list[Frame],
    settings: FromGamesSettings,
    outcomes: Outcomes | None,
    stats: ScanStats,
    counts: _ExportCounts,
    *,
    workers: int,
    spool: Path,
    started: float,
    progress: ProgressCallback | None,
) -> Iterator[Exported]:
    """Yield the exported games of units of frames exported by worker processes, in order.

    At most two units a worker are exported ahead of the one written, each spooled to a file
    in a temporary folder under `spool` while it waits.
    """
    import tempfile
    from contextlib import closing
    from functools import partial

    from pipelines.games.frames import plan_units, unit_name
    from pipelines.games.parallel import in_order
    from pipelines.games.workers import WorkerPool

    # What the workers need, imported by each as it starts.
    preload = [__name__] + ([type(outcomes).__module__] if outcomes is not None else [])
    folder = tempfile.TemporaryDirectory(prefix=".from-games-", dir=spool)

    def units() -> Iterator[tuple[tuple[Path, int], Callable[[], _UnitCounts]]]:
        for unit in plan_units(frames, workers, max_unit_bytes=UNIT_BYTES):
            path = Path(folder.name) / f"{unit_name(unit.start)}.pickle"
            done_bytes = frames[unit.stop - 1].offset + frames[unit.stop - 1].size
            call = partial(export_unit, opened.name, frames, unit, settings, outcomes, str(path))
            yield (path, done_bytes), call

    try:
        with (
            WorkerPool(workers, preload=preload) as pool,
            closing(in_order(pool, units(), in_flight=2 * workers)) as results,
        ):
            for (path, done_bytes), (unit_stats, unit_counts) in results:
                stats.merge(unit_stats)
                counts.merge(unit_counts)
                yield from _spooled(path)
                if progress is not None:
                    elapsed = time.monotonic() - started
                    progress(stats.progress(done_bytes, opened.size, elapsed))
    finally:
        folder.cleanup()


def export_games(
    source: str,
    month: str,
    out: Path,
    settings: FromGamesSettings | None = None,
    outcomes: Outcomes | None = None,
    tables: list[str] | None = None,
    *,
    progress: ProgressCallback | None = None,
    workers: int = 1,
    parallel_min_bytes: int = PARALLEL_MIN_BYTES,
) -> FromGamesManifest:
    """Write every position of the kept games of `source` as training records; return the run.

    Writes `out` (.plain or .binpack), its lineage `OUT.lineage.parquet` and the manifest
    `OUT.json`, each whole or not at all. Without `outcomes`, results are the games' own.
    A pzstd-style file of at least `parallel_min_bytes` is read as ingest reads it with
    `workers` processes: units of frames exported at once, their records written in game
    order, a few units at a time (the output is the same byte for byte). Otherwise the source
    is read in order, one game at a time. Worker processes get `outcomes` pickled: it must
    reopen its tables there (as the command's do). `progress` hears of the run twice a
    second (games kept counts the games that gave records).
    """
    started = time.monotonic()
    settings = settings or FromGamesSettings()
    check_month(month)
    out = Path(out)
    training_format(out)
    lineage = Path(lineage_path_for(str(out)))
    stats = ScanStats()
    counts = _ExportCounts()
    manifest_file = manifest_path_for(out)
    try:
        with (
            open_source(source, settings.rules.variant) as opened,
            # The records, their lineage, the manifest last: all or none.
            OutputSet(out, lineage, manifest_file) as outputs,
        ):
            with training_writer(outputs.path(out), kind=training_format(out)) as write:
                lineage_writer = _LineageWriter(outputs.path(lineage))
                games: Iterator[Exported] | None = None
                used = 1
                if workers > 1:
                    from pipelines.games.plan import Strategy, plan_read

                    plan = plan_read(
                        opened,
                        workers=workers,
                        executor=None,
                        keep_partial=False,
                        parallel_min_bytes=parallel_min_bytes,
                    )
                    if plan.strategy is Strategy.UNITS:
                        games = _exported_by_units(
                            opened,
                            plan.frames,
                            settings,
                            outcomes,
                            stats,
                            counts,
                            workers=workers,
                            spool=out.parent,
                            started=started,
                            progress=progress,
                        )
                        used = workers
                if games is None:
                    games = _exported_in_order(
                        opened, settings, outcomes, stats, counts, started, progress
                    )
                for speed, band, gid, rows in games:
                    for row in rows:
                        write(row.record)
                    lineage_writer.add(month, speed, band, gid, rows)
                lineage_writer.close()
                if progress is not None:
                    done = opened.reader.bytes_read if opened.size is None else opened.size
                    progress(stats.progress(done, opened.size, time.monotonic() - started))
            dropped = Counter(stats.dropped)
            dropped.update(counts.skipped)
            manifest = FromGamesManifest(
                chesspipe_version=__version__,
                month=month,
                source=source,
                output=str(out),
                lineage=str(lineage),
                settings=settings,
                tables=list(tables or []),
                games_read=stats.games_read,
                games_kept=stats.games_kept,
                games_skipped=dict(sorted(dropped.items())),
                games_exported=counts.exported,
                games_reaching_tables=counts.reaching,
                results_changed=dict(sorted(counts.changed.items())),
                positions=counts.positions,
                positions_skipped={k: counts.positions_skipped[k] for k in POSITION_FILTERS},
                records=counts.records,
                records_result_changed=counts.records_changed,
                records_tablebase_scored=counts.records_tb,
                output_sha256=file_sha256(outputs.path(out)),
                seconds=round(time.monotonic() - started, 3),
                finished_at=datetime.now(UTC).isoformat(timespec="seconds"),
                workers=used,
            )
            write_json(outputs.path(manifest_file), manifest.to_json())
    except OSError as exc:
        raise ChesspipeError(f"cannot write {out}: {exc.strerror or exc}") from None
    return manifest


def read_manifest(path: Path) -> FromGamesManifest:
    """Return the manifest written beside a training file."""
    return FromGamesManifest.from_json(json.loads(Path(path).read_text()))


def iter_lineage(path: Path) -> Iterator[dict[str, Any]]:
    """Yield the lineage rows of a sidecar, in record order."""
    import pyarrow.parquet as pq

    for batch in pq.ParquetFile(path).iter_batches():
        yield from batch.to_pylist()
