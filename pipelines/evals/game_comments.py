"""The `[%eval]` comments of kept games into the evaluation store (`evals from-games`).

About 6% of Lichess's games carry the server's analysis as a comment after each move:
`1. e4 { [%eval 0.17] } 1... c5 { [%eval 0.19] }`, White's view, `#n` for a mate (n > 0 White
mates), sometimes with the depth (`0.17,20`). Of every game the filter keeps (the same filter as
ingest, so the same games), the position after each of its first `plies` moves with a comment
becomes a row of the store, its score turned to the side to move's view, its source `games`.
The comments name no depth (mostly), no node count and no engine: a position any engine search
or the Lichess dump evaluated ranks above them (schemas.evals.EVALS_ORDER: deepest first, a
null depth last), and `evals analyse` analyses it again. Of two games' comments on one
position, the deeper, then the higher score is kept, so the choice never depends on the order
games are read in.

Games are read in order by python-chess's rules (a game with no comment is not replayed). Games
are counted by what became of them: `with_evals`; `bad_eval` (a comment that does not parse;
the game's positions are left out), `illegal_move` (the positions before it are kept).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import chess

from pipelines.errors import ChesspipeError
from pipelines.evals.positions import fen_without_clocks
from pipelines.evals.store import Evaluation, compact_if_many, write_part
from pipelines.games.eval_comments import BadEval, moves_and_evals_as_written
from pipelines.games.game_filter import GameFilter, NothingKept, ScanStats, keep_game
from pipelines.games.in_order import games_in_order
from pipelines.progress import ProgressCallback
from pipelines.sources.open import Source, open_source
from pipelines.warehouse.evals_files import evals_lock
from schemas.evals import MATE_SCORE
from schemas.polyglot import polyglot_key

#: The source of the rows these comments make.
SOURCE = "games"

#: Why a kept game's comments gave no (or fewer) rows.
GAME_REASONS = ("bad_eval", "illegal_move")


class NoComments(ChesspipeError):
    """A read of games stored no evaluation: no game had an `[%eval]` comment, or none of the
    kept games' comments could be read (the message says which)."""


@dataclass(frozen=True)
class GameEvalsResult:
    """What a read of games did: games read, games with comments the filter keeps, the comments
    stored (positions, once per game), games by reason, parts, seconds. Only games with a
    comment are filtered (and only their drops are in `dropped`)."""

    games_read: int
    with_evals: int
    comments: int
    skipped: dict[str, int]
    parts: int
    seconds: float

    def to_json(self) -> dict[str, Any]:
        return {
            "games_read": self.games_read,
            "with_evals": self.with_evals,
            "comments": self.comments,
            "skipped": dict(self.skipped),
            "parts": self.parts,
            "seconds": round(self.seconds, 3),
        }


def game_evaluations(
    fen: str | None, movetext: bytes, *, plies: int, when: datetime, chess960: bool = False
) -> tuple[list[Evaluation], str | None]:
    """The store's rows of a game's comments on its first `plies` moves (a game from a FEN
    starts there), and why it stopped short (None, or one of GAME_REASONS)."""
    try:
        moves, values = moves_and_evals_as_written(movetext)
    except BadEval:
        return [], "bad_eval"
    board = chess.Board(fen, chess960=chess960) if fen else chess.Board(chess960=chess960)
    rows: list[Evaluation] = []
    for san, value in zip(moves[:plies], values[:plies], strict=False):
        try:
            board.push_san(san.decode("ascii", "replace"))
        except ValueError:
            return rows, "illegal_move"
        if value is None:
            continue
        flip = board.turn == chess.BLACK  # the comment is White's view, the store the mover's
        cp = None if value.cp is None else (-value.cp if flip else value.cp)
        mate = None if value.mate is None else (-value.mate if flip else value.mate)
        if cp is not None and abs(cp) >= MATE_SCORE:
            return rows, "bad_eval"
        rows.append(
            Evaluation(
                key=polyglot_key(board),
                fen=fen_without_clocks(board),
                cp=cp,
                mate=mate,
                best=None,
                pv=None,
                depth=value.depth,
                nodes=None,
                limit=None,
                engine=None,
                source=SOURCE,
                analysed_at=when,
            )  # fmt: skip
        )
    return rows, None


