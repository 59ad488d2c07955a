"""Movetext at byte level: the SAN tokens of a game, without comments or variations."""

from __future__ import annotations

import re

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
