"""The SAN walk of Standard games from the start position: the Polyglot key before each move
and the move's Polyglot code, for many movetexts at once, in compiled code (`_sanwalk.c`).

python-chess stays the authority: a movetext the walk refuses (a shape it does not read, a
move that is not exactly one legal move, fewer moves than asked for) is left to python-chess,
which decides it. A movetext the walk accepts is read as python-chess reads it.

The annotated walk reads, in the same pass, Lichess's clock and evaluation after each move
(`[%clk 0:01:00]`, `[%eval 0.17]`) as eval_comments.move_annotations reads them, which is the
slow path for the texts the walk refuses.
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


#: A row's clock where its move has no [%clk] after it, or one that does not read.
NO_CLOCK = -1
#: A row's eval where its move has no [%eval] after it, or one that does not read or is out of
#: range (centipawns above eval_comments.MAX_CP): INT32_MIN.
NO_EVAL = -(2**31)


class Annotated(NamedTuple):
    """The rows of an annotated walk: Walked's, and per row the clock and the eval the comments
    after its move give (NO_CLOCK, NO_EVAL where they give none)."""

    keys: np.ndarray  # uint64
    moves: np.ndarray  # uint16
    lengths: np.ndarray  # int32
    clocks: np.ndarray  # int32, tenths of a second
    evals: np.ndarray  # int32, White's view


def walk_annotated(texts: Sequence[bytes], *, plies: int | None = None) -> Annotated:
    """walk_openings, reading too the clock and the eval Lichess writes after each move walked.

    The texts walked, refused and their rows are walk_openings's. A move's comments are the
    brace comments between it and the next move (those before the first move belong to none);
    of them, the first `[%clk ...]` and the first `[%eval ...]` decide (as
    eval_comments.move_annotations finds them):

    - clock: `H:MM:SS` or `H:MM:SS.f` (a fraction of any length), in tenths of a second rounded
      down; NO_CLOCK where there is none or it does not read.
    - eval: from White's view as written, in centipawns (`0.17` 17, `-1.5` -150, a `,depth`
      after it ignored), or a mate `#n` as +(VALUE_MATE - |n|) when White mates (n > 0),
      -(VALUE_MATE - |n|) when Black does (`#0`: the side to move is mated, +VALUE_MATE when
      White made the move); NO_EVAL where there is none, it does not read or its centipawns are
      above MAX_CP. A comment that does not read never refuses the text.

    With `plies`, the comments after the last move walked are read up to the next move (or to
    whatever the walk would refuse: the moves walked stand).
    """
    keys, moves, lengths, clocks, evals = _sanwalk.walk_annotated(
        texts, -1 if plies is None else plies
    )
    return Annotated(
        np.frombuffer(keys, dtype=np.uint64),
        np.frombuffer(moves, dtype=np.uint16),
        np.frombuffer(lengths, dtype=np.int32),
        np.frombuffer(clocks, dtype=np.int32),
        np.frombuffer(evals, dtype=np.int32),
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