def import_game_evals(
    warehouse: Path,
    source: Source,
    rules: GameFilter | None = None,
    *,
    plies: int = 20,
    batch: int = 200_000,
    progress: ProgressCallback | None = None,
    on_part: Callable[[int], None] | None = None,
    allow_empty: bool = False,
) -> GameEvalsResult:
    """Store the `[%eval]` comments of the games of `source` that `rules` keep (ingest's
    default filter when None), on their first `plies` moves, in the warehouse's evaluation
    store; return the counts. Streamed: at most `batch` rows are held, then saved as a part
    (`on_part` hears the rows of each); a failure keeps the parts saved.

    A read that stores nothing fails, unless `allow_empty`: NoComments when no game has a
    comment (or none of the kept games' comments reads), NothingKept (naming why) when the
    filter keeps none of the games that have one."""
    rules = rules or GameFilter()
    if plies < 1:
        raise ValueError("plies must be at least 1")
    started = time.monotonic()
    when = datetime.now(UTC).replace(microsecond=0)
    stats = ScanStats()
    skipped: Counter[str] = Counter()
    with_evals = comments = parts = commented = 0
    with evals_lock(Path(warehouse)), open_source(source) as opened:
        pending: list[Evaluation] = []

        def save() -> None:
            nonlocal parts
            if pending:
                write_part(Path(warehouse), pending)
                parts += 1
                if on_part is not None:
                    on_part(len(pending))
                pending.clear()

        try:
            for raw in games_in_order(opened, stats, started=started, progress=progress):
                if b"%eval" not in raw:
                    stats.games_read += 1  # (most games: read, not even filtered)
                    continue
                commented += 1
                game = keep_game(raw, rules, stats)
                if game is None or b"%eval" not in game.movetext:
                    continue
                rows, reason = game_evaluations(
                    game.fen, game.movetext, plies=plies, when=when,
                    chess960=rules.variant == "chess960",
                )  # fmt: skip
                if reason is not None:
                    skipped[reason] += 1
                if rows:
                    with_evals += 1
                    comments += len(rows)
                    pending.extend(rows)
                    if len(pending) >= batch:
                        save()
        finally:
            save()
            compact_if_many(Path(warehouse))
        if comments == 0 and not allow_empty:
            _nothing_stored(opened.name, stats, rules, commented, skipped)
    return GameEvalsResult(
        games_read=stats.games_read, with_evals=with_evals, comments=comments,
        skipped={r: skipped[r] for r in GAME_REASONS if skipped[r]},
        parts=parts, seconds=time.monotonic() - started,
    )  # fmt: skip


def _nothing_stored(
    source: str, stats: ScanStats, rules: GameFilter, commented: int, skipped: Counter[str]
) -> None:
    """Raise the error of a read that stored no evaluation."""
    if commented == 0:
        raise NoComments(
            f"no game of {source} has an [%eval] comment ({stats.games_read:,} games read); "
            "nothing stored"
        )
    if stats.games_kept == 0:  # (only the games with a comment were filtered)
        filtered = ScanStats(games_read=commented, dropped=Counter(stats.dropped))
        raise NothingKept(f"{source} (its {commented:,} games with [%eval] comments)",
                          filtered, rules)  # fmt: skip
    reasons = ", ".join(f"{skipped[r]:,} {r}" for r in GAME_REASONS if skipped[r])
    raise NoComments(
        f"no [%eval] comment of the {stats.games_kept:,} kept games of {source} could be "
        f"stored ({reasons}); nothing stored"
    )
