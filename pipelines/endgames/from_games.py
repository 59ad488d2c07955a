"""Tablebase-phase positions of a month's kept games, streamed from the source PGN.

Who pays for full parsing: a game reaches K pieces or fewer only if its movetext holds at least
32 - K captures (game_filter.may_reach), so the movetext bytes are counted first and only the
games that pass are replayed with python-chess. A pzstd-style file is read by units of frames
in worker processes (games.parallel); their positions come back in the file's order, so the
label set is the one a reading in order makes.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from contextlib import closing
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import chess
import chess.polyglot

from pipelines.endgames.positions import Position
from pipelines.endgames.tables import TableSet
from pipelines.games.frames import Frame
from pipelines.games.game_filter import GameFilter, KeptGame, ScanStats, keep_game, may_reach
from pipelines.games.in_order import games_in_order
from pipelines.games.plan import PARALLEL_MIN_BYTES, frames_for_workers
from pipelines.games.scan import split_games
from pipelines.progress import ProgressCallback
from pipelines.sources.open import OpenSource, Source, open_source
from schemas.movetext import san_tokens


@dataclass
class GameScan:
    """What the endgame scan saw, beyond the filter's counts."""

    stats: ScanStats = field(default_factory=ScanStats)
    few_captures: int = 0  # kept games skipped by the capture count
    replayed: int = 0
    reached_tables: int = 0  # replayed games that reached a covered position
    illegal_move: int = 0
    positions: int = 0  # covered positions seen, repeats included
    repeats: int = 0  # positions already seen this month
    uncovered: int = 0  # few enough pieces, but a table missing
    #: Worker processes that read units of frames (1: read in order here).
    workers: int = 1
    source: dict[str, Any] = field(default_factory=dict)

    def merge(self, other: GameScan) -> None:
        """Add a unit's counts to these (its positions' repeats are counted where they meet)."""
        self.stats.merge(other.stats)
        self.few_captures += other.few_captures
        self.replayed += other.replayed
        self.reached_tables += other.reached_tables
        self.illegal_move += other.illegal_move
        self.positions += other.positions
        self.uncovered += other.uncovered

    def summary(self) -> dict[str, Any]:
        return {
            "games_read": self.stats.games_read,
            "games_kept": self.stats.games_kept,
            "games_dropped": dict(sorted(self.stats.dropped.items())),
            "games_few_captures": self.few_captures,
            "games_replayed": self.replayed,
            "games_reaching_tables": self.reached_tables,
            "games_illegal_move": self.illegal_move,
            "positions_seen": self.positions,
            "positions_repeated": self.repeats,
            "positions_uncovered": self.uncovered,
            "workers": self.workers,
            **self.source,
        }


def replay(kept: KeptGame, tables: TableSet, scan: GameScan) -> Iterator[Position]:
    """Yield a replayed game's covered positions with the move played, the result and the ply."""
    try:
        board = chess.Board(kept.fen, chess960=True) if kept.fen else chess.Board()
    except ValueError:
        scan.illegal_move += 1
        return
    white_result = kept.result - 1  # 1, 0, -1 from White's view
    reached = False
    largest = tables.largest
    tokens = san_tokens(kept.movetext)
    for index in range(len(tokens) + 1):
        move: chess.Move | None = None
        if index < len(tokens):
            try:
                move = board.parse_san(tokens[index].decode("ascii", "replace"))
            except ValueError:
                scan.illegal_move += 1
                return
        if chess.popcount(board.occupied) <= largest and not board.castling_rights:
            if tables.covers(board):
                reached = True
                scan.positions += 1
                result = white_result if board.turn == chess.WHITE else -white_result
                yield Position(
                    board.copy(stack=False),
                    "game",
                    ply=board.ply(),
                    game_move=move.uci() if move is not None else None,
                    game_result=result,
                )
            else:
                scan.uncovered += 1
        if move is None:
            break
        board.push(move)
    if reached:
        scan.reached_tables += 1


