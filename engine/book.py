"""The engine's opening book: a Polyglot book whose moves are drawn in proportion to weight."""

from __future__ import annotations

import random

import chess

from schemas.polyglot import Book


def book_move(book: Book, board: chess.Board, rng: random.Random) -> chess.Move | None:
    """Return a legal book move drawn in proportion to the weights, or None if out of book."""
    choice = book.weighted_choice(board, rng)
    if choice is None or not board.is_legal(choice.move):
        return None
    return choice.move
