"""Lichess's `[%eval]` comments: a movetext's mainline moves with the score after each (for
training records, from the mover's view), and a comment's value as written (White's view); and
with the `[%clk]` after each move too (move_annotations, for the games table: the slow path of
the compiled annotated walk, sanwalk.walk_annotated).

A score is from the mover's view; a mate announcement `#n` is 32000 - n, negated when the mover
is mated.
"""

from __future__ import annotations

import contextlib
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
_CLOCK = re.compile(rb"\[%clk\s([^\]]*)\]")
#: A [%clk] value: H:MM:SS, or H:MM:SS.f with a fraction of any length.
_CLOCK_VALUE = re.compile(rb"(\d{1,4}):([0-5]\d):([0-5]\d)(?:\.(\d*))?")
#: What the main line's brace comments are told from: a brace comment (to its end or the
#: text's), a rest-of-line comment, a variation's opening and closing.
_SPAN = re.compile(rb"\{[^}]*(?:\}|\Z)|;[^\n]*|[()]")
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


def _white_score(value: EvalValue, white_moved: bool) -> int:
    """An [%eval] value as a score from White's view (a mate as +-(VALUE_MATE - |n|))."""
    if value.mate is None:
        assert value.cp is not None
        return value.cp
    if value.mate == 0:  # the side to move after the move is mated
        return VALUE_MATE if white_moved else -VALUE_MATE
    mate = VALUE_MATE - abs(value.mate)
    return mate if value.mate > 0 else -mate


def _read_clock(text: bytes) -> int | None:
    """Return a [%clk] value (`H:MM:SS`, `H:MM:SS.f`) in tenths of a second, the fraction
    rounded down; None when it does not parse."""
    match = _CLOCK_VALUE.fullmatch(text.strip())
    if match is None:
        return None
    hours, minutes, seconds, fraction = match.groups()
    tenths = int(fraction[:1]) if fraction else 0
    return ((int(hours) * 60 + int(minutes)) * 60 + int(seconds)) * 10 + tenths


def move_annotations(movetext: bytes) -> tuple[list[bytes], list[int | None], list[int | None]]:
    """Return a movetext's mainline SAN moves and, for each, the clock and the eval after it.

    A move's comments are the main line's brace comments between it and the next move (those
    before the first move, and those in variations, belong to none); of them the first
    `[%clk ...]` and the first `[%eval ...]` decide (one that does not parse too). A clock
    (`H:MM:SS`, `H:MM:SS.f`) is in tenths of a second, the fraction rounded down; an eval from
    White's view as written (read_eval): centipawns, or a mate `#n` as +(VALUE_MATE - |n|) when
    White mates, -(VALUE_MATE - |n|) when Black does (`#0`: the side to move is mated). None
    where a move has none, or its value does not parse: nothing is raised. The moves are
    san_tokens's.

    sanwalk.walk_annotated reads the texts it accepts so, in compiled code.
    """
    text = _main_line(movetext)
    tokens, comments = _comments_after_moves(text, move_words)
    if not are_moves(tokens):
        tokens, comments = _comments_after_moves(text, san_tokens)
    clocks: list[int | None] = [None] * len(tokens)
    evals: list[int | None] = [None] * len(tokens)
    clocked = [False] * len(tokens)
    evaluated = [False] * len(tokens)
    for moves_before, comment in comments:
        ply = moves_before - 1
        if ply < 0:
            continue
        if not clocked[ply] and (clock := _CLOCK.search(comment)) is not None:
            clocked[ply] = True
            clocks[ply] = _read_clock(clock.group(1))
        if not evaluated[ply] and (found := _EVAL.search(comment)) is not None:
            evaluated[ply] = True
            with contextlib.suppress(BadEval):  # (a value that does not parse: None)
                evals[ply] = _white_score(read_eval(found.group(1)), ply % 2 == 0)
    return tokens, clocks, evals


def _main_line(movetext: bytes) -> bytes:
    """Return movetext without its variations (the comments in them too) and rest-of-line
    comments, as schemas.movetext reads the main line, its brace comments kept."""
    if b"(" not in movetext and b")" not in movetext and b";" not in movetext:
        return movetext
    kept: list[bytes] = []
    depth = at = 0
    for span in _SPAN.finditer(movetext):
        if not depth:
            kept.append(movetext[at : span.start()])
        at = span.end()
        token = span.group()
        if token == b"(":
            depth += 1
        elif token == b")":
            depth = max(depth - 1, 0)
            if not depth:  # (a stray one is a space too)
                kept.append(b" ")
        elif not depth:
            kept.append(token if token[:1] == b"{" else b" ")
    if not depth:  # (a variation never closed holds the rest)
        kept.append(movetext[at:])
    return b"".join(kept)


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
    tokens, comments = _comments_after_moves(movetext, read)
    values: list[EvalValue | None] = [None] * len(tokens)
    for moves_before, comment in comments:
        if b"%eval" not in comment:
            continue
        found = _EVAL.search(comment)
        if found is None:
            raise BadEval("an [%eval] comment that does not parse")
        if moves_before and values[moves_before - 1] is None:
            values[moves_before - 1] = read_eval(found.group(1))
    return tokens, values


def _comments_after_moves(
    movetext: bytes, read: Callable[[bytes], list[bytes]]
) -> tuple[list[bytes], list[tuple[int, bytes]]]:
    """Return a movetext's moves, the text between comments read by `read`, and its brace
    comments in order, each with the number of moves before it (the text inside the braces)."""
    tokens: list[bytes] = []
    comments: list[tuple[int, bytes]] = []
    pieces = _COMMENT.split(movetext) if b"{" in movetext else [movetext]
    for index, piece in enumerate(pieces):
        if index % 2:
            comments.append((len(tokens), piece))
        else:
            tokens.extend(read(piece))
    return tokens, comments
