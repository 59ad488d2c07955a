"""The SAN walk of Standard games from the start position: the Polyglot key before each move
and the move's Polyglot code, for many movetexts at once, in compiled code (`_sanwalk.c`).

python-chess stays the authority: a movetext the walk refuses (a shape it does not read, a
move that is not exactly one legal move, fewer moves than asked for) is left to python-chess,
which decides it. A movetext the walk accepts is read as python-chess reads it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import chess.polyglot
import numpy as np

from pipelines.games import _sanwalk

_sanwalk.set_randoms(np.array(chess.polyglot.POLYGLOT_RANDOM_ARRAY, dtype=np.uint64).tobytes())


class Walked(NamedTuple):
    """The rows of a walk: per ply walked, its position's Polyglot key and its Polyglot move,
    texts one after another; per text, the moves walked (-1: refused, no rows)."""

    keys: np.ndarray  # uint64
    moves: np.ndarray  # uint16
    lengths: np.ndarray  # int32


def walk_openings(texts: Sequence[bytes], *, plies: int | None = None) -> Walked:
    """Walk each movetext's first `plies` moves (None: all) from the standard start position.

    A text is read as python-chess's PGN reader reads a game's main line, where it holds only
    move numbers, SAN moves of the usual shapes (check signs and `!`/`?` annotations after
    them), brace comments, NAGs and results; any other text is refused, as is a move that is
    not exactly one legal move by python-chess's reading of SAN. A text with fewer moves than
    `plies` is walked as far as it goes: its length says so.
    """
    keys, moves, lengths = _sanwalk.walk_openings(texts, -1 if plies is None else plies)
    return Walked(
        np.frombuffer(keys, dtype=np.uint64),
        np.frombuffer(moves, dtype=np.uint16),
        np.frombuffer(lengths, dtype=np.int32),
    )


def last_visits(keys: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Of a walk's rows (`lengths` rows a text, none where not above 0), the indexes, ascending,
    of the rows that keep each key once per text: its last row (lila-openingexplorer's
    `without_loops`: a repeated position keeps the move played from it last)."""
    kept = _sanwalk.last_visits(
        np.ascontiguousarray(keys, dtype=np.uint64).tobytes(),
        np.ascontiguousarray(lengths, dtype=np.int32).tobytes(),
    )
    return np.frombuffer(kept, dtype=np.int64)
