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
