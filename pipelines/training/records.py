"""A kept game's training records: every position, results rescored by the tablebases.

A game is replayed with python-chess (memory holds one game). A position's record: the move
played, the Lichess `[%eval]` written after it as the score from the mover's view (evals.py),
its ply, and the result from the side to move. Positions the tablebases cover take their score
and result from the tables (`Outcomes`, handed in by the caller), and every earlier position
takes the outcome of the game's first covered position, as Leela's rescorer does.

Games are skipped and counted: `missing_eval` (with `require_eval`, a move without an eval),
`no_eval` (without `require_eval`: no eval in the game, and too few captures to reach the
tables (game_filter.may_reach), so no position could have a score; such games are not
replayed), `bad_eval` (an eval comment that does not parse), `no_moves`, `too_long` (more than
16,383 plies), `illegal_move`. Positions of the games replayed are skipped and counted by the
first filter that drops them, in the order of settings.POSITION_FILTERS; the records made are
then asked the loader's skips in output order by the export (from_games.py), which counts the
records it writes.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Protocol

import chess

from pipelines.games.eval_comments import BadEval, moves_and_evals
from pipelines.games.game_filter import may_reach
from pipelines.training.settings import FromGamesSettings
from schemas.binpack import fen_prefix
from schemas.plain import PlainRecord

#: Most plies of a game exported (a .binpack stores a ply in 14 bits).
MAX_PLIES = (1 << 14) - 1

_SITE = re.compile(rb'(?:^|\n\[)Site "([^"\n]*)"\]')
_LICHESS_ID = re.compile(r"https?://(?:[a-z]+\.)?lichess\.org/([A-Za-z0-9]{8,12})/?$")


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


def game_id(site: str) -> str:
    """Return a Lichess game id from a Site tag value (the value itself when not lichess.org)."""
    match = _LICHESS_ID.match(site)
    return match.group(1) if match else site


def site_of(game: bytes) -> str:
    """Return a game's Site tag value ("" when it has none)."""
    header_end = game.find(b"\n\n")
    match = _SITE.search(game, 0, header_end if header_end >= 0 else len(game))
    return match.group(1).decode("utf-8", "replace") if match else ""


@dataclass
class ExportCounts:
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

    def merge(self, other: ExportCounts) -> None:
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
    """A record with its lineage: ply, result changed, first covered ply; and whether the
    tables gave its score."""

    record: PlainRecord
    ply: int
    result_changed: bool
    first_covered_ply: int | None
    tablebase_scored: bool = False


def game_records(
    white_result: int,
    movetext: bytes,
    settings: FromGamesSettings,
    outcomes: Outcomes | None,
    counts: ExportCounts,
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
    from_ply = settings.from_ply
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
        record = PlainRecord(fen, uci, score, ply, result)
        records.append(GameRecord(record, ply, result != game, first_covered, outcome is not None))
    return records
