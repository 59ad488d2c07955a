"""Movetext at byte level: the SAN tokens of a game, without comments or variations."""

from __future__ import annotations

import re
from functools import cache

_COMMENT = re.compile(rb"\{[^}]*(?:\}|\Z)|;[^\n]*")

_VARIATION = re.compile(rb"\([^()]*\)")

#: A stray `}` or `)` (one that closes no comment or variation) read as a space.
_STRAY_CLOSERS = bytes.maketrans(b"})", b"  ")

_RESULT_TOKENS = frozenset({b"1-0", b"0-1", b"1/2-1/2", b"*"})

_DIGITS = b"0123456789"


def san_tokens(movetext: bytes, limit: int | None = None) -> list[bytes]:
    """Return the mainline SAN tokens of a movetext (comments, variations, NAGs removed).

    Read as python-chess's PGN reader reads them: a stray `}` or `)` is skipped, even against a
    move, and a variation never closed holds the rest of the text.
    """
    text = _COMMENT.sub(b" ", movetext) if b"{" in movetext or b";" in movetext else movetext
    while b"(" in text:
        stripped = _VARIATION.sub(b" ", text)
        if stripped == text:  # a variation never closed: the mainline ends where it opens
            text = text[: text.index(b"(")]
            break
        text = stripped
    if b"}" in text or b")" in text:  # closing what is not open: skipped, as python-chess does
        text = text.translate(_STRAY_CLOSERS)
    tokens: list[bytes] = []
    for token in text.split():
        if token[:1].isdigit():  # a move number ("12." or "12...") before a move, or a result
            move = token.lstrip(_DIGITS)
            if move[:1] == b".":
                token = move.lstrip(b".")
                if not token:
                    continue
        if token[:1] == b"$" or token in _RESULT_TOKENS:
            continue
        token = token.rstrip(b"!?")
        if not token:
            continue
        tokens.append(token)
        if limit is not None and len(tokens) >= limit:
            break
    return tokens


def has_moves(movetext: bytes) -> bool:
    """Whether a movetext holds a move: a game without one is dropped as `no_moves`, by every
    command that reads kept games, so that "kept" means the same games everywhere."""
    return bool(san_tokens(movetext, 1))


def plain_moves(movetext: bytes) -> int | None:
    """Return how many moves a plain movetext holds, or None when it is not plain.

    Plain, as Lichess writes games without comments: numbered moves one space apart
    ("1. e4 e5 2. Nf3"), each SAN token starting with a letter and holding no dot, annotation or
    NAG, then the result (line ends may follow). san_tokens reads exactly its tokens that are
    not move numbers, nor the result: as many as its spaces less its move numbers.
    """
    if _PLAIN.fullmatch(movetext) is None:
        return None
    return movetext.count(b" ") - movetext.count(b". ")


#: A plain movetext (see plain_moves).
_PLAIN = re.compile(
    rb"(?:\d+\. [a-hKQRBNO][^\s$!?.]* (?:[a-hKQRBNO][^\s$!?.]* )?)*"
    rb"(?:1-0|0-1|1/2-1/2|\*)[\r\n]*"
)


def opening_text(movetext: bytes, plies: int) -> bytes | None:
    """Return the movetext cut where the move after the first `plies` plies is numbered.

    The cut is at the whitespace before the number of full move (plies + 1) // 2 + 1, and only
    where it is known to fall between tokens of the mainline: no variation, rest-of-line comment
    or escape line before it, and no brace comment open at it. The text returned then starts with
    the game's first `plies` moves, if it holds that many (a game numbered wrongly holds fewer).
    None when there is no such number or the cut is not known to be safe.
    """
    after_space, after_newline = _numbered(plies)
    cut = movetext.find(after_space)
    newline = movetext.find(after_newline, 0, cut if cut >= 0 else len(movetext))
    if newline >= 0:
        cut = newline
    if cut < 0:
        return None
    if _UNSAFE.search(movetext, 0, cut) is None:  # no variation, comment or escape line
        return movetext[:cut]
    head = movetext[:cut]
    if b"(" in head or b";" in head or b"\n%" in head or head[:1] == b"%":
        return None
    braces = head.count(b"{")
    if braces != head.count(b"}") or (braces and head.rfind(b"{") > head.rfind(b"}")):
        return None  # a comment may be open at the cut
    return head


#: What a cut must check for before it: variations, comments and escape lines.
_UNSAFE = re.compile(rb"[(;{}%]")


@cache
def _numbered(plies: int) -> tuple[bytes, bytes]:
    """Return the number of the move after the first `plies` plies, after a space and after a
    line end, as movetext writes it."""
    number = b"%d." % ((plies + 1) // 2 + 1)
    return b" " + number, b"\n" + number
