"""Lichess's `[%eval]` comments: a movetext's mainline moves with the score after each (for
training records, from the mover's view), and a comment's value as written (White's view).

A score is from the mover's view; a mate announcement `#n` is 32000 - n, negated when the mover
is mated.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import NamedTuple

from schemas.movetext import are_moves, move_words, san_tokens

#: A mate announcement #n scores 32000 - n from the mating side (Stockfish's VALUE_MATE).
VALUE_MATE = 32000
#: Centipawn evals from here up would read as mate or tablebase scores: refused as bad_eval.
MAX_CP = 31506

_COMMENT = re.compile(rb"\{([^}]*)\}")
_EVAL = re.compile(rb"\[%eval\s([^\]]*)\]")
_EVAL_VALUE = re.compile(rb"(?:#([+-]?\d{1,4})|([+-]?)(\d{1,10})?(?:\.(\d{1,2}))?)(?:,(\d{1,4}))?")


class BadEval(ValueError):
    """An [%eval] comment that does not parse."""


class EvalValue(NamedTuple):
    """An [%eval] value as written, from White's view: centipawns or a mate announcement
    (moves, > 0 White mates), and the depth where the comment gives one (`0.17,20`)."""

    cp: int | None
    mate: int | None
    depth: int | None


def read_eval(text: bytes) -> EvalValue:
    """Return an [%eval] value (White's view) as written; raise BadEval when it does not parse."""
    match = _EVAL_VALUE.fullmatch(text.strip())
    if match is None:
        raise BadEval(f"eval {text.decode('ascii', 'replace')!r}")
    mate, sign, whole, fraction, depth = match.groups()
    found_depth = int(depth) if depth is not None else None
    if mate is not None:
        return EvalValue(None, int(mate), found_depth)
    if whole is None and fraction is None:
        raise BadEval(f"eval {text.decode('ascii', 'replace')!r}")
    cp = int(whole or b"0") * 100 + int((fraction or b"0").ljust(2, b"0"))
    if cp > MAX_CP:
        raise BadEval(f"eval {text.decode('ascii', 'replace')!r} out of range")
    return EvalValue(-cp if sign == b"-" else cp, None, found_depth)


def parse_eval(text: bytes, white_moved: bool) -> int:
    """Return an [%eval] value (White's view) as a score from the mover's view."""
    return _mover_score(read_eval(text), white_moved)


def moves_and_evals(movetext: bytes) -> tuple[list[bytes], list[int | None]]:
    """Return a movetext's mainline SAN moves and, for each, the score of the [%eval] after it.

    Scores are from the mover's view (White moves first), None where a move has no eval. Raise
    BadEval when a comment holds an [%eval without a well-formed value. The moves are
    san_tokens's: words between comments that are each a move, else what python-chess finds.
    """
    tokens, values = moves_and_evals_as_written(movetext)
    scores = [
        None if value is None else _mover_score(value, ply % 2 == 0)
        for ply, value in enumerate(values)
    ]
    return tokens, scores


def _mover_score(value: EvalValue, white_moved: bool) -> int:
    if value.mate is not None:
        n = value.mate
        # #0 (not written by Lichess): the side to move after the move is mated
        mover_mates = n == 0 or (n > 0) == white_moved
        return VALUE_MATE - abs(n) if mover_mates else -(VALUE_MATE - abs(n))
    assert value.cp is not None
    return value.cp if white_moved else -value.cp


def moves_and_evals_as_written(movetext: bytes) -> tuple[list[bytes], list[EvalValue | None]]:
    """moves_and_evals, each eval as written (White's view, read_eval)."""
    tokens, values = _moves_and_evals(movetext, move_words)
    if are_moves(tokens):
        return tokens, values
    return _moves_and_evals(movetext, san_tokens)


def _moves_and_evals(
    movetext: bytes, read: Callable[[bytes], list[bytes]]
) -> tuple[list[bytes], list[EvalValue | None]]:
    """moves_and_evals_as_written, the text between comments read by `read`."""
    tokens: list[bytes] = []
    values: list[EvalValue | None] = []
    pieces = _COMMENT.split(movetext) if b"{" in movetext else [movetext]
    for index, piece in enumerate(pieces):
        if index % 2:
            if b"%eval" not in piece:
                continue
            found = _EVAL.search(piece)
            if found is None:
                raise BadEval("an [%eval] comment that does not parse")
            if tokens and values[-1] is None:
                values[-1] = read_eval(found.group(1))
            continue
        for token in read(piece):
            tokens.append(token)
            values.append(None)
    return tokens, values
