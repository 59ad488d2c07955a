"""Which training positions to skip, as nnue-pytorch's data loader skips them.

The loader (official-stockfish/nnue-pytorch, `data_loader/cpp/training_data_loader.cpp`,
`make_skip_predicate`; the entry's tests in `data_loader/cpp/lib/training_data_entry.h`) asks,
for each entry in turn, the first question that says "skip":

1. `value_none`: the score is VALUE_NONE (32002), Stockfish's "no score";
2. `placeholder_zero`: a score of 0 standing in for a missing one: the ply is past the previous
   entry's, the game is not a draw, and the last score kept by this test was above 100 in size;
3. `early_fen_skipping`: `ply <= N` (N = -1 skips nothing);
4. `random_fen_skipping`: with N > 0, at random with probability N / (N + 1);
5. `filtered`: the side to move is in check, or the move is a capture as the loader defines it:
   a piece of the other colour stands on the destination square (so en passant is not one,
   and castling, a king onto its own rook in the loader's encoding, is not one either);
6. `wld_filtered`: at random with probability 1 - P(result | score, ply), P from the loader's
   win-rate model (`win_rate_model` below);
7. `simple_eval_skipping`: with N > 0, |material balance| < N (pawn 208, knight 781, bishop 825,
   rook 1276, queen 2538).

The first two are asked whenever the loader skips at all, and so always here; the others are
settings of the same names. The loader's random draws are a 64-bit Mersenne Twister's output
compared below p x 2^64 (a probability that rounds to 1.0 gives 0 there, as the loader's
conversion does on x86-64: never skipped); here the draws come from `random.Random(seed)`, the
same test on the same 64-bit draws, so the random skips keep the loader's odds (not its choices,
which depend on what else its threads drew). The loader's soft early-ply filter and its adaptive
piece-count filter, which steer the mix of what a thread has already passed, are left to it.
chesspipe adds score and piece-count ranges (`score_range`, `piece_count`), asked last.

`SkipSettings` (`skip_settings.py`, light enough for the command line's parser) owns the
defaults; `SkipPredicate(settings)` is the stateful test, asked once per position in order
(`reason`, or `record_reason` of a record), so a producer of records (from-games) can ask it
as it goes and drop what `training filter` would drop from its output.
"""

from __future__ import annotations

import math
import random

import chess

from pipelines.training.skip_settings import SkipSettings
from schemas.plain import SCORE_NONE, PlainRecord

#: What the loader counts as a piece's worth in `simple_eval` (Stockfish's PawnValue ...).
SIMPLE_EVAL_VALUES = {
    chess.PAWN: 208,
    chess.KNIGHT: 781,
    chess.BISHOP: 825,
    chess.ROOK: 1276,
    chess.QUEEN: 2538,
}

#: The win-rate model's polynomials in ply / 64 (ply capped at 240), fitted to fishtest games.
WIN_RATE_AS = (-3.68389304, 30.07065921, -60.52878723, 149.53378557)
WIN_RATE_BS = (-2.0181857, 15.85685038, -29.83452023, 47.59078827)
#: The loader widens the model's spread by this factor ("yielding improved training results").
WIN_RATE_SPREAD = 1.5

#: Reasons, in the order they are asked (a skipped position counts under the first).
SKIP_REASONS = (
    "value_none",
    "placeholder_zero",
    "early_fen_skipping",
    "random_fen_skipping",
    "filtered",
    "wld_filtered",
    "simple_eval_skipping",
    "score_range",
    "piece_count",
)

_TWO_64 = 2.0**64


def win_rate_model(score: int, ply: int) -> tuple[float, float, float]:
    """Return (win, loss, draw) probabilities of the side to move, as the loader models them."""
    m = min(240, ply) / 64.0
    a = ((WIN_RATE_AS[0] * m + WIN_RATE_AS[1]) * m + WIN_RATE_AS[2]) * m + WIN_RATE_AS[3]
    b = ((WIN_RATE_BS[0] * m + WIN_RATE_BS[1]) * m + WIN_RATE_BS[2]) * m + WIN_RATE_BS[3]
    b *= WIN_RATE_SPREAD
    x = min(max(100.0 * score / 208, -2000.0), 2000.0)
    win = 1.0 / (1 + math.exp((a - x) / b))
    loss = 1.0 / (1 + math.exp((a + x) / b))
    return win, loss, 1.0 - win - loss