def game_positions(
    source: Source,
    rules: GameFilter,
    tables: TableSet,
    scan: GameScan,
    progress: ProgressCallback | None = None,
    *,
    workers: int = 1,
    parallel_min_bytes: int = PARALLEL_MIN_BYTES,
    replay_every_game: bool = False,
) -> Iterator[Position]:
    """Yield the distinct covered positions of the kept games of a source, first seen first.

    A pzstd-style file of at least `parallel_min_bytes` is read by units of frames in `workers`
    processes (the positions are the same, in the same order); any other source in order here.
    `replay_every_game` replays the games the capture count would skip (benchmarks).
    """
    seen: set[int] = set()  # Polyglot keys: 64 bits a position (pieces, turn, castling, ep)
    started = time.monotonic()
    with open_source(source, rules.variant) as opened:
        frames = frames_for_workers(opened, workers=workers, parallel_min_bytes=parallel_min_bytes)
        if frames is not None:
            found = _by_units(opened, frames, rules, tables, scan, replay_every_game,
                              workers=workers, started=started, progress=progress)  # fmt: skip
        else:
            games = games_in_order(opened, scan.stats, started=started, progress=progress)
            found = _positions(games, rules, tables, scan, replay_every_game)
        for position in found:
            key = chess.polyglot.zobrist_hash(position.board)
            if key in seen:
                scan.repeats += 1
                continue
            seen.add(key)
            yield position
        if progress is not None:
            elapsed = time.monotonic() - started
            progress(scan.stats.progress(opened.reader.bytes_read, opened.size, elapsed))
        scan.source = {
            "source_resolved": opened.name,
            "source_bytes_read": opened.reader.bytes_read,
            "source_sha256": opened.reader.sha256.hexdigest(),
        }


def _positions(
    games: Iterable[bytes],
    rules: GameFilter,
    tables: TableSet,
    scan: GameScan,
    replay_every_game: bool,
) -> Iterator[Position]:
    """Yield the covered positions of the kept games, repeats included, counting in scan."""
    for game in games:
        kept = keep_game(game, rules, scan.stats)
        if kept is None:
            continue
        if not replay_every_game and not may_reach(kept.movetext, tables.largest):
            scan.few_captures += 1
            continue
        scan.replayed += 1
        yield from replay(kept, tables, scan)


#: Compressed bytes of a unit of frames a worker reads.
UNIT_BYTES = 1 << 20


def unit_positions(
    location: str,
    frames: list[Frame],
    unit: range,
    rules: GameFilter,
    tables: TableSet,
    replay_every_game: bool,
) -> tuple[GameScan, list[Position]]:
    """Return the counts and the covered positions (repeats included) of the kept games one
    unit of frames owns (in a worker process)."""
    from pipelines.games.parallel import open_unit

    scan = GameScan()
    with open_unit(location, frames, unit) as text:
        games = split_games(text, scan.stats)
        positions = list(_positions(games, rules, tables, scan, replay_every_game))
    return scan, positions


def _by_units(
    opened: OpenSource,
    frames: list[Frame],
    rules: GameFilter,
    tables: TableSet,
    scan: GameScan,
    replay_every_game: bool,
    *,
    workers: int,
    started: float,
    progress: ProgressCallback | None,
) -> Iterator[Position]:
    """Yield the covered positions of units of frames read by worker processes, in order."""
    from pipelines.games.frames import plan_units
    from pipelines.games.parallel import in_order
    from pipelines.games.workers import WorkerPool

    scan.workers = workers
    units = (
        (
            frames[unit.stop - 1].offset + frames[unit.stop - 1].size,
            partial(unit_positions, opened.name, frames, unit, rules, tables, replay_every_game),
        )
        for unit in plan_units(frames, workers, max_unit_bytes=UNIT_BYTES)
    )
    with (
        WorkerPool(workers, preload=[__name__]) as pool,
        closing(in_order(pool, units, in_flight=2 * workers)) as results,
    ):
        for done_bytes, (unit_scan, positions) in results:
            scan.merge(unit_scan)
            yield from positions
            if progress is not None:
                elapsed = time.monotonic() - started
                progress(scan.stats.progress(done_bytes, opened.size, elapsed))
