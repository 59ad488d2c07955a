"""Tablebase-phase positions of a month's kept games, streamed from the source PGN.

Who pays for full parsing: a game reaches K pieces or fewer only if its movetext holds at least
32 - K captures (SAN 'x'; promotions only add pieces), so the movetext bytes are counted first and
only the games that pass are replayed with python-chess.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import chess
import chess.polyglot

from pipelines.endgames.positions import Position
from pipelines.endgames.tables import TableSet
from pipelines.games.decompress import decompressed_chunks
from pipelines.games.game_filter import GameFilter, KeptGame, ScanStats, filter_game
from pipelines.games.scan import split_games
from pipelines.progress import ProgressCallback
from pipelines.sources.open import open_source
from schemas.movetext import has_moves, san_tokens


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
    source: dict[str, Any] = field(default_factory=dict)

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
            **self.source,
        }


def min_captures(largest: int) -> int:
    """Return the captures a game needs before it can have `largest` pieces or fewer."""
    return max(0, 32 - largest)


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
    source: str,
    rules: GameFilter,
    tables: TableSet,
    scan: GameScan,
    progress: ProgressCallback | None = None,
    captures_needed: int | None = None,
) -> Iterator[Position]:
    """Yield the distinct covered positions of the kept games of a source, first seen first.

    ``captures_needed`` overrides the capture count a game needs to be replayed (benchmarks).
    """
    need = min_captures(tables.largest) if captures_needed is None else captures_needed
    seen: set[int] = set()  # Polyglot keys: 64 bits a position (pieces, turn, castling, ep)
    stats = scan.stats
    started = last_report = time.monotonic()
    with open_source(source, rules.variant) as opened:
        for game in split_games(decompressed_chunks(opened.reader), stats):
            kept = filter_game(game, rules, stats)
            if kept is not None and not has_moves(kept.movetext):
                stats.drop("no_moves")  # as ingest drops it: not a kept game
                kept = None
            if kept is not None:
                stats.games_kept += 1
                if kept.movetext.count(b"x") < need:
                    scan.few_captures += 1
                else:
                    scan.replayed += 1
                    for position in replay(kept, tables, scan):
                        key = chess.polyglot.zobrist_hash(position.board)
                        if key in seen:
                            scan.repeats += 1
                            continue
                        seen.add(key)
                        yield position
            if progress is not None and stats.games_read & 0x3FF == 0:
                now = time.monotonic()
                if now - last_report >= 0.5:
                    last_report = now
                    progress(stats.progress(opened.reader.bytes_read, opened.size, now - started))
        if progress is not None:
            elapsed = time.monotonic() - started
            progress(stats.progress(opened.reader.bytes_read, opened.size, elapsed))
        scan.source = {
            "source_resolved": opened.name,
            "source_bytes_read": opened.reader.bytes_read,
            "source_sha256": opened.reader.sha256.hexdigest(),
        }