def score_result_prob(score: int, ply: int, result: int) -> float:
    """How likely the model finds the record's result (side to move) given its score."""
    win, loss, draw = win_rate_model(score, ply)
    return win if result > 0 else loss if result < 0 else draw


def threshold(probability: float) -> int:
    """The loader's bar for a 64-bit draw: `uint64(p * double(2^64 - 1))`, where 2^64 - 1
    rounds to 2^64 and a product of 2^64 converts to 0 (x86-64)."""
    bar = int(probability * _TWO_64)
    return 0 if bar >= 1 << 64 else bar


def is_loader_capture(board: chess.Board, move: chess.Move) -> bool:
    """A piece of the other colour on the destination square (en passant and castling are not)."""
    return bool(board.occupied_co[not board.turn] & chess.BB_SQUARES[move.to_square])


def simple_eval(board: chess.Board) -> int:
    """The material balance from the side to move, in the loader's piece values."""
    white = board.occupied_co[chess.WHITE]
    total = 0
    for kind, value in SIMPLE_EVAL_VALUES.items():
        pieces = board.pieces_mask(kind, chess.WHITE) | board.pieces_mask(kind, chess.BLACK)
        total += value * (chess.popcount(pieces & white) - chess.popcount(pieces & ~white))
    return total if board.turn == chess.WHITE else -total


class SkipPredicate:
    """The skip test, asked once per position in the order the positions come.

    It keeps state as the loader's does: the last ply and the last score kept by the
    placeholder test, and the random generator (seeded by the settings).
    """

    def __init__(self, settings: SkipSettings) -> None:
        self.settings = settings
        self._random = random.Random(settings.seed)
        self._random_bar = (
            threshold(settings.random_fen_skipping / (settings.random_fen_skipping + 1))
            if settings.random_fen_skipping > 0
            else 0
        )
        self._last_ply = -1
        self._last_score = SCORE_NONE

    def reason(
        self,
        score: int,
        ply: int,
        result: int,
        board: chess.Board | None = None,
        move: chess.Move | None = None,
    ) -> str | None:
        """Return why the position is skipped (a name of SKIP_REASONS), or None to keep it.

        `board` (before the move) and `move` are needed when `settings.needs_board`.
        """
        settings = self.settings
        placeholder = (
            ply > self._last_ply
            and self._last_score != SCORE_NONE
            and abs(self._last_score) > 100
            and result != 0
            and score == 0
        )
        self._last_ply = ply
        if score == SCORE_NONE:
            return "value_none"
        if placeholder:
            return "placeholder_zero"
        self._last_score = score
        if ply <= settings.early_fen_skipping:
            return "early_fen_skipping"
        if settings.random_fen_skipping > 0 and self._random.getrandbits(64) < self._random_bar:
            return "random_fen_skipping"
        if settings.filtered:
            assert board is not None and move is not None
            if is_loader_capture(board, move) or board.is_check():
                return "filtered"
        if settings.wld_filtered:
            bar = threshold(1.0 - score_result_prob(score, ply, result))
            if self._random.getrandbits(64) < bar:
                return "wld_filtered"
        if settings.simple_eval_skipping > 0:
            assert board is not None
            if abs(simple_eval(board)) < settings.simple_eval_skipping:
                return "simple_eval_skipping"
        if not settings.min_score <= score <= settings.max_score:
            return "score_range"
        if (settings.min_pieces, settings.max_pieces) != (2, 32):
            assert board is not None
            if not settings.min_pieces <= chess.popcount(board.occupied) <= settings.max_pieces:
                return "piece_count"
        return None

    def record_reason(self, record: PlainRecord) -> str | None:
        """Return why `record` is skipped (`reason` of its fields), or None to keep it."""
        board = move = None
        if self.settings.needs_board:
            board = chess.Board(record.fen)
            move = chess.Move.from_uci(record.move)
        return self.reason(record.score, record.ply, record.result, board, move)
