"""Random legal moves for tests, with castling, en passant and promotions made likely."""

from __future__ import annotations

import random

import chess


def random_move(board: chess.Board, rng: random.Random, special_share: float) -> chess.Move | None:
    """Return a random legal move, or None if there is none.

    When castling, en passant or a promotion is legal, one of those is chosen with probability
    `special_share`.
    """
    legal = list(board.legal_moves)
    if not legal:
        return None
    special = [m for m in legal if board.is_castling(m) or board.is_en_passant(m) or m.promotion]
    return rng.choice(special) if special and rng.random() < special_share else rng.choice(legal)
