"""Movetext at byte level: the SAN tokens of a game, without comments or variations."""

from __future__ import annotations

import re
from functools import cache

_COMMENT = re.compile(rb"\{[^}]*(?:\}|\Z)|;[^\n]*")

_VARIATION = re.compile(rb"\([^()]*\)")

#: A move as python-chess's PGN reader finds one in movetext (the move pattern of
#: chess.pgn.MOVETEXT_REGEX).
_MOVE = (
    rb"[NBKRQ]?[a-h]?[1-8]?[\-x]?[a-h][1-8](?:=?[nbrqkNBRQK])?|[PNBRQK]?@[a-h][1-8]|--|Z0|0000"
    rb"|@@@@|O-O(?:-O)?|0-0(?:-0)?"
)

#: What python-chess's reader finds in movetext outside comments and variations: a move (the
#: group), or a NAG, a result or an annotation. Any other text is skipped, as it skips it.
_TOKEN = re.compile(rb"(" + _MOVE + rb")|\$[0-9]+|\*|1-0|0-1|1/2-1/2|[?!]{1,2}")

#: Words that are each one move as python-chess finds it, a space after each (the usual
#: shapes first: most games are only these). Each word and its space are matched once and for
#: all (an atomic group, a possessive repeat): a word several shapes match would otherwise be
#: tried each way again on every failure after it, a time exponential in the words.
_MOVE_WORDS = re.compile(
    rb"(?>(?:[a-h][1-8]|[NBRQK]x?[a-h][1-8]|[a-h]x[a-h][1-8]|O-O-O|O-O|" + _MOVE + rb") )*+"
)


def san_tokens(movetext: bytes, limit: int | None = None) -> list[bytes]:
    """Return the mainline SAN tokens of a game's movetext (comments, variations, NAGs removed).

    Read as python-chess's PGN reader reads them: moves are found by their pattern, whatever
    stands between them (move numbers, check signs, a stray `}` or `)`, a dot against a move),
    and a variation never closed holds the rest of the text.
    """
    text = _mainline(movetext)
    words = _move_words(text, limit)
    if are_moves(words):
        return words  # each word one move: what the pattern finds, at the speed of a split
    tokens: list[bytes] = []
    for match in _TOKEN.finditer(text):
        token = match.group(1)
        if token is None:  # a NAG, a result or an annotation
            continue
        tokens.append(token)
        if limit is not None and len(tokens) >= limit:
            break
    return tokens


def move_words(moves: bytes) -> list[bytes]:
    """Return the words of movetext that may be moves, one word each.

    Comments, variations, move numbers, NAGs, results, check signs and `!`/`?` annotations are
    taken out as san_tokens takes them out; any other word stays whole. For a move list typed by
    a person a typo then reads as a bad move, rather than being skipped as a game's reader skips
    it; words that are_moves are what san_tokens reads.
    """
    return _move_words(_mainline(moves), None)


def are_moves(words: list[bytes]) -> bool:
    """Whether each word (from move_words) is one move as python-chess's PGN reader finds it."""
    return not words or _MOVE_WORDS.fullmatch(b" ".join(words) + b" ") is not None


def _move_words(text: bytes, limit: int | None) -> list[bytes]:
    """Return the words of movetext without comments and variations that may be moves: all
    but move numbers, NAGs, results, and with check signs and annotations taken off. A word in
    which python-chess could find a move is kept, whatever else it holds."""
    if b"}" in text or b")" in text:  # closing what is not open: read as a space
        text = text.translate(_STRAY_CLOSERS)
    words: list[bytes] = []
    for word in text.split():
        if word[:1].isdigit():  # a move number ("12." or "12...") before a move, or a result
            move = word.lstrip(_DIGITS)
            # (python-chess finds a null move in "00001.": such a word is kept whole, and so
            # is not one move: san_tokens then reads the text as python-chess does)
            digits = len(word) - len(move)
            if move[:1] == b"." and (digits < 4 or b"0000" not in word[:digits]):
                word = move.lstrip(b".")
                if not word:
                    continue
        if word in _RESULTS or (word[:1] == b"$" and _NAG.fullmatch(word) is not None):
            continue
        word = word.rstrip(b"!?+#")
        if word:
            words.append(word)
            if limit is not None and len(words) >= limit:
                break
    return words


#: A stray `}` or `)` (one that closes no comment or variation) read as a space.
_STRAY_CLOSERS = bytes.maketrans(b"})", b"  ")

_RESULTS = frozenset({b"1-0", b"0-1", b"1/2-1/2", b"*"})

_DIGITS = b"0123456789"

_NAG = re.compile(rb"\$[0-9]+")


def _mainline(movetext: bytes) -> bytes:
    """Return movetext without its comments and variations (one never closed holds the rest)."""
    text = _COMMENT.sub(b" ", movetext) if b"{" in movetext or b";" in movetext else movetext
    while b"(" in text:
        stripped = _VARIATION.sub(b" ", text)
        if stripped == text:  # a variation never closed: the mainline ends where it opens
            return text[: text.index(b"(")]
        text = stripped
    return text


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
