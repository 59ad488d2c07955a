"""Lichess's `[%eval]` comments: a movetext's mainline moves with the score after each.

A score is from the mover's view; a mate announcement `#n` is 32000 - n, negated when the mover
is mated.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from schemas.movetext import are_moves, move_words, san_tokens

#: A mate announcement #n scores 32000 - n from the mating side (Stockfish's VALUE_MATE).
VALUE_MATE = 32000
#: Centipawn evals from here up would read as mate or tablebase scores: refused as bad_eval.
MAX_CP = 31506

_COMMENT = re.compile(rb"\{([^}]*)\}")
_EVAL = re.compile(rb"\[%eval\s([^\]]*)\]")
_EVAL_VALUE = re.compile(rb"(?:#([+-]?\d{1,4})|([+-]?)(\d{1,10})?(?:\.(\d{1,2}))?)(?:,\d+)?")


class BadEval(ValueError):
    """An [%eval] comment that does not parse."""


def parse_eval(text: bytes, white_moved: bool) -> int:
    """Return an [%eval] value (White's view) as a score from the mover's view."""
    match = _EVAL_VALUE.fullmatch(text.strip())
    if match is None:
        raise BadEval(f"eval {text.decode('ascii', 'replace')!r}")
    mate, sign, whole, fraction = match.groups()
    if mate is not None:
        n = int(mate)
        # #0 (not written by Lichess): the side to move after the move is mated
        mover_mates = n == 0 or (n > 0) == white_moved
        return VALUE_MATE - abs(n) if mover_mates else -(VALUE_MATE - abs(n))
    if whole is None and fraction is None:
        raise BadEval(f"eval {text.decode('ascii', 'replace')!r}")
    cp = int(whole or b"0") * 100 + int((fraction or b"0").ljust(2, b"0"))
    if cp > MAX_CP:
        raise BadEval(f"eval {text.decode('ascii', 'replace')!r} out of range")
    white = -cp if sign == b"-" else cp
    return white if white_moved else -white


def moves_and_evals(movetext: bytes) -> tuple[list[bytes], list[int | None]]:
    """Return a movetext's mainline SAN moves and, for each, the score of the [%eval] after it.

    Scores are from the mover's view (White moves first), None where a move has no eval. Raise
    BadEval when a comment holds an [%eval without a well-formed value. The moves are
    san_tokens's: words between comments that are each a move, else what python-chess finds.
    """
    tokens, evals = _moves_and_evals(movetext, move_words)
    if are_moves(tokens):
        return tokens, evals
    return _moves_and_evals(movetext, san_tokens)


def _moves_and_evals(
    movetext: bytes, read: Callable[[bytes], list[bytes]]
) -> tuple[list[bytes], list[int | None]]:
    """moves_and_evals, the text between comments read by `read`."""
    tokens: list[bytes] = []
    evals: list[int | None] = []
    pieces = _COMMENT.split(movetext) if b"{" in movetext else [movetext]
    for index, piece in enumerate(pieces):
        if index % 2:
            if b"%eval" not in piece:
                continue
            found = _EVAL.search(piece)
            if found is None:
                raise BadEval("an [%eval] comment that does not parse")
            if tokens and evals[-1] is None:
                evals[-1] = parse_eval(found.group(1), len(tokens) % 2 == 1)
            continue
        for token in read(piece):
            tokens.append(token)
            evals.append(None)
    return tokens, evals
